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

The class's methods live in modules by concern and are bound into it by name:
:mod:`~zarr_vectors.read.level_documents` (metadata documents and their checks),
:mod:`~zarr_vectors.read.level_globals` (global arrays, chunk occupancy),
:mod:`~zarr_vectors.read.level_fragments` (fragment ranges, the fragments a read needs),
:mod:`~zarr_vectors.read.fragment_fetches` (fetching and decoding fragment blobs) and
:mod:`~zarr_vectors.read.level_rows` (shard indexes, rows of columns, placement checks).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from zarr_vectors.errors import MetadataError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    FRAGMENT_RECORDS,
    OBJECT_ID_ATTRIBUTE,
    POINT_CLOUD,
    VERTICES,
)
from zarr_vectors.format.nodes import node_problem, vertices_shape_problem
from zarr_vectors.format.version import has_place_records
from zarr_vectors.read import (
    fragment_fetches,
    level_documents,
    level_fragments,
    level_globals,
    level_rows,
)
from zarr_vectors.read.block_cache import BlockCache
from zarr_vectors.read.held_blobs import HeldBlobs
from zarr_vectors.read.point_reads import PointReads
from zarr_vectors.read.row_reads import ChunkRows
from zarr_vectors.read.shard_indexes import ShardIndexes
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout

__all__ = ["ChunkRows", "LevelReader"]


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
            level_documents.stored_bins_per_chunk(chunk_shape, bin_shape, self.base),
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
        self.indexes.trim(limit // 2)
        self.trim_ranges(limit - self.indexes.held())

    def add_column(self, name: str, path: str) -> None:
        """Make the per-chunk row array at ``path`` readable as column ``name``."""
        if name not in self.paths:  # checked first: a refused array leaves no trace
            meta = self.array_metadata(path)
            layout = RowLayout.from_array_metadata(meta, self.grid.ndim, path, placed=self.placed)
            self.paths[name], self.array_meta[name], self.layouts[name] = path, meta, layout

    # -- methods defined in the modules of their concern, bound here by name --------
    _load_level_metadata = level_documents.load_level_metadata
    check_object_count = level_documents.check_object_count
    _check_grid_and_kind = level_documents.check_grid_and_kind
    _check_counts_grid = level_documents.check_counts_grid
    prefetch = level_documents.prefetch
    document = level_documents.document
    children = level_documents.children
    array_metadata = level_documents.array_metadata
    read_globals = level_globals.read_globals
    global_rows = level_globals.global_rows
    take_global_rows = level_globals.take_global_rows
    _check_chunk_table = level_globals.check_chunk_table
    _plain_arrays = level_globals.plain_arrays
    occupied_chunks = level_globals.occupied_chunks
    _occupancy = level_globals.occupancy
    _check_totals = level_globals.check_totals
    _plain_cells = level_globals.plain_cells
    fragment_ranges = level_fragments.fragment_ranges
    blob_ranges = level_fragments.blob_ranges
    _decode_held = level_fragments.decode_held
    needed_ranges = level_fragments.needed_ranges
    _link_columns = level_fragments.link_columns
    _needed_counts = level_fragments.needed_counts
    _hold_blobs = level_fragments.hold_blobs
    _indexes_held = level_fragments.indexes_held
    fragment_owners = level_fragments.fragment_owners
    _stored_blob = level_fragments.stored_blob
    cached_ranges = level_fragments.cached_ranges
    has_ranges = level_fragments.has_ranges
    trim_ranges = level_fragments.trim_ranges
    _first_wave = fragment_fetches.first_wave
    _fetch_ranges = fragment_fetches.fetch_ranges
    _fetch_held = fragment_fetches.fetch_held
    _sharded_blobs = fragment_fetches.sharded_blobs
    _listed_blobs = fragment_fetches.listed_blobs
    _get_grouped = fragment_fetches.get_grouped
    _decode_chunk_blob = fragment_fetches.decode_chunk_blob
    _blob_layout = fragment_fetches.blob_layout
    fetch_indexes = level_rows.fetch_indexes
    fetch_chunk_indexes = level_rows.fetch_chunk_indexes
    _fetch_strictly = level_rows.fetch_strictly
    _index_requests = level_rows.index_requests
    read_rows = level_rows.read_rows
    read_columns = level_rows.read_columns
    read_many = level_rows.read_many
    read_runs = level_rows.read_runs
    _runs_by_kernels = level_rows.runs_by_kernels
    runs_through_cache = level_rows.runs_through_cache
    vertices_in_box = level_rows.vertices_in_box
    check_vertices = level_rows.check_vertices
    check_stored_blocks = level_rows.check_stored_blocks
    known_rows = level_rows.known_rows
