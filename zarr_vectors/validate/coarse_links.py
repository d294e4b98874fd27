"""Level 5 checks of the links of skeleton ``thin`` and graph and mesh ``cluster`` levels
(spec §4.3.3, §11.6).

``L5.thin_still_tree``, ``L5.cluster_graph_links`` and ``L5.cluster_mesh_faces`` read every
level above 0 with the library's object reader, a batch of objects at a time, beside the
same objects of level 0. A coarse vertex is a level-0 vertex of its object: its *source* is
found by its stored coordinates and attribute values (:func:`source_rows`). The *cell* of a
vertex (chunk and coarse bin of the level) comes from its coordinates
(:func:`~zarr_vectors.kernels.coarse_cells`), so a level-0 vertex's cluster is the coarse
vertex with its cell (and, in a graph, its level-0 component).
Findings name the object (dense number, and the caller's id when it differs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import ZarrVectorsError
from zarr_vectors.format.levels import CLUSTER, THIN
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import LINKS, OBJECT_INDEX
from zarr_vectors.kernels import CoarseGrid, coarse_cells
from zarr_vectors.query import ObjectReader
from zarr_vectors.read import LevelReader
from zarr_vectors.validate.coarsening import valid_methods
from zarr_vectors.validate.context import MAX_FINDINGS_PER_CHECK, Context
from zarr_vectors.validate.geometry_claims import (
    BATCH_OBJECTS,
    BATCH_VERTICES,
    Batch,
    SkeletonTrees,
    component_labels,
)

__all__ = ["CHECK_IDS", "run", "source_rows"]

THIN_TREE = "L5.thin_still_tree"
GRAPH_LINKS = "L5.cluster_graph_links"
MESH_FACES = "L5.cluster_mesh_faces"
CHECK_IDS = (THIN_TREE, GRAPH_LINKS, MESH_FACES)
"""The ids this module runs."""

_READ_ERRORS = (ZarrVectorsError, OSError)


@dataclass(frozen=True, slots=True)
class _Pair:
    """The same objects at level 0 (``fine``) and at the coarse level ``level``: the cell
    and chunk of every vertex, the source of every coarse vertex and a code per vertex of
    both levels (equal iff the coordinates and attribute values are)."""

    level: int
    fine: Batch
    coarse: Batch
    fine_cell: np.ndarray
    coarse_cell: np.ndarray
    fine_chunk: np.ndarray
    coarse_chunk: np.ndarray
    source: np.ndarray
    codes: tuple[np.ndarray, np.ndarray]

    @property
    def kept(self) -> np.ndarray:
        """``(m,)`` whether each object has vertices at the level."""
        return self.coarse.sizes > 0

    def report(self, ctx: Context, check_id: str, path: str, bad: np.ndarray, why: str) -> None:
        """One finding per object with ``bad`` (a Context keeps a bounded number)."""
        for k in np.flatnonzero(bad)[: MAX_FINDINGS_PER_CHECK + 1].tolist():
            ctx.fail(
                check_id,
                path.format(k=self.fine.first + k),
                f"{self.fine.name(k)} at level {self.level}: {why}",
            )


def run(ctx: Context) -> None:
    """Check every ``thin`` level of a skeleton store and ``cluster`` level of a graph or
    mesh store whose methods L2 accepted."""
    plan = _PLANS.get(ctx.facts.kind or "")
    methods = valid_methods(ctx)
    if plan is None or not methods:
        return
    method, check_id, check = plan
    attrs = ctx.root_attrs()
    try:
        root = RootMetadata.from_json(ctx.root_attrs())
        fine = ObjectReader(LevelReader(ctx.io, root, 0))
    except _READ_ERRORS as exc:
        ctx.report.note(f"{check_id} skipped: level 0 cannot be read ({exc})")
        return
    ctx.mark(check_id)
    for level, coarsening in methods.items():
        if coarsening.get("method") != method:
            continue
        try:
            coarse = ObjectReader(LevelReader(ctx.io, root, level))
            for pair in _pairs(fine, coarse, level):
                check(ctx, pair, attrs)
        except _READ_ERRORS as exc:
            ctx.report.note(f"{check_id} of level {level} stopped: {exc}")


def _pairs(fine: ObjectReader, coarse: ObjectReader, level: int) -> Iterator[_Pair]:
    """The objects of both levels in batches of consecutive dense numbers."""
    total = min(fine.n_objects, coarse.n_objects)
    per_object = max(1, int(fine.reader.meta.vertex_count) // max(total, 1))
    step = min(BATCH_OBJECTS, max(1, BATCH_VERTICES // per_object))
    width = 3 if fine.kind == "mesh" else 2
    grid = coarse.reader.grid
    cells = CoarseGrid(grid.chunk_shape, grid.bin_shape, grid.origin)
    for first in range(0, total, step):
        dense = np.arange(first, min(total, first + step), dtype=np.int64)
        low = Batch(first, fine.read(dense), width)
        high = Batch(first, coarse.read(dense), width)
        chunk, cell = coarse_cells(np.concatenate([low.positions, high.positions]), cells)
        codes = _codes(*_vertex_rows(low, high))
        ascending = fine.kind == "skeleton"
        source = _matched((low.owner, codes[0]), (high.owner, codes[1]), ascending)
        n = low.n
        places = (cell[:n], cell[n:], chunk[:n], chunk[n:])
        yield _Pair(level, low, high, *places, source, codes)


def _vertex_rows(low: Batch, high: Batch) -> tuple[np.ndarray, np.ndarray]:
    """Each vertex of both levels as one row of bytes: its coordinates and the values of the
    attributes both levels hold (so vertices that only share coordinates differ)."""
    names = sorted(set(low.attributes) & set(high.attributes))
    out = []
    for batch in (low, high):
        columns = [batch.positions] + [batch.attributes[name] for name in names]
        parts = [_flat(_flat(np.ascontiguousarray(c)).view(np.uint8)) for c in columns]
        out.append(np.concatenate(parts, axis=1))
    return out[0], out[1]


def source_rows(
    fine: tuple[np.ndarray, np.ndarray],
    coarse: tuple[np.ndarray, np.ndarray],
    ascending: bool = False,
) -> np.ndarray:
    """The level-0 row of every coarse row: a row of the same object with the same values.

    When values repeat in an object, each coarse row takes the first level-0 row with its
    values that is free: after the previous coarse row's source when ``ascending`` (the
    sources of ``runs`` and ``thin`` ascend), else not taken by an earlier coarse row.

    Parameters
    ----------
    fine, coarse
        ``(owner, rows)`` of each level: the object of every row (ascending) and its
        values (coordinates, and attributes when given), one row each.
    ascending
        Whether the sources ascend in traversal order.

    Returns
    -------
    numpy.ndarray
        ``(n_coarse,)`` int64 rows of ``fine`` (-1: no row with those values).

    Examples
    --------
    >>> owner = np.array([0, 0, 0, 1])
    >>> pos = np.array([[0.0], [1.0], [0.0], [0.0]])
    >>> source_rows((owner, pos), (np.array([0, 0, 1]), pos[[1, 2, 3]])).tolist()
    [1, 0, 3]
    >>> source_rows((owner, pos), (np.array([0, 0, 1]), pos[[1, 2, 3]]), True).tolist()
    [1, 2, 3]
    """
    fine_code, coarse_code = _codes(fine[1], coarse[1])
    return _matched((fine[0], fine_code), (coarse[0], coarse_code), ascending)


def _codes(fine: np.ndarray, coarse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An int64 per row of both tables: equal iff the rows are equal."""
    n = fine.shape[0]
    rows = _flat(np.concatenate([fine, coarse]))
    codes = np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return codes[:n], codes[n:]


