"""The owners lookup of a region query of objects: which objects have a vertex in it.

Reads the fragment owners of the chunks the region can meet, and every ``vertices`` row
of those it does not cover whole (spec §8.3 step 5: object fragments are not binned); the
rows read are handed to the read of the objects that follows (:class:`HeldRows`).
"""

from __future__ import annotations

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.names import VERTICES
from zarr_vectors.kernels.distinct import distinct_ascending
from zarr_vectors.kernels.owner_marks import fragments_met, owners_met
from zarr_vectors.query._held_rows import HeldRows
from zarr_vectors.query.regions import BoxRegion, Region
from zarr_vectors.read import ChunkRows, LevelReader, RangeTable, RowRuns
from zarr_vectors.read.read_checks import RESTORE

__all__ = ["OWNER_COLUMN", "owners_and_rows"]

OWNER_COLUMN = "__fragment_owner__"
"""The reader's column of each fragment's owner (levels without fragment records)."""

_TEST_IN_CACHE_BYTES = 512 * 2**10
"""Rows (bytes, every vertex column) of the partly covered chunks up to which a box's
owners lookup tests them in the cache of decoded blocks instead of copying them out.
Measured (benchmarks/results/object_box_plan.md): skeletons 1% (~10,000 rows, ~160 KB)
take less CPU; streamlines 1% (60,000-120,000 rows, 1-2 MB), whose objects' read goes
around the cache and so copies the rows it takes out again, took as much warm and more
moving."""


def owners_and_rows(
    reader: LevelReader,
    region: Region,
    met: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None],
) -> tuple[np.ndarray, HeldRows | None]:
    """Dense ids, ascending, of the objects with a vertex in ``region`` among the chunks
    ``met`` (:func:`~zarr_vectors.query.point_queries.chunks_met`: the chunks, their row
    counts, whether the region covers each whole, and their positions among the occupied
    chunks or None), and the ``vertices`` rows of the chunks not covered, as read (None
    when every chunk is covered)."""
    chunks, counts, inside, where = met
    cut = ~np.asarray(inside, dtype=bool)
    if reader.records:
        fragments = _fragments(reader, chunks, counts, where, cut)
        cut_chunks, cut_counts = chunks[cut], counts[cut]
        cut_where = None if where is None else where[cut]
        runs = _every_row(reader, cut_chunks, cut_counts, cut_where)
        contained = _contained_in_cache(reader, region, runs)
        if contained is not None:  # the rows stay in the cache, for the read that follows
            found = _owners(fragments, inside, counts, contained)
            flat = None if cut_where is None else reader.points.occupied_flat()[cut_where]
            return found, _held(reader, cut_chunks, cut_counts, None, True, flat)
        positions = _read_rows(reader, runs)
        cached = runs is not None and reader.runs_through_cache([VERTICES], runs)
    else:
        cached = False
        ranges = reader.fragment_ranges(chunks, counts, index_columns=())
        owners, positions = _owners_and_positions(reader, chunks, counts, inside, ranges)
        fragments = (owners, ranges)
    contained = (
        np.empty(0, dtype=bool)
        if not cut.any()
        else np.asarray(region.contains_points(positions), dtype=bool)
    )
    found = _owners(fragments, inside, counts, contained)
    return found, _held(reader, chunks[cut], counts[cut], positions, cached)


Fragments = tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]] | tuple[RangeTable, np.ndarray]
"""The fragments of the chunks met: their owners (chunk after chunk) and each chunk's
fragment ranges, or the table of the chunks' ranges and owners and each chunk's position
in it (:meth:`PointReads.range_table`)."""


def _fragments(
    reader: LevelReader,
    chunks: np.ndarray,
    counts: np.ndarray,
    where: np.ndarray | None,
    cut: np.ndarray,
) -> Fragments:
    """The fragments of ``chunks`` (a level with fragment records): from the table of the
    chunks' ranges once they are met again, else parsed from their records, fetching the
    shard indexes of the partly covered (``cut``) chunks' vertices in the same batch (their
    rows are read next)."""
    if where is not None:
        table = reader.points.range_table(where, not geometry_kind(reader.kind).ordered)
        if table is not None:
            return table, where
    ranges = reader.fragment_ranges(
        chunks, counts, index_columns=[VERTICES], index_chunks=chunks[cut]
    )
    return np.concatenate(reader.fragment_owners(chunks)), ranges


def _held(
    reader: LevelReader,
    chunks: np.ndarray,
    counts: np.ndarray,
    rows: np.ndarray | None,
    cached: bool,
    flat: np.ndarray | None = None,
) -> HeldRows | None:
    """The :class:`HeldRows` of the partly covered ``chunks`` (None when there is none;
    ``flat``: their flat indices, when known)."""
    if not chunks.shape[0]:
        return None
    if flat is None:
        flat = np.ravel_multi_index(tuple(chunks.T), reader.grid.shape).astype(np.int64)
    return HeldRows(flat, counts.astype(np.int64, copy=False), rows, cached)


