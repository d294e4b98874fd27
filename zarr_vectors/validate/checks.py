"""The registry of implemented validation checks: stable id → severity (spec §11).

Every finding the validator reports uses an id of this table, with the severity the spec
gives it. ``tests/validate/test_spec_ids.py`` compares this table with the tables of
spec §11, so an id added to or changed in the spec cannot silently diverge.
"""

from __future__ import annotations

from typing import Final

from zarr_vectors.validate.report import Severity

__all__ = ["CHECKS", "severity_of"]

_E: Final = "error"
_W: Final = "warning"

_L1: dict[str, Severity] = {
    "L1.store_exists": _E,
    "L1.interrupted_write": _W,
    "L1.symlink": _E,
    "L1.special_file": _E,
    "L1.root_zarr_json": _E,
    "L1.root_complete": _E,
    "L1.foreign_layout": _E,
    "L1.root_zattrs": _E,
    "L1.metadata_json": _W,
    "L1.root_required_keys": _E,
    "L1.chunk_shape": _E,
    "L1.base_bin_shape": _E,
    "L1.level_group": _E,
    "L1.level_zattrs": _E,
    "L1.unlisted_level_group": _W,
    "L1.root_unknown_node": _W,
    "L1.vertices_array": _E,
    "L1.vertex_fragments_array": _E,
    "L1.vertex_counts_array": _E,
    "L1.attributes_group": _E,
    "L1.fragment_attributes_group": _E,
    "L1.object_nodes_required": _E,
    "L1.links_children": _E,
    "L1.cross_chunk_links_required": _E,
    "L1.forbidden_nodes": _E,
    "L1.object_attributes_group": _E,
    "L1.groupings_nodes": _E,
    "L1.level_unknown_node": _W,
}

_L2: dict[str, Severity] = {
    "L2.root_zattrs_equal": _E,
    "L2.version_format": _E,
    "L2.version_supported": _E,
    "L2.geometry_type_valid": _E,
    "L2.spatial_dims_valid": _E,
    "L2.chunk_shape_length": _E,
    "L2.chunk_shape_positive": _E,
    "L2.base_bin_shape_length": _E,
    "L2.base_bin_shape_positive": _E,
    "L2.bin_divides_chunk": _E,
    "L2.bin_le_chunk": _E,
    "L2.chunk_grid_origin_valid": _E,
    "L2.axis_units_valid": _E,
    "L2.bounding_box_valid": _E,
    "L2.bounding_box_present": _E,
    "L2.grid_origin_consistent": _E,
    "L2.grid_shape_consistent": _E,
    "L2.optional_keys_types": _W,
    "L2.mesh_keys": _E,
    "L2.graph_keys": _E,
    "L2.skeleton_keys": _E,
    "L2.streamline_keys": _E,
    "L2.type_keys_foreign": _W,
    "L2.root_unknown_key": _W,
    "L2.multiscales_valid": _E,
    "L2.axes_valid": _E,
    "L2.axes_type": _W,
    "L2.axes_units_consistent": _W,
    "L2.datasets_valid": _E,
    "L2.dataset_bin_ratio": _E,
    "L2.dataset_bin_shape": _E,
    "L2.dataset_sparsity": _E,
    "L2.coordinate_transformations": _E,
    "L2.level_zattrs_equal": _E,
    "L2.level_keys": _E,
    "L2.level_matches_dataset": _E,
    "L2.level_counts_plausible": _E,
    "L2.zv_array_tag": _E,
    "L2.sharding_layout": _E,
    "L2.shard_version": _E,
    "L2.blob_codecs": _E,
    "L2.inner_codecs_default": _W,
    "L2.fill_value": _E,
    "L2.vertices_meta": _E,
    "L2.blob_array_meta": _E,
    "L2.vertex_counts_meta": _E,
    "L2.attribute_name": _E,
    "L2.attribute_meta": _E,
    "L2.attribute_reserved": _E,
    "L2.fragment_attribute_meta": _E,
    "L2.links_meta": _E,
    "L2.object_index_meta": _E,
    "L2.object_attribute_meta": _E,
    "L2.groupings_meta": _E,
    "L2.groupings_attribute_meta": _E,
    "L2.cross_chunk_links_meta": _E,
    "L2.gid_capacity": _E,
}

