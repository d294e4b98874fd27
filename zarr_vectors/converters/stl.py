"""STL meshes (via trimesh, extra ``mesh``) ↔ mesh stores: see
:mod:`~zarr_vectors.converters.meshes` for what import and export keep.

Import option ``merge_vertices`` (default True): identical corners become one vertex;
export option ``encoding``: ``"binary"`` (float32, default) or ``"ascii"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.converters._common import encoding_option, flag_option
from zarr_vectors.converters._ply import MeshInput
from zarr_vectors.converters.meshes import mesh_converter, three_d
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.result import QueryResult

__all__ = ["STL", "merge_identical"]


def _trimesh(what: str) -> Any:
    return require("trimesh", extra="mesh", purpose=f"{what} STL meshes")


def merge_identical(corners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``corners`` in order of first occurrence, and each row's index."""
    _, first, inverse = np.unique(corners, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    return corners[first[order]], rank[inverse.reshape(-1)]


def _read_stl(src: Path, options: Mapping[str, Any]) -> MeshInput:
    trimesh = _trimesh("reading")
    loaded = trimesh.load_mesh(str(src), file_type="stl", process=False)
    corners = np.asarray(loaded.vertices)[np.asarray(loaded.faces)].reshape(-1, 3)
    if corners.shape[0] == 0:
        raise InvalidInputError(f"{src} holds no triangle (is it an STL file?)")
    as32 = corners.astype(np.float32)
    if np.array_equal(as32, corners):
        corners = as32
    if not flag_option(options, "merge_vertices", True):
        return MeshInput(corners, np.arange(corners.shape[0]).reshape(-1, 3))
    positions, index = merge_identical(corners)
    return MeshInput(positions, index.reshape(-1, 3))


def _write_stl(found: QueryResult, tmp: Path, options: Mapping[str, Any]) -> None:
    three_d(found, "STL")
    trimesh = _trimesh("writing")
    faces = found.faces if found.faces is not None else np.empty((0, 3), np.int64)
    mesh = trimesh.Trimesh(
        vertices=found.positions.astype(np.float64), faces=faces, process=False, validate=False
    )
    if encoding_option(options) == "ascii":
        tmp.write_text(mesh.export(file_type="stl_ascii"), encoding="ascii")
    else:
        tmp.write_bytes(mesh.export(file_type="stl"))


STL = mesh_converter("stl", "mesh", _read_stl, _write_stl, ("merge_vertices",), ("encoding",))
"""STL meshes (trimesh, extra ``mesh``)."""
