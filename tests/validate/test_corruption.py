"""Corruption corpus: for every implemented check id, one store damaged in exactly one way.

Each case builds a valid store, applies one damage and asserts that validation reports the
check id (and that the report is not ok when the id is an error). ``test_corpus_covers``
makes sure no implemented id lacks a case.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

from tests.query.test_object_order import OBJECT_ORDER_IDS
from tests.validate import stores as s
from tests.validate.test_coarse_link_corruption import COARSE_LINK_IDS
from tests.validate.test_l4 import COVERED as L4_COVERED
from tests.validate.test_level_corruption import LEVEL_IDS
from tests.validate.test_object_chunks_corruption import OBJECT_CHUNKS_IDS
from tests.validate.test_object_corruption import OBJECT_IDS
from tests.validate.test_object_level_corruption import OBJECT_LEVEL_IDS
from tests.validate.test_record_corruption import RECORD_IDS
from tests.validate.test_shard_corruption import SHARDED_IDS
from zarr_vectors.format.fragment_encoding import encode_dense_ranges
from zarr_vectors.format.fragments import FragmentIndex
from zarr_vectors.store.io import StoreIO
from zarr_vectors.validate import CHECKS, validate
from zarr_vectors.validate.context import Context, LevelFacts
from zarr_vectors.validate.pyramid import run as run_pyramid
from zarr_vectors.validate.report import ValidationReport

Store = MemoryStore
Damage = Callable[[Store], Any]


@dataclass(frozen=True)
class Case:
    """One corruption: which check must fire, on which store, after which damage."""

    check_id: str
    damage: Damage
    build: Callable[[], Store] = s.point_store
    level: int = 3


# -- damages ------------------------------------------------------------------------------


def root(key: str, value: Any) -> Damage:
    return lambda st: s.edit_root(st, lambda a: a.__setitem__(key, value))


def level0(key: str, value: Any) -> Damage:
    return lambda st: s.edit_level(st, lambda a: a.__setitem__(key, value))


def multiscale(change: Callable[[dict[str, Any]], Any]) -> Damage:
    return lambda st: s.edit_root(st, lambda a: change(a["multiscales"][0]))


def dataset0(key: str, value: Any) -> Damage:
    return multiscale(lambda m: m["datasets"][0].__setitem__(key, value))


def array(path: str, change: Callable[[dict[str, Any]], Any]) -> Damage:
    return lambda st: s.edit_array(st, path, change)


def sharding(path: str, key: str, value: Any) -> Damage:
    return array(path, lambda d: d["codecs"][0]["configuration"].__setitem__(key, value))


def write(key: str, doc: Any) -> Damage:
    return lambda st: s.write_json(st, key, doc)


def remove(key: str) -> Damage:
    return lambda st: s.delete(st, key)


def both(*damages: Damage) -> Damage:
    def apply(st: Store) -> None:
        for damage in damages:
            damage(st)

    return apply


def vertices_doc(st: Store) -> dict[str, Any]:
    doc: dict[str, Any] = s.read_json(st, "0/vertices/zarr.json")
    return doc


def copy_array(source: str, target: str, change: Callable[[dict[str, Any]], Any]) -> Damage:
    def apply(st: Store) -> None:
        doc = s.read_json(st, f"{source}/zarr.json")
        change(doc)
        s.write_json(st, f"{target}/zarr.json", doc)

    return apply


def blob_bytes(change: Callable[[bytearray], Any]) -> Damage:
    """Edit the bytes of the first chunk's (valid, dense) fragment index."""

    def apply(st: Store) -> None:
        starts, counts = s.get_blob(st)
        blob = bytearray(encode_dense_ranges(starts, counts))
        change(blob)
        s.put_blob(st, bytes(blob))

    return apply


def blob_of(make: Callable[[np.ndarray, np.ndarray], bytes]) -> Damage:
    """Replace the first chunk's fragment index by ``make(starts, counts)``."""

    def apply(st: Store) -> None:
        starts, counts = s.get_blob(st)
        s.put_blob(st, make(starts, counts))

    return apply


