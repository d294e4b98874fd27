"""QueryResult.plot: what is drawn, how it looks on a PNG, and its errors."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from typing import Any

import matplotlib as mpl

mpl.use("Agg")  # no display in tests; set here, never by the library

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import LineCollection, PathCollection, PolyCollection
from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

import zarr_vectors as zv
from tests.result import result_cases as cases
from zarr_vectors.errors import InvalidInputError, MissingDependencyError


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def streamline_query() -> zv.QueryResult:
    return cases.streamlines(m=40).open().query(([14, 14, 14], [26, 26, 26]))


@pytest.fixture(scope="module")
def mesh_query() -> zv.QueryResult:
    return cases.meshes().open().query(([-1, -1, -1], [40, 40, 40]))


def _png(ax: Any, figsize: tuple[float, float], dpi: int) -> np.ndarray:
    ax.figure.set_size_inches(*figsize)
    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="png", dpi=dpi)
    buffer.seek(0)
    return np.asarray(plt.imread(buffer, format="png"))


def _check_picture(ax: Any) -> None:
    """A 4 x 3 inch figure at 50 dpi is 200 x 150 pixels, drawn in several colours."""
    image = _png(ax, (4, 3), 50)
    assert image.shape[:2] == (150, 200)
    rgb = (image[..., :3] * 255).round().astype(np.uint8).reshape(-1, 3)
    background = np.all(rgb >= 250, axis=1)
    assert (~background).sum() > 2000
    coloured = rgb[np.ptp(rgb.astype(int), axis=1) > 40]  # not a shade of grey
    assert len(np.unique(coloured, axis=0)) >= 10


def _segments(collection: Any) -> list[np.ndarray]:
    if isinstance(collection, Line3DCollection):
        return [np.asarray(s) for s in collection._segments3d]
    return [np.asarray(s) for s in collection.get_segments()]


def _brute_segments(result: zv.QueryResult, cols: list[int]) -> np.ndarray:
    assert result.offsets is not None
    pairs = [
        (i, i + 1)
        for s, e in zip(result.offsets[:-1], result.offsets[1:], strict=True)
        for i in range(s, e - 1)
    ]
    return result.positions[np.asarray(pairs)][:, :, cols]


def test_streamlines_in_3d(streamline_query: zv.QueryResult) -> None:
    ax = streamline_query.plot(color_by="fa")
    assert ax.name == "3d"
    (collection,) = [c for c in ax.collections if isinstance(c, Line3DCollection)]
    got = np.stack(_segments(collection))
    np.testing.assert_allclose(got, _brute_segments(streamline_query, [0, 1, 2]))
    fa = streamline_query.attributes["fa"]
    assert streamline_query.offsets is not None
    np.testing.assert_allclose(
        collection.get_array(),
        [
            (fa[i] + fa[i + 1]) / 2
            for s, e in zip(
                streamline_query.offsets[:-1], streamline_query.offsets[1:], strict=True
            )
            for i in range(s, e - 1)
        ],
    )
    assert ax.get_xlabel() == "x (micrometer)"
    assert ax.get_zlabel() == "z (micrometer)"
    assert len(ax.figure.axes) == 2  # the colorbar
    assert ax.figure.axes[1].get_ylabel() == "fa"
    _check_picture(ax)


def test_streamlines_projected_on_two_axes(streamline_query: zv.QueryResult) -> None:
    ax = streamline_query.plot(axes=("z", "x"), color_by="weight")
    assert ax.name != "3d"
    (collection,) = ax.collections
    assert isinstance(collection, LineCollection)
    expected = _brute_segments(streamline_query, [2, 0])
    got = np.stack(_segments(collection))
    # painted from low to high y (the axis left out), each segment once
    depth = _brute_segments(streamline_query, [1]).mean(axis=(1, 2))
    np.testing.assert_allclose(got, expected[np.argsort(depth, kind="stable")])
    weight = streamline_query.object_attributes["weight"]
    assert streamline_query.offsets is not None
    per_segment = np.repeat(weight, np.maximum(np.diff(streamline_query.offsets) - 1, 0))
    np.testing.assert_allclose(
        collection.get_array(), per_segment[np.argsort(depth, kind="stable")]
    )
    assert ax.get_aspect() == 1.0
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("z (micrometer)", "x (micrometer)")
    _check_picture(ax)


@pytest.mark.parametrize("axes", [None, (0, 1)])
def test_mesh(mesh_query: zv.QueryResult, axes: Any) -> None:
    ax = mesh_query.plot(axes=axes, color_by="quality")
    (collection,) = ax.collections
    assert isinstance(collection, Poly3DCollection if axes is None else PolyCollection)
    assert mesh_query.faces is not None
    assert len(collection.get_array()) == mesh_query.faces.shape[0]
    np.testing.assert_allclose(
        np.sort(collection.get_array()), np.sort(mesh_query.link_attributes["quality"])
    )
    _check_picture(ax)


def test_mesh_in_one_colour_is_shaded(mesh_query: zv.QueryResult) -> None:
    ax = mesh_query.plot()
    assert len(ax.figure.axes) == 1  # no colorbar without color_by
    _check_picture(ax)


def test_points_coloured_by_an_attribute() -> None:
    result = cases.points().open().read()
    ax = result.plot(axes=(0, 1), color_by="intensity")
    (scatter,) = ax.collections
    assert isinstance(scatter, PathCollection)
    order = np.argsort(result.positions[:, 2], kind="stable")
    np.testing.assert_allclose(scatter.get_offsets(), result.positions[order][:, :2])
    np.testing.assert_allclose(scatter.get_array(), result.attributes["intensity"][order])
    assert scatter.get_clim() == pytest.approx(
        (result.attributes["intensity"].min(), result.attributes["intensity"].max())
    )
    assert "showing" not in ax.get_title()


def test_large_point_clouds_are_sampled_and_the_title_says_so() -> None:
    result = cases.points().open().read()
    ax = result.plot(axes=(0, 1), max_points=100)
    (scatter,) = ax.collections
    drawn = np.asarray(scatter.get_offsets())
    assert drawn.shape == (100, 2)
    assert "showing 100 of 600 points (random sample)" in ax.get_title()
    rows = {tuple(p) for p in result.positions[:, :2].astype(np.float64).tolist()}
    assert {tuple(p) for p in drawn.tolist()} <= rows
    assert len({tuple(p) for p in drawn.tolist()}) == 100  # no point drawn twice


def test_large_polyline_results_are_sampled_by_whole_objects(
    streamline_query: zv.QueryResult,
) -> None:
    ax = streamline_query.plot(axes=(0, 1), max_points=60)
    (collection,) = ax.collections
    drawn = {tuple(np.round(s, 9).ravel()) for s in _segments(collection)}
    assert 0 < len(collection.get_segments()) <= 60
    assert streamline_query.offsets is not None
    whole = 0
    for s, e in zip(streamline_query.offsets[:-1], streamline_query.offsets[1:], strict=True):
        segments = {
            tuple(np.round(streamline_query.positions[[i, i + 1]][:, :2], 9).ravel())
            for i in range(s, e - 1)
        }
        shown = segments & drawn
        assert not shown or shown == segments  # an object is drawn whole or not at all
        whole += bool(shown)
    assert f"showing {whole} of" in ax.get_title()


@pytest.mark.parametrize("kind", ["graph", "skeleton"])
def test_graph_edges_are_the_segments(kind: str) -> None:
    result = cases.BUILDERS[kind]().open().read()
    ax = result.plot(axes=(0, 1), color_by="object_id")
    (collection,) = ax.collections
    assert result.edges is not None
    assert result.offsets is not None
    expected = result.positions[result.edges][:, :, :2]
    depth = result.positions[result.edges][:, :, 2].mean(axis=1)
    order = np.argsort(depth, kind="stable")
    np.testing.assert_allclose(np.stack(_segments(collection)), expected[order])
    assert result.object_ids is not None
    owner = np.searchsorted(result.offsets, result.edges[:, 0], side="right") - 1
    np.testing.assert_array_equal(collection.get_array(), result.object_ids[owner][order])


def test_draws_into_a_given_axes() -> None:
    result = cases.meshes(dim=2).open().read()
    _figure, ax = plt.subplots()
    assert result.plot(ax=ax) is ax
    with pytest.raises(InvalidInputError, match="2-D axes"):
        cases.points().open().read().plot(ax=ax, axes=(0, 1, 2))
    three = plt.figure().add_subplot(projection="3d")
    with pytest.raises(InvalidInputError, match="3-D axes cannot show 2-D data"):
        result.plot(ax=three)


@pytest.mark.parametrize(
    ("color_by", "message"),
    [("nope", "not an attribute"), ("rgb", "one column"), ("object_id", None)],
)
def test_color_by_errors(color_by: str, message: str | None) -> None:
    result = cases.points().open().read()
    if message is None:  # points written with object ids: colouring by them works
        result.plot(color_by=color_by)
        return
    with pytest.raises(InvalidInputError, match=message):
        result.plot(color_by=color_by)


def test_bad_max_points() -> None:
    with pytest.raises(InvalidInputError, match="max_points"):
        zv.QueryResult(np.zeros((1, 2))).plot(max_points=0)


def test_empty_result_plots_empty_axes() -> None:
    empty = zv.QueryResult.empty(2, np.float32, {}, None)
    ax = empty.plot()
    assert ax.get_title() == "point_cloud: 0 vertices"


def test_plot_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingDependencyError, match=r"zarr-vectors\[plot\]"):
        zv.QueryResult(np.zeros((1, 2))).plot()


def test_a_clipped_streamline_is_drawn_without_the_segments_across_its_gaps() -> None:
    clipped = cases.streamlines(m=40).open().query(([14, 14, 14], [26, 26, 26]), clip=True)
    assert clipped.edges is not None
    assert clipped.offsets is not None
    chained = sum(max(int(n) - 1, 0) for n in np.diff(clipped.offsets))
    assert len(clipped.edges) < chained  # some streamline leaves the box and comes back
    (collection,) = clipped.plot().collections
    got = np.stack(_segments(collection))
    np.testing.assert_allclose(got, clipped.positions[clipped.edges])
