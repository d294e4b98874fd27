"""The tiny stores of the data-file corruption corpus, one per kind, written by the library.

Every store has a few chunks, an empty chunk inside its grid (so a chunk file can be
duplicated onto a key the grid says is empty), per-vertex attributes, and (object kinds)
object attributes, groups with a group attribute, and link attributes where the kind has
them. ``sharded_graph`` and ``sharded_points`` keep several chunks per shard (format 1.1).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv

CHUNK = 4.0
BIN = 2.0
R = 8
"""Rows per block: small, so a chunk holds several row blocks."""

GROUPS = {"first": [0, 1], "rest": [2]}
GROUP_ATTRIBUTES = {"w": np.asarray([1.5, -2.0], np.float32)}


def _options(**kwargs: Any) -> zv.WriteOptions:
    return zv.WriteOptions(rows_per_block=R, **kwargs)


def _walks(seed: int, count: int, length: int) -> list[np.ndarray]:
    """``count`` random walks of ``length`` 3-d vertices inside ``[0, 12)`` (rounded)."""
    rng = np.random.default_rng(seed)
    steps = rng.normal(0, 0.7, (count, length, 3))
    starts = rng.uniform(3, 8, (count, 1, 3))
    return [np.clip(w, 0.0, 11.9).round(3) for w in np.cumsum(steps, axis=1) + starts]


def _chain_edges(sizes: list[int]) -> np.ndarray:
    """Each object a chain plus a few chords (no edge twice, no self-loop)."""
    edges, offset = [], 0
    for k in sizes:
        ids = np.arange(offset, offset + k)
        edges.append(np.stack([ids[:-1], ids[1:]], axis=1))
        edges.append(np.stack([ids[:-3:3], ids[3::3]], axis=1))
        offset += k
    return np.concatenate(edges)


def _strip_faces(sizes: list[int]) -> np.ndarray:
    """Each object a triangle strip over its vertices."""
    faces, offset = [], 0
    for k in sizes:
        faces.extend((offset + i, offset + i + 1, offset + i + 2) for i in range(k - 2))
        offset += k
    return np.asarray(faces, np.int64)


def points(path: Path, *, shard_chunks: int | None = None) -> None:
    """A point cloud with two attributes and object ids, chunk (2, 2, *) empty."""
    rng = np.random.default_rng(11)
    xyz = rng.uniform(0.0, 12.0, (150, 3)).round(3)
    xyz = xyz[~((xyz[:, 0] >= 8.0) & (xyz[:, 1] >= 8.0))]
    n = xyz.shape[0]
    zv.write_points(
        path,
        xyz,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes={"a": rng.random(n).astype(np.float32), "v": rng.random((n, 2))},
        object_ids=np.arange(n, dtype=np.int64) * 3,
        options=_options(shard_chunks=shard_chunks),
    )


def streamlines(path: Path) -> None:
    """Four streamlines with a vertex attribute, an object attribute and groups."""
    lines = _walks(3, 4, 24)
    zv.write_polylines(
        path,
        lines,
        kind="streamline",
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes={"fa": np.linspace(0, 1, 96, dtype=np.float32)},
        object_attributes={"weight": np.arange(4, dtype=np.float64)},
        groups=GROUPS,
        group_attributes=GROUP_ATTRIBUTES,
        options=_options(),
    )


def graph(path: Path, *, shard_chunks: int | None = None) -> None:
    """Three graphs with vertex, edge and object attributes and groups."""
    sizes = [16, 12, 14]
    pos = np.concatenate(_walks(5, 3, 16))[: sum(sizes)]
    edges = _chain_edges(sizes)
    zv.write_graph(
        path,
        pos,
        edges,
        vertex_objects=np.repeat(np.arange(3), sizes),
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes={"t": np.arange(sum(sizes), dtype=np.int32)},
        object_attributes={"weight": np.asarray([0.5, 1.5, 2.5])},
        edge_attributes={"e": np.linspace(-1, 1, edges.shape[0])},
        groups=GROUPS,
        group_attributes=GROUP_ATTRIBUTES,
        options=_options(shard_chunks=shard_chunks),
    )


def skeleton(path: Path) -> None:
    """Three skeletons (branched trees) with a radius and groups."""
    pos = np.concatenate(_walks(7, 3, 15))
    parents = np.concatenate([np.arange(-1, 14) + 15 * k for k in range(3)])
    parents[[0, 15, 30]] = -1
    parents[[9, 40]] = [3, 33]
    zv.write_skeletons(
        path,
        pos,
        parents=parents,
        vertex_objects=np.repeat(np.arange(3), 15),
        chunk_shape=CHUNK,
        bin_shape=BIN,
        radius=np.linspace(0.1, 1, 45, dtype=np.float32),
        object_attributes={"weight": np.asarray([3.0, 2.0, 1.0])},
        groups=GROUPS,
        group_attributes=GROUP_ATTRIBUTES,
        options=_options(),
    )


def mesh(path: Path) -> None:
    """Three triangle strips with face and object attributes and groups."""
    sizes = [14, 12, 16]
    vertices = np.concatenate(_walks(9, 3, 16))[: sum(sizes)]
    faces = _strip_faces(sizes)
    zv.write_mesh(
        path,
        vertices,
        faces,
        vertex_objects=np.repeat(np.arange(3), sizes),
        chunk_shape=CHUNK,
        bin_shape=BIN,
        object_attributes={"weight": np.asarray([1.0, 4.0, 9.0])},
        face_attributes={"area": np.linspace(1, 2, faces.shape[0]).astype(np.float32)},
        groups=GROUPS,
        group_attributes=GROUP_ATTRIBUTES,
        options=_options(),
    )


def sharded_points(path: Path) -> None:
    """:func:`points` with 2 x 2 x 2 chunks per shard (format 1.1)."""
    points(path, shard_chunks=2)


def sharded_graph(path: Path) -> None:
    """:func:`graph` with 2 x 2 x 2 chunks per shard (format 1.1)."""
    graph(path, shard_chunks=2)


STORES: dict[str, Callable[[Path], None]] = {
    "points": points,
    "streamlines": streamlines,
    "graph": graph,
    "skeleton": skeleton,
    "mesh": mesh,
    "sharded_points": sharded_points,
    "sharded_graph": sharded_graph,
}
"""Name -> writer of every store of the corpus."""