def explicit_blob(offsets: list[int], indices: list[int]) -> Damage:
    """A blob of one range fragment covering the chunk followed by explicit fragments."""

    def make(starts: np.ndarray, counts: np.ndarray) -> bytes:
        n = int(counts.sum())
        n_expl = len(offsets) - 1
        frags = 1 + n_expl
        header = struct.pack("<IHHII", 0x5A564647, 1, 0, frags, 1)
        bitmap = bytes([1]) + bytes(7)
        table = struct.pack("<qq", 0, n)
        csr = struct.pack(f"<{len(offsets)}I", *offsets)
        rows = struct.pack(f"<{len(indices)}q", *indices)
        return header + bitmap + table + csr + rows

    return blob_of(make)


def set_counts(delta: int) -> Damage:
    def apply(st: Store) -> None:
        g, n = s.first_chunk(st)
        s.set_count(st, g, n + delta)

    return apply


def vertices(change: Callable[[np.ndarray], Any]) -> Damage:
    return lambda st: s.edit_rows(st, "0/vertices", change)


def swap_bins(rows: np.ndarray) -> None:
    rows[[0, -1]] = rows[[-1, 0]]


def add_fragment_attribute(f_max: int) -> Damage:
    """Add ``fragment_attributes/w`` (F_max rows) with a shard for every occupied chunk."""

    def apply(st: Store) -> None:
        grid = tuple(vertices_doc(st)["shape"][:3])
        layout = s.RowLayout(np.dtype(np.float32), (), 4, f_max, s.BLOSC)
        doc = s.json.loads(
            s.row_array_metadata(grid, layout, {"zv_array": "fragment_attribute", "name": "w"})
        )
        s.write_json(st, "0/fragment_attributes/zarr.json", s.group_doc())
        s.write_json(st, "0/fragment_attributes/w/zarr.json", doc)
        for g, _ in s.occupied(st):
            rows = np.zeros(min(f_max, 8), dtype=np.float32)
            s.put_rows(st, "0/fragment_attributes/w", g, rows)

    return apply


def split_first_fragment(starts: np.ndarray, counts: np.ndarray) -> bytes:
    """A valid non-dense index: fragment 0 split into two ranges (F = P + 1)."""
    half = int(counts[0]) // 2
    new_starts = np.concatenate([[starts[0], starts[0] + half], starts[1:]])
    new_counts = np.concatenate([[half, counts[0] - half], counts[1:]])
    return encode_dense_ranges(new_starts, new_counts)


def extra_block(st: Store) -> None:
    """Store one more row block than the rows of the smallest chunk need."""
    g, n = min(s.occupied(st), key=lambda item: item[1])
    rows = s.get_rows(st, "0/vertices", g, n)
    padded = np.concatenate([rows, np.zeros((s.ROWS_PER_BLOCK, 3))])
    s.put_rows(st, "0/vertices", g, padded)


def shard_of_empty_chunk(st: Store) -> None:
    key = s.shard_key(st, "0/vertices", s.first_chunk(st)[0])
    s.put(st, key.replace("/c/0/0/0/", "/c/{}/{}/{}/".format(*s.EMPTY_CHUNK)), s.get(st, key))


def flip_index_byte(st: Store) -> None:
    key = s.shard_key(st, "0/vertices", s.first_chunk(st)[0])
    raw = bytearray(s.get(st, key))
    raw[-10] ^= 0xFF
    s.put(st, key, bytes(raw))


def swap_vertex_shards(st: Store) -> None:
    """Swap the files of two chunks' vertices (a bad copy or sync, spec §9.0.2)."""
    (g, _), (h, _) = s.occupied(st)[:2]
    a, b = s.shard_key(st, "0/vertices", g), s.shard_key(st, "0/vertices", h)
    raw_a, raw_b = s.get(st, a), s.get(st, b)
    s.put(st, a, raw_b)
    s.put(st, b, raw_a)


def nudge_bbox_max(a: dict[str, Any]) -> None:
    a["bounding_box"]["max"][0] = float(np.nextafter(a["bounding_box"]["max"][0], np.inf))


def transform(kind: str) -> Callable[[], Store]:
    return lambda: s.object_store(kind)


def with_groupings() -> Store:
    st = s.object_store("polyline")
    s.add_groupings(st)
    return st


def pyramid(*ratios: int) -> Callable[[], Store]:
    return lambda: s.pyramid_store(ratios)


