"""Reading objects: by id, by group, and by bounding box (spec §7.6, §8.2, §10).

:class:`ObjectReader` resolves object manifests to fragment rows, reads only the chunks the
manifests name, and rebuilds every object exactly as written: vertices in traversal order,
its links (``links/0`` rows of its fragments, cross-chunk links and mesh sentinels
translated to rows of the result) and its attributes.
"""

from __future__ import annotations

import functools
import math
from typing import Any

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
    LINKS,
    OBJECT_ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_INDEX,
    VERTICES,
)
from zarr_vectors.kernels.cross_links import CrossLinks, cross_link_index
from zarr_vectors.query._assembled import Assembled, Gathered, Kept, gathered, interleaved
from zarr_vectors.query._decoded_index import DecodedIndex
from zarr_vectors.query._held_rows import HeldRows
from zarr_vectors.query._link_blocks import LinkBlocks
from zarr_vectors.query._object_links import LINK_COLUMN, check_graph_links, link_column
from zarr_vectors.query._object_plan import GROUPED_LINKS, ObjectPlan
from zarr_vectors.query._owners import OWNER_COLUMN, owners_and_rows
from zarr_vectors.query.object_ids import group_key, requested_ids
from zarr_vectors.query.object_results import repeated_objects
from zarr_vectors.query.point_queries import chunks_met
from zarr_vectors.query.regions import BoxRegion, Region
from zarr_vectors.read import LevelReader, check_global_shapes
from zarr_vectors.result import QueryResult

__all__ = ["FEW_MANIFESTS_BYTES", "ObjectReader"]

