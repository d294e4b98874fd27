"""Measurement helpers: timing, sizes on disk, resident memory (standard library only)."""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.reference_env import clean_env

__all__ = [
    "REPO_ROOT",
    "back_to_back",
    "log",
    "median",
    "median_time",
    "proc_status_kb",
    "reset_peak_rss",
    "run_child",
    "run_reference",
    "settle_allocator",
    "timed",
    "tree_size",
    "within_budget",
]

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The directory holding the ``benchmarks`` package (child processes run from there)."""


def log(message: str) -> None:
    """Print a progress line on stderr, so stdout holds only the table.

    Parameters
    ----------
    message
        The text to print.
    """
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def run_child(
    module: str,
    *args: str,
    env: dict[str, str] | None = None,
    python: Path | None = None,
    path: Sequence[Path] = (REPO_ROOT,),
) -> dict[str, Any]:
    """Run ``python -P -m module args...`` in a fresh process and parse its last stdout line.

    Parameters
    ----------
    module
        The module to run, e.g. ``"benchmarks._memory"``; it prints one JSON object last.
    *args
        Its command-line arguments.
    env
        Its environment (default: this process's).
    python
        Its interpreter (default: this one), e.g. the reference virtualenv's.
    path
        The folders it imports from first, in this order, ahead of any ``PYTHONPATH`` in
        ``env`` (default: this repository). They are its ``PYTHONPATH``, so the processes
        it starts import from them too; ``-P`` keeps the working directory off its path.
        E.g. ``(other_tree, REPO_ROOT)`` runs another tree's ``zarr_vectors``.

    Returns
    -------
    dict
        The decoded JSON object.

    Raises
    ------
    RuntimeError
        When the child fails; the message holds the end of its stderr.
    """
    child_env = dict(os.environ if env is None else env)
    folders = [*map(str, path), *child_env.get("PYTHONPATH", "").split(os.pathsep)]
    child_env["PYTHONPATH"] = os.pathsep.join(f for f in folders if f)
    done = subprocess.run(
        [str(python or sys.executable), "-P", "-m", module, *args],
        cwd=REPO_ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def run_reference(python: Path, module: str, *args: str) -> dict[str, Any]:
    """Run a standalone module of ``benchmarks/`` with the reference interpreter.

    :func:`run_child` in :func:`~benchmarks.reference_env.clean_env`, with only ``benchmarks/``
    on the path: ``zarr_vectors`` is the reference's, never this repository's.

    Parameters
    ----------
    python
        The reference virtualenv's interpreter (:func:`~benchmarks.reference_env.ensure_venv`).
    module
        A module of ``benchmarks/`` that imports nothing of this repository but its
        standalone neighbours, e.g. ``"reference_pyramid"``; it prints one JSON object last.
    *args
        Its command-line arguments.

    Returns
    -------
    dict
        What the module printed last.
    """
    return run_child(
        module, *args, env=clean_env(), python=python, path=(REPO_ROOT / "benchmarks",)
    )


def timed(func: Callable[[], T]) -> tuple[float, T]:
    """Run ``func`` once and time it with :func:`time.perf_counter`.

    A garbage collection runs first (untimed) so that earlier garbage is not charged to
    the measured call.

    Parameters
    ----------
    func
        The call to time, without arguments.

    Returns
    -------
    tuple of (float, object)
        Elapsed seconds and the value ``func`` returned.
    """
    gc.collect()
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def timed_write(func: Callable[[], T]) -> tuple[float, T]:
    """:func:`timed` after flushing the file data written so far to disk (untimed).

    Dirty pages of earlier writes are otherwise written back whenever the kernel chooses
    (30 s after they were written, or when they pass 10% of memory): during a later timed
    write, whose time they would then swell. The write timed here is not flushed: its time
    is that of handing the data to the page cache, for every library and floor alike.
    """
    os.sync()
    return timed(func)


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence of numbers.

    Parameters
    ----------
    values
        The numbers.

    Returns
    -------
    float
        Their median.
    """
    return float(statistics.median(values))


def median_time(func: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Run ``func`` ``repeat`` times (see :func:`timed`) and take the median time.

    Parameters
    ----------
    func
        The call to time, without arguments.
    repeat
        How many times to run it (at least 1).

    Returns
    -------
    tuple of (float, object)
        The median seconds and the value of the last call.
    """
    times = []
    for _ in range(repeat):
        seconds, value = timed(func)
        times.append(seconds)
    return median(times), value


def within_budget(times: Sequence[float], repeat: int, budget: float) -> bool:
    """Whether one more run fits after runs of ``times`` seconds: fewer than ``repeat`` so
    far, and the sum with one more as long as the last not past ``budget`` (True before the
    first run).

    Examples
    --------
    >>> within_budget([], 3, 0.0), within_budget([1.0], 3, 2.5), within_budget([1.0, 1.0], 3, 2.5)
    (True, True, False)
    """
    return len(times) < repeat and (not times or sum(times) + times[-1] <= budget)


def back_to_back(func: Callable[[], object], repeat: int, budget: float) -> list[float]:
    """Seconds of up to ``repeat`` runs of ``func`` one right after another: the steady state.

    One garbage collection runs first (untimed), none between the runs, so each run finds
    in the CPU caches what the run before it left there. :func:`timed` collects before every
    run instead, which walks every object of the process and leaves the caches cold: a query
    of a millisecond then pays for fetching its code and data again. The runs stop early
    once one more would pass ``budget`` seconds (at least one runs).

    Examples
    --------
    >>> len(back_to_back(lambda: sum(range(10)), 3, 1.0))
    3
    """
    gc.collect()
    times: list[float] = []
    while within_budget(times, repeat, budget):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return times


def tree_size(path: str | os.PathLike[str]) -> tuple[int, int]:
    """Total apparent size and number of the regular files under ``path``.

    Parameters
    ----------
    path
        A file or a directory.

    Returns
    -------
    tuple of (int, int)
        Bytes (sum of file sizes, like ``du --apparent-size``) and file count.
    """
    root = Path(path)
    files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def proc_status_kb(field: str) -> int | None:
    """A memory field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``) in kB.

    Parameters
    ----------
    field
        The field name, without the colon.

    Returns
    -------
    int or None
        The value in kB, or None when ``/proc`` is not available (not Linux).
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak_rss() -> bool:
    """Reset the process's peak resident set size (``VmHWM``) to its current RSS.

    Writes ``5`` to ``/proc/self/clear_refs`` (Linux 4.0 and later).

    Returns
    -------
    bool
        True when the reset was accepted and ``VmHWM`` now equals ``VmRSS`` within 1 MB.
    """
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        return False
    hwm, rss = proc_status_kb("VmHWM"), proc_status_kb("VmRSS")
    return hwm is not None and rss is not None and hwm - rss < 1024


SETTLE_BYTES = 30 << 20
"""The block :func:`settle_allocator` frees: above the floor arrays of the object cases but
those of 10^5 streamlines (skeletons 0.4-1.6 MB, 10^4 streamlines 4-12 MB, mesh faces 24
MB), below the 32 MiB up to which glibc raises its mmap threshold."""


def settle_allocator() -> None:
    """Free one block of :data:`SETTLE_BYTES` so that ``malloc`` serves later arrays below
    that size from memory it keeps, whatever ran before in the process.

    glibc maps every block above its mmap threshold (128 KiB at the start of a process)
    afresh and unmaps it when freed; freeing such a block raises the threshold to its size
    and the heap's trim threshold to twice that. Raised only by arrays of the floor's own
    sizes, the heap is trimmed back to the system after each call and faulted in again by
    the next: the skeleton floor's ``np.load`` paid 846 page faults a call, 6.5-6.8 ms
    against 4.8-5.0 ms without them (2026-12-05), so a floor measured early in a process or
    in a small one (``benchmarks.cold_open``) took a third longer than the same floor late
    in ``python -m benchmarks --objects``. Calling this first gives every run the settled
    allocator, the floor's faster state. Elsewhere than glibc, or where a ``MALLOC_*_``
    variable fixes glibc's thresholds (dask's ``LocalCluster`` exports
    ``MALLOC_TRIM_THRESHOLD_``), it only allocates and frees.

    Examples
    --------
    >>> settle_allocator()
    """
    block = bytearray(SETTLE_BYTES)
    del block
