"""The point-cloud box reads a level reader holds (``reader.points``)."""

from __future__ import annotations

import copy
import gc
import pickle
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.query.point_queries import query_box


def _store(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    path = tmp_path / "cloud.zv"
    zv.write_points(path, rng.random((2000, 3)) * 100, chunk_shape=50.0, bin_shape=12.5)
    return path


def test_a_dropped_store_is_freed_without_the_cycle_collector(tmp_path: Path) -> None:
    store = zv.open(_store(tmp_path))
    assert len(store.query(([10.0, 10, 10], [60.0, 60, 60])).positions)
    reader = weakref.ref(store._reader)
    points = weakref.ref(store._reader.points)
    gc.disable()
    try:
        del store
        assert reader() is None
        assert points() is None
    finally:
        gc.enable()


def test_the_reads_refuse_to_outlive_their_reader(tmp_path: Path) -> None:
    store = zv.open(_store(tmp_path))
    points = store._reader.points
    del store
    gc.collect()
    with pytest.raises(ReferenceError, match="reader"):
        points.can_select(["vertices"])


def test_a_restricted_view_reads_through_its_own_tables(tmp_path: Path) -> None:
    reader = zv.open(_store(tmp_path))._reader
    view = reader.restricted(np.array([[0, 0, 0]]))
    assert view.points is not reader.points
    assert view.points.reader is view
    assert view.points.checked_bins is reader.points.checked_bins
    assert view.points.tables is not reader.points.tables


@pytest.mark.parametrize("clone", [lambda r: pickle.loads(pickle.dumps(r)), copy.deepcopy])
def test_a_pickled_or_copied_reader_brings_its_point_reads(tmp_path: Path, clone: Any) -> None:
    reader = zv.open(_store(tmp_path))._reader
    box = (np.array([10.0, 10, 10]), np.array([60.0, 60, 60]))
    want = query_box(reader, *box).positions
    other = clone(reader)
    assert other.points.reader is other
    np.testing.assert_array_equal(query_box(other, *box).positions, want)
