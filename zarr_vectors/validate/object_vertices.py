"""Per-object L5 checks of a coarse level against level 0 (spec §4.3.3, §11.6):
``L5.coarse_vertices_of_level0`` for every method and ``L5.runs_ends_kept`` for ``runs``.

Both take one batch of objects, read whole at level 0 and at level N in the same id order.
Vertices are compared bit for bit: each row's object and coordinate bytes become one key.
The order a coarse object keeps depends on the method: ``runs`` and ``thin`` keep a
subsequence of the object's level-0 vertices; a ``cluster`` object's vertices are one per
cluster (the object's level-0 vertices of one cell, and of one component in a graph), in
the order of the clusters' smallest members, which the stored rows give (the source, the
member closest to the mean, is recomputed by ``L5.object_coarsening_reproduced``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from zarr_vectors.format.levels import CLUSTER, RUNS
from zarr_vectors.kernels import CoarseGrid, cluster_vertices, coarse_cells, component_labels
from zarr_vectors.result import QueryResult
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.object_checks import object_path
from zarr_vectors.validate.object_rules import offsets_of

__all__ = ["Level0Rows", "check_objects", "is_subsequence"]

_MAX_REPORTED = 20


class Level0Rows:
    """One batch of level-0 objects and the sorted hashes of its rows, computed once for all
    the coarse levels compared with it.

    Parameters
    ----------
    result
        The objects of the batch, read whole at level 0.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> line = zv.QueryResult(positions=np.zeros((3, 2), np.float32), offsets=np.array([0, 3]))
    >>> order, hashes = Level0Rows(line).sorted_hashes()
    >>> order.tolist(), bool((hashes == hashes[0]).all())
    ([0, 1, 2], True)
    """

    def __init__(self, result: QueryResult) -> None:
        self.result = result
        self._sorted: tuple[np.ndarray, np.ndarray] | None = None
        self._components: np.ndarray | None = None

    def sorted_hashes(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows in ascending hash order (stable) and their hashes in that order."""
        if self._sorted is None:
            hashes = _row_hashes(self.result)
            order = np.argsort(hashes, kind="stable")
            self._sorted = (order, hashes[order])
        return self._sorted

    def clusters(self, grid: CoarseGrid, within: str | None) -> np.ndarray:
        """``(n,)`` the cluster of every row on the level of ``grid`` (spec §4.3.3): the
        rows of one object in one cell, and of one component of the object's edges when
        ``within`` is ``"component"``; clusters are numbered by their smallest row.

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> pos = np.array([[0.5], [4.5], [1.0], [9.0]], np.float32)
        >>> graph = zv.QueryResult(positions=pos, offsets=np.array([0, 3, 4]),
        ...                        edges=np.array([[0, 1]]))
        >>> grid = CoarseGrid((8.0,), (4.0,), (0,))
        >>> rows = Level0Rows(graph)
        >>> rows.clusters(grid, "object").tolist(), rows.clusters(grid, "component").tolist()
        ([0, 1, 0, 2], [0, 1, 2, 3])
        """
        cell = coarse_cells(self.result.positions, grid)[1]
        alive = np.ones(cell.shape[0], np.bool_)
        return cluster_vertices(self._labels(within), cell, alive)[0]

    def _labels(self, within: str | None) -> np.ndarray:
        """The object of every row, or its component (named by its smallest row, which
        lies in the same object) for ``"component"``."""
        offsets = offsets_of(self.result)
        if within != "component":
            return _owners(offsets)
        if self._components is None:
            edges = self.result.edges
            links = np.zeros((0, 2), np.int64) if edges is None else edges
            self._components = component_labels(self.result.positions.shape[0], links)
        return self._components


