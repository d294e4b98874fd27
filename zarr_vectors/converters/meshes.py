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

from zarr_vectors.converters._common import atomic_output, read_selection
from zarr_vectors.converters._ply import MeshInput
from zarr_vectors.converters.converter import FileConverter, ImportTarget
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.geometry import write_mesh
from zarr_vectors.result import QueryResult

__all__ = ["MeshReader", "MeshWriter", "mesh_converter", "three_d"]

_WRITE_OPTIONS = ("winding_order", "closed_surface", "allow_degenerate")


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


def three_d(found: QueryResult, what: str) -> None:
    """Refuse ``found`` unless its vertices are 3-D (``what``: the format, for the message)."""
    if found.positions.shape[1] != 3:
        raise InvalidInputError(f"{what} holds 3-D vertices; the store is 2-D or 4-D")


# -- the mesh converters ---------------------------------------------------------------------

MeshReader = Callable[[Path, Mapping[str, Any]], MeshInput]
"""``reader(path, options)``: the mesh of a file."""
MeshWriter = Callable[[QueryResult, Path, Mapping[str, Any]], None]
"""``writer(found, path, options)``: write the meshes read from a store into a file."""
_READERS: dict[str, MeshReader] = {}
_WRITERS: dict[str, MeshWriter] = {}


def _stored_positions(positions: np.ndarray, dtype: Any) -> np.ndarray:
    if dtype is None:
        return positions
    if dtype not in ("float32", "float64"):
        raise InvalidInputError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    return positions.astype(dtype)


def _import_mesh(name: str, src: Path, target: ImportTarget, options: Mapping[str, Any]) -> None:
    """Write the mesh file ``src`` (PLY, OBJ or STL) as a mesh store (see the module)."""
    mesh = _READERS[name](src, options)
    write_mesh(
        target.store,
        _stored_positions(mesh.positions, options.get("dtype")),
        mesh.faces,
        vertex_objects=mesh.vertex_objects,
        attributes=mesh.attributes,
        face_attributes=mesh.face_attributes,
        **target.write_keywords(),
        **{k: options[k] for k in _WRITE_OPTIONS if k in options},
    )


def _export_mesh(
    name: str, store: VectorStore, dst: Path, overwrite: bool, options: Mapping[str, Any]
) -> None:
    """Write the meshes of ``store`` into the file ``dst`` (PLY, OBJ or STL)."""
    found = _by_object(read_selection(store, options.get("ids")))
    with atomic_output(dst) as tmp:
        _WRITERS[name](found, tmp, options)


def mesh_converter(
    name: str,
    extra: str | None,
    reader: MeshReader,
    writer: MeshWriter,
    import_options: tuple[str, ...] = (),
    export_options: tuple[str, ...] = (),
) -> FileConverter:
    """The converter of the mesh format ``name`` (suffix ``.name``) that reads a file with
    ``reader`` and writes one with ``writer``; import also takes the options ``dtype``,
    ``winding_order``, ``closed_surface`` and ``allow_degenerate``, export ``ids``."""
    _READERS[name] = reader
    _WRITERS[name] = writer
    return FileConverter(
        name,
        (f".{name}",),
        extra,
        ("mesh",),
        _import_mesh,
        _export_mesh,
        ("dtype", *import_options, *_WRITE_OPTIONS),
        ("ids", *export_options),
    )
