"""Levels of detail of a point cloud: their build cost, storage and overview latency (issue 37).

Usage: ``python -m benchmarks.levels [--points N | --quick] [--repeat R] [--dir DIR]
[--json PATH] [--stream N] [--stream-only] [--parallel N [--baseline DIR]]``. The points of
:func:`benchmarks._data.make_points` (one float32 attribute) are written, in the same
process and alternating, without levels, with ``levels="auto"`` (``sample``) and with
``Levels(method="aggregate")``, each into a fresh directory; then ``build_levels`` adds
``sample`` levels to a store written without them. Each time is the median of
``--repeat`` runs, as wall-clock time and as the process's CPU time (every thread:
steadier on a shared machine); ``ours/floor`` is the ratio to the write without levels,
the ``floor`` of these rows. Storage: the ``sample`` store's bytes over those of the
store without levels (level 0). Overview: a fresh ``zv.open`` plus
``query(max_vertices=100_000)`` of everything, median of ``--repeat``.

Streaming (``--stream N``, ``--stream-only`` for these rows alone):
``write_points_stream`` of N points in batches of 10^6 (:func:`make_points` per batch,
so the input never exists whole; ``chunk_shape`` the cube of about 50,000 points, the
default memory budget), without and with ``levels="auto"``, alternating, each in a fresh
process (``--stream-child``): wall and CPU time (the child's user + system), peak
resident set size over the child's baseline after warm-up (``VmHWM`` reset), and the
store's bytes over those of the store without levels. Each child first warms up on the
path it times (a 20,000-point ``write_points_stream`` without levels, or with ``sample``
levels of a low target so that every level step runs), so no kernel is compiled or loaded
from numba's cache inside the timed write; the seconds each warm-up took (first use) are in
the detail column. Issue 37's target: at 10^8 points,
peak under 2 GiB, wall at most 1.3x, storage at most 1.2x. Then, in another fresh process
(kernels warmed on a tiny store, the streamed store's files dropped from the page cache with
``posix_fadvise``), a fresh open plus ``query(max_vertices=100_000)`` of everything, cold
(the first) and warm (median of three more), and whether the result holds a vertex in every
cell of its level's bins that level 0 occupies (level 0 read in slabs).

Parallel (``--parallel N``, only these rows with ``--stream-only``): ``write_points_parallel``
on 2 local workers without and with levels, and with ``--baseline DIR`` the same write by
another ``zarr_vectors`` package (:mod:`benchmarks._parallel_levels`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv
from benchmarks._data import ATTRIBUTE, CUBE, make_points, warm_up
from benchmarks._measure import (
    log,
    median,
    proc_status_kb,
    reset_peak_rss,
    run_child,
    tree_size,
)
from benchmarks._parallel_levels import parallel_rows
from benchmarks._table import Row, format_table
from zarr_vectors.kernels import assign_chunks_and_bins

BUDGET = 100_000
"""The vertex budget of the overview query."""

WRITE_TARGET = 1.3
"""Issue 37: a write with levels takes at most 1.3x the same write without."""

STORAGE_TARGET = 1.2
"""Issue 37: a store with ``sample`` levels holds at most 1.2x the bytes of level 0."""

OVERVIEW_TARGET = 0.1
"""Issue 37: a fresh open plus the overview query in at most 100 ms."""

EVERYTHING = (np.full(3, -np.inf), np.full(3, np.inf))
"""The box of everything (unbounded on every axis)."""

CASES: dict[str, Any] = {
    "none": None,
    "sample": "auto",
    "aggregate": zv.Levels(method="aggregate"),
}


def _timed(func: Callable[[], Any]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    func()
    return time.perf_counter() - wall, time.process_time() - cpu


def _writes(root: Path, n: int, repeat: int, seed: int) -> dict[str, list[tuple[float, float]]]:
    """Alternating writes of every case, each into a fresh directory, plus build_levels."""
    positions, values = make_points(n, seed)
    attributes = {ATTRIBUTE: values}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in [*CASES, "build"]}
    for r in range(repeat):
        for name, levels in CASES.items():
            path = root / f"{name}.zarrvectors"
            shutil.rmtree(path, ignore_errors=True)
            write = partial(zv.write_points, path, positions, attributes=attributes, levels=levels)
            times[name].append(_timed(write))
        path = root / "build.zarrvectors"
        shutil.rmtree(path, ignore_errors=True)
        zv.write_points(path, positions, attributes=attributes)
        times["build"].append(_timed(partial(zv.build_levels, path)))
        log(f"levels: repeat {r + 1} of {repeat} done")
    return times


def _overview(path: Path, repeat: int) -> tuple[float, int, int]:
    """Median seconds of a fresh open plus the overview query, its rows and its level."""
    seconds, rows = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        result = zv.open(path).query(EVERYTHING, max_vertices=BUDGET)
        seconds.append(time.perf_counter() - start)
        rows = len(result)
    store = zv.open(path)
    within = (info.level for info in store.levels if (info.vertex_count or 0) <= BUDGET)
    level = min(within, default=-1)
    return median(seconds), rows, level


def _rows(root: Path, n: int, repeat: int, seed: int) -> list[Row]:
    """Every row of the table for ``n`` points."""
    times = _writes(root, n, repeat, seed)
    wall = {name: median([t[0] for t in runs]) for name, runs in times.items()}
    cpu = {name: median([t[1] for t in runs]) for name, runs in times.items()}
    rows = [Row("write, no levels", n, wall["none"], None, "s", f"CPU {cpu['none']:.2f} s")]
    for name, case in (
        ("sample", "write, sample levels"),
        ("aggregate", "write, aggregate levels"),
        ("build", "build_levels after write"),
    ):
        ratio = cpu[name] / cpu["none"]
        target = f"<= {WRITE_TARGET}x" if name == "sample" else ""
        rows.append(
            Row(
                case,
                n,
                wall[name],
                wall["none"],
                "s",
                f"CPU {cpu[name]:.2f} s = {ratio:.2f}x of no levels",
                target=target,
                passed=None if not target else wall[name] <= WRITE_TARGET * wall["none"],
                extra={"cpu": cpu[name], "cpu_ratio": ratio, "runs": times[name]},
            )
        )
    level0, files0 = tree_size(root / "none.zarrvectors")
    levels, files = tree_size(root / "sample.zarrvectors")
    rows.append(
        Row(
            "size, sample levels / level 0",
            n,
            float(levels),
            float(level0),
            "B",
            f"{files} files, level 0 alone {files0}",
            target=f"<= {STORAGE_TARGET}x",
            passed=levels <= STORAGE_TARGET * level0,
        )
    )
    seconds, count, level = _overview(root / "sample.zarrvectors", repeat)
    rows.append(
        Row(
            f"open + query(max_vertices={BUDGET:,})",
            n,
            seconds,
            None,
            "s",
            f"level {level}, {count:,} vertices",
            target=f"<= {OVERVIEW_TARGET * 1000:.0f} ms",
            passed=seconds <= OVERVIEW_TARGET,
            ok=count <= BUDGET,
        )
    )
    return rows


STREAM_BATCH = 1_000_000
"""Points per batch of the streaming rows."""

STREAM_CHUNK_POINTS = 50_000
"""Points per chunk of the streaming rows: ``chunk_shape`` is the cube side that holds about
this many (given, so the stream makes one pass over the data)."""

MEMORY_TARGET_BYTES = 2 * 2**30
"""Issue 37: a 10^8-point streaming write with levels peaks under 2 GiB."""


WARM_UP_POINTS = 20_000
"""Points of the streaming warm-up write (:func:`_stream_warm_up`)."""

WARM_UP_TARGET = 100
"""``Levels.target`` of the warm-up write with levels: low enough that its 20,000 points
get several levels (``"auto"``'s 100,000 would give none), so every level step runs."""


def _stream(path: Path, n: int, seed: int, levels: Any, chunk_points: int, batch: int) -> None:
    """``write_points_stream`` of ``n`` points of :func:`make_points` in batches of
    ``batch``, ``chunk_shape`` the cube of about ``chunk_points`` points."""

    def batches() -> Any:
        for k, start in enumerate(range(0, n, batch)):
            positions, values = make_points(min(batch, n - start), seed + k)
            yield {"positions": positions, "attributes": {ATTRIBUTE: values}}

    zv.write_points_stream(
        path,
        batches(),
        chunk_shape=CUBE * (chunk_points / max(n, 1)) ** (1 / 3),
        levels=levels,
        progress=False,
    )


def _stream_warm_up(root: Path, levels: str) -> float:
    """Run the path the child times on a tiny stream (the kernels of the streaming level
    steps compiled or loaded from numba's cache here, not inside the timed write); return
    the seconds it took (first use: the cost a fresh process pays once)."""
    if levels not in ("none", "auto"):
        raise ValueError(f"unknown streaming case {levels!r}")
    start = time.perf_counter()
    warm_up(str(root))
    settings = None if levels == "none" else zv.Levels(target=WARM_UP_TARGET)
    path = root / "warm-up-stream.zarrvectors"
    _stream(path, WARM_UP_POINTS, 12345, settings, WARM_UP_POINTS // 8, WARM_UP_POINTS // 2)
    shutil.rmtree(path)
    return time.perf_counter() - start


def _stream_child(n: int, seed: int, levels: str, root: Path) -> dict[str, Any]:
    """One streaming write in this (fresh) process, after a warm-up on the same path: its
    times, peak memory and size, and the warm-up's seconds."""
    warm = _stream_warm_up(root, levels)
    path = root / f"stream-{levels}.zarrvectors"
    settings = None if levels == "none" else levels
    reset = reset_peak_rss()
    before = proc_status_kb("VmRSS") or 0
    wall, cpu = _timed(lambda: _stream(path, n, seed, settings, STREAM_CHUNK_POINTS, STREAM_BATCH))
    peak = proc_status_kb("VmHWM") or 0
    size, files = tree_size(path)
    return {
        "wall": wall,
        "cpu": cpu,
        "peak_bytes": (peak - before) * 1024,
        "peak_reset": reset,
        "bytes": size,
        "files": files,
        "warm_up": warm,
    }


def _evict(path: Path) -> None:
    """Drop the files of ``path`` from the page cache (written back first), so the next
    read of them comes from the disk: a cold read without touching other files."""
    for folder, _, names in os.walk(path):
        for name in names:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _cells(positions: np.ndarray, store: Any, level: int) -> np.ndarray:
    """The (chunk, bin) cells of ``level``'s bins that ``positions`` occupy (spec §5)."""
    meta = store.metadata
    info = store.levels[level]
    chunk = np.asarray(meta["chunk_shape"], dtype=np.float64)
    bins = np.asarray(info.bin_shape, dtype=np.float64)
    per_chunk = np.rint(chunk / bins).astype(np.int64)
    origin = np.asarray(meta["chunk_grid_origin"], dtype=np.int64)
    grid = np.asarray(store.grid_shape, dtype=np.int64)
    chunks, bin_ = assign_chunks_and_bins(positions, chunk, bins, per_chunk, origin, grid)
    return np.unique(chunks * int(np.prod(per_chunk)) + bin_)


OVERVIEW_SLABS = 16
"""Level 0 is read in this many slabs along the first axis to find its occupied cells."""


def _overview_child(path: Path, scratch: Path) -> dict[str, Any]:
    """In a fresh process, kernels warmed on another store and ``path``'s files evicted from
    the page cache: a fresh open plus the overview query (cold), then three warm ones; and
    whether the result has a vertex in every cell of its level that level 0 occupies."""
    warm_up(str(scratch))
    _evict(path)
    seconds = []
    for _ in range(4):
        start = time.perf_counter()
        result = zv.open(path).query(EVERYTHING, max_vertices=BUDGET)
        seconds.append(time.perf_counter() - start)
    store = zv.open(path)
    got = _cells(result.positions, store, result.level)
    box = store.metadata["bounding_box"]
    lo, hi = float(box["min"][0]), float(box["max"][0])
    edges = [-np.inf, *np.linspace(lo, hi, OVERVIEW_SLABS + 1)[1:-1], np.inf]
    occupied: set[int] = set()
    for a, b in itertools.pairwise(edges):
        box = (np.array([a, -np.inf, -np.inf]), np.array([b, np.inf, np.inf]))
        occupied.update(_cells(store.query(box, level=0).positions, store, result.level).tolist())
    return {
        "cold": seconds[0],
        "warm": median(seconds[1:]),
        "level": result.level,
        "vertices": len(result),
        "cells": len(occupied),
        "covered": int(np.isin(np.fromiter(occupied, np.int64), got).sum()),
    }


def _warm_ups(runs: list[dict[str, Any]]) -> str:
    """The warm-up seconds of each child, in run order (first use, outside the timing)."""
    return " / ".join(f"{run['warm_up']:.2f}" for run in runs) + " s"


def _stream_rows(n: int, repeat: int, seed: int, directory: Path | None) -> list[Row]:
    """The streaming rows: ``n`` points without and with levels, each in a child; the
    overview of the first store with levels, in another."""
    runs: dict[str, list[dict[str, Any]]] = {"none": [], "auto": []}
    overview: dict[str, Any] = {}
    for r in range(repeat):
        for levels in runs:
            root = Path(tempfile.mkdtemp(prefix="zv-bench-stream-", dir=directory))
            try:
                args = [str(n), str(seed), levels, str(root)]
                runs[levels].append(run_child("benchmarks.levels", "--stream-child", *args))
                if levels == "auto" and not overview:
                    store = str(root / "stream-auto.zarrvectors")
                    overview = run_child("benchmarks.levels", "--overview-child", store, str(root))
            finally:
                shutil.rmtree(root, ignore_errors=True)
        log(f"levels: streaming repeat {r + 1} of {repeat} done")
    m = {
        name: {key: median([run[key] for run in got]) for key in ("wall", "cpu", "peak_bytes")}
        for name, got in runs.items()
    }
    size = {name: got[0]["bytes"] for name, got in runs.items()}
    peak = m["auto"]["peak_bytes"]
    return [
        Row(
            "stream, no levels",
            n,
            m["none"]["wall"],
            None,
            "s",
            f"CPU {m['none']['cpu']:.2f} s; warm-up {_warm_ups(runs['none'])}",
        ),
        Row(
            "stream, sample levels",
            n,
            m["auto"]["wall"],
            m["none"]["wall"],
            "s",
            f"CPU {m['auto']['cpu']:.2f} s = {m['auto']['cpu'] / m['none']['cpu']:.2f}x; "
            f"warm-up {_warm_ups(runs['auto'])}",
            target=f"<= {WRITE_TARGET}x",
            passed=m["auto"]["wall"] <= WRITE_TARGET * m["none"]["wall"],
            extra={"runs": runs},
        ),
        Row(
            "stream peak RSS, sample levels",
            n,
            float(peak),
            float(m["none"]["peak_bytes"]),
            "B",
            f"over the child's baseline; no levels {m['none']['peak_bytes'] / 2**20:.0f} MiB",
            target="< 2 GiB",
            passed=peak < MEMORY_TARGET_BYTES,
        ),
        Row(
            "stream size, sample levels / none",
            n,
            float(size["auto"]),
            float(size["none"]),
            "B",
            f"{runs['auto'][0]['files']} files, level 0 alone {runs['none'][0]['files']}",
            target=f"<= {STORAGE_TARGET}x",
            passed=size["auto"] <= STORAGE_TARGET * size["none"],
        ),
        Row(
            f"stream: cold open + query(max_vertices={BUDGET:,})",
            n,
            overview["cold"],
            None,
            "s",
            f"level {overview['level']}, {overview['vertices']:,} vertices, "
            f"{overview['covered']:,} of {overview['cells']:,} occupied cells; "
            f"warm {overview['warm'] * 1000:.0f} ms",
            target=f"<= {OVERVIEW_TARGET * 1000:.0f} ms",
            passed=overview["cold"] <= OVERVIEW_TARGET,
            ok=overview["vertices"] <= BUDGET and overview["covered"] == overview["cells"],
            extra=overview,
        ),
    ]


def main() -> None:
    """Run the cases and print the table (stdout) and progress (stderr)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=float, default=1e7)
    parser.add_argument("--quick", action="store_true", help="1e6 points, 3 repeats")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--stream", type=float, default=0, help="streaming rows: points")
    parser.add_argument("--stream-only", action="store_true", help="only the streaming rows")
    parser.add_argument("--stream-child", nargs=4, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--overview-child", nargs=2, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--parallel", type=float, default=0, help="parallel rows: points")
    parser.add_argument("--baseline", type=Path, default=None, help="a zarr_vectors to compare")
    args = parser.parse_args()
    if args.overview_child is not None:
        print(json.dumps(_overview_child(*(Path(a) for a in args.overview_child))))
        return
    if args.stream_child is not None:
        n, seed, levels, root = args.stream_child
        print(json.dumps(_stream_child(int(n), int(seed), levels, Path(root))))
        return
    n, repeat = int(args.points), args.repeat
    if args.quick:
        n, repeat = 1_000_000, 3
    rows = []
    if args.stream:
        rows = _stream_rows(int(args.stream), repeat, args.seed, args.dir)
    if args.parallel:
        rows += parallel_rows(int(args.parallel), repeat, args.seed, args.dir, args.baseline)
    if not args.stream_only:
        rows = _point_rows(n, repeat, args.seed, args.dir) + rows
    print(format_table(rows))
    print(
        "ours/floor: the time over the write without levels (wall clock); "
        "detail: the same ratio of CPU times"
    )
    if args.json is not None:
        args.json.write_text(json.dumps([row.to_json() for row in rows], default=str, indent=1))


def _point_rows(n: int, repeat: int, seed: int, directory: Path | None) -> list[Row]:
    """The rows of in-memory writes, build_levels and the overview query."""
    root = Path(tempfile.mkdtemp(prefix="zv-bench-levels-", dir=directory))
    try:
        warm_up(str(root))
        warm = root / "warm.zarrvectors"
        positions, values = make_points(2000, seed)
        for levels in CASES.values():
            shutil.rmtree(warm, ignore_errors=True)
            zv.write_points(warm, positions, attributes={ATTRIBUTE: values}, levels=levels)
        return _rows(root, n, repeat, seed)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
