"""Triangle meshes (spec §10.7): vertices and faces, one or many meshes per store."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

import numpy as np

from zarr_vectors._deprecation import warn_renamed
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.geometry._docstrings import shared_docs
from zarr_vectors.geometry.graphs import (
    VertexGrouping,
    group_vertices,
    link_array,
    object_table,
    same_object,
)
from zarr_vectors.store.io import StoreLike
from zarr_vectors.write import (
    KindWriter,
    ObjectTable,
    ObjectWriteArgs,
    inputs,
    mesh_level_builder,
    write_kind,
)

__all__ = ["MESHES", "WINDING_ORDERS", "mesh_faces", "mesh_positions", "prepare_mesh", "write_mesh"]

WINDING_ORDERS = ("ccw", "cw")
"""Values of the root key ``winding_order`` (spec §3.4)."""


def _degenerate(faces: np.ndarray) -> None:
    repeated = (
        (faces[:, 0] == faces[:, 1]) | (faces[:, 1] == faces[:, 2]) | (faces[:, 0] == faces[:, 2])
    )
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise InvalidInputError(
            f"face {row} {faces[row].tolist()} repeats a vertex (pass allow_degenerate=True "
            "to keep such faces; the store then fails L3.no_degenerate_faces)"
        )


def _closed(faces: np.ndarray) -> None:
    """Raise unless every undirected edge is used by exactly two faces (spec §11.5)."""
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    edges = np.sort(edges, axis=1)
    unique, counts = np.unique(edges, axis=0, return_counts=True)
    open_edges = np.flatnonzero(counts != 2)
    if open_edges.shape[0]:
        k = int(open_edges[0])
        raise InvalidInputError(
            f"closed_surface=True but the edge {unique[k].tolist()} is used by {int(counts[k])} "
            "faces (a closed surface uses every edge exactly twice)"
        )


def mesh_faces(
    faces: Any, grouping: VertexGrouping, *, allow_degenerate: bool, closed_surface: bool
) -> np.ndarray:
    """Validate ``(f, 3)`` faces (spec §10.7) into int64 input vertex indices.

    Raises
    ------
    InvalidInputError
        For indices out of range, faces joining objects, repeated vertices (unless
        ``allow_degenerate``) or, with ``closed_surface``, an edge not used twice.
    """
    n = grouping.vertex_object.shape[0]
    triangles = link_array(faces, n, 3, "face")
    same_object(triangles, grouping, "face")
    if not allow_degenerate:
        _degenerate(triangles)
    if closed_surface:
        _closed(triangles)
    return triangles


def _options(winding_order: Any, closed_surface: Any, allow_degenerate: Any) -> tuple[str, bool]:
    if winding_order not in WINDING_ORDERS:
        raise InvalidInputError(f"winding_order must be 'ccw' or 'cw', got {winding_order!r}")
    inputs.flag(allow_degenerate, "allow_degenerate")
    return str(winding_order), inputs.flag(closed_surface, "closed_surface")


def mesh_positions(positions: Any, vertices: Any, faces: Any) -> Any:
    """``positions``, or the deprecated ``vertices=`` given instead (with a warning).

    Raises
    ------
    InvalidInputError
        When both or neither are given, or no ``faces``.
    """
    if vertices is not None:
        warn_renamed("vertices=", "positions=", stacklevel=4)
        if positions is not None:
            raise InvalidInputError("give positions only (vertices is its deprecated name)")
        positions = vertices
    if positions is None or faces is None:
        raise InvalidInputError("a mesh needs positions (n, D) and faces (f, 3)")
    return positions


@shared_docs
def write_mesh(
    store: StoreLike,
    positions: Any = None,
    faces: Any = None,
    *,
    vertex_objects: Any = None,
    winding_order: str = "ccw",
    closed_surface: bool = False,
    allow_degenerate: bool = False,
    face_attributes: Mapping[str, Any] | None = None,
    vertices: Any = None,
    levels: Any = None,
    **settings: Unpack[ObjectWriteArgs],
) -> None:
    """Write a store of triangle meshes (spec §10.7).

    Parameters
    ----------
    {store}
    {positions}
    faces
        ``(f, 3)`` integer indices into ``positions``. Stored exactly as given: the order
        ``(v0, v1, v2)`` of every face (its winding) is never changed.
    vertex_objects
        ``(n,)`` integer label per vertex naming its mesh — the one way to write many
        meshes. Default: a single mesh holding every vertex. Each mesh's vertices are
        stored contiguously, in input order, meshes in ascending label order; the three
        vertices of a face must belong to the same mesh.
    winding_order
        ``"ccw"`` or ``"cw"``: the orientation convention of the faces seen from outside
        (documentation only; root key ``winding_order``).
    closed_surface
        Claim that every mesh is watertight (root key ``closed_surface``); checked: every
        undirected edge must be used by exactly two faces.
    allow_degenerate
        Keep faces that repeat a vertex instead of refusing them. Such a store breaks
        spec §10.7 (validation reports ``L3.no_degenerate_faces``).
    face_attributes
        Per-face (one row per row of ``faces``, in input order; spec §9.12).
    vertices
        Deprecated spelling of ``positions`` (warns).
    levels
        Levels of detail to write above level 0 (format 1.3, spec §4.3.3): None or 0 (none,
        the default), ``"auto"`` (until a level holds at most 100,000 vertices), a count,
        or a :class:`~zarr_vectors.Levels`. Method ``"cluster"``: the vertices of one mesh
        in one coarse bin become one (the one closest to their mean); each face is
        remapped in place, so its winding is kept, and degenerate and repeated faces are
        dropped. Vertex and face attributes are carried from the vertex or face kept;
        object attributes and groups are level 0's. A coarse level need not be closed
        even when ``closed_surface`` is. Not with ``mode="a"``.
    {object_settings}

    {write_raises}

    {example_setup}
    >>> positions = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=np.float32)
    >>> faces = np.array([[0, 1, 2], [0, 2, 3]])
    >>> zv.write_mesh(path, positions, faces, chunk_shape=4.0, progress=False)
    >>> store = zv.open(path)
    >>> store.kind, store.object_count, store.vertex_count
    ('mesh', 1, 4)
    >>> lod = pathlib.Path(tempfile.mkdtemp()) / "lod.zarr"
    >>> zv.write_mesh(lod, positions * 3, faces, chunk_shape=4.0, bin_shape=1.0, levels=1,
    ...               progress=False)
    >>> zv.open(lod).levels[1].coarsening["within"]
    'object'
    """
    batch = {
        "positions": mesh_positions(positions, vertices, faces),
        "faces": faces,
        "vertex_objects": vertex_objects,
        "allow_degenerate": allow_degenerate,
        "face_attributes": face_attributes,
    }
    store_wide = {"winding_order": winding_order, "closed_surface": closed_surface}
    write_kind(store, MESHES, batch, store_wide, settings, levels)


def prepare_mesh(
    batch: Mapping[str, Any], *, winding_order: str = "ccw", closed_surface: bool = False
) -> ObjectTable:
    """The object table of meshes: ``batch`` holds :func:`write_mesh`'s data and
    per-object arguments by name.

    Raises
    ------
    InvalidInputError
        For malformed input.
    """
    allow_degenerate = batch.get("allow_degenerate", False)
    winding, closed = _options(winding_order, closed_surface, allow_degenerate)
    vertices = inputs.positions(batch["positions"])
    n = vertices.shape[0]
    grouping = group_vertices(batch.get("vertex_objects"), n)
    triangles = mesh_faces(
        batch["faces"], grouping, allow_degenerate=bool(allow_degenerate), closed_surface=closed
    )
    root_extra = {"winding_order": winding, "closed_surface": closed}
    return object_table("mesh", (vertices, grouping, triangles), batch, root_extra)


MESHES = KindWriter(
    writer="write_mesh",
    kinds=("mesh",),
    data=("positions", "faces"),
    required=("positions", "faces"),
    keywords=("vertex_objects", "allow_degenerate", "face_attributes"),
    store_wide=("winding_order", "closed_surface"),
    prepare=prepare_mesh,
    renamed={"vertices": "positions"},
    levels=mesh_level_builder,
)
"""What :func:`write_mesh` takes, for the streaming, append and parallel writers."""
