"""Wall time and coordinator memory of ``write_objects_parallel`` of streamlines with levels.

Usage: ``python -m benchmarks.parallel_object_levels [--streamlines N] [--length L]
[--parts P] [--repeat R] [--before DIR] [--dir D]``.

Each write runs in a fresh child process (``--child``) that makes the streamlines of
:func:`benchmarks.objects.make_streamlines` (chunks 50 mm, bins 12.5 mm, one vertex and one
object attribute), cuts them into P partitions, starts a ``LocalCluster`` of 2 worker
processes (one thread each), writes a small store with the same levels first (every kernel
compiled on every process), then resets its peak resident set size (``VmHWM``) and times
the write of all the partitions. It reports the wall time, the coordinator's peak over its
resident size before the write (the partitions it holds are in that baseline) and the
workers' largest peak the same way. Cases, alternating, R times each: no levels,
``levels="auto"`` with this tree, and with ``--before`` the same with the ``zarr_vectors``
package found in DIR (e.g. a ``git archive`` of the commit before). Levels built by
different trees are compared byte for byte. One JSON line per run, then a summary line
(medians) per case, with the load average.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._measure import (
    REPO_ROOT,
    log,
    median,
    proc_status_kb,
    reset_peak_rss,
    run_child,
)

__all__ = ["main"]


def _worker_reset() -> int:
    reset_peak_rss()
    return proc_status_kb("VmRSS") or 0


def _worker_peak() -> int:
    return proc_status_kb("VmHWM") or 0


def _partitions(frame: Any, parts: int) -> list[dict[str, Any]]:
    """The streamlines cut into ``parts`` runs of whole objects."""
    np = importlib.import_module("numpy")
    m = frame.offsets.shape[0] - 1
    cuts = np.linspace(0, m, parts + 1).astype(int)
    out = []
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        lo, hi = int(frame.offsets[a]), int(frame.offsets[b])
        out.append(
            {
                "polylines": (frame.positions[lo:hi], frame.offsets[a : b + 1] - lo),
                "attributes": {k: v[lo:hi] for k, v in frame.attributes.items()},
                "object_attributes": {k: v[a:b] for k, v in frame.object_attributes.items()},
            }
        )
    return out


def _child(n: int, length: int, parts: int, levels: str, root: Path) -> dict[str, Any]:
    """One parallel write in this (fresh) process: wall time and peak memory."""
    distributed = importlib.import_module("distributed")
    zv = importlib.import_module("zarr_vectors")
    objects = importlib.import_module("benchmarks.objects")
    chosen = None if levels == "none" else levels
    layout = {"chunk_shape": objects.STREAMLINE_CHUNK, "bin_shape": objects.STREAMLINE_BIN}
    frame = objects.make_streamlines(n, length, 0).frame
    small = objects.make_streamlines(200, length, 1).frame
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        zv.write_objects_parallel(
            root / "warm", "streamline", _partitions(small, 2), client=client, levels=chosen,
            progress=False, **layout,
        )  # fmt: skip
        batches = _partitions(frame, parts)
        base = client.run(_worker_reset)
        reset = reset_peak_rss()
        before = proc_status_kb("VmRSS") or 0
        start = time.perf_counter()
        zv.write_objects_parallel(
            root / "par", "streamline", batches, client=client, levels=chosen, progress=False,
            **layout,
        )  # fmt: skip
        wall = time.perf_counter() - start
        peak = proc_status_kb("VmHWM") or 0
        workers = client.run(_worker_peak)
    store = zv.open(root / "par")
    return {
        "case": levels,
        "wall": wall,
        "peak_mib": (peak - before) / 1024,
        "peak_reset": reset,
        "worker_peak_mib": max((workers[w] - base[w]) / 1024 for w in workers),
        "vertex_counts": [level.vertex_count for level in store.levels],
        "package": str(Path(str(zv.__file__)).parent),
        "load": os.getloadavg()[0],
    }


def _run(args: list[str], package: str | None) -> dict[str, Any]:
    """One write in a child: this tree's package, or the one in ``package``."""
    path = (REPO_ROOT,) if package is None else (Path(package), REPO_ROOT)
    return run_child("benchmarks.parallel_object_levels", *args, path=path)


def _level_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in ("0", "zarr.json", ".zattrs")
    }


def main() -> None:
    """Parse the arguments; run the cases alternating; print a JSON line per run and case."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streamlines", type=float, default=1e5)
    parser.add_argument("--length", type=int, default=100)
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--child", nargs=5, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        n, length, parts, method, root = args.child
        print(json.dumps(_child(int(n), int(length), int(parts), method, Path(root))))
        return
    cases: dict[str, str | None] = {"none": None, "after": None}
    if args.before is not None:
        cases["before"] = str(args.before.resolve())
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in cases}
    work = Path(tempfile.mkdtemp(prefix="zv-bench-pol-", dir=args.dir))
    try:
        for r in range(args.repeat):
            levels: dict[str, dict[str, bytes]] = {}
            for name, package in cases.items():
                root = work / f"{name}-{r}"
                root.mkdir()
                child = [str(int(args.streamlines)), str(args.length), str(args.parts)]
                child += ["none" if name == "none" else "auto", str(root)]
                got = _run(["--child", *child], package)
                print(json.dumps({"run": r, "tree": name, **got}), flush=True)
                runs[name].append(got)
                if name != "none":
                    levels[name] = _level_files(root / "par")
                shutil.rmtree(root, ignore_errors=True)
            if len(levels) == 2:
                same = levels["after"] == levels["before"]
                log(f"repeat {r + 1}: levels of both trees byte-identical: {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, measured in runs.items():
        summary = {
            k: median([m[k] for m in measured]) for k in ("wall", "peak_mib", "worker_peak_mib")
        }
        print(json.dumps({"tree": name, "median": summary, "load": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()
