"""PLY, OBJ and STL files ↔ mesh stores (zarr_vectors.converters.meshes, ._obj_text)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import plyfile
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.converters._obj_text import parse_obj
from zarr_vectors.converters._ply import fan_triangles
from zarr_vectors.converters.stl import merge_identical


def _two_meshes(path: Path, dtype: type = np.float32) -> zv.QueryResult:
    """A store of two meshes (ids 4 and 9) with vertex and face attributes; its read()."""
    rng = np.random.default_rng(3)
    vertices = rng.normal(0, 10, (9, 3)).astype(dtype)
    faces = np.array([[0, 1, 2], [2, 1, 3], [0, 3, 1], [4, 6, 5], [5, 6, 7], [8, 4, 5]])
    zv.write_mesh(
        path,
        vertices,
        faces,
        vertex_objects=[4, 4, 4, 4, 9, 9, 9, 9, 9],
        attributes={
            "quality": rng.random(9).astype(np.float32),
            "red": rng.integers(0, 256, 9).astype(np.uint8),
            "normal": rng.normal(0, 1, (9, 3)).astype(np.float32),
        },
        face_attributes={
            "label": rng.integers(-9, 9, 6).astype(np.int32),
            "area": rng.random(6),
        },
        chunk_shape=8.0,
    )
    return zv.open(path).read()


def _face_order(faces: np.ndarray) -> np.ndarray:
    """Rows of ``faces`` sorted as tuples (a store returns faces in chunk order)."""
    return np.lexsort(np.asarray(faces).T[::-1])


def _assert_same_faces(found: Any, expected: Any) -> None:
    """Same multiset of faces, each with its vertices in the same order (winding)."""
    found, expected = np.asarray(found), np.asarray(expected)
    np.testing.assert_array_equal(found[_face_order(found)], expected[_face_order(expected)])


def _assert_same_meshes(a: zv.QueryResult, b: zv.QueryResult, *, attributes: bool) -> None:
    np.testing.assert_array_equal(a.positions, b.positions)
    assert a.positions.dtype == b.positions.dtype
    assert a.faces is not None
    assert b.faces is not None
    _assert_same_faces(a.faces, b.faces)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.object_ids, b.object_ids)
    if not attributes:
        return
    assert sorted(a.attributes) == sorted(b.attributes)
    for name, values in b.attributes.items():
        assert a.attributes[name].dtype == values.dtype, name
        np.testing.assert_array_equal(a.attributes[name], values, err_msg=name)
    assert sorted(a.link_attributes) == sorted(b.link_attributes)
    order_a, order_b = _face_order(a.faces), _face_order(b.faces)
    for name, values in b.link_attributes.items():
        assert a.link_attributes[name].dtype == values.dtype, name
        np.testing.assert_array_equal(a.link_attributes[name][order_a], values[order_b])


# -- PLY ------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["binary", "ascii"])
def test_ply_round_trip_keeps_objects_and_attributes(tmp_path: Path, encoding: str) -> None:
    original = _two_meshes(tmp_path / "m.zv", np.float64)
    zv.convert(tmp_path / "m.zv", tmp_path / "m.ply", encoding=encoding)
    back = zv.convert(tmp_path / "m.ply", tmp_path / "back.zv")
    assert isinstance(back, zv.VectorStore)
    _assert_same_meshes(back.read(), original, attributes=True)


def test_ply_file_is_what_plyfile_reads(tmp_path: Path) -> None:
    original = _two_meshes(tmp_path / "m.zv")
    zv.convert(tmp_path / "m.zv", tmp_path / "m.ply")
    with (tmp_path / "m.ply").open("rb") as stream:
        data = plyfile.PlyData.read(stream)
    assert not data.text
    assert data.byte_order == "<"
    vertex, face = data["vertex"].data, data["face"].data
    xyz = np.stack([vertex["x"], vertex["y"], vertex["z"]], axis=1)
    np.testing.assert_array_equal(xyz, original.positions)
    assert vertex["x"].dtype == np.float32
    np.testing.assert_array_equal(vertex["normal_2"], original.attributes["normal"][:, 2])
    np.testing.assert_array_equal(vertex["object_id"], [4, 4, 4, 4, 9, 9, 9, 9, 9])
    written = np.stack(list(face["vertex_indices"]))
    _assert_same_faces(written, original.faces)
    assert original.faces is not None
    order_file, order_store = _face_order(written), _face_order(original.faces)
    np.testing.assert_array_equal(
        face["label"][order_file], original.link_attributes["label"][order_store]
    )
    # the faces of each mesh are written together
    owner = np.searchsorted([0, 4, 9], written[:, 0], side="right") - 1
    np.testing.assert_array_equal(owner, np.sort(owner))


def test_single_mesh_zero_writes_no_object_property(tmp_path: Path) -> None:
    zv.write_mesh(tmp_path / "one.zv", np.eye(3), [[0, 1, 2]])
    zv.convert(tmp_path / "one.zv", tmp_path / "one.ply")
    with (tmp_path / "one.ply").open("rb") as stream:
        names = [p.name for p in plyfile.PlyData.read(stream)["vertex"].properties]
    assert names == ["x", "y", "z"]


def _polygon_ply(path: Path) -> tuple[np.ndarray, list[list[int]], np.ndarray]:
    """A PLY of triangles, a quad and a pentagon, with a list property to skip."""
    vertex = np.empty(
        6,
        dtype=[("x", "<f8"), ("y", "<f8"), ("z", "<f8"), ("scalar-Intensity", "<u2"),
               ("confidence", "<f4")],
    )  # fmt: skip
    rng = np.random.default_rng(5)
    for axis in "xyz":
        vertex[axis] = rng.normal(0, 1, 6)
    vertex["scalar-Intensity"] = np.arange(6) * 100
    vertex["confidence"] = rng.random(6)
    polygons = [[0, 1, 2], [1, 3, 4, 2], [0, 5, 4, 3, 1], [5, 2, 4]]
    face = np.empty(4, dtype=[("vertex_indices", object), ("flags", "u1"), ("uv", object)])
    face["vertex_indices"] = [np.array(p, dtype=np.int32) for p in polygons]
    face["flags"] = [7, 8, 9, 10]
    face["uv"] = [np.zeros(2 * len(p), np.float32) for p in polygons]
    plyfile.PlyData(
        [plyfile.PlyElement.describe(vertex, "vertex"), plyfile.PlyElement.describe(face, "face")]
    ).write(str(path))
    return vertex, polygons, face["flags"].astype(np.uint8)


def test_ply_polygons_become_fans_with_their_attributes(tmp_path: Path) -> None:
    vertex, polygons, flags = _polygon_ply(tmp_path / "poly.ply")
    store = zv.convert(tmp_path / "poly.ply", tmp_path / "poly.zv")
    assert isinstance(store, zv.VectorStore)
    found = store.read()
    expected_faces = [[p[0], p[k], p[k + 1]] for p in polygons for k in range(1, len(p) - 1)]
    expected_flags = [f for p, f in zip(polygons, flags, strict=True) for _ in range(len(p) - 2)]
    assert found.faces is not None
    _assert_same_faces(found.faces, expected_faces)
    order = _face_order(found.faces)
    by_face = dict(zip(map(tuple, expected_faces), expected_flags, strict=True))
    np.testing.assert_array_equal(
        found.link_attributes["flags"][order], [by_face[tuple(f)] for f in found.faces[order]]
    )
    assert sorted(found.link_attributes) == ["flags"]  # the uv list is skipped
    assert found.positions.dtype == np.float64
    np.testing.assert_array_equal(found.attributes["scalar_Intensity"], np.arange(6) * 100)
    assert found.attributes["scalar_Intensity"].dtype == np.uint16
    np.testing.assert_array_equal(found.attributes["confidence"], vertex["confidence"])


def test_ply_object_property_names_the_meshes(tmp_path: Path) -> None:
    vertex = np.zeros(6, dtype=[("x", "f4"), ("y", "f4"), ("z", "f4"), ("part", "i4")])
    vertex["x"] = np.arange(6)
    vertex["y"] = [0, 1, 0, 0, 1, 0]
    vertex["part"] = [3, 3, 3, 1, 1, 1]
    face = np.array([([0, 1, 2],), ([3, 4, 5],)], dtype=[("vertex_indices", "i4", (3,))])
    plyfile.PlyData(
        [plyfile.PlyElement.describe(vertex, "vertex"), plyfile.PlyElement.describe(face, "face")]
    ).write(str(tmp_path / "parts.ply"))
    store = zv.convert(tmp_path / "parts.ply", tmp_path / "p.zv", object_property="part")
    assert isinstance(store, zv.VectorStore)
    np.testing.assert_array_equal(store.object_ids, [1, 3])
    np.testing.assert_array_equal(store.read_objects([3]).positions[:, 0], [0, 1, 2])
    assert store.attribute_names == []


def test_bad_ply_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.ply").write_bytes(b"ply\nformat ascii 1.0\nelement vertex 2\n")
    with pytest.raises(zv.InvalidInputError, match="not a valid PLY"):
        zv.convert(tmp_path / "bad.ply", tmp_path / "bad.zv")
    assert not (tmp_path / "bad.zv").exists()


@given(lengths=st.lists(st.integers(3, 7), min_size=0, max_size=6))
@settings(max_examples=30, deadline=None)
def test_fan_triangles_match_a_loop(lengths: list[int]) -> None:
    flat = np.arange(sum(lengths)) * 10
    triangles, polygon = fan_triangles(flat, np.asarray(lengths, dtype=np.int64))
    expected, owners, start = [], [], 0
    for p, size in enumerate(lengths):
        ring = flat[start : start + size]
        for k in range(1, size - 1):
            expected.append([ring[0], ring[k], ring[k + 1]])
            owners.append(p)
        start += size
    np.testing.assert_array_equal(triangles.reshape(-1, 3), np.reshape(expected, (-1, 3)))
    np.testing.assert_array_equal(polygon, owners)


def test_fan_triangles_refuse_short_polygons() -> None:
    with pytest.raises(zv.InvalidInputError, match="face 1 has 2 vertices"):
        fan_triangles(np.arange(5), np.array([3, 2]))


# -- OBJ ------------------------------------------------------------------------------------

OBJ_TEXT = """\
# a test file
mtllib missing.mtl
o first
v 0 0 0 1 0 0
v 1.5 0 0 0 1 0
v 0 1e-3 0 0 0 1
v 0 0 \\
  2 1 1 1