def _matched(
    fine: tuple[np.ndarray, np.ndarray], coarse: tuple[np.ndarray, np.ndarray], ascending: bool
) -> np.ndarray:
    """:func:`source_rows` from ``(owner, code)`` of each level's rows."""
    n = fine[0].shape[0]
    width = int(max(fine[1].max(initial=0), coarse[1].max(initial=0))) + 1
    low, high = fine[0] * width + fine[1], coarse[0] * width + coarse[1]
    out = np.full(high.shape[0], -1, np.int64)
    if not n:
        return out
    order = np.argsort(low, kind="stable")
    ranked = low[order]
    at = np.minimum(np.searchsorted(ranked, high), n - 1)
    found = ranked[at] == high
    out[found] = order[at[found]]
    repeated = np.unique(fine[0][order[1:][ranked[1:] == ranked[:-1]]])
    for k in repeated.tolist():
        _greedy(k, (fine[0], low), (coarse[0], high), out, ascending)
    return out


def _greedy(
    k: int,
    fine: tuple[np.ndarray, np.ndarray],
    coarse: tuple[np.ndarray, np.ndarray],
    out: np.ndarray,
    ascending: bool,
) -> None:
    """Sources of object ``k``'s coarse rows when its level-0 values repeat
    (:func:`source_rows`)."""
    rows = np.flatnonzero(fine[0] == k)
    free = np.ones(rows.shape[0], bool)
    for r in np.flatnonzero(coarse[0] == k).tolist():
        hits = np.flatnonzero((fine[1][rows] == coarse[1][r]) & free)
        out[r] = rows[hits[0]] if hits.shape[0] else -1
        if hits.shape[0] and ascending:
            free[: hits[0] + 1] = False
        elif hits.shape[0]:
            free[hits[0]] = False