FEW_MANIFESTS_BYTES = 64 * 1024
"""A handle reads the manifests of objects by themselves (the Blosc blocks of
``object_index/data`` holding them, 32 KiB each as written) for up to one object per this
many bytes of the index, over all its reads; beyond, it decodes the index whole once.
100 objects of 100,000 streamlines (12.7 MB): ~100 of ~390 blocks decoded."""


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
        Else the manifests of a read of few objects are read by themselves
        (:data:`FEW_MANIFESTS_BYTES`), the index whole at first need beyond that, both
        kept; and the fragment ranges of every chunk met are decoded together (and cached).
    cache_bytes
        When ``bounded``: the bytes of decoded fragment ranges kept between groups of
        chunks (and between reads), the least recently used forgotten first.
    kept_bytes
        Bytes of objects kept whole after their second read, for the next read of them
        (:class:`~zarr_vectors.query._assembled.Assembled`); 0 (the default) keeps none.
    """

    def __init__(
        self,
        reader: LevelReader,
        *,
        bounded: bool = False,
        cache_bytes: int = 0,
        kept_bytes: int = 0,
    ) -> None:
        self.reader = reader
        self.bounded = bounded
        self.cache_bytes = cache_bytes
        base = reader.base
        self.kind = reader.kind
        self.n_objects = reader.check_object_count()
        reader.add_column(LINK_COLUMN, f"{base}/{LINKS}/0")
        if not reader.records:  # format 1.6 keeps the owners in the fragment records
            reader.add_column(OWNER_COLUMN, f"{base}/{FRAGMENT_ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}")
        names = reader.children(f"{base}/{OBJECT_ATTRIBUTES}")
        self.object_attribute_names = [n for n in names if n != OBJECT_ID_ATTRIBUTE]
        self._has_external_ids = OBJECT_ID_ATTRIBUTE in names
        self.link_attribute_names = reader.children(f"{base}/{LINK_ATTRIBUTES}")
        for name in self.link_attribute_names:
            reader.add_column(link_column(name), f"{base}/{LINK_ATTRIBUTES}/{name}")
        self._cache: dict[str, np.ndarray] = {}
        self._cross_links: CrossLinks | None = None  # cross_chunk_links by first id, once
        self._handoff: tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
        self._decoded = DecodedIndex(self.n_objects, reader.grid.ndim)  # reads not bounded
        self._few_left: int | None = None  # objects _few_references may still read, once known
        self._kept = Assembled(0 if bounded else kept_bytes, self.n_objects)
        stored_edges = geometry_kind(self.kind).stored_edges
        self.link_blocks = (
            LinkBlocks(reader, self.link_attribute_names, self.n_objects, self._check_gids)
            if bounded and stored_edges
            else None
        )

    @functools.cached_property
    def grid_shape(self) -> tuple[int, ...]:
        """Chunks per axis of the level's grid (made once)."""
        return tuple(int(g) for g in self.reader.grid.shape)

    @functools.cached_property
    def n_max(self) -> int:
        """``N_max``: the rows a chunk of the level may hold (spec §9.11; read once)."""
        reader = self.reader
        return int(reader.array_meta[VERTICES]["shape"][reader.grid.ndim])

    @functools.cached_property
    def vertex_columns(self) -> list[str]:
        """``vertices`` and the per-vertex attribute columns, in result order (made once)."""
        return [VERTICES, *self.reader.attribute_names]

    # -- global arrays (read once) --------------------------------------------------------
    def _global(self, path: str) -> np.ndarray:
        if path not in self._cache:
            index = path.startswith(f"{OBJECT_INDEX}/")
            read_set = self._read_set(index)
            wanted = [p for p in dict.fromkeys([path, *read_set]) if p not in self._cache]
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
        capacity = math.prod(self.grid_shape) * self.n_max
        low, high = int(table.min()), int(table.max())
        if low < 0 or high >= capacity:
            bad = low if low < 0 else high
            raise CorruptChunkError(
                f"{reader.base}/{CROSS_CHUNK_LINKS} holds {bad}, which is not a global vertex "
                f"id (0 <= id < {capacity}): a chunk of the array is missing or damaged; "
                "restore the store from a good copy, or write it again"
            )
        if geometry_kind(self.kind).directed == "allowed":
            check_graph_links(table.reshape(-1, 2), reader.directed)

    def _read_set(self, index: bool) -> list[str]:
        """The stored global arrays a read of objects needs: fetched together at first need;
        with the whole ``object_index`` when ``index`` (not otherwise: a read of a few
        objects reads their manifests alone, :meth:`_few_references`)."""
        names = self.object_attribute_names + (
            [OBJECT_ID_ATTRIBUTE] if self._has_external_ids else []
        )
        whole = index and not self.bounded
        paths = [f"{OBJECT_INDEX}/data", f"{OBJECT_INDEX}/offsets"] if whole else []
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

    def ids_of(self, dense: np.ndarray) -> np.ndarray:
        """The caller's ids of the objects ``dense`` (dense ids, int64): ``dense`` itself
        when none were given, as :meth:`external_ids` would map them."""
        if not self._has_external_ids:
            return dense
        ids: np.ndarray = self.external_ids()[dense]
        return ids

    def cross_chunk_links(self) -> np.ndarray:
        """``cross_chunk_links``: ``(n, 2)`` global vertex ids of every link between chunks."""
        return self._global(CROSS_CHUNK_LINKS)

    def cross_link_index(self) -> CrossLinks:
        """:meth:`cross_chunk_links` ordered by first id (:func:`cross_link_index`), made
        once from the checked table and kept with it (a reopened store gets a new reader)."""
        if self._cross_links is None:
            self._cross_links = cross_link_index(self.cross_chunk_links())
        return self._cross_links

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
        """The objects ``dense`` (distinct dense ids), whole, in the given order: those
        kept whole (:class:`Assembled`) copied from there, the others read from their
        fragments (and offered to be kept)."""
        found, kept = self._kept.take(dense)
        if found is not None and kept.all() and _grouped(found, 0):
            return self._gathered(dense, gathered(found), None)
        plan = self._plan(dense[~kept], turns)
        return self._joined(dense, (found, kept), plan, plan.result())

    def _joined(
        self,
        dense: np.ndarray,
        taken: tuple[Kept | None, np.ndarray],
        plan: ObjectPlan,
        result: QueryResult,
        labels: dict[str, Any] | None = None,
    ) -> QueryResult:
        """The objects ``dense``: ``result``, the read by ``plan`` of those not kept (after
        it was offered to be kept), with the kept ones (``taken``: gathered, and which of
        ``dense`` they are) placed among them."""
        found, kept = taken
        columns = [result.positions, *(result.attributes[n] for n in self.vertex_columns[1:])]
        links = result.edges if result.edges is not None else result.faces
        counts = plan.link_counts
        assert result.offsets is not None
        linked = (links, counts, result.link_attributes)
        self._kept.offer(dense[~kept], (columns, result.offsets), linked, plan.ref_slot.shape[0])
        if found is None:
            return result
        if links is not None and (counts is None or not _grouped(found, links.shape[0])):
            return self._plan(dense, plan.turns).result(labels)  # not object by object
        link_offsets = None if counts is None else np.concatenate([[0], np.cumsum(counts)])
        read = Gathered(columns, result.offsets, links, link_offsets, result.link_attributes)
        return self._gathered(dense, interleaved(kept, found, read), labels)

    def _gathered(
        self, dense: np.ndarray, found: Gathered, labels: dict[str, Any] | None
    ) -> QueryResult:
        """The result of the kept objects ``dense`` gathered as ``found``: what a read
        of them returns (:meth:`ObjectPlan.result`)."""
        ids, links, names = self.ids_of(dense), found.links, self.object_attribute_names
        return QueryResult(
            positions=found.columns[0],
            attributes=dict(zip(self.vertex_columns[1:], found.columns[1:], strict=True)),
            vertex_object_ids=ids.repeat(found.offsets[1:] - found.offsets[:-1]),
            object_ids=ids,
            offsets=found.offsets,
            edges=links if links is not None and links.shape[1] == 2 else None,
            faces=links if links is not None and links.shape[1] == 3 else None,
            object_attributes={n: self.object_attribute(n)[dense] for n in names},
            link_attributes=found.link_columns,
            **(labels or {}),
        )

    def _plan(self, dense: np.ndarray, turns: bool, held: HeldRows | None = None) -> ObjectPlan:
        """The read of the objects ``dense`` (distinct dense ids), with ``held`` rows."""
        refs = self._handed_over(dense)
        if refs is None:
            refs = self._references(dense)
        return ObjectPlan(self, dense, refs, turns, held)

    def _references(self, dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The fragment references of the objects ``dense``, in manifest order (§7.6):
        decoded once per object and kept (:class:`DecodedIndex`), or for a bounded read
        decoded each time."""
        whole = f"{OBJECT_INDEX}/data" in self._cache
        if self.bounded and not whole and _is_run(dense):
            found = self._references_of_run(int(dense[0]), int(dense[-1]) + 1)
            if found is not None:
                return found
        if not self.bounded and not whole:
            found = self._few_references(dense)
            if found is not None:
                return found
        data = self._global(f"{OBJECT_INDEX}/data")
        offsets = self._global(f"{OBJECT_INDEX}/offsets")
        if self.bounded:
            return decode_object_index_bulk(data, offsets, dense, self.reader.grid.ndim)
        return self._decoded.references(data, offsets, dense)

    def _few_references(
        self, dense: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The references of the objects ``dense``, those not decoded yet from their own
        manifests alone (:meth:`_manifests_of`) and kept as a whole read keeps them; None
        when those are too many for that to pay (:data:`FEW_MANIFESTS_BYTES`, counted over
        the handle's reads: boxes moving over the level end up reading the index whole
        once), when the store is not local (the whole index comes in the one round trip of
        the level's global arrays; its manifests alone would take two more, for the same
        stored bytes), or an id or an offset is out of place (the whole index is then read,
        which names the damage)."""
        if not self.reader.io.is_local:  # two round trips (offsets, then data) for one
            return None
        if dense.shape[0] and (int(dense.min()) < 0 or int(dense.max()) >= self.n_objects):
            return None
        new = self._decoded.unknown(dense)
        if new.shape[0]:
            if self._few_left is None:
                self._few_left = self._index_bytes() // FEW_MANIFESTS_BYTES
            if new.shape[0] > self._few_left:
                return None
            refs = self._manifests_of(new)
            if refs is None or not self._decoded.keep(new, refs):
                return None
            self._few_left -= new.shape[0]
        return self._decoded.gather(dense)

    def _index_bytes(self) -> int:
        """Bytes of ``object_index/data`` (its shape, checked against the level)."""
        paths = [f"{OBJECT_INDEX}/data", f"{OBJECT_INDEX}/offsets"]
        check_global_shapes(self.reader, paths, self.n_objects)
        return int(self.reader.array_metadata(f"{self.reader.base}/{paths[0]}")["shape"][0])

    def _manifests_of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The references of the distinct objects ``ids`` (``refs[0]``: positions in
        ``ids``) decoded from their manifests alone: the rows of ``object_index`` read by
        :meth:`LevelReader.take_global_rows` (of its chunks, the Blosc blocks holding them);
        None when the offsets read do not bound manifests inside the data (the whole index
        is then decoded, which reports the damage as a whole read does). A run of
        consecutive objects is read by range instead (:meth:`_references_of_run`: a pass of
        batches of 2,000 over 100,000 streamlines took 89 ms so, 605 ms row by row)."""
        size, n, k = self._index_bytes(), self.n_objects, ids.shape[0]
        at = np.concatenate([ids, ids + 1])
        inside = at < n
        bounds = np.full(2 * k, size, dtype=np.int64)
        bounds[inside] = self.reader.take_global_rows(f"{OBJECT_INDEX}/offsets", at[inside])
        starts, stops = bounds[:k], bounds[k:]
        if bool(np.any(starts < 0) or np.any(stops < starts) or np.any(stops > size)):
            return None
        lengths = stops - starts
        firsts = np.cumsum(lengths) - lengths
        rows = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - firsts, lengths)
        data = self.reader.take_global_rows(f"{OBJECT_INDEX}/data", rows)
        return decode_object_index_bulk(data, firsts, np.arange(k), self.reader.grid.ndim)

    def _references_of_run(
        self, first: int, stop: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The references of objects ``first .. stop - 1``, their manifests read by range;
        None when the offsets read do not ascend inside the data (the whole index is then
        decoded, which reports the damage as a whole read does)."""
        size = self._index_bytes()
        last = min(stop + 1, self.n_objects)
        offsets = self.reader.global_rows(f"{OBJECT_INDEX}/offsets", first, last)
        offsets = offsets.astype(np.int64, copy=False)
        bounds = np.append(offsets, size) if last == stop else offsets
        if bounds[0] < 0 or bounds[-1] > size or np.any(bounds[1:] < bounds[:-1]):
            return None
        start = int(bounds[0])
        data = self.reader.global_rows(f"{OBJECT_INDEX}/data", start, int(bounds[-1]))
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

    def read_region(
        self, region: Region, group: Any = None, labels: dict[str, Any] | None = None
    ) -> QueryResult:
        """The objects with at least one vertex in ``region`` (and in ``group`` if given),
        whole, in ascending dense id order; ``labels``: further fields of the result (the
        store's axis names, kind and level), set when it is built.

        The ``vertices`` rows the owners lookup decoded are reused by the read of the
        objects (:mod:`~zarr_vectors.query._held_rows`), not read again.
        """
        dense, held = self._owners_and_rows(region)
        if group is not None:
            dense = np.intersect1d(dense, self.group_members(group))
        found, kept = self._kept.take(dense)
        if found is not None and kept.all() and _grouped(found, 0):
            return self._gathered(dense, gathered(found), labels)
        plan = self._plan(dense[~kept], True, held)
        del held  # the plan lets the rows go once it has used them
        return self._joined(dense, (found, kept), plan, plan.result(labels), labels)

    def _owners_and_rows(self, region: Region) -> tuple[np.ndarray, HeldRows | None]:
        """:meth:`owners_in_region`, and the ``vertices`` rows of the chunks it decoded."""
        reader = self.reader
        chunks, counts, inside, where = chunks_met(reader, region)
        if not chunks.shape[0]:
            return np.empty(0, np.int64), None
        if inside.all() and chunks.shape[0] == reader.occupied_chunks(None, None)[0].shape[0]:
            return self._filled(), None
        return owners_and_rows(reader, region, (chunks, counts, inside, where))


def _grouped(kept: Kept, more: int) -> bool:
    """Whether a read of the ``kept`` objects and ``more`` links would put its links
    object by object (:data:`~zarr_vectors.query._object_plan.GROUPED_LINKS`), as the
    kept objects' are."""
    return kept.links is None or int(kept.spans[:, 3].sum()) + more <= GROUPED_LINKS


def _is_run(dense: np.ndarray) -> bool:
    """Whether ``dense`` is consecutive ascending ids (at least one)."""
    n = dense.shape[0]
    return n > 0 and int(dense[-1]) - int(dense[0]) == n - 1 and bool(np.all(np.diff(dense) == 1))
