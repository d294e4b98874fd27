"""Fragment ranges of one level: parsed, cached, and the fragments a read needs.

Methods of :class:`~zarr_vectors.read.reader.LevelReader` (bound there by name): the
fragment ranges of whole chunks (checked against their row counts, cached), the ranges of
only the fragments a read of objects asks (:func:`needed_ranges`, from blobs held decoded
but unparsed), the owners of fragments, and the trimming of those caches. The blobs are
fetched by :mod:`~zarr_vectors.read.fragment_fetches`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import (
    FRAGMENT_RECORDS,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    POINT_CLOUD,
    VERTEX_FRAGMENTS,
)
from zarr_vectors.kernels.ranges import first_uncovering
from zarr_vectors.read import _read_plans as read_plans
from zarr_vectors.read.blob_batches import (
    FRAGMENT_OWNERS,
    RECORD_NAMES,
    NeededCounts,
    NeededRanges,
    batch_record_ranges,
    needed_counts_ranges,
    needed_record_ranges,
)
from zarr_vectors.read.blob_batches import blob_ranges as batch_blob_ranges
from zarr_vectors.read.fragment_fetches import blob_ranges_of
from zarr_vectors.read.read_checks import RESTORE, bins_tiling_problem
from zarr_vectors.read.shard_indexes import chunk_array

__all__ = [
    "blob_ranges",
    "cached_ranges",
    "decode_held",
    "fragment_owners",
    "fragment_ranges",
    "has_ranges",
    "hold_blobs",
    "indexes_held",
    "link_columns",
    "needed_counts",
    "needed_ranges",
    "stored_blob",
    "trim_ranges",
]

if TYPE_CHECKING:
    from zarr_vectors.read.reader import LevelReader


def _check_fragments(
    keys: list[tuple[int, ...]],
    need: tuple[np.ndarray, np.ndarray],
    fragments: np.ndarray,
    what: str,
) -> None:
    """Raise CorruptChunkError when a fragment asked (``need``: ``(bounds, fragment)``)
    is not one of its chunk's ``fragments`` (``what``: the message's ending, else "of F").
    """
    bounds, fragment = need
    slot = np.repeat(np.arange(len(keys)), np.diff(bounds))
    past = (fragment < 0) | (fragment >= fragments[slot])
    if past.any():
        j = int(slot[past].min())
        if what:
            raise CorruptChunkError(f"chunk {keys[j]}: a manifest names a fragment {what}")
        worst = int(fragment[bounds[j] : bounds[j + 1]].max())
        raise CorruptChunkError(
            f"chunk {keys[j]}: a manifest names fragment {worst} of {int(fragments[j])}"
        )


def fragment_ranges(
    self: LevelReader,
    chunks: np.ndarray,
    counts: np.ndarray,
    *,
    index_columns: Sequence[str] | None = None,
    index_chunks: np.ndarray | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per-fragment ``(starts, counts)`` of each chunk, checked against its row count.

    Point clouds must use the dense per-bin form (spec §6.6); object kinds the run form.

    Parameters
    ----------
    chunks, counts
        ``(k, D)`` chunk indices and their row counts.
    index_columns
        Columns whose shard indexes for these chunks are fetched in the same batch, for
        the row read that usually follows (cached); default every per-vertex column
        (:attr:`vertex_columns`).
    index_chunks
        The chunks whose shard indexes of ``index_columns`` are fetched; default
        ``chunks``.
    """
    columns = self.vertex_columns if index_columns is None else index_columns
    out = self.blob_ranges(
        VERTEX_FRAGMENTS, chunks, index_columns=columns, index_chunks=index_chunks
    )
    checked = self._checked_ranges
    keys = [(*chunk, n) for chunk, n in zip(chunks.tolist(), counts.tolist(), strict=True)]
    new = [j for j, key in enumerate(keys) if key not in checked]  # not passed already
    bad = first_uncovering([out[j] for j in new], [keys[j][-1] for j in new]) if new else -1
    if bad >= 0:
        (starts, sizes), key = out[new[bad]], keys[new[bad]]
        extent = int((starts + sizes).max(initial=0))
        raise CorruptChunkError(
            f"chunk {key[:-1]}: fragment index covers {extent} rows, vertex_counts says {key[-1]}"
        )
    for j in new:
        (starts, sizes), (*chunk, n) = out[j], keys[j]
        if self.kind == POINT_CLOUD and starts.shape[0] != self.grid.bins_per_chunk_total:
            raise CorruptChunkError(
                f"chunk {tuple(chunk)}: {starts.shape[0]} fragments, expected one per bin "
                f"({self.grid.bins_per_chunk_total})"
            )
        if self.kind == POINT_CLOUD and bins_tiling_problem(starts[None], sizes[None])[0]:
            raise CorruptChunkError(
                f"{self.base}/{VERTEX_FRAGMENTS}: chunk {tuple(int(c) for c in chunk)}: the "
                f"per-bin ranges do not tile its {int(n)} rows in bin order: {RESTORE}"
            )
        checked.add(keys[j])
    return out


