"""Runs, fragments and links of one level of objects (spec §10.3), before anything is written.

Vertices are cut into *runs* — maximal traversal-consecutive vertices of one object in one
bin of one chunk — that become the fragments; runs are stored by (chunk, object, run
order), links are anchored in the fragment of their first endpoint (by the kind's rule)
and ordered by (chunk, anchor fragment, link order). Every sort is a counting sort over
dense keys (:mod:`zarr_vectors.kernels.object_runs`); polylines, whose links are implicit,
get theirs in one pass over the runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.fragment_encoding import encode_ranges_ragged
from zarr_vectors.format.fragment_records import encode_records_ragged
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.kernels.face_links import anchor_faces
from zarr_vectors.kernels.object_runs import (
    RunPlacement,
    chain_links,
    cut_runs,
    place_runs,
    rank_keys,
    stable_counting_sort,
    vertex_places,
)
from zarr_vectors.kernels.tree_links import anchor_tree_links
from zarr_vectors.write._sorting import ChunkedRows, assign, grid_indices

if TYPE_CHECKING:
    from zarr_vectors.write._objects import ObjectTable

__all__ = ["Links", "Runs", "chunk_ids", "cut_object_runs", "empty_runs", "level_links"]

_INT32 = np.iinfo(np.int32)


@dataclass(frozen=True, slots=True)
class Runs:
    """Fragments of a level: runs in input order and where each went.

    Attributes
    ----------
    rows
        Storage order of the vertices and the occupied chunks.
    run_start, run_object, run_chunk
        ``(r,)`` per run in input order: first input vertex, object and chunk rank (index
        into ``rows.chunks``).
    place
        Fragment number and row of every run, and every fragment's row, length and
        object in storage order (:class:`~zarr_vectors.kernels.object_runs.RunPlacement`).
    """

    rows: ChunkedRows
    run_start: np.ndarray
    run_object: np.ndarray
    run_chunk: np.ndarray
    place: RunPlacement

    @property
    def chunk_grid(self) -> np.ndarray:
        """``(k, D)`` grid index of each occupied chunk."""
        return self.rows.chunks

    @property
    def n_vertices(self) -> int:
        """Number of vertices."""
        return int(self.rows.chunk_offsets[-1])

    @property
    def run_offsets(self) -> np.ndarray:
        """``(k + 1,)`` fragments before each chunk."""
        return self.place.run_offsets

    @property
    def run_fragment(self) -> np.ndarray:
        """``(r,)`` fragment number of every run inside its chunk (input order)."""
        return self.place.run_fragment

    def vertex_blobs(self, counts_form: bool = False) -> list[np.ndarray]:
        """The ZVFG blob of every chunk: one range fragment per run (spec §6), in the
        counts form of §6.8 with ``counts_form``."""
        place = self.place
        return encode_ranges_ragged(
            place.fragment_row, place.fragment_length, place.run_offsets, counts_form=counts_form
        )

    def records(self, links: Links) -> list[np.ndarray]:
        """The fragment record of every chunk (spec §6.9): each fragment's vertex and
        link counts and its object."""
        place = self.place
        return encode_records_ragged(
            place.fragment_length, links.fragment_counts, place.fragment_object, place.run_offsets
        )

    def vertex_places(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Chunk rank, chunk-local row and fragment number of every input vertex."""
        place = self.place
        return vertex_places(
            self.run_start, self.run_chunk, place.run_row, place.run_fragment, self.n_vertices
        )


def cut_object_runs(
    table: ObjectTable, grid: ChunkGrid, bounds: tuple[np.ndarray, np.ndarray]
) -> Runs:
    """Cut a table's vertices (at least one) into runs and place them in their chunks."""
    n = table.positions.shape[0]
    chunk_flat, bin_flat, lo, dense_shape = assign(table.positions, bounds, grid)
    run_start, run_object, run_key = cut_runs(chunk_flat, bin_flat, table.offsets)
    del chunk_flat, bin_flat
    run_chunk, occupied = rank_keys(run_key, math.prod(int(d) for d in dense_shape))
    place = place_runs(run_start, run_chunk, run_object, n, occupied.shape[0])
    chunks = grid_indices(occupied, lo, dense_shape, grid)
    rows = ChunkedRows(run_start, place.run_destination, chunks, place.vertex_offsets)
    return Runs(rows, run_start, run_object, run_chunk, place)


