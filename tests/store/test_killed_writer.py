"""A writer killed at any moment never leaves a store that opens as complete (spec §2.4)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv

WRITER = """
import sys, numpy as np, zarr_vectors as zv
rng = np.random.default_rng(1)
n = int(sys.argv[2])
positions = rng.random((n, 3), dtype=np.float32) * 1000
zv.write_points(sys.argv[1], positions, chunk_shape=50.0,
                attributes={"a": rng.random(n, dtype=np.float32)}, mode="w")
print("done", flush=True)
"""


def _start(path: Path, n: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(n)], stdout=subprocess.DEVNULL, text=True
    )


@pytest.mark.parametrize("delay", [0.3, 0.6, 0.9, 1.2])
def test_killed_first_write_never_opens_as_complete(tmp_path: Path, delay: float) -> None:
    path = tmp_path / "s.zarrvectors"
    proc = _start(path, 3_000_000)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    if (path / "zarr.json").exists():
        try:
            opened = zv.open(path)
        except zv.NotAZarrVectorsStoreError:
            assert not zv.validate(path, level=1).ok
        else:  # the write had finished before the kill: then it must be whole and valid
            assert opened.vertex_count == 3_000_000
            assert zv.validate(path, level=3).ok
    else:
        with pytest.raises((zv.NotAZarrVectorsStoreError, zv.StoreNotFoundError)):
            zv.open(path)
    zv.write_points(path, np.ones((10, 3)), chunk_shape=50.0, mode="w")
    assert zv.validate(path, level=3).ok


def test_killed_overwrite_leaves_the_old_store_intact(tmp_path: Path) -> None:
    path = tmp_path / "s.zarrvectors"
    old = np.random.default_rng(0).random((5000, 3)) * 100
    zv.write_points(path, old, chunk_shape=25.0)
    proc = _start(path, 3_000_000)
    time.sleep(0.8)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    opened = zv.open(path)
    assert opened.vertex_count in (5000, 3_000_000)
    assert zv.validate(path, level=3).ok
