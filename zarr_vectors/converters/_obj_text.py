"""Wavefront OBJ text: the reader and writer behind the ``obj`` format (no extra needed).

Only geometry is read: ``v`` (x y z, and r g b when every vertex has them), ``f`` (any
polygon, ``i``, ``i/t``, ``i//n`` or ``i/t/n``, negative indices counting back from the last
vertex) and the ``o``/``g`` statements that name objects. Texture coordinates, normals,
materials, lines and points are ignored. Faces keep their file order and their winding;
a polygon of k vertices becomes the fan of k - 2 triangles ``(v0, vi, vi+1)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from zarr_vectors._version import __version__
from zarr_vectors.converters._common import text_of
from zarr_vectors.errors import InvalidInputError

__all__ = ["ObjMesh", "obj_text", "parse_obj"]

_ID_NAME = re.compile(r"object_(-?[0-9]+)")


@dataclass(frozen=True, slots=True)
class ObjMesh:
    """The geometry of an OBJ file.

    Attributes
    ----------
    positions
        ``(n, 3)`` float64 vertices, in file order.
    colors
        ``(n, 3)`` float64 vertex colours when every ``v`` line has six numbers, else None.
    faces
        ``(f, 3)`` int64 0-based vertex indices, in file order.
    face_objects
        ``(f,)`` int64 number of the object (0, 1, ...) each face belongs to, counting the
        ``o`` statements (the ``g`` statements when there is no ``o``) that precede faces.
    object_names
        The name each object's statement gave (``""`` when none), by object number.
    vertex_objects
        ``(n,)`` int64 number of the object whose statement precedes each ``v`` line (the
        next object with faces when that one has none; the last object for vertices after
        it).
    has_o
        Whether the file has ``o`` statements (its objects are named by ``o``, not ``g``).
    """

    positions: np.ndarray
    colors: np.ndarray | None
    faces: np.ndarray
    face_objects: np.ndarray
    object_names: list[str]
    vertex_objects: np.ndarray
    has_o: bool

    def object_ids(self) -> np.ndarray:
        """The ids written in names ``object_<id>`` by :func:`obj_text` when every object
        has a distinct one, else 0, 1, ... by object number."""
        found = [_ID_NAME.fullmatch(name) for name in self.object_names]
        ids = [int(m.group(1)) for m in found if m is not None]
        if len(ids) == len(found) and len(set(ids)) == len(ids):
            return np.asarray(ids, dtype=np.int64)
        return np.arange(len(found), dtype=np.int64)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each statement: comments dropped, ``\\`` joins lines."""
    out: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    if pending:
        out.append((start, pending))
    return out


class _Reader:
    """State while reading statements in order."""

    def __init__(self, split_on: str) -> None:
        self.split_on = split_on
        self.vertices: list[list[float]] = []
        self.vertex_objects: list[int] = []
        self.faces: list[tuple[int, int, int]] = []
        self.face_objects: list[int] = []
        self.objects = 0
        self.faces_since_object = False
        self.name = ""
        self.names: list[str] = []

    def vertex(self, parts: list[str], where: str) -> None:
        if len(parts) < 3:
            raise InvalidInputError(f"{where}: a vertex needs 3 coordinates, got {len(parts)}")
        try:
            self.vertices.append([float(p) for p in parts])
        except ValueError:
            raise InvalidInputError(f"{where}: not a number in {' '.join(parts)!r}") from None
        self.vertex_objects.append(self.objects)

    def index(self, token: str, where: str) -> int:
        try:
            value = int(token.split("/", 1)[0])
        except ValueError:
            raise InvalidInputError(f"{where}: bad vertex reference {token!r}") from None
        count = len(self.vertices)
        row = value - 1 if value > 0 else count + value
        if value == 0 or not 0 <= row < count:
            raise InvalidInputError(
                f"{where}: vertex {value} does not exist ({count} vertices read so far)"
            )
        return row

    def face(self, parts: list[str], where: str) -> None:
        if len(parts) < 3:
            raise InvalidInputError(f"{where}: a face needs at least 3 vertices")
        rows = [self.index(p, where) for p in parts]
        if len(self.names) == self.objects:
            self.names.append(self.name)
        for k in range(1, len(rows) - 1):
            self.faces.append((rows[0], rows[k], rows[k + 1]))
            self.face_objects.append(self.objects)
        self.faces_since_object = True

    def new_object(self, keyword: str, name: str) -> None:
        if keyword != self.split_on:
            return
        if self.faces_since_object:
            self.objects += 1
            self.faces_since_object = False
        self.name = name