def empty_runs(ndim: int) -> Runs:
    """The runs of a level without vertices."""
    empty = np.empty(0, np.int64)
    place = place_runs(empty, empty, empty, 0, 0)
    return Runs(ChunkedRows.empty(ndim), empty, empty, empty, place)


def chunk_ids(runs: Runs, grid: ChunkGrid, n_max: int) -> np.ndarray:
    """Flat grid id of every occupied chunk; a vertex's global id is ``id * n_max + row``.

    Raises
    ------
    InvalidInputError
        When global ids would not fit the 2**63 of the format (spec §9.11).
    """
    shape = tuple(int(g) for g in grid.shape)
    if float(np.prod(np.asarray(shape, dtype=np.float64))) * n_max >= 2.0**63:
        raise InvalidInputError(
            f"the chunk grid {shape} with {n_max} rows per chunk exceeds the 2**63 global "
            "vertex ids of the format (spec §9.11); use a larger chunk_shape"
        )
    if not len(runs.chunk_grid):
        return np.empty(0, np.int64)
    return np.asarray(np.ravel_multi_index(tuple(runs.chunk_grid.T), shape), dtype=np.int64)


@dataclass(frozen=True, slots=True)
class Links:
    """Links of a level: chunk-local rows and cross-chunk global-id pairs.

    Attributes
    ----------
    rows
        ``(l, width)`` chunk-local rows (``links/0``), chunk by chunk in anchored order.
    chunk_offsets
        ``(k + 1,)``: chunk c holds ``rows[chunk_offsets[c]:chunk_offsets[c+1]]``.
    fragment_counts
        ``(r,)`` rows anchored in each vertex fragment, fragments in storage order.
    source
        ``(l,)`` input link index of each row, or None when no column needs it.
    cross
        ``(x, 2)`` int64 global ids, sorted.
    cross_source
        ``(x,)`` input link index of each ``cross_chunk_links`` row, or None.
    """

    rows: np.ndarray
    chunk_offsets: np.ndarray
    fragment_counts: np.ndarray
    source: np.ndarray | None
    cross: np.ndarray
    cross_source: np.ndarray | None

    def per_chunk(self, values: np.ndarray) -> list[np.ndarray]:
        """``values`` (one row per link row) cut chunk by chunk."""
        bounds = self.chunk_offsets
        return [values[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)]

    def longest(self) -> int:
        """Most link rows in one chunk."""
        return int(np.diff(self.chunk_offsets).max(initial=0))

    def blobs(self, run_offsets: np.ndarray, counts_form: bool = False) -> list[np.ndarray]:
        """The ``link_fragments`` blob of every chunk: a range of rows per vertex fragment
        (in the counts form of spec §6.8 with ``counts_form``)."""
        counts = self.fragment_counts
        starts = np.cumsum(counts) - counts
        per_chunk = np.diff(run_offsets)
        starts -= np.repeat(self.chunk_offsets[:-1], per_chunk)
        return encode_ranges_ragged(starts, counts, run_offsets, counts_form=counts_form)


def level_links(table: ObjectTable, runs: Runs, grid: ChunkGrid, n_max: int) -> Links:
    """The links of a level, anchored and ordered (spec §10.3), by the table's kind."""
    ids = chunk_ids(runs, grid, n_max)
    kind = geometry_kind(table.kind)
    if kind.ordered:
        return _chain_links(runs, ids, n_max)
    places = runs.vertex_places()
    if kind.tree:
        return _skeleton_links(table.links, runs, places, (ids, n_max))
    gid = ids[places[0]] * n_max + places[1]
    if kind.faces:
        return _face_links(table, runs, places, gid, grid)
    return _edge_links(table, runs, places, gid)


def _chain_links(runs: Runs, ids: np.ndarray, n_max: int) -> Links:
    """Polylines: vertex ``v`` to ``v + 1`` of each object, in one pass over the runs."""
    longest = int(runs.rows.counts.max(initial=0))
    dtype = np.int32 if longest - 1 <= _INT32.max else np.int64
    place = runs.place
    parts = (runs.run_start, runs.run_object, runs.run_chunk, place.run_row, place.run_fragment)
    rows, counts, cross = chain_links(parts, runs.run_offsets, runs.n_vertices, (ids, n_max), dtype)
    total = np.concatenate([[0], np.cumsum(counts)])
    return Links(rows, total[runs.run_offsets], counts, None, cross, None)


