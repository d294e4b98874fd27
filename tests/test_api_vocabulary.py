"""The read side's one vocabulary (issue 36, item 3): ``kind``, ``ndim``, ``region``,
``bounds_box``, ``zv.box``/``zv.ball``/``zv.polygon``, ``storage_options``; the old
spellings keep working and warn, naming the new one."""

from __future__ import annotations

import doctest
import importlib
import inspect
import json
import pickle
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import shapely
from zarr.storage import FsspecStore, MemoryStore

import zarr_vectors as zv
from tests.s3server import LoopbackS3
from zarr_vectors import _deprecation, dataset
from zarr_vectors.cli import main
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query import regions
from zarr_vectors.query.regions import as_region
from zarr_vectors.result import query_result as result

CHUNK = 4.0


def _positions(dtype: Any, n: int = 40, seed: int = 0) -> np.ndarray:
    """``n`` 3-D points in [0, 10)^3 with awkward (non-integer) maxima."""
    return np.random.default_rng(seed).uniform(0, 10, (n, 3)).astype(dtype)


def _points(dtype: Any) -> MemoryStore:
    store = MemoryStore()
    zv.write_points(store, _positions(dtype), chunk_shape=CHUNK)
    return store


def _polylines(kind: str) -> Callable[[Any], MemoryStore]:
    def write(dtype: Any) -> MemoryStore:
        store = MemoryStore()
        lines = np.split(_positions(dtype), [5, 17, 18, 30])
        zv.write_polylines(store, lines, kind=kind, chunk_shape=CHUNK)
        return store

    return write


def _graph(dtype: Any) -> MemoryStore:
    store = MemoryStore()
    positions = _positions(dtype, n=6)
    edges = np.array([[0, 1], [1, 2], [3, 4], [4, 5]])
    objects = np.array([0, 0, 0, 1, 1, 1])
    zv.write_graph(store, positions, edges, vertex_objects=objects, chunk_shape=CHUNK)
    return store


def _skeletons(dtype: Any) -> MemoryStore:
    store = MemoryStore()
    parents = np.array([-1, 0, 1, 1, -1, 4])
    objects = np.array([0, 0, 0, 0, 1, 1])
    zv.write_skeletons(
        store, _positions(dtype, n=6), parents=parents, vertex_objects=objects, chunk_shape=CHUNK
    )
    return store


def _mesh(dtype: Any) -> MemoryStore:
    store = MemoryStore()
    faces = np.array([[0, 1, 2], [1, 3, 2], [4, 5, 6], [5, 7, 6]])
    zv.write_mesh(store, _positions(dtype, n=8), faces, chunk_shape=CHUNK)
    return store


WRITERS: dict[str, Callable[[Any], MemoryStore]] = {
    "point_cloud": _points,
    "polyline": _polylines("polyline"),
    "streamline": _polylines("streamline"),
    "graph": _graph,
    "skeleton": _skeletons,
    "mesh": _mesh,
}


def _assert_same(got: zv.QueryResult, expected: zv.QueryResult) -> None:
    np.testing.assert_array_equal(got.positions, expected.positions)
    assert got.positions.dtype == expected.positions.dtype
    for name in ("object_ids", "offsets", "edges", "faces"):
        mine, theirs = getattr(got, name), getattr(expected, name)
        assert (mine is None) == (theirs is None), name
        if mine is not None:
            np.testing.assert_array_equal(mine, theirs)
    assert got.kind == expected.kind


# -- bounds_box ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", list(WRITERS))
def test_a_query_of_bounds_box_returns_what_read_returns(kind: str, dtype: Any) -> None:
    store = zv.open(WRITERS[kind](dtype))
    assert store.kind == kind
    box = store.bounds_box
    assert box is not None
    assert store.bounds is not None
    assert box[0] == store.bounds[0]
    assert all(h > m for h, m in zip(box[1], store.bounds[1], strict=True))
    assert all(dtype(h) == h for h in box[1])  # the next value of the stored dtype
    _assert_same(store.query(box), store.read())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_query_of_the_inclusive_bounds_misses_the_upper_faces(dtype: Any) -> None:
    """Why bounds_box exists: bounds is the inclusive extent, boxes are half-open."""
    store = zv.open(_points(dtype))
    assert len(store.query(store.bounds)) < store.vertex_count
    assert len(store.query(store.bounds_box)) == store.vertex_count


