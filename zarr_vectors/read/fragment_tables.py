"""The fragment ranges of a level's chunks, in tables kept by chunk position (spec §6).

A :class:`~zarr_vectors.read.point_reads.PointReads` keeps, by position among the occupied
chunks, the per-bin ranges of a point cloud's chunks (:func:`bin_table`, what its box reads
plan from) and the fragment ranges, link ranges and owners of an object level's chunks
(:func:`range_table`, what a repeated object read takes its fragments from); each chunk is
parsed and checked once, as :meth:`LevelReader.fragment_ranges` checks it. The functions
are bound on :class:`PointReads` by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from zarr_vectors.format.fragment_records import FRAGMENT_RECORD_MAGIC
from zarr_vectors.format.names import FRAGMENT_RECORDS, LINK_FRAGMENTS, VERTEX_FRAGMENTS
from zarr_vectors.kernels.distinct import distinct_ascending
from zarr_vectors.kernels.ranges import first_untiled
from zarr_vectors.kernels.record_blobs import records_batch
from zarr_vectors.read import _read_plans as read_plans

if TYPE_CHECKING:
    from zarr_vectors.read.point_reads import PointReads

__all__ = ["RANGE_TABLE_BYTES", "bin_ranges", "bin_table", "range_table"]

RANGE_TABLE_BYTES = 64 * 2**20
"""Bytes of fragment ranges (:func:`range_table`) past which no chunk is added (reads then
take their fragments from the records each time, as a first read does)."""


def bin_ranges(
    points: PointReads, chunks: np.ndarray, counts: np.ndarray, index_chunks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin first rows and row counts of point-cloud chunks, as ``(k, bins)`` tables.

    The fragment indexes are fetched, checked (:meth:`LevelReader.fragment_ranges`)
    and cached once per chunk, with the shard indexes of every per-vertex column of
    ``index_chunks`` (the chunks whose rows are read next) in the same batch.
    """
    keys = read_plans.chunk_keys(chunks)
    missing = [i for i, key in enumerate(keys) if key not in points.checked_bins]
    if missing:
        found = points.reader.blob_ranges(
            VERTEX_FRAGMENTS,
            chunks[missing],
            index_columns=points.reader.vertex_columns,
            index_chunks=index_chunks,
            dense_fragments=points.reader.grid.bins_per_chunk_total,
        )
        check_bin_ranges(points, chunks[missing], counts[missing], found)
        points.checked_bins.update(keys[i] for i in missing)
    if not keys:
        empty = np.empty((0, points.reader.grid.bins_per_chunk_total), dtype=np.int64)
        return empty, empty
    found = [points.reader.cached_ranges(VERTEX_FRAGMENTS, key) for key in keys]
    return np.stack([f[0] for f in found]), np.stack([f[1] for f in found])


def bin_table(
    points: PointReads, where: np.ndarray, index_where: np.ndarray
) -> read_plans.BinTable:
    """The per-bin ranges (:func:`bin_ranges`) of occupied chunks by their positions.

    Parameters
    ----------
    where
        Positions, in :meth:`LevelReader.occupied_chunks` ``(None, None)``, of
        point-cloud chunks.
    index_where
        Positions of the chunks whose rows are read next: their shard indexes are
        fetched with the fragment indexes of chunks not seen yet.

    Returns
    -------
    read_plans.BinTable
        Table whose row ``row[p]`` holds the ranges of the chunk at position ``p``
        (every position of ``where`` has one).
    """
    table = points.bins
    if table is not None and not (table.row[where] < 0).any():
        return table
    with read_plans.TABLES_LOCK:  # one thread at a time adds rows
        if points.bins is None:
            n_chunks, bins = (
                len(points.reader.occupied_chunks(None, None)[1]),
                points.reader.grid.bins_per_chunk_total,
            )
            points.bins = read_plans.BinTable.empty(n_chunks, bins)
        table = points.bins
        missing = distinct_ascending(where[table.row[where] < 0])
        if missing.shape[0]:
            coords, counts = points.reader.occupied_chunks(None, None)
            found = bin_ranges(points, coords[missing], counts[missing], coords[index_where])
            table.add(missing, *found)
    return table


