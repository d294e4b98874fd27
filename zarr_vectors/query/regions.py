"""Query regions: a box, a polygon in a plane with ranges on the other axes, and a ball.

A query reads only what its region can reach. The query planner
(:func:`zarr_vectors.query.point_queries.chunks_meeting`) asks a region three questions:

* :meth:`Region.meets_boxes`: may a point of each half-open box ``[lo, hi)`` lie in the
  region? False only when none can; such a chunk or bin is not read.
* :meth:`Region.covers_boxes`: does every point of each box lie in the region? True only
  when all do; the rows of such a chunk or bin are kept without the exact test.
* :meth:`Region.contains_points`: the exact test, applied to the rows of the other bins.

The points of a half-open box ``[lo, hi)`` are the float64 values of the closed box
``[lo, nextafter(hi, -inf)]``; polygons and balls answer for that closed box, so a chunk or
bin that only touches a region on its open upper faces is not read.

What is inside each region (exact; positions are widened to float64 first):

* :class:`BoxRegion`: ``lo_d <= p_d < hi_d`` on every axis (half-open, spec §8.1).
* :class:`PolygonRegion`: the point ``(p_i, p_j)`` on the two plane axes lies in the
  *closed* polygon (its interior or its boundary, as ``shapely.intersects_xy`` decides), and
  ``lo_d <= p_d < hi_d`` on every other axis (half-open ranges, unbounded by default).
* :class:`BallRegion`: ``(p - c)·(p - c) <= r·r`` (the *closed* ball), every difference,
  square and partial sum rounded to float64, summed in axis order.
"""

from __future__ import annotations

import reprlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely  # type: ignore[import-untyped]

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.kernels import points_in_box

__all__ = [
    "Region",
    "BoxRegion",
    "PolygonRegion",
    "BallRegion",
    "parse_bbox",
    "box_region",
    "polygon_region",
    "ball_region",
    "QueryRegion",
    "box",
    "ball",
    "polygon",
    "as_region",
]

# Margin of a ball's bounding box: relative, plus an absolute term larger than the distance
# below which a squared difference underflows to 0.
_BALL_MARGIN = 2.0**-30
_UNDERFLOW_DISTANCE = 1e-150


def _last_inside(hi: np.ndarray) -> np.ndarray:
    """The largest float64 values below ``hi``: the closed upper corners of ``[lo, hi)``."""
    return np.asarray(np.nextafter(hi, -np.inf), dtype=np.float64)


def _overlapping(lo: np.ndarray, hi: np.ndarray, lo0: np.ndarray, hi0: np.ndarray) -> np.ndarray:
    """Which half-open boxes ``[lo, hi)`` (rows) overlap the half-open box ``[lo0, hi0)``."""
    return np.asarray(np.all(lo < hi0, axis=1) & np.all(lo0 < hi, axis=1), dtype=bool)


def _within(lo: np.ndarray, hi: np.ndarray, lo0: np.ndarray, hi0: np.ndarray) -> np.ndarray:
    """Which half-open boxes ``[lo, hi)`` (rows) lie inside the half-open box ``[lo0, hi0)``."""
    return np.asarray(np.all(lo0 <= lo, axis=1) & np.all(hi <= hi0, axis=1), dtype=bool)


