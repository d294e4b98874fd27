"""Numba kernels: arrays in, arrays out, no I/O (chunk grid and bins spec §5, object
manifests spec §7, bbox spec §8, coarse levels of object kinds spec §4.3.3)."""

from __future__ import annotations

from zarr_vectors.kernels._jit import CompileLog, set_kernel_mode
from zarr_vectors.kernels._threads import THREADS, results_of, shared_pool
from zarr_vectors.kernels.binning import (
    assign_chunks_and_bins,
    bin_coords,
    bounds_and_nonfinite,
    chunk_coords,
    points_in_box,
)
from zarr_vectors.kernels.bounds import segment_bounds
from zarr_vectors.kernels.coarse_tables import CoarseGrid, CoarseObjects, coarse_cells
from zarr_vectors.kernels.coarsen_clusters import (
    cluster_vertices,
    coarsen_graphs,
    coarsen_meshes,
    component_labels,
)
from zarr_vectors.kernels.coarsen_polylines import coarsen_polylines
from zarr_vectors.kernels.coarsen_skeletons import coarsen_skeletons
from zarr_vectors.kernels.manifests import decode_manifests, encode_manifests
from zarr_vectors.kernels.object_sparsity import (
    cell_ranks,
    first_vertex_cells,
    id_hashes,
    keep_longest,
    keep_per_cell,
    polyline_lengths,
)
from zarr_vectors.kernels.ranges import concat_ranges
from zarr_vectors.kernels.sorting import (
    chunk_and_bin_destinations,
    counting_sort,
    destinations_of_positions,
    scatter_rows,
    sort_by_chunk_and_bin,
)

__all__ = [
    "CompileLog",
    "set_kernel_mode",
    "THREADS",
    "shared_pool",
    "results_of",
    "concat_ranges",
    "bounds_and_nonfinite",
    "segment_bounds",
    "chunk_coords",
    "bin_coords",
    "assign_chunks_and_bins",
    "counting_sort",
    "sort_by_chunk_and_bin",
    "chunk_and_bin_destinations",
    "destinations_of_positions",
    "scatter_rows",
    "points_in_box",
    "encode_manifests",
    "decode_manifests",
    "CoarseGrid",
    "CoarseObjects",
    "coarse_cells",
    "coarsen_polylines",
    "coarsen_skeletons",
    "coarsen_graphs",
    "coarsen_meshes",
    "cluster_vertices",
    "component_labels",
    "polyline_lengths",
    "keep_longest",
    "cell_ranks",
    "first_vertex_cells",
    "keep_per_cell",
    "id_hashes",
]
