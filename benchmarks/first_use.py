"""First use: import, a first small write and box query of points and of streamlines, in a
fresh process with an empty numba cache, and where that time goes.

``python -m benchmarks.first_use`` runs the scenario ``--runs`` times, each in a child
process (``python -m benchmarks.first_use --child MODE``) whose ``NUMBA_CACHE_DIR`` is a
new empty directory, so every kernel it needs is compiled (or run as Python, see
:mod:`zarr_vectors.kernels._jit`) as on a fresh virtualenv. The child times, with
:func:`time.perf_counter`:

* ``import``: ``import zarr_vectors`` (through :func:`importlib.import_module`, nothing of
  the package imported before);
* ``write points``: :func:`zarr_vectors.write_points` of 1,000 float32 points with one
  float32 attribute (the data of ``benchmarks._data``);
* ``query points``: ``zv.open`` plus one 1% box;
* ``write streamlines``: :func:`zarr_vectors.write_polylines` of 20 x 100 streamline
  vertices (``benchmarks.objects.make_streamlines``, vertex and object attributes);
* ``query streamlines``: ``zv.open`` plus one 1% box.

Inside each step it adds up the time numba spent compiling (its ``numba:compile`` events,
outermost only, so a kernel compiled inside another counts once) and the time kernels ran
as Python. Then it runs the same steps again on new paths in the same process (``warm``:
what the steps cost once everything is compiled or loaded).

``--mode compiled`` makes every kernel call compile, as before the Python path existed
(the "before" figure); ``--kernels`` lists, per step, every kernel and signature compiled
with its time (nested compilations indented); ``--warmup`` also times
:func:`zarr_vectors.warmup` in a fresh cache and then the scenario on the cache it filled.

``--demo`` times the README's first command instead: ``zarr-vectors demo`` (``--points``,
default 1,000,000) in a fresh process on an empty numba cache (its first run: the demo
compiles its kernels first, then times its steps), then again on the cache it filled (the
warm run); per run, the demo's warm-up line, the time numba spent compiling, and the wall
and CPU time of the whole process. ``--base TREE`` runs another source tree's
``zarr_vectors`` (e.g. a checkout of main) the same way, alternating with this one.
Only the standard library is imported at module level.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from benchmarks._measure import log, run_child

__all__ = ["STEPS", "main"]

STEPS = ("import", "write points", "query points", "write streamlines", "query streamlines")
POINTS = 1000
STREAMLINES = (20, 100)
TARGET = 5.0
"""Seconds the whole scenario may take with an empty cache (issue 34)."""
THIS_TREE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A child of --demo: ``zarr-vectors demo --dir TMP --points argv[1]`` in this process, with
# the compilations numba ran; prints one JSON line.
_DEMO_CHILD = """
import contextlib, io, json, sys, tempfile, time
begin, cpu = time.perf_counter(), time.process_time()
import zarr_vectors
from zarr_vectors.cli import main
from zarr_vectors.kernels import CompileLog
out = io.StringIO()
with tempfile.TemporaryDirectory() as tmp, CompileLog() as log, contextlib.redirect_stdout(out):
    code = main(["demo", "--dir", tmp, "--points", sys.argv[1]])
print(json.dumps({"code": code, "wall": time.perf_counter() - begin,
    "cpu": time.process_time() - cpu, "compile": log.seconds, "compiled": log.count,
    "lines": out.getvalue().splitlines(), "zarr_vectors": zarr_vectors.__file__}))
"""


class _CompileLog:
    """Records numba's compile events: outermost time per step, and every event."""

    def __init__(self) -> None:
        self.step = "import"
        self.open: list[tuple[float, dict[str, Any]]] = []
        self.outer: dict[str, float] = {}
        self.events: list[dict[str, Any]] = []

    def on_start(self, event: Any) -> None:
        func = event.data["dispatcher"].py_func
        record = {
            "step": self.step,
            "depth": len(self.open),
            "kernel": f"{func.__module__}.{func.__qualname__}",
            "args": ", ".join(str(a) for a in event.data["args"]),
            "seconds": 0.0,
        }
        self.events.append(record)
        self.open.append((time.perf_counter(), record))

    def on_end(self, event: Any) -> None:
        begin, record = self.open.pop()
        record["seconds"] = time.perf_counter() - begin
        if not self.open:
            self.outer[self.step] = self.outer.get(self.step, 0.0) + record["seconds"]


def _listen(log_: _CompileLog) -> None:
    event = importlib.import_module("numba.core.event")

    class Listener(event.Listener):  # type: ignore[misc,name-defined]
        def on_start(self, ev: Any) -> None:
            log_.on_start(ev)

        def on_end(self, ev: Any) -> None:
            log_.on_end(ev)

    event.register("numba:compile", Listener())


