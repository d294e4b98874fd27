"""Reading objects: by id, by group, and by bounding box (spec §7.6, §8.2, §10).

:class:`ObjectReader` resolves object manifests to fragment rows, reads only the chunks the
manifests name, and rebuilds every object exactly as written: vertices in traversal order,
its links (``links/0`` rows of its fragments, cross-chunk links and mesh sentinels
translated to rows of the result) and its attributes.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from zarr_vectors.errors import CorruptChunkError, ObjectNotFoundError
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.manifest import decode_object_index_bulk
from zarr_vectors.format.names import (
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_INDEX,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.kernels import concat_ranges, counting_sort
from zarr_vectors.kernels.bin_runs import copy_row_runs
from zarr_vectors.kernels.link_entries import rows_in_runs
from zarr_vectors.kernels.link_rows import cross_link_rows, link_result_rows
from zarr_vectors.kernels.read_plan import ReadPlan, read_plan
from zarr_vectors.query._fragment_refs import (
    FragmentTable,
    chunk_slots,
    distinct_ascending,
    slot_order,
)
from zarr_vectors.query._held_rows import HeldRows, copy_held_rows, read_vertex_columns
from zarr_vectors.query._link_blocks import LinkBlocks
from zarr_vectors.query.object_ids import group_key, requested_ids
from zarr_vectors.query.object_results import repeated_objects
from zarr_vectors.query.point_queries import chunks_meeting
from zarr_vectors.query.regions import BoxRegion, Region
from zarr_vectors.read import ChunkRows, LevelReader, RowRuns, check_global_shapes
from zarr_vectors.result import QueryResult

__all__ = ["ObjectReader"]

_LINK_COLUMN = "__links__"
_OWNER_COLUMN = "__fragment_owner__"


def _link_column(name: str) -> str:
    return f"__link__{name}"


class _Runs(NamedTuple):
    """The vertices a read returns, as runs of keys (chunk-local rows, or global ids):
    run ``q`` holds keys ``start[q] ... start[q] + length[q] - 1``, returned from result
    row ``result[q]`` on; group ``g`` (a chunk slot) owns runs ``bounds[g]:bounds[g + 1]``,
    ascending and disjoint (the arguments of :func:`rows_in_runs`)."""

    bounds: np.ndarray
    start: np.ndarray
    length: np.ndarray
    result: np.ndarray


class ObjectReader:
    """Object access on one level of an object store.

    Parameters
    ----------
    reader
        The level's :class:`LevelReader`.
    bounded
        For a pass over every object in batches (``zv.build_levels``): the ``object_index``
        of a run of consecutive objects is read by range, and the fragment ranges of the
        chunks a read meets are decoded :data:`RANGE_GROUP` chunks at a time, the index not
        cached and the ranges only within ``cache_bytes``; so a read holds its own objects'
        manifests, a group of chunks' fragment ranges and that cache, not the level's.
        ``cross_chunk_links`` and its attribute columns are read block by block
        (:class:`~zarr_vectors.query._link_blocks.LinkBlocks`), never whole.
        Else the index is read whole at first need and kept, and the fragment ranges of
        every chunk met are decoded together (and cached).
    cache_bytes
        When ``bounded``: the bytes of decoded fragment ranges kept between groups of
        chunks (and between reads), the least recently used forgotten first.
    """

    def __init__(self, reader: LevelReader, *, bounded: bool = False, cache_bytes: int = 0) -> None:
        self.reader = reader
        self.bounded = bounded
        self.cache_bytes = cache_bytes
        base = reader.base
        self.kind = reader.kind
        self.n_objects = reader.check_object_count()
        reader.add_column(_LINK_COLUMN, f"{base}/{LINKS}/0")
        if not reader.records:  # format 1.6 keeps the owners in the fragment records
            reader.add_column(_OWNER_COLUMN, f"{base}/{FRAGMENT_ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}")
        names = reader.children(f"{base}/{OBJECT_ATTRIBUTES}")
        self.object_attribute_names = [n for n in names if n != OBJECT_ID_ATTRIBUTE]
        self._has_external_ids = OBJECT_ID_ATTRIBUTE in names
        self.link_attribute_names = reader.children(f"{base}/{LINK_ATTRIBUTES}")
        for name in self.link_attribute_names:
            reader.add_column(_link_column(name), f"{base}/{LINK_ATTRIBUTES}/{name}")
        self._cache: dict[str, np.ndarray] = {}
        self._handoff: tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
        stored_edges = geometry_kind(self.kind).stored_edges
        self.link_blocks = (
            LinkBlocks(reader, self.link_attribute_names, self.n_objects, self._check_gids)
            if bounded and stored_edges
            else None
        )

    # -- global arrays (read once) --------------------------------------------------------
    def _global(self, path: str) -> np.ndarray:
        if path not in self._cache:
            wanted = [p for p in dict.fromkeys([path, *self._read_set()]) if p not in self._cache]
            check_global_shapes(self.reader, wanted, self.n_objects)
            found = dict(zip(wanted, self.reader.read_globals(wanted), strict=True))
            if CROSS_CHUNK_LINKS in found:
                self._check_gids(found[CROSS_CHUNK_LINKS])
            if GROUPINGS in found:
                self._check_group_width(found[GROUPINGS])
            self._cache.update(found)
        return self._cache[path]

    def _check_group_width(self, table: np.ndarray) -> None:
        """``groupings`` is ``(n_groups, M)`` with M the largest group size (spec §9.10): when
        M > 1, some row fills its last column.

        Raises
        ------
        CorruptChunkError
            When no row does (a lost chunk of the array reads as its fill value, -1: its
            groups would silently read as empty).
        """
        if table.ndim == 2 and table.shape[0] and table.shape[1] > 1 and (table[:, -1] < 0).all():
            raise CorruptChunkError(
                f"{self.reader.base}/{GROUPINGS} has {table.shape[1]} columns but no group that "
                "many members: a chunk of the array is missing or damaged; restore the store "
                "from a good copy, or write it again"
            )

    def _check_gids(self, table: np.ndarray) -> None:
        """Every entry of ``cross_chunk_links`` must be a global vertex id of the level's
        grid, ``0 <= gid < (prod G) * N_max`` (spec §9.11).

        Raises
        ------
        CorruptChunkError
            When an entry is not (a lost chunk of the array reads as its fill value, -1:
            the objects would silently lose their cross-chunk links).
        """
        if not table.size:
            return
        reader = self.reader
        n_max = int(reader.array_meta[VERTICES]["shape"][reader.grid.ndim])
        capacity = math.prod(int(g) for g in reader.grid.shape) * n_max
        low, high = int(table.min()), int(table.max())
        if low < 0 or high >= capacity:
            bad = low if low < 0 else high
            raise CorruptChunkError(
                f"{reader.base}/{CROSS_CHUNK_LINKS} holds {bad}, which is not a global vertex "
                f"id (0 <= id < {capacity}): a chunk of the array is missing or damaged; "
                "restore the store from a good copy, or write it again"
            )
        if geometry_kind(self.kind).directed == "allowed":
            _check_graph_links(table.reshape(-1, 2), reader.directed)

    def _read_set(self) -> list[str]:
        """The stored global arrays a read of objects needs: fetched together at first need."""
        names = self.object_attribute_names + (
            [OBJECT_ID_ATTRIBUTE] if self._has_external_ids else []
        )
        paths = [] if self.bounded else [f"{OBJECT_INDEX}/data", f"{OBJECT_INDEX}/offsets"]
        paths += [f"{OBJECT_ATTRIBUTES}/{n}" for n in names]
        if geometry_kind(self.kind).stored_edges and self.link_blocks is None:
            paths.append(CROSS_CHUNK_LINKS)
            paths += [f"{CROSS_CHUNK_LINK_ATTRIBUTES}/{n}" for n in self.link_attribute_names]
        base = self.reader.base
        return [p for p in paths if self.reader.document(f"{base}/{p}/zarr.json") is not None]

    def external_ids(self) -> np.ndarray:
        """The caller's id of every object (0..n-1 when none were given)."""
        if not self._has_external_ids:
            return np.arange(self.n_objects, dtype=np.int64)
        return self._global(f"{OBJECT_ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}")

    def cross_link_attribute(self, name: str) -> np.ndarray:
        """The per-link attribute ``name`` of every row of ``cross_chunk_links``."""
        return self._global(f"{CROSS_CHUNK_LINK_ATTRIBUTES}/{name}")

    def object_attribute(self, name: str) -> np.ndarray:
        """The per-object attribute ``name`` of every object."""
        return self._global(f"{OBJECT_ATTRIBUTES}/{name}")

    def dense_ids(self, ids: Any) -> np.ndarray:
        """Dense object ids (rows of the object index) of the caller's ``ids``.

        Raises
        ------
        InvalidInputError
            When ``ids`` are not integers (see :func:`requested_ids`).
        ObjectNotFoundError
            When an id is not an object of the store.
        """
        wanted = requested_ids(ids)
        known = self.external_ids()
        order = np.argsort(known, kind="stable")
        pos = np.searchsorted(known[order], wanted)
        pos = np.minimum(pos, max(known.shape[0] - 1, 0))
        hit = known.shape[0] > 0 and bool(np.all(known[order][pos] == wanted))
        if wanted.size and not hit:
            missing = wanted[:1] if not known.shape[0] else wanted[known[order][pos] != wanted][:1]
            raise ObjectNotFoundError(f"no object with id {missing[0]} {self._where()}")
        return np.asarray(order[pos], dtype=np.int64)

    def _where(self) -> str:
        """Where an object was looked for, for messages: the store, or a coarse level."""
        if self.reader.base == "0":
            return "in this store"
        return (
            f"at level {self.reader.base} (a coarse level may keep only some objects, its "
            "object_sparsity); read it from level 0"
        )

    def group_members(self, group: Any) -> np.ndarray:
        """Dense ids of the members of a group given by name or by group number.

        Raises
        ------
        InvalidInputError
            When ``group`` is neither a name (str) nor a number (int).
        ObjectNotFoundError
            When the store has no such group.
        """
        path = f"{self.reader.base}/{GROUPINGS}"
        meta = self.reader.io.read_json(f"{path}/zarr.json")
        if meta is None:
            raise ObjectNotFoundError(
                f"this store has no groups, so no group {group!r}; query a region instead"
            )
        names = list(meta.get("attributes", {}).get("group_names", []))
        table = self._global(GROUPINGS)
        key = group_key(group)
        if isinstance(key, str):
            if key not in names:
                raise ObjectNotFoundError(f"no group named {key!r}; groups: {names}")
            row = names.index(key)
        else:
            row = key
            if not 0 <= row < table.shape[0]:
                raise ObjectNotFoundError(f"no group {group}; there are {table.shape[0]}")
        members = table[row]
        return np.asarray(members[members >= 0], dtype=np.int64)

    def group_names(self) -> list[str]:
        """Names of the groups, in stored order (empty when the store has none)."""
        meta = self.reader.io.read_json(f"{self.reader.base}/{GROUPINGS}/zarr.json")
        if not isinstance(meta, dict):
            return []
        return [str(n) for n in meta.get("attributes", {}).get("group_names", [])]

    def group_attributes(self) -> dict[str, np.ndarray]:
        """Per-group columns by name, one row per group in the order of :meth:`group_names`."""
        names = self.reader.io.list_dir(f"{self.reader.base}/{GROUPINGS_ATTRIBUTES}")
        return {n: self._global(f"{GROUPINGS_ATTRIBUTES}/{n}") for n in names if n != "zarr.json"}

    # -- reading objects --------------------------------------------------------------
    def read(self, dense: np.ndarray, *, turns: bool = True) -> QueryResult:
        """The objects ``dense`` (dense ids), whole, in the given order.

        An id given more than once is read once and repeated: the result equals the
        single-id reads concatenated in the given order, links re-based onto each copy's
        rows (:func:`repeated_objects`). ``turns``: whether a large local read of their
        rows may be shared in turns with the helper thread (:meth:`LevelReader.read_runs`;
        reads by id are not: measured cheaper on one thread, ``benchmarks/results/by_id.md``).
        """
        if dense.shape[0] < 2 or bool(np.all(dense[1:] > dense[:-1])):
            return self._read_distinct(dense, turns)
        unique, take = np.unique(dense, return_inverse=True)
        if unique.shape[0] == dense.shape[0]:
            return self._read_distinct(dense, turns)
        return repeated_objects(self._read_distinct(unique, turns), take.reshape(-1))

    def _read_distinct(self, dense: np.ndarray, turns: bool) -> QueryResult:
        """The objects ``dense`` (distinct dense ids), whole, in the given order."""
        return self._plan(dense, turns).result()

    def _plan(self, dense: np.ndarray, turns: bool, held: HeldRows | None = None) -> _Plan:
        """The read of the objects ``dense`` (distinct dense ids), with ``held`` rows."""
        refs = self._handed_over(dense)
        if refs is None:
            refs = self._references(dense)
        return _Plan(self, dense, refs, turns, held)

    def _references(self, dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The fragment references of the objects ``dense``, in manifest order (§7.6)."""
        whole = f"{OBJECT_INDEX}/data" in self._cache
        if self.bounded and not whole and _is_run(dense):
            found = self._references_of_run(int(dense[0]), int(dense[-1]) + 1)
            if found is not None:
                return found
        return decode_object_index_bulk(
            self._global(f"{OBJECT_INDEX}/data"),
            self._global(f"{OBJECT_INDEX}/offsets"),
            dense,
            self.reader.grid.ndim,
        )

    def _references_of_run(
        self, first: int, stop: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The references of objects ``first .. stop - 1``, their manifests read by range;
        None when the offsets read do not ascend inside the data (the whole index is then
        decoded, which reports the damage as a whole read does)."""
        paths = [f"{OBJECT_INDEX}/data", f"{OBJECT_INDEX}/offsets"]
        check_global_shapes(self.reader, paths, self.n_objects)
        size = int(self.reader.array_metadata(f"{self.reader.base}/{paths[0]}")["shape"][0])
        last = min(stop + 1, self.n_objects)
        offsets = self.reader.global_rows(paths[1], first, last).astype(np.int64, copy=False)
        bounds = np.append(offsets, size) if last == stop else offsets
        if bounds[0] < 0 or bounds[-1] > size or np.any(bounds[1:] < bounds[:-1]):
            return None
        start = int(bounds[0])
        data = self.reader.global_rows(paths[0], start, int(bounds[-1]))
        ids = np.arange(stop - first, dtype=np.int64)
        return decode_object_index_bulk(data, bounds[:-1] - start, ids, self.reader.grid.ndim)

    def _filled(self) -> np.ndarray:
        """Dense ids, ascending, of the objects whose manifests name a fragment: the owners
        of every fragment of the level (spec §7.2: each fragment is in its owner's manifest).

        Decodes every manifest once; the references are kept for the read of exactly
        these objects that usually follows (:meth:`_handed_over`).
        """
        candidates = self._not_empty()
        ref_pos, ref_chunk, ref_fragment = self._references(candidates)
        has = np.zeros(candidates.shape[0], dtype=bool)
        has[ref_pos] = True
        rank = np.cumsum(has, dtype=np.int64) - 1
        filled = candidates[has]
        self._handoff = (filled, (rank[ref_pos], ref_chunk, ref_fragment))
        return filled

    def _not_empty(self) -> np.ndarray:
        """Dense ids of every object but those whose manifest is the empty one: 4 bytes,
        ``nblocks = 0`` (spec §7.1; at a coarse level most objects may be dropped). Any other
        manifest is decoded, so a damaged one is refused as before."""
        offsets = self._global(f"{OBJECT_INDEX}/offsets").astype(np.int64, copy=False)
        data = self._global(f"{OBJECT_INDEX}/data")
        if not offsets.shape[0]:
            return np.empty(0, np.int64)
        ends = np.append(offsets[1:], data.shape[0])
        short = np.flatnonzero((ends - offsets == 4) & (offsets >= 0) & (ends <= data.shape[0]))
        header = data[offsets[short, None] + np.arange(4)]
        empty = np.zeros(offsets.shape[0], dtype=bool)
        empty[short[~header.any(axis=1)]] = True
        return np.flatnonzero(~empty)

    def _handed_over(self, dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The references :meth:`_filled` decoded, when ``dense`` is what it returned
        (dropped either way: held from one owners lookup to the read that follows)."""
        handoff, self._handoff = self._handoff, None
        if handoff is None or not np.array_equal(handoff[0], dense):
            return None
        return handoff[1]

    def owners_in_box(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Dense ids, ascending, of the objects with at least one vertex in ``[lo, hi)``."""
        return self.owners_in_region(BoxRegion(lo, hi))

    def owners_in_region(self, region: Region) -> np.ndarray:
        """Dense ids, ascending, of the objects with at least one vertex in ``region``.

        Reads the fragment owners of the chunks the region can meet, and the vertices of
        those it does not cover whole (spec §8.3 step 5: object fragments are not binned).
        """
        return self._owners_and_rows(region)[0]

    def read_region(self, region: Region, group: Any = None) -> QueryResult:
        """The objects with at least one vertex in ``region`` (and in ``group`` if given),
        whole, in ascending dense id order.

        The ``vertices`` rows the owners lookup decoded are reused by the read of the
        objects (:mod:`~zarr_vectors.query._held_rows`), not read again.
        """
        dense, held = self._owners_and_rows(region)
        if group is not None:
            dense = np.intersect1d(dense, self.group_members(group))
        plan = self._plan(dense, True, held)
        del held  # the plan lets the rows go once it has used them
        return plan.result()

    def _owners_and_rows(self, region: Region) -> tuple[np.ndarray, HeldRows | None]:
        """:meth:`owners_in_region`, and the ``vertices`` rows of the chunks it decoded."""
        reader = self.reader
        chunks, counts, inside = chunks_meeting(reader, region)
        if not chunks.shape[0]:
            return np.empty(0, np.int64), None
        if inside.all() and chunks.shape[0] == reader.occupied_chunks(None, None)[0].shape[0]:
            return self._filled(), None
        cut = ~np.asarray(inside, dtype=bool)
        if reader.records:  # the partly covered chunks' vertices read next: their indexes now
            ranges = reader.fragment_ranges(
                chunks, counts, index_columns=[VERTICES], index_chunks=chunks[cut]
            )
            owners = np.concatenate(reader.fragment_owners(chunks))
            positions = _every_row(reader, chunks[cut], counts[cut])
        else:
            ranges = reader.fragment_ranges(chunks, counts, index_columns=())
            owners, positions = _owners_and_positions(reader, chunks, counts, inside, ranges)
        found = _owners(owners, ranges, inside, counts, positions, region)
        if not cut.any():
            return found, None
        flat = np.ravel_multi_index(tuple(chunks[cut].T), reader.grid.shape)
        return found, HeldRows(flat.astype(np.int64), counts[cut].astype(np.int64), positions)


def _every_row(reader: LevelReader, chunks: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Every ``vertices`` row of ``chunks`` (of ``counts`` rows each), chunk after chunk,
    read as row runs (:meth:`LevelReader.read_runs`: through the open store's cache of
    decoded blocks)."""
    if not chunks.shape[0]:
        return np.empty((0, reader.grid.ndim), dtype=reader.column_spec(VERTICES)[0])
    n = chunks.shape[0]
    slot = np.arange(n, dtype=np.int64)
    runs = RowRuns([tuple(c) for c in chunks.tolist()], slot, np.zeros(n, np.int64), counts)
    return reader.read_runs([VERTICES], runs)[0]


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
    owners, positions = reader.read_many([(_OWNER_COLUMN, fragments), (VERTICES, partial)])
    return owners, positions


RANGE_GROUP = 4
"""Chunks whose fragment ranges a bounded read (:class:`ObjectReader` ``bounded``) decodes
at a time."""


def _is_run(dense: np.ndarray) -> bool:
    """Whether ``dense`` is consecutive ascending ids (at least one)."""
    n = dense.shape[0]
    return n > 0 and int(dense[-1]) - int(dense[0]) == n - 1 and bool(np.all(np.diff(dense) == 1))


def _owners(
    owners: np.ndarray,
    ranges: list[tuple[np.ndarray, np.ndarray]],
    inside: np.ndarray,
    counts: np.ndarray,
    positions: np.ndarray | None,
    region: Region,
) -> np.ndarray:
    """The owners of the fragments of the chunks the region covers whole (``inside``) and
    of the fragments holding a vertex in the region in the others, distinct, ascending.

    ``owners`` holds every chunk's fragment owners chunk after chunk, ``positions`` every
    row of the partly covered chunks; one pass over all chunks at once.
    """
    n_fragments = np.array([r[0].shape[0] for r in ranges], dtype=np.int64)
    whole = np.repeat(np.asarray(inside, dtype=bool), n_fragments)
    found = [owners[whole]]
    part = np.flatnonzero(~np.asarray(inside, dtype=bool))
    if part.shape[0]:
        assert positions is not None
        rows = np.flatnonzero(region.contains_points(positions))
        row_base = np.cumsum(counts[part]) - counts[part]  # each partly covered chunk's
        starts = np.concatenate([ranges[c][0] for c in part.tolist()]).astype(np.int64)
        starts += np.repeat(row_base, n_fragments[part])  # ascending over those chunks
        fragment = np.searchsorted(starts, rows, side="right") - 1
        owner_at = concat_ranges((np.cumsum(n_fragments) - n_fragments)[part], n_fragments[part])
        found.append(owners[owner_at[fragment]])
    return distinct_ascending(np.concatenate(found))


def _in_reference_order(rows: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The read ``rows`` with reference ``r``'s ``sizes[r]`` rows from ``starts[r]`` placed
    one reference after another: the read rows themselves when they are in that order
    already, else one copy of runs (not a per-row gather)."""
    dest = np.cumsum(sizes) - sizes
    if rows.shape[0] == int(sizes.sum()) and np.array_equal(starts, dest):
        return rows
    out = np.empty((int(sizes.sum()), *rows.shape[1:]), dtype=rows.dtype)
    copy_row_runs(rows, starts, out, dest, sizes)
    return out


class _Plan:
    """The reads that rebuild a set of objects from their fragment references.

    References are sorted once by (chunk slot, first row); every per-chunk step then works
    on one contiguous slice of that order, so the cost is linear in the references.
    """

    def __init__(
        self,
        objects: ObjectReader,
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
        grid_shape = tuple(int(g) for g in self.reader.grid.shape)
        outside = np.any((ref_chunk < 0) | (ref_chunk >= self.reader.grid.shape), axis=1)
        if outside.any():
            bad = tuple(int(c) for c in ref_chunk[np.flatnonzero(outside)[0]])
            raise CorruptChunkError(f"a manifest names chunk {bad}, outside the grid {grid_shape}")
        flat = (
            np.ravel_multi_index(tuple(ref_chunk.T), grid_shape)
            if ref_chunk.shape[0]
            else np.empty(0, np.int64)
        )
        self.chunk_flat, self.ref_slot = chunk_slots(flat, math.prod(grid_shape))
        self.chunks = (
            np.stack(np.unravel_index(self.chunk_flat, grid_shape), axis=1)
            .reshape(-1, len(grid_shape))
            .astype(np.int64)
        )
        self.order = np.empty(0, np.int64)
        self.chunk_keys = [tuple(c) for c in self.chunks.tolist()]
        self.where: np.ndarray | None = None  # set by _chunk_counts
        self.link_plan: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # _needed_rows

    def _sort(self, starts: np.ndarray, rows: np.ndarray) -> None:
        """Order the references by (chunk slot, first row); ``rows``: each slot's rows."""
        self.order = slot_order(self.ref_slot, starts, rows)

    def result(self) -> QueryResult:
        reader = self.reader
        rows = self._chunk_counts()
        if self.objects.bounded:
            starts, sizes = self._rows_by_group(rows)
        else:
            starts, sizes = self._needed_rows(rows)
        self._sort(starts, rows)
        n_max = int(reader.array_meta[VERTICES]["shape"][reader.grid.ndim])
        plan = read_plan(self.order, self.ref_slot, starts, sizes, self.chunk_flat, n_max)
        runs = RowRuns(self.chunk_keys, plan.run_slot, plan.run_start, plan.run_stop, self.where)
        vertex_rows = self._vertex_rows(runs, plan.buffer_start, sizes)
        per_object = np.bincount(self.ref_object, weights=sizes, minlength=self.dense.shape[0])
        offsets = np.concatenate([[0], np.cumsum(per_object.astype(np.int64))])
        links, link_columns = (
            (None, {}) if geometry_kind(self.objects.kind).ordered else self._links(plan)
        )
        ids = self.objects.external_ids()[self.dense]
        return QueryResult(
            positions=vertex_rows[0],
            attributes=dict(zip(reader.attribute_names, vertex_rows[1:], strict=True)),
            vertex_object_ids=np.repeat(ids, np.diff(offsets)),
            object_ids=ids,
            offsets=offsets,
            edges=links if links is not None and links.shape[1] == 2 else None,
            faces=links if links is not None and links.shape[1] == 3 else None,
            object_attributes=self._object_attributes(),
            link_attributes=link_columns,
        )

    def _vertex_rows(
        self, runs: RowRuns, buffer_start: np.ndarray, sizes: np.ndarray
    ) -> list[np.ndarray]:
        """The vertex columns' rows of every reference, in reference order; the held rows
        (:attr:`held`) are used here and let go."""
        held, self.held = self.held, None
        copied = None if held is None else copy_held_rows(self.reader, runs, self.chunk_flat, held)
        del held  # freed before the rest is read
        names = [VERTICES, *self.reader.attribute_names]
        read = read_vertex_columns(self.reader, names, runs, copied, self.turns)
        del copied
        return [_in_reference_order(rows, buffer_start, sizes) for rows in read]

    def _needed_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First row and row count of every reference, from only the fragments the
        references name (:meth:`LevelReader.needed_ranges`); their link rows are kept for
        :meth:`_links` when the kind has links."""
        order, bounds = counting_sort(self.ref_slot, self.chunks.shape[0])
        links = not geometry_kind(self.objects.kind).ordered
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
        found, counts = self.reader.occupied_chunks(
            np.zeros(self.reader.grid.ndim, np.int64), self.reader.grid.shape
        )
        grid_shape = tuple(int(g) for g in self.reader.grid.shape)
        found_flat = (
            np.ravel_multi_index(tuple(found.T), grid_shape)
            if found.shape[0]
            else np.empty(0, np.int64)
        )
        pos = np.searchsorted(found_flat, self.chunk_flat)
        pos = np.minimum(pos, max(found_flat.shape[0] - 1, 0))
        if self.chunk_flat.size and (
            not found_flat.size or np.any(found_flat[pos] != self.chunk_flat)
        ):
            raise CorruptChunkError("a manifest names an empty chunk")
        self.where = pos.astype(np.int64, copy=False)  # positions among the occupied chunks
        return counts[pos] if self.chunk_flat.size else np.empty(0, np.int64)

    def _links(self, plan: ReadPlan) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The objects' links as result rows, and their per-link attributes (§9.12)."""
        reader = self.reader
        if self.link_plan is not None:
            runs, chunk_rows = self._planned_link_runs(*self.link_plan)
        else:
            runs, chunk_rows = self._link_runs(reader.blob_ranges(LINK_FRAGMENTS, self.chunks))
        names = self.objects.link_attribute_names
        link_rows, *values = reader.read_runs(
            [_LINK_COLUMN, *(_link_column(n) for n in names)], runs, chunk_rows, turns=self.turns
        )
        returned, gids = _returned(plan)
        kind = geometry_kind(self.objects.kind)
        if kind.directed == "allowed":
            _check_graph_links(link_rows, self.reader.directed)
        mapped, kept = _translate(link_rows, runs, returned, gids, kind.faces, kind.tree)
        columns = dict(
            zip(names, values if kept is None else [v[kept] for v in values], strict=True)
        )
        if kind.stored_edges:
            cross, cross_columns = self._cross_links(gids)
            mapped = np.concatenate([mapped, cross])
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
        runs = RowRuns(chunks, frag_slot[some], first[some], stop[some], self.where)
        return runs, chunk_rows

    def _planned_link_runs(
        self, starts: np.ndarray, counts: np.ndarray, chunk_rows: np.ndarray
    ) -> tuple[RowRuns, np.ndarray]:
        """:meth:`_link_runs` from the link rows of every reference (``starts``,
        ``counts``: :meth:`_needed_rows`) and each slot's link rows: each fragment once."""
        width = int(self.ref_fragment.max(initial=-1)) + 1
        keys = self.ref_slot * width + self.ref_fragment.astype(np.int64)
        pairs, first = np.unique(keys, return_index=True)
        stop = starts[first] + counts[first]
        some = stop > starts[first]
        chunks = self.chunk_keys
        slot, begin = pairs[some] // max(width, 1), starts[first][some]
        return RowRuns(chunks, slot, begin, stop[some], self.where), chunk_rows

    def _referenced_fragments(self) -> tuple[np.ndarray, np.ndarray]:
        """(chunk slot, fragment) of every fragment the manifests name, each once, sorted."""
        width = int(self.ref_fragment.max(initial=-1)) + 1
        if width == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        pairs = distinct_ascending(self.ref_slot * width + self.ref_fragment.astype(np.int64))
        return pairs // width, pairs % width

    def _cross_links(self, gids: _Runs) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The objects' cross-chunk links as result rows, and their per-link attributes
        (the table read whole, or block by block in a bounded read)."""
        if self.objects.link_blocks is not None:
            first, second, columns = self.objects.link_blocks.links_of(gids)
            return np.stack([first, _lookup(gids, second)], axis=1), columns
        table = self.objects._global(CROSS_CHUNK_LINKS)
        links, mine, bad = cross_link_rows(table, gids)
        if bad >= 0:
            raise CorruptChunkError("a link names a vertex outside its object's manifest")
        names = self.objects.link_attribute_names
        return links, {k: self.objects.cross_link_attribute(k)[mine] for k in names}

    def _object_attributes(self) -> dict[str, np.ndarray]:
        base = OBJECT_ATTRIBUTES
        return {
            name: self.objects._global(f"{base}/{name}")[self.dense]
            for name in self.objects.object_attribute_names
        }


def _returned(plan: ReadPlan) -> tuple[_Runs, _Runs]:
    """The returned vertices as runs of local rows by chunk slot, and as runs of global
    ids (spec §9.11) in one group: the non-empty references in their (slot, first row)
    order, whose chunks ascend, so the global ids ascend too (:func:`read_plan`).

    Raises
    ------
    CorruptChunkError
        When two referenced fragments of a chunk share a row, or a fragment passes
        its chunk's row count (fragments tile their chunk at level 0, spec §6.5).
    """
    if plan.overlap:
        raise CorruptChunkError("the fragments of a chunk overlap or pass its rows")
    by_gid = np.array([0, plan.gid.shape[0]], dtype=np.int64)
    local = _Runs(plan.bounds, plan.start, plan.length, plan.result)
    return local, _Runs(by_gid, plan.gid, plan.length, plan.result)


def _check_graph_links(rows: np.ndarray, directed: bool) -> None:
    """Raise CorruptChunkError unless every stored graph edge (chunk-local rows of ``links/0``
    or global ids of ``cross_chunk_links``) joins two distinct vertices, as ``[min, max]``
    when the graph is undirected (spec §10.5; L3.no_self_loops, L3.edge_orientation).

    Streamlines or skeletons relabelled as a graph (the same nodes) were read as edges
    ``[child, -1]`` and ``[larger, smaller]`` before.
    """
    if not rows.size:
        return
    bad = (rows < 0).any(axis=1) | (rows[:, 0] == rows[:, 1])
    if not directed:
        bad |= rows[:, 0] > rows[:, 1]
    if bad.any():
        first = rows[int(np.argmax(bad))].tolist()
        raise CorruptChunkError(
            f"a stored graph edge {first} is not two distinct vertices"
            f"{'' if directed else ' in ascending order'}: the links or the geometry_type "
            "were damaged or edited; run zv.validate(store, level=3) to find the damage, and "
            "restore or rewrite the store"
        )


def _lookup(gids: _Runs, wanted: np.ndarray) -> np.ndarray:
    """The result rows of the global ids ``wanted`` (``(n,)``, each returned)."""
    rows, bad = rows_in_runs(wanted, np.zeros(wanted.shape[0], np.int64), *gids)
    if bad >= 0:
        raise CorruptChunkError("a link names a vertex outside its object's manifest")
    return rows


def _translate(
    rows: np.ndarray, runs: RowRuns, returned: _Runs, gids: _Runs, sentinels: bool, tree: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Chunk-local link entries to result rows (:func:`link_result_rows`), and which links
    are kept (None: all).

    ``rows`` holds one link per row (its vertex entries), the rows of the link ``runs`` one
    run after another; ``returned`` and ``gids`` the vertices returned
    (:func:`_returned`). With ``sentinels`` (meshes) every negative entry is
    ``-(gid + 1)`` (spec §9.6); otherwise -1 (a skeleton root's parent) stays -1, and with
    ``tree`` the root's link is dropped.

    Raises
    ------
    CorruptChunkError
        When an entry names a row that is not a returned vertex of its chunk.
    """
    mapped, kept, bad_row, bad_gid = link_result_rows(
        rows,
        runs.chunk,
        runs.stop - runs.start,
        returned,
        gids,
        sentinels=sentinels,
        drop_rootless=tree,
    )
    if bad_row >= 0:
        raise CorruptChunkError("a link names a row that is not a vertex of its object")
    if bad_gid >= 0:
        raise CorruptChunkError("a link names a vertex outside its object's manifest")
    return mapped, kept
