"""Scaling of point writes and queries from 1e5 to 1e8 points (streaming for the largest).

``python -m benchmarks.scaling [--sizes 1e5,1e6,1e7,1e8] [--quick]`` runs every (size, mode)
case in a fresh child process (``python -m benchmarks.scaling _child ...``), so the peak
resident set size it reports belongs to that case alone. The modes:

* ``one-shot``: the points are generated in memory first (untimed), then written with
  :func:`zarr_vectors.write_points` (sizes up to :data:`ONE_SHOT_MAX`);
* ``streaming``: a :class:`zarr_vectors.PointWriter` receives batches of :data:`BATCH`
  points generated on the fly; the generation is timed and subtracted (sizes from
  :data:`BATCH` up).

Both modes write the same points (batch ``i`` is drawn from ``default_rng([seed, i])``) with
the same layout: the chunk side shrinks as ``n`` grows so a chunk holds about 80,000 points
at every size. The child then times warm 1% box queries and, up to :data:`FULL_READ_MAX`, a
full read, and checks every answer against brute force. The parent prints one table and
the two targets of the largest case.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import zarr_vectors as zv
from benchmarks._data import (
    ATTRIBUTE,
    CUBE,
    Box,
    canonical_rows,
    column_filter,
    make_boxes,
    point_counts,
    same_rows,
    warm_up,
)
from benchmarks._measure import (
    log,
    median,
    median_time,
    proc_status_kb,
    reset_peak_rss,
    run_child,
    tree_size,
)
from benchmarks._table import format_seconds, size_label
from benchmarks.reference_worker import cpu_seconds, timed_write_cpu

__all__ = [
    "BATCH",
    "FULL_READ_MAX",
    "ONE_SHOT_MAX",
    "Case",
    "all_points",
    "batches",
    "chunk_side",
    "format_cases",
    "main",
    "make_batch",
    "modes_for",
    "round_order",
    "run_case",
    "target_lines",
    "target_rounds",
    "throughput_ratio",
]

DEFAULT_SIZES = (100_000, 1_000_000, 10_000_000, 100_000_000)
QUICK_SIZES = (100_000, 1_000_000)

BATCH = 1_000_000
"""Points per streamed batch (and per generated block of the one-shot arrays)."""

ONE_SHOT_MAX = 10_000_000
"""Largest size written in one shot (its input alone is 16 bytes per point)."""

FULL_READ_MAX = 10_000_000
"""Largest size read in full (the result and its check hold every point in memory)."""

BOX_FRACTION = 0.01
"""Volume of a query box over the volume of the cube."""

POINTS_PER_CHUNK = 80_000
"""Points per chunk aimed at for every size (chunk side 200 at 1e7 points)."""

THROUGHPUT_TARGET = (100_000_000, 10_000_000, 0.70)
"""Streaming at the first size reaches this share of the one-shot throughput at the second."""

PEAK_TARGET = (100_000_000, 2 * 2**30)
"""Peak resident set size of the streaming write at this size below these bytes."""

Case = dict[str, Any]
"""A child's JSON report of one (size, mode) case."""

COLUMNS = (
    "size",
    "mode",
    "write",
    "M pts/s",
    "CPU user / sys",
    "peak RSS MB",
    "write Δ MB",
    "store",
    "chunks",
    "1% box warm",
    "full read",
    "ok",
)

