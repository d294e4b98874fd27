"""PLY meshes through plyfile: the reader and writer behind the ``ply`` format.

See :mod:`zarr_vectors.converters.meshes` for what is read and written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors._version import __version__
from zarr_vectors.converters._common import (
    encoding_option,
    join_columns,
    safe_name,
    split_columns,
)
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.result import QueryResult

__all__ = ["MeshInput", "fan_triangles", "objects_of", "read_ply", "write_ply"]

DEFAULT_OBJECT_PROPERTY = "object_id"
_PLY_TYPES = frozenset(np.dtype(t) for t in ("i1", "u1", "i2", "u2", "i4", "u4", "f4", "f8"))
_FACE_LISTS = ("vertex_indices", "vertex_index")


@dataclass(frozen=True, slots=True)
class MeshInput:
    """What a file reader hands to :func:`~zarr_vectors.write_mesh`."""

    positions: np.ndarray
    faces: np.ndarray
    vertex_objects: np.ndarray | None = None
    attributes: dict[str, np.ndarray] = field(default_factory=dict)
    face_attributes: dict[str, np.ndarray] = field(default_factory=dict)


def _property_name(options: Mapping[str, Any]) -> str:
    name = options.get("object_property", DEFAULT_OBJECT_PROPERTY)
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"object_property must be a property name, got {name!r}")
    return name


def objects_of(found: QueryResult) -> tuple[np.ndarray, np.ndarray]:
    """The offsets and ids of the meshes of a read."""
    if found.offsets is None or found.object_ids is None:
        raise InvalidInputError("the store returned no mesh objects")
    return found.offsets, found.object_ids


def fan_triangles(flat: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Triangles of polygons given as concatenated vertex lists.

    Parameters
    ----------
    flat
        The polygons' vertex indices, one polygon after the other.
    lengths
        ``(p,)`` vertex count of each polygon (each at least 3).

    Returns
    -------
    tuple of numpy.ndarray
        ``(t, 3)`` int64 triangles ``(v0, vi, vi+1)`` in polygon order, and the ``(t,)``
        polygon of each triangle.
    """
    short = np.flatnonzero(lengths < 3)
    if short.shape[0]:
        raise InvalidInputError(f"face {int(short[0])} has {lengths[short[0]]} vertices (< 3)")
    starts = np.cumsum(lengths) - lengths
    per_polygon = lengths - 2
    polygon = np.repeat(np.arange(lengths.shape[0]), per_polygon)
    first = np.cumsum(per_polygon) - per_polygon
    k = np.arange(polygon.shape[0]) - np.repeat(first, per_polygon)
    base = starts[polygon]
    triangles = np.stack([flat[base], flat[base + k + 1], flat[base + k + 2]], axis=1)
    return triangles.astype(np.int64), polygon


