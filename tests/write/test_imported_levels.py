"""Levels given as they are (method ``"imported"``, spec §4.3.4) through the object writers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.write.imported_levels import ImportedLevel, ImportedLevels, nested_ratio

RECORD = {"method": "imported", "source": "a test"}


def _lines() -> list[np.ndarray]:
    return [
        np.array([[0.5, 0.5], [1.5, 0.5], [5.5, 0.5]], np.float32),
        np.array([[6.5, 6.5], [7.5, 7.5]], np.float32),
        np.array([[2.5, 6.5], [3.5, 6.5]], np.float32),
    ]


def _level(ids: list[int], per_object: list[list[list[float]]]) -> ImportedLevel:
    positions = np.asarray([p for obj in per_object for p in obj], np.float32).reshape(-1, 2)
    counts = np.asarray([len(obj) for obj in per_object], np.int64)
    return ImportedLevel(np.array([2, 2]), positions, np.asarray(ids), counts, dict(RECORD))


def test_objects_are_stored_in_id_order_each_with_its_vertices(tmp_path: Path) -> None:
    shared = [4.0, 4.0]  # one vertex shared by two objects, stored once per object
    level = _level([2, 0], [[shared], [[1.0, 0.5], shared, [5.0, 0.5]]])
    path = tmp_path / "lines.zarr"
    zv.write_polylines(path, _lines(), chunk_shape=4.0, bin_shape=1.0, progress=False,
                       object_ids=[0, 1, 2], levels=ImportedLevels((level,)))  # fmt: skip
    store = zv.open(path)
    info = store.levels[1]
    assert (info.method, info.coarsening) == ("imported", RECORD)
    assert info.object_sparsity == pytest.approx(2 / 3)
    got = store.read_objects([0, 1, 2], level=1)
    assert np.diff(got.offsets).tolist() == [3, 0, 1]
    assert got.positions.tolist() == [[1.0, 0.5], shared, [5.0, 0.5], shared]
    assert got.attributes == {}
    assert "level_schedule" not in store.metadata
    assert zv.validate(path, level=5).ok


def test_a_skeleton_level_holds_roots_only(tmp_path: Path) -> None:
    positions = np.array([[0.5, 0.5], [1.5, 0.5], [2.5, 0.5]], np.float32)
    level = _level([0], [[[1.0, 0.5], [2.0, 0.5]]])
    path = tmp_path / "tree.zarr"
    zv.write_skeletons(path, positions, [-1, 0, 1], chunk_shape=4.0, bin_shape=1.0,
                       progress=False, levels=ImportedLevels((level,)))  # fmt: skip
    got = zv.open(path).read(level=1)
    assert got.positions.tolist() == [[1.0, 0.5], [2.0, 0.5]]
    assert len(got.edges) == 0
    assert zv.validate(path, level=5).ok


def test_an_unknown_object_or_wrong_counts_are_refused(tmp_path: Path) -> None:
    stranger = _level([7], [[[1.0, 1.0]]])
    with pytest.raises(zv.InvalidInputError, match="does not hold"):
        zv.write_polylines(tmp_path / "a.zarr", _lines(), chunk_shape=4.0, bin_shape=1.0,
                           progress=False, levels=ImportedLevels((stranger,)))  # fmt: skip
    short = _level([0], [[[1.0, 1.0]]])
    short = ImportedLevel(short.bin_ratio, short.positions, short.object_ids,
                          np.array([2]), short.coarsening)  # fmt: skip
    with pytest.raises(zv.InvalidInputError, match="add up"):
        zv.write_polylines(tmp_path / "b.zarr", _lines(), chunk_shape=4.0, bin_shape=1.0,
                           progress=False, levels=ImportedLevels((short,)))  # fmt: skip


AXIS = st.tuples(st.integers(1, 64), st.integers(0, 6), st.integers(0, 4))


@given(st.lists(AXIS, min_size=1, max_size=3))
def test_nested_ratio_divides_the_bins_and_nests(axes: list[tuple[int, int, int]]) -> None:
    """(wanted, below as a power of two, bins per chunk as below times 2^k)."""
    wanted = np.array([a[0] for a in axes])
    below = np.array([2 ** a[1] for a in axes])
    bins = below * np.array([2 ** a[2] for a in axes])
    got = nested_ratio(wanted, below, bins)
    assert (bins % got == 0).all()
    assert (got % below == 0).all()
    assert (got <= np.maximum(wanted, below)).all()
    # the largest such ratio: the next multiple of below that divides bins is too big
    for r, w, b, n in zip(got, wanted, below, bins, strict=True):
        bigger = [x for x in range(r + b, n + 1, b) if n % x == 0]
        assert not bigger or bigger[0] > max(w, b)