FOOTNOTES = (
    "Each (size, mode) runs in a fresh process after a warm-up (tiny one-shot and streaming "
    "writes, query, read), so numba's kernels are compiled or loaded from cache before timing.",
    "Data: uniform float32 points in [0, 1000)^3 and one float32 attribute, batch i drawn from "
    "default_rng([seed, i]) (1e6 points per batch); one-shot and streaming write the same "
    "points. Chunk side 200 * (n / 1e7)^(-1/3) (~80,000 points per chunk), rounded to the "
    "nearest 1000 / k so every chunk is full: k = 1, 2, 5, 11 per axis at 1e5 to 1e8 "
    "('chunks' = count x mean points per chunk); bins chunk / 4.",
    "write: one-shot = zv.write_points of arrays generated beforehand (untimed). streaming = "
    "zv.PointWriter (memory_budget 256 MiB, spill files beside the store) fed batch by batch; "
    "the batches are generated inside the timed loop, so each generation is timed on its own "
    "and the sum is subtracted (the log and the JSON show it, and the part of the write "
    "spent in the close: the chunk writes after the last batch); the generator's cache "
    "effects on the writer are not removed. Median of --repeat writes at every size (each "
    "store is kept until the run ends: 1e8 needs about 1.2 GB per write). Every write starts "
    "after an untimed os.sync() (earlier writes are not written back during it; its own data "
    "is not synced). --shard-chunks K > 1 writes K^3 chunks per shard file (format 1.1) in "
    "every case.",
    "CPU user / sys: the process's user and system (kernel) CPU seconds during a write, every "
    "thread (getrusage; medians of the writes); streaming leaves out the generation's CPU "
    "(its thread time) from user. On 2 CPUs, (user + sys) / 2 bounds the write from below; "
    "the system share is the page cache and file system taking the store's (and the spill "
    "files') bytes, and the page faults of fresh memory.",
    "peak RSS: VmHWM of the child, reset (clear_refs) just before the first timed write and "
    "read right after the last, so it includes the interpreter, zarr, numba and, for one-shot, "
    "the input arrays; 'write Δ' = peak minus the RSS just before the write.",
    "1% box warm: cubes of 1% of the volume, median over the boxes of the median of --repeat "
    "queries on an open store (after one untimed first query per box); the worst box in the "
    "JSON. full read: zv.open(path).read(), median of --repeat; skipped above 1e7 "
    "(1e8 points are 1.6 GB before any check).",
    "ok: every box query (and the full read) returned exactly the brute-force rows (bit for "
    "bit, as a multiset). The boxes' truth comes from the in-memory arrays (one-shot) or from "
    "regenerating the batches and filtering them one at a time (streaming), so 1e8 is checked "
    "without holding 1e8 points.",
    "Paired rounds (--target-rounds, default 3, when the sizes include 1e7 and 1e8): the "
    "throughput target's two cases again, writes only, each in a fresh process, the two back "
    "to back (one-shot first in odd rounds, streaming first in even ones), so a drift of the "
    "machine's speed during the run weighs on both sides of a round alike, and the rounds "
    "show the spread. They give no verdict: a round's one-shot child runs next to a 1e8 child "
    "that has just written 3.6 GB of stores, and in four runs it was slower than that run's "
    "single-pass median in 10 of 12 rounds (0.35-0.58 s against 0.34-0.43 s), so their "
    "ratios lean in the writer's favour; the single-pass line, whose 1e7 child runs first on "
    "a quiet machine, is the verdict.",
    "Shared 2-core machine: other processes add noise to every time; re-run before reading "
    "much into a gap of a few tens of percent. Every store stays until the run ends: right "
    "after deleting many files, creating files is several times slower on this machine's "
    "file system (benchmarks/README.md, Caveats).",
)


def chunk_side(n: int) -> float:
    """Side of a chunk holding about :data:`POINTS_PER_CHUNK` points, dividing the cube evenly.

    The ideal side ``CUBE * (POINTS_PER_CHUNK / n) ** (1/3)`` (200 at 1e7 points) is rounded
    to the nearest ``CUBE / k``, so every chunk is full: a side that does not divide the cube
    leaves a thin last layer of chunks and lowers the mean points per chunk (37,000 instead
    of 80,000 at 1e6 points).

    Parameters
    ----------
    n
        Number of points in the cube.

    Returns
    -------
    float
        ``CUBE / k`` with ``k >= 1`` chunks per axis: 1000, 500, 200, 90.9 at 1e5 to 1e8.
    """
    ideal = CUBE * (POINTS_PER_CHUNK / n) ** (1.0 / 3.0)
    return float(CUBE / max(1, round(CUBE / ideal)))


