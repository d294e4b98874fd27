"""``python -m benchmarks``: run every case and print one table (see ``README.md``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
from importlib.metadata import version
from typing import Any

from benchmarks._data import point_counts, warm_up
from benchmarks._host import host_lines, host_state
from benchmarks._measure import log
from benchmarks._memory import measure_write_memory
from benchmarks._startup import measure_startup
from benchmarks._table import Row, format_table
from benchmarks.objects import DEFAULT_SIZES as OBJECT_SIZES
from benchmarks.objects import FOOTNOTES as OBJECT_FOOTNOTES
from benchmarks.objects import QUICK_SIZES as QUICK_OBJECT_SIZES
from benchmarks.objects import Sizes, run_objects
from benchmarks.points import run_points

DEFAULT_SIZES = (1_000_000, 10_000_000)
QUICK_SIZES = (100_000, 1_000_000)

FOOTNOTES = (
    "floor (numpy): np.save / np.load of the same two arrays as .npy files; a query's floor "
    "is a brute-force mask ((p >= lo) & (p < hi)).all(1) plus the gather of the rows.",
    "cold = a freshly opened store (zv.open) and its first query of that box, in this warmed "
    "process; the OS page cache is WARM (the files were just written, nothing is dropped). "
    "Cold floor = np.load + filter; warm = the same query again on the open store; "
    "warm floor = the filter on arrays already in memory.",
    "ok = every query and the full read returned exactly the brute-force rows (count and the "
    "sorted multiset of (x, y, z, value) bit patterns); the exit status is 1 if any is FAIL.",
    "validate L3: zv.validate(path, 3) of the store the rows above wrote and read; its ratio "
    "to that store's full read() of this run decides the target; --sample 10% checks "
    "ceil(10% of the occupied chunks); ok = the report holds no error.",
    "peak memory: a fresh process per size, after a warm-up write; (peak RSS - RSS just "
    "before the write) / (positions.nbytes + attribute.nbytes).",
    "start-up: fresh process; import + write of 1000 points + open + one query, timed inside "
    "it; numba cache in an empty NUMBA_CACHE_DIR for run 1, reused by run 2.",
    "Shared, noisy machine: compare ratios (ours/floor) more than absolute times. Every "
    "store stays until the run ends (deleting many files slows the file creations that "
    "follow on this machine's file system: benchmarks/README.md, Caveats).",
)


def _layout(text: str) -> tuple[float, float]:
    try:
        chunk, bin_side = (float(part) for part in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected CHUNK,BIN in mm such as 20,5: {text}") from exc
    if not 0 < bin_side <= chunk:
        raise argparse.ArgumentTypeError("need 0 < BIN <= CHUNK")
    return chunk, bin_side


def _object_sizes(args: argparse.Namespace) -> Sizes:
    sizes = QUICK_OBJECT_SIZES if args.quick else OBJECT_SIZES
    return dataclasses.replace(sizes, streamline_layout=args.streamline_chunk)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description="zarr_vectors point-cloud and object benchmarks"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--sizes",
        type=point_counts,
        default=DEFAULT_SIZES,
        help="comma-separated point counts (default 1e6,1e7)",
    )
    which.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 1e5 and 1e6 points, smaller object sets",
    )
    parser.add_argument(
        "--objects",
        action="store_true",
        help="run only the objects section (streamlines, mesh, skeletons)",
    )
    parser.add_argument(
        "--points",
        action="store_true",
        help="run only the point-cloud section (no streamlines, mesh or skeletons)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="repeats of each timed step (write, warm query, filter, full read); the median "
        "is reported (default 5)",
    )
    parser.add_argument(
        "--boxes", type=int, default=5, help="random boxes per volume fraction (default 5)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of data and boxes (default 0)")
    parser.add_argument(
        "--streamline-chunk",
        type=_layout,
        default=OBJECT_SIZES.streamline_layout,
        metavar="CHUNK,BIN",
        help="chunk and bin side in mm of the streamline stores (default 50,12.5)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    return parser


def _environment(args: argparse.Namespace, sizes: tuple[int, ...]) -> dict[str, Any]:
    objects = _object_sizes(args)
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}",
        "python": platform.python_version(),
        "versions": {name: version(name) for name in ("zarr-vectors", "numpy", "zarr", "numba")},
        "sizes": [] if args.objects else list(sizes),
        "objects": {
            "streamlines": [list(s) for s in objects.streamlines],
            "mesh": list(objects.mesh),
            "skeletons": list(objects.skeletons),
            "streamline_layout_mm": list(objects.streamline_layout),
        },
        "repeat": args.repeat,
        "boxes": args.boxes,
        "seed": args.seed,
    }


def _heading(env: dict[str, Any], seconds: float) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items())
    return (
        f"zarr_vectors benchmarks, {env['date']}; {env['machine']}, Python {env['python']}; "
        f"{versions}\nseed {env['seed']}, {env['boxes']} boxes per fraction, repeat "
        f"{env['repeat']}; total run time {seconds:.0f} s\n"
        + host_lines(env["host_before"], env["host_after"])
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks, print the table and optionally write JSON.

    Parameters
    ----------
    argv
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 when every result agreed with the brute-force reference, 1 otherwise.
    """
    args = _parser().parse_args(argv)
    sizes = QUICK_SIZES if args.quick else args.sizes
    if args.repeat < 1 or args.boxes < 1:
        _parser().error("--repeat and --boxes must be at least 1")
    if args.objects and args.points:
        _parser().error("--objects and --points exclude each other")
    if args.objects and args.sizes != DEFAULT_SIZES:
        _parser().error("--sizes sets point counts; it cannot be combined with --objects")
    env = _environment(args, sizes)
    env["host_before"] = host_state()
    began = time.perf_counter()
    rows: list[Row] = []
    object_rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="zv-bench-", dir="/tmp") as tmp:
        if not args.objects:
            log("warm-up (numba compile or cache load)")
            warm_up(tmp)
            for n in sizes:  # every store stays until tmp goes (see points._bench_write)
                rows += run_points(
                    n,
                    seed=args.seed,
                    repeat=args.repeat,
                    boxes=args.boxes,
                    tmp=tempfile.mkdtemp(dir=tmp),
                )
                log(f"n={n:,}: peak memory of write (fresh process)")
                rows.append(measure_write_memory(n, args.seed))
        if not args.points:
            object_rows = run_objects(
                _object_sizes(args), seed=args.seed, repeat=args.repeat, boxes=args.boxes, tmp=tmp
            )
    if not args.objects:
        log("start-up (fresh processes)")
        rows += measure_startup()
    seconds = time.perf_counter() - began
    env["host_after"] = host_state()
    print(_heading(env, seconds))
    if rows:
        print()
        print(format_table(rows))
        print()
        print("\n".join(f"[{i}] {note}" for i, note in enumerate(FOOTNOTES, 1)))
    if object_rows:
        print("\nObjects (streamlines, mesh, skeletons)\n")
        print(format_table(object_rows))
        print()
        print("\n".join(f"[o{i}] {note}" for i, note in enumerate(OBJECT_FOOTNOTES, 1)))
    rows += object_rows
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(
                {"environment": env, "seconds": seconds, "rows": [row.to_json() for row in rows]},
                out,
                indent=2,
            )
    failed = [f"{row.case} n={row.label or row.n}" for row in rows if row.ok is False]
    if failed:
        print(f"\nDISAGREEMENT with brute force: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
