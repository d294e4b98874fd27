"""A triangle mesh with vertex and face attributes: write, query a box, export to PLY.

Two tori stand in for segmented cell surfaces. Each is one mesh object with a per-vertex
``curvature`` and a per-face ``area``; winding is kept exactly. A box query returns the
meshes that reach into the box (or, clipped, only the triangles inside it), a clipped
result becomes shapely polygons in the x-y plane, and the store is exported to PLY (with
its attributes) and read back.

Needs the ``mesh`` extra for the PLY export: ``pip install 'zarr-vectors[mesh]'``.

Run: python examples/mesh_surface.py [OUTPUT_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import shapely

import zarr_vectors as zv


def torus(centre: np.ndarray, big: float, small: float, n: int = 48, m: int = 24) -> tuple:
    """Vertices, counter-clockwise faces and the curvature of a torus mesh."""
    u, v = np.meshgrid(
        np.linspace(0, 2 * np.pi, n, endpoint=False),
        np.linspace(0, 2 * np.pi, m, endpoint=False),
        indexing="ij",
    )
    ring = big + small * np.cos(v)
    xyz = np.stack([ring * np.cos(u), ring * np.sin(u), small * np.sin(v)], -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    a, b = i * m + j, ((i + 1) % n) * m + j
    c, d = ((i + 1) % n) * m + (j + 1) % m, i * m + (j + 1) % m
    faces = np.concatenate([np.stack([a, b, c], -1), np.stack([a, c, d], -1)]).reshape(-1, 3)
    curvature = (np.cos(v) / (small * ring)).reshape(-1)
    return xyz + centre, faces, curvature


def main(out_dir: Path) -> None:
    """Write two tori, query them, and export them to PLY."""
    parts = [torus(np.array([60.0, 60.0, 50.0]), 30, 10), torus(np.array([140.0, 90, 50]), 25, 8)]
    offsets = np.cumsum([0] + [len(p[0]) for p in parts])
    xyz = np.concatenate([p[0] for p in parts]).astype(np.float32)
    faces = np.concatenate([p[1] + o for p, o in zip(parts, offsets, strict=False)])
    owner = np.repeat(np.arange(2), np.diff(offsets))
    tri = xyz[faces].astype(np.float64)
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)

    path = out_dir / "cells.zarrvectors"
    zv.write_mesh(
        path,
        xyz,
        faces,
        vertex_objects=owner,
        chunk_shape=40.0,
        mode="w",
        attributes={"curvature": np.concatenate([p[2] for p in parts])},
        face_attributes={"area": area.astype(np.float32)},
    )
    store = zv.open(path)
    print(store)

    box = ([100, 60, 0], [180, 140, 100])
    whole = store.query(box)
    inside = store.query(box, clip=True)
    print(
        f"meshes reaching into the box: {whole.object_ids.tolist()}; "
        f"{len(inside.faces)} of their triangles lie inside it"
    )
    outline = shapely.union_all(inside.to_shapely())  # triangles projected on x-y
    print(f"their x-y footprint inside the box covers {outline.area:.0f} square units")

    ply = zv.convert(store, out_dir / "cells.ply", overwrite=True)
    again = zv.convert(ply, out_dir / "from_ply.zarrvectors", overwrite=True)
    assert isinstance(again, zv.VectorStore)
    assert again.object_count == 2
    assert len(again.read().faces) == len(faces)
    print(
        f"exported {ply.name} and read it back: {again.object_count} meshes, "
        f"{len(faces)} triangles, attributes {again.attribute_names}"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
