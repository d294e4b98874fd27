"""Passes over level 0 that build the object-ordered copy (spec §9.15) within a memory budget.

The copy's rows ``[0, n)`` are level 0's rows sorted by object id, within an object in
storage order. :func:`count_ids` reads the ids once for the distinct ids and their offsets;
then the copy is built window by window (rows ``[a, b)``, whole shards):
:func:`window_sources` scans the ids again for the storage rows of the window's rows, and
:func:`window_column` reads a column back for them. Every scan reads level 0 in batches of
whole chunks (:class:`ChunkBatches`), so memory holds a batch, the window and the distinct
ids, never every point. One window of every row is the in-memory build; any window gives
the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE
from zarr_vectors.kernels.id_counts import nth_of_its_id
from zarr_vectors.read import ChunkRows, LevelReader

__all__ = ["ChunkBatches", "IdCounts", "count_ids", "window_column", "window_sources"]


@dataclass(frozen=True, slots=True)
class ChunkBatches:
    """Level 0's occupied chunks in storage (C) order, cut into batches of whole chunks.

    Attributes
    ----------
    wanted
        One whole-chunk request per occupied chunk.
    starts
        ``(m + 1,)`` the storage row of each chunk's first row, then the row count.
    cuts
        Chunk numbers where batches begin, then ``m``: batch ``j`` is chunks
        ``[cuts[j], cuts[j + 1])``.

    Examples
    --------
    >>> batches = ChunkBatches.of([], np.array([5, 5, 20, 1]), 10)
    >>> batches.cuts.tolist(), batches.starts.tolist()
    ([0, 2, 3, 4], [0, 5, 10, 30, 31])
    """

    wanted: list[ChunkRows]
    starts: np.ndarray
    cuts: np.ndarray

    @classmethod
    def of(cls, wanted: list[ChunkRows], counts: np.ndarray, rows: int | None) -> ChunkBatches:
        """Batches of consecutive chunks of at most ``rows`` rows (a bigger chunk alone);
        None: one batch."""
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        m = int(counts.shape[0])
        cuts = [0]
        if rows is not None:
            for chunk in range(1, m):
                if starts[chunk] - starts[cuts[-1]] + counts[chunk] > rows:
                    cuts.append(chunk)
        cuts.append(m)
        return cls(wanted, starts, np.array(cuts if m else [0], dtype=np.int64))

    def __iter__(self) -> Iterator[tuple[int, list[ChunkRows]]]:
        """``(first storage row, whole-chunk requests)`` of each batch."""
        for j in range(self.cuts.shape[0] - 1):
            first, stop = int(self.cuts[j]), int(self.cuts[j + 1])
            yield int(self.starts[first]), self.wanted[first:stop]


def count_ids(reader: LevelReader, batches: ChunkBatches) -> tuple[np.ndarray, np.ndarray]:
    """The distinct object ids of level 0 (ascending) and their offsets in the copy
    (``offsets[k]``: the first row of the k-th id; the last: the row count).

    Per-batch counts are merged when they hold as many ids as the merged ones, so the ids
    are merged ``O(log)`` times each.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.format.metadata import RootMetadata
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [7.0, 7.0], [2.0, 2.0]], object_ids=[9, 4, 9],
    ...                 chunk_shape=5.0)
    >>> io = StoreIO(resolve_store(path, mode="r"))
    >>> reader = LevelReader(io, RootMetadata.from_json(io.read_root()[0]["attributes"]), 0)
    >>> chunks, counts = reader.occupied_chunks(None, None)
    >>> wanted = [ChunkRows(tuple(c), np.array([[0, n]])) for c, n in zip(chunks, counts)]
    >>> distinct, offsets = count_ids(reader, ChunkBatches.of(wanted, counts, 1))
    >>> distinct.tolist(), offsets.tolist()
    ([4, 9], [0, 1, 3])
    """
    counts = IdCounts(np.zeros(0, dtype=reader.column_spec(OBJECT_ID_ATTRIBUTE)[0]))
    for _, wanted in batches:
        counts.add(*np.unique(reader.read_rows(OBJECT_ID_ATTRIBUTE, wanted), return_counts=True))
    return counts.result()


class IdCounts:
    """Distinct ids and a count of each, added batch by batch: the counts of a batch are
    merged when the batches pending hold as many ids as the merged ones, so every id is
    merged ``O(log)`` times.

    Examples
    --------
    >>> counts = IdCounts(np.zeros(0, np.int64))
    >>> counts.add(np.array([3, 5]), np.array([2, 1]))
    >>> counts.add(np.array([1, 5]), np.array([4, 4]))
    >>> [a.tolist() for a in counts.result()]   # the ids, the offsets of their counts
    [[1, 3, 5], [0, 4, 6, 11]]
    """

    def __init__(self, empty: np.ndarray) -> None:
        self.distinct = empty
        self.counts = np.zeros(0, dtype=np.int64)
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []
        self.held = 0

    def add(self, ids: np.ndarray, counts: np.ndarray) -> None:
        """Add ``counts`` of the distinct ``ids``."""
        self.pending.append((ids, counts))
        self.held += int(ids.shape[0])
        if self.held >= self.distinct.shape[0]:
            self.distinct, self.counts = _merge(self.distinct, self.counts, self.pending)
            self.pending, self.held = [], 0

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct ids (ascending) and the ``(k + 1,)`` offsets of their counts."""
        self.distinct, self.counts = _merge(self.distinct, self.counts, self.pending)
        self.pending, self.held = [], 0
        return self.distinct, np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)


