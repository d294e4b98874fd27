"""The reads that rebuild a set of objects from their fragment references (spec §7.6).

:class:`ObjectPlan` resolves the references to fragment rows, reads only the chunks they
name, and assembles the objects exactly as written: vertices in traversal order, links
translated to rows of the result (:mod:`~zarr_vectors.query._object_links`), attributes.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.names import LINK_FRAGMENTS, VERTEX_FRAGMENTS
from zarr_vectors.kernels import counting_sort
from zarr_vectors.kernels.bin_runs import copy_row_runs
from zarr_vectors.kernels.cross_links import CrossLinks
from zarr_vectors.kernels.distinct import distinct_ascending
from zarr_vectors.kernels.link_groups import links_by_object
from zarr_vectors.kernels.link_rows import link_row_runs
from zarr_vectors.kernels.object_plan import ObjectReadPlan, object_read_plan
from zarr_vectors.kernels.read_plan import ReadPlan, read_plan, reference_pieces
from zarr_vectors.kernels.reference_chunks import ReferenceChunks, reference_chunks
from zarr_vectors.query._fragment_refs import (
    FragmentTable,
    dense_enough,
    joined_runs,
    slot_order,
)
from zarr_vectors.query._held_rows import HeldRows, copy_held_rows, read_vertex_columns
from zarr_vectors.query._link_blocks import LinkBlocks
from zarr_vectors.query._object_links import (
    LINK_COLUMN,
    check_graph_links,
    link_column,
    lookup,
    returned_runs,
    translate,
    translate_edges,
)
from zarr_vectors.read import LevelReader, RangeTable, RowRuns
from zarr_vectors.result import QueryResult

__all__ = [
    "RANGE_GROUP",
    "ObjectPlan",
    "ObjectSource",
    "Pieces",
    "GROUPED_LINKS",
    "grouped_links",
    "in_reference_order",
    "reference_pieces",
]


class ObjectSource(Protocol):
    """What a plan reads besides rows: the level's reader, its kind and options, and its
    global arrays (:class:`~zarr_vectors.query.object_queries.ObjectReader`)."""

    reader: LevelReader
    kind: str
    bounded: bool
    cache_bytes: int
    link_attribute_names: list[str]
    object_attribute_names: list[str]
    link_blocks: LinkBlocks | None

    @property
    def grid_shape(self) -> tuple[int, ...]: ...

    @property
    def n_max(self) -> int: ...

    @property
    def vertex_columns(self) -> list[str]: ...

    def ids_of(self, dense: np.ndarray) -> np.ndarray: ...

    def object_attribute(self, name: str) -> np.ndarray: ...

    def cross_link_attribute(self, name: str) -> np.ndarray: ...

    def cross_link_index(self) -> CrossLinks: ...


RANGE_GROUP = 4
"""Chunks whose fragment ranges a bounded read (``ObjectReader(bounded=True)``) decodes
at a time."""


Pieces = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Runs of rows to copy: the first source row, first destination row and rows of each."""


def _placed(rows: np.ndarray, pieces: Pieces, n: int) -> np.ndarray:
    """The ``n`` rows ``pieces`` place, copied out of ``rows`` (:func:`in_reference_order`)."""
    out = np.empty((n, *rows.shape[1:]), dtype=rows.dtype)
    copy_row_runs(rows, pieces[0], out, pieces[1], pieces[2])
    return out


GROUPED_LINKS = 2**15
"""A read of whole objects puts at most this many links object by object (:func:`grouped_links`);
more are left in storage order. Measured in a query (2 cores): placing the 15,000 edges of a
1% box of the benchmark skeletons ~0.1 ms; the 70,000 faces of a 1% box of the benchmark
mesh 1.3-1.8 ms (of a ~3 ms query), the 740,000 of a 25% box ~6 ms."""