def test_an_empty_store_has_no_bounds_box() -> None:
    store = MemoryStore()
    zv.write_points(store, np.empty((0, 2)), chunk_shape=CHUNK)
    assert zv.open(store).bounds is None
    assert zv.open(store).bounds_box is None


# -- query(region) ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cloud() -> tuple[zv.VectorStore, np.ndarray]:
    positions = _positions(np.float64, n=400, seed=1)
    store = MemoryStore()
    zv.write_points(store, positions, chunk_shape=CHUNK)
    return zv.open(store), positions


def _sorted(rows: np.ndarray) -> np.ndarray:
    return rows[np.lexsort(rows.T[::-1])]


def _check(got: zv.QueryResult, positions: np.ndarray, inside: np.ndarray) -> None:
    assert inside.any()
    assert not inside.all()
    np.testing.assert_array_equal(_sorted(got.positions), _sorted(positions[inside]))


def test_query_takes_a_box_as_a_pair_or_as_zv_box(
    cloud: tuple[zv.VectorStore, np.ndarray],
) -> None:
    store, positions = cloud
    lo, hi = np.array([1.0, 2.0, 0.0]), np.array([6.0, 8.0, 5.0])
    inside = np.all((positions >= lo) & (positions < hi), axis=1)
    _check(store.query((lo, hi)), positions, inside)
    _check(store.query(zv.box(lo, hi)), positions, inside)
    _check(store.query(region=zv.box(lo.tolist(), hi.tolist())), positions, inside)


def test_query_takes_a_ball(cloud: tuple[zv.VectorStore, np.ndarray]) -> None:
    store, positions = cloud
    center = np.array([5.0, 5.0, 5.0])
    inside = np.sum((positions - center) ** 2, axis=1) <= 9.0
    _check(store.query(zv.ball(center, 3.0)), positions, inside)


def test_query_takes_shapely_polygons_in_the_first_two_axes(
    cloud: tuple[zv.VectorStore, np.ndarray],
) -> None:
    store, positions = cloud
    square = shapely.box(1, 1, 4, 4)
    both = shapely.MultiPolygon([square, shapely.box(6, 6, 9, 9)])
    for shape in (square, both):
        inside = shapely.intersects_xy(shape, positions[:, 0], positions[:, 1])
        _check(store.query(shape), positions, inside)
        _check(store.query(zv.polygon(shape)), positions, inside)


def test_zv_polygon_takes_a_plane_and_ranges(cloud: tuple[zv.VectorStore, np.ndarray]) -> None:
    store, positions = cloud
    triangle = [(0, 0), (8, 0), (0, 8)]
    region = zv.polygon(triangle, plane=("x", "z"), ranges={"y": (2, 7)})
    inside = shapely.intersects_xy(shapely.Polygon(triangle), positions[:, 0], positions[:, 2])
    inside &= (positions[:, 1] >= 2) & (positions[:, 1] < 7)
    _check(store.query(region), positions, inside)


@pytest.mark.parametrize(
    ("region", "match"),
    [
        (shapely.Point(1, 1), "Polygon or MultiPolygon"),
        (zv.ball([1, 1], 2), "3 numbers"),
        (zv.box([0, 0], [1, 1]), "3 numbers"),
        (zv.polygon([(0, 0), (1, 1)]), "n >= 3"),
        ("everything", r"box region must be .* zv\.ball"),
    ],
)
def test_a_region_that_does_not_fit_is_refused(
    cloud: tuple[zv.VectorStore, np.ndarray], region: Any, match: str
) -> None:
    store, _ = cloud
    with pytest.raises(InvalidInputError, match=match):
        store.query(region)


def test_read_query_and_to_dask_name_their_arguments_alike() -> None:
    query = inspect.signature(zv.VectorStore.query).parameters
    to_dask = inspect.signature(zv.VectorStore.to_dask).parameters
    assert list(query)[1] == list(to_dask)[1] == "region"
    assert set(query) >= {"region", "group", "clip"}