def _scenario(zv: Any, tmp: str, tag: str) -> list[tuple[str, Callable[[], Any]]]:
    """The four steps after the import, writing under ``tmp`` (names ending in ``tag``)."""
    data = importlib.import_module("benchmarks._data")
    objects = importlib.import_module("benchmarks.objects")
    positions, attribute = data.make_points(POINTS, 0)
    box = data.make_boxes(0.01, 1, 0)[0]
    lines = objects.make_streamlines(*STREAMLINES, 0)
    line_box = objects.make_boxes(0.01, 1, 0)[0]
    points, streamlines = os.path.join(tmp, f"p{tag}.zv"), os.path.join(tmp, f"s{tag}.zv")
    return [
        (
            "write points",
            lambda: zv.write_points(points, positions, attributes={"value": attribute}),
        ),
        ("query points", lambda: zv.open(points).query(box)),
        ("write streamlines", lambda: lines.write(streamlines)),
        ("query streamlines", lambda: zv.open(streamlines).query(line_box)),
    ]


def _child(mode: str, warmup: bool) -> dict[str, Any]:
    clock = time.perf_counter
    begin = clock()
    zv = importlib.import_module("zarr_vectors")
    times = {"import": clock() - begin}
    jit = importlib.import_module("zarr_vectors.kernels._jit")
    if hasattr(jit, "set_kernel_mode"):  # an older checkout (before first use) has no modes
        jit.set_kernel_mode(mode)
    python_seconds = getattr(jit, "interpreted_seconds", lambda: 0.0)
    compiles = _CompileLog()
    _listen(compiles)
    interpreted: dict[str, float] = {}
    report: dict[str, Any] = {"mode": mode}
    with tempfile.TemporaryDirectory(prefix="zv-bench-first-", dir="/tmp") as tmp:
        if warmup:
            compiles.step = "warmup"
            t = clock()
            zv.warmup()
            report["warmup"] = clock() - t
        for step, run in _scenario(zv, tmp, "1"):
            compiles.step = step
            before, t = python_seconds(), clock()
            run()
            times[step] = clock() - t
            interpreted[step] = python_seconds() - before
        warm = {}
        for step, run in _scenario(zv, tmp, "2"):
            compiles.step = f"{step} (warm)"
            t = clock()
            run()
            warm[step] = clock() - t
    report.update(
        times=times,
        total=sum(times.values()),
        compile={step: compiles.outer.get(step, 0.0) for step in (*STEPS, "warmup")},
        interpreted=interpreted,
        warm=warm,
        events=compiles.events,
    )
    return report


def _run(mode: str, warmup: bool, cache: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="zv-bench-numba-", dir="/tmp") as fresh:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache or fresh}
        args = ["--child", mode] + (["--warmup"] if warmup else [])
        begin = time.perf_counter()
        report = run_child("benchmarks.first_use", *args, env=env)
        report["process"] = time.perf_counter() - begin
    return report