def _polygons(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated indices and lengths of a PLY list property (object or 2-D array)."""
    if raw.dtype != object:
        table = np.asarray(raw).reshape(raw.shape[0], -1)
        return table.reshape(-1), np.full(raw.shape[0], table.shape[1], dtype=np.int64)
    lengths = np.fromiter((len(r) for r in raw), dtype=np.int64, count=raw.shape[0])
    flat = np.concatenate(list(raw)) if raw.shape[0] else np.empty(0, np.int64)
    return flat, lengths


def _scalar_names(element: Any, plyfile: Any) -> list[str]:
    return [p.name for p in element.properties if not isinstance(p, plyfile.PlyListProperty)]


def _safe_columns(data: np.ndarray, names: list[str], what: str) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name in names:
        key = safe_name(name)
        if key in out:
            raise InvalidInputError(f"two {what} properties both become the name {key!r}")
        column = np.asarray(data[name])
        out[key] = column.astype(column.dtype.newbyteorder("="))
    return out


def _ply_faces(data: Any, plyfile: Any) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    if "face" not in [e.name for e in data.elements]:
        return np.empty((0, 3), np.int64), {}
    face = data["face"]
    lists = [p.name for p in face.properties if isinstance(p, plyfile.PlyListProperty)]
    index_name = next((n for n in _FACE_LISTS if n in lists), None)
    if index_name is None:
        raise InvalidInputError("the PLY face element has no vertex_indices list")
    triangles, polygon = fan_triangles(*_polygons(face.data[index_name]))
    columns = _safe_columns(face.data, _scalar_names(face, plyfile), "face")
    return triangles, join_columns({name: values[polygon] for name, values in columns.items()})


def read_ply(src: Path, options: Mapping[str, Any]) -> MeshInput:
    plyfile = require("plyfile", extra="mesh", purpose="reading PLY meshes")
    try:
        data = plyfile.PlyData.read(str(src), mmap=False)
    except plyfile.PlyParseError as exc:
        raise InvalidInputError(f"{src} is not a valid PLY file: {exc}") from exc
    if "vertex" not in [e.name for e in data.elements]:
        raise InvalidInputError(f"{src} has no vertex element")
    vertex = data["vertex"]
    scalars = _scalar_names(vertex, plyfile)
    axes = [a for a in ("x", "y", "z") if a in scalars]
    if axes[:2] != ["x", "y"]:
        raise InvalidInputError(f"{src}: the vertex element needs x and y properties")
    coords = [np.asarray(vertex.data[a]) for a in axes]
    dtype = np.result_type(*coords).newbyteorder("=")
    label = _property_name(options)
    labels = np.asarray(vertex.data[label]) if label in scalars else None
    faces, face_attributes = _ply_faces(data, plyfile)
    return MeshInput(
        positions=np.stack([c.astype(dtype) for c in coords], axis=1),
        faces=faces,
        vertex_objects=labels,
        attributes=join_columns(
            _safe_columns(
                vertex.data, [n for n in scalars if n not in axes and n != label], "vertex"
            )
        ),
        face_attributes=face_attributes,
    )


def _ply_column(name: str, values: np.ndarray) -> np.ndarray:
    """``values`` in a type PLY has (bool → uchar, 64-bit ints → 32-bit when they fit)."""
    if values.dtype.kind == "b":
        return values.astype(np.uint8)
    if values.dtype.kind == "f" and values.dtype.itemsize < 4:
        return values.astype(np.float32)
    if values.dtype.kind in "iu" and values.dtype.itemsize == 8:
        narrow = values.astype(np.int32 if values.dtype.kind == "i" else np.uint32)
        if not np.array_equal(narrow, values):
            raise InvalidInputError(f"{name!r} holds 64-bit integers that PLY cannot store")
        return narrow
    if values.dtype.newbyteorder("=") not in _PLY_TYPES:
        raise InvalidInputError(f"{name!r} has dtype {values.dtype}, which PLY cannot store")
    return values


def _structured(columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    ready = {name: _ply_column(name, values) for name, values in columns.items()}
    table = np.empty(n, dtype=[(name, v.dtype.newbyteorder("<")) for name, v in ready.items()])
    for name, values in ready.items():
        table[name] = values
    return table


def _vertex_table(found: QueryResult, label: str) -> np.ndarray:
    ndim = found.positions.shape[1]
    if ndim not in (2, 3):
        raise InvalidInputError(f"PLY holds 2-D or 3-D vertices; the store is {ndim}-D")
    columns = {"xyz"[d]: found.positions[:, d] for d in range(ndim)}
    offsets, ids = objects_of(found)
    extra = dict(split_columns(found.attributes))
    if ids.shape[0] != 1 or ids[0] != 0:
        extra[label] = np.repeat(ids, np.diff(offsets))
    for name, values in extra.items():
        if name in columns:
            raise InvalidInputError(f"vertex attribute {name!r} clashes with a PLY property")
        columns[name] = values
    return _structured(columns, found.positions.shape[0])


def _face_table(found: QueryResult) -> np.ndarray:
    faces = found.faces if found.faces is not None else np.empty((0, 3), np.int64)
    if found.positions.shape[0] > np.iinfo(np.int32).max:
        raise InvalidInputError("PLY face indices are 32-bit; the meshes have too many vertices")
    extra = split_columns(found.link_attributes)
    if "vertex_indices" in extra:
        raise InvalidInputError("face attribute 'vertex_indices' clashes with the face list")
    table = np.empty(
        faces.shape[0],
        dtype=[
            ("vertex_indices", "<i4", (3,)),
            *((n, _ply_column(n, v).dtype.newbyteorder("<")) for n, v in extra.items()),
        ],
    )
    table["vertex_indices"] = faces
    for name, values in extra.items():
        table[name] = _ply_column(name, values)
    return table


def write_ply(found: QueryResult, tmp: Path, options: Mapping[str, Any]) -> None:
    plyfile = require("plyfile", extra="mesh", purpose="writing PLY meshes")
    vertices = plyfile.PlyElement.describe(_vertex_table(found, _property_name(options)), "vertex")
    faces = plyfile.PlyElement.describe(
        _face_table(found), "face", len_types={"vertex_indices": "u1"}
    )
    document = plyfile.PlyData(
        [vertices, faces],
        text=encoding_option(options) == "ascii",
        byte_order="<",
        comments=[f"written by zarr_vectors {__version__}"],
    )
    document.write(str(tmp))
