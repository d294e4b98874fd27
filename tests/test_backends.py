"""The store suite: the same tests on every backend (memory, local, path, zip, S3, S3 URL).

Every geometry kind is written, read back, queried by box, by id and by group, and
validated; streaming writes and appends give the store one write gives; an overwrite
needs ``overwrite=True``; a write refused for bad input leaves the existing store as it
was. Each store is also compared key by key with the same write into a ``MemoryStore``:
a backend must hold exactly the bytes any other holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.conftest import STORE_KINDS, StoreFactory
from tests.geometry import object_cases
from tests.helpers import sorted_rows, without_commit
from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.store.io import StoreIO, resolve_store

POINT_SETTINGS: dict[str, Any] = {"chunk_shape": 20.0, "bin_shape": 5.0}
OBJECT_SETTINGS: dict[str, Any] = {"chunk_shape": 40.0, "options": object_cases.SMALL_BLOCKS}
OBJECT_KINDS = ("streamline", "graph", "skeleton", "mesh")


@pytest.fixture
def store_kind(request: pytest.FixtureRequest, backend_factory: StoreFactory) -> str:
    """The name of the backend ``backend_factory`` stands for in this test."""
    kind: str = request.node.callspec.params["backend_factory"]
    return kind


def contents(store: Any) -> dict[str, bytes | None]:
    """Every key of a store and its bytes, but ``metadata.json`` (it holds a timestamp)."""
    io = StoreIO(resolve_store(store, mode="r"))
    try:
        return {k: without_commit(k, io.get(k)) for k in io.list_prefix("") if k != "metadata.json"}
    finally:
        io.close()


def written_into_memory(write: Callable[[Any], None]) -> dict[str, bytes | None]:
    """What ``write`` puts into a fresh MemoryStore, as :func:`contents`."""
    store = MemoryStore()
    write(store)
    return contents(store)


def assert_valid(store: Any) -> None:
    report = zv.validate(store, level=4)
    assert report.ok, report.summary()
    assert not report.problems, report.summary()


# -- point clouds -------------------------------------------------------------------------


def _points(n: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {
        "positions": rng.uniform(0, 40, (n, 3)).astype(np.float32),
        "attributes": {
            "intensity": rng.random(n).astype(np.float32),
            "label": rng.integers(-5, 5, (n, 2)).astype(np.int16),
        },
        "object_ids": rng.integers(0, 50, n).astype(np.int32),
    }


def _point_rows(result: zv.QueryResult) -> np.ndarray:
    assert result.vertex_object_ids is not None
    attrs = result.attributes
    return sorted_rows(
        result.positions, attrs["intensity"], attrs["label"], result.vertex_object_ids
    )


def _expected_rows(points: dict[str, Any], keep: Any = slice(None)) -> np.ndarray:
    attrs = points["attributes"]
    return sorted_rows(
        points["positions"][keep],
        attrs["intensity"][keep],
        attrs["label"][keep],
        points["object_ids"][keep],
    )


def _write_points(store: Any, points: dict[str, Any], **extra: Any) -> None:
    zv.write_points(store, **points, **POINT_SETTINGS, **extra)


BOXES = [
    ([0, 0, 0], [20, 20, 20]),  # one whole chunk
    ([-3.5, 2.25, 7], [11, 29.5, 12.5]),  # partial chunks and bins
    ([-np.inf, 5, -np.inf], [np.inf, 6, np.inf]),  # a slab, unbounded axes
    ([40, 40, 40], [50, 50, 50]),  # outside the data
    ([5, 5, 5], [5, 9, 9]),  # empty (lo == hi on one axis)
]


def test_points_round_trip_queries_and_validation(backend_factory: StoreFactory) -> None:
    points = _points(600, seed=1)
    target, reopen = backend_factory("points")
    _write_points(target, points)
    store = zv.open(reopen())
    assert store.vertex_count == 600
    np.testing.assert_array_equal(_point_rows(store.read()), _expected_rows(points))
    for lo, hi in BOXES:
        keep = np.all((points["positions"] >= lo) & (points["positions"] < hi), axis=1)
        got = store.query((lo, hi))
        assert len(got) == int(keep.sum())
        np.testing.assert_array_equal(_point_rows(got), _expected_rows(points, keep))
    assert_valid(reopen())
    assert contents(reopen()) == written_into_memory(lambda s: _write_points(s, points))


# -- objects ------------------------------------------------------------------------------


def _object_case(kind: str) -> dict[str, Any]:
    """Nine objects of ``kind`` with ids, attributes, link attributes and groups."""
    rng = np.random.default_rng(sum(map(ord, kind)))
    objects = [
        (np.cumsum(rng.normal(0.0, 3.0, (k, 3)), axis=0) + rng.uniform(-5, 25, 3)).round(2)
        for k in rng.integers(3, 16, 9)
    ]
    link_kind = "polyline" if kind == "streamline" else kind
    links = [
        _strip(len(o)) if kind == "mesh" else object_cases._object_links(link_kind, len(o), rng)
        for o in objects
    ]
    return {
        "kind": link_kind,
        "objects": objects,
        "links": links,
        "value": [rng.random(len(o)) for o in objects],
        "link_values": [rng.random(len(lk)) for lk in links],
        "ids": rng.choice(1000, len(objects), replace=False),
        "groups": True,
        "cuts": np.array([3, 6]),
        "directed": True,
        "options": object_cases.SMALL_BLOCKS,
    }


def _strip(k: int) -> np.ndarray:
    """A triangle strip over ``k`` vertices, every shared edge traversed both ways."""
    faces = [(i, i + 1, i + 2) if i % 2 == 0 else (i + 1, i, i + 2) for i in range(k - 2)]
    return np.asarray(faces, dtype=np.int64).reshape(-1, 3)


def _write_objects(store: Any, case: dict[str, Any], a: int, b: int, **extra: Any) -> None:
    args = object_cases.arguments(case, a, b) | OBJECT_SETTINGS | extra
    kind = case["kind"]
    if kind == "polyline":
        zv.write_polylines(store, args.pop("polylines"), kind="streamline", **args)
    elif kind == "graph":
        zv.write_graph(store, args.pop("positions"), args.pop("edges"), directed=True, **args)
    elif kind == "skeleton":
        zv.write_skeletons(store, args.pop("positions"), **args)
    else:
        zv.write_mesh(store, args.pop("positions"), args.pop("faces"), **args)


def _local_links(case: dict[str, Any], j: int) -> np.ndarray:
    """Object ``j``'s edges or faces as read back (skeletons: no row for the root)."""
    links = case["links"][j]
    return links[links[:, 1] >= 0] if case["kind"] == "skeleton" else links