def _flat(rows: np.ndarray) -> np.ndarray:
    """``rows`` as a 2-d table, one row per entry of axis 0 (also when there is none)."""
    return rows.reshape(rows.shape[0], int(np.prod(rows.shape[1:], dtype=np.int64)))


def _per_object(owner: np.ndarray, mask: np.ndarray, m: int) -> np.ndarray:
    """``(m,)`` whether some row of each object has ``mask``."""
    return np.bincount(owner[mask], minlength=m) > 0


def _multisets_differ(a: np.ndarray, b: np.ndarray, m: int) -> np.ndarray:
    """``(m,)`` whether the rows of ``a`` and ``b`` whose column 0 is object k differ as
    multisets."""
    tagged = []
    for rows in (a, b):
        unique, counts = np.unique(_flat(rows), axis=0, return_counts=True)
        tagged.append(np.concatenate([unique, counts[:, None]], axis=1))
    both = np.concatenate(tagged)
    unique, counts = np.unique(both, axis=0, return_counts=True)
    return np.bincount(unique[counts == 1, 0], minlength=m) > 0


# -- skeletons: thin -------------------------------------------------------------------------


def _parents(trees: SkeletonTrees) -> np.ndarray:
    """Parent row of every row, -1 for roots."""
    return np.where(trees.root, -1, trees.parent)


def _thin(ctx: Context, pair: _Pair, attrs: dict[str, Any]) -> None:
    """``L5.thin_still_tree``."""
    del attrs
    path = f"{pair.level}/{OBJECT_INDEX}#object={{k}}"
    fine, coarse, kept, m = pair.fine, pair.coarse, pair.kept, pair.fine.m
    low, high = SkeletonTrees(fine), SkeletonTrees(coarse)
    pair.report(ctx, THIN_TREE, path, high.bad() & kept, "is not one tree with one root")
    if (high.bad() & kept).any() or (pair.source < 0).any():
        lost = _per_object(coarse.owner, pair.source < 0, m)
        pair.report(ctx, THIN_TREE, path, lost, "holds a vertex that is no level-0 vertex")
        return
    source, up0 = pair.source, _parents(low)
    for name, test in (("root", _roots), ("leaves", _leaves), ("branch points", _branches)):
        differ = _multisets_differ(
            _coded(fine.owner, pair.codes[0], test(low) & kept[fine.owner]),
            _coded(coarse.owner, pair.codes[1], test(high)),
            m,
        )
        pair.report(ctx, THIN_TREE, path, differ & kept, f"its {name} are not level 0's")
    pair.report(
        ctx, THIN_TREE, path, _not_ancestors(high, source, up0), "a parent is no level-0 ancestor"
    )
    crossing = _crossings(pair, low, high)
    pair.report(ctx, THIN_TREE, path, crossing, "its parent links across chunks are not level 0's")


