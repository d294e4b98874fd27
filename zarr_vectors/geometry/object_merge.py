"""Merging object stores chunk by chunk: appends and batched writes (spec §2.4, §9, §10.3).

A batch of new objects is first written alone, by the one-shot writer, into a scratch
store. Merging it into the store it extends gives, byte for byte, the store one write of
the old objects followed by the new ones gives: the new objects get the dense ids after
the old ones, so in every chunk their rows, fragments and links go after the old ones
(rows of a chunk are ordered by object, spec §10.3). Row numbers inside a chunk are moved
by the rows already there, fragment numbers by the fragments already there, dense object
ids by the objects already there, and every global vertex id (``cross_chunk_links``, mesh
face sentinels) is recomputed for the final grid and ``N_max`` (spec §9.11): the order of
global ids is that of (chunk index, row), which no change of origin, grid shape or
``N_max`` alters, so pairs keep their orientation and only need sorting again.

Chunks that receive no new object keep their shards: they are moved when the grid origin
moves (new data below it), re-indexed when an ``N_max`` grows, and re-encoded only when
their content must change (mesh sentinels pointing at moved vertices, a wider link dtype,
a larger fragment-blob block). Chunks are visited in descending grid order, so in a store
changed in place no shard is overwritten before it is read (see
:mod:`zarr_vectors.geometry.point_append`).

A new store (no base) may pack several spatial chunks per shard (``shard_chunks``, spec
§9.0.1): the sources keep one shard per chunk, and the merge visits the chunks shard by
shard and writes each shard once, from its chunks' encoded row blocks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors._progress import Progress
from zarr_vectors.errors import CorruptChunkError, InvalidInputError
from zarr_vectors.format.fragments import FragmentIndex
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    CROSS_CHUNK_LINK_ATTRIBUTES,
    FRAGMENT_ATTRIBUTES,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ID_ATTRIBUTE,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.geometry import _inputs as inputs
from zarr_vectors.geometry import _object_inputs as object_inputs
from zarr_vectors.geometry._objects import (
    Groups,
    ObjectTable,
    write_global,
    write_object_columns,
    write_object_index,
)
from zarr_vectors.geometry._pipeline import (
    Batcher,
    ShardAssembler,
    WriteOptions,
    blob_layout,
    commit_root,
    round_up,
    shard_major_order,
)
from zarr_vectors.geometry.object_sources import (
    BLOBS,
    FAMILIES,
    GLOBAL_PREFIXES,
    LINKS0,
    Source,
    SourceArray,
    check_fit,
)
from zarr_vectors.geometry.reader import ChunkRows
from zarr_vectors.store.arrays import (
    counts_array_metadata,
    group_metadata,
    row_array_metadata,
    write_counts,
)
from zarr_vectors.store.io import StoreIO, StoreLike
from zarr_vectors.store.shards import RowLayout, shard_key
from zarr_vectors.store.target import modify_target, write_target

__all__ = [
    "MergePlan",
    "check_globals",
    "commit_merge",
    "for_chunk_writers",
    "links_may_be_wide",
    "merge_chunks",
    "merge_stores",
    "plan_merge",
    "set_link_dtype",
    "wide_links",
]

_INT32 = np.iinfo(np.int32)


@dataclass(slots=True)
class _Place:
    """Per-source arrays aligned with ``source.chunks``: shifts into the merged chunks."""

    row_shift: np.ndarray
    fragment_shift: np.ndarray
    final_flat: np.ndarray  # flat index of the chunk in the final grid
    object_shift: int
    source_flat: np.ndarray  # sorted flat indices of the chunks in the source's grid
    order: np.ndarray  # row of source.chunks of each entry of source_flat


@dataclass(slots=True)
class MergePlan:
    """Where every source's chunks, rows, fragments and ids go in the merged store.

    Computed once (:func:`plan_merge`); it is all a chunk writer needs
    (:func:`merge_chunks`), in this process or another (it pickles; see
    :func:`for_chunk_writers`).
    """

    sources: list[Source]
    has_base: bool
    grid: ChunkGrid
    root: RootMetadata
    holders: dict[tuple[int, ...], list[int]]  # final chunk -> sources holding it
    index: list[dict[tuple[int, ...], int]]  # per source: chunk -> row of source.chunks
    places: list[_Place]
    ranges: dict[tuple[tuple[int, ...], int], tuple[np.ndarray, np.ndarray, np.ndarray]]
    arrays: dict[str, SourceArray]  # final layouts
    blobs: dict[str, tuple[RowLayout, dict[str, Any]]]
    totals: dict[tuple[int, ...], int]
    shard_chunks: tuple[int, ...] = ()  # spatial chunks per shard of the merged store

    @property
    def n_max(self) -> int:
        return self.arrays[VERTICES].layout.n_max

    def merged(self, chunk: tuple[int, ...]) -> bool:
        """Whether a chunk is written from its sources' rows (not kept as the base holds it)."""
        return not (self.has_base and self.holders[chunk] == [0])

    def grid_index(self, chunk: tuple[int, ...], grid: ChunkGrid | None = None) -> np.ndarray:
        """Grid index of an absolute chunk in the final grid (or in ``grid``)."""
        origin = (grid or self.grid).origin
        return np.asarray(np.asarray(chunk, dtype=np.int64) - origin, dtype=np.int64)

    def rows_of(self, s: int, flat: np.ndarray) -> np.ndarray:
        """Rows of ``sources[s].chunks`` of chunks given by flat index in that source's grid."""
        place = self.places[s]
        at = np.minimum(np.searchsorted(place.source_flat, flat), max(len(place.order) - 1, 0))
        if flat.size and (not len(place.order) or np.any(place.source_flat[at] != flat)):
            raise CorruptChunkError("a global vertex id or manifest names an empty chunk")
        return place.order[at] if flat.size else np.empty(0, np.int64)

    def remap(self, s: int, gids: np.ndarray) -> np.ndarray:
        """Global vertex ids of source ``s`` in the merged store (spec §9.11)."""
        chunk, row = np.divmod(gids, self.sources[s].n_max)
        j = self.rows_of(s, chunk)
        place = self.places[s]
        return np.asarray(
            place.final_flat[j] * self.n_max + place.row_shift[j] + row, dtype=np.int64
        )

    def chunk_ranges(self, chunk: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Merged fragment starts, fragment rows and link counts of a merged chunk."""
        holding = self.holders[chunk]
        shifts = [int(self.places[s].row_shift[self.index[s][chunk]]) for s in holding]
        return _merged_ranges([self.ranges[(chunk, s)] for s in holding], shifts)

    def identity(self, s: int) -> bool:
        """Whether source ``s``'s global ids stay as they are."""
        source = self.sources[s]
        return (
            source.n_max == self.n_max
            and np.array_equal(source.grid.origin, self.grid.origin)
            and np.array_equal(source.grid.shape, self.grid.shape)
        )


def _bounds(sources: list[Source]) -> tuple[np.ndarray, np.ndarray] | None:
    boxes = [s.root.bounding_box for s in sources if s.root.bounding_box is not None]
    if not boxes:
        return None
    lo = np.min(np.asarray([b[0] for b in boxes], dtype=np.float64), axis=0)
    hi = np.max(np.asarray([b[1] for b in boxes], dtype=np.float64), axis=0)
    return lo, hi


def _root(
    sources: list[Source], grid: ChunkGrid, bounds: Any, shard_chunks: tuple[int, ...]
) -> RootMetadata:
    first = sources[0].root
    extra = {k: v for k, v in first.extra.items() if k != "software"}
    if "swc_compatible" in extra:
        extra["swc_compatible"] = all(bool(s.root.extra.get("swc_compatible")) for s in sources)
    options = WriteOptions(
        axis_names=first.axis_names,
        axis_units=first.axis_units,
        shard_chunks=shard_chunks or None,
    )
    return inputs.root_metadata(first.geometry_type, grid, options, bounds, extra)


def _chunk_maps(sources: list[Source]) -> tuple[list[dict[Any, int]], dict[Any, list[int]]]:
    index = [{tuple(c): j for j, c in enumerate(s.chunks.tolist())} for s in sources]
    holders: dict[tuple[int, ...], list[int]] = {}
    for s, chunks in enumerate(index):
        for chunk in chunks:
            holders.setdefault(chunk, []).append(s)
    return index, holders


def _read_ranges(
    sources: list[Source], index: list[dict[Any, int]], wanted: list[list[tuple[int, ...]]]
) -> dict[tuple[tuple[int, ...], int], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(fragment starts, fragment rows, links per fragment)`` of the wanted chunks."""
    out = {}
    for s, chunks in enumerate(wanted):
        source = sources[s]
        grid_chunks = np.asarray(
            [source.chunks[index[s][c]] - source.grid.origin for c in chunks], dtype=np.int64
        ).reshape(-1, source.grid.ndim)
        frags = source.reader.blob_ranges(VERTEX_FRAGMENTS, grid_chunks)
        links = source.reader.blob_ranges(LINK_FRAGMENTS, grid_chunks)
        for c, (starts, counts), (_, link_counts) in zip(chunks, frags, links, strict=True):
            out[(c, s)] = (starts, counts, link_counts)
    return out


def _flat(grid_chunks: np.ndarray, grid: ChunkGrid) -> np.ndarray:
    """C-order flat indices of grid indices ``(m, D)`` (spec §9.11)."""
    if not len(grid_chunks):
        return np.empty(0, np.int64)
    shape = tuple(int(g) for g in grid.shape)
    return np.asarray(np.ravel_multi_index(tuple(grid_chunks.T), shape), dtype=np.int64)


def _places(
    sources: list[Source],
    grid: ChunkGrid,
    ranges: dict[tuple[tuple[int, ...], int], tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> list[_Place]:
    rows_before: dict[tuple[int, ...], int] = {}
    fragments_before: dict[tuple[int, ...], int] = {}
    places, objects = [], 0
    for s, source in enumerate(sources):
        chunks = [tuple(c) for c in source.chunks.tolist()]
        row_shift = np.asarray([rows_before.get(c, 0) for c in chunks], dtype=np.int64)
        frag_shift = np.asarray([fragments_before.get(c, 0) for c in chunks], dtype=np.int64)
        for c, n in zip(chunks, source.counts.tolist(), strict=True):
            rows_before[c] = rows_before.get(c, 0) + int(n)
            if (c, s) in ranges:
                fragments_before[c] = fragments_before.get(c, 0) + len(ranges[(c, s)][0])
        own = _flat(source.chunks - source.grid.origin, source.grid)
        order = np.argsort(own)
        places.append(
            _Place(
                row_shift,
                frag_shift,
                _flat(source.chunks - grid.origin, grid),
                objects,
                own[order],
                order,
            )
        )
        objects += source.n_objects
    return places


def _final_arrays(plan: MergePlan, merged: list[tuple[int, ...]]) -> None:
    """Set the final layouts: every family's ``N_max`` and the blob layouts.

    A base's layouts are floors: they cover its chunks that are kept as they are.
    """
    first = plan.sources[0]
    r = first.arrays[VERTICES].layout.rows_per_block
    longest = {"vertex": max(plan.totals.values(), default=0), "fragment": 0, "link": 0}
    blob_bytes = {VERTEX_FRAGMENTS: 16, LINK_FRAGMENTS: 16}
    for chunk in merged:
        starts, counts, links = plan.chunk_ranges(chunk)
        longest["fragment"] = max(longest["fragment"], len(counts))
        longest["link"] = max(longest["link"], int(links.sum()))
        blob_bytes[VERTEX_FRAGMENTS] = max(
            blob_bytes[VERTEX_FRAGMENTS], len(_vertex_blob(starts, counts))
        )
        blob_bytes[LINK_FRAGMENTS] = max(blob_bytes[LINK_FRAGMENTS], len(_link_blob(links)))
    n_max = {family: round_up(n, r) for family, n in longest.items()}
    if plan.has_base:
        for array in first.arrays.values():
            n_max[array.family] = max(n_max[array.family], array.layout.n_max)
        for name in BLOBS:
            blob_bytes[name] = max(blob_bytes[name], first.blobs[name][0].n_max)
    shards = plan.shard_chunks
    plan.arrays = {
        path: dataclasses.replace(
            array,
            layout=dataclasses.replace(
                array.layout, n_max=n_max[array.family], shard_chunks=shards
            ),
        )
        for path, array in first.arrays.items()
    }
    plan.blobs = {
        name: (
            dataclasses.replace(blob_layout(blob_bytes[name]), shard_chunks=shards),
            first.blobs[name][1],
        )
        for name in BLOBS
    }


def _merged_ranges(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], row_shifts: list[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fragment starts, rows and link counts of a chunk's sources, one after another."""
    empty = np.empty(0, np.int64)
    starts = [p[0] + shift for p, shift in zip(parts, row_shifts, strict=True)]
    return (
        np.concatenate([empty, *starts]).astype(np.int64),
        np.concatenate([empty, *(p[1] for p in parts)]).astype(np.int64),
        np.concatenate([empty, *(p[2] for p in parts)]).astype(np.int64),
    )


def _vertex_blob(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return np.frombuffer(FragmentIndex.from_ranges(starts, counts).encode(), dtype=np.uint8)


def _link_blob(counts: np.ndarray) -> np.ndarray:
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return _vertex_blob(starts, counts)


def plan_merge(
    sources: list[Source],
    *,
    has_base: bool,
    check_links: bool = True,
    shard_chunks: int | tuple[int, ...] | None = None,
) -> MergePlan:
    """Check that the sources fit together and plan their merge (nothing is written).

    ``check_links=False`` leaves ``links/0`` int32 without reading any link row: the caller
    then decides with :func:`wide_links` over every merged chunk (when
    :func:`links_may_be_wide`) and :func:`set_link_dtype`, e.g. in parallel.

    ``shard_chunks`` (as :class:`~zarr_vectors.WriteOptions` takes it) packs several
    spatial chunks per shard of the merged store (spec §9.0.1, format 1.1); the sources
    themselves have one shard per chunk.

    Raises
    ------
    InvalidInputError
        When the sources do not fit together, the merged grid is too large,
        ``shard_chunks`` does not fit the axes, or it is asked of a merge into a base.
    """
    for other in sources[1:]:
        check_fit(sources[0], other)
    first = sources[0]
    bounds = _bounds(sources)
    ndim = first.grid.ndim
    shards = WriteOptions(shard_chunks=shard_chunks).shard_shape(ndim)
    if shards and has_base:
        raise InvalidInputError("a merge into an existing store cannot pack chunks into shards")
    grid = inputs.plan_grid(bounds, 0, first.root.chunk_shape, first.root.base_bin_shape, ndim)
    index, holders = _chunk_maps(sources)
    totals = {
        c: sum(int(sources[s].counts[index[s][c]]) for s in holding)
        for c, holding in holders.items()
    }
    plan = MergePlan(
        sources,
        has_base,
        grid,
        _root(sources, grid, bounds, shards),
        holders,
        index,
        [],
        {},
        {},
        {},
        totals,
        shards,
    )
    merged = [c for c in holders if plan.merged(c)]
    wanted: list[list[tuple[int, ...]]] = [[] for _ in sources]
    for c in merged:
        for s in holders[c]:
            wanted[s].append(c)
    plan.ranges = _read_ranges(sources, index, wanted)
    plan.places = _places(sources, grid, plan.ranges)
    _final_arrays(plan, merged)
    _check_gid_space(grid, plan.n_max)
    set_link_dtype(plan, _link_dtype(plan) if check_links else np.dtype(np.int32))
    return plan


def set_link_dtype(plan: MergePlan, dtype: np.dtype[Any]) -> None:
    """Set the dtype of the merged ``links/0`` rows."""
    plan.arrays[LINKS0] = dataclasses.replace(
        plan.arrays[LINKS0],
        layout=dataclasses.replace(plan.arrays[LINKS0].layout, dtype=np.dtype(dtype)),
    )


def _check_gid_space(grid: ChunkGrid, n_max: int) -> None:
    cells = float(np.prod(np.asarray(grid.shape, dtype=np.float64)))
    if cells * n_max >= 2.0**63:
        raise InvalidInputError(
            f"the chunk grid {tuple(int(g) for g in grid.shape)} with {n_max} rows per chunk "
            "exceeds the 2**63 global vertex ids of the format (spec §9.11)"
        )


# -- link rows ---------------------------------------------------------------------------


def _link_rows(plan: MergePlan, s: int, chunk: tuple[int, ...], rows: np.ndarray) -> np.ndarray:
    """Source ``s``'s ``links/0`` rows of a chunk in the merged store's numbering."""
    rows = rows.astype(np.int64)
    shift = int(plan.places[s].row_shift[plan.index[s][chunk]])
    if plan.sources[0].kind == "mesh":
        sentinel = rows < 0
        out = np.where(sentinel, 0, rows + shift)
        if sentinel.any():
            out[sentinel] = -(plan.remap(s, -(rows[sentinel] + 1)) + 1)
        return out
    return np.where(rows >= 0, rows + shift, rows)


def _link_count(plan: MergePlan, s: int, chunk: tuple[int, ...]) -> int:
    if (chunk, s) in plan.ranges:
        return int(plan.ranges[(chunk, s)][2].sum())
    source = plan.sources[s]
    g = (source.chunks[plan.index[s][chunk]] - source.grid.origin).reshape(1, -1)
    return int(source.reader.blob_ranges(LINK_FRAGMENTS, g)[0][1].sum())


def _read_family(
    plan: MergePlan, s: int, chunk: tuple[int, ...], paths: list[str], n: int
) -> list[np.ndarray]:
    source = plan.sources[s]
    if n == 0:
        return [
            np.empty((0, *source.arrays[p].layout.row_shape), source.arrays[p].layout.dtype)
            for p in paths
        ]
    g = tuple(int(v) for v in source.chunks[plan.index[s][chunk]] - source.grid.origin)
    wanted = [ChunkRows(g, np.array([[0, n]], dtype=np.int64))]
    return source.reader.read_columns(paths, wanted)


def _rewrites_kept_links(plan: MergePlan) -> bool:
    """Whether the base's kept chunks need their ``links/0`` rows read and rewritten."""
    if not plan.has_base:
        return False
    mesh = plan.sources[0].kind == "mesh"
    return (mesh and not plan.identity(0)) or (
        plan.sources[0].arrays[LINKS0].layout.dtype != np.dtype(np.int32)
    )


def links_may_be_wide(plan: MergePlan) -> bool:
    """Whether some merged ``links/0`` value may need int64 (else int32 holds them all)."""
    mesh = plan.sources[0].kind == "mesh"
    return mesh or max(plan.totals.values(), default=0) > _INT32.max


def _link_dtype(plan: MergePlan) -> np.dtype[Any]:
    """int32 unless some merged ``links/0`` value needs int64 (as the one-shot writer)."""
    if not links_may_be_wide(plan):
        return np.dtype(np.int32)
    kept = _rewrites_kept_links(plan)
    chunks = [c for c in plan.holders if plan.merged(c) or kept]
    return np.dtype(np.int64 if wide_links(plan, chunks) else np.int32)


def wide_links(plan: MergePlan, chunks: list[tuple[int, ...]]) -> bool:
    """Whether some ``links/0`` value of these chunks, renumbered, needs int64."""
    for chunk in chunks:
        for s in plan.holders[chunk]:
            n = _link_count(plan, s, chunk)
            (rows,) = _read_family(plan, s, chunk, [LINKS0], n)
            values = _link_rows(plan, s, chunk, rows)
            if values.size and (values.min() < _INT32.min or values.max() > _INT32.max):
                return True
    return False


# -- writing -------------------------------------------------------------------------------


def _key(path: str, g: np.ndarray, row_ndim: int) -> str:
    return shard_key(f"0/{path}", g, row_ndim)


@dataclass(slots=True)
class _Writer:
    plan: MergePlan
    target: StoreIO
    assemblers: dict[str, ShardAssembler] = dataclasses.field(default_factory=dict)
    batcher: Batcher | None = None

    def _old_keys(self, chunk: tuple[int, ...]) -> dict[str, str]:
        base = self.plan.sources[0]
        return self._keys(self.plan.grid_index(chunk, base.grid), base.arrays)

    def _keys(self, g: np.ndarray, arrays: dict[str, SourceArray]) -> dict[str, str]:
        keys = {p: _key(p, g, len(a.layout.row_shape)) for p, a in arrays.items()}
        return keys | {name: _key(name, g, 0) for name in BLOBS}

    def _drop_moved(self, chunk: tuple[int, ...]) -> None:
        old = self._old_keys(chunk)
        new = self._keys(self.plan.grid_index(chunk), self.plan.arrays)
        self.target.delete_many([k for p, k in old.items() if k != new[p]])

    def merge(self, chunk: tuple[int, ...]) -> None:
        """Write a chunk from the rows of every source holding it, in source order.

        With several chunks per shard the chunk's row blocks are held until its shard is
        complete (chunks come shard by shard, see :func:`merge_chunks`).
        """
        plan = self.plan
        g = plan.grid_index(chunk)
        columns = self._merged_columns(chunk)
        if plan.shard_chunks:
            for path, layout, rows in columns:
                if len(rows):
                    self._assembler(path, layout).add(g, rows)
            return
        items = [
            (_key(path, g, len(layout.row_shape)), layout.encode_shard(rows))
            for path, layout, rows in columns
            if len(rows)
        ]
        if plan.has_base and plan.holders[chunk][0] == 0:
            self._drop_moved(chunk)
        self.target.set_many(items)

    def _assembler(self, path: str, layout: RowLayout) -> ShardAssembler:
        if self.batcher is None:
            self.batcher = Batcher(self.target)
        if path not in self.assemblers:
            self.assemblers[path] = ShardAssembler(self.batcher, f"0/{path}", layout)
        return self.assemblers[path]

    def flush(self) -> None:
        """Write the shards still being assembled."""
        for assembler in self.assemblers.values():
            assembler.flush()
        if self.batcher is not None:
            self.batcher.flush()

    def _merged_columns(self, chunk: tuple[int, ...]) -> list[tuple[str, RowLayout, np.ndarray]]:
        """``(path, final layout, rows)`` of every per-chunk array of a merged chunk."""
        plan = self.plan
        holding = plan.holders[chunk]
        parts = [plan.ranges[(chunk, s)] for s in holding]
        starts, counts, links = plan.chunk_ranges(chunk)
        values: dict[str, list[np.ndarray]] = {p: [] for p in plan.arrays}
        for s, part in zip(holding, parts, strict=True):
            sizes = {
                "vertex": int(plan.sources[s].counts[plan.index[s][chunk]]),
                "fragment": len(part[0]),
                "link": int(part[2].sum()),
            }
            for family in FAMILIES:
                paths = [p for p, a in plan.arrays.items() if a.family == family]
                for path, rows in zip(
                    paths, _read_family(plan, s, chunk, paths, sizes[family]), strict=True
                ):
                    values[path].append(self._transform(s, chunk, path, rows))
        columns = [
            (
                path,
                array.layout,
                np.concatenate(values[path]).astype(array.layout.dtype, copy=False),
            )
            for path, array in plan.arrays.items()
        ]
        columns.append(
            (VERTEX_FRAGMENTS, plan.blobs[VERTEX_FRAGMENTS][0], _vertex_blob(starts, counts))
        )
        columns.append((LINK_FRAGMENTS, plan.blobs[LINK_FRAGMENTS][0], _link_blob(links)))
        return columns

    def _transform(self, s: int, chunk: tuple[int, ...], path: str, rows: np.ndarray) -> np.ndarray:
        if path == LINKS0:
            return _link_rows(self.plan, s, chunk, rows)
        if path == f"{FRAGMENT_ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}":
            return rows + self.plan.places[s].object_shift
        return rows

    def keep(self, chunk: tuple[int, ...]) -> None:
        """Leave a base chunk's shards, or move, re-index or rewrite what must change."""
        plan, base = self.plan, self.plan.sources[0]
        old = self._old_keys(chunk)
        g = plan.grid_index(chunk)
        new = self._keys(g, plan.arrays)
        items = []
        for path, array in plan.arrays.items():
            if path == LINKS0 and _rewrites_kept_links(plan):
                n = _link_count(plan, 0, chunk)
                (rows,) = _read_family(plan, 0, chunk, [path], n)
                if n:
                    rows = _link_rows(plan, 0, chunk, rows).astype(array.layout.dtype)
                    items.append((new[path], array.layout.encode_shard(rows)))
                continue
            shard = self._moved(old[path], new[path], base.arrays[path].layout, array.layout)
            if shard is None and array.family != "link":
                raise CorruptChunkError(f"{old[path]}: shard of an occupied chunk is missing")
            if shard:
                items.append((new[path], shard))
        for name in BLOBS:
            items += self._kept_blob(chunk, name, old[name], new[name])
        self._drop_moved(chunk)
        self.target.set_many(items)

    def _moved(self, old: str, new: str, was: RowLayout, now: RowLayout) -> bytes | None:
        """The shard at its new key, re-indexed if needed; b'' when nothing changes."""
        if old == new and was.n_max == now.n_max:
            return b""
        shard = self.plan.sources[0].io.get(old)
        if shard is None or was.n_max == now.n_max:
            return shard
        return was.reindex_shard(shard, now, old)

    def _kept_blob(
        self, chunk: tuple[int, ...], name: str, old: str, new: str
    ) -> list[tuple[str, bytes]]:
        base = self.plan.sources[0]
        was, now = base.blobs[name][0], self.plan.blobs[name][0]
        if (was.rows_per_block, was.n_max) == (now.rows_per_block, now.n_max):
            shard = b"" if old == new else base.io.get(old)
            if shard is None:
                raise CorruptChunkError(f"{old}: fragment index of an occupied chunk is missing")
            return [(new, shard)] if shard else []
        g = self.plan.grid_index(chunk, base.grid).reshape(1, -1)
        starts, counts = base.reader.blob_ranges(name, g)[0]
        blob = _vertex_blob(starts, counts) if name == VERTEX_FRAGMENTS else _link_blob(counts)
        return [(new, now.encode_shard(blob))]


def _write_metadata(io: StoreIO, plan: MergePlan) -> None:
    shape = tuple(int(g) for g in plan.grid.shape)
    docs = [
        (f"0/{path}/zarr.json", row_array_metadata(shape, a.layout, a.tag))
        for path, a in plan.arrays.items()
    ]
    docs += [
        (f"0/{name}/zarr.json", row_array_metadata(shape, layout, tag))
        for name, (layout, tag) in plan.blobs.items()
    ]
    docs.append(
        (f"0/{VERTEX_COUNTS}/zarr.json", counts_array_metadata(shape, {"zv_array": VERTEX_COUNTS}))
    )
    groups = [LINKS, FRAGMENT_ATTRIBUTES]
    groups += [ATTRIBUTES] if any(p.startswith(f"{ATTRIBUTES}/") for p in plan.arrays) else []
    groups += (
        [LINK_ATTRIBUTES] if any(p.startswith(f"{LINK_ATTRIBUTES}/") for p in plan.arrays) else []
    )
    docs += [(f"0/{g}/zarr.json", group_metadata({})) for g in groups]
    io.set_many(docs)


def _object_ids(plan: MergePlan) -> np.ndarray | None:
    """The merged object ids (None: 0..m-1), refusing repeated ids."""
    parts = [np.asarray(source.ids) for source in plan.sources]
    unsigned = {p.dtype.kind == "u" and p.dtype.itemsize == 8 for p in parts if p.size}
    if len(unsigned) > 1:
        if any(p.dtype.kind == "u" and np.any(p > _INT64_MAX) for p in parts):
            raise InvalidInputError("object ids mix uint64 ids above 2**63 and signed ids")
        parts = [p.astype(np.int64) for p in parts]
    ids = np.concatenate(parts)
    total = sum(s.n_objects for s in plan.sources)
    if np.unique(ids).shape[0] != total:
        raise InvalidInputError(
            "the new objects' ids repeat ids of the store (or of each other); object ids "
            "must be distinct"
        )
    return object_inputs.object_ids(ids, total)


_INT64_MAX = np.iinfo(np.int64).max


def _merged_groups(plan: MergePlan) -> Groups | None:
    names: list[str] = []
    members: list[np.ndarray] = []
    columns: dict[str, list[np.ndarray]] = {}
    for source, place in zip(plan.sources, plan.places, strict=True):
        if source.groups is None or not source.groups.names:
            continue
        repeated = set(names) & set(source.groups.names)
        if repeated:
            raise InvalidInputError(f"group {sorted(repeated)[0]!r} already exists in the store")
        if names and set(columns) != set(source.groups.attributes):
            raise InvalidInputError(
                f"group attributes {sorted(source.groups.attributes)} do not match the "
                f"store's {sorted(columns)}"
            )
        names += source.groups.names
        members += [m + place.object_shift for m in source.groups.members]
        for k, v in source.groups.attributes.items():
            columns.setdefault(k, []).append(v)
    if not names:
        return None
    return Groups(names, members, {k: np.concatenate(v) for k, v in columns.items()})


def check_globals(plan: MergePlan) -> tuple[np.ndarray | None, Groups | None]:
    """The merged object ids and groups, or the error that makes the merge impossible."""
    return _object_ids(plan), _merged_groups(plan)


def _write_globals(
    io: StoreIO, plan: MergePlan, ids: np.ndarray | None, groups: Groups | None
) -> None:
    keys = [k for p in GLOBAL_PREFIXES for k in io.list_prefix(f"0/{p}/")]
    io.delete_many(keys)
    sources, kind = plan.sources, plan.sources[0].kind
    obj, chunk, fragment = [], [], []
    for s, (source, place) in enumerate(zip(sources, plan.places, strict=True)):
        o, c, f = source.refs
        rows = plan.rows_of(s, _flat(c - source.grid.origin, source.grid))
        obj.append(o + place.object_shift)
        chunk.append(c - plan.grid.origin)
        fragment.append(f + (place.fragment_shift[rows] if rows.size else 0))
    ndim = plan.grid.ndim
    refs = (
        np.concatenate([np.empty(0, np.int64), *obj]),
        np.concatenate([np.empty((0, ndim), np.int64), *chunk]),
        np.concatenate([np.empty(0, np.int64), *fragment]),
    )
    n_objects = sum(s.n_objects for s in sources)
    write_object_index(io, "0", refs, n_objects, ndim)
    cross, order = _merged_cross(plan)
    table = ObjectTable(
        kind=kind,
        positions=np.empty((0, ndim)),
        offsets=np.zeros(n_objects + 1, np.int64),
        links=np.empty((0, 2), np.int64),
        vertex_attributes={},
        object_attributes={
            name: np.concatenate([s.object_columns[name] for s in sources])
            for name in sources[0].object_columns
        },
        object_ids=ids,
        groups=groups,
        root_extra={},
    )
    write_object_columns(io, "0", table, cross)
    if kind != "mesh" and sources[0].cross_columns:
        io.set(f"0/{CROSS_CHUNK_LINK_ATTRIBUTES}/zarr.json", group_metadata({}))
        for name in sources[0].cross_columns:
            values = np.concatenate([s.cross_columns[name] for s in sources])[order]
            tag = {"zv_array": "cross_chunk_link_attribute", "name": name}
            write_global(io, f"0/{CROSS_CHUNK_LINK_ATTRIBUTES}/{name}", values, 0, tag)


def _merged_cross(plan: MergePlan) -> tuple[np.ndarray, np.ndarray]:
    """Every source's cross-chunk pairs in final ids, sorted as the one-shot writer sorts."""
    parts = [
        plan.remap(s, source.cross.reshape(-1)).reshape(-1, 2)
        for s, source in enumerate(plan.sources)
    ]
    pairs = np.concatenate([np.empty((0, 2), np.int64), *parts])
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return pairs[order], order


@contextmanager
def _target(store: StoreLike, has_base: bool, overwrite: bool) -> Iterator[StoreIO]:
    if has_base:
        with modify_target(store, rewritten=f"0/{VERTEX_COUNTS}/c/") as (_, target):
            yield target
        return
    with write_target(store, overwrite=overwrite) as target:
        yield target


def merge_stores(
    store: StoreLike,
    sources: list[Source],
    *,
    has_base: bool,
    overwrite: bool = False,
    progress: Progress | None = None,
    shard_chunks: int | tuple[int, ...] | None = None,
) -> None:
    """Merge ``sources`` (objects in this order) into ``store`` and commit it.

    Parameters
    ----------
    store
        The destination: the store of ``sources[0]`` when ``has_base`` (it is changed, and
        its chunks no other source touches are kept), else a new store.
    sources
        Stores of the same kind and layout; their objects are numbered in this order.
    has_base
        Whether ``sources[0]`` is the store at ``store``.
    overwrite
        Without a base: replace an existing store at ``store``.
    progress
        Called as ``progress("merge", chunks done, chunks)`` after each chunk.
    shard_chunks
        Spatial chunks per shard of the new store (see :func:`plan_merge`); not with a base.

    Raises
    ------
    InvalidInputError
        When the sources do not fit together; nothing has changed then.
    """
    plan = plan_merge(sources, has_base=has_base, shard_chunks=shard_chunks)
    ids, groups = check_globals(plan)
    base_chunks = sorted(plan.index[0], reverse=True) if has_base else []
    others = sorted(c for c in plan.holders if not (has_base and c in plan.index[0]))
    with _target(store, has_base, overwrite) as io:
        merge_chunks(io, plan, [*base_chunks, *others], progress)
        commit_merge(io, plan, ids, groups)


def merge_chunks(
    target: StoreIO,
    plan: MergePlan,
    chunks: list[tuple[int, ...]],
    progress: Progress | None = None,
) -> None:
    """Write the given chunks of the merged store (any subset, in any process).

    A chunk's shards depend only on the plan and the sources, so writers of disjoint sets of
    chunks can run at once, and a chunk written twice gets the same bytes. ``progress`` is
    called as ``progress("merge", chunks done, chunks)`` after each chunk.

    With several chunks per shard (``plan.shard_chunks``) a shard is written whole, once:
    ``chunks`` must then hold every occupied chunk of the shards they touch (they are
    visited shard by shard, whatever their order).
    """
    if plan.shard_chunks:
        grid = np.asarray([plan.grid_index(c) for c in chunks], dtype=np.int64)
        order = shard_major_order(grid.reshape(len(chunks), plan.grid.ndim), plan.shard_chunks)
        chunks = [chunks[j] for j in order.tolist()]
    writer = _Writer(plan, target)
    for done, chunk in enumerate(chunks, 1):
        if plan.merged(chunk):
            writer.merge(chunk)
        else:
            writer.keep(chunk)
        if progress is not None:
            progress("merge", done, len(chunks))
    writer.flush()


def commit_merge(
    io: StoreIO, plan: MergePlan, ids: np.ndarray | None, groups: Groups | None
) -> None:
    """Write the merged store's shared parts once every chunk is written, the root last.

    Array metadata, ``vertex_counts``, the object index, object and group attributes,
    cross-chunk links, level and root metadata (``ids`` and ``groups`` from
    :func:`check_globals`).
    """
    _write_metadata(io, plan)  # after the chunks: a base's reader reads its own metadata
    chunks = np.asarray(list(plan.totals), dtype=np.int64).reshape(-1, plan.grid.ndim)
    counts = np.asarray(list(plan.totals.values()), dtype=np.int64)
    write_counts(io.store, f"0/{VERTEX_COUNTS}", chunks - plan.grid.origin, counts)
    _write_globals(io, plan, ids, groups)
    n_objects = sum(s.n_objects for s in plan.sources)
    vertex_count = int(counts.sum())
    level = LevelMetadata(
        level=0,
        bin_ratio=(1,) * plan.grid.ndim,
        bin_shape=tuple(float(b) for b in plan.grid.bin_shape),
        vertex_count=vertex_count,
        chunk_count=len(plan.totals),
        object_count=n_objects,
    )
    summary = {
        "geometry_type": plan.sources[0].kind,
        "vertex_count": vertex_count,
        "chunk_count": len(plan.totals),
        "object_count": n_objects,
    }
    commit_root(io, plan.root, level, summary)


def for_chunk_writers(plan: MergePlan) -> MergePlan:
    """The plan without what only :func:`commit_merge` reads (smaller to send to workers).

    The sources keep their readers, chunks and layouts but drop their object index, object
    and group attributes and cross-chunk links.
    """
    ndim = plan.grid.ndim
    light = [
        dataclasses.replace(
            source,
            ids=source.ids[:0],
            object_columns={},
            groups=None,
            cross=source.cross[:0],
            cross_columns={},
            refs=(
                np.empty(0, np.int64),
                np.empty((0, ndim), np.int64),
                np.empty(0, np.int64),
            ),
        )
        for source in plan.sources
    ]
    return dataclasses.replace(plan, sources=light)