def relabel_level(st: Store) -> None:
    """Rename level 1 to level 2 (a gap in the level numbers)."""
    for key in s.io(st).list_prefix("1/"):
        s.put(st, "2/" + key[2:], s.rekey(s.get(st, key), key, "2/" + key[2:]))
        s.delete(st, key)
    s.edit_level(st, lambda a: a.__setitem__("level", 2), 2)

    def entry(m: dict[str, Any]) -> None:
        m["datasets"][1].update(path="2", level=2)

    multiscale(entry)(st)


def doubled_level() -> Store:
    st = s.point_store()
    s.add_level(st, 1, 2, np.concatenate([s.points(), s.points()]))
    return st


def outside_bbox_level() -> Store:
    st = s.point_store()
    pts = s.points()
    pts[np.argmax(pts[:, 0]), 0] += 0.01  # stays in its chunk, leaves the bounding box
    s.add_level(st, 1, 2, pts)
    return st


def drop_level1_attribute(st: Store) -> None:
    s.delete_prefix(st, "1/attributes/a/")


OBJ = transform("polyline")
I64_HUGE = 2**62

CASES: list[Case] = [
    # ---- L1
    Case("L1.store_exists", lambda st: None, MemoryStore, 1),
    Case(
        "L1.root_zarr_json",
        lambda st: s.edit(st, "zarr.json", lambda d: d.__setitem__("node_type", "array")),
        level=1,
    ),
    Case(
        "L1.root_complete",
        lambda st: s.edit(st, "zarr.json", lambda d: d["attributes"].pop("zarr_vectors_version")),
        level=1,
    ),
    Case(
        "L1.foreign_layout",
        lambda st: s.edit(
            st, "zarr.json", lambda d: d.__setitem__("attributes", {"zarr_vectors": {}})
        ),
        level=1,
    ),
    Case("L1.root_zattrs", remove(".zattrs"), s.legacy_point_store, 1),
    Case("L1.metadata_json", write("metadata.json", [1, 2]), s.legacy_point_store, 1),
    Case(
        "L1.root_required_keys", lambda st: s.edit_root(st, lambda a: a.pop("multiscales")), level=1
    ),
    Case("L1.chunk_shape", root("chunk_shape", [1.0, -2.0, 3.0]), level=1),
    Case("L1.base_bin_shape", root("base_bin_shape", "5"), level=1),
    Case("L1.level_group", remove("0/zarr.json"), level=1),
    Case("L1.level_zattrs", remove("0/.zattrs"), s.legacy_point_store, 1),
    Case("L1.unlisted_level_group", write("7/zarr.json", s.group_doc()), level=1),
    Case("L1.root_unknown_node", write("extra/zarr.json", s.group_doc()), level=1),
    Case("L1.root_unknown_node", write(".zattrs", {}), level=1),  # format 1.3 mirrors nothing
    Case(
        "L1.vertices_array",
        array("0/vertices", lambda d: d.__setitem__("node_type", "group")),
        level=1,
    ),
    Case("L1.vertex_fragments_array", remove("0/vertex_fragments/zarr.json"), level=1),
    Case(
        "L1.vertex_counts_array",
        lambda st: s.put(st, "0/vertex_counts/zarr.json", b"{oops"),
        level=1,
    ),
    Case("L1.attributes_group", write("0/attributes/junk/zarr.json", s.group_doc()), level=1),
    Case(
        "L1.fragment_attributes_group",
        copy_array("0/vertices", "0/fragment_attributes", lambda d: None),
        level=1,
    ),
    Case("L1.object_nodes_required", remove("0/links/0/zarr.json"), OBJ, 1),
    Case("L1.links_children", copy_array("0/links/0", "0/links/1", lambda d: None), OBJ, 1),
    Case("L1.cross_chunk_links_required", remove("0/cross_chunk_links/zarr.json"), OBJ, 1),
    Case("L1.forbidden_nodes", write("0/links/zarr.json", s.group_doc()), level=1),
    Case(
        "L1.object_attributes_group",
        write("0/object_attributes/zarr.json", {"node_type": "array"}),
        OBJ,
        1,
    ),
    Case("L1.groupings_nodes", write("0/groupings_attributes/zarr.json", s.group_doc()), OBJ, 1),
    Case("L1.level_unknown_node", write("0/extra/zarr.json", s.group_doc()), level=1),
    # ---- L2 root metadata
    Case(
        "L2.root_zattrs_equal",
        lambda st: s.edit(st, ".zattrs", lambda a: a.__setitem__("software", "x")),
        s.legacy_point_store,
        2,
    ),
    Case("L2.version_format", root("zarr_vectors_version", "1"), level=2),
    Case("L2.version_supported", root("zarr_vectors_version", "1.8"), level=2),
    Case("L2.geometry_type_valid", root("geometry_type", "cloud"), level=2),
    Case("L2.spatial_dims_valid", root("spatial_dims", "3"), level=2),
    Case("L2.chunk_shape_length", root("spatial_dims", 2.0), level=2),
    Case("L2.chunk_shape_positive", root("chunk_shape", [float("inf"), 10.0, 10.0]), level=2),
    Case("L2.base_bin_shape_length", root("spatial_dims", 4.0), level=2),
    Case("L2.base_bin_shape_positive", root("base_bin_shape", [5.0, float("inf"), 5.0]), level=2),
    Case("L2.bin_divides_chunk", root("base_bin_shape", [3.0, 5.0, 5.0]), level=2),
    Case("L2.bin_le_chunk", level0("bin_shape", [5.0, 20.0, 5.0]), level=2),
    Case("L2.chunk_grid_origin_valid", root("chunk_grid_origin", [1, 0, 0]), level=2),
    Case("L2.axis_units_valid", root("axis_units", ["m", "m"]), level=2),
    Case(
        "L2.bounding_box_valid", root("bounding_box", {"min": [1, 1, 1], "max": [0, 0, 0]}), level=2
    ),
    Case("L2.bounding_box_present", root("bounding_box", None), level=2),
    Case("L2.grid_origin_consistent", root("chunk_grid_origin", [-2, 0, 0]), level=2),
    Case(
        "L2.grid_shape_consistent",
        array("0/vertices", lambda d: d["shape"].__setitem__(0, 4)),
        level=2,
    ),
    Case("L2.optional_keys_types", root("creation_timestamp", "yesterday"), level=2),
    Case("L2.mesh_keys", root("winding_order", "left"), transform("mesh"), 2),
    Case("L2.graph_keys", root("is_directed", "yes"), transform("graph"), 2),
    Case("L2.skeleton_keys", root("is_tree", False), transform("skeleton"), 2),
    Case(
        "L2.streamline_keys",
        both(root("min_length", 5), root("max_length", 1)),
        transform("streamline"),
        2,
    ),
    Case("L2.type_keys_foreign", root("winding_order", "ccw"), level=2),
    Case("L2.root_unknown_key", root("colour", "blue"), level=2),
    # ---- L2 multiscales
    Case("L2.multiscales_valid", multiscale(lambda m: m.__setitem__("version", "0.4")), level=2),
    Case("L2.axes_valid", multiscale(lambda m: m["axes"][1].__setitem__("name", "x")), level=2),
    Case("L2.axes_type", multiscale(lambda m: m["axes"][0].__setitem__("type", "time")), level=2),
    Case(
        "L2.axes_units_consistent",
        multiscale(lambda m: m["axes"][0].__setitem__("unit", "m")),
        level=2,
    ),
    Case("L2.datasets_valid", dataset0("path", "00"), level=2),
    Case("L2.dataset_bin_ratio", dataset0("bin_ratio", [2, 1, 1]), level=2),
    Case("L2.dataset_bin_shape", dataset0("bin_shape", [5.0, 5.0, 6.0]), level=2),
    Case("L2.dataset_sparsity", dataset0("object_sparsity", 0.5), level=2),
    Case("L2.coordinate_transformations", dataset0("coordinateTransformations", []), level=2),
    # ---- L2 level metadata
    Case(
        "L2.level_zattrs_equal",
        lambda st: s.edit(st, "0/.zattrs", lambda a: a.__setitem__("chunk_count", 1)),
        s.legacy_point_store,
        2,
    ),
    Case("L2.dimension_names", array("0/vertices", lambda d: d.pop("dimension_names")), level=2),
    Case("L2.level_keys", level0("vertex_count", "many"), level=2),
    Case("L2.level_matches_dataset", level0("bin_shape", [2.5, 5.0, 5.0]), level=2),
    Case("L2.level_counts_plausible", level0("chunk_count", 1000), level=2),
    # ---- L2 array metadata
    Case(
        "L2.zv_array_tag",
        array("0/attributes/a", lambda d: d["attributes"].__setitem__("name", "b")),
        level=2,
    ),
    Case("L2.sharding_layout", sharding("0/vertices", "index_location", "start"), level=2),
    Case(
        "L2.blob_codecs",
        sharding(
            "0/vertex_fragments",
            "codecs",
            [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}],
        ),
        level=2,
    ),
    Case(
        "L2.inner_codecs_default",
        sharding(
            "0/attributes/a", "codecs", [{"name": "bytes", "configuration": {"endian": "little"}}]
        ),
        level=2,
    ),
    Case("L2.fill_value", array("0/vertices", lambda d: d.__setitem__("fill_value", 1.0)), level=2),
    Case(
        "L2.vertices_meta",
        array("0/vertices", lambda d: d.__setitem__("data_type", "int32")),
        level=2,
    ),
    Case(
        "L2.blob_array_meta",
        array("0/vertex_fragments", lambda d: d.__setitem__("data_type", "uint16")),
        level=2,
    ),
    Case(
        "L2.vertex_counts_meta",
        array("0/vertex_counts", lambda d: d.__setitem__("data_type", "int32")),
        level=2,
    ),
    Case(
        "L2.attribute_name",
        copy_array(
            "0/attributes/a",
            "0/attributes/zv_a",
            lambda d: d["attributes"].__setitem__("name", "zv_a"),
        ),
        level=2,
    ),
    Case(
        "L2.attribute_meta",
        array("0/attributes/v", lambda d: d["shape"].__setitem__(3, 32)),
        level=2,
    ),
    Case(
        "L2.attribute_reserved",
        array("0/attributes/object_id", lambda d: d.__setitem__("data_type", "float64")),
        level=2,
    ),
    Case(
        "L2.fragment_attribute_meta",
        both(
            write("0/fragment_attributes/zarr.json", s.group_doc()),
            copy_array(
                "0/attributes/v",
                "0/fragment_attributes/w",
                lambda d: (
                    d["shape"].append(1),
                    d["attributes"].update(zv_array="fragment_attribute", name="w"),
                ),
            ),
        ),
        level=2,
    ),
    Case(
        "L2.links_meta",
        array("0/links/0", lambda d: d["attributes"].__setitem__("level_delta", 1)),
        OBJ,
        2,
    ),
    Case(
        "L2.object_index_meta",
        lambda st: s.edit(
            st, "0/object_index/zarr.json", lambda d: d["attributes"].__setitem__("num_objects", 3)
        ),
        OBJ,
        2,
    ),
    Case(
        "L2.object_attribute_meta",
        both(
            write("0/object_attributes/zarr.json", s.group_doc()),
            write(
                "0/object_attributes/w/zarr.json",
                s.global_array((3,), "float32", 0, {"zv_array": "object_attribute", "name": "w"}),
            ),
        ),
        OBJ,
        2,
    ),
    Case(
        "L2.groupings_meta",
        array("0/groupings", lambda d: d["attributes"].__setitem__("num_groups", 2)),
        with_groupings,
        2,
    ),
    Case(
        "L2.groupings_attribute_meta",
        both(
            write("0/groupings_attributes/zarr.json", s.group_doc()),
            write(
                "0/groupings_attributes/w/zarr.json",
                s.global_array(
                    (2,), "float32", 0, {"zv_array": "groupings_attribute", "name": "w"}
                ),
            ),
        ),
        with_groupings,
        2,
    ),
    Case(
        "L2.cross_chunk_links_meta",
        array("0/cross_chunk_links", lambda d: d["attributes"].__setitem__("num_links", 4)),
        OBJ,
        2,
    ),
    Case(
        "L2.gid_capacity",
        both(
            array(
                "0/vertices",
                lambda d: (
                    d["shape"].__setitem__(3, I64_HUGE),
                    d["codecs"][0]["configuration"]["chunk_shape"].__setitem__(3, I64_HUGE),
                    d["chunk_grid"]["configuration"]["chunk_shape"].__setitem__(3, I64_HUGE),
                ),
            )
        ),
        OBJ,
        2,
    ),
    # ---- L3
    Case("L3.counts_range", lambda st: s.set_count(st, s.EMPTY_CHUNK, -3)),
    Case(
        "L3.shard_present",
        lambda st: s.delete(st, s.shard_key(st, "0/attributes/v", s.first_chunk(st)[0])),
    ),
    Case("L3.empty_chunk_clean", shard_of_empty_chunk),
    Case("L3.shard_index", flip_index_byte),
    Case("L3.chunk_place", swap_vertex_shards),
    Case("L3.global_chunks", lambda st: s.delete(st, "0/object_index/offsets/c/0"), OBJ),
    Case("L3.shard_rows_present", lambda st: s.edit_index(st, "0/vertices", s.missing_block)),
    Case("L3.shard_rows_beyond", extra_block),
    Case(
        "L3.frag_truncated",
        blob_bytes(lambda b: b.__setitem__(slice(8, 16), struct.pack("<II", 100_000, 100_000))),
    ),
    Case("L3.frag_magic", blob_bytes(lambda b: b.__setitem__(0, 0x48))),
    Case("L3.frag_version", blob_bytes(lambda b: b.__setitem__(4, 2))),
    Case("L3.frag_flags", blob_bytes(lambda b: b.__setitem__(6, 0x10))),
    Case(
        "L3.frag_range_count",
        blob_bytes(lambda b: b.__setitem__(slice(12, 16), struct.pack("<I", 9))),
    ),
    Case("L3.frag_popcount", blob_bytes(lambda b: b.__setitem__(16, 0x7F))),
    Case("L3.frag_padding", blob_bytes(lambda b: b.__setitem__(17, 1))),
    Case(
        "L3.frag_range_values",
        blob_bytes(lambda b: b.__setitem__(slice(24 + 8, 24 + 16), struct.pack("<q", -1))),
    ),
    Case("L3.frag_csr_start", explicit_blob([1, 1], [])),
    Case("L3.frag_csr_monotone", explicit_blob([0, 2, 1], [0, 1])),
    Case("L3.frag_indices_non_negative", explicit_blob([0, 1], [-4])),
    Case("L3.frag_trailing_bytes", blob_bytes(lambda b: b.extend(b"\x00\x07"))),
    Case(
        "L3.frag_bounds",
        blob_of(lambda st_, c: encode_dense_ranges(st_, c + (np.arange(c.size) == c.size - 1))),
    ),
    Case("L3.counts_match_fragments", set_counts(-1)),
    Case(
        "L3.frag_tiling",
        blob_of(
            lambda st_, c: FragmentIndex.from_fragments(
                [np.array([int(st_[0]), *range(int(st_[0]), int(st_[0] + c[0]))])]
                + [(int(a), int(b)) for a, b in zip(st_[1:], c[1:], strict=True)]
            ).encode()
        ),
    ),
    Case("L3.frag_dense_form", blob_of(split_first_fragment)),
    Case("L3.fragment_attribute_rows", add_fragment_attribute(4)),
    Case("L3.vertices_finite", vertices(lambda r: r.__setitem__((3, 1), np.nan))),
    Case("L3.vertex_in_chunk", vertices(lambda r: r.__setitem__((0, 0), r[0, 0] + s.CHUNK))),
    Case("L3.vertex_in_bin", vertices(swap_bins)),
    Case("L3.vertex_count_total", level0("vertex_count", 251)),
    Case("L3.chunk_count_total", level0("chunk_count", 4)),
    Case("L3.bounding_box_exact", lambda st: s.edit_root(st, nudge_bbox_max)),
    Case(
        "L3.attribute_finite",
        lambda st: s.edit_rows(st, "0/attributes/a", lambda r: r.__setitem__(2, np.inf)),
    ),
    # ---- L5
    Case("L5.levels_contiguous", relabel_level, pyramid(2), 5),
    Case("L5.vertex_count_non_increasing", lambda st: None, doubled_level, 5),
    Case("L5.attribute_names_match", drop_level1_attribute, pyramid(2), 5),
    Case("L5.coarse_vertices_in_bbox", lambda st: None, outside_bbox_level, 5),
]

