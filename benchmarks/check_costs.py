"""``python -m benchmarks.check_costs``: what issue 35's read checks cost, in one process.

:mod:`benchmarks.read_checks` compares two source trees in separate processes; on a shared
machine their times swing by more than the few percent measured. This measures the checks
alone, in one process: the same reads with the read-time checks on and with each of them
replaced by a no-op that passes, alternated call by call (same caches, same kernels, the
same load on the machine), for the cases of :mod:`benchmarks.read_checks`.

Checks switched off: the placement of every vertex read (``check_placement``), the stored
row blocks against the row count (``first_with_blocks_past``, ``stored_blocks_problem``),
the tiling of a point cloud's bin ranges (``bins_tiling_problem``; ``first_untiled``, with
their extent and sum, when a box plans from them), hostile sizes against
the chunks stored (``check_stored_chunks``), the chunk tables of global arrays
(``chunk_table_problem``) and the sharding layout of each array opened
(``_check_sharding``). Not switched off (they cannot be without changing how bytes are
decoded): a shard's place record (one cached 12-byte comparison per shard index decoded)
and the CRC32C of manifests and of the object index.

Every call is made with the checks on and off back to back (which first alternates).
Columns: ``least`` is, per box or id set, the least CPU time (``time.process_time``) of any
call with the checks on and off; the median over boxes; the change with a 95% bootstrap
interval (rounds resampled). ``paired blocks``: per round, the CPU time of all calls
with the checks on over that with them off, then the median over rounds with its
bootstrap interval. ``paired calls``: the median over every pair of the time with the
checks on over the time with them off (the two calls of a pair meet the same load), with
its bootstrap interval (rounds resampled). Kernels run as machine code (kernel mode
``compiled``; a first pass of each case loads or compiles them before timing).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import Any

import numpy as np

import zarr_vectors as zv
import zarr_vectors.query.point_queries as point_queries
import zarr_vectors.read.global_shapes as global_shapes
import zarr_vectors.read.point_reads as point_reads
import zarr_vectors.read.reader as reader
import zarr_vectors.store.shards as shards
from benchmarks import read_checks
from zarr_vectors.kernels._jit import set_kernel_mode

__all__ = ["main"]


def _no_tiling_problem(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    return np.zeros(np.shape(starts)[0], dtype=bool)


def _nothing(*args: Any) -> None:
    return None


def _no_chunk(*args: Any) -> int:
    return -1


_NO_OPS: dict[tuple[ModuleType, str], Callable[..., Any]] = {
    (point_queries, "check_placement"): _nothing,
    (reader, "check_placement"): _nothing,
    (point_reads, "first_with_blocks_past"): _no_chunk,
    (reader, "stored_blocks_problem"): _nothing,
    (point_reads, "first_untiled"): _no_chunk,
    (reader, "bins_tiling_problem"): _no_tiling_problem,
    (reader, "check_stored_chunks"): _nothing,
    (global_shapes, "check_stored_chunks"): _nothing,
    (reader, "chunk_table_problem"): _nothing,
    (shards, "_check_sharding"): _nothing,
}
_ORIGINALS = {key: getattr(*key) for key in _NO_OPS}


def _checks(on: bool) -> None:
    """Put the checks back (``on``) or replace each by its no-op."""
    for (module, name), no_op in _NO_OPS.items():
        setattr(module, name, _ORIGINALS[(module, name)] if on else no_op)


def _query_opened_anew(path: str, box: tuple[np.ndarray, np.ndarray]) -> Any:
    return zv.open(path).query(box)


def _read_opened_anew(path: str) -> Any:
    return zv.open(path).read()


def _objects_opened_anew(path: str, ids: list[int]) -> Any:
    return zv.open(path).read_objects(ids)


def _cases(where: str, n_points: int, seed: int) -> dict[str, list[Callable[[], Any]]]:
    """Write the stores of :mod:`benchmarks.read_checks` under ``where``; the calls of
    each case (one per box or id set)."""
    spec = read_checks._write_stores(where, n_points, seed)
    boxes = [(np.asarray(lo), np.asarray(hi)) for lo, hi in spec["boxes"]]
    points = spec["points"]
    opened = zv.open(points)
    cases: dict[str, list[Callable[[], Any]]] = {
        "points 1% box warm": [partial(opened.query, b) for b in boxes],
        "points 1% box cold": [partial(_query_opened_anew, points, b) for b in boxes],
        "points read": [partial(_read_opened_anew, points)],
    }
    for kind, key in (("streamlines", "streamline_ids"), ("skeletons", "skeleton_ids")):
        label = f"{kind} {len(spec[key][0])} by id"
        store = zv.open(spec[kind])
        cases[f"{label} warm"] = [partial(store.read_objects, i) for i in spec[key]]
        cases[f"{label} cold"] = [partial(_objects_opened_anew, spec[kind], i) for i in spec[key]]
    return cases


def _alternate(calls: list[Callable[[], Any]], rounds: int, reps: int) -> dict[bool, np.ndarray]:
    """``(calls, rounds, reps)`` CPU seconds of every call, with the checks on and off.

    Each call is timed with the checks on and off back to back (in turn, which first), so
    the two times of a pair meet the same load on the machine (other processes, the other
    hardware thread of the core), which changes from one millisecond to the next."""
    for on in (True, False):  # kernels loaded, caches filled, both ways
        _checks(on)
        for call in calls:
            call()
    times = {on: np.zeros((len(calls), rounds, reps)) for on in (True, False)}
    for r in range(rounds):
        for k in range(reps):
            for j, call in enumerate(calls):
                for on in (True, False) if (r + k + j) % 2 == 0 else (False, True):
                    _checks(on)
                    cpu = time.process_time()
                    call()
                    times[on][j, r, k] = time.process_time() - cpu
    _checks(True)
    return times


def _interval(values: np.ndarray) -> tuple[float, float]:
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def _row(case: str, times: dict[bool, np.ndarray], rng: np.random.Generator) -> tuple[str, ...]:
    """The table row of one case (see the module docstring)."""
    least = {on: t.min(axis=2) for on, t in times.items()}  # (calls, rounds)
    rounds = least[True].shape[1]

    def change(picks: np.ndarray) -> float:
        on, off = (np.median(least[x][:, picks].min(axis=1)) for x in (True, False))
        return float(on / off - 1)

    picks = rng.integers(0, rounds, (2000, rounds))
    low, high = _interval(np.array([change(p) for p in picks]))
    blocks = times[True].sum(axis=(0, 2)) / times[False].sum(axis=(0, 2))
    boot = np.median(blocks[picks], axis=1)
    b_low, b_high = _interval(boot - 1)
    pairs = (times[True] / times[False]).transpose(1, 0, 2).reshape(rounds, -1)  # per round
    p_boot = np.array([np.median(pairs[p]) for p in picks[:500]])
    p_low, p_high = _interval(p_boot - 1)
    off, on = (np.median(least[x].min(axis=1)) * 1e3 for x in (False, True))
    return (
        case,
        f"{off:.3f} ms",
        f"{on:.3f} ms",
        f"{change(np.arange(rounds)) * 100:+.1f}% [{low * 100:+.1f}, {high * 100:+.1f}]",
        f"{(np.median(blocks) - 1) * 100:+.1f}% [{b_low * 100:+.1f}, {b_high * 100:+.1f}]",
        f"{(np.median(pairs) - 1) * 100:+.1f}% [{p_low * 100:+.1f}, {p_high * 100:+.1f}]",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.check_costs",
        description="read costs with issue 35's read checks on and off, in one process",
    )
    parser.add_argument("--rounds", type=int, default=30, help="alternations (default 30)")
    parser.add_argument("--points", type=float, default=1e6, help="points (default 1e6)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    set_kernel_mode("compiled")
    rng = np.random.default_rng(12345)
    rows: list[tuple[str, ...]] = [
        (
            "case",
            "checks off, least",
            "on, least",
            "change [95%]",
            "paired blocks [95%]",
            "paired calls [95%]",
        )
    ]
    with tempfile.TemporaryDirectory(prefix="zv-bench-check-costs-") as tmp:
        for case, calls in _cases(tmp, int(args.points), args.seed).items():
            print(f"[bench] {case}", file=sys.stderr, flush=True)
            reps = 2 if case == "points read" else 4
            rows.append(_row(case, _alternate(calls, args.rounds, reps), rng))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print(
        f"\n{args.rounds} rounds in one process, checks on and off alternated; "
        f"{int(args.points):,} points; CPU time (process_time)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
