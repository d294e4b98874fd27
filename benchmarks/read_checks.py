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
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv  # in a child, the tree's package (its PYTHONPATH comes first)
from zarr_vectors.kernels._jit import CompileLog, Kernel, interpreted_seconds, set_kernel_mode

__all__ = ["main"]

_HERE = Path(__file__).resolve()
_THIS_TREE = _HERE.parent.parent


class _Clock:
    """Times calls: a sample is (wall-clock seconds, CPU seconds of every thread, and the
    least CPU seconds of the repeats: load on the machine only ever adds to a call's time,
    so the least of many is the steadiest estimate of what the call itself costs)."""

    def once(self, func: Callable[[], Any]) -> tuple[tuple[float, float, float], Any]:
        wall, cpu = time.perf_counter(), time.process_time()
        out = func()
        cpu = time.process_time() - cpu
        return (time.perf_counter() - wall, cpu, cpu), out

    def warm(self, func: Callable[[], Any], repeat: int) -> tuple[tuple[float, float, float], Any]:
        """The medians of ``repeat`` calls, and their least CPU time."""
        samples, out = [], None
        for _ in range(repeat):
            sample, out = self.once(func)
            samples.append(sample)
        return (
            statistics.median(s[0] for s in samples),
            statistics.median(s[1] for s in samples),
            min(s[2] for s in samples),
        ), out


