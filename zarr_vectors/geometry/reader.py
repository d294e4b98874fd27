"""Reading the per-chunk arrays of one level: fragment ranges and row runs of chunks.

:class:`LevelReader` fetches exactly the bytes a read needs — whole shards for whole chunks,
the row blocks covering the requested row runs otherwise (spec §8, §9.0) — and caches the
small per-chunk indexes (fragment ranges, shard indexes) so a repeated query only fetches
rows.

Every step gathers its requests into one concurrent batch, so on object storage a read costs
a small constant number of round trips whatever the number of chunks and columns: the
level's metadata documents (two batches, at construction), ``vertex_counts`` (one), the
fragment indexes of partly read chunks together with their shard indexes (one), and the rows
of every column (one). Whole chunks need no shard index: their shards are fetched whole.

With several chunks per shard (spec §9.0.1) a shard index is fetched once per shard and
serves every chunk of it, and a chunk's rows are byte ranges of the shard: whole chunks read
their blocks through the index too, and fragment indexes cost one more wave (the blob
shards' indexes, then the chunks' byte ranges).

Box queries over point clouds read through :meth:`LevelReader.read_selected`: the row
blocks holding many row runs are fetched into one buffer per column and decoded each once
by a kernel calling the C functions of C-Blosc and libcrc32c directly
(:mod:`zarr_vectors.kernels.row_blocks`); a caller's selector then picks the rows, and the
other columns decode only the blocks holding picked rows. Their byte spans are planned by
a kernel from tables kept by position among the occupied chunks (the chunks' shard index
entries and per-bin ranges, filled as chunks are first read), and the scratch they are
read and decoded into is reused from one read to the next (never the arrays returned).
``vertex_counts`` stored as one plain chunk and the dense fragment blobs of point clouds
are decoded directly too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError, FragmentIndexError, MetadataError
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.format.grid import ChunkGrid, bins_per_chunk
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
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
from zarr_vectors.geometry import _read_plans as read_plans
from zarr_vectors.kernels import concat_ranges
from zarr_vectors.kernels.box_rows import block_slots, slots_holding, take_rows
from zarr_vectors.store.arrays import nonzero_cells, read_region, read_whole_many
from zarr_vectors.store.io import ByteRange, StoreIO, local_root
from zarr_vectors.store.native_blocks import decode_dense_blob_shards
from zarr_vectors.store.shards import (
    RowLayout,
    ShardIndex,
    decode_single_chunk,
    shard_key,
    single_chunk_key,
)

__all__ = ["ChunkRows", "LevelReader", "RowRuns", "RowSelector"]

_OBJECT_ARRAYS = (
    f"{LINKS}/0",
    f"{FRAGMENT_ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}",
    LINK_FRAGMENTS,
    f"{OBJECT_INDEX}/data",
    f"{OBJECT_INDEX}/offsets",
    CROSS_CHUNK_LINKS,
    GROUPINGS,
)
"""Arrays of an object level (relative to the level) whose ``zarr.json`` is read up front."""

_OBJECT_DIRS = (OBJECT_ATTRIBUTES, LINK_ATTRIBUTES, CROSS_CHUNK_LINK_ATTRIBUTES)
"""Groups of an object level whose arrays' ``zarr.json`` are read up front."""

_IndexKey = tuple[str, tuple[int, ...]]
"""(array path, shard index) of a cached shard index (a shard is a chunk unless §9.0.1)."""

_IndexRequest = tuple[_IndexKey, str, ByteRange, RowLayout]
"""(cache key, shard key, suffix to fetch, layout) of a shard index to fetch."""

_MISSING = 2**64 - 1