def check_objects(
    ctx: Context,
    level: int,
    pair: tuple[Level0Rows, QueryResult],
    ids: np.ndarray,
    rule: tuple[CoarseGrid | None, Mapping[str, Any]],
) -> None:
    """Check one batch of objects of ``level``: ``pair`` is (level 0, level N) read for
    ``ids``; ``rule`` is the level's coarse grid and ``coarsening`` record. Without a grid
    the checks that need cells (``runs`` ends, ``cluster`` order) are left out."""
    base, coarse = pair
    grid, coarsening = rule
    found = base.result
    if found.positions.dtype != coarse.positions.dtype:
        ctx.fail(
            "L5.coarse_vertices_of_level0",
            object_path(str(level), int(ids[0]) if ids.size else 0),
            f"level {level} stores {coarse.positions.dtype} vertices, level 0 "
            f"{found.positions.dtype}",
        )
        return
    method = coarsening.get("method")
    if method == CLUSTER:
        bad = _clusters_out_of_order(base, coarse, grid, coarsening.get("within"))
        why = "one per cluster, in the order of the clusters' smallest members"
    else:
        bad, why = _not_of_level0(base, coarse), "in traversal order"
    for k in bad[:_MAX_REPORTED].tolist():
        ctx.fail(
            "L5.coarse_vertices_of_level0",
            object_path(str(level), int(ids[k])),
            f"the vertices of object {int(ids[k])} at level {level} are not level-0 vertices "
            f"of the object {why}",
        )
    if grid is not None and method == RUNS:
        ctx.mark("L5.runs_ends_kept")
        for k, why in _ends_problems(found, coarse, grid)[:_MAX_REPORTED]:
            ctx.fail(
                "L5.runs_ends_kept",
                object_path(str(level), int(ids[k])),
                f"object {int(ids[k])} at level {level}: {why}",
            )


def _owners(offsets: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))


_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _row_hashes(result: QueryResult) -> np.ndarray:
    """A uint64 hash of every row's object and coordinate bits (equal rows, equal hashes)."""
    owner = _owners(offsets_of(result)).view(np.uint64)
    bits = _bits(result.positions).astype(np.uint64)
    h = owner * _MIX[0]
    for d in range(bits.shape[1]):
        h = (h ^ bits[:, d]) * _MIX[1]
        h ^= h >> np.uint64(29)
    return (h * _MIX[2]) ^ (h >> np.uint64(32))


def _first_sources(base: Level0Rows, coarse: QueryResult) -> np.ndarray:
    """For every coarse row, the first level-0 row of the same object with the same bits
    (-1 when the first row of the same hash differs: no such row, or a hash collision)."""
    found = base.result
    rough = _row_hashes(coarse)
    order, ordered = base.sorted_hashes()
    at = np.minimum(np.searchsorted(ordered, rough), max(ordered.shape[0] - 1, 0))
    if not ordered.shape[0]:
        return np.full(rough.shape[0], -1, np.int64)
    t = np.where(ordered[at] == rough, order[at], -1)
    hit = t >= 0
    same = np.all(_bits(found.positions[t[hit]]) == _bits(coarse.positions[hit]), axis=1)
    t[np.flatnonzero(hit)[~same]] = -1
    return t.astype(np.int64)


def is_subsequence(coarse: Sequence[object], fine: Sequence[object]) -> bool:
    """Whether ``coarse`` is ``fine`` with some items left out (the order kept).

    Examples
    --------
    >>> is_subsequence([1, 3], [1, 2, 3]), is_subsequence([3, 1], [1, 2, 3])
    (True, False)
    """
    it = iter(fine)
    return all(any(v == w for w in it) for v in coarse)


def _not_of_level0(base: Level0Rows, coarse: QueryResult) -> np.ndarray:
    """Batch positions of the objects whose coarse vertices are not a subsequence of their
    level-0 vertices (compared bit for bit).

    Each coarse row is matched to the first level-0 row of its object with its bits; an
    object whose matches ascend passes. The others (a coarse vertex without a match, or
    matches out of order, as repeated coordinates may give) are decided row by row."""
    found = base.result
    off0, off1 = offsets_of(found), offsets_of(coarse)
    t = _first_sources(base, coarse)
    owner = _owners(off1)
    same = owner[1:] == owner[:-1]
    unsure = np.unique(np.concatenate([owner[t < 0], owner[1:][same & (t[1:] <= t[:-1])]]))
    wrong = [
        k
        for k in unsure.tolist()
        if not is_subsequence(
            _row_bytes(coarse.positions[off1[k] : off1[k + 1]]),
            _row_bytes(found.positions[off0[k] : off0[k + 1]]),
        )
    ]
    return np.asarray(wrong, np.int64)