def _every_row(
    reader: LevelReader, chunks: np.ndarray, counts: np.ndarray, where: np.ndarray | None
) -> RowRuns | None:
    """Every row of ``chunks`` (of ``counts`` rows each, at positions ``where`` among the
    occupied chunks, if known) as row runs, one a chunk; None when there is no chunk."""
    if not chunks.shape[0]:
        return None
    n = chunks.shape[0]
    slot = np.arange(n, dtype=np.int64)
    keys = [tuple(c) for c in chunks.tolist()]
    return RowRuns(keys, slot, np.zeros(n, np.int64), counts.astype(np.int64, copy=False), where)


def _read_rows(reader: LevelReader, runs: RowRuns | None) -> np.ndarray:
    """The ``vertices`` rows of ``runs`` (:meth:`LevelReader.read_runs`: through the open
    store's cache of decoded blocks, when it has one), chunk after chunk."""
    if runs is None:
        return np.empty((0, reader.grid.ndim), dtype=reader.column_spec(VERTICES)[0])
    return reader.read_runs([VERTICES], runs)[0]


def _contained_in_cache(
    reader: LevelReader, region: Region, runs: RowRuns | None
) -> np.ndarray | None:
    """Whether each ``vertices`` row of ``runs`` lies in ``region``, tested where the rows
    lie in the open store's cache of decoded blocks (:meth:`LevelReader.vertices_in_box`,
    no copy: the read of the objects reads the rows it needs there again,
    :func:`~zarr_vectors.query._held_rows.copy_held_rows`); None when that is not done:
    the region is not a box, the level has no vertex attributes (the read of the objects
    then takes the rows copied out instead of a second read), the chunks' rows of every
    vertex column pass :data:`_TEST_IN_CACHE_BYTES`, or the rows do not go through the
    cache.
    """
    if runs is None:
        return np.empty(0, dtype=bool)
    names = reader.attribute_names
    if not isinstance(region, BoxRegion) or not names:
        return None
    layouts = [reader.layouts.get(name) for name in [VERTICES, *names]]
    row_bytes = sum(layout.row_nbytes for layout in layouts if layout is not None)
    if int((runs.stop - runs.start).sum()) * row_bytes > _TEST_IN_CACHE_BYTES:
        return None
    return reader.vertices_in_box(runs, region.lo, region.hi)


def _owners_and_positions(
    reader: LevelReader,
    chunks: np.ndarray,
    counts: np.ndarray,
    inside: np.ndarray,
    ranges: list[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray]:
    """The fragment owners of ``chunks`` (a level without fragment records keeps them in a
    column) and every ``vertices`` row of those not ``inside`` the region, read together."""
    keys = [tuple(c) for c in chunks.tolist()]
    fragments = [
        ChunkRows(key, np.array([[0, r[0].shape[0]]], dtype=np.int64))
        for key, r in zip(keys, ranges, strict=True)
    ]
    partial = [
        ChunkRows(key, np.array([[0, n]], dtype=np.int64))
        for key, n, full in zip(keys, counts.tolist(), inside.tolist(), strict=True)
        if not full
    ]
    owners, positions = reader.read_many([(OWNER_COLUMN, fragments), (VERTICES, partial)])
    return owners, positions


def _owners(
    fragments: Fragments, inside: np.ndarray, counts: np.ndarray, contained: np.ndarray
) -> np.ndarray:
    """The owners of the fragments of the chunks the region covers whole (``inside``) and
    of the fragments holding a vertex in the region in the others, distinct, ascending.

    ``fragments``: see :data:`Fragments`; ``contained`` whether each row of the partly
    covered chunks lies in the region; one kernel call over all chunks
    (:func:`~zarr_vectors.kernels.owner_marks.fragments_met`, or
    :func:`~zarr_vectors.kernels.owner_marks.owners_met` over the table).
    """
    inside = np.asarray(inside, dtype=bool)
    counts = counts.astype(np.int64, copy=False)
    if isinstance(fragments[0], RangeTable):
        table, where = fragments
        tabled = (table.first, table.count, table.ranges, table.owner)
        found, bad = owners_met(tabled, where, inside, counts, contained, distinct=True)
        if bad >= 0:
            raise CorruptChunkError(
                f"fragment {bad} of the chunks read does not lie in its chunk's rows: {RESTORE}"
            )
        return found
    owners, ranges = fragments
    n_fragments = np.array([r[0].shape[0] for r in ranges], dtype=np.int64)
    starts, sizes = (
        np.concatenate([r[i] for r in ranges]).astype(np.int64, copy=False)
        if ranges
        else np.empty(0, np.int64)
        for i in (0, 1)
    )
    met, bad = fragments_met(starts, sizes, n_fragments, inside, counts, contained)
    if bad >= 0:
        raise CorruptChunkError(
            f"fragment {bad} of the chunks read does not lie in its chunk's rows: {RESTORE}"
        )
    return distinct_ascending(owners[met])