def check_bin_ranges(
    points: PointReads,
    chunks: np.ndarray,
    counts: np.ndarray,
    found: list[tuple[np.ndarray, np.ndarray]],
) -> None:
    """The checks of :meth:`LevelReader.fragment_ranges` on point-cloud chunks, all at once."""
    bins = points.reader.grid.bins_per_chunk_total
    if any(f[0].shape[0] != bins for f in found):
        points.reader.fragment_ranges(chunks, counts)  # raises for the first wrong chunk
    starts = np.stack([f[0] for f in found])
    sizes = np.stack([f[1] for f in found])
    if first_untiled(starts, sizes, counts) >= 0:  # extent, sum and tiling in one pass
        points.reader.fragment_ranges(chunks, counts)  # raises for the first wrong chunk


def range_table(points: PointReads, where: np.ndarray, links: bool) -> read_plans.RangeTable | None:
    """The fragment ranges of the object chunks at positions ``where`` (among the
    occupied chunks), with their link ranges when ``links`` and, for a level with
    fragment records, their owners, in a table kept by position
    (:class:`~zarr_vectors.read._read_plans.RangeTable`); None the first time a chunk
    is asked for (a first read takes only the fragments it needs from the records,
    :meth:`LevelReader.needed_ranges`), or when the table would pass
    :data:`RANGE_TABLE_BYTES`, or a chunk's link index (or its owners) does not hold
    one entry a fragment. The chunks are parsed and checked as
    :meth:`LevelReader.fragment_ranges` does.

    Raises
    ------
    CorruptChunkError
        When a chunk's fragment index is damaged or does not cover its rows.
    """
    table = points.ranges
    if table is not None and not (table.first[where] < 0).any():
        return table
    with read_plans.TABLES_LOCK:  # one thread at a time adds chunks
        if points.ranges is None:
            points.ranges = read_plans.RangeTable.empty(points.occupied_flat().shape[0])
        table = points.ranges
        unknown = where[table.first[where] < 0]  # repeats: made distinct when added
        if not unknown.shape[0]:
            return table
        if not table.seen[unknown].all() or table.ranges.nbytes > RANGE_TABLE_BYTES:
            table.seen[unknown] = True
            return None
        unknown = distinct_ascending(unknown)
        waiting = np.flatnonzero(table.seen & (table.first < 0))  # asked, not added
        for chunks in (waiting, unknown) if waiting.shape != unknown.shape else (unknown,):
            if add_held_records(points, table, chunks, links):  # all held: one kernel call
                return table
        reader = points.reader
        coords, counts = reader.occupied_chunks(None, None)
        vertex = reader.fragment_ranges(coords[unknown], counts[unknown], index_columns=())
        link = reader.blob_ranges(LINK_FRAGMENTS, coords[unknown]) if links else None
        owners = reader.fragment_owners(coords[unknown]) if reader.records else None
        if link is not None and any(
            a[0].shape != b[0].shape for a, b in zip(vertex, link, strict=True)
        ):
            return None  # not one link range a fragment: the records say which is wrong
        if owners is not None and any(
            a[0].shape != b.shape for a, b in zip(vertex, owners, strict=True)
        ):
            return None  # not one owner a fragment: the records say which is wrong
        table.add(unknown, vertex, link, owners)
    return table


def add_held_records(
    points: PointReads, table: read_plans.RangeTable, where: np.ndarray, links: bool
) -> bool:
    """Add the chunks at positions ``where`` to ``table`` from their fragment records
    (format 1.6) when the reader holds them all (:attr:`LevelReader.held`, as a first
    read of them leaves them): one kernel call over every record
    (:func:`~zarr_vectors.kernels.record_blobs.records_batch`) and flat copies into the
    table, instead of the per-chunk lists :meth:`LevelReader.fragment_ranges` parses.
    False, with nothing added, when the level has no records, one is not held, or one
    is damaged or does not cover its chunk's rows (the lists' path then reports it)."""
    reader = points.reader
    if not reader.records:
        return False
    coords, counts = reader.occupied_chunks(None, None)
    keys = read_plans.chunk_keys(coords[where])
    if reader.held.missing(FRAGMENT_RECORDS, keys):
        return False
    buffer, begins, ends, _ = reader.held.joined(FRAGMENT_RECORDS, keys)
    *columns, owners, bounds, ok = records_batch(buffer, begins, ends, FRAGMENT_RECORD_MAGIC)
    last = bounds[1:] - 1  # a sound record has a fragment; its starts are prefix sums
    if not ok.all() or np.any(columns[0][last] + columns[1][last] != counts[where]):
        return False
    table.add_flat(where, bounds, columns if links else columns[:2], owners)
    return True
