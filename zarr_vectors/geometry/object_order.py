"""Write the object-ordered copy of a point cloud with object ids (spec §9.15, format 1.7).

Every point write path commits through :func:`~zarr_vectors.geometry.points.commit_points`,
which calls :func:`write_object_order` once level 0 is written when the copy is asked for
(``WriteOptions(object_order=True)``, or a store that has one being appended to): the copy
is computed from level 0 as stored, so every path writes the same bytes for the same stored
level. The build reads level 0 one column at a time and holds about
:func:`order_build_bytes` bytes at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_ORDER,
    OBJECT_ORDER_ROWS,
    VERTICES,
)
from zarr_vectors.format.object_order import ORDER_ROWS_PER_BLOCK, ORDER_TAGS, order_shard_rows
from zarr_vectors.read import ChunkRows, LevelReader
from zarr_vectors.store.arrays import group_metadata
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.row_sequences import RowSequence
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.write import write_global

__all__ = [
    "drop_object_order",
    "every_row",
    "object_order_of",
    "has_object_order",
    "object_order_columns",
    "order_build_bytes",
    "write_object_order",
]

_WRITE_BATCH_BYTES = 16 << 20
"""Shards are written in batches of about this many bytes."""


def has_object_order(io: StoreIO) -> bool:
    """Whether level 0 of the store at ``io`` has an object-ordered copy.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 2.0], [3.0, 4.0]], object_ids=[5, 6], chunk_shape=4.0,
    ...                 options=zv.WriteOptions(object_order=True))
    >>> has_object_order(StoreIO(resolve_store(path, mode="r")))
    True
    """
    return io.get(f"0/{OBJECT_ORDER}/zarr.json") is not None


def drop_object_order(io: StoreIO) -> None:
    """Delete level 0's object-ordered copy, if any (a commit without the copy)."""
    io.delete_many(io.list_prefix(f"0/{OBJECT_ORDER}/"))


def object_order_columns(reader: LevelReader) -> list[str]:
    """The row arrays of the copy of ``reader``'s level, by path inside ``object_order/``:
    ``rows``, ``vertices``, ``attributes/object_id`` (readers check each row's id with it),
    then ``attributes/<name>`` of every other per-vertex attribute."""
    names = [f"{ATTRIBUTES}/{name}" for name in [OBJECT_ID_ATTRIBUTE, *reader.attribute_names]]
    return [OBJECT_ORDER_ROWS, VERTICES, *names]


def order_build_bytes(n_points: int, widest_row: int) -> int:
    """About the most bytes :func:`write_object_order` holds at once for ``n_points`` points
    whose widest column has rows of ``widest_row`` bytes: at first the ids, the order and the
    ids in object order (8 bytes a point each for int64 ids), then the order and one column
    as stored and in object order, and the encoded shards of a batch.

    Examples
    --------
    >>> order_build_bytes(10**6, 12) // 2**20   # MiB
    54
    """
    return n_points * (16 + 2 * widest_row) + _WRITE_BATCH_BYTES


def write_object_order(io: StoreIO, root: RootMetadata, rows_per_block: int | None = None) -> bool:
    """Write level 0's ``object_order`` (spec §9.15) from its stored rows, replacing any
    there; False (nothing written) when level 0 has no object ids.

    The level's arrays and its group metadata must be written; the root not yet.

    Parameters
    ----------
    io
        The store being written.
    root
        Its root metadata.
    rows_per_block
        ``R`` of the copy's row arrays; None: the copy's present R (an append keeps it),
        else :data:`~zarr_vectors.format.object_order.ORDER_ROWS_PER_BLOCK`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 2.0], [3.0, 4.0]], object_ids=[5, 6], chunk_shape=4.0,
    ...                 options=zv.WriteOptions(object_order=True))
    >>> sorted(p.name for p in (path / "0" / "object_order").iterdir())
    ['attributes', 'ids', 'offsets', 'rows', 'vertices', 'zarr.json']
    """
    reader = LevelReader(io, root, 0)
    if not reader.has_object_ids:
        return False
    rows = rows_per_block or _present_rows_per_block(io) or ORDER_ROWS_PER_BLOCK
    wanted = every_row(reader)
    order, ordered_ids, distinct, offsets = object_order_of(
        reader.read_rows(OBJECT_ID_ATTRIBUTE, wanted)
    )
    base = f"0/{OBJECT_ORDER}"
    drop_object_order(io)
    io.set(f"{base}/zarr.json", group_metadata({"zv_array": ORDER_TAGS["group"]}))
    write_global(io, f"{base}/ids", distinct, 0, {"zv_array": ORDER_TAGS["ids"]})
    write_global(io, f"{base}/offsets", offsets, 0, {"zv_array": ORDER_TAGS["offsets"]})
    layouts = _layouts(reader, rows, int(order.shape[0]))
    id_column = f"{ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}"
    sequence = RowSequence(f"{base}/{id_column}", int(order.shape[0]), layouts.pop(id_column))
    _write_files(io, sequence, ordered_ids, {"zv_array": ORDER_TAGS[ATTRIBUTES]})
    del ordered_ids  # from here: the order, one column as stored and in object order
    for column, layout in layouts.items():
        values = order if column == OBJECT_ORDER_ROWS else _ordered(reader, column, wanted, order)
        tag = ORDER_TAGS[column.split("/")[0]]
        sequence = RowSequence(f"{base}/{column}", int(order.shape[0]), layout)
        _write_files(io, sequence, values, {"zv_array": tag})
    return True


