"""Fragment-index blobs of many chunks in shared shards (spec §6, §9.0.1), planned, decoded
and turned into fragment ranges by a few array operations and kernel calls, not chunk by
chunk in Python; and the fragment records of format 1.6 (spec §6.9) turned into the same
ranges and the fragments' owners (:func:`record_ranges`).

A read by id meets tens of chunks; their blobs lie in a few shards whose indexes are cached.
:func:`stored_spans` finds each chunk's stored blocks and byte span from the index entries,
:func:`decode_blobs` decodes every stored block of the fetched spans in one call, and
:func:`blob_ranges` decodes the counts-form blobs (§6.8) together. Anything irregular (a
missing block before a stored one, a blob of another form, damage) is left to the per-chunk
decoders, which raise their precise errors.

A read by id needs only the fragments its objects' manifests name:
:func:`needed_record_ranges` and :func:`needed_counts_ranges` give their ranges (and each
chunk's totals, for the checks) without a row per fragment of the chunks.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from zarr_vectors.errors import CorruptChunkError, FragmentIndexError
from zarr_vectors.format.fragment_counts import decode_counts_blobs
from zarr_vectors.format.fragment_records import FRAGMENT_RECORD_MAGIC, decode_fragment_record
from zarr_vectors.format.fragments import (
    FRAGMENT_INDEX_HEADER_NBYTES,
    FRAGMENT_INDEX_MAGIC,
    FRAGMENT_INDEX_VERSION,
)
from zarr_vectors.format.names import LINK_FRAGMENTS, VERTEX_FRAGMENTS
from zarr_vectors.kernels.blob_spans import blob_blocks
from zarr_vectors.kernels.blob_spans import stored_spans as spans_of
from zarr_vectors.kernels.count_blobs import counts_needed
from zarr_vectors.kernels.record_blobs import records_batch, records_needed
from zarr_vectors.store.shards import RowLayout

__all__ = [
    "FRAGMENT_OWNERS",
    "RECORD_NAMES",
    "NeededCounts",
    "NeededRanges",
    "StoredSpans",
    "batch_record_ranges",
    "blob_ranges",
    "decode_blobs",
    "needed_counts_ranges",
    "needed_record_ranges",
    "record_ranges",
    "stored_spans",
]

FRAGMENT_OWNERS = "(fragment owners)"
"""The name a reader caches a chunk's fragment owners under (no array has it)."""
RECORD_NAMES = (VERTEX_FRAGMENTS, LINK_FRAGMENTS, FRAGMENT_OWNERS)
"""What a fragment record (format 1.6) holds, by the names a reader asks for."""
_NO_ROWS = np.empty(0, np.int64)


class StoredSpans(NamedTuple):
    """Per chunk: its stored row blocks (its first ``stored``) and their byte span."""

    stored: np.ndarray
    start: np.ndarray
    end: np.ndarray


def stored_spans(entries: np.ndarray) -> StoredSpans | None:
    """The stored blocks and byte span ``[start, end)`` of every chunk, from the
    ``(m, n_blocks, 2)`` uint64 shard index entries of ``m`` chunks; a chunk storing no
    block has the span ``(0, 0)``: one kernel call
    (:func:`~zarr_vectors.kernels.blob_spans.stored_spans`).

    Returns None when some chunk does not store exactly its first blocks (each with an
    offset and a size), or names offsets beyond 2**62: the per-chunk path reports those.

    Examples
    --------
    >>> e = np.array([[[0, 10], [10, 6]], [[40, 8], [2**64 - 1, 2**64 - 1]]], np.uint64)
    >>> [a.tolist() for a in stored_spans(e)]
    [[2, 1], [0, 40], [16, 48]]
    >>> stored_spans(e[:, ::-1]) is None
    True
    """
    stored, start, end, regular = spans_of(_signed(entries))
    return StoredSpans(stored, start, end) if regular else None


def _signed(entries: np.ndarray) -> np.ndarray:
    """uint64 shard index entries viewed as int64 (a block not stored: -1)."""
    flat = entries if entries.flags.c_contiguous else np.ascontiguousarray(entries)
    return flat.view(np.int64)


