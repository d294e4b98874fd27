"""Cost and peak memory of ``zv.build_levels`` on a streamline or point store, code before
and after.

Usage: ``python -m benchmarks.object_level_build [--streamlines N [N ...]] [--points N [N
...]] [--length L] [--layout CHUNK,BIN] [--budget BYTES] [--before DIR] [--dir D]``
(``--streamlines 1e5`` when neither is given; ``--layout``: the streamlines' chunk and bin
side in mm, default 50,12.5; smaller chunks give more cross-chunk links; ``--points``:
uniform points in a 1000-unit cube, chunks 100, bins 25, one float32 attribute).

The parent writes N streamlines of L vertices (:func:`benchmarks.objects.make_streamlines`,
chunks 50 mm, bins 12.5 mm unless ``--layout``, one vertex and one object attribute)
without levels, then for
each code tree (this one; ``--before``: another checkout, e.g. a ``git archive`` of the
commit before) copies the store and runs ``build_levels(copy, "auto")`` in a fresh child
process: the child compiles the kernels on a tiny store first, resets its peak resident
set size (``VmHWM``), builds, and reports wall and CPU time and the peak above the resident
size before the build. The copies' level files are compared byte for byte. Level 0's
uncompressed size (positions and attributes) is printed beside, with the load average,
and the peak over it (``peak_over_level0``). Several ``--streamlines`` sizes run one after
the other with the same budget: with levels built out of core the peak stays near the
budget whatever the size, so ``peak_over_level0`` falls as the store grows.
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

from benchmarks._measure import log, proc_status_kb, reset_peak_rss, run_child

__all__ = ["main"]


def _child(code: str, path: str, budget: int) -> dict[str, Any]:
    """Build the levels of ``path`` with the zarr_vectors of ``code`` (this tree if empty)."""
    if code:
        sys.path.insert(0, code)
    zv = importlib.import_module("zarr_vectors")
    np = importlib.import_module("numpy")
    with tempfile.TemporaryDirectory(prefix="zv-bench-olb-") as tmp:
        warm = Path(tmp) / "warm.zv"
        walk = np.cumsum(np.ones((40, 3), np.float32), axis=0)
        zv.write_polylines(warm, [walk, walk + 3], chunk_shape=16.0, progress=False)
        zv.build_levels(warm, 2, progress=False)
        spots = np.random.default_rng(0).random((5000, 3), np.float32) * 100
        zv.write_points(
            Path(tmp) / "warm-points.zv",
            spots,
            chunk_shape=50.0,
            bin_shape=12.5,
            attributes={"a": spots[:, 0]},
            progress=False,
        )
        zv.build_levels(Path(tmp) / "warm-points.zv", 2, progress=False)
    extra = {"memory_budget": budget} if "memory_budget" in _parameters(zv.build_levels) else {}
    reset = reset_peak_rss()
    before = proc_status_kb("VmRSS") or 0
    wall, cpu = time.perf_counter(), time.process_time()
    built = zv.build_levels(path, "auto", progress=False, **extra)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "levels": built,
        "counts": [level.vertex_count for level in zv.open(path).levels],
        "wall": wall,
        "cpu": cpu,
        "peak_kb": (proc_status_kb("VmHWM") or 0) - before,
        "reset": reset,
        "budget": bool(extra),
        "file": zv.__file__,
    }


def _parameters(func: Any) -> list[str]:
    return list(importlib.import_module("inspect").signature(func).parameters)


def _level_files(root: Path) -> dict[str, bytes]:
    """The files of the levels above 0."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and p.relative_to(root).parts[0][0].isdigit()
        and p.relative_to(root).parts[0] != "0"
    }