_L3: dict[str, Severity] = {
    "L3.counts_range": _E,
    "L3.shard_present": _E,
    "L3.empty_chunk_clean": _E,
    "L3.shard_index": _E,
    "L3.chunk_place": _E,
    "L3.global_chunks": _E,
    "L3.shard_rows_present": _E,
    "L3.shard_rows_beyond": _W,
    "L3.frag_truncated": _E,
    "L3.frag_magic": _E,
    "L3.frag_version": _E,
    "L3.frag_flags": _E,
    "L3.frag_range_count": _E,
    "L3.frag_popcount": _E,
    "L3.frag_padding": _E,
    "L3.frag_range_values": _E,
    "L3.frag_csr_start": _E,
    "L3.frag_csr_monotone": _E,
    "L3.frag_indices_non_negative": _E,
    "L3.frag_trailing_bytes": _E,
    "L3.frag_bounds": _E,
    "L3.counts_match_fragments": _E,
    "L3.frag_tiling": _E,
    "L3.frag_dense_form": _W,
    "L3.fragment_attribute_rows": _E,
    "L3.vertices_finite": _E,
    "L3.vertex_in_chunk": _E,
    "L3.vertex_in_bin": _E,
    "L3.vertex_count_total": _E,
    "L3.chunk_count_total": _E,
    "L3.bounding_box_exact": _E,
    "L3.attribute_finite": _W,
    "L3.link_frag_parallel": _E,
    "L3.frag_object_order": _E,
    "L3.frag_maximal_runs": _E,
    "L3.object_index_offsets": _E,
    "L3.manifest_decodes": _E,
    "L3.manifest_chunks": _E,
    "L3.manifest_fragments": _E,
    "L3.manifest_partition": _E,
    "L3.manifest_blocks_canonical": _W,
    "L3.object_empty": _W,
    "L3.fragment_object_id": _E,
    "L3.object_attribute_finite": _W,
    "L3.groupings_members": _E,
    "L3.link_rows_bound": _E,
    "L3.link_entries": _E,
    "L3.link_anchor": _E,
    "L3.link_single_object": _E,
    "L3.no_self_loops": _E,
    "L3.edge_orientation": _E,
    "L3.no_duplicate_links": _E,
    "L3.no_degenerate_faces": _E,
    "L3.no_duplicate_faces": _W,
    "L3.face_chunk": _E,
    "L3.polyline_links": _E,
    "L3.skeleton_parent_once": _E,
    "L3.ccl_gid_valid": _E,
    "L3.ccl_different_chunks": _E,
    "L3.ccl_sorted": _W,
}

_L4: dict[str, Severity] = {
    "L4.polyline_min_vertices": _W,
    "L4.streamline_length_bounds": _W,
    "L4.graph_tree": _E,
    "L4.skeleton_tree": _E,
    "L4.skeleton_swc": _E,
    "L4.mesh_closed": _E,
    "L4.mesh_orientation": _W,
    "L4.mesh_unreferenced_vertices": _W,
}

_L5: dict[str, Severity] = {
    "L5.levels_contiguous": _W,
    "L5.bin_ratio_monotone": _E,
    "L5.vertex_count_non_increasing": _E,
    "L5.object_count_non_increasing": _E,
    "L5.object_sparsity_consistent": _W,
    "L5.attribute_names_match": _W,
    "L5.coarse_vertices_in_bbox": _E,
}

CHECKS: Final[dict[str, Severity]] = {**_L1, **_L2, **_L3, **_L4, **_L5}
"""Every check id this validator implements, with its severity (spec §11.2 to §11.6)."""


def severity_of(check_id: str) -> Severity:
    """Severity of an implemented check id (KeyError for an unknown id: a programming error)."""
    return CHECKS[check_id]
