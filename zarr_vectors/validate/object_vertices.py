"""Per-object L5 checks of a coarse level against level 0 (spec §4.3.3, §11.6):
``L5.coarse_vertices_of_level0`` for every method and ``L5.runs_ends_kept`` for ``runs``.

Both take one batch of objects, read whole at level 0 and at level N in the same id order.
Vertices are compared bit for bit: each row's object and coordinate bytes become one key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zarr_vectors.kernels import CoarseGrid, coarse_cells
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

    def sorted_hashes(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows in ascending hash order (stable) and their hashes in that order."""
        if self._sorted is None:
            hashes = _row_hashes(self.result)
            order = np.argsort(hashes, kind="stable")
            self._sorted = (order, hashes[order])
        return self._sorted


def check_objects(
    ctx: Context,
    level: int,
    pair: tuple[Level0Rows, QueryResult],
    ids: np.ndarray,
    grid: CoarseGrid | None,
) -> None:
    """Check one batch of objects of ``level``: ``pair`` is (level 0, level N) read for
    ``ids``; ``grid`` (the level's coarse grid) only for ``runs`` levels."""
    base, coarse = pair
    found = base.result
    if found.positions.dtype != coarse.positions.dtype:
        ctx.fail(
            "L5.coarse_vertices_of_level0",
            object_path(str(level), int(ids[0]) if ids.size else 0),
            f"level {level} stores {coarse.positions.dtype} vertices, level 0 "
            f"{found.positions.dtype}",
        )
        return
    bad = _not_of_level0(base, coarse)
    for k in bad[:_MAX_REPORTED].tolist():
        ctx.fail(
            "L5.coarse_vertices_of_level0",
            object_path(str(level), int(ids[k])),
            f"the vertices of object {int(ids[k])} at level {level} are not level-0 vertices "
            "of the object in traversal order",
        )
    if grid is not None:
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