def main() -> None:
    """Parse the arguments and print one JSON line per code tree."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streamlines", type=float, nargs="+", default=None)
    parser.add_argument("--points", type=float, nargs="+", default=[])
    parser.add_argument("--length", type=int, default=100)
    parser.add_argument("--layout", default="50,12.5", help="streamline chunk,bin in mm")
    parser.add_argument("--budget", type=int, default=256 * 2**20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=2, help="builds per tree; the last kept")
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(_child(args.child[0], args.child[1], int(args.child[2]))))
        return
    streamlines = args.streamlines if args.streamlines is not None else [] if args.points else [1e5]
    for size in streamlines:
        _one_size(args, int(size), _write_streamlines)
    for size in args.points:
        _one_size(args, int(size), _write_points)


def _write_streamlines(args: argparse.Namespace, size: int, store: Path) -> int:
    """``size`` streamlines of ``args.length`` vertices; level 0's uncompressed bytes."""
    zv = importlib.import_module("zarr_vectors")
    objects = importlib.import_module("benchmarks.objects")  # imports zarr_vectors: not in a child
    chunk, bin_side = (float(v) for v in args.layout.split(","))
    frame = objects.make_streamlines(size, args.length, args.seed, (chunk, bin_side)).frame
    zv.write_polylines(
        store,
        (frame.positions, frame.offsets),
        kind="streamline",
        chunk_shape=chunk,
        bin_shape=bin_side,
        attributes=frame.attributes,
        object_attributes=frame.object_attributes,
        progress=False,
    )
    return int(frame.positions.nbytes + sum(a.nbytes for a in frame.attributes.values()))


def _write_points(args: argparse.Namespace, size: int, store: Path) -> int:
    """``size`` uniform points in the 1000-unit cube with one float32 attribute, chunks
    100 and bins 25 (the layout of ``benchmarks.levels_overview``'s point rows)."""
    zv = importlib.import_module("zarr_vectors")
    positions, values = importlib.import_module("benchmarks._data").make_points(size, args.seed)
    zv.write_points(
        store,
        positions,
        attributes={"intensity": values},
        chunk_shape=100.0,
        bin_shape=25.0,
        progress=False,
    )
    return int(positions.nbytes + values.nbytes)


def _cross_links(store: Path) -> int:
    """Rows of level 0's ``cross_chunk_links`` (0 for a point store)."""
    meta = store / "0" / "cross_chunk_links" / "zarr.json"
    return int(json.loads(meta.read_text())["shape"][0]) if meta.exists() else 0


def _one_size(args: argparse.Namespace, size: int, write: Any) -> None:
    """Write ``size`` objects or points with ``write``, build their levels with every tree,
    print the rows."""
    root = Path(tempfile.mkdtemp(prefix="zv-bench-olb-", dir=args.dir))
    try:
        store = root / "level0.zv"
        level0 = write(args, size, store)
        built: dict[str, dict[str, bytes]] = {}
        trees = [("after", "")] + ([("before", str(args.before))] if args.before else [])
        for name, code in trees:
            copy = root / f"{name}.zv"
            for r in range(args.repeat):  # the first also fills the tree's numba cache
                shutil.copytree(store, copy)
                load = os.getloadavg()[0]
                log(f"object_level_build: {name} {r + 1} of {args.repeat} ...")
                got = run_child(
                    "benchmarks.object_level_build", "--child", code, str(copy), str(args.budget)
                )
                got |= {"tree": name, "run": r + 1, "load": load, "load_after": os.getloadavg()[0]}
                got["size"] = size
                got["cross_links"] = _cross_links(store)
                got["level0_bytes"] = level0
                got["peak_over_level0"] = round(got["peak_kb"] * 1024 / level0, 3)
                print(json.dumps(got), flush=True)
                built[name] = _level_files(copy)
                shutil.rmtree(copy)
        if len(built) == 2:
            differ = sorted(
                k
                for k in built["after"].keys() | built["before"].keys()
                if built["after"].get(k) != built["before"].get(k)
            )
            print(json.dumps({"same_level_files": not differ, "differ": differ[:5]}))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
