"""The coarse object table of one level, per object kind (spec §4.3.3).

Each kind's method runs over level 0 as stored — objects in id order, each object's
vertices in traversal order, its links resolved to them — with one of hE's kernels
(:mod:`zarr_vectors.kernels`), and gives the level's :class:`ObjectTable`: the coarse
vertices with the vertex attributes of their sources, the links in coarse vertex indices
with the link attributes of the level-0 link each comes from, and level 0's objects, ids,
object attributes and groups. Polylines and streamlines coarsen by ``"runs"``, skeletons
by ``"thin"``, graphs and meshes by ``"cluster"``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import (
    CLUSTER,
    RUNS,
    THIN,
    cluster_coarsening,
    runs_coarsening,
    thin_coarsening,
)
from zarr_vectors.kernels import (
    CoarseGrid,
    CoarseObjects,
    coarsen_graphs,
    coarsen_meshes,
    coarsen_polylines,
    coarsen_skeletons,
)
from zarr_vectors.write._objects import ObjectTable

__all__ = [
    "ObjectMethod",
    "coarse_graphs",
    "coarse_meshes",
    "coarse_polylines",
    "coarse_skeletons",
    "coarse_table",
    "object_method",
    "skeleton_parents",
]


def _cells(grid: ChunkGrid) -> CoarseGrid:
    return CoarseGrid(grid.chunk_shape, grid.bin_shape, grid.origin)


def coarse_polylines(table: ObjectTable, grid: ChunkGrid) -> CoarseObjects:
    """The ``runs`` coarsening of a polyline table on a level's grid (spec §4.3.3).

    Parameters
    ----------
    table
        Level 0: objects in id order, vertices in traversal order, stored dtype.
    grid
        The coarse level's grid (the store's chunks, the level's ``bin_shape``).

    Returns
    -------
    CoarseObjects
        The coarse vertices, their per-object offsets and sources.

    Examples
    --------
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), np.array([4]), 0 * one, one)
    >>> line = np.array([[0.5], [0.7], [2.5], [2.6], [4.1], [7.0]], np.float32)
    >>> table = ObjectTable("polyline", line, np.array([0, 6]), None, {}, {}, None, None, {})
    >>> coarse_polylines(table, grid).source.tolist()
    [0, 2, 4, 5]
    """
    return coarsen_polylines(table.positions, table.offsets, _cells(grid))


def skeleton_parents(table: ObjectTable) -> np.ndarray:
    """``(n,)`` parent of every vertex of a skeleton table (-1 for a root).

    Examples
    --------
    >>> links = np.array([[1, 0], [0, -1], [2, 0]])
    >>> table = ObjectTable("skeleton", np.zeros((3, 1)), np.array([0, 3]), links, {}, {},
    ...                     None, None, {})
    >>> skeleton_parents(table).tolist()
    [-1, 0, 0]
    """
    parents = np.full(table.positions.shape[0], -1, np.int64)
    parents[table.links[:, 0]] = table.links[:, 1]
    return parents


def coarse_skeletons(table: ObjectTable, grid: ChunkGrid) -> CoarseObjects:
    """The ``thin`` coarsening of a skeleton table on a level's grid (spec §4.3.3).

    Parameters
    ----------
    table
        Level 0: objects in id order, vertices in traversal order, links
        ``[child, parent]`` (parent -1 for a root).
    grid
        The coarse level's grid.

    Returns
    -------
    CoarseObjects
        ``links`` are the coarse parents (-1 for roots).

    Examples
    --------
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([4.0]), np.array([2]), 0 * one, one)
    >>> pos = np.array([[0.0], [1.0], [2.0], [5.0], [6.0], [7.0]])
    >>> links = np.stack([np.arange(6), np.arange(6) - 1], axis=1)
    >>> table = ObjectTable("skeleton", pos, np.array([0, 6]), links, {}, {}, None, None, {})
    >>> out = coarse_skeletons(table, grid)
    >>> out.source.tolist(), out.links.tolist()
    ([0, 3, 5], [-1, 0, 1])
    """
    return coarsen_skeletons(table.positions, skeleton_parents(table), table.offsets, _cells(grid))


def coarse_graphs(table: ObjectTable, grid: ChunkGrid) -> CoarseObjects:
    """The ``cluster`` coarsening of a graph table on a level's grid (spec §4.3.3).

    Parameters
    ----------
    table
        Level 0: objects in id order, vertices in traversal order, edges; the root key
        ``is_directed`` says whether edges keep their direction.
    grid
        The coarse level's grid.

    Returns
    -------
    CoarseObjects
        ``links`` are the coarse edges, ``link_source`` their rows of ``table.links``.

    Examples
    --------
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([4.0]), np.array([2]), 0 * one, one)
    >>> pos = np.array([[0.0], [1.0], [5.0], [2.0]])
    >>> edges = np.array([[0, 1], [1, 2]])
    >>> table = ObjectTable("graph", pos, np.array([0, 4]), edges, {}, {}, None, None, {})
    >>> coarse_graphs(table, grid).links.tolist()
    [[0, 1]]
    """
    directed = bool(table.root_extra.get("is_directed", False))
    return coarsen_graphs(
        table.positions, table.links, table.offsets, _cells(grid), directed=directed
    )


def coarse_meshes(table: ObjectTable, grid: ChunkGrid) -> CoarseObjects:
    """The ``cluster`` coarsening of a mesh table on a level's grid (spec §4.3.3).

    Parameters
    ----------
    table
        Level 0: objects in id order, vertices in traversal order, faces as stored.
    grid
        The coarse level's grid.

    Returns
    -------
    CoarseObjects
        ``links`` are the coarse faces (winding of their level-0 face), ``link_source``
        their rows of ``table.links``.

    Examples
    --------
    >>> two = np.ones(2, int)
    >>> grid = ChunkGrid(np.array([8.0, 8.0]), np.array([4.0, 4.0]), 2 * two, 0 * two, two)
    >>> pos = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    >>> faces = np.array([[0, 1, 3], [1, 2, 3]])
    >>> table = ObjectTable("mesh", pos, np.array([0, 4]), faces, {}, {}, None, None, {})
    >>> coarse_meshes(table, grid).links.tolist()
    [[0, 1, 2]]
    """
    return coarsen_meshes(table.positions, table.links, table.offsets, _cells(grid))


def coarse_table(table: ObjectTable, coarse: CoarseObjects) -> ObjectTable:
    """Level N's object table from level 0's and its coarsening (spec §4.3.3).

    Vertex attributes come from each coarse vertex's source, link attributes from the
    level-0 link each coarse link comes from; objects, ids, object attributes and groups
    are level 0's.

    Parameters
    ----------
    table
        Level 0's table.
    coarse
        Its coarsening at the level (one of the ``coarse_*`` functions).

    Returns
    -------
    ObjectTable
        The table the object write path writes as level N.

    Examples
    --------
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([4.0]), np.array([2]), 0 * one, one)
    >>> pos = np.array([[0.0], [1.0], [5.0]])
    >>> links = np.stack([np.arange(3), np.arange(3) - 1], axis=1)
    >>> table = ObjectTable("skeleton", pos, np.array([0, 3]), links,
    ...                     {"r": np.array([1.0, 2.0, 3.0])}, {}, None, None, {})
    >>> level = coarse_table(table, coarse_skeletons(table, grid))
    >>> level.links.tolist(), level.vertex_attributes["r"].tolist()
    ([[0, -1], [1, 0]], [1.0, 3.0])
    """
    links, link_source = _coarse_links(table, coarse)
    return dataclasses.replace(
        table,
        positions=coarse.positions,
        offsets=coarse.offsets,
        links=links,
        vertex_attributes={
            name: values[coarse.source] for name, values in table.vertex_attributes.items()
        },
        link_attributes={
            name: values[link_source] for name, values in table.link_attributes.items()
        },
    )


def _coarse_links(table: ObjectTable, coarse: CoarseObjects) -> tuple[np.ndarray, np.ndarray]:
    """The coarse links as the table stores them, and the level-0 link row of each."""
    if table.kind == "skeleton":
        row_of_child = np.zeros(table.positions.shape[0], np.int64)
        row_of_child[table.links[:, 0]] = np.arange(table.links.shape[0])
        n = coarse.source.shape[0]
        links = np.stack([np.arange(n, dtype=np.int64), coarse.links], axis=1)
        return links, row_of_child[coarse.source]
    if coarse.links.ndim == 2 and coarse.links.shape[0]:
        return coarse.links, coarse.link_source
    return np.empty((0, table.links.shape[1]), np.int64), np.empty(0, np.int64)


@dataclass(frozen=True, slots=True)
class ObjectMethod:
    """One object kind's coarsening method (spec §4.3.3).

    Attributes
    ----------
    name
        ``"runs"``, ``"thin"`` or ``"cluster"``: the method ``Levels.method`` may name.
    kinds
        Who uses it, for messages (``"skeletons"``).
    coarsen
        ``coarsen(table, grid)``: the coarsening of level 0 on a level's grid.
    coarsening
        The level metadata's ``coarsening`` object.
    """

    name: str
    kinds: str
    coarsen: Callable[[ObjectTable, ChunkGrid], CoarseObjects]
    coarsening: dict[str, Any]


_METHODS = {
    "polyline": ObjectMethod(
        RUNS, "polylines and streamlines", coarse_polylines, runs_coarsening()
    ),
    "skeleton": ObjectMethod(THIN, "skeletons", coarse_skeletons, thin_coarsening()),
    "graph": ObjectMethod(CLUSTER, "graphs", coarse_graphs, cluster_coarsening("component")),
    "mesh": ObjectMethod(CLUSTER, "meshes", coarse_meshes, cluster_coarsening("object")),
}
_METHODS["streamline"] = _METHODS["polyline"]


def object_method(kind: str) -> ObjectMethod:
    """The coarsening method of an object kind (spec §4.3.3).

    Examples
    --------
    >>> object_method("graph").coarsening["within"]
    'component'
    """
    return _METHODS[kind]
