"""The recorded rules of object levels (spec §4.3.3): the ``coarsening`` parameters each kind's
method takes, which objects the recorded ``coarsening.objects`` rule keeps, and the
recomputation of a level from level 0 by each method.

No I/O: the object checks of :mod:`zarr_vectors.validate.object_levels` read the levels and
call these functions. The methods a recomputation knows are the keys of :data:`REPRODUCERS`;
a method added to the library adds its entry there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from zarr_vectors.errors import FormatError
from zarr_vectors.format.levels import CLUSTER, IMPORTED, RUNS, THIN
from zarr_vectors.kernels import (
    CoarseGrid,
    coarse_cells,
    coarsen_graphs,
    coarsen_meshes,
    coarsen_polylines,
    coarsen_skeletons,
    id_hashes,
    keep_longest,
    keep_per_cell,
)
from zarr_vectors.result import QueryResult

__all__ = [
    "ALL_METHODS",
    "KIND_METHODS",
    "REPRODUCERS",
    "Coarsened",
    "Recipe",
    "coarsening_problem",
    "kept_objects",
    "offsets_of",
]

KIND_METHODS: dict[str, str] = {
    "polyline": RUNS,
    "streamline": RUNS,
    "skeleton": THIN,
    "graph": CLUSTER,
    "mesh": CLUSTER,
}
"""The method of §4.3.3 for each object kind."""

ALL_METHODS = frozenset({"sample", "aggregate", RUNS, THIN, CLUSTER, IMPORTED})
"""Every method §4.3 names; another name is only warned about (``L2.coarsening_method_unknown``)."""

_REPRESENTATIVE = {RUNS: "ends_and_middle", CLUSTER: "closest_to_mean"}
_WITHIN = {"graph": "component", "mesh": "object"}
_LENGTH_KINDS = ("polyline", "streamline")


def _is_int(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _objects_problem(kind: str, objects: Any) -> str | None:
    """Why a ``coarsening.objects`` record is not one of §4.3.3, or None."""
    if not isinstance(objects, dict):
        return f"objects must be an object, got {objects!r}"
    rule = objects.get("rule")
    if rule == "length" and kind in _LENGTH_KINDS:
        if set(objects) == {"rule", "count"} and _is_int(objects["count"], 0):
            return None
        return f"rule 'length' takes an integer count >= 0 alone, got {objects!r}"
    if rule == "spatial_coverage":
        priorities = ("id_hash", "length") if kind in _LENGTH_KINDS else ("id_hash",)
        if (
            set(objects) == {"rule", "per_cell", "priority"}
            and _is_int(objects["per_cell"], 1)
            and objects["priority"] in priorities
        ):
            return None
        return (
            f"rule 'spatial_coverage' takes an integer per_cell >= 1 and a priority of "
            f"{', '.join(priorities)}, got {objects!r}"
        )
    rules = "'length' or 'spatial_coverage'" if kind in _LENGTH_KINDS else "'spatial_coverage'"
    return f"objects rule must be {rules} for {kind}, got {rule!r}"


def _imported_problem(coarsening: dict[str, Any], strategy: Any) -> str | None:
    """Why an ``"imported"`` record (spec §4.3.4) is malformed, or None: it names its
    ``source`` (a string), has no ``objects`` rule, and ``sparsity_strategy`` is absent or
    ``"random"``.

    Examples
    --------
    >>> _imported_problem({"method": "imported"}, None)
    "an 'imported' level names its source (a string), got None"
    """
    if not isinstance(coarsening.get("source"), str):
        return f"an 'imported' level names its source (a string), got {coarsening.get('source')!r}"
    if "objects" in coarsening:
        return "an 'imported' level has no objects rule"
    if strategy not in (None, "random"):
        return f"an 'imported' level's sparsity_strategy is 'random' or absent, not {strategy!r}"
    return None


def coarsening_problem(kind: str, coarsening: dict[str, Any], strategy: Any) -> str | None:
    """Why a level's ``coarsening`` (and its ``sparsity_strategy``) is not what §4.3.3 lists
    for ``kind``, or None when it is.

    Parameters
    ----------
    kind
        The store's object kind.
    coarsening
        The level's ``coarsening`` object (its ``method`` a string).
    strategy
        The level's ``sparsity_strategy`` (None when absent).

    Returns
    -------
    str or None
        The reason, or None.

    Examples
    --------
    >>> runs = {"method": "runs", "representative": "ends_and_middle"}
    >>> coarsening_problem("polyline", runs, None)
    >>> coarsening_problem("mesh", {"method": "runs"}, None)
    "method 'runs' does not fit mesh: use 'cluster'"
    """
    method, want = coarsening["method"], KIND_METHODS[kind]
    if method == IMPORTED:
        return _imported_problem(coarsening, strategy)
    if method != want:
        return f"method {method!r} does not fit {kind}: use {want!r}"
    expected: dict[str, Any] = {"method": method}
    if method in _REPRESENTATIVE:
        expected["representative"] = _REPRESENTATIVE[method]
    if method == CLUSTER:
        expected["within"] = _WITHIN[kind]
    given = {k: v for k, v in coarsening.items() if k != "objects"}
    if given != expected:
        return f"the parameters of {method!r} for {kind} are {expected} (plus objects), got {given}"
    objects = coarsening.get("objects")
    if objects is not None or "objects" in coarsening:
        problem = _objects_problem(kind, objects)
        if problem is not None:
            return problem
    rule = objects.get("rule") if isinstance(objects, dict) else None
    if strategy != rule:
        return f"sparsity_strategy must be {rule!r} (the objects rule), got {strategy!r}"
    return None


def kept_objects(
    objects: dict[str, Any] | None,
    sizes: np.ndarray,
    firsts: np.ndarray,
    lengths: np.ndarray | None,
    grid: CoarseGrid,
) -> np.ndarray:
    """The objects the recorded rule keeps at a level, among those with level-0 vertices.

    Parameters
    ----------
    objects
        The level's ``coarsening.objects`` (None: every object with a vertex is kept).
    sizes
        ``(m,)`` level-0 vertex count of every object.
    firsts
        ``(m, D)`` first level-0 vertex of every object (any row for an empty one).
    lengths
        ``(m,)`` float64 length of every object (polylines and streamlines), else None.
    grid
        The store's chunk grid with the level's bin shape.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` bool.

    Examples
    --------
    >>> grid = CoarseGrid((8.0,), (4.0,), (0,))
    >>> rule = {"rule": "spatial_coverage", "per_cell": 1, "priority": "length"}
    >>> firsts = np.array([[1.0], [2.0], [6.0]])
    >>> kept_objects(rule, np.array([2, 2, 2]), firsts, np.array([1.0, 3.0, 1.0]), grid).tolist()
    [False, True, True]
    """
    has = sizes > 0
    if objects is None:
        return has
    if objects["rule"] == "length":
        key = lengths if lengths is not None else np.zeros(sizes.shape[0])
        return keep_longest(key, int(objects["count"])) & has
    cells = np.full(sizes.shape[0], -1, np.int64)
    if has.any():
        cells[has] = coarse_cells(firsts[has], grid)[1]
    if objects["priority"] == "length" and lengths is not None:
        priority: np.ndarray = -lengths
    else:
        priority = id_hashes(np.arange(sizes.shape[0]))
    return keep_per_cell(cells, priority, int(objects["per_cell"]))


class Coarsened(NamedTuple):
    """A level recomputed from level 0: what the stored level must equal.

    Attributes
    ----------
    positions
        ``(n_c, D)`` coarse vertices, object by object.
    offsets
        ``(m + 1,)`` vertex offsets of the objects.
    source
        ``(n_c,)`` level-0 row of every coarse vertex (its attributes are carried from it).
    links
        ``(E, L)`` links as rows of ``positions`` as a read returns them (skeletons:
        ``(child, parent)`` rows without the roots), or None when they follow from the
        offsets (polyline chains).
    link_source
        ``(E,)`` the level-0 link (a row of the read's links) each link comes from (its link
        attributes are carried from it), or None with ``links``.
    """

    positions: np.ndarray
    offsets: np.ndarray
    source: np.ndarray
    links: np.ndarray | None
    link_source: np.ndarray | None = None


class Recipe(NamedTuple):
    """What a recomputation takes beside level 0.

    Attributes
    ----------
    grid
        The store's chunk grid with the level's bin shape.
    keep
        ``(m,)`` bool: the objects the recorded sparsity rule keeps.
    within
        ``coarsening.within`` of a ``cluster`` level (``"component"``: graphs, ``"object"``:
        meshes), else None.
    directed
        Whether graph edges keep their direction (the root's ``is_directed``).

    Examples
    --------
    >>> recipe = Recipe(CoarseGrid((8.0,), (4.0,), (0,)), np.ones(2, bool), "component")
    >>> recipe.within, recipe.directed
    ('component', False)
    """

    grid: CoarseGrid
    keep: np.ndarray
    within: str | None = None
    directed: bool = False


def offsets_of(result: QueryResult) -> np.ndarray:
    """The object offsets of a read of whole objects.

    Raises
    ------
    FormatError
        When the read returned none (not an object kind's read).
    """
    if result.offsets is None:
        raise FormatError("a read of objects returned no offsets")
    return result.offsets


def _links_of(result: QueryResult, width: int) -> np.ndarray:
    """The links of a read as int64 rows (none: an empty table)."""
    links = result.faces if width == 3 else result.edges
    if links is None:
        return np.zeros((0, width), np.int64)
    return np.asarray(links, np.int64).reshape(-1, width)


Reproducer = Callable[[QueryResult, Recipe], Coarsened]


def _runs(base: QueryResult, recipe: Recipe) -> Coarsened:
    """``runs`` (polylines, streamlines): the chains follow from the offsets."""
    out = coarsen_polylines(base.positions, offsets_of(base), recipe.grid, recipe.keep)
    return Coarsened(out.positions, out.offsets, out.source, None)


def _thin(base: QueryResult, recipe: Recipe) -> Coarsened:
    """``thin`` (skeletons): the read's ``(child, parent)`` rows give every parent; a coarse
    parent record comes from its child's source's level-0 record."""
    edges = _links_of(base, 2)
    n = base.positions.shape[0]
    parents = np.full(n, -1, np.int64)
    parents[edges[:, 0]] = edges[:, 1]
    record = np.full(n, -1, np.int64)
    record[edges[:, 0]] = np.arange(edges.shape[0])
    out = coarsen_skeletons(base.positions, parents, offsets_of(base), recipe.grid, recipe.keep)
    child = np.flatnonzero(out.links >= 0)
    links = np.stack([child, out.links[child]], axis=1)
    return Coarsened(out.positions, out.offsets, out.source, links, record[out.source[child]])


def _cluster(base: QueryResult, recipe: Recipe) -> Coarsened:
    """``cluster``: graphs within components, meshes within objects."""
    offsets = offsets_of(base)
    if recipe.within == "component":
        edges = _links_of(base, 2)
        out = coarsen_graphs(
            base.positions,
            edges,
            offsets,
            recipe.grid,
            directed=recipe.directed,
            keep=recipe.keep,
        )
    else:
        faces = _links_of(base, 3)
        out = coarsen_meshes(base.positions, faces, offsets, recipe.grid, keep=recipe.keep)
    width = 3 if recipe.within != "component" else 2
    links = out.links.reshape(-1, width)
    return Coarsened(out.positions, out.offsets, out.source, links, out.link_source)


REPRODUCERS: dict[str, Reproducer] = {RUNS: _runs, THIN: _thin, CLUSTER: _cluster}
"""Recomputation of a level from level 0 by method: ``(level 0, recipe) -> Coarsened``."""