@dataclass(frozen=True, slots=True)
class ChunkRows:
    """Row runs ``[start, stop)`` wanted from one spatial chunk (zarr chunk index)."""

    chunk: tuple[int, ...]
    runs: np.ndarray  # (k, 2) int64, sorted, non-overlapping


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
    """

    def __init__(self, io: StoreIO, root: RootMetadata, level: int = 0) -> None:
        self.io = io
        self.base = str(level)
        self.kind = root.geometry_type
        self._docs: dict[str, Any] = {}
        self._dirs: dict[str, list[str]] = {}
        self._load_level_metadata()
        ndim = root.spatial_dims
        group = self._docs[f"{self.base}/zarr.json"]
        attrs = group.get("attributes") if isinstance(group, dict) else None
        self.meta = LevelMetadata.from_json(attrs, ndim)
        chunk_shape = np.asarray(root.chunk_shape, dtype=np.float64)
        bin_shape = np.asarray(self.meta.bin_shape, dtype=np.float64)
        vmeta = self.array_metadata(f"{self.base}/{VERTICES}")
        grid_shape = np.asarray(vmeta["shape"][:ndim], dtype=np.int64)
        self.grid = ChunkGrid(
            chunk_shape,
            bin_shape,
            bins_per_chunk(chunk_shape, bin_shape),
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
            k: RowLayout.from_array_metadata(m, ndim, self.paths[k])
            for k, m in self.array_meta.items()
        }
        self._blob_layouts: dict[str, RowLayout] = {}
        self._ranges: dict[tuple[str, tuple[int, ...]], tuple[np.ndarray, np.ndarray]] = {}
        # shard indexes: key and entries as lists (made from the arrays when first asked)
        self._indexes: dict[_IndexKey, tuple[str, list[list[int]] | None]] = {}
        self._index_arrays: dict[_IndexKey, np.ndarray] = {}  # the same, as fetched
        self._occupied: tuple[np.ndarray, np.ndarray] | None = None
        self._chunk_rows: dict[tuple[int, ...], int] | None = None
        self._checked_bins: set[tuple[int, ...]] = set()
        self._indexed: set[tuple[Any, ...]] = set()  # (chunk, *columns) with cached indexes
        self._bins: read_plans.BinTable | None = None  # per occupied chunk (box queries)
        self._selecting: dict[tuple[str, ...], read_plans.BlockTable] = {}  # per column set

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
            [f"{self.base}/zarr.json", *(f"{self.base}/{a}/zarr.json" for a in arrays)], dirs
        )
        self.prefetch([f"{d}/{name}/zarr.json" for d in dirs for name in self.children(d)])

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
        """The parsed ``zarr.json`` of the array at ``path``, cached.

        Raises
        ------
        MetadataError
            When the array's metadata is missing or not an array's.
        """
        meta = self.document(f"{path}/zarr.json")
        if not isinstance(meta, dict) or meta.get("node_type") != "array":
            raise MetadataError(f"{path}: array metadata (zarr.json) is missing")
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
            if not isinstance(meta, dict) or meta.get("node_type") != "array":
                raise CorruptChunkError(f"{path}: cannot read the array (no array metadata)")
        return read_whole_many(self.io.store, list(zip(full, metas, strict=True)))

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
            found = None if meta is None else self._single_chunk_cells(path, meta)
            coords, counts = nonzero_cells(self.io, path, meta) if found is None else found
            if np.any(counts < 0):
                raise CorruptChunkError(f"{path}: negative row count")
            self._occupied = (coords, counts)
        return self._occupied

    def _single_chunk_cells(
        self, path: str, meta: dict[str, Any]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The non-zero cells of a ``vertex_counts`` stored as one plain chunk (the usual
        case), decoded directly; None when it is stored otherwise or its chunk is missing."""
        key = single_chunk_key(meta, path)
        raw = None if key is None else self.io.get(key)
        if key is None or raw is None:
            return None
        cells = decode_single_chunk(meta, raw, key)
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
        view._bins, view._selecting = None, {}  # keyed by positions in the occupancy
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
        for chunk, (starts, sizes), n in zip(chunks, out, counts, strict=True):
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
        keys = [(name, tuple(int(c) for c in chunk)) for chunk in chunks]
        indexed = [k[1] for k in keys] if index_chunks is None else _chunk_keys(index_chunks)
        missing = [k for k in dict.fromkeys(keys) if k not in self._ranges]
        path = f"{self.base}/{name}"
        layout = self._blob_layout(path) if missing else None  # fail before fetching shards
        sharded = layout is not None and layout.chunks_per_shard > 1
        blob_requests: list[tuple[str, ByteRange]] = [
            (shard_key(path, np.asarray(k[1]), 0), None) for k in missing if not sharded
        ]
        index_requests = self._index_requests(
            [(column, chunk) for column in index_columns for chunk in indexed]
        )
        if sharded and layout is not None:
            index_requests += self._shard_index_requests([(path, layout, k[1]) for k in missing])
        raws = self.io.get_many(blob_requests + [(r[1], r[2]) for r in index_requests])
        self._keep_indexes(index_requests, raws[len(blob_requests) :], strict=False)
        if sharded and layout is not None:
            self._fetch_sharded_ranges(path, layout, [k[1] for k in missing])
        else:
            found = raws[: len(missing)]
            dense: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(found)
            if dense_fragments is not None and layout is not None:
                dense = decode_dense_blob_shards(layout, found, dense_fragments)
            for key, raw, ranges in zip(missing, found, dense, strict=True):
                if ranges is None:
                    ranges = self._decode_ranges(path, key[1], raw)
                self._ranges[key] = ranges
        return [self._ranges[k] for k in keys]

    def _fetch_sharded_ranges(
        self, path: str, layout: RowLayout, chunks: list[tuple[int, ...]]
    ) -> None:
        """Fetch (one batch of byte ranges) and cache the blobs of chunks in shared shards."""
        name = path.rsplit("/", 1)[-1]
        requests: list[tuple[str, ByteRange]] = []
        found: list[tuple[str, list[list[int]], tuple[int, int]]] = []
        for chunk in chunks:
            key, entries = self._chunk_index(path, layout, chunk, "fragment index")
            stored = sum(1 for e in entries if e[0] != _MISSING)
            span = layout.block_span(entries, 0, stored, key) if stored else (0, 0)
            found.append((key, entries, span))
            requests.append((key, span))
        raws = self.io.get_many([r for r, f in zip(requests, found, strict=True) if f[2][1]])
        fetched = iter(raws)
        for chunk, (key, entries, span) in zip(chunks, found, strict=True):
            raw = next(fetched) if span[1] else b""
            if raw is None:
                raise CorruptChunkError(f"{key}: shard disappeared while reading")
            self._ranges[(name, chunk)] = self._decode_blob(layout, key, entries, raw, span[0])

    def _decode_ranges(
        self, path: str, chunk: tuple[int, ...], raw: bytes | None
    ) -> tuple[np.ndarray, np.ndarray]:
        where = shard_key(path, np.asarray(chunk), 0)
        if raw is None:
            raise CorruptChunkError(f"{where}: fragment index of an occupied chunk is missing")
        layout = self._blob_layout(path)
        return self._decode_blob(layout, where, layout.decode_index(raw, where), raw, 0)

    @staticmethod
    def _decode_blob(
        layout: RowLayout, where: str, entries: ShardIndex, payload: bytes, base: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The fragment ranges of a chunk's blob, from its entries and its blocks' bytes."""
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
        try:
            return decode_dense_ranges(blob)
        except FragmentIndexError as exc:
            raise CorruptChunkError(f"{where}: {exc}") from exc

    def _blob_layout(self, path: str) -> RowLayout:
        if path not in self._blob_layouts:
            meta = self.array_metadata(path)
            layout = RowLayout.from_array_metadata(meta, self.grid.ndim, path)
            if layout is None:
                raise MetadataError(f"{path}: unsupported codec pipeline for fragment blobs")
            self._blob_layouts[path] = layout
        return self._blob_layouts[path]

    def add_column(self, name: str, path: str) -> None:
        """Make the per-chunk row array at ``path`` readable as column ``name``."""
        if name not in self.paths:
            self.paths[name] = path
            self.array_meta[name] = self.array_metadata(path)
            self.layouts[name] = RowLayout.from_array_metadata(
                self.array_meta[name], self.grid.ndim, path
            )

    # -- shard indexes -----------------------------------------------------------------
    def _index_requests(self, wanted: Iterable[tuple[str, tuple[int, ...]]]) -> list[_IndexRequest]:
        """The shard indexes of (column, chunk) pairs that are not cached, one per shard."""
        return self._shard_index_requests(
            (self.paths[column], layout, chunk)
            for column, chunk in wanted
            if (layout := self.layouts.get(column)) is not None
        )

    def _shard_index_requests(
        self, wanted: Iterable[tuple[str, RowLayout, tuple[int, ...]]]
    ) -> list[_IndexRequest]:
        """The shard indexes of (array path, layout, chunk) not cached, one per shard."""
        out: list[_IndexRequest] = []
        seen: set[_IndexKey] = set()
        for path, layout, chunk in wanted:
            shard = chunk if layout.chunks_per_shard == 1 else _shard_of(layout, chunk)
            cache_key = (path, shard)
            if cache_key in self._indexes or cache_key in seen:
                continue
            seen.add(cache_key)
            key = shard_key(path, np.asarray(shard), len(layout.row_shape))
            out.append((cache_key, key, -layout.index_nbytes, layout))
        return out

    def _keep_indexes(
        self,
        requests: list[_IndexRequest],
        tails: Sequence[bytes | None],
        *,
        strict: bool,
    ) -> None:
        """Decode and cache fetched shard indexes; a missing shard raises only if ``strict``."""
        for (cache_key, key, _, layout), tail in zip(requests, tails, strict=True):
            if tail is None:
                if strict:
                    raise CorruptChunkError(f"{key}: shard of an occupied chunk is missing")
                continue
            self._index_arrays[cache_key] = layout.decode_index(tail, key)
            self._indexes[cache_key] = (key, None)  # listed on first use (_chunk_index)

    def _chunk_index(
        self, path: str, layout: RowLayout, chunk: tuple[int, ...], what: str = "shard"
    ) -> tuple[str, list[list[int]]]:
        """Shard key and the cached index entries of ``chunk`` in the array at ``path``.

        Raises
        ------
        CorruptChunkError
            When the chunk's shard was not found (its index is not cached).
        """
        shard = chunk if layout.chunks_per_shard == 1 else _shard_of(layout, chunk)
        found = self._indexes.get((path, shard))
        if found is None:
            key = shard_key(path, np.asarray(chunk), len(layout.row_shape))
            raise CorruptChunkError(f"{key}: {what} of an occupied chunk is missing")
        key, entries = found
        if entries is None:
            entries = self._index_arrays[(path, shard)].tolist()
            self._indexes[(path, shard)] = (key, entries)
        if layout.chunks_per_shard != 1:
            first = layout.local_chunk(chunk) * layout.n_blocks
            entries = entries[first : first + layout.n_blocks]
        return key, entries

    def _chunk_index_entries(
        self, path: str, layout: RowLayout, chunk: tuple[int, ...]
    ) -> tuple[str, ShardIndex]:
        """:meth:`_chunk_index`, as the array fetched when there is one (no list made)."""
        shard = chunk if layout.chunks_per_shard == 1 else _shard_of(layout, chunk)
        found = self._indexes.get((path, shard))
        index = self._index_arrays.get((path, shard))
        if found is None or index is None:
            return self._chunk_index(path, layout, chunk)
        return found[0], layout.chunk_entries(index, chunk)

    # -- rows --------------------------------------------------------------------------
    def read_rows(self, name: str, wanted: list[ChunkRows]) -> np.ndarray:
        """Rows of column ``name`` for every request, runs and requests concatenated in order."""
        return self.read_columns([name], wanted)[0]

    def read_columns(self, names: list[str], wanted: list[ChunkRows]) -> list[np.ndarray]:
        """Rows of each column of ``names`` for every request (see :meth:`read_rows`)."""
        return self.read_many([(name, wanted) for name in names])

    def read_many(self, reads: list[tuple[str, list[ChunkRows]]]) -> list[np.ndarray]:
        """Rows of several columns, each for its own requests, fetched together.

        All requests go out at once: the missing shard indexes of every column in one
        batch, then the row blocks of every column in one batch (so on object storage the
        whole read costs two round trips at most, one when the indexes are cached). A
        request for all the rows of a chunk fetches the chunk's shard whole, with no index
        needed first. Columns reading the same requests share one plan of the row blocks.
        A request with one run is decoded straight into the result; the blocks that
        requests with several runs need are decoded once each into a scratch buffer, and
        their rows are gathered from it in one step at the end.

        Parameters
        ----------
        reads
            ``(column name, requests)`` pairs.

        Returns
        -------
        list of numpy.ndarray
            Per pair, the rows of every request, runs and requests concatenated in order.
        """
        plans: dict[tuple[int, int], _RowPlan] = {}
        columns: dict[int, _Column] = {}
        for k, (name, wanted) in enumerate(reads):
            layout = self.layouts[name]
            if layout is None:
                continue
            plan_key = (id(wanted), layout.rows_per_block)
            if plan_key not in plans:
                plans[plan_key] = _RowPlan.build(wanted, layout.rows_per_block)
            path = self.paths[name]
            whole = [self._whole_shard(name, layout, w) for w in wanted]
            columns[k] = _Column(name, path, layout, wanted, plans[plan_key], whole)
        index_requests = self._index_requests(
            (c.name, c.wanted[i].chunk)
            for c in columns.values()
            for i, *_ in c.plan.jobs
            if not c.whole[i]
        )
        if index_requests:
            tails = self.io.get_many([(r[1], r[2]) for r in index_requests])
            self._keep_indexes(index_requests, tails, strict=True)
        done: dict[int, np.ndarray] = {}
        for batch in self._column_batches(columns):
            requests = {k: self._column_requests(columns[k]) for k in batch}
            fetched = iter(self.io.get_ranges([r for rs in requests.values() for r in rs]))
            payloads = {k: [next(fetched) for _ in requests[k]] for k in batch}
            done |= self._decode_columns({k: columns[k] for k in batch}, requests, payloads)
        return [
            done[k] if k in done else self._read_rows_fallback(name, wanted)
            for k, (name, wanted) in enumerate(reads)
        ]

    def _column_batches(self, columns: dict[int, _Column]) -> list[list[int]]:
        """Columns whose rows are fetched together: all of them, but on a local directory.

        A local file read has no round trip to save, and fetching one column at a time
        holds less memory at once (fewer fresh pages to fault in: measurably faster).
        """
        if local_root(self.io.store) is not None:
            return [[k] for k in columns]
        return [list(columns)]

    def _whole_shard(self, name: str, layout: RowLayout, want: ChunkRows) -> bool:
        """Whether ``want`` asks for every row the chunk's shard of column ``name`` holds.

        Such a shard is fetched whole, with no index first. Only an I/O choice: rows are
        decoded through the shard's own index either way. Never for a shard of several
        chunks (spec §9.0.1): only the chunk's own blocks are fetched.
        """
        if layout.chunks_per_shard != 1:
            return False
        if want.runs.shape[0] != 1 or int(want.runs[0, 0]) != 0:
            return False
        stored = self._shard_rows(name, want.chunk)
        return stored is not None and int(want.runs[0, 1]) == stored

    def _shard_rows(self, name: str, chunk: tuple[int, ...]) -> int | None:
        """Rows of ``chunk`` in column ``name`` when already known (counts, fragment indexes)."""
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

    def _column_requests(self, column: _Column) -> list[tuple[str, list[ByteRange]]]:
        """The byte ranges to fetch for one column: per job, its shard key and ranges."""
        out: list[tuple[str, list[ByteRange]]] = []
        layout = column.layout
        for i, groups, _, _ in column.plan.jobs:
            chunk = column.wanted[i].chunk
            if column.whole[i]:
                key = shard_key(column.path, np.asarray(chunk), len(layout.row_shape))
                out.append((key, [None]))
                continue
            key, entries = self._chunk_index(column.path, layout, chunk)
            out.append((key, [layout.block_span(entries, g[0], g[-1] + 1, key) for g in groups]))
        return out

    def _decode_columns(
        self,
        columns: dict[int, _Column],
        requests: dict[int, list[tuple[str, list[ByteRange]]]],
        payloads: dict[int, list[list[bytes] | None]],
    ) -> dict[int, np.ndarray]:
        """Decode every column's fetched row blocks into its rows, in request order.

        Each fetched shard decodes into its own slice of the result (or of a scratch
        buffer). Decoding stays on the calling thread: on several threads it was no faster
        (measured on 2 cores: the per-block work holds the GIL).
        """
        done: dict[int, np.ndarray] = {}
        for k, column in columns.items():
            dtype, row_shape = self.column_spec(column.name)
            plan = column.plan
            out = np.empty((int(plan.starts[-1]), *row_shape), dtype=dtype)
            rows = plan.blocks.blocks.shape[0] * plan.rows_per_block
            scratch = np.empty((rows, *row_shape), dtype=dtype)
            for request, job, parts in zip(requests[k], plan.jobs, payloads[k], strict=True):
                self._decode_shard(column, out, scratch, request, job, parts)
            blocks = plan.blocks
            if blocks.dst.shape[0] == out.shape[0]:  # every request had several runs
                np.take(scratch, blocks.src, axis=0, out=out)
            elif blocks.dst.shape[0]:
                out[blocks.dst] = scratch[blocks.src]
            done[k] = out
        return done

    def _decode_shard(
        self,
        column: _Column,
        out: np.ndarray,
        scratch: np.ndarray,
        request: tuple[str, list[ByteRange]],
        job: tuple[int, list[list[int]], tuple[int, int] | None, int],
        parts: list[bytes] | None,
    ) -> None:
        """Decode the fetched bytes of one chunk's shard into ``out`` or ``scratch``."""
        key, spans = request
        i, groups, rows, slot = job
        plan, layout = column.plan, column.layout
        if parts is None:
            what = "is missing" if column.whole[i] else "disappeared while reading"
            raise CorruptChunkError(f"{key}: shard of an occupied chunk {what}")
        chunk = column.wanted[i].chunk
        if column.whole[i]:
            index = layout.decode_index(parts[0], key)
            entries = index.tolist()
            self._indexes[(column.path, chunk)] = (key, entries)
            self._index_arrays[(column.path, chunk)] = index
            bases = [0]
        else:
            entries = self._chunk_index(column.path, layout, chunk)[1]
            bases = [span[0] for span in spans if isinstance(span, tuple)]
        if rows is not None:
            target = out[plan.starts[i] : plan.starts[i + 1]]
            layout.decode_rows_into(parts[0], entries, bases[0], rows, target, key)
            return
        r = plan.rows_per_block
        target = scratch[slot * r : (slot + sum(len(g) for g in groups)) * r]
        layout.decode_block_groups_into(
            list(zip(parts, bases, groups, strict=True)), entries, target, key
        )

    # -- selected rows of many runs (box queries) ------------------------------------
    def bin_ranges(
        self, chunks: np.ndarray, counts: np.ndarray, index_chunks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-bin first rows and row counts of point-cloud chunks, as ``(k, bins)`` tables.

        The fragment indexes are fetched, checked (:meth:`fragment_ranges`) and cached once
        per chunk, with the shard indexes of every per-vertex column of ``index_chunks``
        (the chunks whose rows are read next) in the same batch.
        """
        keys = _chunk_keys(chunks)
        missing = [i for i, key in enumerate(keys) if key not in self._checked_bins]
        if missing:
            found = self.blob_ranges(
                VERTEX_FRAGMENTS,
                chunks[missing],
                index_columns=self.vertex_columns,
                index_chunks=index_chunks,
                dense_fragments=self.grid.bins_per_chunk_total,
            )
            self._check_bin_ranges(chunks[missing], counts[missing], found)
            self._checked_bins.update(keys[i] for i in missing)
        if not keys:
            empty = np.empty((0, self.grid.bins_per_chunk_total), dtype=np.int64)
            return empty, empty
        found = [self._ranges[(VERTEX_FRAGMENTS, key)] for key in keys]
        return np.stack([f[0] for f in found]), np.stack([f[1] for f in found])

    def bin_table(self, where: np.ndarray, index_where: np.ndarray) -> read_plans.BinTable:
        """The per-bin ranges (:meth:`bin_ranges`) of occupied chunks by their positions.

        Parameters
        ----------
        where
            Positions, in :meth:`occupied_chunks` ``(None, None)``, of point-cloud chunks.
        index_where
            Positions of the chunks whose rows are read next: their shard indexes are
            fetched with the fragment indexes of chunks not seen yet.

        Returns
        -------
        read_plans.BinTable
            Table whose row ``row[p]`` holds the ranges of the chunk at position ``p``
            (every position of ``where`` has one).
        """
        table = self._bins
        if table is not None and not (table.row[where] < 0).any():
            return table
        with read_plans.TABLES_LOCK:  # one thread at a time adds rows
            if self._bins is None:
                n_chunks, bins = len(self._occupancy()[1]), self.grid.bins_per_chunk_total
                self._bins = read_plans.BinTable.empty(n_chunks, bins)
            table = self._bins
            missing = np.unique(where[table.row[where] < 0])
            if missing.shape[0]:
                coords, counts = self._occupancy()
                found = self.bin_ranges(coords[missing], counts[missing], coords[index_where])
                table.add(missing, *found)
        return table

    def _check_bin_ranges(
        self, chunks: np.ndarray, counts: np.ndarray, found: list[tuple[np.ndarray, np.ndarray]]
    ) -> None:
        """The checks of :meth:`fragment_ranges` on point-cloud chunks, all at once."""
        bins = self.grid.bins_per_chunk_total
        if any(f[0].shape[0] != bins for f in found):
            self.fragment_ranges(chunks, counts)  # raises for the first wrong chunk
        starts = np.stack([f[0] for f in found])
        sizes = np.stack([f[1] for f in found])
        extent = (starts + sizes).max(axis=1, initial=0)
        if np.any(extent != counts) or np.any(sizes.sum(axis=1) != counts):
            self.fragment_ranges(chunks, counts)  # raises for the first wrong chunk

    def can_select(self, names: Sequence[str]) -> bool:
        """Whether :meth:`read_selected` reads the columns ``names`` (else use :meth:`read_many`).

        It does when every column is in row blocks we decode, all of the same ``R``.
        """
        layouts = [self.layouts.get(name) for name in names]
        sizes = {layout.rows_per_block for layout in layouts if layout is not None}
        return None not in layouts and len(sizes) == 1

    def read_selected(
        self, names: Sequence[str], runs: RowRuns, select: RowSelector
    ) -> list[np.ndarray]:
        """The rows ``select`` picks among the rows of ``runs``, of every column of ``names``.

        The row blocks holding the runs are decoded back to back (each once) for the first
        column; ``select(rows, run_row, out)`` gets those decoded rows and the row where
        each run starts among them, and returns the rows to keep (ascending), written at
        the start of ``out``. The other columns
        decode only the blocks holding kept rows. On object storage every column's blocks
        are fetched in one batch; a local directory is read column by column. Byte spans
        are planned by a kernel from the chunks' shard index entries (kept as arrays).

        Requires :meth:`can_select` of ``names``.

        Returns
        -------
        list of numpy.ndarray
            Per column, the kept rows in order.
        """
        r = self.layouts[names[0]].rows_per_block  # type: ignore[union-attr]
        slot_chunk, slot_block, run_row = block_slots(runs.chunk, runs.start, runs.stop, r)
        where = runs.where if runs.where is not None else self._positions(runs.chunks)
        table = self._block_table(names)
        slot_where = where[slot_chunk]
        if not table.known[slot_where].all():
            self._learn_blocks(names, table, np.unique(slot_where))
        n_slots = slot_block.shape[0]
        every = np.arange(n_slots, dtype=np.int64)
        fetched = None
        if not self.io.is_local:  # every column's blocks in one batch
            plans = [
                read_plans.SlotPlan.make(table, k, slot_where, slot_block, every)
                for k in range(len(names))
            ]
            fetched = self._fetch_plans(table, plans)
        out: list[np.ndarray] = []
        keep = every[:0]
        kept = read_plans.SPARE.take(8 * n_slots * r)  # the rows kept (int64), one at most per row
        for k, name in enumerate(names):
            wanted = every if k == 0 else slots_holding(keep, n_slots, r)
            rows, spare = self._scratch(name, n_slots)
            raw = None
            try:
                if fetched is None:
                    plan = read_plans.SlotPlan.make(table, k, slot_where, slot_block, wanted)
                    raw = read_plans.SPARE.take(plan.nbytes)
                    buffer = raw[: plan.nbytes]
                    self._read_plan(table, k, plan, buffer)
                else:
                    plan, buffer = plans[k].pick(wanted), fetched[k]
                describe = read_plans.block_describer(
                    table.keys[k], plan.slots, slot_where, slot_block
                )
                self.layouts[name].decode_blocks_at(  # type: ignore[union-attr]
                    buffer, plan.starts, plan.lengths, plan.slots, rows, describe
                )
                if k == 0:
                    keep = select(rows, run_row, kept[: 8 * n_slots * r].view(np.int64))
                out.append(take_rows(rows, keep))
            finally:
                read_plans.SPARE.give(spare)
                if raw is not None:
                    read_plans.SPARE.give(raw)
        read_plans.SPARE.give(kept)
        return out

    def _positions(self, chunks: Sequence[tuple[int, ...]]) -> np.ndarray:
        """Positions of occupied chunks (zarr indices; occupied ones only) in
        :meth:`occupied_chunks` ``(None, None)``."""
        coords, _ = self._occupancy()
        if not chunks:
            return np.empty(0, dtype=np.int64)
        shape = tuple(int(g) for g in self.grid.shape)
        flat = np.ravel_multi_index(tuple(coords.T), shape)
        wanted = np.ravel_multi_index(tuple(np.asarray(chunks, dtype=np.int64).T), shape)
        order = np.argsort(flat, kind="stable")
        found: np.ndarray = order[np.searchsorted(flat, wanted, sorter=order)]
        return found.astype(np.int64)

    def _block_table(self, names: Sequence[str]) -> read_plans.BlockTable:
        """The (lazily filled) shard index entries of columns ``names``, by chunk position."""
        key = tuple(names)
        table = self._selecting.get(key)
        if table is None:
            r = self.layouts[names[0]].rows_per_block  # type: ignore[union-attr]
            table = read_plans.BlockTable.empty(self._occupancy()[1], r, len(names))
            self._selecting[key] = table
        return table

    def _learn_blocks(
        self, names: Sequence[str], table: read_plans.BlockTable, where: np.ndarray
    ) -> None:
        """Fetch (when missing) the shard indexes of columns ``names`` for the chunks at
        positions ``where``, and copy their entries into ``table``."""
        coords, _ = self._occupancy()
        chunks = _chunk_keys(coords[where])
        unknown = [chunk for chunk in chunks if (chunk, *names) not in self._indexed]
        if unknown:
            self._fetch_indexes([(name, chunk) for name in names for chunk in unknown])
            self._indexed.update((chunk, *names) for chunk in unknown)
        for k, name in enumerate(names):
            path, layout = self.paths[name], self.layouts[name]
            assert layout is not None
            for p, chunk in zip(where.tolist(), chunks, strict=True):
                table.set_entries(k, p, *self._chunk_index_entries(path, layout, chunk))
        table.known[where] = True

    def _fetch_plans(
        self, table: read_plans.BlockTable, plans: list[read_plans.SlotPlan]
    ) -> list[np.ndarray]:
        """Fetch the spans of every plan in one batch; per plan, the buffer of its blocks."""
        total = sum(plan.nbytes for plan in plans)
        buffer = np.empty(total, dtype=np.uint8)
        keys = [key for k in range(len(plans)) for key in table.keys[k]]
        offsets = np.cumsum([0, *(len(table.keys[k]) for k in range(len(plans)))])
        owner = np.concatenate([plan.span_chunk + offsets[k] for k, plan in enumerate(plans)])
        starts = np.concatenate([plan.span_start for plan in plans])
        stops = np.concatenate([plan.span_stop for plan in plans])
        failed = self.io.read_spans_into(keys, owner, starts, stops, buffer)
        if failed >= 0:
            raise CorruptChunkError(f"{keys[failed]}: shard of an occupied chunk disappeared")
        out, pos = [], 0
        for plan in plans:
            out.append(buffer[pos : pos + plan.nbytes])
            pos += plan.nbytes
        return out

    def _read_plan(
        self, table: read_plans.BlockTable, k: int, plan: read_plans.SlotPlan, buffer: np.ndarray
    ) -> None:
        """Read the spans of ``plan`` (column ``k`` of ``table``) into ``buffer``."""
        keys = table.keys[k]
        failed = self.io.read_spans_into(
            keys, plan.span_chunk, plan.span_start, plan.span_stop, buffer
        )
        if failed >= 0:
            raise CorruptChunkError(f"{keys[failed]}: shard of an occupied chunk disappeared")

    def _fetch_indexes(self, wanted: Iterable[tuple[str, tuple[int, ...]]]) -> None:
        """Fetch and cache the shard indexes of (column, chunk) pairs not cached yet."""
        requests = self._index_requests(wanted)
        if requests:
            tails = self.io.get_many([(r[1], r[2]) for r in requests])
            self._keep_indexes(requests, tails, strict=True)

    def _scratch(self, name: str, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
        """An uninitialised buffer of ``n_slots`` row blocks of column ``name``, and the
        spare bytes it lies in (to give back, :class:`read_plans.SpareBuffers`)."""
        dtype, row_shape = self.column_spec(name)
        layout = self.layouts[name]
        assert layout is not None
        n = n_slots * layout.rows_per_block
        spare = read_plans.SPARE.take(n * layout.row_nbytes)
        rows = spare[: n * layout.row_nbytes].view(dtype).reshape(n, *row_shape)
        return rows, spare

    def _read_rows_fallback(self, name: str, wanted: list[ChunkRows]) -> np.ndarray:
        """Rows through zarr-python, for arrays whose codecs we do not decode ourselves."""
        path = self.paths[name]
        trailing = tuple(self.array_meta[name]["shape"][self.grid.ndim + 1 :])
        parts: list[np.ndarray] = []
        for want in wanted:
            stop = int(want.runs[:, 1].max(initial=0))
            lo = (*want.chunk, 0)
            hi = (*(c + 1 for c in want.chunk), stop)
            region = read_region(self.io.store, path, lo + (0,) * len(trailing), hi + trailing)
            rows = region.reshape(stop, *trailing)
            parts.extend(rows[a:b] for a, b in want.runs)
        dtype, row_shape = self.column_spec(name)
        return np.concatenate(parts) if parts else np.empty((0, *row_shape), dtype=dtype)


@dataclass(frozen=True, slots=True)
class RowRuns:
    """Row runs of several chunks: run ``q`` is rows ``[start[q], stop[q])`` of chunk
    ``chunks[chunk[q]]``; runs in chunk order, ascending and non-overlapping per chunk."""

    chunks: list[tuple[int, ...]]
    chunk: np.ndarray  # (m,) int64
    start: np.ndarray  # (m,) int64
    stop: np.ndarray  # (m,) int64
    where: np.ndarray | None = None  # (len(chunks),) positions in occupied_chunks(), if known


RowSelector = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""``select(rows, run_row, out)``: the rows to keep among decoded rows, written at the start
of ``out`` (room for one per decoded row; see read_selected)."""


@dataclass(frozen=True, slots=True)
class _Column:
    """One column of a :meth:`LevelReader.read_columns` call and how its rows are fetched."""

    name: str
    path: str
    layout: RowLayout
    wanted: list[ChunkRows]
    plan: _RowPlan
    whole: list[bool]  # per request: fetch the chunk's shard whole


def _chunk_keys(chunks: np.ndarray) -> list[tuple[int, ...]]:
    """Chunk indices ``(k, D)`` as tuples of ints (cache keys)."""
    return [tuple(c) for c in np.asarray(chunks, dtype=np.int64).tolist()]


def _shard_of(layout: RowLayout, chunk: tuple[int, ...]) -> tuple[int, ...]:
    """Index of the shard holding ``chunk`` (spec §9.0.1), as a cache key."""
    return tuple(int(c) // s for c, s in zip(chunk, layout.shard_chunks, strict=True))


def _contiguous_groups(blocks: list[int]) -> list[list[int]]:
    """Ascending block numbers split into runs of consecutive numbers (one read each)."""
    groups = [[blocks[0]]]
    for b in blocks[1:]:
        if b == groups[-1][-1] + 1:
            groups[-1].append(b)
        else:
            groups.append([b])
    return groups


@dataclass(frozen=True, slots=True)
class _RowPlan:
    """The row blocks to read for a list of requests, for one row-block size R.

    ``jobs`` has one entry per non-empty request: ``(request index, groups of consecutive
    blocks, (start, stop) of its single run or None, first scratch block)``; requests with
    one run decode into the result at ``starts[i]``, the others into scratch blocks.
    """

    rows_per_block: int
    starts: np.ndarray
    blocks: _BlockPlan
    jobs: list[tuple[int, list[list[int]], tuple[int, int] | None, int]]

    @classmethod
    def build(cls, wanted: list[ChunkRows], r: int) -> _RowPlan:
        """Plan ``wanted`` for row blocks of ``r`` rows."""
        sizes = [int((w.runs[:, 1] - w.runs[:, 0]).sum()) for w in wanted]
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        multi = [i for i, w in enumerate(wanted) if w.runs.shape[0] > 1]
        blocks = _BlockPlan.build([wanted[i].runs for i in multi], starts[multi], r)
        slot_of = dict(zip(multi, range(len(multi)), strict=True))
        jobs: list[tuple[int, list[list[int]], tuple[int, int] | None, int]] = []
        for i, w in enumerate(wanted):
            if not sizes[i]:
                continue
            if i in slot_of:
                a, b = blocks.bounds[slot_of[i]], blocks.bounds[slot_of[i] + 1]
                jobs.append((i, _contiguous_groups(blocks.blocks[a:b].tolist()), None, int(a)))
            else:
                lo, hi = int(w.runs[0, 0]), int(w.runs[0, 1])
                jobs.append((i, [list(range(lo // r, (hi - 1) // r + 1))], (lo, hi), 0))
        return cls(r, starts, blocks, jobs)


@dataclass(frozen=True, slots=True)
class _BlockPlan:
    """The row blocks several-run requests need, and where their rows go.

    ``blocks[bounds[j]:bounds[j + 1]]`` are the ascending distinct blocks of request j,
    decoded back to back into a scratch buffer; ``out[dst] = scratch[src]`` then places
    every requested row.
    """

    blocks: np.ndarray
    bounds: np.ndarray
    src: np.ndarray
    dst: np.ndarray

    @classmethod
    def build(cls, runs: list[np.ndarray], out_starts: np.ndarray, r: int) -> _BlockPlan:
        """Plan requests with row ``runs`` whose rows go to ``out[out_starts[j]:]``."""
        empty = np.empty(0, np.int64)
        if not runs:
            return cls(empty, np.zeros(1, np.int64), empty, empty)
        all_runs = np.concatenate(runs).astype(np.int64)
        request = np.repeat(np.arange(len(runs)), [x.shape[0] for x in runs])
        keep = all_runs[:, 1] > all_runs[:, 0]
        all_runs, request = all_runs[keep], request[keep]
        lo, hi = all_runs[:, 0], all_runs[:, 1]
        first, last = lo // r, (hi - 1) // r
        span = int(last.max(initial=0)) + 1
        block_keys = request.repeat(last - first + 1) * span + concat_ranges(
            first, last - first + 1
        )
        keys = np.unique(block_keys)
        bounds = np.searchsorted(keys // span, np.arange(len(runs) + 1))
        # a run's blocks are consecutive in its request's block list, so its rows are one
        # contiguous range of the scratch buffer, starting in the slot of its first block
        slot = np.searchsorted(keys, request * span + first)
        src = concat_ranges(slot * r + lo - first * r, hi - lo)
        request_rows = np.bincount(request, weights=hi - lo, minlength=len(runs))
        dst = concat_ranges(out_starts, request_rows.astype(np.int64))
        return cls(keys % span, bounds, src, dst)
