"""Write the object-ordered copy of a point cloud with object ids (spec §9.15, format 1.7).

Every point write path commits through :func:`~zarr_vectors.geometry.points.commit_points`,
which calls :func:`write_object_order` once level 0 is written when the copy is asked for
(``WriteOptions(object_order=True)``, or a store that has one being appended to): the copy
is computed from level 0 as stored, so every path writes the same bytes for the same stored
level. The build holds about a memory budget: it reads level 0 in batches of chunks, once
for the distinct ids, then once per window of the copy's rows
(:mod:`~zarr_vectors.geometry.order_passes`).
"""

from __future__ import annotations

from collections.abc import Iterator
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
from zarr_vectors.geometry.order_passes import (
    ChunkBatches,
    count_ids,
    window_column,
    window_sources,
)
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
    "ORDER_BUILD_BUDGET",
    "ORDER_ROWS_PER_BLOCK",
    "order_passes",
    "write_object_order",
]

_WRITE_BATCH_BYTES = 16 << 20
"""Shards are written in batches of about this many bytes."""

ORDER_BUILD_BUDGET = 256 << 20
"""Bytes of working memory of the copy's build when the writer is given none
(``write_points``, ``append_points``): at 10^7 points the build then takes the CPU of a build
with level 0 read whole, in 60 % of its memory (``benchmarks/results/object_order.md``)."""

_SCAN_BYTES_PER_ROW = 96
"""Bytes a row of a batch of chunks takes while its ids are scanned (the ids read and their
shard bytes, object numbers, sort, places: about 12 arrays of 8 bytes), besides three times
its widest column (a column read: shard bytes, decoded rows, rows gathered)."""

_WINDOW_BYTES_PER_ROW = 16
"""Bytes a row of a window takes besides its column: its storage row and its place."""


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


def order_passes(
    memory_budget: int, shard_rows: int, widest_row: int, n_ids: int
) -> tuple[int, int]:
    """How the copy is built within ``memory_budget`` bytes: the rows of a window (whole
    shards of ``shard_rows``) and of a batch of chunks read, for columns of at most
    ``widest_row`` bytes a row and ``n_ids`` distinct ids (24 bytes each: the ids, their
    offsets, a counter).

    A quarter of the budget goes to the batch read (:data:`_SCAN_BYTES_PER_ROW` a row and
    three times the widest column), twice :data:`_WRITE_BATCH_BYTES` to encoded shards, the
    ids to themselves, and the rest to the window: :data:`_WINDOW_BYTES_PER_ROW` a row and
    one column.

    Examples
    --------
    >>> order_passes(128 * 2**20, 2**20, 12, 10**5)   # 10^7 points: 5 windows
    (2097152, 254200)
    >>> order_passes(2**20, 128, 12, 10)              # a tiny budget: one shard at a time
    (128, 1985)
    """
    batch = max(1, memory_budget // 4 // (_SCAN_BYTES_PER_ROW + 3 * widest_row))
    free = memory_budget - memory_budget // 4 - 2 * _WRITE_BATCH_BYTES - 24 * n_ids
    window = max(free, 0) // (_WINDOW_BYTES_PER_ROW + max(widest_row, 8))
    window = window // shard_rows * shard_rows
    return max(window, shard_rows), batch


def write_object_order(
    io: StoreIO,
    root: RootMetadata,
    rows_per_block: int | None = None,
    memory_budget: int | None = None,
) -> bool:
    """Write level 0's ``object_order`` (spec §9.15) from its stored rows, replacing any
    there; False (nothing written) when level 0 has no object ids.

    The level's arrays and its group metadata must be written; the root not yet. The copy
    is built in windows of its rows (:mod:`~zarr_vectors.geometry.order_passes`), each
    scanning level 0 in batches of chunks, so that about ``memory_budget`` bytes are held
    at once (besides 24 bytes per distinct id, and one shard of the copy however small the
    budget); the bytes written do not depend on it.

    Parameters
    ----------
    io
        The store being written.
    root
        Its root metadata.
    rows_per_block
        ``R`` of the copy's row arrays; None: the copy's present R (an append keeps it),
        else :data:`~zarr_vectors.format.object_order.ORDER_ROWS_PER_BLOCK`.
    memory_budget
        Bytes of working memory (:func:`order_passes`); None:
        :data:`ORDER_BUILD_BUDGET`.

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
    counts = reader.occupied_chunks(None, None)[1]
    n = int(counts.sum())
    layouts = _layouts(reader, rows, n)
    widest = max(lay.dtype.itemsize * int(np.prod(lay.row_shape)) for lay in layouts.values())
    shard = next(iter(layouts.values())).n_max
    budget = ORDER_BUILD_BUDGET if memory_budget is None else memory_budget
    batch = order_passes(budget, shard, widest, 0)[1]  # whatever the ids
    batches = ChunkBatches.of(every_row(reader), counts, batch)
    distinct, offsets = count_ids(reader, batches)
    window = order_passes(budget, shard, widest, int(distinct.shape[0]))[0]
    base = f"0/{OBJECT_ORDER}"
    drop_object_order(io)
    io.set(f"{base}/zarr.json", group_metadata({"zv_array": ORDER_TAGS["group"]}))
    write_global(io, f"{base}/ids", distinct, 0, {"zv_array": ORDER_TAGS["ids"]})
    write_global(io, f"{base}/offsets", offsets, 0, {"zv_array": ORDER_TAGS["offsets"]})
    sequences = {column: RowSequence(f"{base}/{column}", n, lay) for column, lay in layouts.items()}
    io.set_many(
        [
            seq.metadata_file({"zv_array": ORDER_TAGS[column.split("/")[0]]})
            for column, seq in sequences.items()
        ]
    )
    for a in range(0, n, window):
        b = min(n, a + window)
        sources, places = window_sources(reader, batches, distinct, offsets, (a, b))
        for column, seq in sequences.items():
            values = _window_values(
                reader, batches, column, (sources, places), (distinct, offsets), (a, b)
            )
            _write_files(io, seq.shard_files(values, a))
    return True


def _window_values(
    reader: LevelReader,
    batches: ChunkBatches,
    column: str,
    rows: tuple[np.ndarray, np.ndarray],
    ids: tuple[np.ndarray, np.ndarray],
    window: tuple[int, int],
) -> np.ndarray:
    """Rows ``window`` of the copy's row array ``column``: storage rows (``rows``), ids
    (from the distinct ids and their offsets, ``ids``) or a column of level 0 read back."""
    sources, places = rows
    if column == OBJECT_ORDER_ROWS:
        out = np.empty(sources.shape[0], dtype=np.int64)
        out[places] = sources
        return out
    if column == f"{ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}":
        distinct, offsets = ids
        a, b = window
        counts = np.minimum(offsets[1:], b) - np.maximum(offsets[:-1], a)
        keep = counts > 0
        return np.repeat(distinct[keep], counts[keep])
    return window_column(reader, batches, column.split("/", 1)[-1], sources, places)


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


def _write_files(io: StoreIO, files: Iterator[tuple[str, bytes]]) -> None:
    """Write ``files`` in batches of about :data:`_WRITE_BATCH_BYTES`."""
    batch: list[tuple[str, bytes]] = []
    size = 0
    for key, raw in files:
        batch.append((key, raw))
        size += len(raw)
        if size >= _WRITE_BATCH_BYTES:
            io.set_many(batch)
            batch, size = [], 0
    io.set_many(batch)
