"""PointWriter holds its ``memory_budget``: the Python and numpy allocations (tracemalloc) of
a write with object ids stay within 1.5 times the budget plus a fixed amount, at a budget far
below what the index of every id at once takes (about 100 bytes a point)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np

import zarr_vectors as zv

BUDGET = 2 * 2**20
FIXED = 10 * 2**20
"""Held whatever the budget: zarr and codec state, a shard of encoded blocks, the pieces of
the chunks (measured: 8 MiB at 200,000 points and a 2 MiB budget)."""


def test_a_write_with_object_ids_stays_within_its_budget(tmp_path: Path) -> None:
    n = 200_000  # the index of every id at once: about 20 MiB
    rng = np.random.default_rng(0)
    positions = rng.random((n, 3), dtype=np.float32) * np.float32(100)
    ids = np.arange(n, dtype=np.int64) // 100  # scattered objects: ~90 chunks each
    warm = tmp_path / "warm.zarr"  # numba compiled and zarr imported before measuring
    zv.write_points(warm, positions[:500], object_ids=ids[:500], chunk_shape=10.0, progress=False)
    tracemalloc.start()
    try:
        with zv.PointWriter(
            tmp_path / "s.zarr", chunk_shape=10.0, memory_budget=BUDGET, progress=False
        ) as writer:
            writer.append(positions, object_ids=ids)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 1.5 * BUDGET + FIXED, f"peak {peak / 2**20:.1f} MiB"
    stored = zv.open(tmp_path / "s.zarr")
    assert stored.vertex_count == n
    found = stored.read_objects([7])
    assert sorted(map(tuple, found.positions.tolist())) == sorted(
        map(tuple, positions[ids == 7].tolist())
    )
