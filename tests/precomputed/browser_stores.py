"""The stores the browser test serves: a clustered point cloud with levels, a fibre bundle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import trimesh

import zarr_vectors as zv

EXTENT = 1000.0


def clustered_points(path: Path, count: int, seed: int = 0, chunks: int = 8) -> Path:
    """``count`` points in a dozen Gaussian clusters inside a 1000-unit cube, with levels,
    in ``chunks`` chunks per axis (``"sample"`` levels down to ``count / 20`` points)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2 * EXTENT, 0.8 * EXTENT, (12, 3))
    spread = rng.uniform(0.03, 0.12, 12) * EXTENT
    which = rng.integers(0, 12, count)
    xyz = centres[which] + rng.normal(0, 1, (count, 3)) * spread[which, None]
    xyz = np.clip(xyz, 0, EXTENT - 1).astype(np.float32)
    zv.write_points(
        path, xyz, chunk_shape=EXTENT / chunks, levels=zv.Levels(target=max(count // 20, 1000))
    )
    return path


def fibre_bundle(path: Path, count: int, seed: int = 0) -> Path:
    """``count`` streamlines along an arch (a callosum-like bundle), 60 points each."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, np.pi, 60)
    lines = []
    for _ in range(count):
        radius = rng.normal(0.3, 0.03) * EXTENT
        offset = rng.normal(0, 0.04, 3) * EXTENT
        wobble = rng.normal(0, 0.004, (60, 3)).cumsum(axis=0) * EXTENT
        arch = np.stack([np.cos(t) * radius, np.sin(t) * radius, np.zeros_like(t)], axis=1)
        lines.append(arch + EXTENT / 2 + offset + wobble)
    zv.write_polylines(path, lines, kind="streamline", chunk_shape=EXTENT / 8)
    return path


def two_meshes(path: Path) -> Path:
    """A sphere (object 1) beside a torus (object 2), with a level of detail."""
    sphere = trimesh.creation.icosphere(subdivisions=3, radius=0.1 * EXTENT)
    torus = trimesh.creation.torus(major_radius=0.15 * EXTENT, minor_radius=0.04 * EXTENT)
    vertices = np.concatenate([sphere.vertices + 0.35 * EXTENT, torus.vertices + 0.65 * EXTENT])
    faces = np.concatenate([sphere.faces, torus.faces + len(sphere.vertices)])
    objects = np.repeat([1, 2], [len(sphere.vertices), len(torus.vertices)])
    zv.write_mesh(
        path, vertices, faces, vertex_objects=objects, chunk_shape=EXTENT / 4, levels=1,
        progress=False,
    )  # fmt: skip
    return path
