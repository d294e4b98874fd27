"""The object-ordered copy (spec §9.15) added to a stored point cloud: ``zv.build_object_order``
in memory (a budget above the need: one window, level 0 read whole) and out of core (a
budget well below it), time and peak memory.

The store is written once without the copy (``benchmarks.point_objects`` data: float32
points, one float32 attribute, int64 ids of objects of 100 points, ``scattered`` or
``compact``). Each build runs in a fresh process on a hard-linked copy of that store (the
build never writes through a file, it replaces them): the child warms numba up on a small
store, resets its peak RSS (``VmHWM``), builds, and prints wall and CPU seconds
(``time.process_time``), its RSS before and its peak. Budgets run alternating (A, B, A, B).
Afterwards the copies every build wrote are compared byte for byte: the budget must not
change them. The load average is printed beside every figure.

Run: ``PYTHONPATH=. python -m benchmarks.object_order_build --n 1e7 --dir /tmp/x
--budgets none,128M,64M --repeat 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import zarr_vectors as zv
from benchmarks._measure import proc_status_kb, reset_peak_rss
from benchmarks.point_objects import CHUNK, make

_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def _budget(text: str) -> int:
    """``none`` (one window: 1 TiB), or bytes with an optional K/M/G suffix."""
    if text == "none":
        return 2**40
    if text[-1] in _UNITS:
        return int(text[:-1]) * _UNITS[text[-1]]
    return int(text)


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def _child(path: str, budget: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="zv-order-warm-") as tmp:
        warm = make(3000, "scattered")
        zv.write_points(
            Path(tmp) / "w", warm[0], attributes={"v": warm[1]}, object_ids=warm[2],
            chunk_shape=CHUNK, progress=False,
        )  # fmt: skip
        zv.build_object_order(Path(tmp) / "w", memory_budget=budget, progress=False)
    reset = reset_peak_rss()
    before = proc_status_kb("VmRSS")
    wall, cpu = time.perf_counter(), time.process_time()
    zv.build_object_order(path, memory_budget=budget, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = proc_status_kb("VmHWM")
    return {"wall": wall, "cpu": cpu, "before_kb": before, "peak_kb": peak, "reset": reset}


def _linked(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, copy_function=os.link)


def _copy_files(path: Path) -> dict[str, bytes]:
    base = path / "0" / "object_order"
    return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", default="1e7")
    parser.add_argument("--layout", default="scattered", choices=("scattered", "compact"))
    parser.add_argument("--budgets", default="none,128M")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--dir", help="where the stores go (required)")
    parser.add_argument("--child", nargs=2, metavar=("PATH", "BUDGET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child[0], int(args.child[1]))))
        return
    if args.dir is None:
        parser.error("--dir is required")
    n = int(float(args.n))
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    plain = directory / f"plain-{args.layout}-{n}"
    if not plain.exists():
        positions, values, ids = make(n, args.layout)
        zv.write_points(
            plain, positions, attributes={"v": values}, object_ids=ids, chunk_shape=CHUNK,
            progress=False,
        )  # fmt: skip
        del positions, values, ids
    print("| budget | wall s | CPU s | RSS before MB | peak RSS MB | load |")
    print("|---|---|---|---|---|---|")
    budgets = args.budgets.split(",")
    copies: dict[str, dict[str, bytes]] = {}
    for _ in range(args.repeat):
        for label in budgets:
            path = directory / f"build-{label}"
            _linked(plain, path)
            load = _load()
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks.object_order_build", "--child", str(path),
                 str(_budget(label))],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            got = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"| {label} | {got['wall']:.2f} | {got['cpu']:.2f} | "
                f"{got['before_kb'] / 1024:.0f} | {got['peak_kb'] / 1024:.0f} | "
                f"{load}-{_load()} |",
                flush=True,
            )
            copies.setdefault(label, _copy_files(path))
            assert zv.open(path).metadata["zarr_vectors_version"] == "1.7"
    first = copies[budgets[0]]
    same = all(files == first for files in copies.values())
    sizes = np.array([len(v) for v in first.values()])
    print(f"copies byte-identical across budgets: {same} ({sizes.sum() / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
