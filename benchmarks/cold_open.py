"""``python -m benchmarks.cold_open``: what a cold 1% skeleton box costs (issue 39, item 2).

Cold = ``zv.open`` + the first query on that handle (page cache warm, kernels compiled: a
first pass over the boxes runs before anything is timed). The store is
``benchmarks.objects.make_skeletons(100, 1000, 0)`` (chunks 40 mm, bins 10 mm), the boxes
``make_boxes(0.01, 5, 0)``; every answer is checked against brute force (the same
objects, each whole and exact).

Rows: per cold query, the process CPU (``time.process_time``) and wall time, median and
least over ``--rounds`` x 5 boxes; the CPU of ``zv.open`` alone; the same box again on its
handle (warm); and the exact counts of one cold query per box (median over the boxes):
Python calls (cProfile), files opened (:class:`~zarr_vectors.store.links.LocalTree`) and
request waves (``StoreIO.get_many`` + ``StoreIO.read_metadata`` calls). On a shared machine
the times swing with the load (printed); the counts do not.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import zarr_vectors as zv
from benchmarks.objects import ObjectSet, make_boxes, make_skeletons, same_id_set
from zarr_vectors.kernels._jit import set_kernel_mode
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.links import LocalTree

__all__ = ["main"]


@contextmanager
def _counting(owner: type, name: str, seen: list[int]) -> Iterator[None]:
    """Count the calls of ``owner.name`` into ``seen[0]`` while the scope is open."""
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        return real(*args, **kwargs)

    setattr(owner, name, counted)
    try:
        yield
    finally:
        setattr(owner, name, real)


def _counts(query: Callable[[], object]) -> tuple[int, int, int]:
    """Python calls, files opened and request waves of one call of ``query``."""
    profile = cProfile.Profile()
    profile.runcall(query)
    calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
    opens, waves = [0], [0]
    with (
        _counting(LocalTree, "_open", opens),
        _counting(StoreIO, "get_many", waves),
        _counting(StoreIO, "read_metadata", waves),
    ):
        query()
    return int(calls), opens[0], waves[0]


def _cold_query(path: str, box: tuple[Any, Any]) -> object:
    return zv.open(path).query(box)


def _measure(data: ObjectSet, path: str, rounds: int) -> dict[str, list[float]]:
    boxes = make_boxes(0.01, 5, 0)
    for box in boxes:  # kernels compiled or loaded, page cache warm
        zv.open(path).query(box)
    out: dict[str, list[float]] = {k: [] for k in ("cpu", "wall", "open", "warm", "ok")}
    for _ in range(rounds):
        for box in boxes:
            cpu, wall = time.process_time(), time.perf_counter()
            store = zv.open(path)
            opened = time.process_time()
            result = store.query(box)
            out["cpu"].append(time.process_time() - cpu)
            out["wall"].append(time.perf_counter() - wall)
            out["open"].append(opened - cpu)
            expected = data.frame.owners(box)
            out["ok"].append(float(same_id_set(result, data.frame, expected, data.links_name)))
            cpu = time.process_time()
            store.query(box)
            out["warm"].append(time.process_time() - cpu)
    counted = [_counts(partial(_cold_query, path, box)) for box in boxes]
    for i, name in enumerate(("calls", "opens", "waves")):
        out[name] = [float(c[i]) for c in counted]
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_open")
    parser.add_argument("--rounds", type=int, default=6, help="passes over the 5 boxes")
    args = parser.parse_args(argv)
    set_kernel_mode("compiled")
    data = make_skeletons(100, 1000, 0)
    with tempfile.TemporaryDirectory(prefix="zv-bench-cold-open-") as tmp:
        path = os.path.join(tmp, "skeletons.zv")
        data.write(path)
        found = _measure(data, path, args.rounds)
    med, least = statistics.median, min
    ms = 1e3
    rows = [
        (
            "cold CPU, median / least",
            f"{med(found['cpu']) * ms:.2f} / {least(found['cpu']) * ms:.2f} ms",
        ),
        (
            "cold wall, median / least",
            f"{med(found['wall']) * ms:.2f} / {least(found['wall']) * ms:.2f} ms",
        ),
        ("zv.open CPU, median", f"{med(found['open']) * ms:.2f} ms"),
        ("warm CPU (same box), median", f"{med(found['warm']) * ms:.2f} ms"),
        ("Python calls a cold query", f"{med(found['calls']):,.0f}"),
        ("files opened a cold query", f"{med(found['opens']):.0f}"),
        ("request waves a cold query", f"{med(found['waves']):.0f}"),
        ("answers equal brute force", "yes" if all(found["ok"]) else "NO"),
        ("load (1 min)", f"{os.getloadavg()[0]:.2f}"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"| {'cold 1% skeleton box'.ljust(width)} | value |")
    print(f"| {'-' * width} | --- |")
    for name, value in rows:
        print(f"| {name.ljust(width)} | {value} |")
    return 0 if all(found["ok"]) else 1


if __name__ == "__main__":
    sys.exit(main())