def _proc_io() -> dict[str, int]:
    """The process's read system calls and bytes so far (``/proc/self/io``; Linux)."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return {"read calls": int(fields["syscr"]), "bytes read": int(fields["rchar"])}


class _Counter:
    """Counts what a call does, in numbers that do not depend on the machine's load.

    ``python calls``: Python functions entered (every thread, ``threading.setprofile`` is
    installed before any thread starts); ``files opened``: ``open`` audit events (``open()``
    and ``os.open``); ``read calls`` / ``bytes read``: the process's read system calls and
    their bytes (``/proc/self/io``); ``kernels compiled`` / ``kernels interpreted``: calls
    of numba kernels from Python, as machine code or as their Python source; ``compilations``:
    numba compilations during the call (loading machine code from the cache is none).
    """

    def __init__(self) -> None:
        self.on = False
        self.counts: dict[str, int] = {}
        self._python_calls = [0]
        sys.addaudithook(self._audit)
        sys.setprofile(self._profile)
        threading.setprofile(self._profile)
        original = Kernel.__call__

        def counted(kernel: Any, *args: Any) -> Any:
            if self.on:
                machine = kernel._machine or not kernel.interprets(args)
                key = "kernels compiled" if machine else "kernels interpreted"
                self.counts[key] += 1
            return original(kernel, *args)

        Kernel.__call__ = counted  # type: ignore[method-assign,assignment]

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and self.on:
            self._python_calls[0] += 1

    def _audit(self, event: str, args: Any) -> None:
        if event == "open" and self.on:
            self.counts["files opened"] += 1

    def once(self, func: Callable[[], Any]) -> tuple[dict[str, int], Any]:
        self.counts = dict.fromkeys(("files opened", "kernels compiled", "kernels interpreted"), 0)
        self._python_calls[0] = 0
        io_before = _proc_io()
        with CompileLog() as log:
            self.on = True
            try:
                out = func()
            finally:
                self.on = False
        io_after = _proc_io()
        counts = {"python calls": self._python_calls[0], **self.counts}
        counts.update({k: io_after[k] - io_before[k] for k in io_before})
        counts["compilations"] = log.count
        return counts, out

    def warm(self, func: Callable[[], Any], repeat: int) -> tuple[dict[str, int], Any]:
        """The counts of one call (the calls before it warmed the caches)."""
        return self.once(func)


def _child(spec_path: str, mode: str, counting: bool) -> dict[str, Any]:
    """Run every case of the spec with the ``zarr_vectors`` on ``sys.path``: times, or
    (``counting``) the counts of :class:`_Counter`, per case."""
    set_kernel_mode(mode)
    meter: Any = _Counter() if counting else _Clock()
    spec = json.loads(Path(spec_path).read_text())
    repeat = int(spec["repeat"])
    out: dict[str, Any] = {"zarr_vectors": zv.__file__, "samples": {}, "rows": {}}
    interpreted = {"before": interpreted_seconds()}

    def record(case: str, samples: list[Any], rows: list[int]) -> None:
        out["samples"][case] = samples
        out["rows"][case] = rows

    _point_cases(spec, meter, repeat, record)
    for kind, key in (("streamlines", "streamline_ids"), ("skeletons", "skeleton_ids")):
        _object_cases(spec, kind, key, meter, repeat, record)
    out["interpreted seconds"] = interpreted_seconds() - interpreted["before"]
    return out


def _point_cases(spec: dict[str, Any], meter: Any, repeat: int, record: Any) -> None:
    boxes = [(np.asarray(lo), np.asarray(hi)) for lo, hi in spec["boxes"]]
    first = (np.asarray(spec["warm_box"][0]), np.asarray(spec["warm_box"][1]))
    sample, found = meter.once(lambda: zv.open(spec["points"]).query(first))
    record("points 1% box first in process", [sample], [int(found.positions.shape[0])])
    opened = zv.open(spec["points"])
    opened.query(first)  # caches of another box
    warm, cold, rows = [], [], []
    for box in boxes:
        sample, found = meter.once(lambda b=box: zv.open(spec["points"]).query(b))
        cold.append(sample)
        opened.query(box)
        sample, found = meter.warm(lambda b=box: opened.query(b), repeat)
        warm.append(sample)
        rows.append(int(found.positions.shape[0]))
    record("points 1% box warm", warm, rows)
    record("points 1% box cold", cold, rows)
    zv.open(spec["points"]).read()
    sample, found = meter.warm(lambda: zv.open(spec["points"]).read(), max(3, repeat // 2))
    record("points read", [sample], [int(found.positions.shape[0])])


def _object_cases(
    spec: dict[str, Any], kind: str, key: str, meter: Any, repeat: int, record: Any
) -> None:
    label = f"{kind} {len(spec[key][0])} by id"
    first = spec[f"warm_{key}"]
    sample, found = meter.once(lambda: zv.open(spec[kind]).read_objects(first))
    record(f"{label} first in process", [sample], [int(found.positions.shape[0])])
    store = zv.open(spec[kind])
    store.read_objects(first)
    warm, cold, rows = [], [], []
    for ids in spec[key]:
        sample, found = meter.once(lambda i=ids: zv.open(spec[kind]).read_objects(i))
        cold.append(sample)
        store.read_objects(ids)
        sample, found = meter.warm(lambda i=ids: store.read_objects(i), repeat)
        warm.append(sample)
        rows.append(int(found.positions.shape[0]))
    record(f"{label} warm", warm, rows)
    record(f"{label} cold", cold, rows)


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
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
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


def _run_child(tree: Path, spec: str, numba_cache: str | None, options: list[str]) -> Any:
    report: dict[str, Any] = _in_tree(
        tree, ["--child", spec, *options], os.path.dirname(spec), numba_cache
    )
    expected = tree / "zarr_vectors" / "__init__.py"
    if Path(report["zarr_vectors"]).resolve() != expected.resolve():
        raise RuntimeError(f"child imported {report['zarr_vectors']}, not {expected}")
    return report


def _round_cpu(report: dict[str, Any], case: str, which: int) -> float:
    """One process's median over its boxes or id sets (``which``: 0 wall, 1 CPU)."""
    return float(statistics.median(s[which] for s in report["samples"][case]))


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q1, q2, q3 = np.percentile(values, [25, 50, 75])
    return float(q1), float(q2), float(q3)


def _change_interval(base: list[float], ours: list[float]) -> tuple[float, float, float]:
    """The change of the median (ours over base, minus 1) and its 95% bootstrap interval
    (rounds of each tree resampled independently, 2,000 times, fixed seed)."""
    rng = np.random.default_rng(12345)
    a, b = np.asarray(base), np.asarray(ours)
    picks_a = rng.integers(0, a.size, (2000, a.size))
    picks_b = rng.integers(0, b.size, (2000, b.size))
    ratios = np.median(b[picks_b], axis=1) / np.median(a[picks_a], axis=1) - 1
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(np.median(b) / np.median(a) - 1), float(low), float(high)


