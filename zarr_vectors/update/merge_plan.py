"""The plan of a merge of object stores: where every source's chunks, rows and ids go.

:func:`plan_merge` checks that the sources fit together and computes, without writing
anything, the merged grid and root metadata, which sources hold each chunk, the shifts of
rows, fragments and object ids of every source chunk, the final layouts (``N_max``, link
dtype, blob sizes) and the remapping of global vertex ids (spec §9.11).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError, InvalidInputError
from zarr_vectors.format.codecs import counts_blobs
from zarr_vectors.format.commits import COMMIT_KEY
from zarr_vectors.format.fragment_encoding import encode_ranges_ragged
from zarr_vectors.format.fragment_records import encode_fragment_record
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import FRAGMENT_RECORDS, LINK_FRAGMENTS, VERTEX_FRAGMENTS, VERTICES
from zarr_vectors.format.version import is_plain_zarr
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.update.merge_links import link_dtype, rewrites_kept_links
from zarr_vectors.update.object_sources import (
    LINKS0,
    Source,
    SourceArray,
    check_fit,
)
from zarr_vectors.write import WriteOptions, blob_layout, new_store, round_up, shards_of

__all__ = [
    "MergePlan",
    "flat",
    "for_chunk_writers",
    "link_blob",
    "plan_merge",
    "record_blob",
    "set_link_dtype",
    "vertex_blob",
]


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
    (:func:`~zarr_vectors.update.merge_chunks.merge_chunks`), in this process or
    another (it pickles; see :func:`for_chunk_writers`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update import open_source, plan_merge
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
    >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
    >>> plan = plan_merge(sources, has_base=False)
    >>> sorted(plan.holders), [len(s.ids) for s in plan.sources]
    ([(0, 0, 0), (1, 1, 1)], [2, 2])
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
    rebuilt: frozenset[tuple[int, ...]] = frozenset()  # base-only chunks written again
    owners: dict[tuple[tuple[int, ...], int], np.ndarray] = dataclasses.field(
        default_factory=dict
    )  # fragment records (format 1.6): the fragments' objects per (chunk, source)

    @property
    def records(self) -> bool:
        """Whether the stores keep level 0's fragments in ``fragment_records`` (§6.9)."""
        return FRAGMENT_RECORDS in self.sources[0].blobs

    def chunk_owners(self, chunk: tuple[int, ...]) -> np.ndarray:
        """The merged objects of a merged chunk's fragments (stores with records)."""
        parts = [self.owners[(chunk, s)] + self.places[s].object_shift for s in self.holders[chunk]]
        return np.concatenate([np.empty(0, np.int64), *parts]).astype(np.int64)

    def chunk_blobs(self, chunk: tuple[int, ...]) -> dict[str, np.ndarray]:
        """The blob of every blob array of a merged chunk."""
        starts, counts, links = self.chunk_ranges(chunk)
        if self.records:
            return {FRAGMENT_RECORDS: record_blob(counts, links, self.chunk_owners(chunk))}
        return {
            VERTEX_FRAGMENTS: vertex_blob(starts, counts, self.counts_form),
            LINK_FRAGMENTS: link_blob(links, self.counts_form),
        }

    @property
    def n_max(self) -> int:
        return self.arrays[VERTICES].layout.n_max

    @property
    def counts_form(self) -> bool:
        """Whether the merged store's tiling blobs are in the counts form (spec §6.8)."""
        return counts_blobs(self.root.version, self.root.geometry_type)

    def merged(self, chunk: tuple[int, ...]) -> bool:
        """Whether a chunk is written from its sources' rows (not kept as the base holds it).

        Chunks only the base holds are kept, but for those in :attr:`rebuilt`: with several
        chunks per shard, a shard is written whole once one of its chunks changes.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.update import open_source, plan_merge
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> one = zv.WriteOptions(shard_chunks=1)  # a shard per chunk
        >>> zv.write_polylines(folder / "a.zarr", [[[1, 1, 1], [2, 2, 2]]], chunk_shape=8.0,
        ...                    options=one)
        >>> zv.write_polylines(folder / "b.zarr", [[[9, 9, 9], [10, 10, 10]]], chunk_shape=8.0,
        ...                    object_ids=[1])
        >>> plan = plan_merge([open_source(folder / "a.zarr"), open_source(folder / "b.zarr")],
        ...                   has_base=True)
        >>> plan.merged((0, 0, 0)), plan.merged((1, 1, 1))  # the base's own chunk is kept
        (False, True)
        """
        return chunk in self.rebuilt or not (self.has_base and self.holders[chunk] == [0])

    def grid_index(self, chunk: tuple[int, ...], grid: ChunkGrid | None = None) -> np.ndarray:
        """Grid index of an absolute chunk in the final grid (or in ``grid``).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.update import open_source, plan_merge
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
        >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
        >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
        >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
        >>> plan = plan_merge(sources, has_base=False)
        >>> plan.grid_index((1, 1, 1)).tolist(), plan.merged((1, 1, 1))
        ([1, 1, 1], True)
        """
        origin = (grid or self.grid).origin
        return np.asarray(np.asarray(chunk, dtype=np.int64) - origin, dtype=np.int64)

    def rows_of(self, s: int, flat: np.ndarray) -> np.ndarray:
        """Rows of ``sources[s].chunks`` of chunks given by flat index in that source's grid.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.update import open_source, plan_merge
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
        >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
        >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
        >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
        >>> plan = plan_merge(sources, has_base=False)
        >>> sources[1].chunks.tolist(), plan.rows_of(1, np.array([7])).tolist()
        ([[0, 0, 0], [1, 1, 1]], [1])
        """
        place = self.places[s]
        at = np.minimum(np.searchsorted(place.source_flat, flat), max(len(place.order) - 1, 0))
        if flat.size and (not len(place.order) or np.any(place.source_flat[at] != flat)):
            raise CorruptChunkError("a global vertex id or manifest names an empty chunk")
        return place.order[at] if flat.size else np.empty(0, np.int64)

    def remap(self, s: int, gids: np.ndarray) -> np.ndarray:
        """Global vertex ids of source ``s`` in the merged store (spec §9.11).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.update import open_source, plan_merge
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
        >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
        >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
        >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
        >>> plan = plan_merge(sources, has_base=False)
        >>> plan.remap(1, np.array([0, 1])).tolist()  # after source 0's rows of chunk 0
        [13, 14]
        """
        chunk, row = np.divmod(gids, self.sources[s].n_max)
        j = self.rows_of(s, chunk)
        place = self.places[s]
        return np.asarray(
            place.final_flat[j] * self.n_max + place.row_shift[j] + row, dtype=np.int64
        )

    def chunk_ranges(self, chunk: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Merged fragment starts, fragment rows and link counts of a merged chunk.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.update import open_source, plan_merge
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
        >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
        >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
        >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
        >>> plan = plan_merge(sources, has_base=False)
        >>> starts, rows, links = plan.chunk_ranges((0, 0, 0))
        >>> len(starts), int(rows.sum()), int(links.sum())
        (12, 22, 18)
        """
        holding = self.holders[chunk]
        shifts = [int(self.places[s].row_shift[self.index[s][chunk]]) for s in holding]
        return _merged_ranges([self.ranges[(chunk, s)] for s in holding], shifts)

    def identity(self, s: int) -> bool:
        """Whether source ``s``'s global ids stay as they are.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.update import open_source, plan_merge
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
        >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
        >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
        >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
        >>> plan = plan_merge(sources, has_base=False)
        >>> plan.identity(0)
        True
        """
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
    sources: list[Source],
    grid: ChunkGrid,
    bounds: Any,
    shard_chunks: tuple[int, ...],
    has_base: bool,
) -> RootMetadata:
    first = sources[0].root
    dropped = {"software"} if has_base else {"software", COMMIT_KEY}  # a base's is continued
    extra = {k: v for k, v in first.extra.items() if k not in dropped}
    if "swc_compatible" in extra:
        extra["swc_compatible"] = all(bool(s.root.extra.get("swc_compatible")) for s in sources)
    options = WriteOptions(
        axis_names=first.axis_names,
        axis_units=first.axis_units,
        shard_chunks=shard_chunks or 1,
    )
    root = new_store.root_metadata(first.geometry_type, grid, options, bounds, extra)
    if has_base and is_plain_zarr(first.version):
        # a plain base (1.3 or later) keeps its version with its codecs (spec §3.3, §9.0.4)
        return dataclasses.replace(root, version=first.version)
    if sources[0].reader.placed:
        return root
    # a base of format 1.0 or 1.1 keeps shards without place records (§9.0.2): its version
    return dataclasses.replace(root, version=first.version)


def _chunk_maps(sources: list[Source]) -> tuple[list[dict[Any, int]], dict[Any, list[int]]]:
    index = [{tuple(c): j for j, c in enumerate(s.chunks.tolist())} for s in sources]
    holders: dict[tuple[int, ...], list[int]] = {}
    for s, chunks in enumerate(index):
        for chunk in chunks:
            holders.setdefault(chunk, []).append(s)
    return index, holders


def _grid_chunks(
    source: Source, index: dict[Any, int], chunks: list[tuple[int, ...]]
) -> np.ndarray:
    """``(k, D)`` grid indices in ``source`` of ``chunks`` (their positions by ``index``)."""
    return np.asarray(
        [source.chunks[index[c]] - source.grid.origin for c in chunks], dtype=np.int64
    ).reshape(-1, source.grid.ndim)


def _read_ranges(
    sources: list[Source], index: list[dict[Any, int]], wanted: list[list[tuple[int, ...]]]
) -> dict[tuple[tuple[int, ...], int], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(fragment starts, fragment rows, links per fragment)`` of the wanted chunks."""
    out = {}
    for s, chunks in enumerate(wanted):
        source = sources[s]
        grid_chunks = _grid_chunks(source, index[s], chunks)
        frags = source.reader.blob_ranges(VERTEX_FRAGMENTS, grid_chunks)
        links = source.reader.blob_ranges(LINK_FRAGMENTS, grid_chunks)
        for c, (starts, counts), (_, link_counts) in zip(chunks, frags, links, strict=True):
            out[(c, s)] = (starts, counts, link_counts)
    return out


def _read_owners(
    sources: list[Source], index: list[dict[Any, int]], wanted: list[list[tuple[int, ...]]]
) -> dict[tuple[tuple[int, ...], int], np.ndarray]:
    """The objects of the fragments of the wanted chunks, from their fragment records."""
    out = {}
    for s, chunks in enumerate(wanted):
        source = sources[s]
        grid_chunks = _grid_chunks(source, index[s], chunks)
        for c, owners in zip(chunks, source.reader.fragment_owners(grid_chunks), strict=True):
            out[(c, s)] = owners
    return out


def flat(grid_chunks: np.ndarray, grid: ChunkGrid) -> np.ndarray:
    """C-order flat indices of grid indices ``(m, D)`` (spec §9.11).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.format.grid import ChunkGrid
    >>> one = np.ones(2, np.int64)
    >>> grid = ChunkGrid(np.array([8.0, 8.0]), np.array([4.0, 4.0]), 2 * one, 0 * one, [3, 4] * one)
    >>> flat(np.array([[0, 0], [1, 2], [2, 3]]), grid).tolist()
    [0, 6, 11]
    """
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
        own = flat(source.chunks - source.grid.origin, source.grid)
        order = np.argsort(own)
        places.append(
            _Place(
                row_shift,
                frag_shift,
                flat(source.chunks - grid.origin, grid),
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
    blob_bytes = dict.fromkeys(first.blobs, 16)
    for chunk in merged:
        _, counts, links = plan.chunk_ranges(chunk)
        longest["fragment"] = max(longest["fragment"], len(counts))
        longest["link"] = max(longest["link"], int(links.sum()))
        for name, blob in plan.chunk_blobs(chunk).items():
            blob_bytes[name] = max(blob_bytes[name], len(blob))
    n_max = {family: round_up(n, r) for family, n in longest.items()}
    blocks: dict[str, int] = {}  # a base keeps its blob blocks (when long enough)
    if plan.has_base:
        for array in first.arrays.values():
            n_max[array.family] = max(n_max[array.family], array.layout.n_max)
        for name in first.blobs:
            blob_bytes[name] = max(blob_bytes[name], first.blobs[name][0].n_max)
            blocks[name] = first.blobs[name][0].rows_per_block
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
            dataclasses.replace(
                blob_layout(blob_bytes[name], blocks.get(name), first.blobs[name][0].blosc),
                shard_chunks=shards,
                placed=first.arrays[VERTICES].layout.placed,  # the base's format (§9.0.2)
            ),
            first.blobs[name][1],
        )
        for name in first.blobs
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


def vertex_blob(starts: np.ndarray, counts: np.ndarray, counts_form: bool = False) -> np.ndarray:
    """The encoded fragment index (spec §9.4) of fragments at ``starts`` with ``counts`` rows,
    in the counts form of spec §6.8 when ``counts_form`` and they tile.

    Examples
    --------
    >>> import numpy as np
    >>> blob = vertex_blob(np.array([0, 3]), np.array([3, 2]))
    >>> blob.dtype, bytes(blob[:4])
    (dtype('uint8'), b'GFVZ')
    """
    bounds = [0, len(starts)]
    return encode_ranges_ragged(starts, counts, bounds, counts_form=counts_form)[0].copy()


def record_blob(
    vertex_counts: np.ndarray, link_counts: np.ndarray, owners: np.ndarray
) -> np.ndarray:
    """The fragment record (spec §6.9) of a chunk's fragments.

    Examples
    --------
    >>> import numpy as np
    >>> bytes(record_blob(np.array([3, 2]), np.array([2, 1]), np.array([0, 4]))[:4])
    b'RFVZ'
    """
    return np.frombuffer(encode_fragment_record(vertex_counts, link_counts, owners), np.uint8)


def link_blob(counts: np.ndarray, counts_form: bool = False) -> np.ndarray:
    """The encoded fragment index of consecutive link fragments of ``counts`` rows.

    Examples
    --------
    >>> import numpy as np
    >>> blob = link_blob(np.array([2, 1]))
    >>> np.array_equal(blob, vertex_blob(np.array([0, 2]), np.array([2, 1])))
    True
    """
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return vertex_blob(starts, counts, counts_form)


def plan_merge(
    sources: list[Source],
    *,
    has_base: bool,
    check_links: bool = True,
    shard_chunks: int | tuple[int, ...] | None = None,
) -> MergePlan:
    """Check that the sources fit together and plan their merge (nothing is written).

    ``check_links=False`` leaves ``links/0`` int32 without reading any link row: the caller
    then decides with :func:`~zarr_vectors.update.merge_links.wide_links` over every
    merged chunk (when :func:`~zarr_vectors.update.merge_links.links_may_be_wide`)
    and :func:`set_link_dtype`, e.g. in parallel.

    ``shard_chunks`` (as :class:`~zarr_vectors.WriteOptions` takes it; None: the default
    of the first source's ``R``) packs several
    spatial chunks per shard of the merged store (spec §9.0.1, format 1.1). A merge into a
    base keeps the base's shards instead; when they hold several chunks, every chunk of a
    shard that changes is written again (:attr:`MergePlan.rebuilt`), and every chunk of the
    base when its layout changes (grid origin, ``N_max``, links, fragment blobs).

    Raises
    ------
    InvalidInputError
        When the sources do not fit together, the merged grid is too large,
        ``shard_chunks`` does not fit the axes, or it is asked of a merge into a base.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update.object_sources import open_source
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0)
    >>> plan = plan_merge([open_source(folder / n) for n in ("a.zarr", "b.zarr")],
    ...                   has_base=False)
    >>> sorted(plan.holders), plan.grid.shape.tolist()
    ([(0, 0, 0), (1, 1, 1)], [2, 2, 2])
    """
    for other in sources[1:]:
        check_fit(sources[0], other)
    first = sources[0]
    bounds = _bounds(sources)
    ndim = first.grid.ndim
    layout = first.arrays[VERTICES].layout
    asked = WriteOptions(shard_chunks=shard_chunks, rows_per_block=layout.rows_per_block)
    shards = asked.shard_shape(ndim)
    if has_base:
        if shard_chunks is not None and shards:
            raise InvalidInputError("a merge into an existing store keeps the store's shards")
        shards = layout.shard_chunks
    grid = new_store.plan_grid(bounds, 0, first.root.chunk_shape, first.root.base_bin_shape, ndim)
    index, holders = _chunk_maps(sources)
    totals = {
        c: sum(int(sources[s].counts[index[s][c]]) for s in holding)
        for c, holding in holders.items()
    }
    plan = MergePlan(
        sources,
        has_base,
        grid,
        _root(sources, grid, bounds, shards, has_base),
        holders,
        index,
        [],
        {},
        {},
        {},
        totals,
        shards,
    )
    _size(plan, check_links)
    if has_base and shards:
        rebuilt = _rebuilt_chunks(plan)
        if rebuilt:
            plan.rebuilt = rebuilt
            _size(plan, check_links)
    return plan


def _size(plan: MergePlan, check_links: bool) -> None:
    """Read the fragment ranges of the merged chunks and set the final layouts."""
    sources, holders = plan.sources, plan.holders
    merged = [c for c in holders if plan.merged(c)]
    wanted: list[list[tuple[int, ...]]] = [[] for _ in sources]
    for c in merged:
        for s in holders[c]:
            wanted[s].append(c)
    plan.ranges = _read_ranges(sources, plan.index, wanted)
    if plan.records:
        plan.owners = _read_owners(sources, plan.index, wanted)
    plan.places = _places(sources, plan.grid, plan.ranges)
    _final_arrays(plan, merged)
    _check_gid_space(plan.grid, plan.n_max)
    set_link_dtype(plan, link_dtype(plan) if check_links else np.dtype(np.int32))


def _rebuilt_chunks(plan: MergePlan) -> frozenset[tuple[int, ...]]:
    """The base-only chunks a merge into a base with several chunks per shard writes again:
    those sharing a shard with a changed chunk, or all of them when the layout changes."""
    base = plan.sources[0]
    moved = bool(np.any(plan.grid.origin != base.grid.origin))
    resized = any(plan.arrays[p].layout.n_max != a.layout.n_max for p, a in base.arrays.items())
    blobs = any(
        (plan.blobs[n][0].rows_per_block, plan.blobs[n][0].n_max)
        != (base.blobs[n][0].rows_per_block, base.blobs[n][0].n_max)
        for n in base.blobs
    )
    kept = [c for c in plan.index[0] if not plan.merged(c)]
    if moved or resized or blobs or rewrites_kept_links(plan):
        return frozenset(kept)
    changed = [plan.grid_index(c) for c in plan.holders if plan.merged(c)]
    touched = set(shards_of(np.asarray(changed), plan.shard_chunks))
    kept_shards = shards_of(np.asarray([plan.grid_index(c) for c in kept]), plan.shard_chunks)
    return frozenset(c for c, s in zip(kept, kept_shards, strict=True) if s in touched)


def set_link_dtype(plan: MergePlan, dtype: np.dtype[Any]) -> None:
    """Set the dtype of the merged ``links/0`` rows.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update import open_source, plan_merge
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
    >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
    >>> plan = plan_merge(sources, has_base=False, check_links=False)
    >>> set_link_dtype(plan, np.dtype(np.int64))
    >>> plan.arrays["links/0"].layout.dtype
    dtype('int64')
    """
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


def for_chunk_writers(plan: MergePlan) -> MergePlan:
    """The plan without what only :func:`commit_merge` reads (smaller to send to workers).

    The sources keep their readers, chunks and layouts but drop their object index, object
    and group attributes and cross-chunk links.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update import open_source, plan_merge
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
    >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
    >>> plan = plan_merge(sources, has_base=False)
    >>> light = for_chunk_writers(plan)
    >>> [len(s.ids) for s in plan.sources], [len(s.ids) for s in light.sources]
    ([2, 2], [0, 0])
    >>> sorted(light.holders) == sorted(plan.holders)
    True
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