class Region(ABC):
    """A set of points of D-space whose vertices (or objects) a query returns.

    Boxes given to :meth:`meets_boxes` and :meth:`covers_boxes` are ``(k, D)`` float64
    lower and upper corners of finite half-open boxes ``lo <= p < hi``.
    """

    ndim: int

    @property
    def is_empty(self) -> bool:
        """True when no point can be inside (the query reads nothing)."""
        return False

    @abstractmethod
    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """A half-open box ``[lo, hi)`` (float64, possibly infinite) holding the region."""

    @abstractmethod
    def meets_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``(k,)`` bool: False only for boxes none of whose points is in the region."""

    @abstractmethod
    def covers_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``(k,)`` bool: True only for boxes all of whose points are in the region."""

    @abstractmethod
    def contains_points(self, points: np.ndarray) -> np.ndarray:
        """``(n,)`` bool: exactly which of the ``(n, D)`` points are in the region."""

    def bins_of_chunks(self, grid: ChunkGrid, chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which bins of each of the zarr chunks ``chunks`` the region meets, and covers.

        Returns
        -------
        meets, covers
            ``(k, prod(bins))`` bool over the bin flat index (C order); ``covers`` implies
            ``meets``.
        """
        lower, upper = grid.bin_boxes(chunks)
        lower, upper = lower.reshape(-1, grid.ndim), upper.reshape(-1, grid.ndim)
        meets = self.meets_boxes(lower, upper)
        covers = np.zeros_like(meets)
        covers[meets] = self.covers_boxes(lower[meets], upper[meets])
        shape = (chunks.shape[0], grid.bins_per_chunk_total)
        return meets.reshape(shape), covers.reshape(shape)


class BoxRegion(Region):
    """The half-open box ``lo <= p < hi`` (spec §8.1); ``±inf`` leaves an axis unbounded.

    Parameters
    ----------
    lo, hi
        ``(D,)`` bounds, already checked (see :func:`parse_bbox`).
    """

    def __init__(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo = np.asarray(lo, dtype=np.float64)
        self.hi = np.asarray(hi, dtype=np.float64)
        self.ndim = int(self.lo.shape[0])

    @property
    def is_empty(self) -> bool:
        """True when ``lo_d = hi_d`` on some axis."""
        return bool((self.lo >= self.hi).any())

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """The box itself."""
        return self.lo, self.hi

    def meets_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Half-open boxes overlapping this one (exact)."""
        return _overlapping(lo, hi, self.lo, self.hi)

    def covers_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Boxes inside this one (exact)."""
        return _within(lo, hi, self.lo, self.hi)

    def contains_points(self, points: np.ndarray) -> np.ndarray:
        """``lo <= p < hi`` on every axis."""
        return points_in_box(points, self.lo, self.hi)

    def bins_of_chunks(self, grid: ChunkGrid, chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bins met and covered, axis by axis (a box is a product of intervals)."""
        k = chunks.shape[0]
        meets = np.ones((k, 1), dtype=bool)
        covers = np.ones((k, 1), dtype=bool)
        for axis in range(self.ndim):
            e = grid.chunk_bin_edges(chunks, axis)
            lo, hi = self.lo[axis], self.hi[axis]
            meets_axis = (e[:, :-1] < hi) & (lo < e[:, 1:])
            covers_axis = (lo <= e[:, :-1]) & (e[:, 1:] <= hi)
            meets = (meets[:, :, None] & meets_axis[:, None, :]).reshape(k, -1)
            covers = (covers[:, :, None] & covers_axis[:, None, :]).reshape(k, -1)
        return meets, covers


class PolygonRegion(Region):
    """A closed polygon in the plane of two axes, times half-open ranges on the others.

    Parameters
    ----------
    polygon
        A valid, non-empty 2-D shapely ``Polygon`` or ``MultiPolygon`` (holes allowed),
        owned by the region (it is prepared in place).
    plane
        The axes ``(i, j)`` whose coordinates are the polygon's ``x`` and ``y``.
    lo, hi
        ``(D,)`` range bounds; ``-inf`` and ``+inf`` on the plane axes.
    """

    def __init__(
        self, polygon: Any, plane: tuple[int, int], lo: np.ndarray, hi: np.ndarray
    ) -> None:
        self.polygon = polygon
        shapely.prepare(self.polygon)
        self.plane = plane
        self.lo = np.asarray(lo, dtype=np.float64)
        self.hi = np.asarray(hi, dtype=np.float64)
        self.ndim = int(self.lo.shape[0])

    @property
    def is_empty(self) -> bool:
        """True when a range is empty (``lo_d = hi_d``)."""
        return bool(np.any(self.lo >= self.hi))

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """The ranges, and the polygon's bounds (closed, so widened by one ulp above)."""
        lo, hi = self.lo.copy(), self.hi.copy()
        x0, y0, x1, y1 = shapely.bounds(self.polygon)
        i, j = self.plane
        lo[i], lo[j] = x0, y0
        hi[i], hi[j] = np.nextafter(x1, np.inf), np.nextafter(y1, np.inf)
        return lo, hi

    def _rectangles(
        self, lo: np.ndarray, hi: np.ndarray, rows: np.ndarray, predicate: Callable[..., Any]
    ) -> np.ndarray:
        """``predicate(polygon, rectangle)`` for the plane rectangles of boxes ``rows``.

        Boxes sharing a plane rectangle (bins stacked along another axis) share one test.
        GEOS decides with robust predicates, as it does for ``intersects_xy``.
        """
        out = np.zeros(lo.shape[0], dtype=bool)
        if not rows.any():
            return out
        plane = list(self.plane)
        rects = np.concatenate([lo[rows][:, plane], _last_inside(hi[rows][:, plane])], axis=1)
        unique, inverse = np.unique(rects, axis=0, return_inverse=True)
        boxes = shapely.box(*unique.T)
        out[rows] = np.asarray(predicate(self.polygon, boxes), dtype=bool)[inverse.reshape(-1)]
        return out

    def meets_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Boxes meeting every range whose plane rectangle meets the polygon."""
        return self._rectangles(lo, hi, _overlapping(lo, hi, self.lo, self.hi), shapely.intersects)

    def covers_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Boxes inside every range whose plane rectangle the polygon covers."""
        return self._rectangles(lo, hi, _within(lo, hi, self.lo, self.hi), shapely.covers)

    def contains_points(self, points: np.ndarray) -> np.ndarray:
        """In every range, and in the closed polygon on the plane axes."""
        inside = points_in_box(points, self.lo, self.hi)
        rows = np.flatnonzero(inside)
        if rows.size:
            i, j = self.plane
            x = points[rows, i].astype(np.float64)
            y = points[rows, j].astype(np.float64)
            inside[rows] = shapely.intersects_xy(self.polygon, x, y)
        return inside


class BallRegion(Region):
    """The closed ball ``(p - c)·(p - c) <= r·r``, computed in float64 in axis order.

    Parameters
    ----------
    center
        ``(D,)`` finite centre ``c``.
    radius
        Finite ``r >= 0``.
    """

    def __init__(self, center: np.ndarray, radius: float) -> None:
        self.center = np.asarray(center, dtype=np.float64)
        self.radius = float(radius)
        self.ndim = int(self.center.shape[0])
        self._r2 = self.radius * self.radius

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """``c ± r``, widened past rounding (and underflow of tiny squared differences)."""
        margin = _BALL_MARGIN * (np.abs(self.center) + self.radius) + _UNDERFLOW_DISTANCE
        lo = self.center - self.radius - margin
        hi = np.nextafter(self.center + self.radius + margin, np.inf)
        return lo, hi

    def _in_ball(self, offsets: np.ndarray) -> np.ndarray:
        """Whether the squared lengths of ``(k, D)`` float64 offsets are at most ``r·r``."""
        total = offsets[:, 0] * offsets[:, 0]
        for d in range(1, self.ndim):
            total += offsets[:, d] * offsets[:, d]
        return np.asarray(total <= self._r2)

    def meets_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Boxes whose nearest point to the centre is in the ball (exact).

        That point is a float64 value of the box, and rounding is monotone, so no point of
        the box has a smaller rounded distance.
        """
        return self._in_ball(np.clip(self.center, lo, _last_inside(hi)) - self.center)

    def covers_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Boxes whose farthest corner from the centre is in the ball (exact, likewise)."""
        below, above = lo - self.center, _last_inside(hi) - self.center
        return self._in_ball(np.where(np.abs(below) > np.abs(above), below, above))

    def contains_points(self, points: np.ndarray) -> np.ndarray:
        """``(p - c)·(p - c) <= r·r``."""
        return self._in_ball(np.asarray(points, dtype=np.float64) - self.center)


# --------------------------------------------------------------------------- parsing


def _numbers(value: Any, expected: str) -> np.ndarray:
    """``value`` as a float64 array, when it holds only real numbers.

    Strings (even ``"3"``), bools and None are not coordinates, though numpy would turn the
    first two into numbers.

    Raises
    ------
    InvalidInputError
        ``expected, got <value>`` when ``value`` is ragged or holds anything but numbers.
    """
    try:
        given = np.asarray(value)
        numbers = given.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{expected}, got {reprlib.repr(value)}") from exc
    if given.dtype.kind not in "iuf":
        raise InvalidInputError(f"{expected}, got {reprlib.repr(value)}")
    return numbers


_OTHER_REGIONS = "; other regions: a shapely polygon, zv.ball(...), zv.polygon(...)"


def parse_bbox(bbox: Any, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate a box given as ``(lo, hi)`` (two sequences of ``D`` numbers).

    Half-open on every axis: ``lo <= p < hi``. ``±inf`` leaves an axis unbounded.

    Raises
    ------
    InvalidInputError
        When the box does not have two rows of ``D`` numbers (strings and bools are not
        numbers), holds NaN, or ``lo > hi``.
    """
    expected = f"a box region must be (lo, hi) with {ndim} numbers each"
    try:
        box = _numbers(bbox, expected)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{exc}{_OTHER_REGIONS}") from exc
    if box.shape != (2, ndim):
        raise InvalidInputError(f"{expected}, got shape {box.shape}{_OTHER_REGIONS}")
    if (box[0] <= box[1]).all():  # one test: False for NaN too
        return box[0], box[1]
    if np.isnan(box).any():
        raise InvalidInputError(
            f"a box must not contain NaN, got {reprlib.repr(bbox)}; use -inf or inf for an "
            "unbounded side"
        )
    if np.any(box[0] > box[1]):
        d = int(np.flatnonzero(box[0] > box[1])[0])
        raise InvalidInputError(
            f"box lo[{d}] = {box[0, d]} is greater than hi[{d}] = {box[1, d]}; give (lo, hi) "
            "with lo <= hi on every axis"
        )
    return box[0], box[1]


def _plain_bounds(lo: Any, hi: Any, ndim: int) -> bool:
    """Whether ``lo`` and ``hi`` are ``(ndim,)`` float64 arrays with ``lo <= hi`` (no NaN):
    a box :func:`parse_bbox` accepts as given (a box's usual form, taken without its
    conversions)."""
    return (
        type(lo) is np.ndarray
        and type(hi) is np.ndarray
        and lo.dtype == np.float64
        and hi.dtype == np.float64
        and lo.shape == (ndim,)
        and hi.shape == (ndim,)
        and bool((lo <= hi).all())
    )


def box_region(bbox: Any, ndim: int) -> BoxRegion:
    """The :class:`BoxRegion` of ``bbox = (lo, hi)``, checked with :func:`parse_bbox`."""
    return BoxRegion(*parse_bbox(bbox, ndim))


def _number(value: Any, what: str) -> float:
    """One real number (not a bool or a string), as float."""
    if isinstance(value, bool | np.bool_ | str | bytes):
        raise InvalidInputError(f"{what} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be a number, got {value!r}") from exc


def _axis(axis: Any, ndim: int, axis_names: Sequence[str]) -> int:
    """An axis given by name or by index ``0 <= axis < ndim``."""
    if isinstance(axis, str):
        if axis not in axis_names:
            raise InvalidInputError(f"unknown axis {axis!r}; the axes are {list(axis_names)}")
        return list(axis_names).index(axis)
    if isinstance(axis, int | np.integer) and not isinstance(axis, bool | np.bool_):
        if not 0 <= int(axis) < ndim:
            raise InvalidInputError(f"axis {axis} is out of range for {ndim}-D positions")
        return int(axis)
    raise InvalidInputError(f"an axis is a name or an index, got {axis!r}")


def _plane(plane: Any, ndim: int, axis_names: Sequence[str]) -> tuple[int, int]:
    if isinstance(plane, np.ndarray) and plane.ndim == 1:
        plane = plane.tolist()  # np.array([0, 2]) or np.array(["x", "z"])
    if isinstance(plane, str) or not isinstance(plane, Sequence) or len(plane) != 2:
        raise InvalidInputError(f"plane must be two axes, as names or indices, got {plane!r}")
    i, j = (_axis(a, ndim, axis_names) for a in plane)
    if i == j:
        raise InvalidInputError(f"the plane's two axes must differ, got {plane!r}")
    return i, j


def _bound(value: Any, default: float, what: str) -> float:
    """A range bound: a number, possibly infinite, or None for ``default``."""
    if value is None:
        return default
    number = _number(value, what)
    if np.isnan(number):
        raise InvalidInputError(f"{what} must not be NaN")
    return number


def _ranges(
    ranges: Mapping[Any, Any] | None,
    plane: tuple[int, int],
    ndim: int,
    axis_names: Sequence[str],
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds ``[lo, hi)`` per axis from ``{axis: (lo, hi)}`` (unbounded where not given)."""
    lo, hi = np.full(ndim, -np.inf), np.full(ndim, np.inf)
    if ranges is None:
        return lo, hi
    if not isinstance(ranges, Mapping):
        raise InvalidInputError(f"ranges must map axes to (lo, hi), got {type(ranges).__name__}")
    seen: set[int] = set()
    for key, bounds in ranges.items():
        d = _axis(key, ndim, axis_names)
        if d in plane:
            raise InvalidInputError(
                f"axis {key!r} is an axis of the polygon's plane; a range applies to the others"
            )
        if d in seen:
            raise InvalidInputError(f"axis {key!r} has two ranges")
        seen.add(d)
        if isinstance(bounds, str) or not isinstance(bounds, Sequence) or len(bounds) != 2:
            raise InvalidInputError(f"the range of axis {key!r} must be (lo, hi), got {bounds!r}")
        lo[d] = _bound(bounds[0], -np.inf, f"the lower bound of axis {key!r}")
        hi[d] = _bound(bounds[1], np.inf, f"the upper bound of axis {key!r}")
        if lo[d] > hi[d]:
            raise InvalidInputError(f"the range of axis {key!r} has lo {lo[d]} > hi {hi[d]}")
    return lo, hi


def _polygon(polygon: Any) -> Any:
    """A fresh, valid, non-empty 2-D shapely polygon from a polygon or a vertex sequence."""
    if isinstance(polygon, shapely.Geometry):
        if not isinstance(polygon, shapely.Polygon | shapely.MultiPolygon):
            raise InvalidInputError(
                f"a shapely region must be a Polygon or MultiPolygon, got a "
                f"{polygon.geom_type}; for a ball give zv.ball(center, radius), for a box "
                "(lo, hi)"
            )
        coords = shapely.get_coordinates(polygon)
        geometry = shapely.force_2d(polygon)
    else:
        coords = _numbers(polygon, "a polygon is given as (n, 2) vertex coordinates")
        if coords.ndim != 2 or coords.shape[0] < 3 or coords.shape[1] != 2:
            raise InvalidInputError(
                f"a polygon needs (n >= 3, 2) vertex coordinates, got shape {coords.shape}"
            )
        geometry = None
    if coords.size and not np.isfinite(coords).all():
        raise InvalidInputError("the polygon's coordinates must be finite")
    if geometry is None:
        geometry = shapely.Polygon(coords)
    if geometry.is_empty:
        raise InvalidInputError("the polygon is empty")
    if not shapely.is_valid(geometry):
        reason = shapely.is_valid_reason(geometry)
        raise InvalidInputError(f"the polygon is not valid: {reason}")
    if geometry is polygon:  # prepared in place below: do not touch the caller's object
        geometry = shapely.from_wkb(shapely.to_wkb(geometry))
    return geometry


def polygon_region(
    polygon: Any,
    ndim: int,
    *,
    plane: Sequence[Any] = (0, 1),
    ranges: Mapping[Any, Any] | None = None,
    axis_names: Sequence[str] = (),
) -> PolygonRegion:
    """A :class:`PolygonRegion` from user input, checked.

    Parameters
    ----------
    polygon
        A shapely ``Polygon`` or ``MultiPolygon``, or ``(n, 2)`` vertex coordinates.
    ndim
        ``D``, the number of spatial axes (at least 2).
    plane
        The two axes of the polygon's ``x`` and ``y``, by name or index.
    ranges
        ``{axis: (lo, hi)}``: half-open ranges on axes outside the plane; None (or a
        missing axis) is unbounded, as is a None bound.
    axis_names
        The store's axis names, for axes given by name.

    Raises
    ------
    InvalidInputError
        For an empty, invalid or non-finite polygon, fewer than 2 axes, an unknown axis, the
        same axis twice, a range on a plane axis, or a range with NaN or ``lo > hi``.
    """
    if ndim < 2:
        raise InvalidInputError(f"a polygon query needs at least 2 axes, the store has {ndim}")
    axes = _plane(plane, ndim, axis_names)
    lo, hi = _ranges(ranges, axes, ndim, axis_names)
    return PolygonRegion(_polygon(polygon), axes, lo, hi)


def ball_region(center: Any, radius: Any, ndim: int) -> BallRegion:
    """A :class:`BallRegion` from user input, checked.

    Raises
    ------
    InvalidInputError
        When ``center`` is not ``D`` finite numbers, or ``radius`` is not a finite number
        ``>= 0``.
    """
    try:
        c = np.asarray(center)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"center must be {ndim} numbers") from exc
    if c.shape != (ndim,) or c.dtype.kind not in "iuf":
        raise InvalidInputError(f"center must be {ndim} numbers, got {center!r}")
    c = c.astype(np.float64)
    if not np.isfinite(c).all():
        raise InvalidInputError(f"center must be finite, got {c.tolist()}")
    r = _number(radius, "radius")
    if not np.isfinite(r):
        raise InvalidInputError(f"radius must be finite, got {r}")
    if r < 0:
        raise InvalidInputError(f"radius must be >= 0, got {r}")
    return BallRegion(c, r)


# --------------------------------------------------------------------------- public regions


class QueryRegion(ABC):
    """A region a query takes before it knows the store: made by :func:`box`, :func:`ball`
    or :func:`polygon`, and checked against the store's axes when the query runs.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> region = zv.ball([0.0, 0.0], 2.0)
    >>> isinstance(region, zv.QueryRegion)
    True
    """

    @abstractmethod
    def resolve(self, ndim: int, axis_names: Sequence[str]) -> Region:
        """The checked :class:`Region` of this region in a store of ``ndim`` axes.

        Raises
        ------
        InvalidInputError
            When the region does not fit the store's axes, or is malformed.

        Examples
        --------
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> region = zv.box([0, 0], [10, 5]).resolve(2, ("x", "y"))
        >>> region.contains_points(np.array([[1.0, 1.0], [1.0, 6.0]]))
        array([ True, False])
        """


@dataclass(frozen=True)
class _Box(QueryRegion):
    lo: tuple[Any, ...]
    hi: tuple[Any, ...]

    def resolve(self, ndim: int, axis_names: Sequence[str]) -> Region:
        return box_region((self.lo, self.hi), ndim)


@dataclass(frozen=True)
class _Ball(QueryRegion):
    center: tuple[Any, ...]
    radius: Any

    def resolve(self, ndim: int, axis_names: Sequence[str]) -> Region:
        return ball_region(self.center, self.radius, ndim)


@dataclass(frozen=True)
class _Polygon(QueryRegion):
    shape: Any
    plane: Sequence[Any]
    ranges: Mapping[Any, Any] | None

    def resolve(self, ndim: int, axis_names: Sequence[str]) -> Region:
        return polygon_region(
            self.shape, ndim, plane=self.plane, ranges=self.ranges, axis_names=axis_names
        )


def _row(values: Any) -> tuple[Any, ...]:
    """``values`` as a tuple when it is a sequence or a 1-d array (kept as is otherwise, to
    be refused with the store's number of axes in the message)."""
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return tuple(values.tolist())
    if isinstance(values, Sequence) and not isinstance(values, str | bytes):
        return tuple(values)
    return (values,)


def box(lo: Any, hi: Any) -> QueryRegion:
    """The half-open box ``lo <= p < hi`` (spec §8.1), for :meth:`VectorStore.query`.

    The same as giving ``(lo, hi)`` to ``query``; ``±inf`` leaves an axis unbounded.

    Parameters
    ----------
    lo, hi
        ``D`` numbers each, ``lo <= hi`` on every axis (checked when the query runs).

    Returns
    -------
    QueryRegion
        The box, for ``store.query(...)`` or ``store.to_dask(...)``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [2.0, 2.0], [5.0, 5.0]], chunk_shape=4.0)
    >>> zv.open(path).query(zv.box([0, 0], [2, 2])).positions.tolist()
    [[1.0, 1.0]]
    """
    return _Box(_row(lo), _row(hi))


def ball(center: Any, radius: Any) -> QueryRegion:
    """The closed ball ``|p - center| <= radius``, for :meth:`VectorStore.query`.

    A vertex ``p`` is inside when ``sum_d (p[d] - center[d])**2 <= radius**2``, each
    difference, square and partial sum rounded to float64, summed in axis order.

    Parameters
    ----------
    center
        ``D`` finite numbers (checked against the store's axes when the query runs).
    radius
        A finite number ``>= 0`` (0 keeps the vertices at ``center``).

    Returns
    -------
    QueryRegion
        The ball, for ``store.query(...)``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]], chunk_shape=4.0)
    >>> zv.open(path).query(zv.ball([0, 0], 5)).positions.tolist()
    [[0.0, 0.0], [3.0, 4.0]]
    """
    return _Ball(_row(center), radius)


def polygon(
    shape: Any, *, plane: Sequence[Any] = (0, 1), ranges: Mapping[Any, Any] | None = None
) -> QueryRegion:
    """A polygon in a plane of two axes, times half-open ranges on the others.

    A vertex ``p`` is inside when ``(p[i], p[j])``, its coordinates on the two ``plane``
    axes, lies in the *closed* polygon (interior or boundary, as ``shapely.intersects_xy``
    decides, in float64), and ``lo <= p[d] < hi`` for every range. A shapely ``Polygon``
    or ``MultiPolygon`` given to :meth:`VectorStore.query` as it is means
    ``polygon(shape)``: the first two axes, no range.

    Parameters
    ----------
    shape
        A shapely ``Polygon`` or ``MultiPolygon`` (holes allowed; valid and non-empty; a z
        coordinate is ignored), or ``(n, 2)`` vertex coordinates.
    plane
        The axes of the polygon's x and y, by name (``("x", "z")``) or index (``(0, 2)``).
    ranges
        ``{axis: (lo, hi)}`` for axes outside the plane, by name or index; an axis not
        given, and a ``None`` or infinite bound, is unbounded.

    Returns
    -------
    QueryRegion
        The region, for ``store.query(...)``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1.0, 1.0], [1.0, 1.0, 9.0], [8.0, 1.0, 1.0]], chunk_shape=4.0)
    >>> triangle = zv.polygon([(0, 0), (4, 0), (0, 4)], ranges={"z": (0, 5)})
    >>> zv.open(path).query(triangle).positions.tolist()
    [[1.0, 1.0, 1.0]]
    """
    return _Polygon(shape, plane, ranges)


def as_region(region: Any, ndim: int, axis_names: Sequence[str]) -> Region:
    """The checked :class:`Region` of what a query was given.

    Parameters
    ----------
    region
        A :class:`QueryRegion` (:func:`box`, :func:`ball`, :func:`polygon`), a shapely
        ``Polygon`` or ``MultiPolygon`` (in the first two axes), or a box ``(lo, hi)``.
    ndim, axis_names
        The store's number of axes and their names.

    Raises
    ------
    InvalidInputError
        When the region is malformed or does not fit the store's axes (another shapely
        geometry than a polygon is refused, naming what to give).
    """
    if type(region) is tuple and len(region) == 2:
        lo, hi = region
        if _plain_bounds(lo, hi, ndim):  # what parse_bbox accepts as is, checked in one step
            return BoxRegion(lo.copy(), hi.copy())
    if isinstance(region, QueryRegion):
        return region.resolve(ndim, axis_names)
    if isinstance(region, shapely.Geometry):
        return polygon_region(region, ndim, axis_names=axis_names)
    return box_region(region, ndim)