def _coded(owner: np.ndarray, code: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``(object, code)`` rows of the vertices with ``mask``."""
    return np.stack([owner[mask], code[mask]], 1)


def _roots(trees: SkeletonTrees) -> np.ndarray:
    return np.asarray(trees.root)


def _children(trees: SkeletonTrees) -> np.ndarray:
    child = np.flatnonzero(~trees.root)
    return np.bincount(trees.parent[child], minlength=trees.root.shape[0])


def _leaves(trees: SkeletonTrees) -> np.ndarray:
    return np.asarray(_children(trees) == 0)


def _branches(trees: SkeletonTrees) -> np.ndarray:
    return np.asarray(_children(trees) >= 2)


def _not_ancestors(high: SkeletonTrees, source: np.ndarray, up0: np.ndarray) -> np.ndarray:
    """``(m,)`` objects where a coarse parent's source is not an ancestor of the child's."""
    child = np.flatnonzero(~high.root)
    target = source[high.parent[child]]
    cur = up0[source[child]]
    active = np.flatnonzero((cur != target) & (cur >= 0))
    while active.shape[0]:
        cur[active] = up0[cur[active]]
        active = active[(cur[active] != target[active]) & (cur[active] >= 0)]
    owner = high.batch.owner
    return _per_object(owner[child], cur != target, high.batch.m)


def _crossings(pair: _Pair, low: SkeletonTrees, high: SkeletonTrees) -> np.ndarray:
    """``(m,)`` objects whose parent links across chunks differ from level 0's."""
    rows = []
    for trees, chunk, code in (
        (low, pair.fine_chunk, pair.codes[0]),
        (high, pair.coarse_chunk, pair.codes[1]),
    ):
        child = np.flatnonzero(~trees.root)
        child = child[chunk[child] != chunk[trees.parent[child]]]
        owner = trees.batch.owner[child]
        links = np.stack([owner, code[child], code[trees.parent[child]]], 1)
        rows.append(links[pair.kept[owner]])
    return _multisets_differ(rows[0], rows[1], pair.fine.m)


# -- graphs and meshes: cluster --------------------------------------------------------------


def _clusters(pair: _Pair, fine_key: np.ndarray, coarse_key: np.ndarray) -> tuple[Any, Any]:
    """The coarse row of every level-0 row's cluster (-1: none), and ``(m,)`` objects where
    two coarse rows share a cluster or a cluster has no coarse row."""
    keys = np.concatenate([fine_key, coarse_key])
    codes = np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)
    n, m = pair.fine.n, pair.fine.m
    row_of = np.full(int(codes.max(initial=-1)) + 1, -1, np.int64)
    row_of[codes[n:]] = np.arange(coarse_key.shape[0])
    shared = np.bincount(codes[n:], minlength=row_of.shape[0]) > 1
    bad = _per_object(pair.coarse.owner, shared[codes[n:]], m)
    mapped = row_of[codes[:n]]
    bad |= _per_object(pair.fine.owner, mapped < 0, m) & pair.kept
    return mapped, bad


def _graph(ctx: Context, pair: _Pair, attrs: dict[str, Any]) -> None:
    """``L5.cluster_graph_links``."""
    path = f"{pair.level}/{LINKS}/0"
    fine, coarse, m = pair.fine, pair.coarse, pair.fine.m
    directed = attrs.get("is_directed") is True
    edges = coarse.links
    owner = coarse.owner[edges[:, 0]] if edges.shape[0] else np.zeros(0, np.int64)
    loops = _per_object(owner, edges[:, 0] == edges[:, 1], m)
    pair.report(ctx, GRAPH_LINKS, path, loops, "an edge is a self-loop")
    unique, twice = _repeats(edges if directed else np.sort(edges, axis=1), coarse.owner, m)
    pair.report(ctx, GRAPH_LINKS, path, twice, "an edge appears twice")
    if (pair.source < 0).any():
        lost = _per_object(coarse.owner, pair.source < 0, m)
        pair.report(ctx, GRAPH_LINKS, path, lost, "a vertex is no level-0 vertex")
        return
    label = component_labels(fine.n, fine.links)
    fine_key = np.stack([fine.owner, pair.fine_cell, label], 1)
    coarse_key = np.stack([coarse.owner, pair.coarse_cell, label[pair.source]], 1)
    mapped, bad = _clusters(pair, fine_key, coarse_key)
    pair.report(ctx, GRAPH_LINKS, path, bad, "its vertices are not one per cluster")
    image = mapped[fine.links] if fine.links.shape[0] else np.zeros((0, 2), np.int64)
    image = image[(image[:, 0] != image[:, 1]) & (image >= 0).all(axis=1)]
    image = image[pair.kept[coarse.owner[image[:, 0]]]] if image.shape[0] else image
    if not directed:
        image = np.sort(image, axis=1)
    differ = _multisets_differ(
        _owned(coarse.owner, np.unique(image, axis=0)), _owned(coarse.owner, unique), m
    )
    why = "its edges are not the images of its level-0 edges"
    pair.report(ctx, GRAPH_LINKS, path, differ & ~bad, why)


