"""Global arrays and chunk occupancy of one level.

Methods of :class:`~zarr_vectors.read.reader.LevelReader` (bound there by name): whole
global arrays read in one batch (plain ones decoded directly, their chunk tables checked),
rows of a global array chunk by chunk, and the occupied chunks with their row counts from
``vertex_counts`` (spec §9.3), checked against the level's totals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import VERTEX_COUNTS
from zarr_vectors.kernels.cells import occupied_cells
from zarr_vectors.store.arrays import (
    chunk_table_problem,
    nonzero_cells,
    read_region,
    read_whole_many,
)
from zarr_vectors.store.shards import decode_plain_chunks, plain_chunk_keys, take_plain_rows

__all__ = [
    "check_chunk_table",
    "check_totals",
    "global_rows",
    "occupancy",
    "occupied_chunks",
    "plain_arrays",
    "plain_cells",
    "read_globals",
    "take_global_rows",
]

if TYPE_CHECKING:
    from zarr_vectors.read.reader import LevelReader


def read_globals(self: LevelReader, paths: Sequence[str]) -> list[np.ndarray]:
    """Whole arrays at ``paths`` (relative to the level), all read concurrently.

    Raises
    ------
    CorruptChunkError
        When an array is missing or a chunk cannot be decoded.
    """
    full = [f"{self.base}/{p}" for p in paths]
    self.prefetch(f"{p}/zarr.json" for p in full)
    metas = [self._docs[f"{p}/zarr.json"] for p in full]
    for path, meta in zip(full, metas, strict=True):
        if meta is None:
            raise CorruptChunkError(f"{path}: cannot read the array (no array metadata)")
        self.array_metadata(path)  # MetadataError when the document is not an array's
    found = self._plain_arrays(full, metas)
    rest = [(p, m) for p, m, f in zip(full, metas, found, strict=True) if f is None]
    for path, meta in rest:
        self._check_chunk_table(path, meta, None)
    others = iter(read_whole_many(self.io.store, rest))
    return [next(others) if f is None else f for f in found]


def global_rows(self: LevelReader, path: str, start: int, stop: int) -> np.ndarray:
    """Rows ``[start, stop)`` of the global array at ``path`` (relative to the level),
    only the chunks holding them read; the last chunk read of each array is kept (the
    next rows asked usually follow in it), nothing else.

    Raises
    ------
    CorruptChunkError
        When a chunk cannot be decoded.
    """
    full = f"{self.base}/{path}"
    meta = self.array_metadata(full)  # MetadataError when the document is not an array's
    rows = int(meta["chunk_grid"]["configuration"]["chunk_shape"][0])
    size = int(meta["shape"][0])
    if stop <= start:
        return read_region(self.io.store, full, (start,), (start,))
    parts = []
    for j in range(start // rows, -(-stop // rows)):
        kept = self._last_blocks.get(full)
        if kept is None or kept[0] != j:
            block = read_region(self.io.store, full, (j * rows,), (min(size, (j + 1) * rows),))
            kept = self._last_blocks[full] = (j, block)
        parts.append(kept[1][max(start - j * rows, 0) : stop - j * rows])
    return np.concatenate(parts)


def take_global_rows(self: LevelReader, path: str, rows: np.ndarray) -> np.ndarray:
    """``array[rows]`` of the global array at ``path`` (relative to the level): only the
    chunks holding ``rows`` are read (with the last 4 bytes of the others, for the chunk
    table, in the same batch), checked whole and decoded in the Blosc blocks holding the
    rows alone (:func:`take_plain_rows`). An array stored otherwise, or with one of those
    chunks missing, is read whole (:func:`read_globals`).

    ``rows``: ``(k,)`` int64 row numbers, each in ``[0, shape[0])`` (the caller's check).

    Raises
    ------
    CorruptChunkError
        When a chunk read cannot be decoded, or a chunk file is not the one the chunk table
        lists.
    """
    full = f"{self.base}/{path}"
    meta = self.array_metadata(full)  # MetadataError when the document is not an array's
    keys = plain_chunk_keys(meta, full)
    if keys is not None:
        per_chunk = max(int(meta["chunk_grid"]["configuration"]["chunk_shape"][0]), 1)
        needed = set(np.unique(rows // per_chunk).tolist())
        # one batch: the chunks holding the rows, and the CRC32C ending each other one (the
        # chunk table's check: only the last 4 bytes of a chunk are compared with it)
        requests = [(key, None if j in needed else -4) for j, key in enumerate(keys)]
        found = self.io.get_many(requests)
        held = {j: raw for j, raw in enumerate(found) if j in needed and raw is not None}
        if len(held) == len(needed):
            self._check_chunk_table(full, meta, found)
            return take_plain_rows(meta, held, keys, rows)
    return np.take(self.read_globals([path])[0], rows, axis=0)


def check_chunk_table(
    self: LevelReader, path: str, meta: dict[str, Any], known: Sequence[bytes | None] | None
) -> None:
    """Raise CorruptChunkError unless the chunks of a global array are those its chunk
    table lists (format 1.2, spec §9.8.1): every one stored, each at its own key.

    A lost chunk read as fill values (zeros for object attributes, empty groups) and a
    chunk file swapped with another read as the other rows' values, silently.
    """
    if not self.placed or path.endswith(f"/{VERTEX_COUNTS}"):  # counts: §9.3 totals
        return
    problem = chunk_table_problem(self.io, path, meta, known)
    if problem is not None:
        raise CorruptChunkError(f"{path}: {problem}")


def plain_arrays(
    self: LevelReader, paths: list[str], metas: list[dict[str, Any]]
) -> list[np.ndarray | None]:
    """The plain arrays (one chunk, or chunks along the first axis only: the usual
    layouts of global arrays) fetched in one batch and decoded directly; None for the
    others and for an array with a missing chunk (fill values), which zarr-python reads."""
    keys = [plain_chunk_keys(meta, path) or [] for path, meta in zip(paths, metas, strict=True)]
    raws = iter(self.io.get_many([(key, None) for chunk_keys in keys for key in chunk_keys]))
    out: list[np.ndarray | None] = []
    for chunk_keys, meta, path in zip(keys, metas, paths, strict=True):
        found = [next(raws) for _ in chunk_keys]
        stored = [raw for raw in found if raw is not None]
        if not chunk_keys or len(stored) < len(found):
            out.append(None)
            continue
        self._check_chunk_table(path, meta, stored)
        out.append(decode_plain_chunks(meta, stored, chunk_keys))
    return out


def occupied_chunks(
    self: LevelReader, first: np.ndarray | None, stop: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Occupied chunks with index in ``[first, stop)`` (C order) and their row counts.

    The non-zero cells of ``vertex_counts`` (spec §9.3) are read once and cached. With
    ``first`` and ``stop`` None, every occupied chunk (the cached arrays: do not modify).
    """
    coords, counts = self._occupancy()
    if first is None or stop is None:
        return coords, counts
    keep = np.all((coords >= first) & (coords < stop), axis=1)
    return coords[keep], counts[keep]


def occupancy(self: LevelReader) -> tuple[np.ndarray, np.ndarray]:
    if self._occupied is None:
        path = f"{self.base}/{VERTEX_COUNTS}"
        meta = self._docs.get(f"{path}/zarr.json")
        meta = meta if isinstance(meta, dict) else None
        found = None if meta is None else self._plain_cells(path, meta)
        coords, counts = nonzero_cells(self.io, path, meta) if found is None else found
        if np.any(counts < 0):
            raise CorruptChunkError(f"{path}: negative row count")
        self._check_totals(path, counts)
        self._occupied = (coords, counts)
    return self._occupied


def check_totals(self: LevelReader, path: str, counts: np.ndarray) -> None:
    """Raise unless the non-zero ``counts`` add up to the level's ``vertex_count`` and
    number its ``chunk_count`` (spec §4).

    Raises
    ------
    CorruptChunkError
        When they do not: a lost chunk of ``vertex_counts`` reads as 0 (its fill value),
        which would silently drop the chunks it counted.
    """
    rows, chunks = int(counts.sum()), int(counts.shape[0])
    if rows != self.meta.vertex_count or chunks != self.meta.chunk_count:
        raise CorruptChunkError(
            f"{path} counts {rows} vertices in {chunks} chunks, but the level metadata "
            f"says vertex_count {self.meta.vertex_count} and chunk_count "
            f"{self.meta.chunk_count}: a chunk of vertex_counts is missing or damaged, or "
            "the metadata was edited; run zarr-vectors validate, and restore or rewrite "
            "the store"
        )


def plain_cells(
    self: LevelReader, path: str, meta: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The non-zero cells of a ``vertex_counts`` stored as a plain array (one chunk, the
    usual case), decoded directly; None when it is stored otherwise or a chunk is missing."""
    cells = self._plain_arrays([path], [meta])[0]
    if cells is None:
        return None
    return occupied_cells(cells)