Places = tuple[np.ndarray, np.ndarray, np.ndarray]


def _anchored(
    runs: Runs,
    places: Places,
    anchor: np.ndarray,
    local: np.ndarray,
    source: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Order local link rows by (chunk, anchor fragment), ties in input order.

    ``source`` None means every link, in input order. Returns the rows, the input link
    index of each, the chunk offsets and the rows per vertex fragment (storage order).
    """
    fragment = runs.run_offsets[places[0][anchor]] + places[2][anchor]
    order, offsets = stable_counting_sort(fragment, runs.run_start.shape[0])
    source = order if source is None else source[order]
    rows = np.take(local, order, axis=0)  # several times faster than local[order] in 2-D
    return rows, source, offsets[runs.run_offsets], np.diff(offsets)


def _edge_links(table: ObjectTable, runs: Runs, places: Places, gid: np.ndarray) -> Links:
    vertex_chunk, vertex_row, _ = places
    edges = table.links
    a, b = edges[:, 0], edges[:, 1]
    same = vertex_chunk[a] == vertex_chunk[b]
    inside = np.flatnonzero(same)
    a_in, b_in = a[inside], b[inside]
    ra, rb = vertex_row[a_in], vertex_row[b_in]
    outside = np.flatnonzero(~same)
    ga, gb = gid[a[outside]], gid[b[outside]]
    anchor = a_in
    if geometry_kind(table.kind).undirected(bool(table.root_extra.get("is_directed", False))):
        swap = rb < ra
        ra, rb = np.where(swap, rb, ra), np.where(swap, ra, rb)
        anchor = np.where(swap, b_in, a_in)
        ga, gb = np.minimum(ga, gb), np.maximum(ga, gb)
    rows, source, chunk_offsets, counts = _anchored(
        runs, places, anchor, np.stack([ra, rb], axis=1), inside
    )
    cross, order = _sorted_pairs(ga, gb)
    return Links(rows, chunk_offsets, counts, source, cross, outside[order])


def _skeleton_links(
    edges: np.ndarray, runs: Runs, places: Places, ids: tuple[np.ndarray, int]
) -> Links:
    """Anchored in the child's fragment, by (fragment, child row, link order), in one
    kernel pass (:func:`~zarr_vectors.kernels.tree_links.anchor_tree_links`); ``ids`` are
    the chunks' flat grid ids and ``N_max``, for the global ids of the links across chunks."""
    found = anchor_tree_links(edges, places, runs.run_offsets)
    chunk_ids_, n_max = ids
    outside = found.outside

    def gid(vertex: np.ndarray) -> np.ndarray:
        return np.asarray(chunk_ids_[places[0][vertex]] * n_max + places[1][vertex], np.int64)

    cross, order = _sorted_pairs(gid(edges[outside, 0]), gid(edges[outside, 1]))
    counts = np.diff(found.offsets)
    chunk_offsets = found.offsets[runs.run_offsets]
    return Links(found.rows, chunk_offsets, counts, found.source, cross, outside[order])


def _sorted_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs sorted by (column 0, column 1), and the order that sorted them."""
    pairs = np.stack([a, b], axis=1).astype(np.int64).reshape(-1, 2)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return pairs[order], order


def _face_links(
    table: ObjectTable, runs: Runs, places: Places, gid: np.ndarray, grid: ChunkGrid
) -> Links:
    # The centroid's exact chunk (§5.1), even if rounding puts it outside the grid: such a
    # chunk holds none of the face's vertices, so the face goes to v0's chunk.
    rows, source, offsets = anchor_faces(
        table.positions,
        table.links,
        places,
        runs.run_offsets,
        gid,
        runs.chunk_grid,
        (grid.chunk_shape, grid.origin),
    )
    chunk_offsets, counts = offsets[runs.run_offsets], np.diff(offsets)
    empty = np.empty(0, np.int64)
    return Links(rows, chunk_offsets, counts, source, np.empty((0, 2), np.int64), empty)
