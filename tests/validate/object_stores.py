"""Valid object stores of every kind for the L3 object checks, written by the library.

Each store lives in a :class:`zarr.storage.MemoryStore`, uses small chunks (so objects cross
chunks and come back), small row blocks, groups, object attributes and the opt-in
``fragment_attributes/object_id``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.store.io import StoreIO

KINDS = ("polyline", "streamline", "graph", "directed", "skeleton", "mesh")
"""Store names: the object kinds, plus a directed graph."""

CHUNK = 4.0
BIN = 2.0


def _options() -> zv.WriteOptions:
    return zv.WriteOptions(rows_per_block=8, fragment_attributes=("weight",))


def _walks(rng: np.random.Generator, count: int, length: int) -> list[np.ndarray]:
    steps = rng.normal(0, 0.8, (count, length, 3))
    starts = rng.uniform(2, 10, (count, 1, 3))
    return list(np.cumsum(steps, axis=1) + starts)


def object_kind_store(name: str, seed: int = 3) -> MemoryStore:
    """A valid store of kind ``name`` (one of :data:`KINDS`), or ``"streamlines-1.5"``: the
    golden 1.5 streamline store (:func:`golden_1_5_store`)."""
    if name == "streamlines-1.5":
        return golden_1_5_store("streamlines_3d_groups")
    rng = np.random.default_rng(seed)
    store = MemoryStore()
    common = {
        "chunk_shape": CHUNK,
        "bin_shape": BIN,
        "options": _options(),
        "groups": {"first": [0, 1], "rest": [2]},
    }
    if name in ("polyline", "streamline"):
        lines = _walks(rng, 5, 30)
        zv.write_polylines(
            store,
            lines,
            kind=name,
            attributes={"fa": rng.random(150).astype(np.float32)},
            object_attributes={"weight": rng.random(5)},
            **common,
        )
    elif name in ("graph", "directed"):
        pos = np.concatenate(_walks(rng, 3, 20)).astype(np.float32)
        owner = np.repeat(np.arange(3), 20)
        edges = _graph_edges(rng, owner)
        zv.write_graph(
            store,
            pos,
            edges,
            directed=name == "directed",
            vertex_objects=owner,
            object_attributes={"weight": rng.random(3)},
            **common,
        )
    elif name == "skeleton":
        pos = np.concatenate(_walks(rng, 3, 25)).astype(np.float32)
        parents = np.concatenate([np.arange(-1, 24) + 25 * k for k in range(3)])
        parents[[0, 25, 50]] = -1
        parents[[10, 40]] = [3, 28]  # branches
        zv.write_skeletons(
            store,
            pos,
            parents=parents,
            vertex_objects=np.repeat(np.arange(3), 25),
            radius=rng.uniform(0.1, 1, 75).astype(np.float32),
            object_attributes={"weight": rng.random(3)},
            **common,
        )
    else:
        vertices, faces, owner = _spheres(rng)
        zv.write_mesh(
            store,
            vertices,
            faces,
            vertex_objects=owner,
            object_attributes={"weight": rng.random(3)},
            **common,
        )
    return store


def _graph_edges(rng: np.random.Generator, owner: np.ndarray) -> np.ndarray:
    edges = []
    for k in np.unique(owner):
        ids = np.flatnonzero(owner == k)
        chain = np.stack([ids[:-1], ids[1:]], axis=1)
        extra = rng.choice(ids, (6, 2))
        extra = extra[extra[:, 0] != extra[:, 1]]
        edges.append(np.concatenate([chain, extra]))
    pairs = np.concatenate(edges)
    _, first = np.unique(np.sort(pairs, axis=1), axis=0, return_index=True)
    return pairs[np.sort(first)]


def _spheres(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rings, segments = 6, 8
    verts, faces, owner = [], [], []
    offset = 0
    for k in range(3):
        theta = np.linspace(0, np.pi, rings + 1)[1:-1]
        phi = np.linspace(0, 2 * np.pi, segments, endpoint=False)
        t, p = np.meshgrid(theta, phi, indexing="ij")
        ring = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1)
        pts = np.concatenate([[[0, 0, 1]], ring.reshape(-1, 3), [[0, 0, -1]]])
        pts = pts * 3.0 + rng.uniform(3, 9, 3)
        n = pts.shape[0]
        tri = []
        for j in range(segments):
            tri.append([0, 1 + j, 1 + (j + 1) % segments])
            last = 1 + (rings - 2) * segments
            tri.append([n - 1, last + (j + 1) % segments, last + j])
        for r in range(rings - 2):
            for j in range(segments):
                a, b = 1 + r * segments + j, 1 + r * segments + (j + 1) % segments
                c, d = a + segments, b + segments
                tri.extend([[a, c, b], [b, c, d]])
        verts.append(pts)
        faces.append(np.asarray(tri) + offset)
        owner.append(np.full(n, k))
        offset += n
    return np.concatenate(verts), np.concatenate(faces), np.concatenate(owner)


GOLDEN_1_5 = Path(__file__).parents[1] / "data" / "golden" / "1.5"


def golden_1_5_store(name: str) -> MemoryStore:
    """A copy in memory of the golden store ``name`` of format 1.5 (three fragment arrays
    per chunk, not the fragment record of 1.6): damage to those arrays is only possible in
    a store of format 1.5 or older."""
    store = MemoryStore()
    io = StoreIO(store)
    root = GOLDEN_1_5 / f"{name}.zarrvectors"
    for path in sorted(root.rglob("*")):
        if path.is_file():
            io.set(path.relative_to(root).as_posix(), path.read_bytes())
    return store