# L5 checks of object-count facts run on facts (the library writes every object level with
# object_count equal to level 0's). L5.bin_ratio_monotone too: in a store with levels (format
# 1.3) L2.level_coarsening reports a ratio that does not nest first, and stops the run at L2.
# L1.interrupted_write looks beside a local directory, not in a store: its cases are in
# tests/store/test_commit_kills.py. L1.symlink and L1.special_file concern files of a local
# directory: their cases are in tests/store/test_symlinks.py.
DIRECT = {
    "L5.bin_ratio_monotone",
    "L5.object_count_non_increasing",
    "L5.object_sparsity_consistent",
    "L1.interrupted_write",
    "L1.symlink",
    "L1.special_file",
}


@pytest.mark.parametrize("case", CASES, ids=[c.check_id for c in CASES])
def test_damage_is_reported(case: Case) -> None:
    store = case.build()
    case.damage(store)
    report = validate(store, level=case.level)
    assert case.check_id in report.ids(), report.summary()
    if CHECKS[case.check_id] == "error":
        assert not report.ok


def test_corpus_covers_every_implemented_id() -> None:
    # L4 ids: their one-damage cases live in test_l4.py (CASES there).
    covered = {c.check_id for c in CASES} | DIRECT | L4_COVERED | OBJECT_IDS | SHARDED_IDS
    covered |= OBJECT_CHUNKS_IDS | RECORD_IDS | OBJECT_ORDER_IDS
    assert covered | LEVEL_IDS | OBJECT_LEVEL_IDS | COARSE_LINK_IDS == set(CHECKS)