def _check_object(case: dict[str, Any], got: zv.QueryResult, m: int, j: int, rows: slice) -> None:
    """The ``m``-th object of ``got`` is object ``j`` of ``case``, exactly."""
    assert got.object_ids is not None
    assert got.object_ids[m] == case["ids"][j]
    np.testing.assert_array_equal(got.positions[rows], case["objects"][j])
    np.testing.assert_array_equal(got.attributes["v"][rows], case["value"][j])
    assert got.object_attributes["k"][m] == j
    if case["kind"] == "polyline":
        return
    table = got.faces if case["kind"] == "mesh" else got.edges
    assert table is not None
    mine = np.all((table >= rows.start) & (table < rows.stop), axis=1)
    if case["kind"] == "skeleton":
        got_rows = sorted_rows(table[mine] - rows.start)
        expected = sorted_rows(_local_links(case, j))
    else:  # a link keeps its attribute and a face its winding; links may come in any order
        got_rows = sorted_rows(table[mine] - rows.start, got.link_attributes["e"][mine])
        expected = sorted_rows(case["links"][j], case["link_values"][j])
    np.testing.assert_array_equal(got_rows, expected)


def _meets(vertices: np.ndarray, lo: Any, hi: Any) -> bool:
    """Whether a vertex lies in the half-open box ``[lo, hi)``."""
    return bool(np.any(np.all((vertices >= lo) & (vertices < hi), axis=1)))


def _check_objects(case: dict[str, Any], got: zv.QueryResult, order: list[int]) -> None:
    assert got.offsets is not None
    assert len(got.offsets) == len(order) + 1
    for m, j in enumerate(order):
        _check_object(case, got, m, j, slice(int(got.offsets[m]), int(got.offsets[m + 1])))


S3_DEFAULT_KINDS = {"s3": ("streamline", "mesh"), "s3-url": ("graph", "skeleton")}
"""The object kinds each S3 spelling round-trips in the default run (every kind on S3 once;
each request to the loopback server costs milliseconds); all of them with ``-m slow``."""


def _object_backends() -> list[Any]:
    """(backend, kind): every object kind on every backend, the S3 ones outside
    :data:`S3_DEFAULT_KINDS` marked ``slow``."""
    return [
        pytest.param(
            backend,
            kind,
            marks=pytest.mark.slow
            if kind not in S3_DEFAULT_KINDS.get(backend, OBJECT_KINDS)
            else (),
        )
        for backend in STORE_KINDS
        for kind in OBJECT_KINDS
    ]


@pytest.mark.parametrize(
    ("backend_factory", "kind"), _object_backends(), indirect=["backend_factory"]
)
def test_objects_round_trip_queries_and_validation(
    backend_factory: StoreFactory, kind: str
) -> None:
    case = _object_case(kind)
    m = len(case["objects"])
    target, reopen = backend_factory(kind)
    _write_objects(target, case, 0, m)
    store = zv.open(reopen())
    assert store.object_count == m
    np.testing.assert_array_equal(store.object_ids, case["ids"])
    order = [5, 0, 8, 2]
    _check_objects(case, store.read_objects(case["ids"][order]), order)
    _check_objects(case, store.read(), list(range(m)))
    for lo, hi in BOXES[1:3]:
        inside = [j for j, o in enumerate(case["objects"]) if _meets(o, lo, hi)]
        _check_objects(case, store.query((lo, hi)), inside)
    group = case["ids"][3:5].tolist()  # "g3": the first two objects of the batch 3:6
    got = store.query(group="g3")
    assert got.object_ids is not None
    assert got.object_ids.tolist() == group
    assert_valid(reopen())
    assert contents(reopen()) == written_into_memory(lambda s: _write_objects(s, case, 0, m))