def _markdown(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _time_table(base: list[dict[str, Any]], ours: list[dict[str, Any]], which: int) -> str:
    """Per case: each tree's median [interquartile range] over rounds, and the change with
    its bootstrap interval; ``same``: every answer had the same rows in both trees."""
    rows: list[tuple[str, ...]] = [("case", "base", "this tree", "change [95% interval]", "same")]
    for case in base[0]["samples"]:
        a = [_round_cpu(r, case, which) for r in base]
        b = [_round_cpu(r, case, which) for r in ours]
        cells = [
            "{1:.2f} ms [{0:.2f}-{2:.2f}]".format(*(q * 1e3 for q in _quartiles(v))) for v in (a, b)
        ]
        change = "{:+.1f}% [{:+.1f}, {:+.1f}]".format(*(c * 100 for c in _change_interval(a, b)))
        same = all(r["rows"][case] == base[0]["rows"][case] for r in base + ours)
        rows.append((case, *cells, change, "yes" if same else "NO"))
    return _markdown(rows)


def _least(reports: list[dict[str, Any]], case: str) -> np.ndarray:
    """``(rounds, boxes)`` least CPU seconds of each box or id set in each process."""
    return np.asarray([[sample[2] for sample in r["samples"][case]] for r in reports])


def _least_table(base: list[dict[str, Any]], ours: list[dict[str, Any]]) -> str:
    """Per case: the least CPU time of each box or id set over every process of a tree, the
    median over boxes; the change, with a 95% bootstrap interval (rounds resampled)."""
    rng = np.random.default_rng(12345)
    rows: list[tuple[str, ...]] = [("case", "base", "this tree", "change [95% interval]")]
    for case in base[0]["samples"]:
        a, b = _least(base, case), _least(ours, case)
        mid = np.median(b.min(axis=0)) / np.median(a.min(axis=0)) - 1
        picks_a = rng.integers(0, a.shape[0], (2000, a.shape[0]))
        picks_b = rng.integers(0, b.shape[0], (2000, b.shape[0]))
        ratios = np.median(b[picks_b].min(axis=1), axis=1) / np.median(
            a[picks_a].min(axis=1), axis=1
        )
        low, high = np.percentile(ratios - 1, [2.5, 97.5])
        cells = [f"{np.median(x.min(axis=0)) * 1e3:.3f} ms" for x in (a, b)]
        rows.append((case, *cells, f"{mid * 100:+.1f}% [{low * 100:+.1f}, {high * 100:+.1f}]"))
    return _markdown(rows)


def _spread(runs: list[dict[str, Any]], case: str) -> float:
    """The largest relative difference of any count of ``case`` between counting processes."""
    worst = 0.0
    for r in runs[1:]:
        for one, other in zip(r["samples"][case], runs[0]["samples"][case], strict=True):
            for key, value in one.items():
                worst = max(worst, abs(value - other[key]) / max(1, other[key]))
    return worst


def _count_table(base: list[dict[str, Any]], ours: list[dict[str, Any]]) -> str:
    """Per case and count: the median over boxes or id sets, base -> this tree (change);
    ``spread``: the largest relative difference of a count between the counting processes
    of one tree (thread scheduling moves a few Python calls)."""
    keys = list(base[0]["samples"][next(iter(base[0]["samples"]))][0])
    rows: list[tuple[str, ...]] = [("case", *keys, "spread")]
    for case in base[0]["samples"]:
        cells = []
        for key in keys:
            a, b = (
                int(statistics.median(s[key] for s in r[0]["samples"][case])) for r in (base, ours)
            )
            change = f" ({(b / a - 1) * 100:+.0f}%)" if a and a != b else ""
            cells.append(f"{a:,} -> {b:,}{change}")
        spread = max(_spread(base, case), _spread(ours, case))
        rows.append((case, *cells, f"{spread * 100:.1f}%"))
    return _markdown(rows)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.read_checks",
        description="read costs of this tree beside another (--base), alternated in rounds",
    )
    parser.add_argument("--base", type=Path, help="the other source tree (e.g. a checkout of main)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of both trees (default 5)")
    parser.add_argument("--repeat", type=int, default=7, help="warm repeats per box or id set")
    parser.add_argument("--points", type=float, default=1e6, help="points (default 1e6)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--mode",
        choices=("auto", "compiled"),
        default="auto",
        help="kernel mode of the measured processes (default auto, as a user meets it)",
    )
    parser.add_argument("--json", type=Path, help="also write every process's report here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--count", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--write", nargs=3, help=argparse.SUPPRESS)
    return parser


def _measure(args: argparse.Namespace, tmp: str) -> dict[str, dict[str, list[Any]]]:
    """Write the stores, warm both trees up, count, run the timed rounds, count again."""
    cache = os.path.join(tmp, "numba-base")
    trees = {"base": (args.base.resolve(), cache), "this": (_THIS_TREE, None)}
    specs = {}
    for who, (tree, numba_cache) in trees.items():
        print(f"[bench] writing the stores with {who}", file=sys.stderr, flush=True)
        specs[who] = _tree_spec(tree, os.path.join(tmp, who), args, numba_cache)
    results: dict[str, dict[str, list[Any]]] = {who: {"times": [], "counts": []} for who in trees}

    def run(who: str, options: list[str]) -> Any:
        tree, numba_cache = trees[who]
        return _run_child(tree, specs[who], numba_cache, options)

    print(
        "[bench] warm-up of both trees (compiled: numba's cache holds every kernel)",
        file=sys.stderr,
    )
    for who in trees:
        run(who, ["--mode", "compiled"])
    for who in trees:
        results[who]["counts"].append(run(who, ["--mode", args.mode, "--count"]))
    for r in range(args.rounds):
        for who in ("base", "this") if r % 2 == 0 else ("this", "base"):
            print(f"[bench] round {r + 1}/{args.rounds}: {who}", file=sys.stderr, flush=True)
            results[who]["times"].append(run(who, ["--mode", args.mode]))
    for who in trees:
        results[who]["counts"].append(run(who, ["--mode", args.mode, "--count"]))
    return results


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.mode, args.count)))
        return 0
    if args.write:
        where, n_points, seed = args.write
        print(json.dumps(_write_stores(where, int(n_points), int(seed))))
        return 0
    if args.base is None:
        parser.error("--base is required")
    with tempfile.TemporaryDirectory(prefix="zv-bench-checks-") as tmp:
        results = _measure(args, tmp)
    if args.json is not None:
        args.json.write_text(json.dumps(results))
    base, ours = results["base"], results["this"]
    print(f"CPU time (process_time), base {args.base.resolve().name} vs this tree\n")
    print(_time_table(base["times"], ours["times"], 1))
    print("\nleast CPU time (of every repeat and round, per box or id set; median over them)\n")
    print(_least_table(base["times"], ours["times"]))
    print("\nwall-clock time (perf_counter)\n")
    print(_time_table(base["times"], ours["times"], 0))
    print("\ncounts per query (median over boxes or id sets)\n")
    print(_count_table(base["counts"], ours["counts"]))
    seconds = [r["interpreted seconds"] for who in (base, ours) for r in who["times"]]
    print(
        f"\n{args.rounds} rounds, alternated (base first in odd rounds); {int(args.points):,} "
        f"points, 5 boxes of 1% of the cube, {args.repeat} warm repeats each; 5 id sets; "
        f"kernel mode {args.mode}, numba's cache filled by a compiled warm-up process per tree "
        f"(not counted); kernels ran as Python for {max(seconds):.3f} s at most in a timed "
        "process. Cells: median over rounds of each process's median [interquartile range "
        "over rounds]; change: of the medians, with a 95% bootstrap interval. Counts: one "
        "counting process per tree before the rounds and one after."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