def object_order_of(
    ids: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The object order of level 0's stored ``ids`` (storage order, spec §9.15): the stable
    sort (the copy's ``rows``), the ids in that order, the distinct ids and their offsets.

    Examples
    --------
    >>> order, ordered, distinct, offsets = object_order_of(np.array([7, 4, 7, 5]))
    >>> order.tolist(), ordered.tolist(), distinct.tolist(), offsets.tolist()
    ([1, 3, 0, 2], [4, 5, 7, 7], [4, 5, 7], [0, 1, 2, 4])
    """
    order = np.argsort(ids, kind="stable")  # within an object: storage order
    ordered = ids[order]
    distinct, counts = np.unique(ordered, return_counts=True)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return order.astype(np.int64), ordered, distinct, offsets


def every_row(reader: LevelReader) -> list[ChunkRows]:
    """Every row of every occupied chunk of the level, chunks in C order: a whole read."""
    chunks, counts = reader.occupied_chunks(None, None)
    return [
        ChunkRows(tuple(int(c) for c in chunk), np.array([[0, n]], dtype=np.int64))
        for chunk, n in zip(chunks, counts, strict=True)
    ]


def _ordered(
    reader: LevelReader, column: str, wanted: list[ChunkRows], order: np.ndarray
) -> np.ndarray:
    """The whole row array ``column`` (``vertices`` or ``attributes/<name>``) of the copy:
    level 0's column in object order."""
    return np.asarray(reader.read_rows(column.split("/", 1)[-1], wanted)[order])


def _layouts(reader: LevelReader, rows: int, n_rows: int) -> dict[str, RowLayout]:
    """The layout of each row array of the copy: level 0's dtype, row shape and Blosc
    settings (``rows`` those of ``vertices``), ``R`` = ``rows`` and the copy's ``S``."""
    specs: dict[str, tuple[np.dtype[Any], tuple[int, ...], str]] = {
        OBJECT_ORDER_ROWS: (np.dtype(np.int64), (), VERTICES)
    }
    for column in object_order_columns(reader)[1:]:
        name = column.split("/", 1)[-1]
        dtype, shape = reader.column_spec(name)
        specs[column] = (dtype, shape, name)
    widest = max(d.itemsize * int(np.prod(s)) for d, s, _ in specs.values())
    shard = order_shard_rows(n_rows, rows, widest)
    layouts = {}
    for column, (dtype, shape, source) in specs.items():
        stored = reader.layouts[source]
        blosc = None if stored is None else stored.blosc
        layouts[column] = RowLayout(dtype, shape, rows, shard, blosc, placed=True)
    return layouts


def _present_rows_per_block(io: StoreIO) -> int | None:
    """``R`` of the copy the store has now (None without one): an append keeps it."""
    meta = io.read_json(f"0/{OBJECT_ORDER}/{OBJECT_ORDER_ROWS}/zarr.json")
    if not isinstance(meta, dict):
        return None
    return int(meta["codecs"][0]["configuration"]["chunk_shape"][0])


def _write_files(
    io: StoreIO, sequence: RowSequence, values: np.ndarray, attributes: dict[str, Any]
) -> None:
    """Write the files of ``sequence`` holding ``values``, in batches."""
    batch: list[tuple[str, bytes]] = []
    size = 0
    for key, raw in sequence.files(values, attributes):
        batch.append((key, raw))
        size += len(raw)
        if size >= _WRITE_BATCH_BYTES:
            io.set_many(batch)
            batch, size = [], 0
    io.set_many(batch)