def make_batch(n: int, index: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Batch ``index`` of the ``n`` points: positions and attribute, float32.

    Parameters
    ----------
    n
        Total number of points.
    index
        Batch number; the batch holds points ``[index * BATCH, min(n, (index + 1) * BATCH))``.
    seed
        Seed of the data set.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``(m, 3)`` positions in the cube and the ``(m,)`` attribute.
    """
    rows = min(BATCH, n - index * BATCH)
    rng = np.random.default_rng([seed, index])
    positions = rng.random((rows, 3), dtype=np.float32)
    positions *= np.float32(CUBE)
    return positions, rng.random(rows, dtype=np.float32)


def batches(n: int, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every batch of the ``n`` points, in order (see :func:`make_batch`)."""
    for index in range(-(-n // BATCH)):
        yield make_batch(n, index, seed)


def all_points(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` points in memory: the batches copied into arrays allocated once.

    Parameters
    ----------
    n
        Number of points.
    seed
        Seed of the data set.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``(n, 3)`` positions and the ``(n,)`` attribute.
    """
    positions = np.empty((n, 3), dtype=np.float32)
    attribute = np.empty(n, dtype=np.float32)
    for index, (p, a) in enumerate(batches(n, seed)):
        start = index * BATCH
        positions[start : start + p.shape[0]] = p
        attribute[start : start + p.shape[0]] = a
    return positions, attribute


# -- child: one (size, mode) case ------------------------------------------------------------


def _peak_kb() -> int:
    hwm = proc_status_kb("VmHWM")
    if hwm is not None:
        return hwm
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _warm_up(work: str) -> None:
    """Compile or load the kernels of both writers, the query and the read."""
    warm_up(work)
    path = os.path.join(work, "warm-up-stream.zv")
    with zv.PointWriter(path, chunk_shape=250.0, progress=False) as writer:
        for p, a in batches(2000, 12345):
            writer.append(p, attributes={ATTRIBUTE: a})


@dataclass(frozen=True)
class _Write:
    """One timed write: its seconds, and its process CPU seconds (every thread).

    Streaming: ``seconds`` and ``user`` leave out the generation of the batches, which is
    in ``generation``; ``close`` is the part after the last batch.
    """

    seconds: float
    user: float
    system: float
    generation: float = 0.0
    close: float = 0.0


def _write_streaming(path: str, n: int, seed: int, options: zv.WriteOptions | None) -> _Write:
    """Stream the ``n`` points into ``path`` (with ``options``); the batches are generated
    inside the loop, so their time and CPU are measured and left out."""
    os.sync()  # as timed_write_cpu() does for the one-shot write
    gc.collect()
    generation = generation_cpu = 0.0
    clock = time.perf_counter
    user, system = cpu_seconds()
    start = clock()
    writer = zv.PointWriter(path, chunk_shape=chunk_side(n), options=options, progress=False)
    with writer:
        for index in range(-(-n // BATCH)):
            t, cpu = clock(), time.thread_time()
            positions, attribute = make_batch(n, index, seed)
            generation += clock() - t
            generation_cpu += time.thread_time() - cpu
            writer.append(positions, attributes={ATTRIBUTE: attribute})
            del positions, attribute
        closing = clock()
    end = clock()
    end_user, end_system = cpu_seconds()
    return _Write(
        end - start - generation,
        end_user - user - generation_cpu,
        end_system - system,
        generation,
        end - closing,
    )


def _write_once(
    mode: str,
    path: str,
    n: int,
    seed: int,
    data: tuple[np.ndarray, np.ndarray],
    options: zv.WriteOptions | None,
) -> _Write:
    """One write of ``mode``."""
    if mode == "streaming":
        return _write_streaming(path, n, seed, options)
    write = partial(
        zv.write_points,
        path,
        data[0],
        chunk_shape=chunk_side(n),
        attributes={ATTRIBUTE: data[1]},
        options=options,
    )
    seconds, (user, system), _ = timed_write_cpu(write)
    return _Write(seconds, user, system)


def _writes(
    mode: str,
    n: int,
    seed: int,
    repeat: int,
    work: str,
    data: tuple[np.ndarray, np.ndarray],
    options: zv.WriteOptions | None,
) -> dict[str, Any]:
    """Time ``repeat`` writes (each into a fresh path, all kept until the run ends; the
    last is queried) and their peak RSS."""
    writes: list[_Write] = []
    path = ""
    reset = reset_peak_rss()
    before = proc_status_kb("VmRSS") or _peak_kb()
    for i in range(repeat):
        path = os.path.join(work, f"store-{i}.zv")
        writes.append(_write_once(mode, path, n, seed, data, options))
    streaming = mode == "streaming"
    return {
        "path": path,
        "write_s": median([w.seconds for w in writes]),
        "write_all": [w.seconds for w in writes],
        "cpu_user_s": median([w.user for w in writes]),
        "cpu_system_s": median([w.system for w in writes]),
        "cpu_all": [[w.user, w.system] for w in writes],
        "generation_all": [w.generation for w in writes] if streaming else [],
        "close_all": [w.close for w in writes] if streaming else [],
        "before_kb": before,
        "peak_kb": _peak_kb(),
        "peak_method": "VmHWM reset via clear_refs" if reset else "lifetime peak (no reset)",
    }


def _box_truth(
    boxes: list[Box], parts: Iterator[tuple[np.ndarray, np.ndarray]]
) -> list[np.ndarray]:
    """Canonical brute-force rows of every box, gathered part by part."""
    found: list[list[Box]] = [[] for _ in boxes]
    for positions, attribute in parts:
        for rows, box in zip(found, boxes, strict=True):
            rows.append(column_filter(positions, attribute, box))
    return [
        canonical_rows(np.concatenate([p for p, _ in rows]), np.concatenate([a for _, a in rows]))
        for rows in found
    ]


def _queries(path: str, boxes: list[Box], truth: list[np.ndarray], repeat: int) -> dict[str, Any]:
    """Warm box queries on one open store: per-box medians, checked against ``truth``."""
    store = zv.open(path)
    warm: list[float] = []
    ok = True
    for box, expected in zip(boxes, truth, strict=True):
        store.query(box)  # the first query of this box is not timed
        seconds, result = median_time(partial(store.query, box), repeat)
        warm.append(seconds)
        ok = ok and same_rows(result, expected)
    rows = median([float(t.shape[0]) for t in truth])
    return {"box_s": median(warm), "box_all": warm, "box_rows": rows, "box_ok": ok}


def _full_read(path: str, data: tuple[np.ndarray, np.ndarray], repeat: int) -> dict[str, Any]:
    """Median time of ``zv.open(path).read()``, checked row for row against ``data``."""
    seconds, result = median_time(lambda: zv.open(path).read(), repeat)
    return {"read_s": seconds, "read_ok": same_rows(result, canonical_rows(*data))}


def run_case(
    mode: str,
    n: int,
    seed: int,
    repeat: int,
    boxes: int,
    work: str,
    shard_chunks: int = 1,
    *,
    writes_only: bool = False,
) -> Case:
    """Write, measure and query one case in this process (the child's body).

    Parameters
    ----------
    mode
        ``"one-shot"`` or ``"streaming"``.
    n
        Number of points.
    seed
        Seed of the data and of the boxes.
    repeat
        Writes (their median is reported), and repeats of each warm query and of the full
        read.
    boxes
        Number of 1% boxes.
    work
        An empty scratch directory (the caller removes it).
    shard_chunks
        Spatial chunks per shard along each axis (``WriteOptions.shard_chunks``); 1 for
        one file per chunk and array.
    writes_only
        Time the writes and stop (a round of the paired target, :func:`target_rounds`):
        no store size, query or read.

    Returns
    -------
    Case
        Times, peak memory, store size and checks; JSON-ready.
    """
    _warm_up(work)
    empty = (np.empty((0, 3), np.float32), np.empty(0, np.float32))
    data = all_points(n, seed) if mode == "one-shot" else empty
    case: Case = {"mode": mode, "n": n, "chunk_side": chunk_side(n), "writes": repeat}
    case["shard_chunks"] = shard_chunks
    options = zv.WriteOptions(shard_chunks=shard_chunks) if shard_chunks > 1 else None
    case |= _writes(mode, n, seed, repeat, work, data, options)
    path = case.pop("path")
    if writes_only:
        return case
    case["store_bytes"], case["store_files"] = tree_size(path)
    case["chunks"] = zv.open(path).chunk_count
    box_list = make_boxes(BOX_FRACTION, boxes, seed)
    parts = iter([data]) if mode == "one-shot" else batches(n, seed)
    case |= _queries(path, box_list, _box_truth(box_list, parts), repeat)
    if n <= FULL_READ_MAX:
        case |= _full_read(path, data if mode == "one-shot" else all_points(n, seed), repeat)
    case["ok"] = case["box_ok"] and case.get("read_ok", True)
    return case


# -- parent: every case, the table and the targets ---------------------------------------------


def modes_for(n: int) -> list[str]:
    """The modes run at ``n`` points: one-shot up to 1e7, streaming from one batch up."""
    return [m for m, run in (("one-shot", n <= ONE_SHOT_MAX), ("streaming", n >= BATCH)) if run]


def _run_child(
    mode: str, n: int, args: argparse.Namespace, run_dir: str, *, writes_only: bool = False
) -> Case:
    """Run one case in a fresh process with its own scratch directory inside ``run_dir``
    (removed by the caller when every case is done: see ``_writes``)."""
    work = tempfile.mkdtemp(prefix=f"{size_label(n)}-{mode}-", dir=run_dir)
    settings = (args.seed, args.repeat, args.boxes)
    what = "writes" if writes_only else "all"
    argv = (mode, str(n), *map(str, settings), work, str(args.shard_chunks), what)
    return run_child("benchmarks.scaling", "_child", *argv)


def throughput_ratio(big_seconds: float, ref_seconds: float) -> float:
    """Throughput of the target's streaming write over that of its one-shot write
    (:data:`THROUGHPUT_TARGET`), from their times in seconds."""
    big_n, ref_n, _ = THROUGHPUT_TARGET
    return (big_n / big_seconds) / (ref_n / ref_seconds)


def round_order(index: int) -> tuple[str, str]:
    """The modes of paired round ``index`` in the order they run: one-shot first in even
    rounds, streaming first in odd ones, so a drift of the machine during the rounds
    weighs on both sides alike."""
    pair = ("one-shot", "streaming")
    return pair if index % 2 == 0 else pair[::-1]


def target_rounds(args: argparse.Namespace, run_dir: str) -> list[dict[str, Any]]:
    """Time the throughput target's two cases ``args.target_rounds`` times, alternately.

    Each round runs the one-shot write at the target's reference size and the streaming
    write at its large size, each in a fresh process (``--repeat`` writes, median; no
    queries), one right after the other in the order of :func:`round_order`.

    Returns
    -------
    list of dict
        Per round: ``first`` (the mode run first), ``one_shot_s``, ``streaming_s`` and
        ``ratio`` (:func:`throughput_ratio`).
    """
    big_n, ref_n, _ = THROUGHPUT_TARGET
    rounds = []
    for index in range(args.target_rounds):
        seconds, order = {}, round_order(index)
        for mode in order:
            n = ref_n if mode == "one-shot" else big_n
            log(f"target round {index + 1}/{args.target_rounds}: n={n:,} {mode}, fresh process")
            seconds[mode] = _run_child(mode, n, args, run_dir, writes_only=True)["write_s"]
        one_shot, streaming = seconds["one-shot"], seconds["streaming"]
        ratio = throughput_ratio(streaming, one_shot)
        log(f"  one-shot {one_shot:.3f} s, streaming {streaming:.2f} s: {ratio:.0%}")
        rounds.append(
            {"first": order[0], "one_shot_s": one_shot, "streaming_s": streaming, "ratio": ratio}
        )
    return rounds


def _cells(case: Case) -> tuple[str, ...]:
    n, write = case["n"], case["write_s"]
    chunks = case["chunks"]
    read = case.get("read_s")
    return (
        size_label(n),
        case["mode"],
        format_seconds(write),
        f"{n / write / 1e6:.1f}",
        f"{case['cpu_user_s']:.2f} / {case['cpu_system_s']:.2f} s",
        f"{case['peak_kb'] * 1024 / 1e6:,.0f}",
        f"{(case['peak_kb'] - case['before_kb']) * 1024 / 1e6:,.0f}",
        f"{case['store_bytes'] / 1e6:,.0f} MB / {case['store_files']:,} files",
        f"{chunks:,} x {n / chunks / 1e3:.0f}k",
        f"{format_seconds(case['box_s'])} ({case['box_rows'] / 1e3:,.0f}k rows)",
        "skipped" if read is None else format_seconds(read),
        "ok" if case["ok"] else "FAIL",
    )


def format_cases(cases: list[Case]) -> str:
    """The cases as an aligned plain-text table with a header and a rule.

    Parameters
    ----------
    cases
        The children's reports, in print order.

    Returns
    -------
    str
        The table, without a trailing newline.
    """
    cells = [COLUMNS, *(_cells(c) for c in cases)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]

    def line(values: tuple[str, ...]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(c) for c in cells[1:])])


def _find(cases: list[Case], n: int, mode: str) -> Case | None:
    return next((c for c in cases if c["n"] == n and c["mode"] == mode), None)


def target_lines(cases: list[Case], rounds: list[dict[str, Any]] | None = None) -> list[str]:
    """The throughput and peak-memory targets of the largest streaming case, PASS or FAIL.

    Parameters
    ----------
    cases
        Every case of the run.
    rounds
        The paired rounds of the throughput target (:func:`target_rounds`), if any: a
        second throughput line with every round's ratio and their median, without a
        verdict (see the footnote on paired rounds).

    Returns
    -------
    list of str
        One line per target (``not measured`` when its sizes were not run).
    """
    big_n, ref_n, share = THROUGHPUT_TARGET
    big, ref = _find(cases, big_n, "streaming"), _find(cases, ref_n, "one-shot")
    lines = []
    if big is None or ref is None:
        lines.append(
            f"throughput target: not measured (needs {size_label(big_n)} streaming "
            f"and {size_label(ref_n)} one-shot)"
        )
    else:
        ratio = throughput_ratio(big["write_s"], ref["write_s"])
        verdict = "PASS" if ratio >= share else "FAIL"
        lines.append(
            f"{size_label(big_n)} streaming throughput / {size_label(ref_n)} one-shot throughput "
            f"= {ratio:.0%} (target ≥ {share:.0%}): {verdict}"
        )
    if rounds:
        ratios = [r["ratio"] for r in rounds]
        each = ", ".join(f"{r:.0%}" for r in ratios)
        lines.append(
            f"the same in {len(rounds)} paired rounds (alternating order): {each}; "
            f"median {median(ratios):.0%} (the spread only: the line above is the verdict)"
        )
    peak_n, limit = PEAK_TARGET
    peak = _find(cases, peak_n, "streaming")
    if peak is None:
        lines.append(f"peak target: not measured (needs {size_label(peak_n)} streaming)")
    else:
        gib = peak["peak_kb"] * 1024 / 2**30
        verdict = "PASS" if gib * 2**30 < limit else "FAIL"
        lines.append(
            f"{size_label(peak_n)} peak RSS = {gib:.2f} GiB (target < {limit / 2**30:g} GiB): "
            f"{verdict}"
        )
    return lines


def _write_summary(case: Case) -> str:
    """A progress line: the write times, and for streaming the generation and close."""
    times = ", ".join(f"{t:.2f}" for t in case["write_all"])
    if not case["generation_all"]:
        return f"  write {times} s"
    gen = ", ".join(f"{g:.2f}" for g in case["generation_all"])
    close = ", ".join(f"{c:.2f}" for c in case["close_all"])
    return f"  write {times} s (generation {gen} s subtracted; of which close {close} s)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.scaling",
        description="point write and query cost from 1e5 to 1e8 points (one-shot and streaming)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--sizes",
        type=point_counts,
        default=DEFAULT_SIZES,
        help="point counts (default 1e5,1e6,1e7,1e8)",
    )
    which.add_argument("--quick", action="store_true", help="smoke run: 1e5 and 1e6 points")
    parser.add_argument("--repeat", type=int, default=3, help="writes, query and read repeats (3)")
    parser.add_argument(
        "--shard-chunks",
        type=int,
        default=1,
        metavar="K",
        help="K x K x K spatial chunks per shard in every write (default 1: a file per chunk)",
    )
    parser.add_argument(
        "--target-rounds",
        type=int,
        default=3,
        metavar="N",
        help="when the sizes include 1e7 and 1e8: N more rounds of their two target writes "
        "in alternating order, each a fresh process (default 3; 0 for none)",
    )
    parser.add_argument("--boxes", type=int, default=5, help="1%% boxes (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of data and boxes (default 0)")
    parser.add_argument(
        "--dir",
        default="/tmp",
        help="where the run's scratch directory (data, stores, spill files) goes (default /tmp)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write every case as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run every case in its own process, print the table, the targets and footnotes.

    Parameters
    ----------
    argv
        Command-line arguments (default ``sys.argv[1:]``); ``_child MODE N SEED REPEAT
        BOXES WORK SHARD WHAT`` runs one case here (``WHAT``: ``all``, or ``writes`` for
        the writes alone) and prints its JSON report.

    Returns
    -------
    int
        0 when every answer agreed with brute force, 1 otherwise.
    """
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_child"]:
        mode, size, seed, repeat, boxes, work, shard, what = argv[1:]
        settings = (int(seed), int(repeat), int(boxes))
        case = run_case(mode, int(size), *settings, work, int(shard), writes_only=what == "writes")
        print(json.dumps(case))
        return 0
    args = _parser().parse_args(argv)
    if args.repeat < 1 or args.boxes < 1 or args.shard_chunks < 1 or args.target_rounds < 0:
        _parser().error(
            "--repeat, --boxes and --shard-chunks must be at least 1, --target-rounds at least 0"
        )
    sizes = QUICK_SIZES if args.quick else args.sizes
    began = time.perf_counter()
    cases = []
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="zv-scaling-", dir=args.dir) as run_dir:
        for n in sizes:
            for mode in modes_for(n):
                log(f"n={n:,} {mode}: fresh process")
                cases.append(_run_child(mode, n, args, run_dir))
                log(_write_summary(cases[-1]))
        if set(THROUGHPUT_TARGET[:2]) <= set(sizes):
            rounds = target_rounds(args, run_dir)
    print(
        f"zarr_vectors scaling, {os.cpu_count()} CPUs; seed {args.seed}, {args.boxes} boxes, "
        f"repeat {args.repeat}, {args.shard_chunks}^3 chunks per shard; "
        f"total run time {time.perf_counter() - began:.0f} s\n"
    )
    print(format_cases(cases))
    print()
    print("\n".join(target_lines(cases, rounds)))
    print()
    print("\n".join(f"* {note}" for note in FOOTNOTES))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"cases": cases, "target_rounds": rounds}, out, indent=1)
    return 0 if all(c["ok"] for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