def _demo_run(tree: str, cache: str, points: int) -> dict[str, Any]:
    """One ``zarr-vectors demo`` of ``tree`` in a new process with ``NUMBA_CACHE_DIR=cache``."""
    env = {**os.environ, "PYTHONPATH": tree, "NUMBA_CACHE_DIR": cache}
    load = os.getloadavg()[0]
    done = subprocess.run(
        [sys.executable, "-c", _DEMO_CHILD, str(points)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the demo of {tree} failed:\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    if not report["zarr_vectors"].startswith(os.path.join(tree, "")):
        raise RuntimeError(f"the child imported {report['zarr_vectors']}, not {tree}'s")
    warmup = re.search(r": ([0-9.]+) s", report["lines"][1])
    report["warmup"] = float(warmup.group(1)) if warmup else float("nan")
    report["timed steps compiled"] = any("of it compiling" in line for line in report["lines"])
    report["load"] = load
    return report


def _demo(
    runs: int, points: int, base: str | None
) -> tuple[list[str], dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]]:
    """``--demo``: first and warm run of each tree, alternating; the table's lines and the
    (first, warm) reports of each tree."""
    trees = {"this": THIS_TREE, **({"base": os.path.abspath(base)} if base else {})}
    reports: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {t: [] for t in trees}
    for run in range(runs):
        for who in sorted(trees, reverse=run % 2 == 1):
            log(f"demo, run {run + 1} of {runs}: {who}, empty numba cache, then warm")
            with tempfile.TemporaryDirectory(prefix="zv-bench-numba-", dir="/tmp") as cache:
                first = _demo_run(trees[who], cache, points)
                reports[who].append((first, _demo_run(trees[who], cache, points)))
    head = (
        f"{'tree':<6} {'warm-up s':>18} {'compiling s':>18} {'kernels':>8} {'process s':>18} "
        f"{'CPU s':>18} {'warm run s':>18} {'warm CPU s':>18}"
    )
    lines = [
        f"zarr-vectors demo --points {points:,}: first run on an empty numba cache, then the "
        f"warm run on it; median (min-max) of {runs} runs",
        head,
        "-" * len(head),
    ]
    for who, pairs in reports.items():
        firsts, warms = [p[0] for p in pairs], [p[1] for p in pairs]
        lines.append(
            f"{who:<6} {_span([r['warmup'] for r in firsts]):>18} "
            f"{_span([r['compile'] for r in firsts]):>18} "
            f"{statistics.median(r['compiled'] for r in firsts):>8g} "
            f"{_span([r['wall'] for r in firsts]):>18} {_span([r['cpu'] for r in firsts]):>18} "
            f"{_span([r['wall'] for r in warms]):>18} {_span([r['cpu'] for r in warms]):>18}"
        )
    every = [r for pairs in reports.values() for pair in pairs for r in pair]
    compiled_inside = sum(r["timed steps compiled"] for r in every)
    lines.append(
        f"load average (1 min) at the runs' starts: {min(r['load'] for r in every):.1f}-"
        f"{max(r['load'] for r in every):.1f}; runs whose timed steps compiled: {compiled_inside}"
    )
    lines.append(f"this tree's first run, as printed: {reports['this'][-1][0]['lines'][1].strip()}")
    return lines, reports


def _span(values: list[float]) -> str:
    """``median (min-max)`` of seconds, or the one value."""
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def _table(reports: list[dict[str, Any]]) -> list[str]:
    head = f"{'step':<20} {'time s':>20} {'compiling s':>20} {'as Python s':>18} {'warm s':>18}"
    lines = [head, "-" * len(head)]
    for step in STEPS:
        warm = [r["warm"][step] for r in reports] if step != "import" else []
        lines.append(
            f"{step:<20} {_span([r['times'][step] for r in reports]):>20} "
            f"{_span([r['compile'][step] for r in reports]):>20} "
            f"{_span([r['interpreted'].get(step, 0.0) for r in reports]):>18} "
            f"{_span(warm) if warm else '':>18}"
        )
    totals = [r["total"] for r in reports]
    status = "PASS" if statistics.median(totals) <= TARGET else "FAIL"
    lines.append(
        f"{'total':<20} {_span(totals):>20} "
        f"{_span([sum(r['compile'][s] for s in STEPS) for r in reports]):>20}"
        f"   target <= {TARGET:g} s: {status}"
    )
    lines.append(
        "whole child process (interpreter start-up, data, warm steps included): "
        f"{_span([r['process'] for r in reports])} s"
    )
    if "warmup" in reports[0]:
        lines.append(
            f"zv.warmup() first, in the fresh cache: {_span([r['warmup'] for r in reports])} s "
            f"(compiling {_span([r['compile']['warmup'] for r in reports])} s); "
            "the steps above ran after it"
        )
    return lines


def _kernel_lines(report: dict[str, Any]) -> list[str]:
    lines = ["", "kernels compiled per step (time includes the nested ones below it):"]
    step = None
    for event in report["events"]:
        if event["step"] != step:
            step = event["step"]
            lines.append(f"[{step}]")
        indent = "  " * (event["depth"] + 1)
        lines.append(f"{indent}{event['seconds']:6.3f} s  {event['kernel']}({event['args']})")
    if step is None:
        lines.append("  (none)")
    return lines


def _write_json(path: str | None, reports: Any) -> None:
    """``--json PATH``: every child's report."""
    if path:
        with open(path, "w") as f:
            json.dump(reports, f, indent=1)


def main(argv: list[str] | None = None) -> int:
    """Run the first-use scenario in fresh processes and print the split (see module doc)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_use", description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes to run (default 3)")
    parser.add_argument(
        "--mode",
        choices=("auto", "compiled", "python"),
        default="auto",
        help="kernel mode of the child (default auto; compiled = every call compiles)",
    )
    parser.add_argument("--kernels", action="store_true", help="list the kernels compiled per step")
    parser.add_argument("--warmup", action="store_true", help="run zv.warmup() before the steps")
    parser.add_argument("--json", metavar="PATH", help="also write every child's report")
    parser.add_argument(
        "--demo", action="store_true", help="time zarr-vectors demo's first and warm run instead"
    )
    parser.add_argument(
        "--points", type=int, default=1_000_000, help="--demo: points (default 1,000,000)"
    )
    parser.add_argument("--base", metavar="TREE", help="--demo: another source tree beside this")
    parser.add_argument("--child", metavar="MODE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.demo:
        lines, demo_reports = _demo(args.runs, args.points, args.base)
        print("\n".join(lines))
        _write_json(args.json, demo_reports)
        return 0
    if args.child:
        print(json.dumps(_child(args.child, args.warmup)))
        return 0
    reports = []
    for run in range(args.runs):
        log(f"first use, run {run + 1} of {args.runs} (mode {args.mode}, empty numba cache)")
        reports.append(_run(args.mode, args.warmup, None))
    print(
        f"first use, empty numba cache, kernel mode {args.mode}: "
        f"median (min-max) of {args.runs} runs"
    )
    print("\n".join(_table(reports)))
    if args.kernels:
        print("\n".join(_kernel_lines(reports[-1])))
    _write_json(args.json, reports)
    return 0


if __name__ == "__main__":
    sys.exit(main())
