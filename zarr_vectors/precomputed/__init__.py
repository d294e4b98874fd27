"""Neuroglancer precomputed sources computed from a store: served live or exported as files.

:class:`PrecomputedSource` is the shape every source has (``name``, ``paths()``,
``read(path)``); the server and the static export use nothing else. :func:`sources` gives
the sources a store has.
"""

from __future__ import annotations

from zarr_vectors.dataset import VectorStore
from zarr_vectors.precomputed.annotations import PointAnnotations
from zarr_vectors.precomputed.line_annotations import LINE_KINDS, LineAnnotations
from zarr_vectors.precomputed.meshes import MeshSource, mesh_sources
from zarr_vectors.precomputed.skeletons import SkeletonSource, skeleton_sources
from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError, PrecomputedSource

__all__ = [
    "LineAnnotations",
    "MeshSource",
    "PointAnnotations",
    "PrecomputedFileNotFoundError",
    "PrecomputedSource",
    "SkeletonSource",
    "mesh_sources",
    "skeleton_sources",
    "sources",
]


def sources(store: VectorStore) -> dict[str, PrecomputedSource]:
    """The precomputed sources of a store, by name (their folder under the root).

    A point cloud has ``annotations`` (points), a polyline, streamline or graph store has
    ``annotations`` (lines: segments, edges); skeleton, graph, polyline and streamline
    stores have ``skeletons`` (one per object id), mesh stores ``meshes`` (multi-resolution
    from their levels of detail); an empty store has none.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed import sources
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1, 1], [7, 7, 7]], chunk_shape=5.0)
    >>> list(sources(zv.open(path)))
    ['annotations']
    >>> lines = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> zv.write_polylines(lines, [np.array([[0, 0], [5, 5.0]])], chunk_shape=10.0)
    >>> list(sources(zv.open(lines)))
    ['annotations', 'skeletons']
    """
    found: dict[str, PrecomputedSource] = {}
    if store.kind == "point_cloud" and store.vertex_count > 0:
        found["annotations"] = PointAnnotations(store)
    if store.kind in LINE_KINDS and store.vertex_count > 0:
        found["annotations"] = LineAnnotations(store)
    by_id: list[PrecomputedSource] = [*skeleton_sources(store), *mesh_sources(store)]
    for source in by_id:
        found[source.name] = source
    return found