def grouped_links(
    links: np.ndarray, columns: dict[str, np.ndarray], offsets: np.ndarray
) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray | None]:
    """``links`` (rows of the objects ``offsets`` delimits) and their per-link ``columns``
    object by object, and each object's link count: a link belongs to the object of its
    first entry, and each object's links keep their order
    (:func:`~zarr_vectors.kernels.link_groups.links_by_object`; nothing moves when they are
    grouped already). So an object's links in a result do not depend on which other
    objects it holds (as :func:`~zarr_vectors.query.object_results.repeated_objects`
    orders them). Links are left as they are, and the counts None, when a first entry is
    not a row, or when there are more than :data:`GROUPED_LINKS`.

    Examples
    --------
    >>> links = np.array([[3, 2], [1, 0], [4, 3]])
    >>> links, _, counts = grouped_links(links, {}, np.array([0, 2, 5]))
    >>> links.tolist(), counts.tolist()
    ([[1, 0], [3, 2], [4, 3]], [1, 2])
    """
    if links.shape[0] > GROUPED_LINKS:
        return links, columns, None
    found = links_by_object(links, offsets)  # one kernel call
    if found.links is None or found.order is None:
        return links, columns, found.counts
    moved = {name: values[found.order] for name, values in columns.items()}
    return found.links, moved, found.counts


def in_reference_order(
    rows: np.ndarray, starts: np.ndarray, sizes: np.ndarray, pieces: Pieces | None = None
) -> np.ndarray:
    """The read ``rows`` with reference ``r``'s ``sizes[r]`` rows from ``starts[r]`` placed
    one reference after another: the read rows themselves when they are in that order
    already, else one copy of runs (not a per-row gather); ``pieces``: those runs, when
    :func:`reference_pieces` made them already (for several columns)."""
    if pieces is None:
        pieces = reference_pieces(starts, sizes, rows.shape[0])
        if pieces is None:
            return rows
    return _placed(rows, pieces, int(sizes.sum()))


