"""``python -m benchmarks.read_checks --base DIR``: read costs of two source trees, alternated.

Measures what the read-time invariants (issue 35, item 2: every vertex read is checked
against its chunk and bin, every shard's stored blocks against its row count) cost, by
running the same reads with this tree's ``zarr_vectors`` and with another tree's (``--base``,
e.g. a checkout of ``main``) on the same stores, in alternating fresh processes, several
rounds. Each tree reads the stores it writes itself, from the same data (a tree of another
format version reads its own format: place records, global chunks, version checks and the
read checks are all in the comparison).

Cases (each a median over boxes or id sets, then the median over rounds):

* ``points 1% box warm``: a cube of 1% of the volume, queried again on an open store.
* ``points 1% box cold``: ``zv.open`` then the first query of that box (open included).
* ``points read``: the whole point cloud (every row is checked against its chunk).
* ``streamlines 100 by id warm`` / ``cold``: 100 random streamlines by id.
* ``skeletons 10 by id warm``: 10 random skeletons by id (links translated).

The table gives both medians, wall-clock and CPU time (``time.process_time``: every thread of
the reading process; steadier than wall-clock on a busy machine), and the change; the row
counts of every answer are compared between the trees (``same`` column). Progress goes to
stderr. Run it alone on the machine:
other work on the cores moves numbers by more than the few percent measured.

A child (``--child SPEC``) is this file run as a script with ``PYTHONPATH`` set to a tree,
so the tree's ``zarr_vectors`` is imported, not this one's; numba's cache of another tree
goes to a scratch directory (nothing is written into that tree).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv  # in a child, the tree's package (its PYTHONPATH comes first)
from zarr_vectors.kernels import set_kernel_mode

__all__ = ["main"]

_HERE = Path(__file__).resolve()
_THIS_TREE = _HERE.parent.parent


# -- child: runs with one tree's zarr_vectors ------------------------------------------------


def _timed(func: Any) -> tuple[float, float, Any]:
    """Wall-clock and CPU seconds (every thread of the process) of one call, and its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = func()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def _median_time(func: Any, repeat: int) -> tuple[float, float, Any]:
    """Median wall-clock and CPU seconds of ``repeat`` calls, and the last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        wall, cpu, out = _timed(func)
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus), out


def _child(spec_path: str) -> dict[str, Any]:
    """Run every case of the spec with the ``zarr_vectors`` on ``sys.path``."""
    set_kernel_mode("compiled")  # machine code only, never the Python twins
    spec = json.loads(Path(spec_path).read_text())
    repeat = int(spec["repeat"])
    boxes = [(np.asarray(lo), np.asarray(hi)) for lo, hi in spec["boxes"]]
    out: dict[str, Any] = {"zarr_vectors": zv.__file__, "cases": {}, "cpu": {}, "rows": {}}

    def record(case: str, times: list[tuple[float, float]], rows: list[int]) -> None:
        out["cases"][case] = statistics.median(t[0] for t in times)
        out["cpu"][case] = statistics.median(t[1] for t in times)
        out["rows"][case] = rows

    opened = zv.open(spec["points"])
    opened.query(spec["warm_box"])  # kernels loaded, caches of another box
    warm, cold, rows = [], [], []
    for box in boxes:
        wall, cpu, found = _timed(lambda b=box: zv.open(spec["points"]).query(b))
        cold.append((wall, cpu))
        opened.query(box)
        wall, cpu, found = _median_time(lambda b=box: opened.query(b), repeat)
        warm.append((wall, cpu))
        rows.append(int(found.positions.shape[0]))
    record("points 1% box warm", warm, rows)
    record("points 1% box cold", cold, rows)
    wall, cpu, found = _median_time(lambda: zv.open(spec["points"]).read(), max(3, repeat // 2))
    record("points read", [(wall, cpu)], [int(found.positions.shape[0])])

    for kind, key in (("streamlines", "streamline_ids"), ("skeletons", "skeleton_ids")):
        store = zv.open(spec[kind])
        store.read_objects(spec[f"warm_{key}"])
        warm, cold, rows = [], [], []
        for ids in spec[key]:
            wall, cpu, found = _timed(lambda i=ids, k=kind: zv.open(spec[k]).read_objects(i))
            cold.append((wall, cpu))
            store.read_objects(ids)
            wall, cpu, found = _median_time(lambda i=ids, s=store: s.read_objects(i), repeat)
            warm.append((wall, cpu))
            rows.append(int(found.positions.shape[0]))
        label = f"{kind} {len(spec[key][0])} by id"
        record(f"{label} warm", warm, rows)
        record(f"{label} cold", cold, rows)
    return out


# -- parent: writes the stores, alternates the trees, prints the table ---------------------


def _write_stores(tmp: str, n_points: int, seed: int) -> dict[str, Any]:
    """Write the three stores with the code of the tree on the path; the spec of the reads."""
    # here, not at the top: a child runs this file with another tree first on its path
    from benchmarks import _data, objects

    positions, attribute = _data.make_points(n_points, seed)
    points = os.path.join(tmp, "points.zv")
    zv.write_points(points, positions, attributes={"value": attribute})
    lines = objects.make_streamlines(10_000, 100, seed)
    lines.write(os.path.join(tmp, "streamlines.zv"))
    trees = objects.make_skeletons(100, 1_000, seed)
    trees.write(os.path.join(tmp, "skeletons.zv"))
    rng = np.random.default_rng(seed)
    boxes = _data.make_boxes(0.01, 6, seed)

    def id_sets(total: int, count: int) -> list[list[int]]:
        return [sorted(rng.choice(total, count, replace=False).tolist()) for _ in range(6)]

    line_ids, tree_ids = id_sets(10_000, 100), id_sets(100, 10)
    return {
        "points": points,
        "streamlines": os.path.join(tmp, "streamlines.zv"),
        "skeletons": os.path.join(tmp, "skeletons.zv"),
        "warm_box": [b.tolist() for b in boxes[0]],
        "boxes": [[lo.tolist(), hi.tolist()] for lo, hi in boxes[1:]],
        "warm_streamline_ids": line_ids[0],
        "streamline_ids": line_ids[1:],
        "warm_skeleton_ids": tree_ids[0],
        "skeleton_ids": tree_ids[1:],
    }


def _tree_spec(tree: Path, where: str, args: argparse.Namespace, cache: str | None) -> str:
    """Write the stores with ``tree``'s code under ``where``; the path of the reads' spec."""
    os.makedirs(where)
    spec = _in_tree(tree, ["--write", where, str(int(args.points)), str(args.seed)], where, cache)
    spec["repeat"] = args.repeat
    spec_path = os.path.join(where, "spec.json")
    Path(spec_path).write_text(json.dumps(spec))
    return spec_path


def _in_tree(tree: Path, options: list[str], cwd: str, numba_cache: str | None) -> Any:
    """Run this file with ``options`` and ``tree`` first on the path; its last JSON line."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if numba_cache is not None:
        env["NUMBA_CACHE_DIR"] = numba_cache
    done = subprocess.run(
        [sys.executable, str(_HERE), *options],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child of {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _run_child(tree: Path, spec: str, numba_cache: str | None) -> dict[str, Any]:
    report: dict[str, Any] = _in_tree(tree, ["--child", spec], os.path.dirname(spec), numba_cache)
    expected = tree / "zarr_vectors" / "__init__.py"
    if Path(report["zarr_vectors"]).resolve() != expected.resolve():
        raise RuntimeError(f"child imported {report['zarr_vectors']}, not {expected}")
    return report


def _table(base: list[dict[str, Any]], ours: list[dict[str, Any]], names: tuple[str, str]) -> str:
    header = (
        "case",
        f"{names[0]} wall",
        f"{names[1]} wall",
        "change",
        f"{names[0]} CPU",
        f"{names[1]} CPU",
        "change",
        "same",
    )
    lines = [header]
    for case in base[0]["cases"]:
        cells = [case]
        for measure in ("cases", "cpu"):
            a = statistics.median(r[measure][case] for r in base)
            b = statistics.median(r[measure][case] for r in ours)
            cells += [f"{a * 1e3:.2f} ms", f"{b * 1e3:.2f} ms", f"{(b / a - 1) * 100:+.1f}%"]
        same = all(r["rows"][case] == base[0]["rows"][case] for r in base + ours)
        lines.append((*cells, "yes" if same else "NO"))
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    return "\n".join(
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |"
        for row in lines
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.read_checks",
        description="read costs of this tree beside another (--base), alternated in rounds",
    )
    parser.add_argument("--base", type=Path, help="the other source tree (e.g. a checkout of main)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of both trees (default 5)")
    parser.add_argument("--repeat", type=int, default=7, help="warm repeats per box or id set")
    parser.add_argument("--points", type=float, default=1e6, help="points (default 1e6)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--write", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child)))
        return 0
    if args.write:
        where, n_points, seed = args.write
        print(json.dumps(_write_stores(where, int(n_points), int(seed))))
        return 0
    if args.base is None:
        parser.error("--base is required")
    base = args.base.resolve()
    with tempfile.TemporaryDirectory(prefix="zv-bench-checks-") as tmp:
        cache = os.path.join(tmp, "numba-base")
        trees = {"base": (base, cache), "this": (_THIS_TREE, None)}
        specs = {}
        for who, (tree, numba_cache) in trees.items():
            print(f"[bench] writing the stores with {who}", file=sys.stderr, flush=True)
            specs[who] = _tree_spec(tree, os.path.join(tmp, who), args, numba_cache)
        results: dict[str, list[dict[str, Any]]] = {"base": [], "this": []}
        print("[bench] warm-up of both trees (numba compiles or loads)", file=sys.stderr)
        for who, (tree, numba_cache) in trees.items():
            _run_child(tree, specs[who], numba_cache)
        for r in range(args.rounds):
            order = ("base", "this") if r % 2 == 0 else ("this", "base")
            for who in order:
                print(f"[bench] round {r + 1}/{args.rounds}: {who}", file=sys.stderr, flush=True)
                tree, numba_cache = trees[who]
                results[who].append(_run_child(tree, specs[who], numba_cache))
    print(_table(results["base"], results["this"], (f"base {base.name}", "this tree")))
    print(
        f"\n{args.rounds} rounds, alternated (base first in odd rounds); {int(args.points):,} "
        f"points, 5 boxes of 1% of the cube, {args.repeat} warm repeats each; 5 id sets; "
        "a warm-up run of each tree first (not counted). wall: perf_counter; CPU: "
        "process_time of the reading process (every thread), steadier on a busy machine."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