def _repeats(links: np.ndarray, owner: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``links``, and ``(m,)`` objects where a row repeats."""
    unique, counts = np.unique(_flat(links), axis=0, return_counts=True)
    twice = unique[counts > 1, 0]
    return unique, np.bincount(owner[twice], minlength=m) > 0


def _owned(owner: np.ndarray, links: np.ndarray) -> np.ndarray:
    """Links with the object of their first vertex in front."""
    if not links.shape[0]:
        return np.zeros((0, links.shape[1] + 1), np.int64)
    return np.concatenate([owner[links[:, 0]][:, None], links], axis=1)


def _rotated(faces: np.ndarray) -> np.ndarray:
    """Each face rotated to start at its smallest entry (cyclic order kept)."""
    if not faces.shape[0]:
        return faces
    shift = np.argmin(faces, axis=1)
    index = (shift[:, None] + np.arange(3)) % 3
    return np.take_along_axis(faces, index, axis=1)


def _mesh(ctx: Context, pair: _Pair, attrs: dict[str, Any]) -> None:
    """``L5.cluster_mesh_faces``."""
    del attrs
    path = f"{pair.level}/{LINKS}/0"
    fine, coarse, m = pair.fine, pair.coarse, pair.fine.m
    faces = coarse.links
    owner = coarse.owner[faces[:, 0]] if faces.shape[0] else np.zeros(0, np.int64)
    fine_owner = fine.owner[fine.links[:, 0]] if fine.links.shape[0] else np.zeros(0, np.int64)
    sets = np.sort(faces, axis=1)
    repeated = (sets[:, 0] == sets[:, 1]) | (sets[:, 1] == sets[:, 2])
    pair.report(ctx, MESH_FACES, path, _per_object(owner, repeated, m), "a face repeats a vertex")
    twice = _repeats(sets, coarse.owner, m)[1]
    pair.report(ctx, MESH_FACES, path, twice, "two faces are on one vertex set")
    more = np.bincount(owner, minlength=m) > np.bincount(fine_owner, minlength=m)
    pair.report(ctx, MESH_FACES, path, more, "it has more faces than at level 0")
    fine_key = np.stack([fine.owner, pair.fine_cell], 1)
    coarse_key = np.stack([coarse.owner, pair.coarse_cell], 1)
    mapped, bad = _clusters(pair, fine_key, coarse_key)
    pair.report(ctx, MESH_FACES, path, bad, "its vertices are not one per cell")
    image = mapped[fine.links] if fine.links.shape[0] else np.zeros((0, 3), np.int64)
    image = _rotated(image[(image >= 0).all(axis=1)])
    known = np.unique(np.concatenate([image, _rotated(faces)]), axis=0, return_inverse=True)[1]
    known = known.reshape(-1)
    stray = ~np.isin(known[image.shape[0] :], known[: image.shape[0]])
    why = "a face is not the image of a level-0 face in its winding"
    pair.report(ctx, MESH_FACES, path, _per_object(owner, stray, m) & ~bad, why)


_PLANS: dict[str, tuple[str, str, Callable[[Context, _Pair, dict[str, Any]], None]]] = {
    "skeleton": (THIN, THIN_TREE, _thin),
    "graph": (CLUSTER, GRAPH_LINKS, _graph),
    "mesh": (CLUSTER, MESH_FACES, _mesh),
}
