"""``python -m benchmarks.cold_footprint``: the CPU work of a cold 1% skeleton box and of its
floor, counted by valgrind's cachegrind: exact counts that do not move with the host's load
(issue 39, item 2; the times of ``benchmarks.cold_open`` do).

Child processes run under ``valgrind --tool=cachegrind --cache-sim=yes``, each with the same
start: the store of ``benchmarks.cold_open``'s skeleton box and its ``.npy`` floor
(:func:`~benchmarks.cold_open.skeleton_case`, written once, by this process), the allocator
settled, every box of ``make_boxes(0.01, 5, 0)`` asked once of both. Then ``--rounds`` x 5
boxes, a ``gc.collect()`` before each, as ``benchmarks.objects`` times a cold box: ``ours``
runs ``zv.open`` + the query, ``floor`` ``np.load`` of every array + the brute-force filter,
``none`` nothing. A query's figures are its child's totals less those of ``none``, over the
queries run. ``--base TREE`` also runs ``none`` and ``ours`` with the ``zarr_vectors`` of
another source tree (e.g. a checkout of main before a change): its query's figures are its
``ours`` less its own ``none``.

Counted, per query: instructions, L1 instruction-cache misses, and L1 data and last-level
misses, in valgrind's model of this host's L1 caches and a 32 MiB 16-way last level (an AMD
EPYC core complex's L3; this virtual machine reports one of 320 MB, which valgrind would
model as 256 MB direct mapped). Valgrind does not know Linux's ``openat2``: under it the
store's files are opened by the fallback path (an ``lstat`` of each directory once). Its
virtual CPU lacks some of the host's instructions (AVX-512), so numba compiles the kernels
for it apart (cached apart too): the first run of a tree compiles them all under valgrind,
~10 minutes; later runs load them. The counts repeat to ~0.1% (misses) and a few percent
(instructions: the decode helper thread joins only when a CPU looks idle). Results:
``results/cold_boxes.md``.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import zarr_vectors as zv
from benchmarks._measure import REPO_ROOT, settle_allocator
from benchmarks.cold_open import skeleton_case
from benchmarks.objects import Frame, make_boxes
from zarr_vectors.kernels._jit import set_kernel_mode

__all__ = ["COUNTS", "main", "parse_summary", "per_query"]

COUNTS = {
    "instructions": ("I", "refs"),
    "L1 instruction misses": ("I1", "misses"),
    "last-level instruction misses": ("LLi", "misses"),
    "L1 data misses": ("D1", "misses"),
    "last-level data misses": ("LLd", "misses"),
}
"""The rows of the table, and the lines of cachegrind's summary they come from."""

_LAST_LEVEL = "--LL=33554432,16,64"
_BOXES = 5
_MODES = ("none", "ours", "floor")


def parse_summary(text: str) -> dict[str, int]:
    """The counts of :data:`COUNTS` in cachegrind's summary (its standard error).

    Examples
    --------
    >>> parse_summary("==7== I   refs:      6,752,183\\n==7== LLd misses:    11,021\\n")
    {'instructions': 6752183, 'last-level data misses': 11021}
    """
    found = {
        (m.group(1), m.group(2)): int(m.group(3).replace(",", ""))
        for m in re.finditer(r"^==\d+== (\w+)\s+(refs|misses):\s+([\d,]+)", text, re.MULTILINE)
    }
    return {name: found[key] for name, key in COUNTS.items() if key in found}


def per_query(totals: dict[str, int], baseline: dict[str, int], queries: int) -> dict[str, float]:
    """Counts of one query: a child's ``totals`` less the ``baseline`` child's, over
    ``queries``.

    Examples
    --------
    >>> per_query({"instructions": 1_500}, {"instructions": 500}, 10)
    {'instructions': 100.0}
    """
    return {name: (totals[name] - baseline[name]) / queries for name in totals}