def _merge(
    distinct: np.ndarray, counts: np.ndarray, pending: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """``distinct`` ids and their ``counts`` with those of ``pending`` added."""
    if not pending:
        return distinct, counts
    ids = np.concatenate([distinct, *(p[0] for p in pending)])
    many = np.concatenate([counts, *(p[1] for p in pending)])
    merged, where = np.unique(ids, return_inverse=True)
    return merged, np.bincount(where, weights=many, minlength=merged.shape[0]).astype(np.int64)


def window_sources(
    reader: LevelReader,
    batches: ChunkBatches,
    distinct: np.ndarray,
    offsets: np.ndarray,
    window: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """Where the copy's rows ``window = (a, b)`` come from: the storage rows of level 0
    (ascending) and, for each, its row in the window (``row - a``).

    One scan of the ids: a row of the k-th id, the j-th of that id in storage order, is row
    ``offsets[k] + j`` of the copy. Only the ids whose rows meet the window are counted.

    Examples
    --------
    With the store of :func:`count_ids` (ids 9, 4, 9 in storage order), the copy's rows 1
    and 2 are storage rows 0 and 2:

    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.format.metadata import RootMetadata
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [7.0, 7.0], [2.0, 2.0]], object_ids=[9, 4, 9],
    ...                 chunk_shape=5.0)
    >>> io = StoreIO(resolve_store(path, mode="r"))
    >>> reader = LevelReader(io, RootMetadata.from_json(io.read_root()[0]["attributes"]), 0)
    >>> chunks, counts = reader.occupied_chunks(None, None)
    >>> wanted = [ChunkRows(tuple(c), np.array([[0, n]])) for c, n in zip(chunks, counts)]
    >>> batches = ChunkBatches.of(wanted, counts, None)
    >>> sources, places = window_sources(reader, batches, np.array([4, 9]),
    ...                                  np.array([0, 1, 3]), (1, 3))
    >>> reader.read_rows("object_id", wanted).tolist(), sources.tolist(), places.tolist()
    ([9, 9, 4], [0, 1], [0, 1])
    """
    a, b = window
    first = int(np.searchsorted(offsets, a, side="right")) - 1  # the id of row a
    last = int(np.searchsorted(offsets, b, side="left"))  # ids [first, last) meet the window
    if last <= first:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ids_met = distinct[first:last]
    seen = np.zeros(last - first, dtype=np.int64)
    sources, places = np.empty(b - a, np.int64), np.empty(b - a, np.int64)
    done = 0  # every row of the window is found once, in storage order
    for start, wanted in batches:
        ids = reader.read_rows(OBJECT_ID_ATTRIBUTE, wanted)
        where = np.flatnonzero((ids >= ids_met[0]) & (ids <= ids_met[-1]))
        if not where.shape[0]:
            continue
        k = _id_numbers(ids_met, ids[where])
        row = offsets[first + k] + nth_of_its_id(k, seen)  # counts before included
        inside = np.flatnonzero((row >= a) & (row < b))
        if done + inside.shape[0] > b - a:
            done += inside.shape[0]
            break
        sources[done : done + inside.shape[0]] = start + where[inside]
        places[done : done + inside.shape[0]] = row[inside] - a
        done += inside.shape[0]
    if done != b - a:
        raise CorruptChunkError(
            f"level 0 read {done} rows of the object-ordered copy's rows [{a}, {b}) back; "
            "its object ids changed while the copy was built: write it again"
        )
    return sources, places


def _id_numbers(distinct: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The place of each of ``ids`` in ``distinct`` (ascending, holding them all): by a
    table when the ids are dense (their span at most 4 times their number), else by a
    binary search.

    Examples
    --------
    >>> _id_numbers(np.array([3, 4, 6]), np.array([6, 3, 6])).tolist()
    [2, 0, 2]
    >>> _id_numbers(np.array([-2**62, 2**62]), np.array([2**62])).tolist()
    [1]
    >>> _id_numbers(np.array([-128, 127], np.int8), np.array([127], np.int8)).tolist()
    [1]
    >>> _id_numbers(np.array([2**64 - 2, 2**64 - 1], np.uint64),
    ...             np.array([2**64 - 1], np.uint64)).tolist()
    [1]
    """
    span = int(distinct[-1]) - int(distinct[0]) + 1
    if span > 4 * distinct.shape[0]:
        return np.searchsorted(distinct, ids)
    wide = np.uint64 if distinct.dtype.kind == "u" else np.int64  # no overflow below
    low = distinct[:1].astype(wide)
    table = np.zeros(span, dtype=np.int64)
    table[(distinct.astype(wide) - low).astype(np.int64)] = np.arange(distinct.shape[0])
    return table[(ids.astype(wide) - low).astype(np.int64)]


def window_column(
    reader: LevelReader,
    batches: ChunkBatches,
    name: str,
    sources: np.ndarray,
    places: np.ndarray,
) -> np.ndarray:
    """Column ``name`` of level 0 at storage rows ``sources`` (ascending), put at
    ``places``: the column's rows of a window of the copy. Batches holding none of the rows
    are not read; of the others, only their chunks holding some.

    Examples
    --------
    With the store and window of :func:`window_sources`:

    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.format.metadata import RootMetadata
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [7.0, 7.0], [2.0, 2.0]], object_ids=[9, 4, 9],
    ...                 chunk_shape=5.0)
    >>> io = StoreIO(resolve_store(path, mode="r"))
    >>> reader = LevelReader(io, RootMetadata.from_json(io.read_root()[0]["attributes"]), 0)
    >>> chunks, counts = reader.occupied_chunks(None, None)
    >>> wanted = [ChunkRows(tuple(c), np.array([[0, n]])) for c, n in zip(chunks, counts)]
    >>> batches = ChunkBatches.of(wanted, counts, 1)
    >>> window_column(reader, batches, "vertices", np.array([0, 1]), np.array([0, 1])).tolist()
    [[1.0, 1.0], [2.0, 2.0]]
    """
    dtype, shape = reader.column_spec(name)
    out = np.empty((sources.shape[0], *shape), dtype=dtype)
    starts = batches.starts
    for j in range(batches.cuts.shape[0] - 1):
        first, stop = int(batches.cuts[j]), int(batches.cuts[j + 1])
        lo, hi = np.searchsorted(sources, [starts[first], starts[stop]])
        if lo == hi:
            continue
        counts = np.diff(np.searchsorted(sources[lo:hi], starts[first : stop + 1]))
        chunks = np.flatnonzero(counts) + first  # the batch's chunks holding some rows
        sizes = starts[chunks + 1] - starts[chunks]
        at = np.cumsum(sizes) - sizes  # each chunk's first row in `values`
        values = reader.read_rows(name, [batches.wanted[int(c)] for c in chunks])
        shift = np.repeat(at - starts[chunks], counts[chunks - first])
        out[places[lo:hi]] = values[sources[lo:hi] + shift]
    return out
