"""Small stores of every kind, with attributes, shared by the display, conversion and plot tests.

Each builder writes into a fresh ``MemoryStore`` (or the path given) and returns the inputs it
wrote, so tests can compare what they read against them.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from zarr.storage import MemoryStore

import zarr_vectors as zv

UNITS = zv.WriteOptions(axis_units="micrometer")


@dataclass
class Written:
    """A store and what was written into it."""

    store: Any
    positions: np.ndarray
    attributes: dict[str, np.ndarray] = field(default_factory=dict)
    object_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    link_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    offsets: np.ndarray | None = None
    links: np.ndarray | None = None
    groups: dict[str, list[int]] = field(default_factory=dict)

    def open(self) -> zv.VectorStore:
        return zv.open(self.store)


def points(store: Any = None, n: int = 600, seed: int = 1) -> Written:
    """A 3-D point cloud in [0, 100)^3 with a scalar and a 3-column attribute."""
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(1, 97, (n, 3)).astype(np.float32)
    xyz[0] = (0.5, 0.75, 0.25)  # round extremes, so the bounds print exactly
    xyz[1] = (99.5, 98.75, 97.0)
    attrs = {
        "intensity": rng.random(n).astype(np.float32),
        "rgb": rng.integers(0, 256, (n, 3)).astype(np.uint8),
    }
    store = MemoryStore() if store is None else store
    zv.write_points(
        store,
        xyz,
        chunk_shape=50.0,
        bin_shape=25.0,
        attributes=attrs,
        object_ids=np.arange(n) % 7,
        options=UNITS,
    )
    return Written(store, xyz, attrs)


def _walks(rng: np.random.Generator, m: int, dim: int) -> list[np.ndarray]:
    return [
        (np.cumsum(rng.normal(0, 1.5, (int(rng.integers(2, 30)), dim)), axis=0) + 20).round(3)
        for _ in range(m)
    ]


def streamlines(store: Any = None, m: int = 12, seed: int = 2, dim: int = 3) -> Written:
    """Random-walk streamlines with a vertex, an object attribute and two groups."""
    rng = np.random.default_rng(seed)
    lines = _walks(rng, m, dim)
    offsets = np.concatenate([[0], np.cumsum([len(line) for line in lines])])
    vertices = np.concatenate(lines)
    attrs = {"fa": rng.random(vertices.shape[0])}
    objs = {"weight": rng.random(m).astype(np.float32), "tag": np.arange(m, dtype=np.int16)}
    groups = {"cst": [0, 2, 4], "af": [1, 3]}
    store = MemoryStore() if store is None else store
    zv.write_polylines(
        store,
        lines,
        kind="streamline",
        chunk_shape=8.0,
        attributes=attrs,
        object_attributes=objs,
        groups=groups,
        options=UNITS,
    )
    return Written(store, vertices, attrs, objs, offsets=offsets, groups=groups)


def _components(rng: np.random.Generator, m: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    labels = np.repeat(np.arange(m), rng.integers(3, 15, m))
    positions = rng.uniform(0, 40, (labels.shape[0], dim)).round(3)
    return positions, labels


def graph(store: Any = None, m: int = 6, seed: int = 3, dim: int = 3) -> Written:
    """Components that are chains with chords, with an edge attribute."""
    rng = np.random.default_rng(seed)
    positions, labels = _components(rng, m, dim)
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    ends = np.r_[starts[1:], labels.shape[0]]
    edges = np.array(
        [(i, i + 1) for s, e in zip(starts, ends, strict=True) for i in range(s, e - 1)]
        + [(s, e - 1) for s, e in zip(starts, ends, strict=True) if e - s > 2]
    )
    link_attrs = {"weight": rng.random(edges.shape[0])}
    store = MemoryStore() if store is None else store
    zv.write_graph(
        store,
        positions,
        edges,
        vertex_objects=labels,
        chunk_shape=10.0,
        edge_attributes=link_attrs,
        options=UNITS,
    )
    return Written(store, positions, link_attributes=link_attrs, links=edges)


def skeletons(store: Any = None, m: int = 5, seed: int = 4) -> Written:
    """Random trees given by SWC-style parents."""
    rng = np.random.default_rng(seed)
    positions, labels = _components(rng, m, 3)
    parents = np.full(labels.shape[0], -1)
    for i in range(1, labels.shape[0]):
        if labels[i] == labels[i - 1]:
            first = int(np.flatnonzero(labels == labels[i])[0])
            parents[i] = int(rng.integers(first, i))
    store = MemoryStore() if store is None else store
    zv.write_skeletons(
        store, positions, parents=parents, vertex_objects=labels, chunk_shape=10.0, options=UNITS
    )
    edges = np.stack([np.flatnonzero(parents >= 0), parents[parents >= 0]], axis=1)
    return Written(store, positions, links=edges)


def meshes(store: Any = None, seed: int = 5, dim: int = 3) -> Written:
    """Two triangulated grids (height fields) with a vertex and a face attribute."""
    rng = np.random.default_rng(seed)
    parts, faces, labels = [], [], []
    base = 0
    for k, size in enumerate((5, 4)):
        u, v = np.meshgrid(np.arange(size, dtype=float), np.arange(size, dtype=float))
        grid = np.stack([u.ravel() * 3 + 20 * k, v.ravel() * 3], axis=1)
        if dim == 3:
            grid = np.column_stack([grid, rng.uniform(0, 2, grid.shape[0]).round(3)])
        idx = np.arange(size * size).reshape(size, size) + base
        a, b, c, d = idx[:-1, :-1], idx[:-1, 1:], idx[1:, :-1], idx[1:, 1:]
        faces.append(
            np.concatenate([np.stack([a, b, d], -1), np.stack([a, d, c], -1)]).reshape(-1, 3)
        )
        parts.append(grid)
        labels.append(np.full(size * size, k))
        base += size * size
    positions = np.concatenate(parts)
    face_array = np.concatenate(faces)
    attrs = {"height": positions[:, -1].copy()}
    link_attrs = {"quality": rng.random(face_array.shape[0]).astype(np.float32)}
    store = MemoryStore() if store is None else store
    zv.write_mesh(
        store,
        positions,
        face_array,
        vertex_objects=np.concatenate(labels),
        chunk_shape=6.0,
        attributes=attrs,
        face_attributes=link_attrs,
        options=UNITS,
    )
    return Written(store, positions, attrs, link_attributes=link_attrs, links=face_array)


def html_rows(page: str) -> list[tuple[str, ...]]:
    """The cell texts of every row of an HTML table, unescaped."""
    rows = re.findall(r"<tr>(.*?)</tr>", page, flags=re.S)
    return [
        tuple(html.unescape(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, flags=re.S))
        for row in rows
    ]


BUILDERS = {
    "point_cloud": points,
    "streamline": streamlines,
    "graph": graph,
    "skeleton": skeletons,
    "mesh": meshes,
}
