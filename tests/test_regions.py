"""Regions: the planner's answers are sound and tight, and user input is checked.

``meets_boxes`` may say False only for boxes without a point in the region, and
``covers_boxes`` True only for boxes all of whose points are in it; both are checked on
points sampled in each box (corners, lower faces, points just below the open upper faces)
with ``contains_points``, whose own exactness is checked against plain numpy and shapely.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.query.regions import (
    BallRegion,
    BoxRegion,
    PolygonRegion,
    Region,
    as_region,
    ball_region,
    box_region,
    polygon_region,
)

STEP = 2.5  # coordinates snapped to this grid land on box faces and polygon edges


@st.composite
def polygons(draw: st.DrawFn) -> Any:
    """Star polygons and convex hulls of random points, vertices often on the STEP grid."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = draw(st.integers(3, 9))
    center = rng.uniform(-20, 20, 2)
    if draw(st.booleans()):
        angles = np.sort(rng.uniform(0, 2 * np.pi, k))
        radii = rng.uniform(2, 25, k)
        points = center + radii[:, None] * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    else:
        points = center + rng.uniform(-25, 25, (k + 3, 2))
    if draw(st.booleans()):
        points = np.round(points / STEP) * STEP
    polygon = shapely.Polygon(points)
    if draw(st.booleans()):
        polygon = shapely.convex_hull(shapely.MultiPoint(points))
    if not isinstance(polygon, shapely.Polygon) or not polygon.is_valid or polygon.area <= 0:
        polygon = shapely.box(*(center - 5), *(center + 5))
    return polygon


def _snapped(rng: np.random.Generator, shape: tuple[int, ...], snap: bool) -> np.ndarray:
    values = rng.uniform(-40, 40, shape)
    return np.round(values / STEP) * STEP if snap else values


def _boxes(rng: np.random.Generator, ndim: int, snap: bool) -> tuple[np.ndarray, np.ndarray]:
    lo = _snapped(rng, (60, ndim), snap)
    size = np.maximum(_snapped(rng, (60, ndim), snap) / 2 + 20, STEP)
    return lo, lo + size


