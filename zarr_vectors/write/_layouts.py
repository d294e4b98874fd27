"""Row layouts of a level's arrays: the fragment blob layouts (spec §9.2), the blob array
of a level and its tag (§9.7), and the column specs of the per-vertex arrays (§9.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.format.fragments import fragment_index_nbytes
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.names import ATTRIBUTES, FRAGMENT_RECORDS, VERTEX_FRAGMENTS, VERTICES
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "ColumnSpec",
    "blob_array_of",
    "blob_layout",
    "blob_tag",
    "column_shapes",
    "point_blob_layout",
    "round_up",
    "vertex_column_specs",
]


def round_up(value: int, multiple: int) -> int:
    """``value`` rounded up to a positive multiple of ``multiple``."""
    return max(multiple, -(-value // multiple) * multiple)


_BLOB_BLOCKS = 32
"""Blocks in the longest blob of an object level, at most (about): see :func:`blob_layout`."""


def _blob_block(nbytes: int) -> int:
    """The smallest power of two >= ``nbytes``, clipped to [256, 65536] (spec §9.2)."""
    return int(min(65536, max(256, 1 << max(0, (nbytes - 1).bit_length()))))


def blob_layout(
    blob_nbytes: int, block: int | None = None, blosc: dict[str, Any] | None = None
) -> RowLayout:
    """Layout of a ``uint8`` blob array whose longest blob has ``blob_nbytes`` (spec §9.2).

    Raw blocks (``blosc`` None): a chunk stores only the blocks its own blob covers, so
    blocks much shorter than the longest blob keep short blobs short; by default a block
    is about 1/32 of the longest blob (:data:`_BLOB_BLOCKS`), so a shard index holds about
    32 entries per chunk. Compressed blocks (format 1.4, spec §9.0.4): one block holds
    the longest blob (up to 64 KiB), since zeros after a blob compress to almost nothing
    and one block per blob compresses best and keeps the shard index one entry per chunk.
    ``block`` asks for longer blocks (an append keeps its store's, so that chunks it does
    not change keep their bytes); a shorter one is raised to the default.
    """
    default = _blob_block(blob_nbytes if blosc else -(-blob_nbytes // _BLOB_BLOCKS))
    block = default if block is None else max(block, default)
    return RowLayout(np.dtype(np.uint8), (), block, round_up(blob_nbytes, block), blosc)


def point_blob_layout(grid: ChunkGrid) -> RowLayout:
    """Layout of a point cloud's ``vertex_fragments``: every dense blob has the same length.

    A point chunk's blob holds one range per bin (spec §6.6), so its length depends on the
    grid alone, and a chunk's blob can be written before the other chunks are known.
    """
    nbytes = fragment_index_nbytes(grid.bins_per_chunk_total, grid.bins_per_chunk_total, 0)
    return blob_layout(nbytes, _blob_block(nbytes))


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One per-vertex row array of a level: its path, row layout and ``zv_array`` tag."""

    path: str
    layout: RowLayout
    tag: dict[str, Any]


def vertex_column_specs(
    base: str,
    positions: tuple[np.dtype[Any], tuple[int, ...]],
    attributes: dict[str, tuple[np.dtype[Any], tuple[int, ...]]],
    n_max: int,
    options: WriteOptions,
    placed: bool = True,
) -> list[ColumnSpec]:
    """The vertex array and one array per attribute, given each column's dtype and row shape
    (``placed``: shards with place records, spec §9.0.2)."""
    r, blosc = options.block_rows, options.blosc(VERTICES)
    per_shard = options.shard_shape(positions[1][0])
    specs = [
        ColumnSpec(
            f"{base}/{VERTICES}",
            RowLayout(
                positions[0], positions[1], r, n_max, blosc, shard_chunks=per_shard, placed=placed
            ),
            {"zv_array": VERTICES},
        )
    ]
    blosc = options.blosc(ATTRIBUTES)
    for name, (dtype, row_shape) in attributes.items():
        layout = RowLayout(dtype, row_shape, r, n_max, blosc, shard_chunks=per_shard, placed=placed)
        tag = {"zv_array": "attribute", "name": name}
        specs.append(ColumnSpec(f"{base}/{ATTRIBUTES}/{name}", layout, tag))
    return specs


def column_shapes(values: np.ndarray) -> tuple[np.dtype[Any], tuple[int, ...]]:
    """``(dtype, row shape)`` of a column of rows."""
    return values.dtype, tuple(values.shape[1:])


def blob_array_of(level: int, options: WriteOptions) -> str:
    """The per-chunk blob array a level's writer fills: ``fragment_records`` at level 0 of
    an object kind from format 1.6 (spec §6.9), else ``vertex_fragments``."""
    return FRAGMENT_RECORDS if level == 0 and options.fragment_records() else VERTEX_FRAGMENTS


def blob_tag(name: str) -> dict[str, str]:
    """The ``zv_array`` attributes of the blob array ``name`` (spec §9.2, §9.7, §9.7.1)."""
    encoding = "fragment_record_v1" if name == FRAGMENT_RECORDS else "fragment_index_v1"
    return {"zv_array": name, "encoding": encoding}
