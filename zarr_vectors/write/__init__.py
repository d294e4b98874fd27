"""The write engine: one level's chunks and shards, object tables and runs, input checks.

Other packages import from this face only. The per-kind writers (:mod:`zarr_vectors.geometry`),
the streaming and append writers (:mod:`zarr_vectors.update`), the converters and the parallel
writers consume it.

Modules
-------
options
    :class:`WriteOptions`, the settings every writer takes as ``options=``.
_pipeline
    The shared write path of a level: its rows in storage order, written chunk by chunk.
_sorting
    Storage order: chunks and bins of vertices, sorted point columns and chunks.
_layouts
    Row layouts: fragment blob layouts, the blob array of a level, vertex column specs.
_level_writer
    :class:`LevelWriter` and :func:`write_chunk_array`: a level's per-chunk arrays.
_commit
    Level and root metadata, the root commit written last.
_shard_writes
    Shard assembly and batched writes of chunk keys.
_inputs, _object_inputs
    Checks and normalisation of user arrays (positions, ids, attributes, object tables);
    exported as the modules ``inputs`` and ``object_inputs``.
_writer_arguments
    The keyword arguments every writer shares, their checks, ``mode`` and the destination,
    the ``append_*`` function of each kind; exported as the module ``writer_arguments``.
_new_store
    A new store's options, bounds, chunk grid and root metadata; exported as the module
    ``new_store``.
_kind_writers
    :class:`KindWriter`, what each kind's writer takes, and the one object write path.
_objects, _object_runs
    Object tables: the object index, object attributes, object runs per chunk.
_chunk_shapes
    The default chunk shape of a store; exported as the module ``chunk_shapes``.
levels, _level_plan, _point_levels
    Levels of detail: :class:`Levels`, what a writer asks for; the schedule of a point
    cloud's levels and their coarse rows, written from level 0 in memory (spec §4.3.2).
_first_levels, _stored_levels, _object_levels, _object_coarsening, _object_batches
    Their computation chunk by chunk: point levels beside level 0 or from a stored level 0,
    and the levels of the object kinds (spec §4.3.3).
_level_spill, _spill_files, _spill_writes
    A coarse object level out of core: spilled batch by batch to files, then written
    chunk by chunk (:class:`LevelSpill`, :func:`write_spilled_level`).
"""

from __future__ import annotations

from zarr_vectors.write import _chunk_shapes as chunk_shapes
from zarr_vectors.write import _inputs as inputs
from zarr_vectors.write import _new_store as new_store
from zarr_vectors.write import _object_inputs as object_inputs
from zarr_vectors.write import _writer_arguments as writer_arguments
from zarr_vectors.write._bin_merge import BinMerge
from zarr_vectors.write._commit import commit_root, name_new_arrays, write_level_metadata
from zarr_vectors.write._first_levels import FirstLevels, chunk_candidate
from zarr_vectors.write._kind_writers import KindWriter, write_kind
from zarr_vectors.write._layouts import blob_layout, column_shapes, point_blob_layout, round_up
from zarr_vectors.write._level_plan import (
    candidate_steps,
    choose_candidates,
    coarse_grid,
    level_options,
    level_steps,
    recorded_settings,
)
from zarr_vectors.write._level_spill import LevelSpill
from zarr_vectors.write._level_writer import LevelStats, LevelWriter
from zarr_vectors.write._object_batches import ObjectBatches, ObjectSummary
from zarr_vectors.write._object_coarsening import coarse_table, object_method
from zarr_vectors.write._object_levels import (
    LevelPasses,
    coarse_batches,
    graph_level_builder,
    mesh_level_builder,
    object_level_builder,
    polyline_level_builder,
    skeleton_level_builder,
    write_object_levels,
)
from zarr_vectors.write._object_sparsity import SparseLevel
from zarr_vectors.write._objects import (
    Groups,
    ObjectTable,
    write_encoded_object_index,
    write_global,
    write_object_columns,
    write_object_index,
    write_objects,
)
from zarr_vectors.write._pipeline import write_point_level, write_sorted_points
from zarr_vectors.write._point_levels import chunk_level, coarse_rows, write_point_levels
from zarr_vectors.write._shard_writes import Batcher, ShardAssembler, shard_major_order, shards_of
from zarr_vectors.write._sorting import (
    SortedPoints,
    bin_sorted_chunk,
    dense_bounds_span,
    grid_indices,
    sort_points,
)
from zarr_vectors.write._spill_writes import write_spilled_level
from zarr_vectors.write._stored_levels import ChunkColumns, StoredLevel0, build_point_levels
from zarr_vectors.write._writer_arguments import (
    ObjectAppendArgs,
    ObjectWriteArgs,
    WriteMode,
    new_store_destination,
)
from zarr_vectors.write.levels import Levels, level_settings, levels_done
from zarr_vectors.write.options import DEFAULT_BLOSC, DEFAULT_COMPRESSION, WriteOptions

__all__ = [
    "WriteOptions",
    "WriteMode",
    "ObjectWriteArgs",
    "ObjectAppendArgs",
    "new_store_destination",
    "KindWriter",
    "write_kind",
    "DEFAULT_BLOSC",
    "DEFAULT_COMPRESSION",
    "LevelStats",
    "LevelWriter",
    "bin_sorted_chunk",
    "blob_layout",
    "column_shapes",
    "commit_root",
    "name_new_arrays",
    "dense_bounds_span",
    "grid_indices",
    "point_blob_layout",
    "round_up",
    "write_level_metadata",
    "write_point_level",
    "write_sorted_points",
    "SortedPoints",
    "sort_points",
    "Levels",
    "level_settings",
    "levels_done",
    "coarse_grid",
    "coarse_rows",
    "level_options",
    "BinMerge",
    "ChunkColumns",
    "FirstLevels",
    "StoredLevel0",
    "build_point_levels",
    "candidate_steps",
    "choose_candidates",
    "chunk_candidate",
    "chunk_level",
    "level_steps",
    "recorded_settings",
    "write_point_levels",
    "Groups",
    "ObjectBatches",
    "ObjectTable",
    "write_global",
    "write_object_columns",
    "write_object_index",
    "write_encoded_object_index",
    "write_objects",
    "write_object_levels",
    "polyline_level_builder",
    "skeleton_level_builder",
    "graph_level_builder",
    "mesh_level_builder",
    "object_level_builder",
    "object_method",
    "LevelPasses",
    "LevelSpill",
    "write_spilled_level",
    "coarse_batches",
    "ObjectSummary",
    "SparseLevel",
    "coarse_table",
    "Batcher",
    "ShardAssembler",
    "shard_major_order",
    "shards_of",
    "chunk_shapes",
    "inputs",
    "object_inputs",
    "new_store",
    "writer_arguments",
]
