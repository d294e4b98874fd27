"""Per-edge (graphs) and per-face (meshes) attributes follow their links (spec §9.12, §9.13)."""

from __future__ import annotations

import numpy as np
from zarr.storage import MemoryStore

import zarr_vectors as zv


def _edge_table(edges: np.ndarray, values: np.ndarray) -> dict[tuple[int, int], float]:
    return {(int(a), int(b)): float(v) for (a, b), v in zip(edges, values, strict=True)}


def test_graph_edge_attributes_round_trip_and_clip(rng: np.random.Generator) -> None:
    n = 400
    positions = rng.uniform(0, 40, (n, 3))
    labels = rng.integers(0, 5, n)
    edges = []
    for label in range(5):
        members = np.flatnonzero(labels == label)
        pairs = rng.choice(members, (60, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        edges.append(np.unique(np.sort(pairs, axis=1), axis=0))
    edges_in = np.concatenate(edges)
    weight = rng.random(edges_in.shape[0])
    kind = rng.integers(0, 4, (edges_in.shape[0], 2)).astype(np.int16)
    store = MemoryStore()
    zv.write_graph(
        store,
        positions,
        edges_in,
        vertex_objects=labels,
        chunk_shape=10.0,
        edge_attributes={"weight": weight, "kind": kind},
    )
    opened = zv.open(store)
    got = opened.read()
    assert got.edges is not None
    assert set(got.link_attributes) == {"weight", "kind"}
    # map result rows back to input vertices by position (positions are distinct floats)
    lookup = {tuple(p): i for i, p in enumerate(positions)}
    back = np.array([lookup[tuple(p)] for p in got.positions])
    stored = np.sort(back[got.edges], axis=1)
    expected = _edge_table(np.sort(edges_in, axis=1), weight)
    assert _edge_table(stored, got.link_attributes["weight"]) == expected
    expected_kind = {
        tuple(e): tuple(k)
        for e, k in zip(np.sort(edges_in, axis=1).tolist(), kind.tolist(), strict=True)
    }
    assert {
        tuple(e): tuple(k)
        for e, k in zip(stored.tolist(), got.link_attributes["kind"].tolist(), strict=True)
    } == expected_kind
    lo, hi = np.array([5.0, 5.0, 5.0]), np.array([25.0, 30.0, 35.0])
    clipped = opened.query((lo, hi), clip=True)
    assert clipped.edges is not None
    assert clipped.link_attributes["weight"].shape[0] == clipped.edges.shape[0]
    back_c = np.array([lookup[tuple(p)] for p in clipped.positions])
    pairs_c = np.sort(back_c[clipped.edges], axis=1)
    assert _edge_table(pairs_c, clipped.link_attributes["weight"]).items() <= expected.items()


def test_mesh_face_attributes_follow_faces(rng: np.random.Generator) -> None:
    grid = np.stack(np.meshgrid(np.arange(12.0), np.arange(12.0), indexing="ij"), -1)
    vertices = np.concatenate([grid.reshape(-1, 2), np.zeros((144, 1))], axis=1)
    faces = []
    for i in range(11):
        for j in range(11):
            a = i * 12 + j
            faces += [(a, a + 12, a + 1), (a + 1, a + 12, a + 13)]
    faces_in = np.array(faces)
    area_id = np.arange(faces_in.shape[0], dtype=np.int32)
    store = MemoryStore()
    zv.write_mesh(store, vertices, faces_in, chunk_shape=4.0, face_attributes={"id": area_id})
    got = zv.open(store).read()
    assert got.faces is not None
    lookup = {tuple(p): i for i, p in enumerate(vertices)}
    back = np.array([lookup[tuple(p)] for p in got.positions])
    np.testing.assert_array_equal(back[got.faces], faces_in[got.link_attributes["id"]])
    assert np.array_equal(np.sort(got.link_attributes["id"]), area_id)
