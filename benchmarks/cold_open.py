"""``python -m benchmarks.cold_open``: what a cold 1% skeleton box and a cold read of 100
streamlines by id cost (issue 39, items 2 and 3).

Cold = ``zv.open`` + the first query or read on that handle (page cache warm, kernels
compiled: a first pass runs before anything is timed; the allocator settled first, as in
``benchmarks.objects``: :func:`~benchmarks._measure.settle_allocator`). Skeleton box: the store
``benchmarks.objects.make_skeletons(100, 1000, 0)`` (chunks 40 mm, bins 10 mm), the boxes
``make_boxes(0.01, 5, 0)``; every answer is checked against brute force (the same objects,
each whole and exact). By id: ``make_streamlines(10_000, 100, 0)``, 5 random sets of 100
ids drawn as ``benchmarks.objects`` draws them, each answer checked against slicing the
input (the objects in the order asked, each whole and exact). ``--case`` picks one.

Rows: per cold query, the process CPU (``time.process_time``) and wall time, median and
least over ``--rounds`` x 5 boxes; for the skeleton box, cold over its floor as
``benchmarks.objects`` times both (``zv.open`` + first query against ``np.load`` of every
array + the brute-force filter, a garbage collection before each timed call), pair by
pair, the floor right after ours on the same box: the median, least and most of the
ratios and the medians of both sides (one pair per box per round, so the median rests on
``--rounds`` x 5 pairs rather than the 5 boxes of ``benchmarks.objects``); the CPU of
``zv.open`` alone; the same box again on its handle (warm); and the exact counts of one
cold query per box (median over the boxes): Python calls (cProfile), files opened
(:class:`~zarr_vectors.store.links.LocalTree`) and request waves (``StoreIO.get_many`` +
``StoreIO.read_metadata`` calls). On a shared machine the times swing with the load
(printed); the counts do not. ``--phases`` adds where the wall
time of a cold query goes (:data:`_PHASES`, each timed around its calls; the parts overlap:
a read's decode is inside the phase that asked for it), and the same time split without
overlap (:func:`_split`): files read, row blocks decoded, the other numba kernels, and the
rest (the Python and numpy that plan, check and assemble).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import Any

import numpy as np

import zarr_vectors as zv
from benchmarks._host import host_state
from benchmarks._measure import settle_allocator, timed
from benchmarks.objects import (
    Frame,
    make_boxes,
    make_skeletons,
    make_streamlines,
    same_id_set,
    same_objects,
)
from zarr_vectors.kernels._jit import Kernel, set_kernel_mode
from zarr_vectors.query._object_plan import ObjectPlan
from zarr_vectors.query.object_queries import ObjectReader
from zarr_vectors.read import level_globals
from zarr_vectors.read.reader import LevelReader
from zarr_vectors.store import native_blocks
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.links import LocalTree

__all__ = ["main", "skeleton_case"]


@contextmanager
def _counting(owner: type, name: str, seen: list[int]) -> Iterator[None]:
    """Count the calls of ``owner.name`` into ``seen[0]`` while the scope is open."""
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        return real(*args, **kwargs)

    setattr(owner, name, counted)
    try:
        yield
    finally:
        setattr(owner, name, real)


_PHASES: tuple[tuple[str, object, str], ...] = (
    ("level documents (StoreIO.read_metadata)", StoreIO, "read_metadata"),
    ("LevelReader() with its documents", LevelReader, "__init__"),
    ("global arrays (LevelReader.read_globals)", LevelReader, "read_globals"),
    ("- plain chunks decoded", level_globals, "decode_plain_chunks"),
    ("owners of the box (ObjectReader._owners_and_rows)", ObjectReader, "_owners_and_rows"),
    ("objects read (ObjectPlan.result)", ObjectPlan, "result"),
    ("batches of files read (StoreIO.get_many)", StoreIO, "get_many"),
    ("spans read (StoreIO.read_spans_into)", StoreIO, "read_spans_into"),
    ("row blocks decoded (native_blocks.decode_natively)", native_blocks, "decode_natively"),
)
"""What ``--phases`` times: a name, and the function (owner, attribute) timed."""


@contextmanager
def _timing(owner: object, name: str, spent: list[float]) -> Iterator[None]:
    """Add the wall time of each call of ``owner.name`` to ``spent[0]`` while the scope is
    open."""
    real = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - began

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, real)


def _phases(cold: Callable[[], object], rounds: int) -> dict[str, list[float]]:
    """Seconds each of :data:`_PHASES` takes in ``cold()``, and the whole call, per round
    (a garbage collection before each call, as ``benchmarks.objects`` times a cold query)."""
    out: dict[str, list[float]] = {name: [] for name, _, _ in _PHASES}
    out["whole cold query"] = []
    for _ in range(rounds):
        spent = {name: [0.0] for name, _, _ in _PHASES}
        with ExitStack() as scopes:
            for name, owner, attribute in _PHASES:
                scopes.enter_context(_timing(owner, attribute, spent[name]))
            gc.collect()
            began = time.perf_counter()
            cold()
            out["whole cold query"].append(time.perf_counter() - began)
        for name, seconds in spent.items():
            out[name].append(seconds[0])
    return out


_FILES = "files read (StoreIO: documents, whole files, spans)"
_DECODE = "row blocks decoded (native decode kernels)"
_KERNELS = "other numba kernels (calls from Python)"
_REST = "the rest: Python and numpy (plans, checks, assembly)"
_SPLIT: tuple[tuple[str, object, str], ...] = (
    (_FILES, StoreIO, "read_root"),
    (_FILES, StoreIO, "read_metadata"),
    (_FILES, StoreIO, "get_many"),
    (_FILES, StoreIO, "read_spans_into"),
    (_DECODE, native_blocks, "decode_natively"),
)
"""The functions :func:`_split` times outright (a part, owner, attribute); numba kernels
are timed at :meth:`Kernel.__call__`, the decode kernels (:data:`_DECODE_KERNELS`) apart."""

_DECODE_KERNELS = frozenset({"_decode_blocks", "_decode_chunk_blocks"})


class _Outermost:
    """Wall seconds of the calling thread's outermost timed calls, by part: a call made
    inside another timed call (a kernel a read runs, a decode inside a read) counts once,
    in the part of the outer one, so the parts add up to at most the whole."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.inside = False
        self.thread = threading.get_ident()

    @contextmanager
    def timing(
        self, owner: object, name: str, part: str | Callable[[tuple[Any, ...]], str]
    ) -> Iterator[None]:
        """Time each outermost call of ``owner.name`` into ``part`` (or the part
        ``part(args)`` names) while the scope is open (as :func:`_timing` times a phase)."""
        real = getattr(owner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.inside or threading.get_ident() != self.thread:
                return real(*args, **kwargs)
            self.inside = True
            began = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                named = part if isinstance(part, str) else part(args)
                self.seconds[named] += time.perf_counter() - began
                self.inside = False

        setattr(owner, name, call)
        try:
            yield
        finally:
            setattr(owner, name, real)


def _kernel_part(args: tuple[Any, ...]) -> str:
    return _DECODE if args[0].py_func.__name__ in _DECODE_KERNELS else _KERNELS


def _split(cold: Callable[[], object], rounds: int) -> dict[str, list[float]]:
    """Seconds of ``cold()`` in each part of :data:`_SPLIT`, in the other numba kernels
    and in the rest, per round (a garbage collection before each call); the parts do not
    overlap (:class:`_Outermost`) and add up to the whole."""
    out: dict[str, list[float]] = {name: [] for name in (_FILES, _DECODE, _KERNELS, _REST)}
    for _ in range(rounds):
        clock = _Outermost()
        with ExitStack() as scopes:
            for part, owner, name in _SPLIT:
                scopes.enter_context(clock.timing(owner, name, part))
            scopes.enter_context(clock.timing(Kernel, "__call__", _kernel_part))
            gc.collect()
            began = time.perf_counter()
            cold()
            whole = time.perf_counter() - began
        for part in (_FILES, _DECODE, _KERNELS):
            out[part].append(clock.seconds[part])
        out[_REST].append(whole - sum(clock.seconds.values()))
    return out


def _paired(
    path: str, case: Any, cold: Callable[[Any, Any], object], floor: Callable[[Frame, Any], object]
) -> dict[str, float]:
    """One cold query of ``case`` and then its floor, each timed as ``benchmarks.objects``
    times them: ``zv.open`` and the first query, ``Frame.load`` of the ``.npy`` directory
    beside the store (``path + ".npy"``) and ``floor(frame, case)``, each call after a
    garbage collection (:func:`~benchmarks._measure.timed`)."""
    t_open, store = timed(partial(zv.open, path))
    t_first, _ = timed(partial(cold, store, case))
    t_load, frame = timed(partial(Frame.load, path + ".npy"))
    t_floor, _ = timed(partial(floor, frame, case))
    ours, base = t_open + t_first, t_load + t_floor
    return {
        "paired ours": ours,
        "paired floor": base,
        "paired ratio": ours / base,
        "paired open": t_open,
        "paired load": t_load,
    }


def _counts(query: Callable[[], object]) -> tuple[int, int, int]:
    """Python calls, files opened and request waves of one call of ``query``."""
    profile = cProfile.Profile()
    profile.runcall(query)
    calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
    opens, waves = [0], [0]
    with (
        _counting(LocalTree, "open_now", opens),
        _counting(StoreIO, "get_many", waves),
        _counting(StoreIO, "read_metadata", waves),
    ):
        query()
    return int(calls), opens[0], waves[0]


def _measure(
    path: str,
    cases: list[Any],
    cold: Callable[[Any, Any], object],
    check: Callable[..., bool],
    rounds: int,
    phases: bool = False,
    floor: Callable[[Frame, Any], object] | None = None,
) -> dict[str, list[float]]:
    """Time ``cold(zv.open(path), case)`` for each case ``rounds`` times (and once more
    warm on its handle); ``check(result, case)`` judges every answer; with ``phases``,
    :func:`_phases` of each case (keys ``"phase: ..."``); with ``floor``, the pairs of
    :func:`_paired` (keys ``"paired ..."``)."""
    for case in cases:  # kernels compiled or loaded, page cache warm
        cold(zv.open(path), case)
    out: dict[str, list[float]] = {k: [] for k in ("cpu", "wall", "open", "warm", "ok")}
    for _ in range(rounds):
        for case in cases:
            if floor is not None:
                for key, value in _paired(path, case, cold, floor).items():
                    out.setdefault(key, []).append(value)
            cpu, wall = time.process_time(), time.perf_counter()
            store = zv.open(path)
            opened = time.process_time()
            result = cold(store, case)
            out["cpu"].append(time.process_time() - cpu)
            out["wall"].append(time.perf_counter() - wall)
            out["open"].append(opened - cpu)
            out["ok"].append(float(check(result, case)))
            cpu = time.process_time()
            cold(store, case)
            out["warm"].append(time.process_time() - cpu)

    def cold_once(case: Any) -> object:
        return cold(zv.open(path), case)

    counted = [_counts(partial(cold_once, case)) for case in cases]
    for i, name in enumerate(("calls", "opens", "waves")):
        out[name] = [float(c[i]) for c in counted]
    for case in cases if phases else []:
        for name, seconds in _phases(partial(cold_once, case), rounds).items():
            out.setdefault(f"phase: {name}", []).extend(seconds)
        for name, seconds in _split(partial(cold_once, case), rounds).items():
            out.setdefault(f"split: {name}", []).extend(seconds)
    return out


def skeleton_case(tmp: str) -> tuple[str, Callable[[zv.QueryResult, Any], bool]]:
    """The cold skeleton box's store, written in ``tmp`` (its floor's ``.npy`` directory
    beside it, at ``path + ".npy"``), and the check of a box's answer against brute force."""
    data = make_skeletons(100, 1000, 0)
    path = os.path.join(tmp, "skeletons.zv")
    data.write(path)
    os.mkdir(path + ".npy")
    data.frame.save(path + ".npy")

    def check(result: zv.QueryResult, box: Any) -> bool:
        return same_id_set(result, data.frame, data.frame.owners(box), data.links_name)

    return path, check


def _skeleton_box(tmp: str, rounds: int, phases: bool) -> dict[str, list[float]]:
    path, check = skeleton_case(tmp)
    boxes = make_boxes(0.01, 5, 0)
    return _measure(path, boxes, lambda h, box: h.query(box), check, rounds, phases, Frame.query)


def _streamlines_by_id(tmp: str, rounds: int, phases: bool) -> dict[str, list[float]]:
    data = make_streamlines(10_000, 100, 0)
    path = os.path.join(tmp, "streamlines.zv")
    data.write(path)
    rng = np.random.default_rng([0, 5, 100])  # as benchmarks.objects draws its id sets
    sets = [rng.choice(10_000, size=100, replace=False).astype(np.int64) for _ in range(5)]

    def check(result: zv.QueryResult, ids: np.ndarray) -> bool:
        return same_objects(result, data.frame.gather(ids), data.links_name)

    return _measure(path, sets, lambda h, ids: h.read_objects(ids), check, rounds, phases)


_CASES = {
    "skeletons": ("cold 1% skeleton box", _skeleton_box),
    "by-id": ("cold 100 streamlines by id (10^4 x 100)", _streamlines_by_id),
}


def _paired_rows(found: dict[str, list[float]]) -> list[tuple[str, str]]:
    """The rows of :func:`_paired` (none when the case has no floor)."""
    ratios = found.get("paired ratio")
    if not ratios:
        return []
    ms = {
        k[len("paired ") :]: statistics.median(v) * 1e3 for k, v in found.items() if "paired" in k
    }
    return [
        (
            "cold / floor, pair by pair (gc before each call): median, least-most",
            f"{statistics.median(ratios):.3f}x, {min(ratios):.2f}-{max(ratios):.2f}x "
            f"({len(ratios)} pairs)",
        ),
        (
            "  their medians: zv.open + query / np.load + filter",
            f"{ms['open']:.2f} + {ms['ours'] - ms['open']:.2f} = {ms['ours']:.2f} / "
            f"{ms['load']:.2f} + {ms['floor'] - ms['load']:.2f} = {ms['floor']:.2f} ms",
        ),
    ]


def _table(title: str, found: dict[str, list[float]]) -> None:
    med, least = statistics.median, min
    ms = 1e3
    rows = [
        (
            "cold CPU, median / least",
            f"{med(found['cpu']) * ms:.2f} / {least(found['cpu']) * ms:.2f} ms",
        ),
        (
            "cold wall, median / least",
            f"{med(found['wall']) * ms:.2f} / {least(found['wall']) * ms:.2f} ms",
        ),
        ("zv.open CPU, median", f"{med(found['open']) * ms:.2f} ms"),
        ("warm CPU (same handle), median", f"{med(found['warm']) * ms:.2f} ms"),
        ("Python calls a cold query", f"{med(found['calls']):,.0f}"),
        ("files opened a cold query", f"{med(found['opens']):.0f}"),
        ("request waves a cold query", f"{med(found['waves']):.0f}"),
        ("answers equal brute force", "yes" if all(found["ok"]) else "NO"),
        *_paired_rows(found),
        ("load (1 min)", f"{os.getloadavg()[0]:.2f}"),
        ("host (benchmarks._host)", str(host_state())),
    ]
    whole = med(found.get("phase: whole cold query", [0.0])) or 1.0
    rows += [
        (key, f"{med(found[key]) * ms:.2f} ms ({med(found[key]) / whole:.0%})")
        for key in found
        if key.startswith(("phase: ", "split: "))
    ]
    width = max(len(title), *(len(r[0]) for r in rows))
    print(f"| {title.ljust(width)} | value |")
    print(f"| {'-' * width} | --- |")
    for name, value in rows:
        print(f"| {name.ljust(width)} | {value} |")


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_open")
    parser.add_argument("--rounds", type=int, default=6, help="passes over the 5 cases")
    parser.add_argument("--case", choices=[*_CASES, "both"], default="both")
    parser.add_argument(
        "--phases", action="store_true", help="also time the parts of a cold query (median)"
    )
    args = parser.parse_args(argv)
    settle_allocator()  # the floor's np.load as in the long process of benchmarks.objects
    set_kernel_mode("compiled")
    ok = True
    with tempfile.TemporaryDirectory(prefix="zv-bench-cold-open-") as tmp:
        for name, (title, run) in _CASES.items():
            if args.case in (name, "both"):
                found = run(tmp, args.rounds, args.phases)
                _table(title, found)
                ok = ok and all(found["ok"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
