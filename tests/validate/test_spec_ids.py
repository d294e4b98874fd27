"""The implemented check ids and severities match the tables of spec §11.

The ids are parsed from ``spec/zarr_vectors.md``, so a spec change (a new id, a renamed
id, a changed severity) fails here until the validator follows it.
"""

from __future__ import annotations

import re
from pathlib import Path

from zarr_vectors.validate import CHECKS

SPEC = Path(__file__).resolve().parents[2] / "spec" / "zarr_vectors.md"
ROW = re.compile(r"^\| `(L[1-5]\.[a-z0-9_]+)` \| (error|warning) \|", re.MULTILINE)

# Ids of spec §11 not implemented yet, and why.
NOT_IMPLEMENTED = {
    # L3 checks of object kinds: the library cannot write object stores yet, so links,
    # link fragments, manifests, the object index, groupings and cross-chunk links have
    # no data to check against.
    "L3.link_frag_parallel",
    "L3.frag_object_order",
    "L3.frag_maximal_runs",
    "L3.object_index_offsets",
    "L3.manifest_decodes",
    "L3.manifest_chunks",
    "L3.manifest_fragments",
    "L3.manifest_partition",
    "L3.manifest_blocks_canonical",
    "L3.object_empty",
    "L3.fragment_object_id",
    "L3.object_attribute_finite",
    "L3.groupings_members",
    "L3.link_rows_bound",
    "L3.link_entries",
    "L3.link_anchor",
    "L3.link_single_object",
    "L3.no_self_loops",
    "L3.edge_orientation",
    "L3.no_duplicate_links",
    "L3.no_degenerate_faces",
    "L3.no_duplicate_faces",
    "L3.face_chunk",
    "L3.polyline_links",
    "L3.skeleton_parent_once",
    "L3.ccl_gid_valid",
    "L3.ccl_different_chunks",
    "L3.ccl_sorted",
    # L4 (geometry claims and topology): every check concerns an object kind.
    "L4.polyline_min_vertices",
    "L4.streamline_length_bounds",
    "L4.graph_tree",
    "L4.skeleton_tree",
    "L4.skeleton_swc",
    "L4.mesh_closed",
    "L4.mesh_orientation",
    "L4.mesh_unreferenced_vertices",
}


def spec_checks() -> dict[str, str]:
    """Every ``id -> severity`` row of the tables of spec §11."""
    rows = ROW.findall(SPEC.read_text(encoding="utf-8"))
    table = dict(rows)
    assert len(table) == len(rows), "an id appears twice in the spec tables"
    return table


def test_spec_tables_parse() -> None:
    table = spec_checks()
    assert len(table) > 100
    assert table["L1.store_exists"] == "error"


def test_implemented_ids_are_the_spec_ids() -> None:
    table = spec_checks()
    assert table.keys() >= NOT_IMPLEMENTED, NOT_IMPLEMENTED - table.keys()
    assert set(CHECKS) == table.keys() - NOT_IMPLEMENTED


def test_severities_follow_the_spec() -> None:
    table = spec_checks()
    wrong = {i: (sev, table[i]) for i, sev in CHECKS.items() if table.get(i) != sev}
    assert not wrong
