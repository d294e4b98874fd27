"""The read engine: a level's reader, row and point reads, read plans, shard indexes, checks.

Other packages import from this face only.

Modules
-------
reader
    :class:`LevelReader`: one level of one store, its chunks and rows.
row_reads, point_reads, _read_plans
    Row runs of chunks, box reads of point clouds, and the plans both read by.
shard_indexes
    The shard indexes a reader fetches once.
block_cache
    The decoded row blocks an open store keeps for its next queries.
read_checks, global_shapes
    What a reader checks before it trusts a chunk or a global array.
"""

from __future__ import annotations

from zarr_vectors.read._read_plans import RangeTable
from zarr_vectors.read.block_cache import DEFAULT_CACHE_BYTES, BlockCache
from zarr_vectors.read.global_shapes import check_global_shapes
from zarr_vectors.read.level_documents import existing_root
from zarr_vectors.read.point_reads import RowRuns
from zarr_vectors.read.read_checks import PlacementRuns, check_placement
from zarr_vectors.read.reader import ChunkRows, LevelReader

__all__ = [
    "BlockCache",
    "DEFAULT_CACHE_BYTES",
    "LevelReader",
    "ChunkRows",
    "existing_root",
    "RowRuns",
    "PlacementRuns",
    "RangeTable",
    "check_placement",
    "check_global_shapes",
]
