"""Stores written by the library validate without any finding, on every store kind."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.conftest import StoreFactory
from tests.validate import stores as s
from zarr_vectors.validate import validate


def _cloud(ndim: int, n: int, dtype: Any, low: float, high: float) -> np.ndarray:
    rng = np.random.default_rng(ndim * 1000 + n)
    return rng.uniform(low, high, (n, ndim)).astype(dtype)


SHAPES: dict[str, tuple[np.ndarray, dict[str, Any]]] = {
    "2d-float32": (_cloud(2, 400, np.float32, 0, 50), {"chunk_shape": 10.0, "bin_shape": 2.5}),
    "3d-float64-negative": (_cloud(3, 500, np.float64, -35, 12), {"chunk_shape": 10.0}),
    "4d": (_cloud(4, 300, np.float64, -3, 7), {"chunk_shape": 5.0}),
    "default-chunks": (_cloud(3, 2000, np.float32, 0, 1e4), {}),
    "one-point": (np.array([[1.5, -2.5, 3.5]]), {"chunk_shape": 1.0}),
    "on-chunk-edges": (
        np.array([[0.0, 0.0, 0.0], [10.0, 10.0, 10.0], [-10.0, 5.0, 0.0]]),
        {"chunk_shape": 10.0, "bin_shape": 5.0},
    ),
    "tiny-chunks": (_cloud(3, 300, np.float64, 0, 1), {"chunk_shape": 0.1, "bin_shape": 0.1 / 3}),
    "small-row-blocks": (
        _cloud(3, 600, np.float32, 0, 20),
        {"chunk_shape": 10.0, "options": zv.WriteOptions(rows_per_block=7)},
    ),
}


def _attributes(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(n)
    return {
        "intensity": rng.random(n).astype(np.float32),
        "rgb": rng.integers(0, 255, (n, 3)).astype(np.uint8),
        "normal": rng.random((n, 4)),
        "flag": rng.random(n) > 0.5,
        "half": rng.random(n).astype(np.float16),
    }


def _assert_clean(store: Any) -> None:
    for level in (1, 2, 3, 5):
        report = validate(store, level=level)
        assert report.ok, report.summary()
        assert not report.problems, report.summary()
        assert report.level == level


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shapes_are_clean(name: str) -> None:
    pts, options = SHAPES[name]
    store = MemoryStore()
    ids = np.arange(pts.shape[0], dtype=np.int32)
    zv.write_points(store, pts, attributes=_attributes(pts.shape[0]), object_ids=ids, **options)
    _assert_clean(store)


def test_empty_store_is_clean() -> None:
    store = MemoryStore()
    zv.write_points(store, np.zeros((0, 3)), chunk_shape=10.0)
    _assert_clean(store)


def test_store_kinds_are_clean(store_factory: StoreFactory) -> None:
    target, reopen = store_factory("cloud")
    pts = _cloud(3, 800, np.float32, -20, 20)
    zv.write_points(target, pts, chunk_shape=8.0, attributes=_attributes(800))
    _assert_clean(reopen())


def test_reference_store_and_pyramid_are_clean() -> None:
    _assert_clean(s.point_store())
    store = MemoryStore()
    zv.write_points(store, s.points(), chunk_shape=s.CHUNK, levels=zv.Levels(count=2, per_bin=4))
    _assert_clean(store)


def test_a_hand_made_pyramid_only_warns_of_its_method() -> None:
    report = validate(s.pyramid_store((2, 2)), level=5)
    assert report.ok, report.summary()
    assert report.level == 5
    assert {p.check_id for p in report.problems} == {"L2.coarsening_method_unknown"}


@pytest.mark.parametrize("kind", ["polyline", "streamline", "graph", "skeleton", "mesh"])
def test_hand_built_object_metadata_is_clean(kind: str) -> None:
    store = s.object_store(kind)
    for level in (1, 2):
        report = validate(store, level=level)
        assert not report.problems, report.summary()


def test_checks_run_lists_the_levels_evaluated() -> None:
    report = validate(s.point_store(), level=3)
    prefixes = {check_id[:2] for check_id in report.checks_run}
    assert prefixes == {"L1", "L2", "L3"}
    assert len(report.checks_run) == len(set(report.checks_run))
    assert "L3.vertex_in_bin" in report.checks_run
    assert "L2.mesh_keys" not in report.checks_run  # not a mesh