# -- to_dask, per kind -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", [k for k in WRITERS if k != "point_cloud"])
def test_to_dask_refuses_object_kinds_naming_what_to_use(kind: str) -> None:
    store = zv.open(WRITERS[kind](np.float64))
    with pytest.raises(InvalidInputError, match=r"read_objects\(\) or query\(\)"):
        store.to_dask()


def test_to_dask_takes_what_query_takes(cloud: tuple[zv.VectorStore, np.ndarray]) -> None:
    pytest.importorskip("dask.array")
    store, _ = cloud
    regions = [
        zv.box([1, 1, 1], [6, 6, 6]),
        store.bounds_box,
        zv.ball([5, 5, 5], 3),
        shapely.box(1, 1, 4, 4),
        zv.polygon([(0, 0), (8, 0), (0, 8)], plane=("x", "z"), ranges={"y": (2, 7)}),
    ]
    for region in regions:
        lazy = store.to_dask(region, chunks_per_block=2)
        _assert_same(lazy.compute(scheduler="sync"), store.query(region))
    _assert_same(store.to_dask(region=store.bounds_box).compute(scheduler="sync"), store.read())


def test_regions_pickle_for_workers_in_other_processes(
    cloud: tuple[zv.VectorStore, np.ndarray],
) -> None:
    store, positions = cloud
    shapes = [zv.polygon([(0, 0), (8, 0), (0, 8)], ranges={"z": (0, 4)}), zv.ball([5, 5, 5], 3)]
    for shape in shapes:
        region = as_region(shape, store.ndim, store.axis_names)
        again = pickle.loads(pickle.dumps(region))
        np.testing.assert_array_equal(
            again.contains_points(positions), region.contains_points(positions)
        )


# -- storage_options ---------------------------------------------------------------------------