@pytest.mark.parametrize(
    ("counts", "sparsity", "expected"),
    [
        ((4, 6), 1.0, "L5.object_count_non_increasing"),
        ((10, 2), 0.5, "L5.object_sparsity_consistent"),
    ],
)
def test_object_pyramid_checks(counts: tuple[int, int], sparsity: float, expected: str) -> None:
    report = ValidationReport(store="facts", level=5)
    ctx = Context(StoreIO(MemoryStore()), report, None)
    ctx.facts.kind, ctx.facts.ndim = "polyline", 3
    ctx.facts.datasets = {0: (0, {}), 1: (1, {})}
    ctx.facts.level = {
        0: LevelFacts(attrs={"object_count": counts[0], "object_sparsity": 1.0}),
        1: LevelFacts(attrs={"object_count": counts[1], "object_sparsity": sparsity}),
    }
    run_pyramid(ctx)
    assert expected in report.ids()


def test_bin_ratio_monotone_on_facts() -> None:
    report = ValidationReport(store="facts", level=5)
    ctx = Context(StoreIO(MemoryStore()), report, None)
    ctx.facts.kind, ctx.facts.ndim = "point_cloud", 3
    ctx.facts.datasets = {0: (0, {"bin_ratio": [1, 1, 1]}), 1: (1, {"bin_ratio": [2, 2, 2]})}
    ctx.facts.datasets[2] = (2, {"bin_ratio": [1, 1, 1]})
    run_pyramid(ctx)
    assert [p.path for p in report.problems if p.check_id == "L5.bin_ratio_monotone"] == [
        "zarr.json#/attributes/multiscales/0/datasets/2/bin_ratio"
    ]


@pytest.mark.parametrize(("kept", "sparsity", "fires"), [(5, 0.5, False), (5, 0.2, True)])
def test_object_sparsity_consistent_uses_kept_object_count(
    kept: int, sparsity: float, fires: bool
) -> None:
    """A 1.3 object level keeps object_count equal to level 0's (ids are the same, spec
    §4.3.3); its kept objects are kept_object_count, which object_sparsity describes."""
    report = ValidationReport(store="facts", level=5)
    ctx = Context(StoreIO(MemoryStore()), report, None)
    ctx.facts.kind, ctx.facts.ndim = "streamline", 3
    ctx.facts.datasets = {0: (0, {}), 1: (1, {})}
    ctx.facts.level = {
        0: LevelFacts(attrs={"object_count": 10, "object_sparsity": 1.0}),
        1: LevelFacts(
            attrs={"object_count": 10, "kept_object_count": kept, "object_sparsity": sparsity}
        ),
    }
    run_pyramid(ctx)
    found = [p.path for p in report.problems if p.check_id == "L5.object_sparsity_consistent"]
    assert found == (["1/zarr.json#/attributes/kept_object_count"] if fires else [])
