"""QueryResult: its repr and HTML, and its conversions to shapely, a table and pandas."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.result import result_cases as cases
from zarr_vectors.display import format_vector
from zarr_vectors.errors import InvalidInputError, MissingDependencyError


@pytest.fixture(scope="module", params=sorted(cases.BUILDERS))
def kind_and_result(request: pytest.FixtureRequest) -> tuple[str, zv.QueryResult]:
    return request.param, cases.BUILDERS[request.param]().open().read()


# -- repr and HTML ---------------------------------------------------------------------------


def test_repr_shows_kind_counts_bounds_and_attributes() -> None:
    written = cases.streamlines()
    result = written.open().read()
    text = repr(result)
    assert text.startswith("<QueryResult streamline, 3-D (x, y, z in micrometer)")
    assert f"{len(written.offsets) - 1} objects" in text
    assert f"{written.positions.shape[0]} vertices (float64)" in text
    lo, hi = written.positions.min(axis=0), written.positions.max(axis=0)
    assert f"bounds {format_vector(lo)} .. {format_vector(hi)}" in text
    assert "vertex attributes: fa float64" in text
    assert "object attributes: tag int16, weight float32" in text


def test_repr_of_points_with_a_vector_attribute_and_object_ids() -> None:
    written = cases.points()
    text = repr(written.open().read())
    assert "point_cloud" in text
    assert f"{written.positions.shape[0]:,} vertices (float32), with object ids" in text
    assert "bounds [0.5, 0.75, 0.25] .. [99.5, 98.75, 97]" in text
    assert "intensity float32, rgb uint8[3]" in text


def test_repr_of_a_mesh_counts_faces_and_face_attributes() -> None:
    written = cases.meshes()
    text = repr(written.open().read())
    assert written.links is not None
    assert f"{written.links.shape[0]} faces" in text
    assert "link attributes: quality float32" in text


def test_empty_result_repr_and_html() -> None:
    empty = zv.QueryResult.empty(2, np.float32, {"a": (np.dtype("int8"), ())}, None)
    assert "0 vertices" in repr(empty)
    assert "empty" in repr(empty)
    assert "<td" in empty._repr_html_()


def test_html_lists_counts_axes_bounds_and_attribute_dtypes() -> None:
    written = cases.meshes()
    result = written.open().read()
    page = result._repr_html_()
    assert page.startswith("<table")
    assert page.rstrip().endswith("</table>")
    rows = cases.html_rows(page)
    assert ("QueryResult: mesh, 3-D",) in rows
    assert written.links is not None
    assert ("faces", str(written.links.shape[0])) in rows
    assert ("objects", "2") in rows
    assert ("vertices", f"{written.positions.shape[0]} (float64)") in rows
    for d, name in enumerate("xyz"):
        lo = f"{written.positions[:, d].min():g}"
        hi = f"{written.positions[:, d].max():g}"
        assert (name, "micrometer", lo, hi) in rows
    assert ("vertex", "height", "float64") in rows
    assert ("link", "quality", "float32") in rows


def test_html_escapes_names() -> None:
    evil = "<script>alert('x')</script>"
    result = zv.QueryResult(
        positions=np.zeros((2, 2), np.float32),
        attributes={evil: np.zeros(2)},
        axis_names=("x", "<b>y</b>"),
        axis_units=("m", "m"),
    )
    page = result._repr_html_()
    assert "<script" not in page
    assert "<b>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "&lt;b&gt;y&lt;/b&gt;" in page


def test_store_results_carry_axis_names_units_and_kind() -> None:
    store = cases.skeletons().open()
    for result in (store.read(), store.read_objects([1]), store.query(([0] * 3, [20] * 3))):
        assert result.axis_names == ("x", "y", "z")
        assert result.axis_units == ("micrometer",) * 3
        assert result.kind == "skeleton"


def test_kind_is_inferred_when_not_given() -> None:
    pos = np.zeros((3, 2))
    assert zv.QueryResult(pos).kind == "point_cloud"
    assert zv.QueryResult(pos, offsets=np.array([0, 3])).kind == "polyline"
    assert zv.QueryResult(pos, offsets=np.array([0, 3]), edges=np.zeros((0, 2))).kind == "graph"
    assert zv.QueryResult(pos, offsets=np.array([0, 3]), faces=np.zeros((0, 3))).kind == "mesh"
    assert zv.QueryResult(pos).coordinate_names == ("x", "y")


# -- shapely ---------------------------------------------------------------------------------


def _coords(geometry: Any) -> np.ndarray:
    return shapely.get_coordinates(geometry, include_z=shapely.has_z(geometry))


def _expected(result: zv.QueryResult, cols: list[int]) -> list[list[np.ndarray]]:
    """Brute force: per geometry, the coordinate arrays of its parts, built with loops."""
    p = result.positions[:, cols].astype(np.float64)
    kind = result.kind
    if kind == "point_cloud":
        return [[p[i : i + 1]] for i in range(len(result))]
    if kind == "mesh":
        assert result.faces is not None
        return [[p[[a, b, c, a]]] for a, b, c in result.faces]
    assert result.offsets is not None
    objects = list(zip(result.offsets[:-1], result.offsets[1:], strict=True))
    if kind in ("polyline", "streamline") and result.edges is None:
        return [[p[s:e]] if e - s >= 2 else [] for s, e in objects]
    if kind in ("polyline", "streamline"):
        return [_pieces(p, result.edges, s, e) for s, e in objects]
    assert result.edges is not None
    return [[p[[u, v]] for u, v in result.edges if s <= u < e] for s, e in objects]


def _pieces(p: np.ndarray, edges: np.ndarray, start: int, end: int) -> list[np.ndarray]:
    """The maximal chains of rows ``start:end`` joined by an edge ``[r, r + 1]``, with loops."""
    linked = {int(r) for r, _ in edges}
    pieces, current = [], [start] if end > start else []
    for r in range(start + 1, end):
        if r - 1 in linked:
            current.append(r)
        else:
            pieces.append(current)
            current = [r]
    pieces.append(current)
    return [p[rows] for rows in pieces if len(rows) >= 2]


def _parts(geometry: Any) -> list[np.ndarray]:
    if geometry.is_empty:
        return []
    if geometry.geom_type == "MultiLineString":
        return [_coords(g) for g in geometry.geoms]
    if geometry.geom_type == "Polygon":
        return [_coords(geometry.exterior)]
    return [_coords(geometry)]


def _check_shapely(result: zv.QueryResult, cols: list[int], **kwargs: Any) -> None:
    geometries = result.to_shapely(**kwargs)
    expected = _expected(result, cols)
    assert geometries.dtype == object
    assert geometries.shape == (len(expected),)
    for geometry, parts in zip(geometries, expected, strict=True):
        got = _parts(geometry)
        assert len(got) == len(parts)
        for a, b in zip(got, parts, strict=True):
            np.testing.assert_array_equal(a, b)


def test_to_shapely_equals_a_brute_force_construction(
    kind_and_result: tuple[str, zv.QueryResult],
) -> None:
    kind, result = kind_and_result
    cols = [0, 1] if kind == "mesh" else [0, 1, 2]
    _check_shapely(result, cols)
    types = {
        "point_cloud": "Point",
        "streamline": "LineString",
        "graph": "MultiLineString",
        "skeleton": "MultiLineString",
        "mesh": "Polygon",
    }
    assert {g.geom_type for g in result.to_shapely()} == {types[kind]}


@pytest.mark.parametrize("axes", [(2, 0), ("z", "y"), (1, 2, 0)])
def test_to_shapely_projects_on_the_axes_asked(
    kind_and_result: tuple[str, zv.QueryResult], axes: tuple[Any, ...]
) -> None:
    _, result = kind_and_result
    names = list(result.coordinate_names)
    cols = [names.index(a) if isinstance(a, str) else a for a in axes]
    _check_shapely(result, cols, axes=axes)


def test_to_shapely_of_a_clipped_query_keeps_short_objects_empty() -> None:
    store = cases.streamlines().open()
    clipped = store.query(([15, 15, 15], [20, 20, 20]), clip=True)
    assert clipped.offsets is not None
    assert np.any(np.diff(clipped.offsets) < 2)  # the case under test occurs
    _check_shapely(clipped, [0, 1, 2])


def test_to_shapely_of_a_clipped_polyline_is_not_joined_across_the_gap(tmp_path: Path) -> None:
    line = np.array([[1.0, 1.0], [2.0, 1.0], [9.0, 1.0], [1.0, 2.0], [2.0, 2.0], [3.0, 3.0]])
    zv.write_polylines(tmp_path / "a.zarrvectors", [line, line[:2], line[2:4]], chunk_shape=4.0)
    clipped = zv.open(tmp_path / "a.zarrvectors").query(([0, 0], [5, 5]), clip=True)
    got = clipped.to_shapely()
    assert [g.wkt for g in got] == [
        "MULTILINESTRING ((1 1, 2 1), (1 2, 2 2, 3 3))",
        "LINESTRING (1 1, 2 1)",
        "LINESTRING EMPTY",
    ]
    _check_shapely(clipped, [0, 1])


def test_to_shapely_of_2d_and_4d_data() -> None:
    flat = cases.meshes(dim=2).open().read()
    _check_shapely(flat, [0, 1])
    four = zv.QueryResult(np.arange(12.0).reshape(3, 4))
    with pytest.raises(InvalidInputError, match="axes="):
        four.to_shapely()
    _check_shapely(four, [3, 1, 0], axes=("w", "y", "x"))


@pytest.mark.parametrize(
    ("axes", "message"),
    [((0,), "2 or 3"), ((0, 0), "distinct"), ((0, 5), "out of range"), (("q", "x"), "no axis")],
)
def test_to_shapely_rejects_bad_axes(axes: Any, message: str) -> None:
    result = zv.QueryResult(np.zeros((2, 3)))
    with pytest.raises(InvalidInputError, match=message):
        result.to_shapely(axes=axes)


@st.composite
def _object_results(draw: st.DrawFn) -> zv.QueryResult:
    """Hand-made polyline or graph results, objects of 0 to 5 vertices."""
    counts = draw(st.lists(st.integers(0, 5), min_size=0, max_size=8))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    n = int(offsets[-1])
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    positions = rng.normal(size=(n, draw(st.sampled_from([2, 3]))))
    if draw(st.booleans()):
        return zv.QueryResult(positions, offsets=offsets, object_ids=np.arange(len(counts)))
    edges = [
        (s + int(rng.integers(0, e - s)), s + int(rng.integers(0, e - s)))
        for s, e in itertools.pairwise(offsets)
        for _ in range(int(rng.integers(0, 4)))
        if e > s
    ]
    rng.shuffle(edges)  # edges of different objects interleaved
    return zv.QueryResult(
        positions,
        offsets=offsets,
        object_ids=np.arange(len(counts)),
        edges=np.asarray(edges, dtype=np.int64).reshape(-1, 2),
    )


@settings(max_examples=40, deadline=None)
@given(_object_results())
def test_to_shapely_of_any_polyline_or_graph_result(result: zv.QueryResult) -> None:
    _check_shapely(result, list(range(result.ndim)))


# -- tables ----------------------------------------------------------------------------------


def test_to_table_columns_equal_the_arrays() -> None:
    result = cases.points().open().read()
    table = result.to_table()
    assert list(table) == ["x", "y", "z", "intensity", "rgb[0]", "rgb[1]", "rgb[2]", "object_id"]
    for d, axis in enumerate("xyz"):
        np.testing.assert_array_equal(table[axis], result.positions[:, d])
    np.testing.assert_array_equal(table["intensity"], result.attributes["intensity"])
    for k in range(3):
        np.testing.assert_array_equal(table[f"rgb[{k}]"], result.attributes["rgb"][:, k])
        assert table[f"rgb[{k}]"].dtype == np.uint8
    assert result.vertex_object_ids is not None
    np.testing.assert_array_equal(table["object_id"], result.vertex_object_ids)


def test_to_table_of_objects_has_the_object_of_each_vertex() -> None:
    written = cases.streamlines()
    result = written.open().read_objects([3, 0])
    table = result.to_table()
    assert list(table) == ["x", "y", "z", "fa", "object_id"]
    assert written.offsets is not None
    sizes = np.diff(written.offsets)
    expected = np.repeat([3, 0], [sizes[3], sizes[0]])
    np.testing.assert_array_equal(table["object_id"], expected)


def test_to_table_names_columns_of_higher_rank_attributes() -> None:
    result = zv.QueryResult(
        np.zeros((2, 2)), attributes={"m": np.arange(8).reshape(2, 2, 2)}, axis_names=("u", "v")
    )
    table = result.to_table()
    assert list(table) == ["u", "v", "m[0,0]", "m[0,1]", "m[1,0]", "m[1,1]"]
    np.testing.assert_array_equal(table["m[1,0]"], [2, 6])


def test_to_table_refuses_clashing_names() -> None:
    result = zv.QueryResult(np.zeros((2, 2)), attributes={"x": np.zeros(2)})
    with pytest.raises(InvalidInputError, match="'x'"):
        result.to_table()


def test_to_pandas_equals_the_table() -> None:
    result = cases.meshes().open().read()
    frame = result.to_pandas()
    table = result.to_table()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == list(table)
    for name, values in table.items():
        np.testing.assert_array_equal(frame[name].to_numpy(), values)
        assert frame[name].dtype == values.dtype


def test_to_pandas_without_pandas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    result = zv.QueryResult(np.zeros((1, 2)))
    with pytest.raises(MissingDependencyError, match=r"zarr-vectors\[pandas\]"):
        result.to_pandas()
