"""Reading the per-chunk arrays of one level: fragment ranges and row runs of chunks.

:class:`LevelReader` fetches exactly the bytes a read needs — whole shards for whole chunks,
the row blocks covering the requested row runs otherwise (spec §8, §9.0) — and caches the
small per-chunk indexes (fragment ranges, shard indexes) so a repeated query only fetches
rows. The fragment blobs of object levels are also held decoded but unparsed
(:mod:`~zarr_vectors.read.held_blobs`): a read of objects parses only the fragments its
manifests name (:meth:`LevelReader.needed_ranges`).

Every step gathers its requests into one concurrent batch, so on object storage a read costs
a small constant number of round trips whatever the number of chunks and columns: the
level's metadata documents (two batches, at construction), ``vertex_counts`` (one), the
fragment indexes of partly read chunks together with their shard indexes (one), and the rows
of every column (one). Whole chunks need no shard index: their shards are fetched whole.

With several chunks per shard (spec §9.0.1) a shard index is fetched once per shard and
serves every chunk of it, and a chunk's rows are byte ranges of the shard: whole chunks read
their blocks through the index too, and fragment indexes cost one more wave (the blob
shards' indexes, then the chunks' byte ranges).

Row runs of chunks are read by :mod:`~zarr_vectors.read.row_reads` through the
reader's shard index cache (``reader.indexes``,
:class:`~zarr_vectors.read.shard_indexes.ShardIndexes`). Box queries over point clouds
read through the reader's :class:`~zarr_vectors.read.point_reads.PointReads`
(``reader.points``), which decodes the row blocks of many row runs at once.
``vertex_counts`` stored as one plain chunk and the dense fragment blobs of point clouds
are decoded directly too.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from zarr_vectors.errors import (
    CorruptChunkError,
    FragmentIndexError,
    InvalidInputError,
    MetadataError,
)
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.format.grid import ChunkGrid, bins_per_chunk
from zarr_vectors.format.kinds import (
    grid_problem,
    kind_keys_problem,
    kind_nodes_problem,
    link_width_of,
)
from zarr_vectors.format.layout import grid_problem as chunk_grid_problem
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    FRAGMENT_RECORDS,
    GROUPINGS,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_INDEX,
    POINT_CLOUD,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.format.nodes import node_problem, reserved_dtype_problem, vertices_shape_problem
from zarr_vectors.format.version import has_place_records
from zarr_vectors.read import _read_plans as read_plans
from zarr_vectors.read import row_reads
from zarr_vectors.read.blob_batches import (
    FRAGMENT_OWNERS,
    RECORD_NAMES,
    NeededCounts,
    NeededRanges,
    batch_record_ranges,
    decode_blobs,
    needed_counts_ranges,
    needed_record_ranges,
    stored_spans,
)
from zarr_vectors.read.blob_batches import blob_ranges as batch_blob_ranges
from zarr_vectors.read.block_cache import BlockCache
from zarr_vectors.read.held_blobs import HeldBlob, HeldBlobs
from zarr_vectors.read.point_reads import PointReads, RowRuns
from zarr_vectors.read.read_checks import (
    RESTORE,
    PlacementRuns,
    bins_tiling_problem,
    check_placement,
    stored_blocks_problem,
)
from zarr_vectors.read.row_reads import ChunkRows
from zarr_vectors.read.shard_indexes import IndexRequest, ShardIndexes
from zarr_vectors.store.arrays import (
    check_stored_chunks,
    chunk_table_problem,
    nonzero_cells,
    read_region,
    read_whole_many,
)
from zarr_vectors.store.io import ByteRange, StoreIO
from zarr_vectors.store.native_blocks import decode_dense_blob_shards
from zarr_vectors.store.shards import (
    RowLayout,
    ShardIndex,
    decode_plain_chunks,
    plain_chunk_keys,
    shard_key,
)
from zarr_vectors.store.versions import StoreVersion

__all__ = ["ChunkRows", "LevelReader"]

_OBJECT_ARRAYS = (
    f"{LINKS}/0",
    f"{FRAGMENT_ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}",
    LINK_FRAGMENTS,
    FRAGMENT_RECORDS,
    f"{OBJECT_INDEX}/data",
    f"{OBJECT_INDEX}/offsets",
    CROSS_CHUNK_LINKS,
    GROUPINGS,
)
"""Arrays of an object level (relative to the level) whose ``zarr.json`` is read up front."""

_OBJECT_DIRS = (OBJECT_ATTRIBUTES, LINK_ATTRIBUTES, CROSS_CHUNK_LINK_ATTRIBUTES)
"""Groups of an object level whose arrays' ``zarr.json`` are read up front."""

_MISSING = 2**64 - 1

_RUNS_BY_KERNELS_BYTES = 2 * 2**20
"""Rows (bytes, every column) up to which :meth:`LevelReader.read_runs` reads by the box-read
kernels. Measured on 2 busy CPUs, interleaved: a 1% box of 100 skeletons (~0.2 MB of vertex
rows) read its rows in about half the CPU time; a 25% box of 10,000 streamlines (~7 MB) read
them 20-30% slower than through :func:`~zarr_vectors.read.row_reads.read_many`, which copied
runs instead of gathering rows and shares large shards with the helper thread. Since both copy
runs, 16 MiB was measured: 25% mesh boxes 5% less CPU, 1% boxes of 10^5 streamlines up to 10%
more (benchmarks/results/object_boxes.md); kept at 2 MiB."""


def _stored_bins_per_chunk(chunk_shape: np.ndarray, bin_shape: np.ndarray, base: str) -> np.ndarray:
    """:func:`bins_per_chunk` of a stored level: a mismatch is the store's, not the caller's.

    Raises
    ------
    MetadataError
        When the level's ``bin_shape`` does not tile the root's ``chunk_shape``.
    """
    try:
        return bins_per_chunk(chunk_shape, bin_shape)
    except InvalidInputError as exc:
        raise MetadataError(f"level {base} does not match the root metadata: {exc}") from exc


