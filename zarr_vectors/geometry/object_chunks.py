"""Write the object-to-chunks index of a point cloud with object ids (spec §9.14).

Every point write path (one-shot, streaming, appends, parallel, ``build_levels``) commits
through :func:`~zarr_vectors.geometry.points.commit_points`, which calls
:func:`write_object_chunks` once level 0 is written: the index is computed from the stored
``attributes/object_id`` of level 0, so every path writes the same bytes for the same stored
level.
"""

from __future__ import annotations

import numpy as np

from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import ATTRIBUTES, OBJECT_CHUNKS, OBJECT_ID_ATTRIBUTE
from zarr_vectors.geometry.object_chunk_passes import (
    EntryWindows,
    index_passes,
    spill_batch_indexes,
)
from zarr_vectors.kernels.object_chunks import ObjectChunkIndex, index_object_chunks
from zarr_vectors.read import ChunkRows, LevelReader
from zarr_vectors.store.arrays import group_metadata
from zarr_vectors.store.io import StoreIO, local_root
from zarr_vectors.store.spill import remove_scratch, scratch_directory
from zarr_vectors.write import write_global

__all__ = [
    "INDEX_BUILD_BUDGET",
    "has_object_chunks",
    "has_object_ids",
    "stored_object_chunks",
    "write_object_chunks",
]

INDEX_BUILD_BUDGET = 256 << 20
"""Bytes of working memory of the index's build when the writer is given none
(``write_points``, ``append_points``), as for the object-ordered copy."""


def has_object_chunks(io: StoreIO) -> bool:
    """Whether level 0 of the store at ``io`` has an object-to-chunks index.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 2.0], [3.0, 4.0]], object_ids=[5, 6], chunk_shape=4.0)
    >>> has_object_chunks(StoreIO(resolve_store(path, mode="r")))
    True
    """
    return io.get(f"0/{OBJECT_CHUNKS}/zarr.json") is not None


def has_object_ids(io: StoreIO) -> bool:
    """Whether the points of level 0 of the store at ``io`` carry object ids.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 2.0], [3.0, 4.0]], chunk_shape=4.0)
    >>> has_object_ids(StoreIO(resolve_store(path, mode="r")))
    False
    """
    return io.get(f"0/{ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}/zarr.json") is not None


def stored_object_chunks(reader: LevelReader) -> ObjectChunkIndex | None:
    """The index the stored ``object_id`` column of ``reader``'s level implies (None when
    the level has no object ids): what a writer stores and a validator expects.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 2.0], [3.0, 4.0], [1.5, 2.5]], object_ids=[5, 6, 5],
    ...                 chunk_shape=4.0)
    >>> io = StoreIO(resolve_store(path, mode="r"))
    >>> root = RootMetadata.from_json(json.loads(io.get("zarr.json"))["attributes"])
    >>> index = stored_object_chunks(LevelReader(io, root, 0))
    >>> index.ids.tolist(), index.offsets.tolist(), index.entries.tolist()
    ([5, 6], [0, 1, 2], [[0, 0, 2], [1, 0, 1]])
    """
    if not reader.has_object_ids:
        return None
    chunks, counts = reader.occupied_chunks(None, None)
    wanted = [
        ChunkRows(tuple(int(c) for c in chunk), np.array([[0, n]], dtype=np.int64))
        for chunk, n in zip(chunks, counts, strict=True)
    ]
    ids = reader.read_rows(OBJECT_ID_ATTRIBUTE, wanted) if wanted else np.empty(0, np.int64)
    shape = tuple(int(s) for s in reader.grid.shape)
    flat = (
        np.ravel_multi_index(tuple(chunks.T), shape).astype(np.int64)
        if chunks.shape[0]
        else np.empty(0, np.int64)
    )
    offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    return index_object_chunks(ids, offsets, flat)


def write_object_chunks(io: StoreIO, root: RootMetadata, memory_budget: int | None = None) -> bool:
    """Write level 0's ``object_chunks`` (spec §9.14) from its stored object ids, replacing
    any there; False (nothing written) when level 0 has no object ids.

    The level's arrays and its group metadata must be written; the root not yet. The index
    is built in batches of chunks and written in windows of its entries
    (:mod:`~zarr_vectors.geometry.object_chunk_passes`), holding about ``memory_budget``
    bytes (None: :data:`INDEX_BUILD_BUDGET`) besides 32 bytes per distinct id; the bytes
    written do not depend on it. The batches' entries are spilled beside a local store
    (else in the system temporary directory).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 2.0], [3.0, 4.0]], object_ids=[5, 6], chunk_shape=4.0)
    >>> sorted(p.name for p in (path / "0" / "object_chunks").iterdir())
    ['entries', 'ids', 'offsets', 'zarr.json']
    """
    reader = LevelReader(io, root, 0)
    if not reader.has_object_ids:
        return False
    budget = INDEX_BUILD_BUDGET if memory_budget is None else memory_budget
    scratch = scratch_directory(local_root(io.store), None)
    try:
        spilled, distinct, offsets = spill_batch_indexes(
            reader, scratch, index_passes(budget, 0)[0]
        )
        try:
            window = index_passes(budget, int(distinct.shape[0]))[1]
            entries = EntryWindows(spilled, distinct, offsets, window)
            _write_index(io, distinct, offsets, entries)
        finally:
            spilled.close()
    finally:
        remove_scratch(scratch)
    return True


def _write_index(io: StoreIO, ids: np.ndarray, offsets: np.ndarray, entries: EntryWindows) -> None:
    """Write the index's three arrays and its group, replacing any index there."""
    base = f"0/{OBJECT_CHUNKS}"
    io.delete_many(io.list_prefix(f"{base}/"))
    n = int(ids.shape[0])
    io.set(f"{base}/zarr.json", group_metadata({"zv_array": OBJECT_CHUNKS, "num_objects": n}))
    write_global(io, f"{base}/ids", ids, 0, {"zv_array": "object_chunks_ids"})
    write_global(io, f"{base}/offsets", offsets, 0, {"zv_array": "object_chunks_offsets"})
    write_global(io, f"{base}/entries", entries, 0, {"zv_array": "object_chunks_entries"})
