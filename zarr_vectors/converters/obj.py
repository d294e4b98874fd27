"""Wavefront OBJ meshes (plain text, no extra) ↔ mesh stores: see
:mod:`~zarr_vectors.converters.meshes` for what import and export keep.

Import option ``split_objects``: False makes one mesh of the whole file, True one mesh per
``g`` statement when the file has no ``o`` (default: one mesh per ``o`` statement).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.converters._common import flag_option
from zarr_vectors.converters._obj_text import ObjMesh, obj_text, parse_obj
from zarr_vectors.converters._ply import MeshInput, objects_of
from zarr_vectors.converters.meshes import mesh_converter, three_d
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.result import QueryResult

__all__ = ["OBJ"]


def _one_object_per_group(mesh: ObjMesh) -> MeshInput:
    """One mesh per OBJ object, each with the vertices its faces use and the unused vertices
    declared after its statement, in file order."""
    part_faces, labels, rows = [], [], []
    count = 0
    ids = mesh.object_ids()
    unused = np.ones(mesh.positions.shape[0], dtype=bool)
    unused[mesh.faces.reshape(-1)] = False
    for m in range(ids.shape[0]):
        faces = mesh.faces[mesh.face_objects == m]
        owned = np.union1d(faces.reshape(-1), np.flatnonzero(unused & (mesh.vertex_objects == m)))
        rows.append(owned)
        part_faces.append(np.searchsorted(owned, faces) + count)
        labels.append(np.full(owned.shape[0], ids[m], dtype=np.int64))
        count += owned.shape[0]
    taken = np.concatenate(rows)
    return MeshInput(
        positions=mesh.positions[taken],
        faces=np.concatenate(part_faces),
        vertex_objects=np.concatenate(labels),
        attributes={} if mesh.colors is None else {"color": mesh.colors[taken]},
    )


def _splits_objects(mesh: ObjMesh, options: Mapping[str, Any]) -> bool:
    """The option ``split_objects``; by default, whether the file has ``o`` statements."""
    if options.get("split_objects") is None:
        return mesh.has_o
    return flag_option(options, "split_objects", False)


def _read_obj(src: Path, options: Mapping[str, Any]) -> MeshInput:
    try:
        text = src.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{src} is not a text OBJ file: {exc}") from exc
    mesh = parse_obj(text, str(src))
    if _splits_objects(mesh, options) and mesh.object_names:
        return _one_object_per_group(mesh)
    return MeshInput(
        positions=mesh.positions,
        faces=mesh.faces,
        attributes={} if mesh.colors is None else {"color": mesh.colors},
    )


def _write_obj(found: QueryResult, tmp: Path, options: Mapping[str, Any]) -> None:
    three_d(found, "OBJ")
    offsets, ids = objects_of(found)
    colors = found.attributes.get("color")
    if colors is not None and colors.shape[1:] != (3,):
        colors = None
    faces = found.faces if found.faces is not None else np.empty((0, 3), np.int64)
    text = obj_text(found.positions, faces, offsets, ids, colors)
    tmp.write_text(text, encoding="utf-8")


OBJ = mesh_converter("obj", None, _read_obj, _write_obj, ("split_objects",))
"""Wavefront OBJ meshes (plain text, no extra)."""
