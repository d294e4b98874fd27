"""Triangle meshes (spec §10.7): vertices and faces, one or many meshes per store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from zarr_vectors._progress import ProgressOption
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.geometry.graphs import (
    VertexGrouping,
    group_vertices,
    link_array,
    object_table,
    same_object,
)
from zarr_vectors.store.io import StoreLike
from zarr_vectors.write import WriteOptions, inputs, write_objects
from zarr_vectors.write import object_inputs as objects

__all__ = ["WINDING_ORDERS", "mesh_faces", "write_mesh"]

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


def write_mesh(
    store: StoreLike,
    vertices: Any,
    faces: Any,
    *,
    vertex_objects: Any = None,
    object_ids: Any = None,
    winding_order: str = "ccw",
    closed_surface: bool = False,
    allow_degenerate: bool = False,
    chunk_shape: float | Sequence[float] | None = None,
    bin_shape: float | Sequence[float] | None = None,
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Mapping[str, Any] | None = None,
    face_attributes: Mapping[str, Any] | None = None,
    groups: Mapping[Any, Sequence[int]] | None = None,
    group_attributes: Mapping[str, Any] | None = None,
    units: str | Sequence[str] | None = None,
    overwrite: bool = False,
    options: WriteOptions | None = None,
    progress: ProgressOption = None,
) -> None:
    """Write a store of triangle meshes (spec §10.7).

    Parameters
    ----------
    store
        Destination (a path, a ``.zip`` path, a URL or a zarr store).
    vertices
        ``(n, D)`` vertex coordinates, D = 2, 3 or 4.
    faces
        ``(f, 3)`` integer indices into ``vertices``. Stored exactly as given: the order
        ``(v0, v1, v2)`` of every face (its winding) is never changed.
    vertex_objects
        ``(n,)`` integer label per vertex naming its mesh — the one way to write many
        meshes. Default: a single mesh holding every vertex. Each mesh's vertices are
        stored contiguously, in input order, meshes in ascending label order; the three
        vertices of a face must belong to the same mesh.
    object_ids
        The id of each mesh, in ascending label order. Default: the labels.
    winding_order
        ``"ccw"`` or ``"cw"``: the orientation convention of the faces seen from outside
        (documentation only; root key ``winding_order``).
    closed_surface
        Claim that every mesh is watertight (root key ``closed_surface``); checked: every
        undirected edge must be used by exactly two faces.
    allow_degenerate
        Keep faces that repeat a vertex instead of refusing them. Such a store breaks
        spec §10.7 (validation reports ``L3.no_degenerate_faces``).
    chunk_shape, bin_shape
        As :func:`zarr_vectors.write_points`.
    attributes
        Per-vertex columns (one row per vertex, in input order).
    object_attributes
        Per-mesh columns (one row per mesh, in ascending label order).
    face_attributes
        Per-face (one row per row of ``faces``, in input order; spec §9.12).
    groups
        ``{name_or_id: [object ids]}``.
    group_attributes
        Per-group columns (one row per group, in the order of ``groups``).
    units
        Unit of the coordinates: one name for every axis (``"micrometer"``) or one per
        axis, as for :func:`zarr_vectors.write_points`.
    overwrite
        Replace an existing store.
    options
        Less common settings.
    progress
        Progress bar over the chunks written: None (default) on a terminal or in Jupyter,
        True always, False never, or a callable ``progress(stage, done, total)``.

    Raises
    ------
    InvalidInputError
        For malformed input, before anything is written.
    """
    winding, closed = _options(winding_order, closed_surface, allow_degenerate)
    options = inputs.check_settings(
        "mesh",
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        overwrite=overwrite,
        options=options,
        units=units,
    )
    positions = inputs.positions(vertices, "vertices")
    n = positions.shape[0]
    grouping = group_vertices(vertex_objects, n)
    triangles = mesh_faces(
        faces, grouping, allow_degenerate=bool(allow_degenerate), closed_surface=closed
    )
    table = object_table(
        "mesh",
        positions,
        grouping,
        triangles,
        objects.vertex_attributes(attributes, n),
        object_ids=object_ids,
        object_attributes=object_attributes,
        groups=groups,
        group_attributes=group_attributes,
        root_extra={"winding_order": winding, "closed_surface": closed},
        link_attributes=inputs.attributes(
            face_attributes, triangles.shape[0], what="face attribute", reserved=frozenset()
        ),
    )
    write_objects(
        store,
        table,
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        overwrite=overwrite,
        options=options,
        progress=progress,
    )