def existing_root(
    io: StoreIO, where: str, *, with_levels: bool = False
) -> tuple[RootMetadata, StoreVersion]:
    """The root metadata of a store a writer is about to extend (an append), and the
    version of the store it describes (the base the append commits onto).

    ``with_levels``: the writer keeps the store's levels of detail up to date (point
    and object appends); otherwise a store with levels is refused.

    Raises
    ------
    InvalidInputError
        When the store is not a complete Zarr Vectors store, or has levels of detail
        (spec §4.3) and ``with_levels`` is False.
    MetadataError
        When its root ``zarr.json`` is not a Zarr v3 group's (an edited ``zarr_format`` or
        ``node_type``), or its attributes are not readable.
    """
    doc, version = io.read_root()
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    if not isinstance(attrs, dict) or "zarr_vectors_version" not in attrs:
        raise InvalidInputError(
            f"{where} is not a complete Zarr Vectors store (its root zarr.json names no "
            "zarr_vectors_version): give the path of a store written by zarr_vectors"
        )
    problem = node_problem(doc, "group")
    if problem is not None:
        raise MetadataError(
            f"{where}: the root zarr.json {problem}: the store's metadata is damaged, so it "
            "is not appended to; run zarr-vectors validate, and restore or rewrite the store"
        )
    root = RootMetadata.from_json(attrs)
    if root.levels and not with_levels:
        raise InvalidInputError(
            f"{where} has levels of detail (format {root.version}); appending does not "
            "update them yet, so it is refused: write all the data again with the kind's "
            "write_* function and levels=..."
        )
    return root, version


