"""Reading the per-chunk arrays of one level: fragment ranges and row runs of chunks.

:class:`LevelReader` fetches exactly the bytes a read needs — whole shards for whole chunks,
the row blocks covering the requested row runs otherwise (spec §8, §9.0) — in concurrent
batches, and caches the small per-chunk indexes (fragment ranges, shard indexes) so a
repeated query only fetches rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError, FragmentIndexError, MetadataError
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.format.grid import ChunkGrid, bins_per_chunk
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    POINT_CLOUD,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.kernels import concat_ranges
from zarr_vectors.store.arrays import nonzero_cells, read_region
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout, shard_key

__all__ = ["ChunkRows", "LevelReader"]


@dataclass(frozen=True, slots=True)
class ChunkRows:
    """Row runs ``[start, stop)`` wanted from one spatial chunk (zarr chunk index)."""

    chunk: tuple[int, ...]
    runs: np.ndarray  # (k, 2) int64, sorted, non-overlapping


def _array_meta(io: StoreIO, path: str) -> dict[str, Any]:
    meta = io.read_json(f"{path}/zarr.json")
    if not isinstance(meta, dict) or meta.get("node_type") != "array":
        raise MetadataError(f"{path}: array metadata (zarr.json) is missing")
    return meta


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
        ndim = root.spatial_dims
        group = io.read_json(f"{self.base}/zarr.json")
        attrs = group.get("attributes") if isinstance(group, dict) else None
        self.meta = LevelMetadata.from_json(attrs, ndim)
        chunk_shape = np.asarray(root.chunk_shape, dtype=np.float64)
        bin_shape = np.asarray(self.meta.bin_shape, dtype=np.float64)
        vmeta = _array_meta(io, f"{self.base}/{VERTICES}")
        grid_shape = np.asarray(vmeta["shape"][:ndim], dtype=np.int64)
        self.grid = ChunkGrid(
            chunk_shape,
            bin_shape,
            bins_per_chunk(chunk_shape, bin_shape),
            np.asarray(root.chunk_grid_origin, dtype=np.int64),
            grid_shape,
        )
        names = [n for n in io.list_dir(f"{self.base}/{ATTRIBUTES}") if n != "zarr.json"]
        self._attribute_names = names
        self.paths = {VERTICES: f"{self.base}/{VERTICES}"} | {
            name: f"{self.base}/{ATTRIBUTES}/{name}" for name in names
        }
        self.array_meta = {VERTICES: vmeta} | {
            name: _array_meta(io, self.paths[name]) for name in names
        }
        self.layouts = {
            k: RowLayout.from_array_metadata(m, ndim, self.paths[k])
            for k, m in self.array_meta.items()
        }
        self.kind = root.geometry_type
        self._blob_layouts: dict[str, RowLayout] = {}
        self._ranges: dict[tuple[str, tuple[int, ...]], tuple[np.ndarray, np.ndarray]] = {}
        self._indexes: dict[tuple[str, tuple[int, ...]], tuple[str, list[list[int]]]] = {}
        self._occupied: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def attribute_names(self) -> list[str]:
        """Per-vertex attribute names, without the reserved object id column."""
        return [k for k in self._attribute_names if k != OBJECT_ID_ATTRIBUTE]

    @property
    def has_object_ids(self) -> bool:
        """Whether vertices carry the reserved per-vertex object id column (point clouds)."""
        return OBJECT_ID_ATTRIBUTE in self._attribute_names

    def column_spec(self, name: str) -> tuple[np.dtype[Any], tuple[int, ...]]:
        """dtype and row shape of a column (``"vertices"`` or an attribute name)."""
        meta = self.array_meta[name]
        return np.dtype(meta["data_type"]), tuple(meta["shape"][self.grid.ndim + 1 :])

    # -- chunk occupancy ---------------------------------------------------------------
    def occupied_chunks(self, first: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Occupied chunks with index in ``[first, stop)`` (C order) and their row counts.

        The non-zero cells of ``vertex_counts`` (spec §9.3) are read once and cached.
        """
        if self._occupied is None:
            coords, counts = nonzero_cells(self.io, f"{self.base}/{VERTEX_COUNTS}")
            if np.any(counts < 0):
                raise CorruptChunkError(f"{self.base}/{VERTEX_COUNTS}: negative row count")
            self._occupied = (coords, counts)
        coords, counts = self._occupied
        keep = np.all((coords >= first) & (coords < stop), axis=1)
        return coords[keep], counts[keep]

    # -- fragment ranges -------------------------------------------------------------
    def fragment_ranges(
        self, chunks: np.ndarray, counts: np.ndarray
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per-fragment ``(starts, counts)`` of each chunk, checked against its row count.

        Point clouds must use the dense per-bin form (spec §6.6); object kinds the run form.
        """
        out = self.blob_ranges(VERTEX_FRAGMENTS, chunks)
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

    def blob_ranges(self, name: str, chunks: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """All-range fragment indexes of the blob array ``name`` for each chunk (cached)."""
        keys = [(name, tuple(int(c) for c in chunk)) for chunk in chunks]
        missing = [k for k in dict.fromkeys(keys) if k not in self._ranges]
        if missing:
            path = f"{self.base}/{name}"
            raws = self.io.get_many([(shard_key(path, np.asarray(k[1]), 0), None) for k in missing])
            for key, raw in zip(missing, raws, strict=True):
                self._ranges[key] = self._decode_ranges(path, key[1], raw)
        return [self._ranges[k] for k in keys]

    def _decode_ranges(
        self, path: str, chunk: tuple[int, ...], raw: bytes | None
    ) -> tuple[np.ndarray, np.ndarray]:
        where = shard_key(path, np.asarray(chunk), 0)
        if raw is None:
            raise CorruptChunkError(f"{where}: fragment index of an occupied chunk is missing")
        layout = self._blob_layout(path)
        index = layout.decode_index(raw, where)
        stored = int(np.count_nonzero(index[:, 0] != np.uint64(2**64 - 1)))
        blob = np.zeros(stored * layout.rows_per_block, dtype=np.uint8)
        if stored:
            start, end = layout.block_span(index, 0, stored, where)
            layout.decode_rows_into(raw[start:end], index, start, (0, blob.shape[0]), blob, where)
        try:
            return decode_dense_ranges(blob)
        except FragmentIndexError as exc:
            raise CorruptChunkError(f"{where}: {exc}") from exc

    def _blob_layout(self, path: str) -> RowLayout:
        if path not in self._blob_layouts:
            layout = RowLayout.from_array_metadata(_array_meta(self.io, path), self.grid.ndim, path)
            if layout is None:
                raise MetadataError(f"{path}: unsupported codec pipeline for fragment blobs")
            self._blob_layouts[path] = layout
        return self._blob_layouts[path]

    def add_column(self, name: str, path: str) -> None:
        """Make the per-chunk row array at ``path`` readable as column ``name``."""
        if name not in self.paths:
            self.paths[name] = path
            self.array_meta[name] = _array_meta(self.io, path)
            self.layouts[name] = RowLayout.from_array_metadata(
                self.array_meta[name], self.grid.ndim, path
            )

    # -- rows --------------------------------------------------------------------------
    def read_rows(self, name: str, wanted: list[ChunkRows]) -> np.ndarray:
        """Rows of column ``name`` for every request, runs and requests concatenated in order."""
        return self.read_columns([name], wanted)[0]

    def read_columns(self, names: list[str], wanted: list[ChunkRows]) -> list[np.ndarray]:
        """Rows of each column of ``names`` for every request (see :meth:`read_rows`).

        The columns share one plan of the row blocks to read. A request with one run is
        decoded straight into the result; the blocks that requests with several runs need
        are decoded once each into a scratch buffer, and their rows are gathered from it
        in one step at the end.
        """
        plans: dict[int, _RowPlan] = {}
        out = []
        for name in names:
            layout = self.layouts[name]
            if layout is None:
                out.append(self._read_rows_fallback(name, wanted))
                continue
            r = layout.rows_per_block
            if r not in plans:
                plans[r] = _RowPlan.build(wanted, r)
            out.append(self._read_planned(name, layout, wanted, plans[r]))
        return out

    def _read_planned(
        self, name: str, layout: RowLayout, wanted: list[ChunkRows], plan: _RowPlan
    ) -> np.ndarray:
        dtype, row_shape = self.column_spec(name)
        r = plan.rows_per_block
        out = np.empty((int(plan.starts[-1]), *row_shape), dtype=dtype)
        scratch = np.empty((plan.blocks.blocks.shape[0] * r, *row_shape), dtype=dtype)
        shards = self._shards(self.paths[name], layout, [wanted[i].chunk for i, *_ in plan.jobs])
        requests = [
            (key, [layout.block_span(entries, g[0], g[-1] + 1, key) for g in groups])
            for (key, entries), (_, groups, _, _) in zip(shards, plan.jobs, strict=True)
        ]
        payloads = self.io.get_ranges(requests)
        for (key, entries), (_, spans), job, parts in zip(
            shards, requests, plan.jobs, payloads, strict=True
        ):
            i, groups, rows, slot = job
            if parts is None:
                raise CorruptChunkError(f"{key}: shard disappeared while reading")
            if rows is not None:
                target = out[plan.starts[i] : plan.starts[i + 1]]
                layout.decode_rows_into(parts[0], entries, spans[0][0], rows, target, key)
                continue
            for group, (base, _), payload in zip(groups, spans, parts, strict=True):
                target = scratch[slot * r : (slot + len(group)) * r]
                layout.decode_blocks_into(payload, entries, base, group, target, key)
                slot += len(group)
        if plan.blocks.dst.shape[0] == out.shape[0]:  # every request had several runs
            np.take(scratch, plan.blocks.src, axis=0, out=out)
        elif plan.blocks.dst.shape[0]:
            out[plan.blocks.dst] = scratch[plan.blocks.src]
        return out

    def _shards(
        self, path: str, layout: RowLayout, chunks: list[tuple[int, ...]]
    ) -> list[tuple[str, list[list[int]]]]:
        """Key and shard index (as lists) of each chunk's shard; indexes are cached."""
        missing = [c for c in dict.fromkeys(chunks) if (path, c) not in self._indexes]
        if missing:
            keys = [shard_key(path, np.asarray(c), len(layout.row_shape)) for c in missing]
            tails = self.io.get_many([(k, -layout.index_nbytes) for k in keys])
            for chunk, key, tail in zip(missing, keys, tails, strict=True):
                if tail is None:
                    raise CorruptChunkError(f"{key}: shard of an occupied chunk is missing")
                self._indexes[(path, chunk)] = (key, layout.decode_index(tail, key).tolist())
        return [self._indexes[(path, c)] for c in chunks]

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
