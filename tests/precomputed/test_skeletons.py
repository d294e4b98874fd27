"""The ``skeletons`` source: cloud-volume reads the exported files and they match the store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.precomputed import PrecomputedFileNotFoundError, PrecomputedSource
from zarr_vectors.precomputed.skeletons import SkeletonSource, encode_skeleton, skeleton_sources


def _neurons(path: Path) -> VectorStore:
    """Three skeletons (ids 3, 8, 9) in micrometres with a radius and an SWC type."""
    rng = np.random.default_rng(7)
    xyz = rng.uniform(0, 20, (9, 3)).astype(np.float32)
    zv.write_skeletons(
        path,
        xyz,
        [-1, 0, 1, 1, -1, 4, 5, -1, 7],
        vertex_objects=[3, 3, 3, 3, 8, 8, 8, 9, 9],
        radius=np.linspace(0.5, 4.5, 9),
        swc_type=[1, 3, 3, 3, 1, 2, 2, 1, 4],
        chunk_shape=8.0,
        units="micrometer",
        progress=False,
    )
    return zv.open(path)


def _decoded(data: bytes) -> tuple[np.ndarray, np.ndarray, bytes]:
    """Plain-numpy decoding of a skeleton file: positions, edges and the attribute bytes."""
    n, e = np.frombuffer(data, "<u4", count=2)
    positions = np.frombuffer(data, "<f4", count=3 * n, offset=8).reshape(n, 3)
    edges = np.frombuffer(data, "<u4", count=2 * e, offset=8 + 12 * n).reshape(e, 2)
    return positions, edges, data[8 + 12 * n + 8 * e :]


def test_cloud_volume_reads_every_skeleton_as_stored(
    tmp_path: Path, open_exported: Callable[[VectorStore], Any]
) -> None:
    store = _neurons(tmp_path / "neurons.zarr")
    volume = open_exported(store)
    for object_id in store.object_ids:
        expected = store.read_objects(int(object_id))
        skeleton = volume.skeleton.get(int(object_id))
        np.testing.assert_allclose(skeleton.vertices, expected.positions * 1000.0, rtol=1e-6)
        np.testing.assert_array_equal(skeleton.edges, expected.edges)
        np.testing.assert_array_equal(skeleton.radius, expected.attributes["radius"])
        np.testing.assert_array_equal(skeleton.swc_type, expected.attributes["swc_type"])
        assert skeleton.radius.dtype == np.float32


def test_cloud_volume_reads_polylines_as_chains_and_2d_in_the_plane(
    tmp_path: Path, open_exported: Callable[[VectorStore], Any]
) -> None:
    lines = [np.array([[0, 0], [5, 5], [9, 1.0]]), np.array([[20, 3], [25, 7.0]])]
    path = tmp_path / "lines.zarr"
    zv.write_polylines(
        path, lines, chunk_shape=10.0, object_ids=[40, 2], attributes={"w": [1, 2, 3, 4, 5]}
    )
    store = zv.open(path)
    volume = open_exported(store)
    for object_id in (40, 2):
        expected = store.read_objects(object_id)
        skeleton = volume.skeleton.get(object_id)
        n = len(expected.positions)
        np.testing.assert_array_equal(skeleton.vertices[:, :2], expected.positions)
        np.testing.assert_array_equal(skeleton.vertices[:, 2], np.zeros(n))
        np.testing.assert_array_equal(skeleton.edges, [[r, r + 1] for r in range(n - 1)])
        np.testing.assert_array_equal(skeleton.w, expected.attributes["w"])


def test_graph_edges_and_extra_axes_are_kept(tmp_path: Path) -> None:
    xyzt = np.array([[0, 0, 0, 5], [1, 0, 0, 6], [1, 1, 0, 7], [9, 9, 9, 8.0]])
    path = tmp_path / "graph.zarr"
    zv.write_graph(path, xyzt, np.array([[0, 1], [1, 2], [2, 0]]), chunk_shape=4.0)
    store = zv.open(path)
    source = SkeletonSource(store)
    info = json.loads(source.read("info"))
    assert info["vertex_attributes"] == [
        {"id": store.axis_names[3], "data_type": "float32", "num_components": 1}
    ]
    for object_id in store.object_ids:
        expected = store.read_objects(int(object_id))
        positions, edges, rest = _decoded(source.read(str(object_id)))
        np.testing.assert_array_equal(positions, expected.positions[:, :3])
        np.testing.assert_array_equal(edges, expected.edges)
        np.testing.assert_array_equal(np.frombuffer(rest, "<f4"), expected.positions[:, 3])


def test_each_file_is_one_read_by_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _neurons(tmp_path / "neurons.zarr")
    source = SkeletonSource(store)
    asked: list[Any] = []
    by_id = VectorStore.read_objects

    def counted(self: VectorStore, ids: Any, **options: Any) -> Any:
        asked.append(ids)
        return by_id(self, ids, **options)

    def refused(self: VectorStore, *args: Any, **options: Any) -> Any:
        raise AssertionError("a skeleton file read the whole store")

    monkeypatch.setattr(VectorStore, "read_objects", counted)
    monkeypatch.setattr(VectorStore, "read", refused)
    monkeypatch.setattr(VectorStore, "query", refused)
    source.read("8")
    assert asked == [8]


@pytest.mark.parametrize("path", ["7", "007", "-3", "3.0", "abc", "info.json", "", "3/4"])
def test_a_path_it_does_not_have_is_not_found(tmp_path: Path, path: str) -> None:
    source = SkeletonSource(_neurons(tmp_path / "neurons.zarr"))
    with pytest.raises(PrecomputedFileNotFoundError, match=r"no (file|skeleton)"):
        source.read(path)


def test_paths_are_info_then_every_id_and_the_shape_is_a_source(tmp_path: Path) -> None:
    source = SkeletonSource(_neurons(tmp_path / "neurons.zarr"))
    assert isinstance(source, PrecomputedSource)
    assert list(source.paths()) == ["info", "segment_properties/info", "3", "8", "9"]
    assert source.name == "skeletons"


def test_point_clouds_and_meshes_have_no_skeletons(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "p.zarr", [[0.0, 0.0, 0.0]], chunk_shape=1.0)
    assert skeleton_sources(zv.open(tmp_path / "p.zarr")) == []
    with pytest.raises(InvalidInputError, match="no skeletons"):
        SkeletonSource(zv.open(tmp_path / "p.zarr"))


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(0, 12),
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from(["<f4", "<u1", "<i2", "<u4"]),
)
def test_encoding_reads_back_in_cloud_volume_decoder(n: int, seed: int, dtype: str) -> None:
    osteoid = pytest.importorskip("osteoid", reason="cloud-volume's skeleton decoder is missing")
    rng = np.random.default_rng(seed)
    positions = rng.normal(size=(n, 3)).astype(np.float32)
    edges = rng.integers(0, max(n, 1), size=(max(n - 1, 0), 2)).astype(np.uint32)
    values = rng.integers(0, 100, size=(n, 2)).astype(dtype)
    data = encode_skeleton(positions, edges, [values])
    spec = [{"id": "a", "data_type": np.dtype(dtype).name, "num_components": 2}]
    decoded = osteoid.Skeleton.from_precomputed(data, vertex_attributes=spec)
    np.testing.assert_array_equal(decoded.vertices, positions)
    np.testing.assert_array_equal(decoded.edges, edges)
    if n:
        np.testing.assert_array_equal(decoded.a, values)


def test_segment_properties_list_ids_object_attributes_and_groups(tmp_path: Path) -> None:
    lines = [np.array([[0, 0], [5, 5.0]]), np.array([[9, 9], [1, 1.0]]), np.array([[2, 2.0]])]
    path = tmp_path / "tracts.zarr"
    zv.write_polylines(
        path,
        lines,
        chunk_shape=10.0,
        object_ids=[12, 3, 5],
        object_attributes={"length": [7.0, 11.5, 0.25], "fa": [[1, 2], [3, 4], [5, 6]]},
        groups={"arcuate fasciculus": [12, 5], "cst": [5]},
    )
    source = SkeletonSource(zv.open(path))
    assert json.loads(source.read("info"))["segment_properties"] == "segment_properties"
    info = json.loads(source.read("segment_properties/info"))
    assert info["@type"] == "neuroglancer_segment_properties"
    assert info["inline"]["ids"] == ["3", "5", "12"]
    length, tags = info["inline"]["properties"]  # "fa" has two values per object: not shown
    assert length == {
        "id": "length",
        "type": "number",
        "data_type": "float32",
        "values": [11.5, 0.25, 7.0],
    }
    assert tags == {
        "id": "tags",
        "type": "tags",
        "tags": ["arcuate_fasciculus", "cst"],
        "values": [[], [0, 1], [0]],
    }
    plain = tmp_path / "plain.zarr"
    zv.write_polylines(plain, lines[:2], chunk_shape=10.0, object_ids=[12, 3])
    bare = json.loads(SkeletonSource(zv.open(plain)).read("segment_properties/info"))
    assert bare["inline"]["properties"] == [{"id": "label", "type": "label", "values": ["3", "12"]}]
