"""Peak memory of ``zv.PointWriter`` against its ``memory_budget``, one fresh process a case.

Each case (``python -m benchmarks.point_writer_memory --child N CASE BUDGET_MIB``) warms the
writer up on 2,000 points, makes ``N`` uniform float32 points in a 1000-unit cube (chunks of
125 units), reads its resident set size, resets the peak (``VmHWM``), appends every point in
one batch, closes the writer and prints one JSON line: the peak above the RSS before the
write, wall and CPU (``time.process_time``, every thread) seconds, and the load average.

Cases: ``plain``; ``ids`` (object ids ``arange(n) // 100``: scattered objects, ~90 chunks
each); ``attr`` (one float32 attribute); ``ids_attr``; ``ids_order``
(``WriteOptions(object_order=True)``); ``levels`` (``levels=2``); ``nochunk`` (no
``chunk_shape``: two passes).

Run: ``PYTHONPATH=. python -m benchmarks.point_writer_memory --size 1e7 --budget 128``;
``--base DIR`` runs every case with the ``zarr_vectors`` of another tree (e.g. a worktree of
``main``) too, alternating base and this tree ``--repeat`` times.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._measure import REPO_ROOT, proc_status_kb, reset_peak_rss, run_child

CASES = ("plain", "ids", "attr", "ids_attr", "ids_order", "levels", "nochunk")


def _columns(case: str, n: int, rng: np.random.Generator) -> dict[str, Any]:
    """The ``append`` keyword arguments of a case for ``n`` points."""
    given: dict[str, Any] = {}
    if "ids" in case:
        given["object_ids"] = np.arange(n, dtype=np.int64) // 100
    if "attr" in case:
        given["attributes"] = {"v": rng.random(n, dtype=np.float32)}
    return given


def _write(path: str, case: str, budget: int, positions: np.ndarray, given: dict[str, Any]) -> None:
    zv = importlib.import_module("zarr_vectors")  # of the tree the child was given
    options = zv.WriteOptions(object_order=True) if "order" in case else None
    with zv.PointWriter(
        path,
        chunk_shape=None if case == "nochunk" else 125.0,
        memory_budget=budget,
        progress=False,
        options=options,
        levels=2 if case == "levels" else None,
    ) as writer:
        writer.append(positions, **given)


def child(n: int, case: str, budget_mib: int) -> dict[str, Any]:
    """Measure one case in this process (see the module docstring)."""
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp(prefix="zv-bench-pwm-", dir="/tmp")
    try:
        warm = rng.random((2000, 3), dtype=np.float32) * np.float32(1000)
        _write(os.path.join(tmp, "warm"), case, budget_mib << 20, warm, _columns(case, 2000, rng))
        positions = rng.random((n, 3), dtype=np.float32) * np.float32(1000)
        given = _columns(case, n, rng)
        reset = reset_peak_rss()
        before = proc_status_kb("VmRSS") or 0
        wall, cpu = time.perf_counter(), time.process_time()
        _write(os.path.join(tmp, "store"), case, budget_mib << 20, positions, given)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        peak = proc_status_kb("VmHWM") or 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "case": case,
        "n": n,
        "budget_mib": budget_mib,
        "above_mib": (peak - before) / 1024,
        "wall": wall,
        "cpu": cpu,
        "load": os.getloadavg()[0],
        "peak_reset": reset,
        "zarr_vectors": importlib.import_module("zarr_vectors").__file__,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", default="1e7")
    parser.add_argument("--budget", type=int, default=128, help="MiB")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--child", nargs=4, metavar=("N", "CASE", "BUDGET_MIB", "TREE"))
    parser.add_argument("--base", type=Path, help="another tree to measure, alternating")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    if args.child:
        n, case, budget, tree = args.child
        sys.path.insert(0, tree)  # its zarr_vectors ahead of any other
        print(json.dumps(child(int(float(n)), case, int(budget))))
        return
    trees = {"this": REPO_ROOT}
    if args.base is not None:
        trees = {"base": args.base.resolve(), **trees}
    print("| case | tree | n | budget | peak above baseline | / budget | wall | CPU | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        for _ in range(args.repeat):
            for tree, path in trees.items():
                got = run_child(
                    "benchmarks.point_writer_memory",
                    "--child",
                    args.size,
                    case,
                    str(args.budget),
                    str(path),
                )
                assert str(path) in got["zarr_vectors"], got["zarr_vectors"]
                print(
                    f"| {case} | {tree} | {int(float(args.size)):.0e} | {args.budget} MiB | "
                    f"{got['above_mib']:.0f} MiB | {got['above_mib'] / args.budget:.2f} | "
                    f"{got['wall']:.2f} s | {got['cpu']:.2f} s | {got['load']:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
