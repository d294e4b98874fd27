"""The shared write path: bin vertices, sort them into chunks, write every per-chunk array.

Every geometry kind ends here: the vertices (and their per-vertex attributes) are binned
with the kernels, sorted by (chunk, bin, input order), and each occupied spatial chunk is
written as one shard per array (spec §9.0), followed by the per-level ``vertex_counts``
and the metadata, committed last (spec §2).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.format.fragments import encode_dense_ranges_batch
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import ATTRIBUTES, VERTEX_COUNTS, VERTEX_FRAGMENTS, VERTICES
from zarr_vectors.kernels import (
    assign_chunks_and_bins,
    chunk_coords,
    sort_by_chunk_and_bin,
)
from zarr_vectors.store.arrays import (
    counts_array_metadata,
    group_metadata,
    row_array_metadata,
    write_counts,
)
from zarr_vectors.store.io import StoreIO, json_bytes
from zarr_vectors.store.shards import RowLayout, shard_key

__all__ = ["DEFAULT_BLOSC", "LevelStats", "WriteOptions", "commit_root", "write_vertex_level"]

DEFAULT_BLOSC: dict[str, Any] = {"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle"}
_FLUSH_BYTES = 64 * 2**20


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteOptions:
    """Less common write settings.

    Attributes
    ----------
    axis_names
        Names of the axes (default ``x, y, z, w`` truncated to ``D``).
    axis_units
        One unit for all axes or one per axis (UDUNITS-2 names such as ``"micrometer"``).
    rows_per_block
        ``R``: rows per inner chunk of every per-chunk array (spec §9.0).
    compression
        ``"blosc-lz4"`` (default, Blosc LZ4 with bit shuffle) or None for raw row blocks.
    """

    axis_names: tuple[str, ...] | None = None
    axis_units: str | tuple[str, ...] = "unknown"
    rows_per_block: int = 4096
    compression: str | None = "blosc-lz4"

    def blosc(self) -> dict[str, Any] | None:
        """Blosc settings of numeric row blocks, or None for uncompressed blocks."""
        return None if self.compression is None else DEFAULT_BLOSC


@dataclass(frozen=True, slots=True)
class LevelStats:
    """What a level write produced."""

    vertex_count: int
    chunk_count: int
    n_max: int


@dataclass(frozen=True, slots=True)
class _SortedVertices:
    perm: np.ndarray
    chunks: np.ndarray  # (m, D) zarr chunk indices of the occupied chunks
    chunk_offsets: np.ndarray  # (m + 1,)
    bin_offsets: np.ndarray  # (m, n_bins + 1) chunk-local


def _sort_into_chunks(
    positions: np.ndarray, bounds: tuple[np.ndarray, np.ndarray], grid: ChunkGrid
) -> _SortedVertices:
    span = chunk_coords(np.stack(bounds), grid.chunk_shape)
    lo, dense_shape = span[0], span[1] - span[0] + 1
    chunk_flat, bin_flat = assign_chunks_and_bins(
        positions, grid.chunk_shape, grid.bin_shape, grid.bins, lo, dense_shape
    )
    perm, occupied, chunk_offsets, bin_offsets = sort_by_chunk_and_bin(
        chunk_flat, bin_flat, grid.bins_per_chunk_total
    )
    del chunk_flat, bin_flat
    chunks = np.stack(np.unravel_index(occupied, tuple(dense_shape)), axis=1)
    return _SortedVertices(perm, chunks + lo - grid.origin, chunk_offsets, bin_offsets)


def _round_up(value: int, multiple: int) -> int:
    return max(multiple, -(-value // multiple) * multiple)


def _fragment_layout(blob_nbytes: int) -> RowLayout:
    block = int(min(65536, max(256, 1 << max(0, (blob_nbytes - 1).bit_length()))))
    return RowLayout(np.dtype(np.uint8), (), block, _round_up(blob_nbytes, block), None)


class _Batcher:
    """Collects encoded shards and writes them in concurrent batches."""

    def __init__(self, io: StoreIO) -> None:
        self.io = io
        self.items: list[tuple[str, bytes]] = []
        self.nbytes = 0

    def add(self, key: str, value: bytes) -> None:
        self.items.append((key, value))
        self.nbytes += len(value)
        if self.nbytes >= _FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        self.io.set_many(self.items)
        self.items, self.nbytes = [], 0


@dataclass(frozen=True, slots=True)
class _Column:
    """One per-chunk row array to write: its path, source rows, layout and zv_array tag."""

    path: str
    source: np.ndarray
    layout: RowLayout
    tag: dict[str, Any]


def _empty_sort(ndim: int) -> _SortedVertices:
    return _SortedVertices(
        np.empty(0, np.int64),
        np.empty((0, ndim), np.int64),
        np.zeros(1, np.int64),
        np.zeros((0, 1), np.int64),
    )


def _columns(
    base: str,
    positions: np.ndarray,
    attributes: dict[str, np.ndarray],
    n_max: int,
    options: WriteOptions,
) -> list[_Column]:
    r, blosc = options.rows_per_block, options.blosc()
    columns = [
        _Column(
            f"{base}/{VERTICES}",
            positions,
            RowLayout(positions.dtype, positions.shape[1:], r, n_max, blosc),
            {"zv_array": VERTICES},
        )
    ]
    for name, values in attributes.items():
        layout = RowLayout(values.dtype, values.shape[1:], r, n_max, blosc)
        tag = {"zv_array": "attribute", "name": name}
        columns.append(_Column(f"{base}/{ATTRIBUTES}/{name}", values, layout, tag))
    return columns


def _array_documents(
    base: str, grid_shape: tuple[int, ...], columns: list[_Column], fragments: RowLayout
) -> list[tuple[str, bytes]]:
    docs = [
        (f"{c.path}/zarr.json", row_array_metadata(grid_shape, c.layout, c.tag)) for c in columns
    ]
    fragment_tag = {"zv_array": VERTEX_FRAGMENTS, "encoding": "fragment_index_v1"}
    docs.append(
        (
            f"{base}/{VERTEX_FRAGMENTS}/zarr.json",
            row_array_metadata(grid_shape, fragments, fragment_tag),
        )
    )
    docs.append(
        (
            f"{base}/{VERTEX_COUNTS}/zarr.json",
            counts_array_metadata(grid_shape, {"zv_array": VERTEX_COUNTS}),
        )
    )
    if len(columns) > 1:
        docs.append((f"{base}/{ATTRIBUTES}/zarr.json", group_metadata({})))
    return docs


def _write_shards(
    io: StoreIO,
    base: str,
    sorted_: _SortedVertices,
    columns: list[_Column],
    fragments: tuple[RowLayout, np.ndarray],
) -> None:
    frag_layout, blobs = fragments
    batcher = _Batcher(io)
    for j, chunk in enumerate(sorted_.chunks):
        rows = sorted_.perm[sorted_.chunk_offsets[j] : sorted_.chunk_offsets[j + 1]]
        for column in columns:
            batcher.add(
                shard_key(column.path, chunk, len(column.layout.row_shape)),
                column.layout.encode_shard(np.take(column.source, rows, axis=0)),
            )
        batcher.add(
            shard_key(f"{base}/{VERTEX_FRAGMENTS}", chunk, 0), frag_layout.encode_shard(blobs[j])
        )
    batcher.flush()


def write_vertex_level(
    io: StoreIO,
    level: int,
    positions: np.ndarray,
    attributes: dict[str, np.ndarray],
    grid: ChunkGrid,
    options: WriteOptions,
    bounds: tuple[np.ndarray, np.ndarray],
) -> LevelStats:
    """Write the vertices and per-vertex attributes of one level (spec §9.1 to §9.4).

    Parameters
    ----------
    io
        Destination.
    level
        Level number (0 = full resolution).
    positions
        ``(n, D)`` validated, finite vertex coordinates, ``n >= 0``.
    attributes
        Validated per-vertex attributes, each with ``n`` rows.
    grid
        The store's chunk grid (it must contain every vertex).
    options
        Write settings.
    bounds
        Per-axis minimum and maximum of ``positions`` (float64).

    Returns
    -------
    LevelStats
        Counts of what was written.
    """
    base = str(level)
    empty = positions.shape[0] == 0
    sorted_ = _empty_sort(grid.ndim) if empty else _sort_into_chunks(positions, bounds, grid)
    counts = np.diff(sorted_.chunk_offsets)
    n_max = _round_up(int(counts.max(initial=0)), options.rows_per_block)
    blobs = encode_dense_ranges_batch(
        sorted_.bin_offsets[:, :-1], np.diff(sorted_.bin_offsets, axis=1)
    )
    frag_layout = _fragment_layout(max(blobs.shape[1], 16))
    columns = _columns(base, positions, attributes, n_max, options)
    grid_shape = tuple(int(g) for g in grid.shape)
    io.set_many(_array_documents(base, grid_shape, columns, frag_layout))
    _write_shards(io, base, sorted_, columns, (frag_layout, blobs))
    write_counts(io.store, f"{base}/{VERTEX_COUNTS}", sorted_.chunks, counts)
    return LevelStats(int(positions.shape[0]), int(counts.shape[0]), n_max)


def commit_root(
    io: StoreIO, root: RootMetadata, level: LevelMetadata, summary: dict[str, Any]
) -> None:
    """Write level metadata, ``metadata.json``, root ``.zattrs`` and root ``zarr.json`` last.

    The root ``zarr.json`` carries ``zarr_vectors_version``; until it is written the store
    does not open as a Zarr Vectors store (spec §2, commit order).
    """
    level_doc = level.to_json()
    io.set_many(
        [
            (f"{level.level}/.zattrs", json_bytes(level_doc)),
            (f"{level.level}/zarr.json", group_metadata(level_doc)),
        ]
    )
    root_doc = root.to_json()
    stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    io.set_many(
        [
            ("metadata.json", json_bytes({**summary, "creation_timestamp": stamp})),
            (".zattrs", json_bytes(root_doc)),
        ]
    )
    io.set("zarr.json", group_metadata(root_doc))
