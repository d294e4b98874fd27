"""The links of warm object box queries: the query and its links step, beside the floor.

``python -m benchmarks.object_links [--kinds skeletons mesh streamlines]`` writes the
stores of :mod:`benchmarks.objects` (default sizes), then per kind: warm boxes (a fresh
handle per box, the first query not timed, then ``--repeat`` queries of the same box;
median per box, median over the boxes), moving boxes (a fresh random box each query on
one handle) and, for skeletons, the 25% boxes; CPU (``time.process_time``) and wall
time, the thread CPU of :meth:`ObjectPlan._links` (the ``links/0`` read, the
translation to result rows and the cross-chunk links) and the floor
(``Frame.query``). Every answer is checked against brute force (``same_id_set``).
Compare trees by running it alternately in fresh processes (``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from statistics import median
from typing import Any

import numpy as np

import zarr_vectors as zv
from benchmarks.objects import (
    DEFAULT_SIZES,
    ObjectSet,
    make_boxes,
    make_mesh,
    make_skeletons,
    make_streamlines,
    same_id_set,
    warm_up,
)
from zarr_vectors.query import _object_plan

__all__ = ["main"]

_STEP = "_links"
"""The plan's method timed as the links step."""

_MAKERS: dict[str, Callable[[], ObjectSet]] = {
    "skeletons": lambda: make_skeletons(*DEFAULT_SIZES.skeletons, 0),
    "mesh": lambda: make_mesh(*DEFAULT_SIZES.mesh, 0),
    "streamlines": lambda: make_streamlines(*DEFAULT_SIZES.streamlines[0], 0),
}


@contextmanager
def _links_timer() -> Iterator[list[float]]:
    """Thread CPU seconds of every :meth:`ObjectPlan._links` call while open."""
    spent: list[float] = []
    original = _object_plan.ObjectPlan._links

    def timed(self: Any, *args: Any) -> Any:
        begin = time.thread_time()
        try:
            return original(self, *args)
        finally:
            spent.append(time.thread_time() - begin)

    setattr(_object_plan.ObjectPlan, _STEP, timed)
    try:
        yield spent
    finally:
        setattr(_object_plan.ObjectPlan, _STEP, original)


def _query(store: Any, box: Any) -> tuple[float, float, Any]:
    """CPU and wall seconds of one query, and its answer."""
    wall, cpu = time.perf_counter(), time.process_time()
    found = store.query(box)
    return time.process_time() - cpu, time.perf_counter() - wall, found


def _warm(data: ObjectSet, path: str, fraction: float, boxes: int, repeat: int) -> dict[str, Any]:
    """Warm boxes: medians per box, then over the boxes (ms)."""
    per_box: list[tuple[float, float, float, float]] = []
    ok = True
    for box in make_boxes(fraction, boxes, 0):
        store = zv.open(path)
        ok &= same_id_set(store.query(box), data.frame, data.frame.owners(box), data.links_name)
        cpu, wall = [], []
        with _links_timer() as links:
            for _ in range(repeat):
                c, w, found = _query(store, box)
                cpu.append(c)
                wall.append(w)
        ok &= same_id_set(found, data.frame, data.frame.owners(box), data.links_name)
        floor = [_timed(partial(data.frame.query, box)) for _ in range(5)]
        per_box.append((median(cpu), median(wall), median(links or [0.0]), median(floor)))
    cols = np.median(np.array(per_box), axis=0) * 1e3
    return {"cpu": cols[0], "wall": cols[1], "links": cols[2], "floor": cols[3], "ok": ok}


def _moving(data: ObjectSet, path: str, fraction: float, boxes: int) -> dict[str, Any]:
    """Moving boxes on one handle (the first not timed): medians (ms)."""
    store = zv.open(path)
    first, *moving = make_boxes(fraction, boxes + 1, 1)
    store.query(first)
    cpu, wall = [], []
    ok = True
    with _links_timer() as links:
        for box in moving:
            c, w, found = _query(store, box)
            cpu.append(c)
            wall.append(w)
            ok &= same_id_set(found, data.frame, data.frame.owners(box), data.links_name)
    link = median(links) if links else 0.0
    return {"cpu": median(cpu) * 1e3, "wall": median(wall) * 1e3, "links": link * 1e3, "ok": ok}


def _timed(func: Callable[[], object]) -> float:
    begin = time.perf_counter()
    func()
    return time.perf_counter() - begin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.object_links")
    parser.add_argument("--kinds", nargs="+", choices=list(_MAKERS), default=["skeletons"])
    parser.add_argument("--repeat", type=int, default=60, help="warm queries a box")
    args = parser.parse_args(argv)
    print("| case | CPU ms | wall ms | links step ms (thread CPU) | floor ms | ok |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        warm_up(tmp)
        for kind in args.kinds:
            data = _MAKERS[kind]()
            path = os.path.join(tmp, f"{kind}.zv")
            data.write(path)
            rows = [("1% warm", _warm(data, path, 0.01, 5, args.repeat))]
            rows.append(("1% moving", _moving(data, path, 0.01, 55)))
            if kind == "skeletons":
                rows.append(("25% warm", _warm(data, path, 0.25, 2, max(args.repeat // 6, 3))))
            for case, m in rows:
                floor = f"{m['floor']:.3f}" if "floor" in m else ""
                print(
                    f"| {kind} {case} | {m['cpu']:.3f} | {m['wall']:.3f} | {m['links']:.3f} "
                    f"| {floor} | {m['ok']} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