def _samples(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Points of the half-open box: a lattice through the lower corner, and the points
    one ulp below the upper faces."""
    below = np.nextafter(hi, -np.inf)
    ticks = [np.unique([lo[d], lo[d] + (hi[d] - lo[d]) / 3, below[d]]) for d in range(len(lo))]
    return np.array(list(itertools.product(*ticks)), dtype=np.float64)


def _check_sound(region: Region, lo: np.ndarray, hi: np.ndarray) -> tuple[int, int]:
    meets, covers = region.meets_boxes(lo, hi), region.covers_boxes(lo, hi)
    for i in range(lo.shape[0]):
        inside = region.contains_points(_samples(lo[i], hi[i]))
        assert meets[i] or not inside.any(), (lo[i], hi[i])
        assert not covers[i] or inside.all(), (lo[i], hi[i])
    return int(meets.sum()), int(covers.sum())


def _plane_and_ranges(
    rng: np.random.Generator, ndim: int, snap: bool
) -> tuple[tuple[int, int], dict[int, tuple[float, float]]]:
    plane = tuple(int(a) for a in rng.choice(ndim, 2, replace=False))
    ranges = {}
    for d in sorted(set(range(ndim)) - set(plane)):
        if rng.random() < 0.7:
            a, b = np.sort(_snapped(rng, (2,), snap))
            ranges[d] = (float(a), float(b) + STEP)
    return (plane[0], plane[1]), ranges


# -- soundness and tightness -----------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    polygon=polygons(),
    ndim=st.integers(2, 4),
    snap=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_polygon_answers_are_sound_and_tight(
    polygon: Any, ndim: int, snap: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    plane, ranges = _plane_and_ranges(rng, ndim, snap)
    region = polygon_region(polygon, ndim, plane=plane, ranges=ranges)
    lo, hi = _boxes(rng, ndim, snap)
    _check_sound(region, lo, hi)
    # tight: a box meeting every range whose closed rectangle is clearly inside (outside)
    # the polygon is covered (not met)
    i, j = plane
    rects = shapely.box(lo[:, i], lo[:, j], hi[:, i], hi[:, j])
    in_ranges = np.ones(len(lo), bool)
    for d, (a, b) in ranges.items():
        in_ranges &= (a <= lo[:, d]) & (hi[:, d] <= b)
    clearly_in = shapely.covers(polygon, shapely.buffer(rects, 1e-6, join_style="mitre"))
    assert np.all(region.covers_boxes(lo, hi)[in_ranges & clearly_in])
    clearly_out = shapely.distance(polygon, rects) > 1e-6
    assert not np.any(region.meets_boxes(lo, hi)[clearly_out])


@settings(max_examples=40, deadline=None)
@given(ndim=st.integers(2, 4), snap=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_ball_answers_are_sound_and_tight(ndim: int, snap: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    center = _snapped(rng, (ndim,), snap)
    radius = float(np.round(rng.uniform(0, 40) / STEP) * STEP if snap else rng.uniform(0, 40))
    region = ball_region(center, radius, ndim)
    lo, hi = _boxes(rng, ndim, snap)
    _check_sound(region, lo, hi)
    # tight, against the distances from the centre to the box and to its farthest corner
    gap = np.maximum(np.maximum(lo - center, center - hi), 0)
    near = np.sqrt((gap**2).sum(axis=1))
    far = np.sqrt((np.maximum(np.abs(lo - center), np.abs(hi - center)) ** 2).sum(axis=1))
    meets, covers = region.meets_boxes(lo, hi), region.covers_boxes(lo, hi)
    assert np.all(meets[near < radius * (1 - 1e-9)])
    assert not np.any(meets[near > radius * (1 + 1e-9) + 1e-9])
    assert np.all(covers[far < radius * (1 - 1e-9)])
    assert not np.any(covers[far > radius * (1 + 1e-9) + 1e-9])


@settings(max_examples=25, deadline=None)
@given(ndim=st.integers(2, 4), snap=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_box_answers_are_exact(ndim: int, snap: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = np.sort(_snapped(rng, (2, ndim), snap), axis=0)
    region = box_region((a, b + STEP), ndim)
    lo, hi = _boxes(rng, ndim, snap)
    _check_sound(region, lo, hi)
    overlap = np.all((lo < b + STEP) & (a < hi), axis=1)
    inside = np.all((a <= lo) & (hi <= b + STEP), axis=1)
    np.testing.assert_array_equal(region.meets_boxes(lo, hi), overlap)
    np.testing.assert_array_equal(region.covers_boxes(lo, hi), inside)


def test_the_planner_sees_both_answers() -> None:
    """The random boxes above are not all met, nor all missed (the checks are not vacuous)."""
    rng = np.random.default_rng(1)
    region = ball_region([0.0, 0.0, 0.0], 30.0, 3)
    lo, hi = _boxes(rng, 3, True)
    meets, covers = _check_sound(region, lo, hi)
    assert 0 < meets < len(lo)
    assert 0 < covers < meets


# -- exact membership ---------------------------------------------------------------


def test_polygon_membership_is_closed_polygon_times_half_open_ranges() -> None:
    square = shapely.box(0, 0, 10, 10)
    region = polygon_region(square, 3, plane=("x", "z"), ranges={"y": (0, 5)}, axis_names="xyz")
    past = float(np.nextafter(np.float32(10), np.float32(11)))
    points = np.array(
        [
            [0, 0, 0],  # a corner of the polygon, on the range's lower bound
            [10, 4, 5],  # on an edge
            [5, 4.5, 10],  # on the top edge
            [5, 5, 5],  # on the range's upper bound: outside
            [past, 1, 5],  # just past an edge
            [5, -1e-6, 5],  # just below the range
        ]
    )
    expected = [True, True, True, False, False, False]
    np.testing.assert_array_equal(region.contains_points(points), expected)
    np.testing.assert_array_equal(region.contains_points(points.astype(np.float32)), expected)


def test_ball_membership_is_closed_and_in_float64() -> None:
    region = ball_region([0, 0, 0], 25, 3)
    on = np.array([[15.0, 20, 0], [0, 0, -25], [0, 7, 24], [25, 0, 0]])
    past = on * np.nextafter(1.0, 2.0)
    assert region.contains_points(on).all()
    assert not region.contains_points(past).any()
    assert region.contains_points(on.astype(np.float32)).all()
    zero = ball_region([1.5, 2.5], 0.0, 2)
    np.testing.assert_array_equal(
        zero.contains_points(np.array([[1.5, 2.5], [1.5, np.nextafter(2.5, 3)]])), [True, False]
    )


@settings(max_examples=20, deadline=None)
@given(polygon=polygons(), seed=st.integers(0, 2**32 - 1))
def test_contains_points_equals_plain_references(polygon: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    points = _snapped(rng, (3000, 3), True).astype(np.float32)
    points[:1000] = rng.uniform(-40, 40, (1000, 3))
    x, y, z = points.astype(np.float64).T
    region = polygon_region(polygon, 3, ranges={2: (-10.0, 12.5)})
    expected = shapely.intersects_xy(polygon, x, y) & (z >= -10) & (z < 12.5)
    np.testing.assert_array_equal(region.contains_points(points), expected)
    center, radius = rng.uniform(-10, 10, 3), 20.0
    d2 = (x - center[0]) ** 2 + (y - center[1]) ** 2 + (z - center[2]) ** 2
    np.testing.assert_array_equal(
        ball_region(center, radius, 3).contains_points(points), d2 <= radius**2
    )


# -- bins ------------------------------------------------------------------------------


def test_box_bins_of_chunks_equal_the_generic_plan_and_bins_meeting_box() -> None:
    rng = np.random.default_rng(3)
    chunk = np.array([40.0, 40.0, 20.0])
    bins = np.array([4, 2, 5])
    grid = ChunkGrid(chunk, chunk / bins, bins, np.array([-2, -1, 0]), np.array([6, 6, 6]))
    chunks = rng.integers(0, 6, (30, 3))
    for _ in range(20):
        lo = np.round(rng.uniform(-100, 150, 3) / 5) * 5
        box = BoxRegion(lo, lo + rng.integers(1, 20, 3) * 5.0)
        meets, covers = box.bins_of_chunks(grid, chunks)
        generic = Region.bins_of_chunks(box, grid, chunks)
        np.testing.assert_array_equal(meets, generic[0])
        np.testing.assert_array_equal(covers, generic[1])
        for i, c in enumerate(chunks):
            one = grid.bins_meeting_box(c, box.lo, box.hi)
            np.testing.assert_array_equal(meets[i], one[0])
            np.testing.assert_array_equal(covers[i], one[1])


# -- input checks ----------------------------------------------------------------------


def test_polygon_inputs() -> None:
    square = shapely.box(0, 0, 4, 4)
    as_list = polygon_region([(0, 0), (4, 0), (4, 4), (0, 4)], 2)
    assert isinstance(as_list, PolygonRegion)
    assert shapely.equals(as_list.polygon, square)
    multi = polygon_region(shapely.MultiPolygon([square, shapely.box(10, 10, 12, 12)]), 2)
    np.testing.assert_array_equal(
        multi.contains_points(np.array([[1.0, 1], [11, 11], [7, 7]])), [True, True, False]
    )
    hole = shapely.box(2, 2, 4, 4).exterior
    holed = polygon_region(shapely.Polygon([(0, 0), (9, 0), (9, 9), (0, 9)], [hole]), 2)
    np.testing.assert_array_equal(
        holed.contains_points(np.array([[3.0, 3], [2, 3], [1, 1], [6, 6]])),
        [False, True, True, True],  # the hole's edge is part of the (closed) polygon
    )
    with_z = polygon_region(shapely.Polygon([(0, 0, 5), (4, 0, 5), (0, 4, 5)]), 2)
    assert not shapely.has_z(with_z.polygon)
    polygon_region(square, 2)
    assert not shapely.is_prepared(square)  # the caller's polygon is left alone
    lo, hi = polygon_region(square, 3, ranges={2: (None, 3)}).bounding_box()
    np.testing.assert_array_equal(lo, [0, 0, -np.inf])
    np.testing.assert_array_equal(hi, [np.nextafter(4, 5), np.nextafter(4, 5), 3])


@pytest.mark.parametrize(
    ("polygon", "kwargs", "message"),
    [
        (shapely.Polygon(), {}, "empty"),
        ([(0, 0), (2, 2), (0, 2), (2, 0)], {}, "not valid"),
        ([(0, 0), (1, 1), (2, 2)], {}, "not valid"),
        ([(0, 0), (1, np.nan), (2, 0)], {}, "finite"),
        ([(0, 0), (1, 1)], {}, "n >= 3"),
        ([(0, 0, 0), (1, 0, 0), (0, 1, 0)], {}, "n >= 3"),
        ("square", {}, "vertex coordinates"),
        (shapely.LineString([(0, 0), (1, 1)]), {}, "LineString"),
        (shapely.box(0, 0, 1, 1), {"plane": ("x", "w")}, "unknown axis 'w'"),
        (shapely.box(0, 0, 1, 1), {"plane": (0, 3)}, "out of range"),
        (shapely.box(0, 0, 1, 1), {"plane": (1, 1)}, "must differ"),
        (shapely.box(0, 0, 1, 1), {"plane": "xy"}, "two axes"),
        (shapely.box(0, 0, 1, 1), {"plane": (0, True)}, "name or an index"),
        (shapely.box(0, 0, 1, 1), {"ranges": {"x": (0, 1)}}, "plane"),
        (shapely.box(0, 0, 1, 1), {"ranges": {"z": (2, 1)}}, "lo 2.0 > hi 1.0"),
        (shapely.box(0, 0, 1, 1), {"ranges": {"z": (np.nan, 1)}}, "NaN"),
        (shapely.box(0, 0, 1, 1), {"ranges": {"z": (0, 1), 2: (0, 1)}}, "two ranges"),
        (shapely.box(0, 0, 1, 1), {"ranges": {"z": 5}}, "must be \\(lo, hi\\)"),
        (shapely.box(0, 0, 1, 1), {"ranges": [("z", (0, 1))]}, "must map"),
        (shapely.box(0, 0, 1, 1), {"ranges": {"z": ("a", 1)}}, "must be a number"),
    ],
)
def test_bad_polygon_input(polygon: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        polygon_region(polygon, 3, axis_names=("x", "y", "z"), **kwargs)


def test_polygon_needs_two_axes() -> None:
    with pytest.raises(InvalidInputError, match="at least 2 axes"):
        polygon_region(shapely.box(0, 0, 1, 1), 1)


@pytest.mark.parametrize(
    ("center", "radius", "message"),
    [
        ([0, 0], 1.0, "3 numbers"),
        ([0, 0, np.nan], 1.0, "finite"),
        ([0, 0, np.inf], 1.0, "finite"),
        (["a", "b", "c"], 1.0, "3 numbers"),
        ([0, 0, 0], -1.0, ">= 0"),
        ([0, 0, 0], np.nan, "finite"),
        ([0, 0, 0], np.inf, "finite"),
        ([0, 0, 0], "1", "number"),
        ([0, 0, 0], True, "number"),
        ([0, 0, 0], [1.0], "number"),
    ],
)
def test_bad_ball_input(center: Any, radius: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        ball_region(center, radius, 3)


def test_ball_bounding_box_holds_the_ball() -> None:
    region = BallRegion(np.array([1e6, -3.0]), 7.0)
    lo, hi = region.bounding_box()
    assert np.all(lo <= [1e6 - 7, -10])
    assert np.all(hi > [1e6 + 7, 4])
    lo, hi = BallRegion(np.zeros(2), 0.0).bounding_box()
    assert np.all(lo < 0)
    assert np.all(hi > 1e-200)  # squares of 1e-200 underflow to 0
    assert BallRegion(np.zeros(2), 0.0).contains_points(np.full((1, 2), 1e-200)).all()


@pytest.mark.parametrize(
    "coords",
    [
        [("0", "0"), ("9", "0"), ("0", "9")],  # numpy would read these as numbers
        [(False, False), (True, False), (False, True)],  # and these as 0 and 1
        [(0, 0), (9, None), (0, 9)],
    ],
)
def test_polygon_coordinates_of_strings_or_bools_are_refused(coords: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"\(n, 2\) vertex coordinates, got"):
        polygon_region(coords, 3)


@pytest.mark.parametrize(
    "bbox", [(["0", "0", "0"], ["9", "9", "9"]), ([False] * 3, [True] * 3), ([0, 0, 0], None)]
)
def test_bbox_of_strings_or_bools_is_refused(bbox: Any) -> None:
    with pytest.raises(InvalidInputError, match="3 numbers each, got"):
        box_region(bbox, 3)


def test_a_plane_given_as_a_numpy_array_is_two_axes() -> None:
    square = shapely.box(0, 0, 4, 4)
    by_array = polygon_region(square, 3, plane=np.array([0, 2]))
    by_tuple = polygon_region(square, 3, plane=(0, 2))
    np.testing.assert_array_equal(by_array.bounding_box(), by_tuple.bounding_box())
    named = polygon_region(square, 3, plane=np.array(["x", "z"]), axis_names=("x", "y", "z"))
    np.testing.assert_array_equal(named.bounding_box(), by_tuple.bounding_box())


@given(
    st.lists(
        st.sampled_from([-np.inf, -1.0, 0.0, 0.5, 2.0, np.inf, np.nan]), min_size=6, max_size=6
    ),
    st.sampled_from([(3,), (2,), (3, 1)]),
)
@settings(max_examples=150, deadline=None)
def test_a_box_of_float64_arrays_is_taken_as_the_general_parse_takes_it(
    values: list[float], shape: tuple[int, ...]
) -> None:
    """as_region's step for ``(lo, hi)`` float64 arrays (the usual box) accepts and refuses
    exactly what parse_bbox does with the same box, with the same message, and keeps no
    reference to the caller's arrays."""
    size = int(np.prod(shape))
    lo = np.array(values[:size], dtype=np.float64).reshape(shape)
    hi = np.array(values[3 : 3 + size], dtype=np.float64).reshape(shape)
    try:
        expected: Any = box_region((lo, hi), 3)
    except InvalidInputError as exc:
        expected = str(exc)
    try:
        found: Any = as_region((lo, hi), 3, ("x", "y", "z"))
    except InvalidInputError as exc:
        found = str(exc)
    if isinstance(expected, str):
        assert found == expected
        return
    assert isinstance(found, BoxRegion)
    bounds = (expected.lo.tolist(), expected.hi.tolist())
    assert (found.lo.tolist(), found.hi.tolist()) == bounds
    lo[...], hi[...] = 7.0, 8.0  # the caller's arrays changed after the query began
    assert (found.lo.tolist(), found.hi.tolist()) == bounds