def decode_blobs(
    layout: RowLayout,
    keys: Sequence[str],
    entries: np.ndarray,
    spans: StoredSpans,
    fetched: np.ndarray,
    lengths: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The blobs of every chunk, each its stored blocks decoded back to back, all in one
    call of :meth:`~zarr_vectors.store.shards.RowLayout.decode_blocks_at` (the blocks
    placed by one kernel call, :func:`~zarr_vectors.kernels.blob_spans.blob_blocks`):
    the bytes, and the ``(m + 1,)`` bounds of each chunk's blob in them.

    Parameters
    ----------
    layout
        The blob array's row layout.
    keys
        Each chunk's shard key (for error messages).
    entries, spans
        Each chunk's index entries and :func:`stored_spans`.
    fetched, lengths
        The fetched bytes of every chunk's span back to back (uint8), and how many of
        them each chunk's are (0 for an empty span).

    Raises
    ------
    CorruptChunkError
        When a block lies outside the bytes fetched or fails a check.
    """
    starts, sizes, chunk_of, number, bounds = blob_blocks(
        _signed(entries), spans.stored, spans.start, lengths
    )
    r = layout.rows_per_block
    out = np.zeros(chunk_of.shape[0] * r, dtype=np.uint8)
    if chunk_of.shape[0]:
        layout.decode_blocks_at(
            fetched,
            starts,
            sizes,
            np.arange(chunk_of.shape[0], dtype=np.int64),
            out,
            _describe(number, chunk_of, keys),
        )
    return out, bounds * r


def _describe(
    number: np.ndarray, chunk_of: np.ndarray, keys: Sequence[str]
) -> Callable[[int], tuple[int, str]]:
    return lambda i: (int(number[i]), keys[int(chunk_of[i])])


def blob_ranges(
    blobs: np.ndarray,
    begins: np.ndarray,
    ends: np.ndarray,
    keys: Sequence[str],
    one: Callable[[np.ndarray, str], tuple[np.ndarray, np.ndarray]],
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The fragment ranges ``(starts, counts)`` of every blob ``blobs[begins[j]:ends[j]]``
    (:func:`decode_blobs`): the counts-form blobs decoded together, any other blob by
    ``one(blob, key)`` (which raises for a damaged one)."""
    found = decode_counts_blobs(blobs, begins, ends)
    return [
        ranges if ranges is not None else one(blobs[begins[j] : ends[j]], keys[j])
        for j, ranges in enumerate(found)
    ]


def record_ranges(blob: np.ndarray, where: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """What a chunk's fragment record (format 1.6, spec §6.9) stands for, by the name a
    reader caches it under: the ``(starts, counts)`` of its vertex and link fragments and
    the fragments' owners (``(owners, empty)`` under :data:`FRAGMENT_OWNERS`).

    Raises
    ------
    CorruptChunkError
        When the blob is not a valid record (``where``: its shard key). Its objects are
        not checked against the level's object count here (the readers of objects do, as
        for the owner column of format 1.5; the validator checks both).
    """
    try:
        record = decode_fragment_record(blob)
    except FragmentIndexError as exc:
        raise CorruptChunkError(f"{where}: {exc}") from exc
    return {
        VERTEX_FRAGMENTS: record.vertex_ranges(),
        LINK_FRAGMENTS: record.link_ranges(),
        FRAGMENT_OWNERS: (record.fragment_objects(), _NO_ROWS),
    }


def batch_record_ranges(
    blobs: np.ndarray, begins: np.ndarray, ends: np.ndarray, keys: Sequence[str]
) -> list[dict[str, tuple[np.ndarray, np.ndarray]]]:
    """:func:`record_ranges` of every record ``blobs[begins[j]:ends[j]]``, the well-formed
    ones decoded together by one kernel call
    (:func:`~zarr_vectors.kernels.record_blobs.records_batch`), any other by the strict
    decoder, which raises for it (``keys``: each record's shard key)."""
    vstarts, vcounts, lstarts, lcounts, owners, cut, ok = records_batch(
        blobs, begins, ends, FRAGMENT_RECORD_MAGIC
    )
    out = []
    for j, (a, b) in enumerate(itertools.pairwise(cut.tolist())):
        if not ok[j]:
            out.append(record_ranges(blobs[begins[j] : ends[j]], keys[j]))
            continue
        out.append(
            {
                VERTEX_FRAGMENTS: (vstarts[a:b], vcounts[a:b]),
                LINK_FRAGMENTS: (lstarts[a:b], lcounts[a:b]),
                FRAGMENT_OWNERS: (owners[a:b], _NO_ROWS),
            }
        )
    return out


class NeededRanges(NamedTuple):
    """Some fragments of the records of several chunks (:func:`needed_record_ranges`).

    Attributes
    ----------
    vertex_starts, vertex_counts, link_starts, link_counts
        Per fragment asked: its chunk-local vertex rows and ``links/0`` rows (first and
        count); -1 for a fragment its chunk does not have. The link rows are None when
        not asked (a level without records keeps them in another blob array).
    fragments, vertex_rows, link_rows
        Per chunk: its number of fragments and the rows they cover (``link_rows`` None
        with the link rows).
    """

    vertex_starts: np.ndarray
    vertex_counts: np.ndarray
    link_starts: np.ndarray | None
    link_counts: np.ndarray | None
    fragments: np.ndarray
    vertex_rows: np.ndarray
    link_rows: np.ndarray | None


class NeededCounts(NamedTuple):
    """Some fragments of the blobs of several chunks (:func:`needed_counts_ranges`).

    Attributes
    ----------
    starts, counts
        Per fragment asked; -1 for a fragment its chunk does not have.
    fragments, rows, extent
        Per chunk: its number of fragments, the sum of their counts, and the end of the
        last row they cover (the sum again for the counts form, whose fragments tile).
    """

    starts: np.ndarray
    counts: np.ndarray
    fragments: np.ndarray
    rows: np.ndarray
    extent: np.ndarray


def needed_record_ranges(
    blobs: np.ndarray,
    begins: np.ndarray,
    ends: np.ndarray,
    need: tuple[np.ndarray, np.ndarray],
    keys: Sequence[str],
    links: bool = True,
) -> NeededRanges:
    """The fragments ``fragment[bounds[j]:bounds[j + 1]]`` (``need``: ``(bounds,
    fragment)``, in any order) of every record ``blobs[begins[j]:ends[j]]``: one kernel
    call (:func:`~zarr_vectors.kernels.record_blobs.records_needed`) that writes only
    those fragments and skips the owners; a record it refuses is decoded by the strict
    decoder, which raises for it (``keys``: each record's shard key). Without ``links``
    the link columns are neither read nor returned.

    Raises
    ------
    CorruptChunkError
        When a record's header, sizes or count columns break spec §6.9 (its owner runs
        are not read: a read of objects does not use them; the full decode and the
        validator check them).
    """
    bounds, fragment = need
    vs, vc, ls, lc, fragments, vertex_rows, link_rows, ok = records_needed(
        blobs, begins, ends, FRAGMENT_RECORD_MAGIC, bounds, fragment, links
    )
    columns = (vs, vc, ls, lc)
    for j in np.flatnonzero(~ok).tolist():
        record = record_ranges(blobs[begins[j] : ends[j]], keys[j])  # raises, or accepts
        parsed = (*record[VERTEX_FRAGMENTS], *record[LINK_FRAGMENTS])
        _fill_asked(columns, parsed, fragment[bounds[j] : bounds[j + 1]], int(bounds[j]))
        fragments[j] = parsed[0].shape[0]
        vertex_rows[j], link_rows[j] = parsed[1].sum(), parsed[3].sum()
    if not links:
        return NeededRanges(vs, vc, None, None, fragments, vertex_rows, None)
    return NeededRanges(vs, vc, ls, lc, fragments, vertex_rows, link_rows)


def needed_counts_ranges(
    blobs: np.ndarray,
    begins: np.ndarray,
    ends: np.ndarray,
    need: tuple[np.ndarray, np.ndarray],
    keys: Sequence[str],
    one: Callable[[np.ndarray, str], tuple[np.ndarray, np.ndarray]],
) -> NeededCounts:
    """The fragments ``fragment[bounds[j]:bounds[j + 1]]`` (``need``: ``(bounds,
    fragment)``, in any order) of every blob ``blobs[begins[j]:ends[j]]``: the counts-form
    blobs (spec §6.8) by one kernel call
    (:func:`~zarr_vectors.kernels.count_blobs.counts_needed`) that writes only those
    fragments, any other blob decoded whole by ``one(blob, key)``, which raises for a
    damaged one (``keys``: each blob's shard key)."""
    bounds, fragment = need
    header = (FRAGMENT_INDEX_MAGIC, FRAGMENT_INDEX_VERSION, FRAGMENT_INDEX_HEADER_NBYTES)
    starts, counts, fragments, rows, ok = counts_needed(blobs, begins, ends, header, need)
    extent = rows.copy()
    for j in np.flatnonzero(~ok).tolist():
        parsed = one(blobs[begins[j] : ends[j]], keys[j])
        _fill_asked((starts, counts), parsed, fragment[bounds[j] : bounds[j + 1]], int(bounds[j]))
        fragments[j], rows[j] = parsed[0].shape[0], parsed[1].sum()
        extent[j] = (parsed[0] + parsed[1]).max(initial=0)
    return NeededCounts(starts, counts, fragments, rows, extent)


def _fill_asked(
    columns: Sequence[np.ndarray], parsed: Sequence[np.ndarray], asked: np.ndarray, at: int
) -> None:
    """Write the values of the fragments ``asked`` (those a chunk has) from its ``parsed``
    columns into ``columns`` from position ``at`` (a blob the kernels left to the strict
    decoder)."""
    inside = np.flatnonzero((asked >= 0) & (asked < parsed[0].shape[0]))
    for column, values in zip(columns, parsed, strict=True):
        column[at + inside] = values[asked[inside]]