def blob_ranges(
    self: LevelReader,
    name: str,
    chunks: np.ndarray,
    *,
    index_columns: Sequence[str] = (),
    index_chunks: np.ndarray | None = None,
    dense_fragments: int | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """All-range fragment indexes of the blob array ``name`` for each chunk (cached).

    The shard indexes of ``index_columns`` for the same chunks (or for
    ``index_chunks``) are fetched in the same batch (see :meth:`fragment_ranges`).
    Blobs expected to hold ``dense_fragments`` fragments each (the bins of a point
    cloud's chunk) are decoded together by one kernel call when they can be.
    """
    keys = [(name, tuple(c)) for c in np.asarray(chunks, dtype=np.int64).tolist()]
    indexed = [k[1] for k in keys] if index_chunks is None else read_plans.chunk_keys(index_chunks)
    missing = [k[1] for k in dict.fromkeys(keys) if k not in self._ranges]
    if self.kind == POINT_CLOUD:
        self._fetch_ranges(name, missing, index_columns, indexed, dense_fragments)
    elif missing or not self._indexes_held(index_columns, indexed):
        stored = self._stored_blob(name)  # held unparsed too, for needed_ranges
        self._fetch_held(stored, missing, index_columns, indexed)
        self._decode_held(stored, missing)
    for k in dict.fromkeys(keys):  # most recently used last (see trim_ranges)
        self._ranges[k] = self._ranges.pop(k)
    return [self._ranges[k] for k in keys]


def decode_held(self: LevelReader, name: str, chunks: list[tuple[int, ...]]) -> None:
    """Parse the held blobs of array ``name`` of ``chunks`` whole, together, and cache
    what they hold: the records' three parts
    (:func:`~zarr_vectors.read.blob_batches.batch_record_ranges`), or the ranges of
    the other blobs (:func:`~zarr_vectors.read.blob_batches.blob_ranges`)."""
    if not chunks:
        return
    chunks = list(dict.fromkeys(chunks))
    buffer, begins, ends, keys = self.held.joined(name, chunks)
    if name == FRAGMENT_RECORDS:
        records = batch_record_ranges(buffer, begins, ends, keys)
        for chunk, parts in zip(chunks, records, strict=True):
            for part, ranges in parts.items():
                self._ranges[(part, chunk)] = ranges
        return
    found = batch_blob_ranges(buffer, begins, ends, keys, blob_ranges_of)
    for chunk, ranges in zip(chunks, found, strict=True):
        self._ranges[(name, chunk)] = ranges


def needed_ranges(
    self: LevelReader,
    chunks: np.ndarray,
    rows: np.ndarray,
    need: tuple[np.ndarray, np.ndarray],
    *,
    links: bool = True,
) -> NeededRanges:
    """The vertex and link ranges of some fragments of distinct ``chunks`` of an
    object level, each chunk's row count checked. Only the counts are parsed, and only
    the fragments asked are returned: nothing is written per fragment of the chunks
    (:meth:`fragment_ranges` parses and caches the blobs whole); the blobs are held
    unparsed for the next read (:attr:`held`). The shard indexes of the chunks' vertex
    columns (and, with ``links``, link columns, when some record is not held) are
    fetched in the same wave as the fragment records (format 1.6), for the row reads
    that follow.

    Parameters
    ----------
    chunks, rows
        ``(k, D)`` distinct chunk indices and their row counts.
    need
        ``(bounds, fragment)``: chunk ``j`` is asked for the fragments
        ``fragment[bounds[j]:bounds[j + 1]]`` (any order, repeats allowed).
    links
        Whether the link rows are asked too (else they are None).

    Raises
    ------
    CorruptChunkError
        When a blob is damaged, does not cover its chunk's rows, or lacks a fragment
        asked.
    """
    keys = [tuple(c) for c in np.asarray(chunks, dtype=np.int64).tolist()]
    link: NeededCounts | None = None  # the link blobs of a level without records
    if self.records:  # the link columns' shard indexes in the same wave
        linked = self._link_columns() if links else ()
        self._hold_blobs(FRAGMENT_RECORDS, keys, self.vertex_columns, linked)
        buffer, begins, ends, where = self.held.joined(FRAGMENT_RECORDS, keys)
        found = needed_record_ranges(buffer, begins, ends, need, where, links)
        extent = found.vertex_rows
    else:
        vertex = self._needed_counts(VERTEX_FRAGMENTS, keys, need, self.vertex_columns)
        link = self._needed_counts(LINK_FRAGMENTS, keys, need, ()) if links else None
        found = NeededRanges(
            vertex.starts,
            vertex.counts,
            None if link is None else link.starts,
            None if link is None else link.counts,
            vertex.fragments,
            vertex.rows,
            None if link is None else link.rows,
        )
        extent = vertex.extent
    bad = np.flatnonzero((extent != rows) | (found.vertex_rows != rows))
    if bad.size:
        j = int(bad[0])
        raise CorruptChunkError(
            f"chunk {keys[j]}: fragment index covers {int(extent[j])} rows, "
            f"vertex_counts says {int(rows[j])}"
        )
    _check_fragments(keys, need, found.fragments, "")
    if link is not None:
        _check_fragments(keys, need, link.fragments, "its chunk's links do not index")
    return found


def link_columns(self: LevelReader) -> list[str]:
    """The columns of link rows made readable (:meth:`add_column`): ``links/0`` and
    the link attributes."""
    families = (f"{self.base}/{LINKS}/", f"{self.base}/{LINK_ATTRIBUTES}/")
    return [name for name, path in self.paths.items() if path.startswith(families)]


def needed_counts(
    self: LevelReader,
    name: str,
    keys: list[tuple[int, ...]],
    need: tuple[np.ndarray, np.ndarray],
    index_columns: Sequence[str],
) -> NeededCounts:
    """:func:`~zarr_vectors.read.blob_batches.needed_counts_ranges` of the blobs of
    array ``name`` of the chunks ``keys`` (fetched when not held)."""
    self._hold_blobs(name, keys, index_columns)
    buffer, begins, ends, where = self.held.joined(name, keys)
    return needed_counts_ranges(buffer, begins, ends, need, where, blob_ranges_of)


def hold_blobs(
    self: LevelReader,
    name: str,
    keys: list[tuple[int, ...]],
    index_columns: Sequence[str],
    with_missing: Sequence[str] = (),
) -> None:
    """Hold the blobs of array ``name`` of the chunks ``keys``, with the shard indexes
    of ``index_columns`` for them, and of ``with_missing`` when a blob is fetched
    (:meth:`_fetch_held`); nothing is planned when every blob is held and so are those
    indexes (:meth:`indexes_held`, as a repeated read finds them)."""
    if not self.held.missing(name, keys) and self._indexes_held(index_columns, keys):
        return
    self._fetch_held(name, keys, index_columns, keys, with_missing)


def indexes_held(self: LevelReader, columns: Sequence[str], chunks: list[tuple[int, ...]]) -> bool:
    """Whether the shard indexes of ``columns`` for every chunk of ``chunks`` are held
    already (:meth:`ShardIndexes.holds`), so that no fetch of them need be planned."""
    if not columns:
        return True
    coords = chunk_array(chunks, self.grid.ndim)
    return all(
        self.indexes.holds(self.paths[column], layout, coords)
        for column in columns
        if (layout := self.layouts.get(column)) is not None
    )


def fragment_owners(self: LevelReader, chunks: np.ndarray) -> list[np.ndarray]:
    """The owner object of every fragment of each chunk, from the chunks' fragment
    records (cached; only for a level with :attr:`records`)."""
    return [owners for owners, _ in self.blob_ranges(FRAGMENT_OWNERS, chunks)]


def stored_blob(self: LevelReader, name: str) -> str:
    """The blob array holding what ``name`` asks for: ``fragment_records`` for the
    vertex and link fragments and the owners of a level with records."""
    return FRAGMENT_RECORDS if self.records and name in RECORD_NAMES else name


def cached_ranges(
    self: LevelReader, name: str, chunk: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """The fragment ranges of blob array ``name`` in ``chunk`` that :meth:`blob_ranges`
    fetched (a KeyError if it did not)."""
    return self._ranges[(name, chunk)]


def has_ranges(self: LevelReader, name: str, chunk: tuple[int, ...]) -> bool:
    """Whether the fragment ranges of blob array ``name`` in ``chunk`` are cached."""
    return (name, chunk) in self._ranges


def trim_ranges(self: LevelReader, limit: int) -> None:
    """Forget the least recently used fragment ranges until those cached hold at most
    ``limit`` bytes (fetched again when asked); the fragment blobs held unparsed
    (:attr:`held`) count too and go first."""
    held = sum(a.nbytes + b.nbytes for a, b in self._ranges.values())
    held += self.held.nbytes()
    held -= self.held.trim(held - limit)
    for key in list(self._ranges):
        if held <= limit:
            break
        starts, sizes = self._ranges.pop(key)
        held -= starts.nbytes + sizes.nbytes