def parse_obj(text: str, source: str = "OBJ") -> ObjMesh:
    """The vertices and triangles of OBJ text (see the module docstring).

    Raises
    ------
    InvalidInputError
        For a malformed ``v`` or ``f`` statement or a face naming a missing vertex (with
        the line number).
    """
    statements = _logical_lines(text)
    has_o = any(line.split(maxsplit=1)[:1] == ["o"] for _, line in statements)
    reader = _Reader("o" if has_o else "g")
    for number, line in statements:
        parts = line.split()
        if not parts:
            continue
        where = f"{source} line {number}"
        if parts[0] == "v":
            reader.vertex(parts[1:], where)
        elif parts[0] == "f":
            reader.face(parts[1:], where)
        elif parts[0] in ("o", "g"):
            reader.new_object(parts[0], " ".join(parts[1:]))
    return _mesh(reader, has_o)


def _mesh(reader: _Reader, has_o: bool) -> ObjMesh:
    widths = {len(v) for v in reader.vertices}
    colors = None
    if widths == {6}:
        table = np.asarray(reader.vertices, dtype=np.float64)
        positions, colors = table[:, :3], table[:, 3:]
    else:
        positions = np.asarray([v[:3] for v in reader.vertices], dtype=np.float64).reshape(-1, 3)
    return ObjMesh(
        positions=positions,
        colors=colors,
        faces=np.asarray(reader.faces, dtype=np.int64).reshape(-1, 3),
        face_objects=np.asarray(reader.face_objects, dtype=np.int64),
        object_names=reader.names,
        vertex_objects=np.minimum(
            np.asarray(reader.vertex_objects, dtype=np.int64), max(len(reader.names) - 1, 0)
        ),
        has_o=has_o,
    )


def obj_text(
    positions: np.ndarray,
    faces: np.ndarray,
    offsets: np.ndarray,
    object_ids: np.ndarray,
    colors: np.ndarray | None = None,
) -> str:
    """OBJ text of meshes: per object an ``o object_<id>`` line, its vertices, its faces.

    Parameters
    ----------
    positions
        ``(n, 3)`` vertices; object m owns rows ``offsets[m]:offsets[m+1]``.
    faces
        ``(f, 3)`` 0-based rows of ``positions``, grouped by object, in writing order.
    offsets, object_ids
        As in :class:`~zarr_vectors.QueryResult`.
    colors
        ``(n, 3)`` vertex colours written after the coordinates, or None.
    """
    columns = [text_of(positions[:, d]) for d in range(3)]
    if colors is not None:
        columns += [text_of(colors[:, d]) for d in range(3)]
    vertex_lines = np.array(
        ["v " + " ".join(row) + "\n" for row in zip(*columns, strict=True)], dtype=object
    )
    ones = (faces + 1).astype(str)
    face_lines = np.array([f"f {a} {b} {c}\n" for a, b, c in ones.tolist()], dtype=object)
    face_object = np.searchsorted(offsets, faces[:, 0], side="right") - 1
    by_object = np.argsort(face_object, kind="stable")
    face_bounds = np.searchsorted(face_object[by_object], np.arange(object_ids.shape[0] + 1))
    parts = [f"# OBJ written by zarr_vectors {__version__}\n"]
    for m, object_id in enumerate(object_ids.tolist()):
        parts.append(f"o object_{object_id}\n")
        parts.extend(vertex_lines[offsets[m] : offsets[m + 1]].tolist())
        parts.extend(face_lines[by_object[face_bounds[m] : face_bounds[m + 1]]].tolist())
    return "".join(parts)