vt 0 0
vn 0 0 1
usemtl red
f 1/1/1 2/1/1 3/1/1
f 1//1 4//1 2//1   # a comment
o second
v 5 5 5 0.5 0.5 0.5
v 6 5 5 0.5 0.5 0.5
v 5 6 5 0.5 0.5 0.5
v 5 5 6 0.5 0.5 0.5
usemtl blue
f -4 -2 -3
usemtl red
f 5 6 8 7
"""


def test_obj_reader_keeps_vertices_and_faces_in_file_order() -> None:
    mesh = parse_obj(OBJ_TEXT)
    assert mesh.positions.shape == (8, 3)
    np.testing.assert_array_equal(mesh.positions[3], [0, 0, 2])
    assert mesh.colors is not None
    np.testing.assert_array_equal(mesh.colors[4], [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(
        mesh.faces, [[0, 1, 2], [0, 3, 1], [4, 6, 5], [4, 5, 7], [4, 7, 6]]
    )
    np.testing.assert_array_equal(mesh.face_objects, [0, 0, 1, 1, 1])
    assert mesh.object_names == ["first", "second"]


def test_obj_import_keeps_objects_unless_told_not_to(tmp_path: Path) -> None:
    (tmp_path / "a.obj").write_text(OBJ_TEXT)
    whole = zv.convert(tmp_path / "a.obj", tmp_path / "whole.zv", split_objects=False)
    assert isinstance(whole, zv.VectorStore)
    assert whole.object_count == 1
    found = whole.read()
    _assert_same_faces(found.faces, parse_obj(OBJ_TEXT).faces)
    assert found.attributes["color"].shape == (8, 3)
    split = zv.convert(tmp_path / "a.obj", tmp_path / "split.zv")
    assert isinstance(split, zv.VectorStore)
    np.testing.assert_array_equal(split.object_ids, [0, 1])
    second = split.read_objects([1])
    np.testing.assert_array_equal(second.positions[:, 0], [5, 6, 5, 5])
    _assert_same_faces(second.faces, [[0, 2, 1], [0, 1, 3], [0, 3, 2]])


def test_obj_groups_are_one_mesh_unless_split(tmp_path: Path) -> None:
    text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\ng a\nf 1 2 3\ng b\nf 3 2 4\n"
    (tmp_path / "g.obj").write_text(text)
    whole = zv.convert(tmp_path / "g.obj", tmp_path / "whole.zv")
    assert isinstance(whole, zv.VectorStore)
    assert whole.object_count == 1
    split = zv.convert(tmp_path / "g.obj", tmp_path / "split.zv", split_objects=True)
    assert isinstance(split, zv.VectorStore)
    assert split.object_count == 2


def test_obj_objects_keep_their_unused_vertices(tmp_path: Path) -> None:
    text = (
        "v 9 9 9\no object_3\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 7 7 7\nf 2 3 4\n"
        "o object_8\nv 5 5 5\nv 6 5 5\nf 6 7 4\nv 8 8 8\n"
    )
    (tmp_path / "u.obj").write_text(text)
    store = zv.convert(tmp_path / "u.obj", tmp_path / "u.zv")
    assert isinstance(store, zv.VectorStore)
    found = store.read()
    np.testing.assert_array_equal(found.object_ids, [3, 8])
    np.testing.assert_array_equal(found.offsets, [0, 5, 9])
    np.testing.assert_array_equal(
        found.positions[:, 0], [9, 0, 1, 0, 7, 0, 5, 6, 8]
    )  # the vertex before any o goes to the first object; 0 1 0 is used by both
    _assert_same_faces(found.faces, [[1, 2, 3], [6, 7, 5]])


def test_obj_round_trip_keeps_objects_by_default(tmp_path: Path) -> None:
    vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [4, 4, 4], [3, 3, 3], [4, 3, 3],
                         [3, 4, 3.0]])  # fmt: skip
    zv.write_mesh(
        tmp_path / "m.zv", vertices, [[0, 1, 2], [4, 5, 6]], vertex_objects=[5, 5, 5, 5, 2, 2, 2]
    )
    original = zv.open(tmp_path / "m.zv").read()
    zv.convert(tmp_path / "m.zv", tmp_path / "m.obj")
    back = zv.convert(tmp_path / "m.obj", tmp_path / "back.zv")
    assert isinstance(back, zv.VectorStore)
    _assert_same_meshes(back.read(), original, attributes=False)
    single = tmp_path / "one.zv"
    zv.write_mesh(single, vertices[:4], [[0, 1, 2]], vertex_objects=[7] * 4)
    zv.convert(single, tmp_path / "one.obj")
    back = zv.convert(tmp_path / "one.obj", tmp_path / "one_back.zv")
    assert isinstance(back, zv.VectorStore)
    _assert_same_meshes(back.read(), zv.open(single).read(), attributes=False)


def test_obj_split_takes_the_vertices_each_object_uses(tmp_path: Path) -> None:
    text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 9 9 9\nv 0 0 1\ng a\nf 1 2 3\ng b\nf 3 2 5\n"
    (tmp_path / "g.obj").write_text(text)
    store = zv.convert(tmp_path / "g.obj", tmp_path / "g.zv", split_objects=True)
    assert isinstance(store, zv.VectorStore)
    found = store.read()
    np.testing.assert_array_equal(found.offsets, [0, 4, 7])
    np.testing.assert_array_equal(
        found.positions,
        [[0, 0, 0], [1, 0, 0], [0, 1, 0], [9, 9, 9], [1, 0, 0], [0, 1, 0], [0, 0, 1]],
    )  # 9 9 9, used by no face, is kept in the first group
    _assert_same_faces(found.faces, [[0, 1, 2], [5, 4, 6]])


def test_obj_round_trip_is_exact(tmp_path: Path) -> None:
    original = _two_meshes(tmp_path / "m.zv", np.float64)
    zv.convert(tmp_path / "m.zv", tmp_path / "m.obj")
    back = zv.convert(tmp_path / "m.obj", tmp_path / "back.zv")
    assert isinstance(back, zv.VectorStore)
    _assert_same_meshes(back.read(), original, attributes=False)


def test_obj_colours_are_written(tmp_path: Path) -> None:
    colors = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0.25]])
    zv.write_mesh(tmp_path / "c.zv", np.eye(3), [[0, 1, 2]], attributes={"color": colors})
    zv.convert(tmp_path / "c.zv", tmp_path / "c.obj")
    mesh = parse_obj((tmp_path / "c.obj").read_text())
    assert mesh.colors is not None
    np.testing.assert_array_equal(mesh.colors, colors)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("v 0 0 0\nv 1 0 0\nf 1 2 3\n", "line 3: vertex 3 does not exist"),
        ("v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 -4\n", "line 4: vertex -4 does not exist"),
        ("v 0 zero 0\n", "line 1: not a number"),
        ("v 0 0\n", "line 1: a vertex needs 3 coordinates"),
        ("v 0 0 0\nf 1 1\n", "line 2: a face needs at least 3 vertices"),
        ("v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 x\n", "line 4: bad vertex reference 'x'"),
    ],
)
def test_bad_obj_names_the_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bad.obj").write_text(text)
    with pytest.raises(zv.InvalidInputError, match=message):
        zv.convert(tmp_path / "bad.obj", tmp_path / "bad.zv")


# -- STL ------------------------------------------------------------------------------------


def _binary_stl(path: Path, triangles: np.ndarray) -> None:
    """An independent binary STL writer: 80-byte header, count, 50 bytes per triangle."""
    record = np.zeros(
        triangles.shape[0],
        dtype=[("normal", "<f4", 3), ("corners", "<f4", (3, 3)), ("attr", "<u2")],
    )
    record["corners"] = triangles
    count = np.array([triangles.shape[0]], dtype="<u4")
    path.write_bytes(b"\0" * 80 + count.tobytes() + record.tobytes())


def test_stl_import_merges_identical_corners(tmp_path: Path) -> None:
    vertices = np.float32([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0.1, 0.2, 0.3]])
    faces = np.array([[0, 1, 2], [0, 3, 1], [3, 2, 4]])
    _binary_stl(tmp_path / "t.stl", vertices[faces])
    store = zv.convert(tmp_path / "t.stl", tmp_path / "t.zv")
    assert isinstance(store, zv.VectorStore)
    found = store.read()
    assert found.positions.dtype == np.float32
    np.testing.assert_array_equal(found.positions, vertices)
    _assert_same_faces(found.faces, faces)
    kept = zv.convert(tmp_path / "t.stl", tmp_path / "k.zv", merge_vertices=False)
    assert isinstance(kept, zv.VectorStore)
    found = kept.read()
    np.testing.assert_array_equal(found.positions, vertices[faces].reshape(-1, 3))
    _assert_same_faces(found.faces, np.arange(9).reshape(3, 3))


def test_merge_identical_matches_a_dictionary() -> None:
    rows = np.random.default_rng(2).integers(0, 3, (60, 3)).astype(np.float64)
    unique, index = merge_identical(rows)
    seen: dict[tuple[float, ...], int] = {}
    expected = [seen.setdefault(tuple(r), len(seen)) for r in rows.tolist()]
    np.testing.assert_array_equal(index, expected)
    np.testing.assert_array_equal(unique, [list(k) for k in seen])


@pytest.mark.parametrize(("encoding", "dtype"), [("binary", np.float32), ("ascii", np.float64)])
def test_stl_round_trip_to_the_format_precision(tmp_path: Path, encoding: str, dtype: type) -> None:
    original = _two_meshes(tmp_path / "m.zv", dtype)
    zv.convert(tmp_path / "m.zv", tmp_path / "m.stl", encoding=encoding)
    back = zv.convert(tmp_path / "m.stl", tmp_path / "back.zv")
    assert isinstance(back, zv.VectorStore)
    found = back.read()
    assert found.positions.dtype == dtype
    # the two meshes come back as one; every vertex is used once
    assert found.faces is not None
    assert original.faces is not None
    _assert_same_faces(
        found.positions[found.faces].reshape(-1, 9),
        original.positions[original.faces].reshape(-1, 9),
    )
    assert found.positions.shape == original.positions.shape


def test_stl_degenerate_triangles_need_allow_degenerate(tmp_path: Path) -> None:
    _binary_stl(tmp_path / "d.stl", np.float32([[[0, 0, 0], [1, 0, 0], [0, 0, 0]]]))
    with pytest.raises(zv.InvalidInputError, match="allow_degenerate"):
        zv.convert(tmp_path / "d.stl", tmp_path / "d.zv")
    store = zv.convert(tmp_path / "d.stl", tmp_path / "d.zv", allow_degenerate=True)
    assert isinstance(store, zv.VectorStore)
    np.testing.assert_array_equal(store.read().faces, [[0, 1, 0]])


def test_empty_stl_is_refused(tmp_path: Path) -> None:
    _binary_stl(tmp_path / "e.stl", np.zeros((0, 3, 3), np.float32))
    with pytest.raises(zv.InvalidInputError, match="no triangle"):
        zv.convert(tmp_path / "e.stl", tmp_path / "e.zv")


# -- options and shapes ---------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["obj", "stl"])
def test_two_dimensional_meshes_are_refused_by_obj_and_stl(tmp_path: Path, suffix: str) -> None:
    zv.write_mesh(tmp_path / "flat.zv", [[0, 0], [1, 0], [0, 1]], [[0, 1, 2]])
    with pytest.raises(zv.InvalidInputError, match="3-D"):
        zv.convert(tmp_path / "flat.zv", tmp_path / f"flat.{suffix}")
    assert not (tmp_path / f"flat.{suffix}").exists()


def test_two_dimensional_meshes_go_to_ply(tmp_path: Path) -> None:
    zv.write_mesh(tmp_path / "flat.zv", [[0, 0], [1, 0], [0, 1]], [[0, 2, 1]])
    zv.convert(tmp_path / "flat.zv", tmp_path / "flat.ply")
    back = zv.convert(tmp_path / "flat.ply", tmp_path / "back.zv")
    assert isinstance(back, zv.VectorStore)
    assert back.ndim == 2
    np.testing.assert_array_equal(back.read().faces, [[0, 2, 1]])


def test_mesh_options_are_checked(tmp_path: Path) -> None:
    zv.write_mesh(tmp_path / "m.zv", np.eye(3), [[0, 1, 2]])
    with pytest.raises(zv.InvalidInputError, match=r"unknown option.*merge_vertices"):
        zv.convert(tmp_path / "m.zv", tmp_path / "m.ply", merge_vertices=True)
    with pytest.raises(zv.InvalidInputError, match="encoding"):
        zv.convert(tmp_path / "m.zv", tmp_path / "m.stl", encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.zv"]


def test_import_passes_write_options(tmp_path: Path) -> None:
    zv.write_mesh(tmp_path / "m.zv", np.eye(3), [[0, 1, 2]])
    zv.convert(tmp_path / "m.zv", tmp_path / "m.ply")
    store = zv.convert(tmp_path / "m.ply", tmp_path / "cw.zv", winding_order="cw", dtype="float32")
    assert isinstance(store, zv.VectorStore)
    assert store.metadata["winding_order"] == "cw"
    assert store.read().positions.dtype == np.float32


def test_export_of_chosen_ids(tmp_path: Path) -> None:
    original = _two_meshes(tmp_path / "m.zv")
    zv.convert(tmp_path / "m.zv", tmp_path / "nine.ply", ids=[9])
    back = zv.convert(tmp_path / "nine.ply", tmp_path / "nine.zv")
    assert isinstance(back, zv.VectorStore)
    found = back.read()
    np.testing.assert_array_equal(found.object_ids, [9])
    np.testing.assert_array_equal(found.positions, original.positions[4:])
    assert original.faces is not None
    _assert_same_faces(found.faces, original.faces[original.faces[:, 0] >= 4] - 4)


@st.composite
def _meshes(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """1-3 meshes of 3-6 vertices each (some used by no face), distinct ids: positions,
    faces (global rows) and each vertex's id."""
    ids = draw(st.lists(st.integers(-5, 1000), min_size=1, max_size=3, unique=True))
    positions, faces, labels = [], [], []
    start = 0
    for object_id in ids:
        n = draw(st.integers(3, 6))
        coords = st.integers(-800, 800).map(lambda v: v / 8)  # exact in binary and text
        positions.append(np.array(draw(st.lists(st.tuples(coords, coords, coords),
                                                min_size=n, max_size=n))))  # fmt: skip
        count = draw(st.integers(1, 3))
        corners = st.permutations(range(n)).map(lambda p: p[:3])
        faces += [[start + v for v in face] for face in draw(st.lists(corners, min_size=count,
                                                                      max_size=count))]  # fmt: skip
        labels += [object_id] * n
        start += n
    return np.concatenate(positions), np.array(faces), np.array(labels)


@settings(max_examples=25, deadline=None)
@given(mesh=_meshes())
def test_obj_round_trip_keeps_objects_for_any_meshes(
    tmp_path_factory: pytest.TempPathFactory, mesh: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> None:
    tmp = tmp_path_factory.mktemp("obj")
    positions, faces, labels = mesh
    zv.write_mesh(tmp / "m.zv", positions, faces, vertex_objects=labels, allow_degenerate=True)
    zv.convert(tmp / "m.zv", tmp / "m.obj")
    zv.convert(tmp / "m.obj", tmp / "back.zv", allow_degenerate=True)
    _assert_same_meshes(
        zv.open(tmp / "back.zv").read(), zv.open(tmp / "m.zv").read(), attributes=False
    )