class LevelReader:
    """Reads one level of an open store.

    Parameters
    ----------
    io
        The store.
    root
        Parsed root metadata.
    level
        Level number.
    blocks
        The open store's cache of decoded row blocks, shared by its levels and views
        (None: nothing is cached).
    """

    def __init__(
        self, io: StoreIO, root: RootMetadata, level: int = 0, blocks: BlockCache | None = None
    ) -> None:
        self.io = io
        self.blocks = blocks
        self.base = str(level)
        self.kind = root.geometry_type
        self.placed = has_place_records(root.version)  # shards hold place records (§9.0.2)
        self.directed = bool(root.extra.get("is_directed", False))  # graphs (§10.5)
        self._docs: dict[str, Any] = {}
        self._dirs: dict[str, list[str]] = {}
        self._arrays_checked: dict[str, dict[str, Any]] = {}  # path -> its checked zarr.json
        self._load_level_metadata()
        ndim = root.spatial_dims
        group = self._docs[f"{self.base}/zarr.json"]
        problem = node_problem(group, "group")
        if problem is not None:
            raise MetadataError(
                f"{self.base}/zarr.json {problem}: the level group's metadata is damaged; "
                "run zarr-vectors validate, and restore or rewrite the store"
            )
        attrs = group.get("attributes")
        self.meta = LevelMetadata.from_json(attrs, ndim)
        chunk_shape = np.asarray(root.chunk_shape, dtype=np.float64)
        bin_shape = np.asarray(self.meta.bin_shape, dtype=np.float64)
        vmeta = self.array_metadata(f"{self.base}/{VERTICES}")
        problem = vertices_shape_problem(vmeta, ndim)
        if problem is not None:
            raise MetadataError(
                f"{self.base}/{VERTICES}/zarr.json {problem}: the array's metadata was edited "
                "or damaged; run zarr-vectors validate, and restore or rewrite the store"
            )
        grid_shape = np.asarray(vmeta["shape"][:ndim], dtype=np.int64)
        self._check_counts_grid(vmeta["shape"][:ndim])
        self._check_grid_and_kind(root, vmeta["shape"][:ndim])
        self.grid = ChunkGrid(
            chunk_shape,
            bin_shape,
            _stored_bins_per_chunk(chunk_shape, bin_shape, self.base),
            np.asarray(root.chunk_grid_origin, dtype=np.int64),
            grid_shape,
        )
        names = self.children(f"{self.base}/{ATTRIBUTES}")
        self._attribute_names = names
        self.paths = {VERTICES: f"{self.base}/{VERTICES}"} | {
            name: f"{self.base}/{ATTRIBUTES}/{name}" for name in names
        }
        self.array_meta = {name: self.array_metadata(path) for name, path in self.paths.items()}
        self.layouts = {
            k: RowLayout.from_array_metadata(m, ndim, self.paths[k], placed=self.placed)
            for k, m in self.array_meta.items()
        }
        self._blob_layouts: dict[str, RowLayout] = {}
        self._ranges: dict[tuple[str, tuple[int, ...]], tuple[np.ndarray, np.ndarray]] = {}
        self.held = HeldBlobs()  # fragment blobs decoded, not parsed (needed_ranges)
        self._last_blocks: dict[str, tuple[int, np.ndarray]] = {}  # global_rows: path -> chunk
        self.indexes = ShardIndexes()  # shared with restricted views
        self._occupied: tuple[np.ndarray, np.ndarray] | None = None
        self._chunk_rows: dict[tuple[int, ...], int] | None = None
        self._checked_blocks: set[tuple[str, tuple[int, ...]]] = set()  # shared with views
        self._checked_ranges: set[tuple[int, ...]] = set()  # (*chunk, rows): fragment_ranges
        self.points = PointReads(self)  # box reads of point clouds
        self.records = self.kind != POINT_CLOUD and FRAGMENT_RECORDS in self.children(self.base)
        """The level keeps its fragments in ``fragment_records`` (format 1.6, spec §6.9)."""

    # -- metadata documents -------------------------------------------------------------
    def _load_level_metadata(self) -> None:
        """Fetch the documents of the level in two concurrent batches.

        The first holds the level group, its fixed arrays and the listings of its groups of
        arrays; the second the ``zarr.json`` of every array those listings name.
        """
        arrays = [VERTICES, VERTEX_FRAGMENTS, VERTEX_COUNTS]
        dirs = [f"{self.base}/{ATTRIBUTES}"]
        if self.kind != POINT_CLOUD:
            arrays.extend(_OBJECT_ARRAYS)
            dirs.extend(f"{self.base}/{d}" for d in _OBJECT_DIRS)
        self.prefetch(
            [f"{self.base}/zarr.json", *(f"{self.base}/{a}/zarr.json" for a in arrays)],
            [self.base, *dirs],  # the level's own listing: its nodes are checked against its kind
        )
        self.prefetch([f"{d}/{name}/zarr.json" for d in dirs for name in self.children(d)])

    def check_object_count(self) -> int:
        """The level's ``object_count``, checked against the rows of the object index.

        Raises
        ------
        MetadataError
            When ``object_count`` is not the length of ``object_index/offsets`` (an edited
            count used to surface as numpy's IndexError), or is more than the offsets'
            stored chunks hold (a count of 2**40 allocated terabytes).
        """
        count = int(self.meta.object_count or 0)
        path = f"{self.base}/{OBJECT_INDEX}/offsets"
        meta = self.array_metadata(path)
        shape = meta.get("shape")
        if shape != [count]:
            raise MetadataError(
                f"level {self.base} has object_count {count} but {path} has shape {shape!r}: "
                "the level's metadata was edited or damaged; run zarr-vectors validate, and "
                "restore or rewrite the store"
            )
        check_stored_chunks(self.io, path, meta)  # a hostile count: refused unallocated
        return count

    def _check_grid_and_kind(self, root: RootMetadata, grid: list[int]) -> None:
        """Raise MetadataError unless the level's grid is the one the root metadata gives
        (spec §5.2) and its nodes are those of the root's ``geometry_type`` (spec §10.1).

        An edited ``chunk_grid_origin``, ``chunk_shape`` or ``geometry_type`` used to be
        read on, answering queries from a wrong grid or as another kind.
        """
        problem = grid_problem(root.chunk_shape, root.chunk_grid_origin, root.bounding_box, grid)
        if problem is None:
            problem = kind_keys_problem(self.kind, root.extra)
        if problem is None:
            problem = kind_nodes_problem(self.kind, self.children(self.base))
            if problem is not None:
                problem = f"level {self.base} {problem} (geometry_type is {self.kind!r})"
        if problem is None and self.kind != POINT_CLOUD:
            path = f"{self.base}/{LINKS}/0"
            shape = self.array_metadata(path).get("shape")
            width = link_width_of(self.kind)
            if not isinstance(shape, list) or not shape or shape[-1] != width:
                problem = f"{path} has shape {shape!r}, but {self.kind} links have {width} columns"
        if problem is not None:
            raise MetadataError(
                f"{problem}: the root or level metadata was edited or damaged; run "
                "zarr-vectors validate, and restore or rewrite the store"
            )

    def _check_counts_grid(self, grid: list[int]) -> None:
        """Raise MetadataError unless ``vertex_counts`` has the chunk grid of ``vertices``,
        dtype int64 and fill value 0 (a missing chunk then reads as empty chunks)."""
        path = f"{self.base}/{VERTEX_COUNTS}"
        meta = self.array_metadata(path)
        found = (meta.get("shape"), meta.get("data_type"), meta.get("fill_value"))
        if found != (grid, "int64", 0):
            raise MetadataError(
                f"{path} has shape, data_type and fill_value {found!r}, not "
                f"({grid!r}, 'int64', 0) as the {self.base}/{VERTICES} grid and the spec "
                "require: the arrays' metadata was edited or damaged; run zarr-vectors "
                "validate, and restore or rewrite the store"
            )

    def prefetch(self, keys: Iterable[str], dirs: Iterable[str] = ()) -> None:
        """Fetch and cache the JSON documents ``keys`` and the listings ``dirs`` not cached yet.

        Everything missing is requested in one concurrent batch.
        """
        keys = [k for k in dict.fromkeys(keys) if k not in self._docs]
        dirs = [d for d in dict.fromkeys(dirs) if d not in self._dirs]
        if keys or dirs:
            docs, listings = self.io.read_metadata(keys, dirs)
            self._docs.update(zip(keys, docs, strict=True))
            self._dirs.update(zip(dirs, listings, strict=True))

    def document(self, key: str) -> Any:
        """The parsed JSON document at ``key`` (None when missing), cached."""
        self.prefetch([key])
        return self._docs[key]

    def children(self, prefix: str) -> list[str]:
        """Names of the nodes inside the group at ``prefix`` (without ``zarr.json``), cached."""
        self.prefetch((), [prefix])
        return [n for n in self._dirs[prefix] if n != "zarr.json"]

    def array_metadata(self, path: str) -> dict[str, Any]:
        """The parsed ``zarr.json`` of the array at ``path``, cached and checked once.

        Raises
        ------
        MetadataError
            When the array's metadata is missing or not an array's, or when its shape or
            chunk grid cannot be read (a chunk length of 0 divided by zero before).
        """
        checked = self._arrays_checked.get(path)
        if checked is not None:  # a cached document is never replaced: checked once
            return checked
        meta: dict[str, Any] | None = self.document(f"{path}/zarr.json")
        if meta is None:
            raise MetadataError(f"{path}: array metadata (zarr.json) is missing")
        problem = node_problem(meta, "array") or chunk_grid_problem(meta)
        parts = path.split("/")
        if problem is None and len(parts) == 3:  # N/family/name
            problem = reserved_dtype_problem(parts[1], parts[2], self.kind, meta.get("data_type"))
        if problem is not None:
            raise MetadataError(
                f"{path}/zarr.json {problem}: the array's metadata is damaged; "
                "run zarr-vectors validate, and restore or rewrite the store"
            )
        self._arrays_checked[path] = meta
        return meta

    def read_globals(self, paths: Sequence[str]) -> list[np.ndarray]:
        """Whole arrays at ``paths`` (relative to the level), all read concurrently.

        Raises
        ------
        CorruptChunkError
            When an array is missing or a chunk cannot be decoded.
        """
        full = [f"{self.base}/{p}" for p in paths]
        self.prefetch(f"{p}/zarr.json" for p in full)
        metas = [self._docs[f"{p}/zarr.json"] for p in full]
        for path, meta in zip(full, metas, strict=True):
            if meta is None:
                raise CorruptChunkError(f"{path}: cannot read the array (no array metadata)")
            self.array_metadata(path)  # MetadataError when the document is not an array's
        found = self._plain_arrays(full, metas)
        rest = [(p, m) for p, m, f in zip(full, metas, found, strict=True) if f is None]
        for path, meta in rest:
            self._check_chunk_table(path, meta, None)
        others = iter(read_whole_many(self.io.store, rest))
        return [next(others) if f is None else f for f in found]

    def global_rows(self, path: str, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` of the global array at ``path`` (relative to the level),
        only the chunks holding them read; the last chunk read of each array is kept (the
        next rows asked usually follow in it), nothing else.

        Raises
        ------
        CorruptChunkError
            When a chunk cannot be decoded.
        """
        full = f"{self.base}/{path}"
        meta = self.array_metadata(full)  # MetadataError when the document is not an array's
        rows = int(meta["chunk_grid"]["configuration"]["chunk_shape"][0])
        size = int(meta["shape"][0])
        if stop <= start:
            return read_region(self.io.store, full, (start,), (start,))
        parts = []
        for j in range(start // rows, -(-stop // rows)):
            kept = self._last_blocks.get(full)
            if kept is None or kept[0] != j:
                block = read_region(self.io.store, full, (j * rows,), (min(size, (j + 1) * rows),))
                kept = self._last_blocks[full] = (j, block)
            parts.append(kept[1][max(start - j * rows, 0) : stop - j * rows])
        return np.concatenate(parts)

    def _check_chunk_table(
        self, path: str, meta: dict[str, Any], known: list[bytes] | None
    ) -> None:
        """Raise CorruptChunkError unless the chunks of a global array are those its chunk
        table lists (format 1.2, spec §9.8.1): every one stored, each at its own key.

        A lost chunk read as fill values (zeros for object attributes, empty groups) and a
        chunk file swapped with another read as the other rows' values, silently.
        """
        if not self.placed or path.endswith(f"/{VERTEX_COUNTS}"):  # counts: §9.3 totals
            return
        problem = chunk_table_problem(self.io, path, meta, known)
        if problem is not None:
            raise CorruptChunkError(f"{path}: {problem}")

    def _plain_arrays(
        self, paths: list[str], metas: list[dict[str, Any]]
    ) -> list[np.ndarray | None]:
        """The plain arrays (one chunk, or chunks along the first axis only: the usual
        layouts of global arrays) fetched in one batch and decoded directly; None for the
        others and for an array with a missing chunk (fill values), which zarr-python reads."""
        keys = [plain_chunk_keys(meta, path) or [] for path, meta in zip(paths, metas, strict=True)]
        raws = iter(self.io.get_many([(key, None) for chunk_keys in keys for key in chunk_keys]))
        out: list[np.ndarray | None] = []
        for chunk_keys, meta, path in zip(keys, metas, paths, strict=True):
            found = [next(raws) for _ in chunk_keys]
            stored = [raw for raw in found if raw is not None]
            if not chunk_keys or len(stored) < len(found):
                out.append(None)
                continue
            self._check_chunk_table(path, meta, stored)
            out.append(decode_plain_chunks(meta, stored, chunk_keys))
        return out

    @property
    def attribute_names(self) -> list[str]:
        """Per-vertex attribute names, without the reserved object id column."""
        return [k for k in self._attribute_names if k != OBJECT_ID_ATTRIBUTE]

    @property
    def has_object_ids(self) -> bool:
        """Whether vertices carry the reserved per-vertex object id column (point clouds)."""
        return OBJECT_ID_ATTRIBUTE in self._attribute_names

    @property
    def vertex_columns(self) -> list[str]:
        """Columns with one row per vertex: ``"vertices"`` and every per-vertex attribute."""
        return [VERTICES, *self._attribute_names]

    def column_spec(self, name: str) -> tuple[np.dtype[Any], tuple[int, ...]]:
        """dtype and row shape of a column (``"vertices"`` or an attribute name)."""
        meta = self.array_meta[name]
        return np.dtype(meta["data_type"]), tuple(meta["shape"][self.grid.ndim + 1 :])

    # -- chunk occupancy ---------------------------------------------------------------
    def occupied_chunks(
        self, first: np.ndarray | None, stop: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Occupied chunks with index in ``[first, stop)`` (C order) and their row counts.

        The non-zero cells of ``vertex_counts`` (spec §9.3) are read once and cached. With
        ``first`` and ``stop`` None, every occupied chunk (the cached arrays: do not modify).
        """
        coords, counts = self._occupancy()
        if first is None or stop is None:
            return coords, counts
        keep = np.all((coords >= first) & (coords < stop), axis=1)
        return coords[keep], counts[keep]

    def _occupancy(self) -> tuple[np.ndarray, np.ndarray]:
        if self._occupied is None:
            path = f"{self.base}/{VERTEX_COUNTS}"
            meta = self._docs.get(f"{path}/zarr.json")
            meta = meta if isinstance(meta, dict) else None
            found = None if meta is None else self._plain_cells(path, meta)
            coords, counts = nonzero_cells(self.io, path, meta) if found is None else found
            if np.any(counts < 0):
                raise CorruptChunkError(f"{path}: negative row count")
            self._check_totals(path, counts)
            self._occupied = (coords, counts)
        return self._occupied

    def _check_totals(self, path: str, counts: np.ndarray) -> None:
        """Raise unless the non-zero ``counts`` add up to the level's ``vertex_count`` and
        number its ``chunk_count`` (spec §4).

        Raises
        ------
        CorruptChunkError
            When they do not: a lost chunk of ``vertex_counts`` reads as 0 (its fill value),
            which would silently drop the chunks it counted.
        """
        rows, chunks = int(counts.sum()), int(counts.shape[0])
        if rows != self.meta.vertex_count or chunks != self.meta.chunk_count:
            raise CorruptChunkError(
                f"{path} counts {rows} vertices in {chunks} chunks, but the level metadata "
                f"says vertex_count {self.meta.vertex_count} and chunk_count "
                f"{self.meta.chunk_count}: a chunk of vertex_counts is missing or damaged, or "
                "the metadata was edited; run zarr-vectors validate, and restore or rewrite "
                "the store"
            )

    def _plain_cells(self, path: str, meta: dict[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
        """The non-zero cells of a ``vertex_counts`` stored as a plain array (one chunk, the
        usual case), decoded directly; None when it is stored otherwise or a chunk is missing."""
        cells = self._plain_arrays([path], [meta])[0]
        if cells is None:
            return None
        coords = np.argwhere(cells != 0)
        return coords, cells[tuple(coords.T)].astype(np.int64)

    def restricted(self, chunks: np.ndarray) -> LevelReader:
        """A view of this reader that sees only the occupied chunks among ``chunks``.

        Queries on the view read and return only the vertices of those chunks; the view
        shares this reader's metadata and index caches.

        Parameters
        ----------
        chunks
            ``(k, D)`` chunk indices (any order; unoccupied ones are ignored).
        """
        coords, counts = self._occupancy()
        self._chunk_row_table()  # built before copying, so the view shares it
        shape = tuple(int(g) for g in self.grid.shape)
        chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, self.grid.ndim)
        inside = np.all((chunks >= 0) & (chunks < self.grid.shape), axis=1)
        allowed = np.ravel_multi_index(tuple(chunks[inside].T), shape)
        keep = np.isin(np.ravel_multi_index(tuple(coords.T), shape), allowed)
        view = copy.copy(self)
        view._occupied = (coords[keep], counts[keep])
        view.points = self.points.for_view(view)
        return view

    def _rows_of_chunk(self, chunk: tuple[int, ...]) -> int | None:
        """The row count of an occupied chunk, when ``vertex_counts`` has been read."""
        return None if self._occupied is None else self._chunk_row_table().get(chunk)

    def _chunk_row_table(self) -> dict[tuple[int, ...], int]:
        """Row count of every occupied chunk, by chunk index (built once)."""
        if self._chunk_rows is None:
            coords, counts = self._occupancy()
            self._chunk_rows = dict(zip(map(tuple, coords.tolist()), counts.tolist(), strict=True))
        return self._chunk_rows

    # -- fragment ranges -------------------------------------------------------------
    def fragment_ranges(
        self,
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
        for chunk, (starts, sizes), n in zip(chunks.tolist(), out, counts.tolist(), strict=True):
            if (key := (*chunk, n)) in checked:  # its cached ranges passed already
                continue
            extent = int((starts + sizes).max(initial=0))
            if extent != int(n) or int(sizes.sum()) != int(n):
                raise CorruptChunkError(
                    f"chunk {tuple(chunk)}: fragment index covers {extent} rows, "
                    f"vertex_counts says {n}"
                )
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
            checked.add(key)
        return out

    def blob_ranges(
        self,
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
        indexed = (
            [k[1] for k in keys] if index_chunks is None else read_plans.chunk_keys(index_chunks)
        )
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

    def _first_wave(
        self,
        path: str,
        missing: list[tuple[int, ...]],
        index_columns: Sequence[str],
        indexed: list[tuple[int, ...]],
    ) -> list[bytes | None]:
        """Fetch in one batch the blobs of the ``missing`` chunks in the blob array at
        ``path`` when each has its own shard, else their shard indexes, with the shard
        indexes of ``index_columns`` for the ``indexed`` chunks (cached); the blobs
        fetched (none for shared shards: :meth:`_sharded_blobs` fetches them)."""
        layout = self._blob_layout(path) if missing else None  # fail before fetching shards
        sharded = layout is not None and layout.chunks_per_shard > 1
        blob_requests: list[tuple[str, ByteRange]] = [
            (shard_key(path, np.asarray(chunk), 0), None) for chunk in missing if not sharded
        ]
        index_requests = [
            request
            for column in index_columns
            if (column_layout := self.layouts.get(column)) is not None
            for request in self.indexes.chunk_requests(self.paths[column], column_layout, indexed)
        ]
        if sharded and layout is not None:
            index_requests += self.indexes.chunk_requests(path, layout, missing)
        raws = self.io.get_many(blob_requests + [(r[1], r[2]) for r in index_requests])
        self.indexes.keep(index_requests, raws[len(blob_requests) :], strict=False)
        return raws[: len(blob_requests)]

    def _fetch_ranges(
        self,
        name: str,
        missing: list[tuple[int, ...]],
        index_columns: Sequence[str],
        indexed: list[tuple[int, ...]],
        dense_fragments: int | None,
    ) -> None:
        """Fetch and cache the fragment ranges of a point cloud's blob array ``name``
        for the ``missing`` chunks (see :meth:`blob_ranges`)."""
        path = f"{self.base}/{name}"
        found = self._first_wave(path, missing, index_columns, indexed)
        if not missing:
            return
        layout = self._blob_layout(path)
        if layout.chunks_per_shard > 1:  # few chunks a box: chunk by chunk
            for chunk, (where, blob) in zip(
                missing, self._listed_blobs(path, layout, missing), strict=True
            ):
                self._ranges[(name, chunk)] = _blob_ranges(blob, where)
            return
        shard_keys = [shard_key(path, np.asarray(chunk), 0) for chunk in missing]
        dense: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(found)
        if dense_fragments is not None:
            dense = decode_dense_blob_shards(layout, found, shard_keys, dense_fragments)
        for chunk, where, raw, ranges in zip(missing, shard_keys, found, dense, strict=True):
            if ranges is None:
                ranges = _blob_ranges(self._decode_chunk_blob(path, where, raw), where)
            self._ranges[(name, chunk)] = ranges

    def _fetch_held(
        self,
        name: str,
        chunks: list[tuple[int, ...]],
        index_columns: Sequence[str],
        indexed: list[tuple[int, ...]],
        with_missing: Sequence[str] = (),
    ) -> None:
        """Fetch the blobs of array ``name`` of the ``chunks`` not held yet and hold them
        decoded from their codecs but not parsed (:attr:`held`), the shard indexes of
        ``index_columns`` for the ``indexed`` chunks fetched in the same batch, and those
        of ``with_missing`` too when some blob is fetched (a repeated read plans no more
        than before)."""
        missing = self.held.missing(name, chunks)
        path = f"{self.base}/{name}"
        if missing:
            index_columns = [*index_columns, *with_missing]
        found = self._first_wave(path, missing, index_columns, indexed)
        if not missing:
            return
        layout = self._blob_layout(path)
        if layout.chunks_per_shard == 1:
            keys = [shard_key(path, np.asarray(chunk), 0) for chunk in missing]
            listed = [
                (where, self._decode_chunk_blob(path, where, raw))
                for where, raw in zip(keys, found, strict=True)
            ]
        else:
            batch = self._sharded_blobs(path, layout, missing)
            if batch is not None:
                blobs, bounds, keys = batch
                edges = bounds.tolist()
                held = [HeldBlob(blobs, edges[j], edges[j + 1], k) for j, k in enumerate(keys)]
                self.held.keep(name, missing, held)
                return
            listed = self._listed_blobs(path, layout, missing)
        self.held.keep(name, missing, [HeldBlob(b, 0, b.shape[0], k) for k, b in listed])

    def _decode_held(self, name: str, chunks: list[tuple[int, ...]]) -> None:
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
        found = batch_blob_ranges(buffer, begins, ends, keys, _blob_ranges)
        for chunk, ranges in zip(chunks, found, strict=True):
            self._ranges[(name, chunk)] = ranges

    def needed_ranges(
        self,
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

    def _link_columns(self) -> list[str]:
        """The columns of link rows made readable (:meth:`add_column`): ``links/0`` and
        the link attributes."""
        families = (f"{self.base}/{LINKS}/", f"{self.base}/{LINK_ATTRIBUTES}/")
        return [name for name, path in self.paths.items() if path.startswith(families)]

    def _needed_counts(
        self,
        name: str,
        keys: list[tuple[int, ...]],
        need: tuple[np.ndarray, np.ndarray],
        index_columns: Sequence[str],
    ) -> NeededCounts:
        """:func:`~zarr_vectors.read.blob_batches.needed_counts_ranges` of the blobs of
        array ``name`` of the chunks ``keys`` (fetched when not held)."""
        self._hold_blobs(name, keys, index_columns)
        buffer, begins, ends, where = self.held.joined(name, keys)
        return needed_counts_ranges(buffer, begins, ends, need, where, _blob_ranges)

    def _hold_blobs(
        self,
        name: str,
        keys: list[tuple[int, ...]],
        index_columns: Sequence[str],
        with_missing: Sequence[str] = (),
    ) -> None:
        """Hold the blobs of array ``name`` of the chunks ``keys``, with the shard indexes
        of ``index_columns`` for them, and of ``with_missing`` when a blob is fetched
        (:meth:`_fetch_held`); nothing is planned when every blob is held and the row reads
        hold those indexes already (``points.indexed``, as a repeated read finds them)."""
        if not self.held.missing(name, keys) and self._indexes_held(index_columns, keys):
            return
        self._fetch_held(name, keys, index_columns, keys, with_missing)

    def _indexes_held(self, columns: Sequence[str], chunks: list[tuple[int, ...]]) -> bool:
        """Whether the row reads hold the shard indexes of ``columns`` for every chunk of
        ``chunks`` already (``points.indexed``: learned together, as a repeated read of
        these columns finds them), so that no fetch of them need be planned."""
        if not columns:
            return True
        indexed = self.points.indexed
        names = tuple(columns)
        return all((chunk, *names) in indexed for chunk in chunks)

    def fragment_owners(self, chunks: np.ndarray) -> list[np.ndarray]:
        """The owner object of every fragment of each chunk, from the chunks' fragment
        records (cached; only for a level with :attr:`records`)."""
        return [owners for owners, _ in self.blob_ranges(FRAGMENT_OWNERS, chunks)]

    def _stored_blob(self, name: str) -> str:
        """The blob array holding what ``name`` asks for: ``fragment_records`` for the
        vertex and link fragments and the owners of a level with records."""
        return FRAGMENT_RECORDS if self.records and name in RECORD_NAMES else name

    def cached_ranges(self, name: str, chunk: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The fragment ranges of blob array ``name`` in ``chunk`` that :meth:`blob_ranges`
        fetched (a KeyError if it did not)."""
        return self._ranges[(name, chunk)]

    def _sharded_blobs(
        self, path: str, layout: RowLayout, chunks: list[tuple[int, ...]]
    ) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
        """The blobs of chunks in shared shards, fetched in one batch of byte ranges and
        decoded together (:func:`~zarr_vectors.read.blob_batches.decode_blobs`): the bytes,
        each chunk's bounds in them and its shard key; None when some chunk does not store
        exactly its first blocks (:meth:`_listed_blobs` then names the fault)."""
        keys, entries = self.indexes.entry_arrays(path, layout, np.asarray(chunks, np.int64))
        spans = stored_spans(entries)
        if spans is None:
            return None
        requests: list[tuple[str, ByteRange]] = [
            (key, (start, end))
            for key, start, end in zip(keys, spans.start.tolist(), spans.end.tolist(), strict=True)
            if end
        ]
        fetched = iter(self._get_grouped(requests))
        payloads = []
        for key, end in zip(keys, spans.end.tolist(), strict=True):
            raw = next(fetched) if end else b""
            if raw is None:
                raise CorruptChunkError(f"{key}: shard disappeared while reading")
            payloads.append(raw)
        blobs, bounds = decode_blobs(layout, keys, entries, spans, payloads)
        return blobs, bounds, keys

    def _listed_blobs(
        self, path: str, layout: RowLayout, chunks: list[tuple[int, ...]]
    ) -> list[tuple[str, np.ndarray]]:
        """The shard key and decoded blob of every chunk in shared shards, fetched in one
        batch of byte ranges, planned chunk by chunk (see :meth:`_sharded_blobs`)."""
        requests: list[tuple[str, ByteRange]] = []
        found: list[tuple[str, list[list[int]], tuple[int, int]]] = []
        for chunk in chunks:
            key, entries = self.indexes.entries(path, layout, chunk, "fragment index")
            stored = sum(1 for e in entries if e[0] != _MISSING)
            span = layout.block_span(entries, 0, stored, key) if stored else (0, 0)
            found.append((key, entries, span))
            requests.append((key, span))
        fetched = iter(
            self._get_grouped([r for r, f in zip(requests, found, strict=True) if f[2][1]])
        )
        payloads = []
        for key, _entries, span in found:
            raw = next(fetched) if span[1] else b""
            if raw is None:
                raise CorruptChunkError(f"{key}: shard disappeared while reading")
            payloads.append(raw)
        blobs = _decode_blobs(layout, found, payloads)
        return [(key, blob) for (key, _entries, _span), blob in zip(found, blobs, strict=True)]

    def _get_grouped(self, requests: list[tuple[str, ByteRange]]) -> list[bytes | None]:
        """:meth:`StoreIO.get_many` of ``requests``, asked key by key: a shard of several
        chunks (spec §9.0.1) is opened once for all its chunks' ranges (locally), or its
        nearby ranges fetched together (object storage)."""
        by_key: dict[str, list[int]] = {}
        for i, (key, _) in enumerate(requests):
            by_key.setdefault(key, []).append(i)
        found = self.io.get_ranges(
            [(key, [requests[i][1] for i in at]) for key, at in by_key.items()]
        )
        out: list[bytes | None] = [None] * len(requests)
        for at, parts in zip(by_key.values(), found, strict=True):
            for i, part in zip(at, parts or (), strict=False):  # None: the shard is missing
                out[i] = part
        return out

    def _decode_chunk_blob(self, path: str, where: str, raw: bytes | None) -> np.ndarray:
        if raw is None:
            raise CorruptChunkError(f"{where}: fragment index of an occupied chunk is missing")
        layout = self._blob_layout(path)
        return self._decode_blob(layout, where, layout.decode_index(raw, where), raw, 0)

    @staticmethod
    def _decode_blob(
        layout: RowLayout, where: str, entries: ShardIndex, payload: bytes, base: int
    ) -> np.ndarray:
        """A chunk's blob (stored blocks decoded), from its entries and its blocks' bytes."""
        index = np.asarray(entries, dtype=np.uint64).reshape(-1, 2)
        present = index[:, 0] != np.uint64(_MISSING)
        stored = int(np.count_nonzero(present))
        r = layout.rows_per_block
        blob = np.zeros(stored * r, dtype=np.uint8)
        if stored and not present[:stored].all():
            layout.block_span(entries, 0, stored, where)  # raises: a block is missing
        for b, (offset, nbytes) in enumerate(index[:stored].tolist()):
            raw = payload[offset - base : offset - base + nbytes]
            layout.decode_block_into(raw, b, where, blob[b * r : (b + 1) * r])
        return blob

    def _blob_layout(self, path: str) -> RowLayout:
        if path not in self._blob_layouts:
            meta = self.array_metadata(path)
            layout = RowLayout.from_array_metadata(meta, self.grid.ndim, path, placed=self.placed)
            if layout is None:
                raise MetadataError(f"{path}: unsupported codec pipeline for fragment blobs")
            self._blob_layouts[path] = layout
        return self._blob_layouts[path]

    def trim_caches(self, limit: int) -> None:
        """Keep at most about ``limit`` bytes of cached fragment ranges and shard indexes
        (the indexes at most half), forgetting the least recently used first.

        A pass over a whole level (``zv.build_levels`` reads level 0 batch by batch) calls
        it after each batch, so what it holds stays bounded whatever the size of the
        level, while the ranges and indexes that fit are decoded once, not once per batch;
        anything forgotten is fetched again when asked. Metadata, the sets of blocks and
        ranges already checked and the box reads' block tables (a few numbers per chunk)
        stay cached.
        """
        if self.indexes.trim(limit // 2):
            self.points.indexed.clear()  # it names chunks whose shard indexes are held
        self.trim_ranges(limit - self.indexes.held())

    def has_ranges(self, name: str, chunk: tuple[int, ...]) -> bool:
        """Whether the fragment ranges of blob array ``name`` in ``chunk`` are cached."""
        return (name, chunk) in self._ranges

    def trim_ranges(self, limit: int) -> None:
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

    def add_column(self, name: str, path: str) -> None:
        """Make the per-chunk row array at ``path`` readable as column ``name``."""
        if name not in self.paths:  # checked first: a refused array leaves no trace
            meta = self.array_metadata(path)
            layout = RowLayout.from_array_metadata(meta, self.grid.ndim, path, placed=self.placed)
            self.paths[name], self.array_meta[name], self.layouts[name] = path, meta, layout

    # -- shard indexes -----------------------------------------------------------------
    def fetch_indexes(self, wanted: Iterable[tuple[str, tuple[int, ...]]]) -> None:
        """Fetch and cache, in one batch, the shard indexes of (column, chunk) pairs not
        cached yet.

        Raises
        ------
        CorruptChunkError
            When a shard is missing.
        """
        self._fetch_strictly(self._index_requests(wanted))

    def fetch_chunk_indexes(self, names: Sequence[str], chunks: list[tuple[int, ...]]) -> None:
        """:meth:`fetch_indexes` of every column of ``names`` for every chunk of ``chunks``,
        planned column by column (:meth:`ShardIndexes.chunk_requests`: one request per
        shard, found by array operations for many chunks), not pair by pair.

        Raises
        ------
        CorruptChunkError
            When a shard is missing.
        """
        self._fetch_strictly(
            [
                request
                for name in names
                if (layout := self.layouts.get(name)) is not None
                for request in self.indexes.chunk_requests(self.paths[name], layout, chunks)
            ]
        )

    def _fetch_strictly(self, requests: list[IndexRequest]) -> None:
        """Fetch and cache the shard indexes ``requests`` in one batch; a missing shard
        raises CorruptChunkError."""
        if requests:
            tails = self.io.get_many([(r[1], r[2]) for r in requests])
            self.indexes.keep(requests, tails, strict=True)

    def _index_requests(self, wanted: Iterable[tuple[str, tuple[int, ...]]]) -> list[IndexRequest]:
        """The shard indexes of (column, chunk) pairs that are not cached, one per shard."""
        return self.indexes.requests(
            (self.paths[column], layout, chunk)
            for column, chunk in wanted
            if (layout := self.layouts.get(column)) is not None
        )

    # -- rows --------------------------------------------------------------------------
    def read_rows(self, name: str, wanted: list[ChunkRows]) -> np.ndarray:
        """Rows of column ``name`` for every request, runs and requests concatenated in order."""
        return self.read_columns([name], wanted)[0]

    def read_columns(self, names: list[str], wanted: list[ChunkRows]) -> list[np.ndarray]:
        """Rows of each column of ``names`` for every request (see :meth:`read_rows`)."""
        return self.read_many([(name, wanted) for name in names])

    def read_many(self, reads: list[tuple[str, list[ChunkRows]]]) -> list[np.ndarray]:
        """Rows of several columns, each for its own ``(column name, requests)`` pair,
        fetched together: :func:`zarr_vectors.read.row_reads.read_many`.

        Raises
        ------
        CorruptChunkError
            When a ``vertices`` row read does not lie in its chunk, or in its bin where a
            point cloud's per-bin ranges of the chunk are known (:meth:`check_vertices`).
        """
        found = row_reads.read_many(self, reads)
        for (name, wanted), rows in zip(reads, found, strict=True):
            if name == VERTICES:
                self.check_vertices(rows, wanted)
        return found

    def read_runs(
        self,
        names: list[str],
        runs: RowRuns,
        rows: np.ndarray | None = None,
        *,
        turns: bool = True,
    ) -> list[np.ndarray]:
        """Rows of the columns ``names`` for row runs of many chunks, runs concatenated in
        order (what :meth:`read_columns` returns for the same requests).

        Up to :data:`_RUNS_BY_KERNELS_BYTES` of rows are planned and decoded by kernels
        for all chunks at once, with the tables of the point-cloud box reads
        (:meth:`PointReads.read_selected`: the chunks' shard index entries, kept by chunk
        position), instead of per chunk and block in Python; the ``vertices`` rows are
        checked as :meth:`read_many` checks them. Larger reads, and columns in other
        layouts, are read by :meth:`read_many`.

        Parameters
        ----------
        names
            Columns among :attr:`vertex_columns`, or (with ``rows``) other per-chunk row
            arrays of one row count, such as ``links/0`` and the link attributes.
        runs
            Non-empty row runs, ascending and non-overlapping within a chunk, chunk by
            chunk (every chunk occupied).
        rows
            The row count of every chunk of ``runs`` in these columns; None for columns
            of one row per vertex.
        turns
            Whether a large local read may be shared in turns with the helper thread
            (:meth:`PointReads.read_selected`).

        Raises
        ------
        CorruptChunkError
            When a shard or a row block is missing, a block does not decode, or a
            ``vertices`` row does not lie in its chunk.
        """
        lengths = runs.stop - runs.start
        if not self._runs_by_kernels(names, runs, rows):
            at = np.searchsorted(runs.chunk, np.arange(len(runs.chunks) + 1)).tolist()
            joined = np.stack([runs.start, runs.stop], axis=1)
            wanted = [
                ChunkRows(chunk, joined[at[k] : at[k + 1]])
                for k, chunk in enumerate(runs.chunks)
                if at[k + 1] > at[k]
            ]
            return self.read_many([(name, wanted) for name in names])
        found = self.points.read_selected(names, runs, None, rows, turns=turns)
        if VERTICES in names:
            coords = (
                np.asarray(runs.chunks, dtype=np.int64).reshape(-1, self.grid.ndim)
                if runs.where is None
                else self.occupied_chunks(None, None)[0][runs.where]
            )
            placed = PlacementRuns(coords, runs.chunk, runs.start, lengths)
            where = self.paths[VERTICES]
            check_placement(found[names.index(VERTICES)], placed, self.grid, None, where)
        return found

    def _runs_by_kernels(self, names: list[str], runs: RowRuns, rows: np.ndarray | None) -> bool:
        """Whether :meth:`read_runs` of ``names`` and ``runs`` is planned by kernels (and
        so read through the open store's cache of decoded blocks, when it has one)."""
        layouts = [self.layouts.get(name) for name in names]
        row_bytes = sum(layout.row_nbytes for layout in layouts if layout is not None)
        return (
            0 < int((runs.stop - runs.start).sum()) * row_bytes <= _RUNS_BY_KERNELS_BYTES
            and self.kind != POINT_CLOUD  # point clouds: read_many checks bins too
            and (rows is not None or all(name in self.vertex_columns for name in names))
            and self.points.can_select(names)
        )

    def runs_through_cache(self, names: list[str], runs: RowRuns) -> bool:
        """Whether :meth:`read_runs` of the vertex columns ``names`` for ``runs`` reads
        their row blocks through the open store's cache of decoded blocks (so a later read
        of the same blocks finds them decoded, within the cache's budget)."""
        return self._runs_by_kernels(names, runs, None) and self.points.through_cache(names, runs)

    def check_vertices(self, positions: np.ndarray, wanted: list[ChunkRows]) -> None:
        """Raise unless the ``vertices`` rows read for ``wanted`` lie in their chunks (spec
        §5.1) and, for a point cloud's chunks whose per-bin ranges were read, in their bins
        (§5.3).

        Raises
        ------
        CorruptChunkError
            Naming the first chunk and row that does not (:func:`check_placement`).
        """
        runs = PlacementRuns.of_requests(
            [w.chunk for w in wanted], [w.runs for w in wanted], self.grid.ndim
        )
        bins = None
        if self.kind == POINT_CLOUD:
            found = [self._ranges.get((VERTEX_FRAGMENTS, w.chunk)) for w in wanted]
            known = [i for i, f in enumerate(found) if f is not None]
            if known:
                runs.table_row[known] = np.arange(len(known), dtype=np.int64)
                bins = (
                    np.stack([found[i][0] for i in known]),  # type: ignore[index]
                    np.stack([found[i][1] for i in known]),  # type: ignore[index]
                )
        check_placement(positions, runs, self.grid, bins, self.paths[VERTICES])

    def check_stored_blocks(self, name: str, chunk: tuple[int, ...], entries: ShardIndex) -> None:
        """Raise if the shard index ``entries`` of ``chunk`` in column ``name`` store a row
        block past those of the chunk's row count, when it is known (spec §9.0).

        Checked (once per chunk and column) where a read takes every row of a chunk from its
        row count (whole chunks, the chunks a box covers); reads of row runs take them from
        fragment indexes, whose row extent is checked against the count
        (:meth:`fragment_ranges`).

        Raises
        ------
        CorruptChunkError
            When the shard stores more blocks than the row count needs: the shard is not
            the chunk's, or its count (``vertex_counts``, a fragment index) was edited down.
        """
        path = self.paths[name]
        if (path, chunk) in self._checked_blocks:
            return
        rows = self.known_rows(name, chunk)
        layout = self.layouts.get(name)
        if rows is None or layout is None:
            return
        problem = stored_blocks_problem(entries, rows, layout.rows_per_block)
        if problem is not None:
            raise CorruptChunkError(f"{path}: the shard of chunk {chunk} {problem}: {RESTORE}")
        self._checked_blocks.add((path, chunk))

    def known_rows(self, name: str, chunk: tuple[int, ...]) -> int | None:
        """Rows of ``chunk`` in column ``name`` when already known (from ``vertex_counts``
        or a cached fragment index), else None."""
        if name == VERTICES or name in self._attribute_names:
            return self._rows_of_chunk(chunk)
        path = self.paths[name]
        if path.startswith(f"{self.base}/{FRAGMENT_ATTRIBUTES}/"):
            fragments = self._ranges.get((VERTEX_FRAGMENTS, chunk))
            return None if fragments is None else int(fragments[0].shape[0])
        if path.startswith((f"{self.base}/{LINKS}/", f"{self.base}/{LINK_ATTRIBUTES}/")):
            links = self._ranges.get((LINK_FRAGMENTS, chunk))
            return None if links is None else int(links[1].sum())
        return None


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


def _blob_ranges(blob: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The fragment ranges of a chunk's decoded blob (spec §6).

    Raises
    ------
    CorruptChunkError
        When the blob is not a fragment index (``where``: its shard key).
    """
    try:
        return decode_dense_ranges(blob)
    except FragmentIndexError as exc:
        raise CorruptChunkError(f"{where}: {exc}") from exc


def _decode_blobs(
    layout: RowLayout,
    found: list[tuple[str, list[list[int]], tuple[int, int]]],
    payloads: list[bytes],
) -> list[np.ndarray]:
    """The blobs of several chunks in shared shards, decoded by one call of
    :meth:`~zarr_vectors.store.shards.RowLayout.decode_blocks_at` (one native kernel call
    where possible) instead of one call per row block.

    ``found`` holds each chunk's shard key, shard index entries and fetched byte span,
    ``payloads`` the bytes of each span. A chunk stores its first ``stored`` blocks.

    Raises
    ------
    CorruptChunkError
        When a block is missing, lies outside its chunk's bytes or fails a check.
    """
    total = sum(len(payload) for payload in payloads)
    numbers: list[int] = []
    keys: list[str] = []
    starts: list[int] = []
    lengths: list[int] = []
    counts: list[int] = []
    at = 0
    for (key, entries, span), payload in zip(found, payloads, strict=True):
        stored = sum(1 for e in entries if e[0] != _MISSING)
        blocks = range(stored)
        for b, (start, nbytes) in zip(
            blocks, layout.locate_blocks(len(payload), span[0], entries, blocks, key), strict=True
        ):
            numbers.append(b)
            keys.append(key)
            starts.append(at + start if start >= 0 else total)  # outside: the kernel refuses
            lengths.append(nbytes)
        counts.append(stored)
        at += len(payload)
    r = layout.rows_per_block
    out = np.zeros(len(numbers) * r, dtype=np.uint8)
    if numbers:
        layout.decode_blocks_at(
            np.frombuffer(b"".join(payloads), dtype=np.uint8),
            np.array(starts, dtype=np.int64),
            np.array(lengths, dtype=np.int64),
            np.arange(len(numbers), dtype=np.int64),
            out,
            lambda i: (numbers[i], keys[i]),
        )
    bounds = np.cumsum([0, *counts]) * r
    return [out[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)]
