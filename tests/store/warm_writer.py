"""Imported by the fork server of the kill tests: one small run of each write they kill.

The forked children then find numba's kernels and the library's imports ready, so each
costs a fraction of a second.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from zarr.storage import MemoryStore

import zarr_vectors as zv


def _warm() -> None:
    rng = np.random.default_rng(0)
    points = rng.uniform(0, 20, (50, 3))
    lines = [np.cumsum(rng.normal(0, 1, (10, 3)), axis=0) for _ in range(3)]
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "warm.zv"
        zv.write_points(path, points, chunk_shape=5.0, progress=False)
        zv.append_points(path, points, progress=False)
        zv.write_points_stream(path, [points], chunk_shape=5.0, mode="w")
        zv.validate(path, level=3)
        zv.write_polylines(path, lines, chunk_shape=5.0, mode="w")
        zv.append_polylines(path, lines, progress=False)
    zv.write_points(MemoryStore(), points, chunk_shape=5.0, progress=False)


_warm()