def _clusters_out_of_order(
    base: Level0Rows, coarse: QueryResult, grid: CoarseGrid | None, within: Any
) -> np.ndarray:
    """Batch positions of the objects whose coarse vertices are not level-0 vertices of the
    object (bit for bit) whose clusters ascend strictly (so one vertex per cluster).

    Each coarse row takes the cluster of the first level-0 row of its object with its bits;
    an object whose clusters ascend passes. The others (a vertex without a match, or a
    graph whose repeated coordinates lie in two components) are decided row by row. Without
    a grid only the bits are checked."""
    t = _first_sources(base, coarse)
    owner = _owners(offsets_of(coarse))
    missing = owner[t < 0]
    if grid is None:
        return np.unique(missing)
    cluster = base.clusters(grid, within if isinstance(within, str) else None)
    mine = np.where(t >= 0, cluster[np.maximum(t, 0)], -1)
    same = owner[1:] == owner[:-1]
    unsure = np.unique(np.concatenate([missing, owner[1:][same & (mine[1:] <= mine[:-1])]]))
    off0, off1 = offsets_of(base.result), offsets_of(coarse)
    wrong = [
        k
        for k in unsure.tolist()
        if not _clusters_ascend(
            _row_bytes(coarse.positions[off1[k] : off1[k + 1]]),
            _row_bytes(base.result.positions[off0[k] : off0[k + 1]]),
            cluster[off0[k] : off0[k + 1]],
        )
    ]
    return np.asarray(wrong, np.int64)


def _clusters_ascend(coarse: list[bytes], fine: list[bytes], cluster: np.ndarray) -> bool:
    """Whether every coarse row can be given a fine row with its bytes so that the clusters
    of those rows ascend strictly (each row takes the smallest cluster above the last)."""
    choices: dict[bytes, list[int]] = {}
    for row, c in zip(fine, cluster.tolist(), strict=True):
        choices.setdefault(row, []).append(c)
    last = -1
    for row in coarse:
        above = [c for c in choices.get(row, []) if c > last]
        if not above:
            return False
        last = min(above)
    return True


def _row_bytes(rows: np.ndarray) -> list[bytes]:
    return [row.tobytes() for row in _bits(rows)]


def _bits(rows: np.ndarray) -> np.ndarray:
    """Rows as unsigned integers of the same width (bitwise comparison)."""
    return np.ascontiguousarray(rows).view(f"u{rows.dtype.itemsize}")


def _ends_problems(
    found: QueryResult, coarse: QueryResult, grid: CoarseGrid
) -> list[tuple[int, str]]:
    """``runs``: ends kept, at least min(2, n) vertices, consecutive vertices in different
    cells except the one-cell pair; for every object with vertices at level N."""
    off0, off1 = offsets_of(found), offsets_of(coarse)
    n0, n1 = np.diff(off0), np.diff(off1)
    kept = np.flatnonzero(n1 > 0)
    problems: list[tuple[int, str]] = []
    if not kept.shape[0]:
        return problems
    firsts = (off0[kept], off1[kept])
    lasts = (off0[kept + 1] - 1, off1[kept + 1] - 1)
    for name, (a, b) in (("first", firsts), ("last", lasts)):
        moved = ~np.all(_bits(found.positions[a]) == _bits(coarse.positions[b]), axis=1)
        problems += [
            (int(k), f"its {name} vertex is not its level-0 {name} vertex") for k in kept[moved]
        ]
    few = kept[n1[kept] < np.minimum(2, n0[kept])]
    problems += [(int(k), "it has fewer than min(2, level-0 count) vertices") for k in few]
    problems += [
        (int(k), "two consecutive vertices share a coarse bin")
        for k in _shared_cells(found, coarse, grid)
    ]
    return sorted(problems)


def _shared_cells(found: QueryResult, coarse: QueryResult, grid: CoarseGrid) -> np.ndarray:
    """Objects with traversal-consecutive coarse vertices in one cell, other than the pair
    of an object whose level-0 vertices all lie in one cell."""
    cells = coarse_cells(coarse.positions, grid)[1]
    off1 = offsets_of(coarse)
    owner = _owners(off1)
    shared = np.unique(owner[1:][(owner[1:] == owner[:-1]) & (cells[1:] == cells[:-1])])
    if not shared.shape[0]:
        return shared
    fine = coarse_cells(found.positions, grid)[1]
    off = offsets_of(found)
    one_cell = np.array(
        [np.unique(fine[off[k] : off[k + 1]]).shape[0] == 1 for k in shared.tolist()], bool
    )
    pair = np.diff(off1)[shared] == 2
    out: np.ndarray = shared[~(one_cell & pair)]
    return out
