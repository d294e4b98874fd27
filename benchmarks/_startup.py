"""Start-up cost in a fresh process: import, then a first small write, open and query.

The child (``python -m benchmarks._startup ours|numpy``) imports its library with
:func:`importlib.import_module` (so nothing is imported before the clock starts), writes
1000 points, opens them and queries one box, timing each step with
:func:`time.perf_counter`, and prints one JSON line. ``numpy`` is the floor: the same steps
with ``np.save``, ``np.load`` and a brute-force filter.

:func:`measure_startup` runs the zarr_vectors child twice with a fresh, empty
``NUMBA_CACHE_DIR``: the first run is a fresh environment's first use (small calls of
kernels not compiled yet run as Python, anything else compiles and fills that cache), the
second loads what the first compiled. Only the standard library is imported at module level.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
import time
from typing import Any

from benchmarks._measure import run_child
from benchmarks._table import Row, format_seconds

__all__ = ["STARTUP_POINTS", "measure_startup"]

STARTUP_POINTS = 1000
STEPS = ("import", "write", "open", "query")


def _child(kind: str) -> dict[str, float]:
    clock = time.perf_counter
    begin = clock()
    np = importlib.import_module("numpy")
    zv = importlib.import_module("zarr_vectors") if kind == "ours" else None
    times = {"import": clock() - begin}
    rng = np.random.default_rng(0)  # input creation is not timed
    positions = rng.random((STARTUP_POINTS, 3), dtype=np.float32) * np.float32(1000)
    attribute = rng.random(STARTUP_POINTS, dtype=np.float32)
    lo, hi = np.full(3, 400.0), np.full(3, 400.0 + 1000 * 0.01 ** (1 / 3))
    with tempfile.TemporaryDirectory(prefix="zv-bench-start-", dir="/tmp") as tmp:
        if zv is not None:
            path = os.path.join(tmp, "store.zv")
            t = clock()
            zv.write_points(path, positions, attributes={"value": attribute})
            times["write"], t = clock() - t, clock()
            store = zv.open(path)
            times["open"], t = clock() - t, clock()
            store.query((lo, hi))
            times["query"] = clock() - t
        else:
            paths = (os.path.join(tmp, "p.npy"), os.path.join(tmp, "a.npy"))
            t = clock()
            np.save(paths[0], positions)
            np.save(paths[1], attribute)
            times["write"], t = clock() - t, clock()
            p, a = np.load(paths[0]), np.load(paths[1])
            times["open"], t = clock() - t, clock()
            mask = ((p >= lo) & (p < hi)).all(1)
            _ = (p[mask], a[mask])  # the selected rows are the query result
            times["query"] = clock() - t
    return {**times, "total": sum(times.values())}


def _run_child(kind: str, env: dict[str, str]) -> dict[str, Any]:
    begin = time.perf_counter()
    report = run_child("benchmarks._startup", kind, env=env)
    report["process"] = time.perf_counter() - begin
    return report


def _steps(report: dict[str, Any]) -> str:
    parts = " + ".join(f"{step} {format_seconds(report[step])}" for step in STEPS)
    return f"{parts}; whole process {format_seconds(report['process'])}"


def measure_startup() -> list[Row]:
    """Time the fresh-process start-up twice (empty numba cache, then filled) and numpy once.

    Returns
    -------
    list of Row
        Two rows, ``start-up run 1`` and ``run 2``; the floor is the numpy child.
    """
    floor = _run_child("numpy", dict(os.environ))
    rows = []
    with tempfile.TemporaryDirectory(prefix="zv-bench-numba-", dir="/tmp") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for run, note in ((1, "empty numba cache (first use)"), (2, "numba cache filled by run 1")):
            ours = _run_child("ours", env)
            rows.append(
                Row(
                    f"start-up run {run}",
                    STARTUP_POINTS,
                    ours["total"],
                    floor["total"],
                    "s",
                    detail=f"{note}: {_steps(ours)}; floor: {_steps(floor)}",
                    extra={"ours": ours, "floor": floor},
                )
            )
    return rows


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1])))
