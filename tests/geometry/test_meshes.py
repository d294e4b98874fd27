"""Meshes: faces read back with their exact winding, boxes against brute force, bad input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.test_graphs import (
    BIN,
    BOX_COUNTS,
    CHUNK,
    Model,
    check_boxes,
    check_link_layout,
    check_objects,
    members_by_label,
    random_boxes,
    scatter,
)
from tests.helpers import examples
from zarr_vectors.errors import InvalidInputError

TETRAHEDRON = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
"""A closed, consistently oriented surface on 4 vertices."""


def random_faces(rng: np.random.Generator, labels: np.ndarray, density: float = 2.0) -> np.ndarray:
    """Faces of three distinct vertices inside each object, in random order and winding."""
    found = []
    for idx in members_by_label(labels):
        if len(idx) < 3:
            continue
        triples = rng.integers(0, len(idx), (int(density * len(idx)) + 1, 3))
        distinct = (
            (triples[:, 0] != triples[:, 1])
            & (triples[:, 1] != triples[:, 2])
            & (triples[:, 0] != triples[:, 2])
        )
        found.append(idx[triples[distinct]])
    faces = np.concatenate(found) if found else np.empty((0, 3), np.int64)
    return faces[rng.permutation(len(faces))]


def _meshes(rng: np.random.Generator, m: int) -> tuple[zv.VectorStore, Model, MemoryStore]:
    positions, labels = scatter(rng, m)
    faces = random_faces(rng, labels)
    n = len(positions)
    attributes = {"normal": rng.normal(size=(n, 3)).astype(np.float32)}
    object_attributes = {"area": rng.random(m), "id2": rng.integers(0, 99, m)}
    store = MemoryStore()
    zv.write_mesh(
        store,
        positions,
        faces,
        vertex_objects=labels,
        attributes=attributes,
        object_attributes=object_attributes,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        options=zv.WriteOptions(rows_per_block=16),
    )
    model = Model(positions, labels, faces, True, attributes, object_attributes)
    return zv.open(store), model, store


def test_every_mesh_reads_back_exactly_by_id(rng: np.random.Generator) -> None:
    opened, model, store = _meshes(rng, 50)
    check_link_layout(store)
    assert opened.kind == "mesh"
    assert opened.object_count == 50
    assert opened.metadata["winding_order"] == "ccw"
    assert opened.metadata["closed_surface"] is False
    order = rng.permutation(50)
    assert model.ids is not None
    check_objects(opened.read_objects(model.ids[order]), model, order)
    everything = opened.read()
    check_objects(everything, model, np.arange(50))
    assert everything.edges is None
    assert everything.faces is not None
    assert zv.validate(store, level=2).ok
    assert zv.validate(store, level=3).ok


@pytest.mark.parametrize("boxes", BOX_COUNTS)
def test_mesh_boxes_equal_brute_force(rng: np.random.Generator, boxes: int) -> None:
    opened, model, _ = _meshes(rng, 70)
    check_boxes(opened, model, random_boxes(rng, model.positions, boxes))


def test_closed_surfaces_across_chunks_keep_their_winding(rng: np.random.Generator) -> None:
    parts, faces, labels = [], [], []
    for k in range(6):
        corner = rng.uniform(0, 3 * CHUNK, 3)
        parts.append(corner + rng.uniform(0, 1.5 * CHUNK, (4, 3)))
        faces.append(TETRAHEDRON[rng.permutation(4)] + 4 * k)
        labels.append(np.full(4, 10 * k))
    positions, labels_ = np.concatenate(parts), np.concatenate(labels)
    triangles = np.concatenate(faces)
    triangles = np.roll(triangles, 1, axis=1)  # same winding, another first vertex
    store = MemoryStore()
    zv.write_mesh(
        store,
        positions,
        triangles,
        vertex_objects=labels_,
        winding_order="cw",
        closed_surface=True,
        chunk_shape=CHUNK,
    )
    check_link_layout(store)
    opened = zv.open(store)
    assert opened.metadata["winding_order"] == "cw"
    assert opened.metadata["closed_surface"] is True
    model = Model(positions, labels_, triangles)
    check_objects(opened.read(), model, np.arange(6))
    check_boxes(opened, model, random_boxes(rng, positions, 10))
    assert zv.validate(store, level=3).ok


def test_face_whose_centroid_chunk_holds_none_of_its_vertices() -> None:
    positions = np.array([[9.0, 19.0], [19.0, 9.0], [9.5, 9.5], [15.0, 15.0]])
    faces = np.array([[0, 1, 2], [2, 1, 3], [3, 0, 2]])  # face 0: centroid in chunk (1, 1)
    store = MemoryStore()
    zv.write_mesh(store, positions, faces, chunk_shape=CHUNK, bin_shape=BIN)
    check_link_layout(store)
    opened = zv.open(store)
    got = opened.read_objects([0])
    np.testing.assert_array_equal(got.positions, positions)
    np.testing.assert_array_equal(canonical_faces(got.faces), canonical_faces(faces))
    model = Model(positions, np.zeros(4, np.int64), faces)
    boxes = [([0, 0], [10, 10]), ([10, 10], [20, 20]), ([0, 9], [20, 20]), ([9, 0], [20, 20])]
    check_boxes(opened, model, boxes)
    assert zv.validate(store, level=3).ok


def canonical_faces(faces: Any) -> np.ndarray:
    rows = np.asarray(faces)
    return rows[np.lexsort(rows.T[::-1])]


def test_degenerate_faces_only_when_allowed() -> None:
    positions = np.array([[0.0, 0, 0], [11, 0, 0], [0, 11, 0]])
    faces = np.array([[0, 1, 2], [0, 0, 1]])
    with pytest.raises(InvalidInputError, match="repeats a vertex"):
        zv.write_mesh(MemoryStore(), positions, faces, chunk_shape=CHUNK)
    store = MemoryStore()
    zv.write_mesh(store, positions, faces, chunk_shape=CHUNK, allow_degenerate=True)
    check_link_layout(store)
    got = zv.open(store).read()
    np.testing.assert_array_equal(canonical_faces(got.faces), canonical_faces(faces))


def test_groups_ids_and_vertices_without_faces() -> None:
    positions = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [30, 30, 30], [40, 40, 40]])
    labels = np.array([3, 3, 3, 8, 8])
    store = MemoryStore()
    zv.write_mesh(
        store,
        positions,
        [[0, 2, 1]],
        vertex_objects=labels,
        object_ids=[-5, 2**62],
        groups={"far": [2**62]},
        chunk_shape=CHUNK,
    )
    opened = zv.open(store)
    model = Model(positions, labels, np.array([[0, 2, 1]]), ids=np.array([-5, 2**62]))
    check_objects(opened.query(group="far"), model, np.array([1]))
    check_objects(opened.read_objects([2**62, -5]), model, np.array([1, 0]))


P = np.array([[0.0, 0, 0], [1, 1, 1], [12, 2, 2], [3, 13, 3], [4, 4, 4], [5, 5, 25]])
BAD: list[tuple[str, Any, dict[str, Any], str]] = [
    ("range", [[0, 1, 6]], {}, "outside 0..5"),
    ("negative", [[0, -1, 2]], {}, "outside 0..5"),
    ("shape", [[0, 1]], {}, r"shape \(count, 3\)"),
    ("float", np.array([[0.0, 1, 2]]), {}, "integer array"),
    ("degenerate", [[0, 1, 2], [3, 4, 3]], {}, "face 1 .* repeats a vertex"),
    ("cross_object", [[0, 1, 3]], {"vertex_objects": [0, 0, 0, 1, 1, 1]}, "different objects"),
    ("open_surface", [[0, 1, 2]], {"closed_surface": True}, "used by 1 faces"),
    ("winding", [[0, 1, 2]], {"winding_order": "left"}, "'ccw' or 'cw'"),
    ("closed_flag", [[0, 1, 2]], {"closed_surface": 1}, "True or False"),
    ("labels", [[0, 1, 2]], {"vertex_objects": [0, 0, 0]}, "vertex_objects"),
    ("obj_attr", [[0, 1, 2]], {"object_attributes": {"a": np.zeros(2)}}, r"shape \(1,\)"),
    ("name", [[0, 1, 2]], {"attributes": {"zv_x": np.zeros(6)}}, "not allowed"),
]


@pytest.mark.parametrize(
    ("faces", "kwargs", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input(faces: Any, kwargs: dict[str, Any], message: str) -> None:
    store = MemoryStore()
    with pytest.raises(InvalidInputError, match=message):
        zv.write_mesh(store, P, faces, chunk_shape=CHUNK, **kwargs)
    assert not store._store_dict


@settings(
    max_examples=examples(12, 25), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 12),
    ndim=st.integers(2, 4),
    density=st.sampled_from([0.0, 1.0, 3.0]),
)
def test_mesh_property(seed: int, m: int, ndim: int, density: float) -> None:
    rng = np.random.default_rng(seed)
    positions, labels = scatter(rng, m, ndim=ndim, max_len=15)
    if seed % 2:  # stored as float32: boxes compare the stored values
        positions = positions.astype(np.float32)
    faces = random_faces(rng, labels, density)
    store = MemoryStore()
    zv.write_mesh(
        store,
        positions,
        faces,
        vertex_objects=labels,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        options=zv.WriteOptions(rows_per_block=4),
    )
    check_link_layout(store)
    opened = zv.open(store)
    model = Model(positions, labels, faces)
    check_objects(opened.read_objects(model.unique[::-1]), model, np.arange(m)[::-1])
    check_boxes(opened, model, random_boxes(rng, positions, 2))