def _child(mode: str, directory: str, rounds: int) -> None:
    """One child's work (see the module docstring), run under valgrind."""
    set_kernel_mode("compiled")
    settle_allocator()
    path = os.path.join(directory, "skeletons.zv")
    npy = path + ".npy"
    boxes = make_boxes(0.01, _BOXES, 0)
    for box in boxes:
        zv.open(path).query(box)
        Frame.load(npy).query(box)
    for _ in range(rounds):
        for box in boxes:
            gc.collect()
            if mode == "ours":
                zv.open(path).query(box)
            elif mode == "floor":
                Frame.load(npy).query(box)


def _prepare(directory: str) -> bool:
    """Write the store and its floor into ``directory``; whether every box's answer is
    exact (checked here, outside valgrind)."""
    set_kernel_mode("compiled")
    path, check = skeleton_case(directory)
    return all(check(zv.open(path).query(box), box) for box in make_boxes(0.01, _BOXES, 0))


_BOOT = """import sys
sys.path[:0] = [sys.argv[1]]
import zarr_vectors  # from that tree; its modules are found from it from now on
sys.path[0] = sys.argv[2]  # benchmarks from this one
from benchmarks.cold_footprint import main
sys.exit(main(sys.argv[3:]))
"""
"""A child's start: ``zarr_vectors`` from the tree given first, ``benchmarks`` from the
second (a base tree may predate this module)."""


def _run(mode: str, tree: Path, directory: str, rounds: int) -> dict[str, int]:
    """The totals of one child under cachegrind, importing ``zarr_vectors`` from ``tree``."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONPATH", None)
    valgrind = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=yes",
        _LAST_LEVEL,
        "--cachegrind-out-file=/dev/null",
    ]
    command = [
        *valgrind,
        sys.executable,
        "-P",
        "-c",
        _BOOT,
        str(tree),
        str(REPO_ROOT),
        *("--child", mode, "--dir", directory, "--rounds", str(rounds)),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the {mode} child failed:\n{done.stderr[-2000:]}")
    return parse_summary(done.stderr)


def _table(found: dict[str, dict[str, float]]) -> None:
    """Print the counts per query, and ours over the floor's."""
    columns = [*found, "ours / floor"]
    print(f"| per cold query | {' | '.join(columns)} |")
    print(f"| --- |{' ---: |' * len(columns)}")
    for name in COUNTS:
        cells = [f"{found[c][name]:,.0f}" for c in found]
        ratio = found["ours"][name] / found["floor"][name] if found["floor"][name] else float("nan")
        print(f"| {name} | {' | '.join(cells)} | {ratio:.2f}x |")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_footprint")
    parser.add_argument("--rounds", type=int, default=4, help="passes over the 5 boxes")
    parser.add_argument("--base", type=Path, help="another source tree, run as 'base'")
    parser.add_argument("--child", choices=_MODES, help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.dir, args.rounds)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: apt-get install valgrind (or your system's package)")
        return 2
    queries = args.rounds * _BOXES
    with tempfile.TemporaryDirectory(prefix="zv-bench-footprint-") as directory:
        ok = _prepare(directory)
        runs = [(mode, mode, REPO_ROOT) for mode in _MODES]
        if args.base:
            runs += [(f"base {mode}", mode, args.base.resolve()) for mode in ("none", "ours")]
        with ThreadPoolExecutor(2) as pool:  # the counts do not depend on the load
            counted = pool.map(lambda run: _run(run[1], run[2], directory, args.rounds), runs)
            totals = dict(zip([run[0] for run in runs], counted, strict=True))
    found: dict[str, dict[str, float]] = {
        name: per_query(totals[prefix + mode], totals[prefix + "none"], queries)
        for name, prefix, mode in (
            ("ours", "", "ours"),
            ("floor", "", "floor"),
            ("base", "base ", "ours"),
        )
        if prefix + mode in totals
    }
    print(f"cold 1% skeleton box, {queries} queries a child, answers {'ok' if ok else 'FAIL'}")
    _table(found)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
