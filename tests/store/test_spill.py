"""Spill column files: rows appended in the background read back exactly, errors surface."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from zarr_vectors.store import spill
from zarr_vectors.store.spill import SpillColumns, remove_scratch, scratch_directory

TYPES = [(np.dtype(np.float32), (3,)), (np.dtype(np.uint16), ())]


def _batches(rng: np.random.Generator) -> list[list[np.ndarray]]:
    sizes = [5, 0, 17, 1, 40]
    return [
        [rng.random((k, 3), dtype=np.float32), rng.integers(0, 9, k).astype(np.uint16)]
        for k in sizes
    ]


def test_appended_rows_read_back_by_ranges(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    batches = _batches(rng)
    columns = SpillColumns(tmp_path, "t", TYPES)
    firsts = [columns.append(batch) for batch in batches]
    assert firsts == [0, 5, 5, 22, 23]
    assert columns.rows == 63
    ranges = [(60, 63), (0, 2), (22, 30), (30, 30)]
    for k in range(2):
        whole = np.concatenate([batch[k] for batch in batches])
        want = np.concatenate([whole[a:b] for a, b in ranges])
        np.testing.assert_array_equal(columns.read(k, ranges), want)
    columns.close()


def test_reading_past_the_end_is_an_error(tmp_path: Path) -> None:
    columns = SpillColumns(tmp_path, "t", TYPES)
    columns.append(_batches(np.random.default_rng(3))[0])
    with pytest.raises(OSError, match="ends before byte"):
        columns.read(0, [(3, 9)])
    columns.close()


def test_a_failed_background_write_is_raised_by_the_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    columns = SpillColumns(tmp_path, "t", TYPES)

    def full_disk(fd: int, data: object, offset: int) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full_disk)
    batch = _batches(np.random.default_rng(4))[2]
    columns.append(batch)
    with pytest.raises(OSError, match="No space left"):
        columns.wait()
    columns.append(batch)
    with pytest.raises(OSError, match="No space left"):
        columns.read(0, [(0, 1)])
    columns.append(batch)
    columns.close()  # drops the pending error: the files are discarded anyway


def test_a_write_that_makes_no_progress_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "pwrite", lambda fd, data, offset: 0)
    with pytest.raises(OSError, match="could not write to a spill file at byte 0"):
        spill._write_at(0, np.ones(3, np.float32), 0)


def test_scratch_directories_are_fresh_and_removed(tmp_path: Path) -> None:
    store = tmp_path / "s.zv"
    one = scratch_directory(store, None)
    two = scratch_directory(store, None)
    assert one != two
    assert one.parent == tmp_path
    assert one.name.startswith(".s.zv.zv-spill-")
    elsewhere = scratch_directory(None, tmp_path / "spill")
    assert elsewhere.parent == tmp_path / "spill"
    (one / "x").write_bytes(b"1")
    remove_scratch(one)
    assert not one.exists()
    assert two.exists()


def _allocated(columns: SpillColumns) -> list[int]:
    return [os.stat(path).st_blocks for path in columns.paths]


def _big_appends(columns: SpillColumns, rng: np.random.Generator) -> list[list[np.ndarray]]:
    batches = [
        [rng.random((k, 3), dtype=np.float32), rng.integers(0, 9, k).astype(np.uint16)]
        for k in (40_000, 30_000, 50_000)
    ]
    for batch in batches:
        columns.append(batch)
    columns.wait()
    return batches


def _whole(batches: list[list[np.ndarray]], k: int) -> np.ndarray:
    return np.concatenate([batch[k] for batch in batches])


def _skip_without_holes(directory: Path) -> None:
    punch = spill._punch_hole_function()
    probe = directory / "probe"
    probe.write_bytes(b"x" * 8192)
    fd = os.open(probe, os.O_RDWR)
    try:
        if punch is None or not punch(fd, 0, 4096):
            pytest.skip("this file system cannot punch holes")
    finally:
        os.close(fd)


def test_rows_done_with_are_given_back_in_order_of_each_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _skip_without_holes(tmp_path)
    monkeypatch.setattr(spill, "RELEASE_BYTES", 10_000 * 14)  # stretches of 10,000 rows
    columns = SpillColumns(tmp_path, "t", TYPES)
    batches = _big_appends(columns, np.random.default_rng(5))
    full = _allocated(columns)
    columns.done_with([(5_000, 40_000)])  # not from the start of the first append: kept
    columns.wait_for_releases()
    assert _allocated(columns) == full
    columns.done_with([(40_000, 45_000)])  # 5,000 rows of the second append: too few
    columns.done_with([(0, 5_000)])  # now the whole first append goes
    columns.wait_for_releases()
    for k, (before, after) in enumerate(zip(full, _allocated(columns), strict=True)):
        row = columns._row_nbytes(k)
        assert before - after >= (40_000 * row - 2 * 4096) // 512  # 512-byte blocks
    ranges = [(45_000, 46_000), (70_000, 120_000)]
    for k in range(2):
        whole = _whole(batches, k)
        want = np.concatenate([whole[a:b] for a, b in ranges])
        np.testing.assert_array_equal(columns.read(k, ranges), want)
    columns.close()


def test_a_file_system_without_holes_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[int, int]] = []

    def refuse(fd: int, offset: int, length: int) -> bool:
        calls.append((offset, length))
        return False

    monkeypatch.setattr(spill, "_punch_hole_function", lambda: refuse)
    monkeypatch.setattr(spill, "RELEASE_BYTES", 1)
    columns = SpillColumns(tmp_path, "t", TYPES)
    batches = _big_appends(columns, np.random.default_rng(6))
    columns.done_with([(0, 100), (100, 200)])
    columns.wait_for_releases()
    columns.done_with([(200, 300)])
    columns.wait_for_releases()
    assert calls[0] == (0, 100 * 12)
    assert all(offset < 200 * 12 for offset, _ in calls)  # a refusal stops all giving back
    for k in range(2):
        np.testing.assert_array_equal(columns.read(k, [(0, 120_000)]), _whole(batches, k))
    columns.close()