def test_validate_passes_storage_options_to_fsspec(
    s3: LoopbackS3, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID"):
        monkeypatch.delenv(name)
    url = f"s3://{s3.fresh_prefix()}/explicit"
    options = s3.storage_options()
    positions = _positions(np.float64)
    zv.write_points(FsspecStore.from_url(url, storage_options=options), positions, chunk_shape=5.0)
    report = zv.validate(url, level=3, storage_options=options)
    assert report.ok, report.problems
    assert report.level == 3


def test_the_cli_passes_storage_options_to_fsspec(
    s3: LoopbackS3, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID"):
        monkeypatch.delenv(name)
    url = f"s3://{s3.fresh_prefix()}/explicit"
    options = s3.storage_options()
    zv.write_points(FsspecStore.from_url(url, storage_options=options), _positions(np.float64))
    flags = [
        arg
        for key, value in options.items()
        for arg in ("--storage-option", f"{key}={json.dumps(value)}")
    ]
    assert main(["info", url, "--json", *flags]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["kind"], doc["ndim"], doc["vertex_count"]) == ("point_cloud", 3, 40)
    assert (doc["geometry_type"], doc["spatial_dims"]) == ("point_cloud", 3)
    assert main(["validate", url, "--level", "3", *flags]) == 0


def test_validate_refuses_storage_options_for_a_local_path(tmp_path: Any) -> None:
    path = tmp_path / "cells.zarr"
    zv.write_points(path, _positions(np.float64), chunk_shape=5.0)
    with pytest.raises(InvalidInputError, match="storage_options"):
        zv.validate(path, storage_options={"anon": True})


# -- old spellings -----------------------------------------------------------------------------


def test_store_geometry_type_and_spatial_dims_warn_naming_kind_and_ndim() -> None:
    store = zv.open(_skeletons(np.float64))
    with pytest.warns(DeprecationWarning, match=r"use VectorStore\.kind"):
        assert store.geometry_type == "skeleton"
    with pytest.warns(DeprecationWarning, match=r"use VectorStore\.ndim"):
        assert store.spatial_dims == 3


def test_result_geometry_type_warns_naming_kind() -> None:
    result = zv.open(_mesh(np.float64)).read()
    with pytest.warns(DeprecationWarning, match=r"use QueryResult\.kind"):
        assert result.geometry_type == result.kind == "mesh"


def test_result_built_with_geometry_type_warns_naming_kind() -> None:
    edges = np.array([[0, 1]])
    with pytest.warns(DeprecationWarning, match=r"use QueryResult\(kind=\.\.\.\)"):
        built = zv.QueryResult(positions=np.zeros((2, 3)), edges=edges, geometry_type="skeleton")
    assert built.kind == "skeleton"
    np.testing.assert_array_equal(built.edges, edges)
    with (
        pytest.warns(DeprecationWarning, match="geometry_type"),
        pytest.raises(TypeError, match=r"give kind= only"),
    ):
        zv.QueryResult(positions=np.zeros((2, 3)), kind="graph", geometry_type="skeleton")


def test_lazy_result_geometry_type_warns_naming_kind(
    cloud: tuple[zv.VectorStore, np.ndarray],
) -> None:
    pytest.importorskip("dask.array")
    lazy = cloud[0].to_dask()
    with pytest.warns(DeprecationWarning, match=r"use LazyResult\.kind"):
        assert lazy.geometry_type == lazy.kind == "point_cloud"


def test_bbox_keyword_warns_naming_region(cloud: tuple[zv.VectorStore, np.ndarray]) -> None:
    store, _ = cloud
    box = ([1, 1, 1], [6, 6, 6])
    with pytest.warns(DeprecationWarning, match=r"use query\(region=\.\.\.\)"):
        got = store.query(bbox=box)
    _assert_same(got, store.query(box))
    with pytest.raises(InvalidInputError, match="give region= only"):
        store.query(box, bbox=box)
    with pytest.raises(TypeError, match="'box'"):
        store.query(box=box)


def test_to_dask_bbox_keyword_warns_naming_region(
    cloud: tuple[zv.VectorStore, np.ndarray],
) -> None:
    pytest.importorskip("dask.array")
    store, _ = cloud
    box = ([1, 1, 1], [6, 6, 6])
    with pytest.warns(DeprecationWarning, match=r"use to_dask\(region=\.\.\.\)"):
        lazy = store.to_dask(bbox=box)
    _assert_same(lazy.compute(scheduler="sync"), store.query(box))


def test_query_sphere_and_query_polygon_warn_naming_query() -> None:
    store = zv.open(_polylines("streamline")(np.float64))
    with pytest.warns(DeprecationWarning, match=r"use VectorStore\.query\(zv\.ball"):
        sphere = store.query_sphere([5, 5, 5], 3, clip=True)
    _assert_same(sphere, store.query(zv.ball([5, 5, 5], 3), clip=True))
    square = shapely.box(0, 0, 5, 5)
    with pytest.warns(DeprecationWarning, match=r"use VectorStore\.query\(zv\.polygon"):
        polygon = store.query_polygon(square, plane=("x", "z"), ranges={"y": (0, 4)})
    _assert_same(polygon, store.query(zv.polygon(square, plane=("x", "z"), ranges={"y": (0, 4)})))


def test_a_deprecation_warning_points_at_the_callers_line() -> None:
    store = zv.open(_points(np.float64))
    calls: list[Callable[[], object]] = [
        lambda: store.query(bbox=store.bounds_box),
        lambda: store.spatial_dims,
        lambda: store.query_sphere([5, 5, 5], 1),
    ]
    for call in calls:
        with pytest.warns(DeprecationWarning, match="is deprecated; use") as caught:
            call()
        assert [w.filename for w in caught] == [__file__]


# -- examples --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "module",
    [dataset, regions, result, importlib.import_module("zarr_vectors.validate"), _deprecation],
    ids=lambda m: m.__name__,
)
def test_the_read_side_examples_exist(module: ModuleType) -> None:
    """Each read-side module has examples; tests/test_docstring_examples.py runs them."""
    found = doctest.DocTestFinder(exclude_empty=True).find(module, module.__name__)
    assert sum(len(test.examples) for test in found) > 0
