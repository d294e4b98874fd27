"""Rows of ``benchmarks.levels --parallel N``: ``write_points_parallel`` with levels (issue 37).

The points of :func:`benchmarks._data.make_points` (one float32 attribute), in partitions of
10^6 points saved as ``.npz`` files (the workers open them, so the coordinator never holds
the rows), are written by a ``LocalCluster`` of 2 worker processes (one thread each)
without levels and with ``levels="auto"`` (``sample``), alternating, each write in a fresh
child process (``python -m benchmarks._parallel_levels N LEVELS ROOT PARTS``) that starts
its cluster and writes the first partition (with the same levels: every kernel compiled)
before the clock: wall time of the write, the coordinator's peak resident set size over its
baseline (``VmHWM`` reset after the warm-up), and each worker's peak the same way.
``--baseline DIR`` adds the same write with levels run with the ``zarr_vectors`` package
found in DIR (e.g. an export of an older commit, where the coordinator built the levels):
the child has DIR first on its ``PYTHONPATH`` (its worker processes inherit it), and reports
which package the coordinator and the workers ran.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import distributed
import numpy as np

import zarr_vectors as zv
from benchmarks._data import ATTRIBUTE, CUBE, make_points, warm_up
from benchmarks._measure import (
    REPO_ROOT,
    log,
    median,
    proc_status_kb,
    reset_peak_rss,
    run_child,
)
from benchmarks._table import Row

__all__ = ["parallel_rows"]

PART = 1_000_000
"""Points per partition file."""

CHUNK_POINTS = 50_000
"""Points per chunk on average (``chunk_shape`` the cube of that many)."""


def _worker_reset() -> int:
    reset_peak_rss()
    return proc_status_kb("VmRSS") or 0


def _worker_peak() -> int:
    return proc_status_kb("VmHWM") or 0


def _package() -> str:
    return str(Path(zv.__file__).parent)


def _child(n: int, levels: str, root: Path, parts: Path) -> dict[str, Any]:
    """One parallel write in this (fresh) process: wall time and peak memory."""
    warm_up(str(root))
    files = sorted(str(p) for p in parts.glob("*.npz"))
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        side = CUBE * (CHUNK_POINTS / max(n, 1)) ** (1 / 3)
        chosen = None if levels == "none" else levels
        # the warm-up write compiles every kernel the timed one runs, on every process
        zv.write_points_parallel(
            root / "warm", files[:1], chunk_shape=side, client=client, levels=chosen
        )
        base = client.run(_worker_reset)
        reset = reset_peak_rss()
        before = proc_status_kb("VmRSS") or 0
        start = time.perf_counter()
        zv.write_points_parallel(
            root / f"par-{levels}",
            files,
            chunk_shape=side,
            client=client,
            levels=chosen,
            progress=False,
        )
        wall = time.perf_counter() - start
        peak = proc_status_kb("VmHWM") or 0
        workers = client.run(_worker_peak)
        packages = sorted(set(client.run(_package).values()))
    return {
        "wall": wall,
        "peak_bytes": (peak - before) * 1024,
        "peak_reset": reset,
        "worker_peak_bytes": max((workers[w] - base[w]) * 1024 for w in workers),
        "levels": len(zv.open(root / f"par-{levels}").levels) - 1,
        "package": _package(),
        "worker_packages": packages,
    }


def _save_parts(n: int, seed: int, parts: Path) -> None:
    for k, start in enumerate(range(0, n, PART)):
        positions, values = make_points(min(PART, n - start), seed + k)
        columns = {"positions": positions, ATTRIBUTE: values}
        np.savez(parts / f"part-{k:04d}.npz", allow_pickle=False, **columns)


def parallel_rows(
    n: int, repeat: int, seed: int, directory: Path | None, baseline: Path | None
) -> list[Row]:
    """The parallel rows: ``n`` points without levels, with levels (this tree) and, with
    ``baseline``, with levels by the baseline's package; each write in a child."""
    cases: dict[str, Path | None] = {"none": None, "auto": None}
    if baseline is not None:
        cases["baseline"] = baseline
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in cases}
    work = Path(tempfile.mkdtemp(prefix="zv-bench-parallel-", dir=directory))
    try:
        parts = work / "parts"
        parts.mkdir()
        _save_parts(n, seed, parts)
        for r in range(repeat):
            for name, package in cases.items():
                root = work / f"run-{name}-{r}"
                root.mkdir()
                levels = "none" if name == "none" else "auto"
                args = [str(n), levels, str(root), str(parts)]
                runs[name].append(_run(args, package))
                shutil.rmtree(root, ignore_errors=True)
            log(f"levels: parallel repeat {r + 1} of {repeat} done")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [_row(name, n, got, runs["none"]) for name, got in runs.items()]


def _run(args: list[str], package: Path | None) -> dict[str, Any]:
    """One write in a child: this tree's package, or the one in ``package``."""
    path = (REPO_ROOT,) if package is None else (package, REPO_ROOT)
    return run_child("benchmarks._parallel_levels", *args, path=path)


_CASES = {
    "none": "parallel, no levels",
    "auto": "parallel, sample levels on the workers",
    "baseline": "parallel, sample levels (baseline)",
}


def _row(name: str, n: int, got: list[dict[str, Any]], none: list[dict[str, Any]]) -> Row:
    keys = ("wall", "peak_bytes", "worker_peak_bytes")
    m = {key: median([run[key] for run in got]) for key in keys}
    floor = None if name == "none" else median([run["wall"] for run in none])
    detail = (
        f"coordinator peak {m['peak_bytes'] / 2**20:.0f} MiB, worker peak "
        f"{m['worker_peak_bytes'] / 2**20:.0f} MiB, {got[0]['levels']} levels, "
        f"{got[0]['package']} (workers {', '.join(got[0]['worker_packages'])})"
    )
    return Row(_CASES[name], n, m["wall"], floor, "s", detail, extra={"runs": got})


if __name__ == "__main__":
    count, kind, where, files = sys.argv[1:5]
    print(json.dumps(_child(int(count), kind, Path(where), Path(files))))
