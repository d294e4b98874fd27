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