class ObjectPlan:
    """The reads that rebuild a set of objects from their fragment references.

    References are sorted once by (chunk slot, first row); every per-chunk step then works
    on one contiguous slice of that order, so the cost is linear in the references.
    """

    def __init__(
        self,
        objects: ObjectSource,
        dense: np.ndarray,
        refs: tuple[np.ndarray, np.ndarray, np.ndarray],
        turns: bool = True,
        held: HeldRows | None = None,
    ) -> None:
        self.objects = objects
        self.turns = turns
        self.held = held
        self.reader = objects.reader
        self.dense = dense
        self.ref_object, ref_chunk, self.ref_fragment = refs
        grid_shape = objects.grid_shape
        occupied = self.reader.points.occupied_flat()  # ascending: C order
        counts = self.reader.occupied_chunks(None, None)[1]
        if dense_enough(math.prod(grid_shape), ref_chunk.shape[0]):
            found = reference_chunks(ref_chunk, grid_shape, occupied, counts)
        else:
            found = _sparse_chunks(ref_chunk, grid_shape, occupied, counts)
        if found.outside >= 0:
            bad = tuple(int(c) for c in ref_chunk[found.outside])
            raise CorruptChunkError(f"a manifest names chunk {bad}, outside the grid {grid_shape}")
        self.chunk_flat, self.ref_slot, self.chunks = found.chunk_flat, found.ref_slot, found.chunks
        self._located = found
        self.chunk_keys = [tuple(c) for c in self.chunks.tolist()]
        self.where: np.ndarray | None = None  # set by _chunk_counts
        self.link_plan: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # _needed_rows
        self.link_counts: np.ndarray | None = None  # each object's links, set by result

    def result(self, labels: dict[str, Any] | None = None) -> QueryResult:
        """The objects, whole; ``labels``: further fields of the result (axis names and
        units, kind, level), set when it is built."""
        rows = self._chunk_counts()
        if self.objects.bounded:
            starts, sizes = self._rows_by_group(rows)
        else:
            starts, sizes = self._needed_rows(rows)
        planned = self._planned(starts, sizes, rows)
        plan = planned.plan
        runs = RowRuns(self.chunk_keys, plan.run_slot, plan.run_start, plan.run_stop, self.where)
        vertex_rows = self._vertex_rows(runs, planned.pieces)
        links: np.ndarray | None = None
        link_columns: dict[str, np.ndarray] = {}
        if not geometry_kind(self.objects.kind).ordered:
            links, link_columns = self._links(plan, planned.link_runs)
            links, link_columns, self.link_counts = grouped_links(
                links, link_columns, planned.offsets
            )
        ids = self.objects.ids_of(self.dense)
        return QueryResult(
            positions=vertex_rows[0],
            attributes=dict(zip(self.objects.vertex_columns[1:], vertex_rows[1:], strict=True)),
            vertex_object_ids=ids.repeat(planned.offsets[1:] - planned.offsets[:-1]),
            object_ids=ids,
            offsets=planned.offsets,
            edges=links if links is not None and links.shape[1] == 2 else None,
            faces=links if links is not None and links.shape[1] == 3 else None,
            object_attributes=self._object_attributes(),
            link_attributes=link_columns,
            **(labels or {}),
        )

    def _planned(self, starts: np.ndarray, sizes: np.ndarray, rows: np.ndarray) -> ObjectReadPlan:
        """The reads, returned rows, reference order and link rows of the references
        (first rows ``starts``, row counts ``sizes``; ``rows``: each slot's rows), by one
        kernel call (:func:`object_read_plan`); step by step when it declines (a damaged
        reference: the steps report it as before)."""
        n_max = self.objects.n_max
        link_plan = self.link_plan
        links = None if link_plan is None else (self.ref_fragment, link_plan[0], link_plan[1])
        refs = (self.ref_slot, starts, sizes, self.ref_object)
        found = object_read_plan(refs, rows, self.chunk_flat, n_max, self.dense.shape[0], links)
        if found is not None:
            return found
        order = slot_order(self.ref_slot, starts, rows)
        plan = read_plan(order, self.ref_slot, starts, sizes, self.chunk_flat, n_max)
        per_object = np.bincount(self.ref_object, weights=sizes, minlength=self.dense.shape[0])
        offsets = np.concatenate([[0], np.cumsum(per_object.astype(np.int64))])
        pieces = reference_pieces(
            plan.buffer_start, sizes, int((plan.run_stop - plan.run_start).sum())
        )
        link_runs = None
        if link_plan is not None:
            link_runs = link_row_runs(self.ref_slot, self.ref_fragment, link_plan[0], link_plan[1])
        return ObjectReadPlan(plan, pieces, offsets, link_runs)

    def _vertex_rows(self, runs: RowRuns, pieces: Pieces | None) -> list[np.ndarray]:
        """The vertex columns' rows of every reference, in reference order (``pieces``:
        the runs placing the rows read so, None when they are in it); the held rows
        (:attr:`held`) are used here and let go. Held rows read through the cache of
        decoded blocks are not copied: when every block is there, every column is copied
        out of it at once (:meth:`PointReads.cached_runs`); else, with vertex attributes,
        every column is read in one pass over the cache (one read instead of two)."""
        names = self.objects.vertex_columns
        held, read = self.held, None
        if held is not None and held.cached and self.reader.points.kernel_row_bytes(names, False):
            read = self.reader.points.cached_runs(names, runs)  # every block cached (warm)
        del held
        if read is None:
            read = self._read_vertex_rows(names, runs)
        self.held = None
        if pieces is None:
            return read
        n = int(pieces[2].sum())
        return [_placed(rows, pieces, n) for rows in read]

    def _read_vertex_rows(self, names: list[str], runs: RowRuns) -> list[np.ndarray]:
        """The vertex columns' rows of ``runs``, run after run, with the held rows (let go
        here; see :meth:`_vertex_rows`)."""
        held, self.held = self.held, None
        if (
            held is not None
            and held.cached
            and len(names) > 1
            and self.reader.runs_through_cache(names, runs)
        ):
            held = None
        copied = None if held is None else copy_held_rows(self.reader, runs, self.chunk_flat, held)
        del held  # freed before the rest is read
        return read_vertex_columns(self.reader, names, runs, copied, self.turns)

    def _needed_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First row and row count of every reference, from only the fragments the
        references name (:meth:`LevelReader.needed_ranges`), or from the table of the
        chunks' ranges once they are met again (:meth:`PointReads.range_table`); their
        link rows are kept for :meth:`_links` when the kind has links."""
        links = not geometry_kind(self.objects.kind).ordered
        assert self.where is not None  # set by _chunk_counts
        table = self.reader.points.range_table(self.where, links)
        if table is not None:
            return self._tabled_rows(table, links)
        order, bounds = counting_sort(self.ref_slot, self.chunks.shape[0])
        found = self.reader.needed_ranges(
            self.chunks, rows, (bounds, self.ref_fragment[order]), links=links
        )
        ranges = np.empty((4 if links else 2, order.shape[0]), np.int64)
        ranges[0, order], ranges[1, order] = found.vertex_starts, found.vertex_counts
        if found.link_starts is not None and found.link_counts is not None:
            ranges[2, order], ranges[3, order] = found.link_starts, found.link_counts
            assert found.link_rows is not None
            self.link_plan = (ranges[2], ranges[3], found.link_rows)
        return ranges[0], ranges[1]

    def _tabled_rows(self, table: RangeTable, links: bool) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_needed_rows` from the table of the chunks' fragment ranges.

        Raises
        ------
        CorruptChunkError
            When a manifest names a fragment its chunk does not have.
        """
        assert self.where is not None
        found, bad = table.rows_of(self.where[self.ref_slot], self.ref_fragment)
        if bad >= 0:
            j = int(self.ref_slot[bad])
            worst = int(self.ref_fragment[self.ref_slot == j].max())
            raise CorruptChunkError(
                f"chunk {self.chunk_keys[j]}: a manifest names fragment {worst} of "
                f"{int(table.count[self.where[j]])}"
            )
        if links:
            self.link_plan = (found[2], found[3], table.link_rows[self.where])
        return found[0], found[1]

    def _rows_by_group(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First row and row count of every reference, the fragment ranges decoded
        :data:`RANGE_GROUP` chunk slots at a time and, after each group, kept only within
        the reader's ``cache_bytes``; the chunks whose ranges are cached come first, so
        they are used before any group can push them out."""
        starts = np.empty(self.ref_slot.shape[0], np.int64)
        sizes = np.empty(self.ref_slot.shape[0], np.int64)
        cached = [self.reader.has_ranges(VERTEX_FRAGMENTS, tuple(c)) for c in self.chunks.tolist()]
        slots = np.argsort(~np.asarray(cached, bool), kind="stable")
        rank = np.empty_like(slots)
        rank[slots] = np.arange(slots.shape[0])
        ref_rank = rank[self.ref_slot]
        order = np.argsort(ref_rank, kind="stable")
        for first in range(0, slots.shape[0], RANGE_GROUP):
            group = slots[first : first + RANGE_GROUP]
            lo, hi = np.searchsorted(ref_rank[order], [first, first + group.shape[0]])
            mine = order[lo:hi]
            found = self.reader.fragment_ranges(self.chunks[group], rows[group])
            table = FragmentTable.of(found, rows[group])
            got = table.rows_of(ref_rank[mine] - first, self.ref_fragment[mine], self.chunks[group])
            starts[mine], sizes[mine] = got
            self.reader.trim_ranges(self.objects.cache_bytes)
        return starts, sizes

    def _chunk_counts(self) -> np.ndarray:
        """Each chunk's row count, its position among the occupied chunks kept (``where``)."""
        if self._located.empty >= 0:
            raise CorruptChunkError("a manifest names an empty chunk")
        self.where = self._located.where
        return self._located.rows

    def _links(
        self, plan: ReadPlan, link_runs: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The objects' links as result rows, and their per-link attributes (§9.12);
        ``link_runs``: the ``links/0`` row runs of the fragments named, when planned."""
        reader = self.reader
        if self.link_plan is not None and link_runs is not None:
            runs = RowRuns(self.chunk_keys, *link_runs, self.where)
            chunk_rows = self.link_plan[2]
        else:
            runs, chunk_rows = self._link_runs(reader.blob_ranges(LINK_FRAGMENTS, self.chunks))
        names = self.objects.link_attribute_names
        link_rows, *values = reader.read_runs(
            [LINK_COLUMN, *(link_column(n) for n in names)], runs, chunk_rows, turns=self.turns
        )
        returned, gids = returned_runs(plan)
        kind = geometry_kind(self.objects.kind)
        if kind.directed == "allowed":
            check_graph_links(link_rows, self.reader.directed)
        blocks, cross_columns = self.objects.link_blocks, None
        if kind.stored_edges and blocks is None:  # the cross-chunk links in the same call
            cross = self._cross_links()
            found = translate_edges(link_rows, runs, (returned, gids), kind.tree, cross)
            mapped, kept = found.rows, found.kept
            cross_columns = {k: self.objects.cross_link_attribute(k)[found.mine] for k in names}
        else:
            mapped, kept = translate(link_rows, runs, returned, gids, kind.faces, kind.tree)
        if kind.stored_edges and blocks is not None:  # a bounded read: block by block
            first, second, cross_columns = blocks.links_of(gids)
            mapped = np.concatenate([mapped, np.stack([first, lookup(gids, second)], axis=1)])
        columns = dict(
            zip(names, values if kept is None else [v[kept] for v in values], strict=True)
        )
        if cross_columns is not None:
            columns = {k: np.concatenate([v, cross_columns[k]]) for k, v in columns.items()}
        return mapped, columns

    def _link_runs(
        self, link_ranges: list[tuple[np.ndarray, np.ndarray]]
    ) -> tuple[RowRuns, np.ndarray]:
        """The ``links/0`` row runs of the referenced fragments, chunk slot by slot
        (``link_ranges``: each slot's link fragment ranges), and each slot's link rows.

        One pass over every slot's fragments at once; no run asks a chunk without link
        rows (it has no ``links/0`` shard, spec §9.6).

        Raises
        ------
        CorruptChunkError
            When a manifest names a fragment its chunk's link index does not list.
        """
        frag_slot, frag = self._referenced_fragments()
        chunks = self.chunk_keys
        if not link_ranges:
            empty = np.empty(0, np.int64)
            return RowRuns(chunks, empty, empty, empty, self.where), empty
        lengths = np.array([r[0].shape[0] for r in link_ranges], dtype=np.int64)
        if np.any((frag < 0) | (frag >= lengths[frag_slot])):
            raise CorruptChunkError("a manifest names a fragment its chunk's links do not index")
        at = (np.cumsum(lengths) - lengths)[frag_slot] + frag
        counts = np.concatenate([r[1] for r in link_ranges]).astype(np.int64)
        first = np.concatenate([r[0] for r in link_ranges]).astype(np.int64, copy=False)[at]
        stop = first + counts[at]
        some = stop > first
        chunk_rows = np.zeros(len(link_ranges), dtype=np.int64)
        np.add.at(chunk_rows, np.repeat(np.arange(len(link_ranges)), lengths), counts)
        joined = joined_runs(frag_slot[some], first[some], stop[some])
        return RowRuns(chunks, *joined, self.where), chunk_rows

    def _referenced_fragments(self) -> tuple[np.ndarray, np.ndarray]:
        """(chunk slot, fragment) of every fragment the manifests name, each once, sorted."""
        width = int(self.ref_fragment.max(initial=-1)) + 1
        if width == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        pairs = distinct_ascending(self.ref_slot * width + self.ref_fragment.astype(np.int64))
        return pairs // width, pairs % width

    def _cross_links(self) -> tuple[CrossLinks, np.ndarray, int]:
        """What :func:`translate_edges` takes to find the objects' cross-chunk links: the
        table ordered by first id (read whole and ordered once per reader), each chunk
        slot's flat index and the level's ``N_max``."""
        return self.objects.cross_link_index(), self.chunk_flat, self.objects.n_max

    def _object_attributes(self) -> dict[str, np.ndarray]:
        return {
            name: self.objects.object_attribute(name)[self.dense]
            for name in self.objects.object_attribute_names
        }


def _sparse_chunks(
    ref_chunk: np.ndarray, grid_shape: tuple[int, ...], occupied: np.ndarray, counts: np.ndarray
) -> ReferenceChunks:
    """:func:`~zarr_vectors.kernels.reference_chunks.reference_chunks` for a grid of too
    many chunks for a table over it (a sort of the references instead)."""
    outside = np.any((ref_chunk < 0) | (ref_chunk >= np.array(grid_shape)), axis=1)
    if outside.any():
        e = np.empty(0, np.int64)
        return ReferenceChunks(int(np.flatnonzero(outside)[0]), e, e, e, e, e, -1)
    flat = np.ravel_multi_index(tuple(ref_chunk.T), grid_shape)
    chunk_flat, slot = np.unique(flat, return_inverse=True)
    chunks = np.stack(np.unravel_index(chunk_flat, grid_shape), axis=1).astype(np.int64)
    pos = np.minimum(np.searchsorted(occupied, chunk_flat), max(occupied.shape[0] - 1, 0))
    occupied_at = occupied[pos] if occupied.size else np.full(chunk_flat.shape[0], -1)
    missing = np.flatnonzero(occupied_at != chunk_flat)
    return ReferenceChunks(
        -1,
        chunk_flat.astype(np.int64),
        chunks.reshape(-1, len(grid_shape)),
        slot.reshape(-1).astype(np.int64),
        pos.astype(np.int64),
        counts[pos] if occupied.size else np.zeros(chunk_flat.shape[0], np.int64),
        int(missing[0]) if missing.shape[0] else -1,
    )
