"""Small in-memory stores of random objects of every kind, crossing chunks: the shared
builder of the tests of reads by id, repeated ids and objects kept whole."""

from __future__ import annotations

from typing import Any

import numpy as np
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.test_graphs import BIN, CHUNK, members_by_label, random_edges, scatter
from tests.geometry.test_meshes import random_faces


def random_parents(rng: np.random.Generator, labels: np.ndarray) -> np.ndarray:
    """A random tree per object: each vertex's parent is an earlier vertex of its object."""
    parents = np.full(labels.shape[0], -1, np.int64)
    for idx in members_by_label(labels):
        for k in range(1, len(idx)):
            parents[idx[k]] = idx[int(rng.integers(0, k))]
    return parents


def random_object_store(
    kind: str, seed: int, m: int, max_len: int, *, id_step: int = 1, edge_weights: bool = False
) -> MemoryStore:
    """``m`` random objects of ``kind`` (polyline, streamline, graph, skeleton or mesh) of at
    most ``max_len`` vertices, with a vertex attribute ``w`` and an object attribute
    ``score``, written with row blocks of 16; lines get the ids ``id_step * label``, graphs
    a per-edge ``weight`` when ``edge_weights``."""
    rng = np.random.default_rng(seed)
    positions, labels = scatter(rng, m, max_len=max_len)
    n = len(positions)
    common: dict[str, Any] = {
        "chunk_shape": CHUNK,
        "bin_shape": BIN,
        "attributes": {"w": rng.random(n).astype(np.float32)},
        "object_attributes": {"score": rng.random(m)},
        "options": zv.WriteOptions(rows_per_block=16),
    }
    store = MemoryStore()
    if kind in ("polyline", "streamline"):
        lines = [positions[idx] for idx in members_by_label(labels)]
        ids = np.unique(labels) * id_step
        zv.write_polylines(store, lines, kind=kind, object_ids=ids, **common)
    elif kind == "graph":
        edges = random_edges(rng, labels, directed=False)
        weights = {"weight": rng.random(len(edges), dtype=np.float32)} if edge_weights else {}
        zv.write_graph(
            store, positions, edges, vertex_objects=labels, edge_attributes=weights, **common
        )
    elif kind == "skeleton":
        parents = random_parents(rng, labels)
        zv.write_skeletons(store, positions, parents=parents, vertex_objects=labels, **common)
    else:
        faces = random_faces(rng, labels)
        zv.write_mesh(store, positions, faces, vertex_objects=labels, **common)
    return store
