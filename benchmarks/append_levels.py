"""CPU and wall time of a point append to a store with levels of detail, before and after.

Usage: ``python -m benchmarks.append_levels [--points N] [--chunk-points C] [--repeat R]
[--before DIR] [--dir D]``.

Each append runs in a fresh child process (``--child``): it makes ``2 N`` uniform points
with one float32 attribute (:func:`benchmarks._data.make_points`), writes the first ``N``
with ``levels=zv.Levels(target=max(100, N // 20))`` (``zv.Levels()`` at the default N) in
chunks of about ``C`` points, untimed, then
times ``zv.append_points`` of the other ``N`` (CPU: user + system of the process, every
thread; wall). Before that it writes and appends to a small store with levels, so every
kernel of the path is compiled (or loaded from numba's cache) outside the timed append.
Cases, alternating in each repeat: this tree (``after``) and, with ``--before``, the
``zarr_vectors`` package found in DIR (e.g. a ``git archive`` of ``main``); the appended
stores of both trees are compared file by file (the root ``zarr.json`` aside: it records
the time and software). One JSON line per run, then the medians per case and the load.
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

from benchmarks._measure import REPO_ROOT, log, median, run_child

__all__ = ["main"]


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def _store(zv: Any, path: Path, n: int, chunk_points: int, seed: int) -> tuple[Any, Any]:
    """Write the first ``n`` of ``2 n`` points with auto levels; return the other half."""
    data = importlib.import_module("benchmarks._data")
    positions, attribute = data.make_points(2 * n, seed)
    side = data.CUBE * (chunk_points / (2 * n)) ** (1 / 3)
    zv.write_points(
        path, positions[:n], attributes={"a": attribute[:n]}, chunk_shape=side,
        levels=zv.Levels(target=max(100, n // 20)), progress=False,
    )  # fmt: skip
    return positions[n:], attribute[n:]


def _child(n: int, chunk_points: int, root: Path) -> dict[str, Any]:
    """One timed append in this (fresh) process."""
    zv = importlib.import_module("zarr_vectors")
    warm = _store(zv, root / "warm", 20_000, chunk_points, 1)
    zv.append_points(root / "warm", warm[0], attributes={"a": warm[1]}, progress=False)
    positions, attribute = _store(zv, root / "p", n, chunk_points, 0)
    before = [level.vertex_count for level in zv.open(root / "p").levels]
    cpu, start = _cpu(), time.perf_counter()
    zv.append_points(root / "p", positions, attributes={"a": attribute}, progress=False)
    wall, cpu = time.perf_counter() - start, _cpu() - cpu
    return {
        "wall": wall,
        "cpu": cpu,
        "levels_before": before,
        "levels_after": [level.vertex_count for level in zv.open(root / "p").levels],
        "package": str(Path(str(zv.__file__)).parent),
        "load": os.getloadavg()[0],
    }


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and str(p.relative_to(root)) != "zarr.json"
    }


def main() -> None:
    """Parse the arguments; run the cases alternating; print a JSON line per run and case."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=float, default=2e6)
    parser.add_argument("--chunk-points", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        n, chunk_points, root = args.child
        print(json.dumps(_child(int(n), int(chunk_points), Path(root))))
        return
    cases: dict[str, str | None] = {"after": None}
    if args.before is not None:
        cases = {"before": str(args.before.resolve()), **cases}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in cases}
    work = Path(tempfile.mkdtemp(prefix="zv-bench-append-", dir=args.dir))
    try:
        for r in range(args.repeat):
            stores: dict[str, dict[str, bytes]] = {}
            order = list(cases) if r % 2 == 0 else list(reversed(cases))
            for name in order:
                root = work / f"{name}-{r}"
                root.mkdir()
                path = (REPO_ROOT,) if cases[name] is None else (Path(str(cases[name])), REPO_ROOT)
                child = ["--child", str(int(args.points)), str(args.chunk_points), str(root)]
                got = run_child("benchmarks.append_levels", *child, path=path)
                print(json.dumps({"run": r, "tree": name, **got}), flush=True)
                runs[name].append(got)
                stores[name] = _files(root / "p")
                shutil.rmtree(root, ignore_errors=True)
            if len(stores) == 2:
                same = stores["after"] == stores["before"]
                log(f"repeat {r + 1}: appended stores of both trees byte-identical: {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, measured in runs.items():
        summary = {k: median([m[k] for m in measured]) for k in ("wall", "cpu")}
        print(json.dumps({"tree": name, "median": summary, "load": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()
