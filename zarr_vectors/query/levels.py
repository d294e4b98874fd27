"""Choosing a resolution level by a vertex budget (``max_vertices=``, spec §4.3).

A level's count inside a region is the sum of its ``vertex_counts`` over the occupied chunks
the region can meet (:func:`~zarr_vectors.query.point_queries.chunks_meeting`): an upper
bound of the vertices of the level inside the region, known without reading vertex data.
The level chosen is the finest whose count is at most the budget, so a point query at that
level never returns more vertices than the budget.

When the region covers the store's whole bounding box (every level's vertices lie inside
it), a level's count is its ``vertex_count`` from the level's metadata: nothing of a level
passed over is read, not even its ``vertex_counts``. A level whose whole ``vertex_count`` is
within the budget is admissible for any region, again without reading anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query.point_queries import chunks_meeting
from zarr_vectors.query.regions import BoxRegion, Region
from zarr_vectors.read import LevelReader

__all__ = ["LevelCount", "LevelCounter", "check_budget", "admissible_levels", "everywhere"]


@dataclass(frozen=True, slots=True)
class LevelCount:
    """What the choice needs of a level: its number and whole ``vertex_count``."""

    level: int
    vertex_count: int


def check_budget(max_vertices: object, name: str = "max_vertices") -> int:
    """``max_vertices`` as an int, checked to be a positive integer (``name``: as the
    caller's parameter is called, for the message).

    Raises
    ------
    InvalidInputError
        When it is not a positive integer (a bool or a float is refused too).
    """
    if isinstance(max_vertices, bool) or not isinstance(max_vertices, int | np.integer):
        raise InvalidInputError(f"{name} must be a positive integer, got {max_vertices!r}")
    if max_vertices < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {max_vertices}")
    return int(max_vertices)


def everywhere(ndim: int) -> BoxRegion:
    """The box of all of space (``-inf`` to ``inf`` on every axis)."""
    return BoxRegion(np.full(ndim, -np.inf), np.full(ndim, np.inf))


def _covers_data(
    region: Region, bounds: tuple[tuple[float, ...], tuple[float, ...]] | None
) -> bool:
    """Whether ``region`` holds every point of the inclusive bounding box ``bounds``."""
    if bounds is None:
        return True
    lo = np.asarray(bounds[0], dtype=np.float64)[None, :]
    hi = np.nextafter(np.asarray(bounds[1], dtype=np.float64), np.inf)[None, :]
    return bool(region.covers_boxes(lo, hi)[0])


@dataclass
class LevelCounter:
    """Counts of the levels of one store inside one region, each found at most once.

    Parameters
    ----------
    levels
        Every level of the store, finest first.
    region
        The region of the query.
    bounds
        The store's inclusive bounding box (None when empty): every level's vertices lie in it.
    reader_of
        The open reader of a level (readers are opened only for levels whose count needs
        their ``vertex_counts``).
    """

    levels: Sequence[LevelCount]
    region: Region
    bounds: tuple[tuple[float, ...], tuple[float, ...]] | None
    reader_of: Callable[[int], LevelReader]

    def __post_init__(self) -> None:
        self._whole = _covers_data(self.region, self.bounds)
        self._found: dict[int, int] = {}

    def count(self, level: LevelCount, budget: int | None = None) -> int:
        """The level's vertex count inside the region (an upper bound of its vertices there).

        With ``budget``, a level whose whole ``vertex_count`` is within it is counted by that
        total, without reading its ``vertex_counts``.
        """
        if level.level not in self._found:
            if self._whole or (budget is not None and level.vertex_count <= budget):
                return level.vertex_count
            _, counts, _ = chunks_meeting(self.reader_of(level.level), self.region)
            self._found[level.level] = int(counts.sum())
        return self._found[level.level]


def admissible_levels(counter: LevelCounter, budget: int) -> Iterator[int]:
    """The levels whose count inside the region is at most ``budget``, finest first.

    Levels are counted one at a time, finest first, so a consumer that stops at the first
    one never counts the coarser levels.
    """
    for level in counter.levels:
        if counter.count(level, budget) <= budget:
            yield level.level