# -- streaming writes and appends ---------------------------------------------------------


def _batches(points: dict[str, Any], cuts: list[int]) -> list[dict[str, Any]]:
    bounds = [0, *cuts, len(points["positions"])]
    return [
        {
            "positions": points["positions"][a:b],
            "attributes": {k: v[a:b] for k, v in points["attributes"].items()},
            "object_ids": points["object_ids"][a:b],
        }
        for a, b in itertools.pairwise(bounds)
    ]


def test_streaming_writes_give_the_one_shot_store(backend_factory: StoreFactory) -> None:
    points = _points(500, seed=2)
    target, reopen = backend_factory("stream-points")
    zv.write_points_stream(target, _batches(points, [120, 300]), **POINT_SETTINGS, progress=False)
    assert contents(reopen()) == written_into_memory(lambda s: _write_points(s, points))
    case = _object_case("streamline")
    m = len(case["objects"])
    target, reopen = backend_factory("stream-lines")
    with zv.ObjectWriter(target, kind="streamline", **OBJECT_SETTINGS) as writer:
        for a, b in object_cases.batches(case):
            writer.append(**object_cases.arguments(case, a, b))
    assert contents(reopen()) == written_into_memory(lambda s: _write_objects(s, case, 0, m))


def test_appends_give_the_one_shot_store(backend_factory: StoreFactory, store_kind: str) -> None:
    points, case = _points(500, seed=3), _object_case("streamline")
    m, first = len(case["objects"]), object_cases.batches(case)[0]
    early, later = _batches(points, [350])
    lines = object_cases.arguments(case, first[1], m)
    stores = {name: backend_factory(name) for name in ("points", "lines")}
    target = {name: pair[0] for name, pair in stores.items()}
    _write_points(target["points"], early)
    _write_objects(target["lines"], case, *first)
    if store_kind == "zip":
        before = {name: contents(reopen()) for name, (_, reopen) in stores.items()}
        with pytest.raises(InvalidInputError, match="zip store cannot be changed in place"):
            zv.append_points(target["points"], **later, progress=False)
        with pytest.raises(InvalidInputError, match="zip store cannot be changed in place"):
            zv.append_polylines(target["lines"], lines.pop("polylines"), **lines)
        with pytest.raises(InvalidInputError, match="in place: to build its levels, extract"):
            zv.build_levels(target["lines"], 1, progress=False)
        assert {name: contents(reopen()) for name, (_, reopen) in stores.items()} == before
        return
    zv.append_points(target["points"], **later, progress=False)
    zv.append_polylines(target["lines"], lines.pop("polylines"), **lines)
    # the bytes of one write, which the round-trip tests read, query and validate here
    assert contents(stores["points"][1]()) == written_into_memory(
        lambda s: _write_points(s, points)
    )
    assert contents(stores["lines"][1]()) == written_into_memory(
        lambda s: _write_objects(s, case, 0, m)
    )


# -- overwrite and failed writes ----------------------------------------------------------


def test_overwrite_needs_overwrite_true(backend_factory: StoreFactory) -> None:
    old, new = _points(300, seed=4), _points(200, seed=5)
    target, reopen = backend_factory("replaced")
    _write_points(target, old)
    before = contents(reopen())
    with pytest.raises(StoreExistsError, match='mode="w"'):
        _write_points(target, new)
    with pytest.raises(StoreExistsError, match='mode="w"'):
        zv.PointWriter(target, **POINT_SETTINGS)
    with pytest.raises(StoreExistsError, match='mode="w"'):
        zv.ObjectWriter(target, kind="streamline", chunk_shape=10.0)
    assert contents(reopen()) == before
    _write_points(target, new, mode="w")
    assert contents(reopen()) == written_into_memory(lambda s: _write_points(s, new))


def _bad_points(points: dict[str, Any]) -> dict[str, Any]:
    bad = {**points, "positions": points["positions"].copy()}
    bad["positions"][7, 1] = np.nan
    return bad


def test_failed_writes_leave_the_store_as_it_was(backend_factory: StoreFactory) -> None:
    points = _points(300, seed=6)
    target, reopen = backend_factory("kept")
    _write_points(target, points)
    before = contents(reopen())
    with pytest.raises(InvalidInputError, match="finite"):
        _write_points(target, _bad_points(points), mode="w")
    assert contents(reopen()) == before
    batches = _batches(points, [100]) + _batches(_bad_points(points), [100])
    with pytest.raises(InvalidInputError, match="finite"):
        zv.write_points_stream(target, batches, **POINT_SETTINGS, mode="w", progress=False)
    assert contents(reopen()) == before
    wrong = {**points, "attributes": {**points["attributes"], "intensity": points["object_ids"]}}
    with pytest.raises(InvalidInputError, match="intensity"):
        zv.append_points(target, **wrong, progress=False)
    assert contents(reopen()) == before
