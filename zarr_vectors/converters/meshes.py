"""Triangle meshes: PLY (via plyfile), OBJ (plain text) and STL (via trimesh) ↔ mesh stores.

Import writes one mesh object per file unless the file says otherwise:

* **PLY**: the ``vertex`` element's ``x, y[, z]`` are the positions, in their dtype; every
  other scalar vertex property (``quality``, ``red``/``green``/``blue``, ``nx``...) becomes a
  vertex attribute and every scalar ``face`` property a face attribute, with their dtypes;
  list properties other than the face's ``vertex_indices`` are skipped. Properties
  ``a_0 ... a_{K-1}`` of one dtype become one ``(n, K)`` attribute ``a`` (as export writes
  them). An integer vertex property ``object_id`` (``object_property=`` renames it) splits
  the vertices into mesh objects with those ids (export writes it for stores of several
  meshes).
* **OBJ**: the vertices (float64; ``r g b`` after the coordinates of every vertex become the
  ``(n, 3)`` attribute ``color``) and faces, one mesh per ``o`` statement (so that an
  exported store comes back with its meshes), with the ids of names ``object_<id>`` (as
  export writes them), else 0, 1, ... Each mesh holds the vertices its faces use and the
  vertices no face uses that follow its ``o`` line, in file order (a vertex that faces of
  two objects use is in both). ``split_objects=False`` makes one mesh of the whole file
  (with every vertex, in file order), ``split_objects=True`` one mesh per ``g`` statement
  when the file has no ``o`` (by default such a file is one mesh). Read by
  :mod:`~zarr_vectors.converters._obj_text`, which keeps face order exactly (trimesh
  reorders the faces of files with several materials).
* **STL**: triangles repeat their corners; identical corners are merged into one vertex
  (first occurrence order) unless ``merge_vertices=False``. Positions are float32 when
  every coordinate is a float32 (always for binary STL), else float64.

Faces keep their order and winding; a polygon of k vertices (PLY, OBJ) becomes the fan of
k - 2 triangles ``(v0, vi, vi+1)``, each with the polygon's face attributes. Names that are
not identifiers are made safe (``"my prop"`` → ``my_prop``). ``dtype="float32"`` or
``"float64"`` sets the stored dtype; ``winding_order``, ``closed_surface`` and
``allow_degenerate`` are passed to :func:`~zarr_vectors.write_mesh`.

Export writes every mesh of the store (or ``ids=[...]``, in that order) into one file, the
faces of a mesh together (a store returns faces in chunk order, not in the order written;
the vertices of a mesh keep their order):

* **PLY** (2-D or 3-D): positions in their dtype, vertex and face attributes (an ``(n, K)``
  attribute as ``name_0 ... name_{K-1}``; bool as uchar, 64-bit integers as 32-bit when
  their values fit), the vertex property ``object_id`` unless the store is the single mesh
  0; binary little-endian (``encoding="ascii"`` for text, which keeps every digit).
* **OBJ** (3-D): ``o object_<id>``, its vertices (with ``color`` when the store has an
  ``(n, 3)`` attribute of that name) and its faces, numbers with the fewest digits that
  read back exactly.
* **STL** (3-D): binary float32 (``encoding="ascii"`` for text with every digit of
  float64); face normals computed from the winding; attributes are not written.

Options
-------
Import: ``dtype``, ``winding_order``, ``closed_surface``, ``allow_degenerate``, and
``object_property`` (PLY), ``split_objects`` (OBJ), ``merge_vertices`` (STL).
Export: ``ids``, ``encoding`` (PLY, STL), ``object_property`` (PLY).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.converters._common import (
    atomic_output,
    check_options,
    encoding_option,
    read_selection,
)
from zarr_vectors.converters._obj_text import ObjMesh, obj_text, parse_obj
from zarr_vectors.converters._ply import MeshInput, objects_of, read_ply, write_ply
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.geometry.meshes import write_mesh
from zarr_vectors.geometry.result import QueryResult
from zarr_vectors.store.io import StoreLike

__all__ = ["export_store", "import_file", "merge_identical"]

_WRITE_OPTIONS = ("winding_order", "closed_surface", "allow_degenerate")
IMPORT_OPTIONS = {
    "ply": ("dtype", "object_property", *_WRITE_OPTIONS),
    "obj": ("dtype", "split_objects", *_WRITE_OPTIONS),
    "stl": ("dtype", "merge_vertices", *_WRITE_OPTIONS),
}
EXPORT_OPTIONS = {
    "ply": ("ids", "encoding", "object_property"),
    "obj": ("ids",),
    "stl": ("ids", "encoding"),
}


def _flag(options: Mapping[str, Any], name: str, default: bool) -> bool:
    value = options.get(name, default)
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be true or false, got {value!r}")
    return value


# -- OBJ ------------------------------------------------------------------------------------


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
    return _flag(options, "split_objects", False)


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
    _three_d(found, "OBJ")
    offsets, ids = objects_of(found)
    colors = found.attributes.get("color")
    if colors is not None and colors.shape[1:] != (3,):
        colors = None
    faces = found.faces if found.faces is not None else np.empty((0, 3), np.int64)
    text = obj_text(found.positions, faces, offsets, ids, colors)
    tmp.write_text(text, encoding="utf-8")


# -- STL ------------------------------------------------------------------------------------


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
    if not _flag(options, "merge_vertices", True):
        return MeshInput(corners, np.arange(corners.shape[0]).reshape(-1, 3))
    positions, index = merge_identical(corners)
    return MeshInput(positions, index.reshape(-1, 3))


def _write_stl(found: QueryResult, tmp: Path, options: Mapping[str, Any]) -> None:
    _three_d(found, "STL")
    trimesh = _trimesh("writing")
    faces = found.faces if found.faces is not None else np.empty((0, 3), np.int64)
    mesh = trimesh.Trimesh(
        vertices=found.positions.astype(np.float64), faces=faces, process=False, validate=False
    )
    if encoding_option(options) == "ascii":
        tmp.write_text(mesh.export(file_type="stl_ascii"), encoding="ascii")
    else:
        tmp.write_bytes(mesh.export(file_type="stl"))


def _by_object(found: QueryResult) -> QueryResult:
    """``found`` with its faces (and face attributes) grouped by mesh, in stored order
    within a mesh (a read returns faces in chunk order)."""
    if found.faces is None or found.offsets is None:
        return found
    owner = np.searchsorted(found.offsets, found.faces[:, 0], side="right") - 1
    order = np.argsort(owner, kind="stable")
    return replace(
        found,
        faces=found.faces[order],
        link_attributes={k: v[order] for k, v in found.link_attributes.items()},
    )


def _three_d(found: QueryResult, what: str) -> None:
    if found.positions.shape[1] != 3:
        raise InvalidInputError(f"{what} holds 3-D vertices; the store is 2-D or 4-D")


# -- entry points ---------------------------------------------------------------------------

_READERS: dict[str, Callable[[Path, Mapping[str, Any]], MeshInput]] = {
    "ply": read_ply,
    "obj": _read_obj,
    "stl": _read_stl,
}
_WRITERS: dict[str, Callable[[QueryResult, Path, Mapping[str, Any]], None]] = {
    "ply": write_ply,
    "obj": _write_obj,
    "stl": _write_stl,
}


def _stored_positions(positions: np.ndarray, dtype: Any) -> np.ndarray:
    if dtype is None:
        return positions
    if dtype not in ("float32", "float64"):
        raise InvalidInputError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    return positions.astype(dtype)


def import_file(
    fmt: str,
    src: Path,
    dst: StoreLike,
    *,
    overwrite: bool,
    chunk_shape: Any,
    bin_shape: Any,
    **options: Any,
) -> None:
    """Write the mesh file ``src`` (PLY, OBJ or STL) as a mesh store ``dst``.

    See the module docstring for the options.
    """
    check_options(fmt, options, IMPORT_OPTIONS[fmt])
    mesh = _READERS[fmt](src, options)
    write_mesh(
        dst,
        _stored_positions(mesh.positions, options.get("dtype")),
        mesh.faces,
        vertex_objects=mesh.vertex_objects,
        attributes=mesh.attributes,
        face_attributes=mesh.face_attributes,
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        mode="w" if overwrite else "w-",
        **{k: options[k] for k in _WRITE_OPTIONS if k in options},
    )


def export_store(
    fmt: str, store: VectorStore, dst: Path, *, overwrite: bool, **options: Any
) -> None:
    """Write the meshes of ``store`` into the file ``dst`` (PLY, OBJ or STL).

    See the module docstring for the options.
    """
    check_options(fmt, options, EXPORT_OPTIONS[fmt])
    found = _by_object(read_selection(store, options.get("ids")))
    with atomic_output(dst) as tmp:
        _WRITERS[fmt](found, tmp, options)
