"""Peak memory of ``write_points``, measured in a fresh process.

The child (``python -m benchmarks._memory N SEED``) warms numba up, creates the arrays,
reads its resident set size, resets the peak (``VmHWM``) when the kernel allows it, writes
the store, reads the peak and prints one JSON line. :func:`measure_write_memory` runs it.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile

import zarr_vectors as zv
from benchmarks._data import ATTRIBUTE, make_points, warm_up
from benchmarks._measure import proc_status_kb, reset_peak_rss, run_child
from benchmarks._table import Row

__all__ = ["MEMORY_TARGET", "measure_write_memory"]

MEMORY_TARGET = 3.0
"""The issue's goal: the write's peak memory above the baseline under this many input sizes."""


def _peak_kb() -> int:
    hwm = proc_status_kb("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _child(n: int, seed: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="zv-bench-mem-", dir="/tmp") as tmp:
        warm_up(tmp)
        positions, attribute = make_points(n, seed)
        peak_before_reset = _peak_kb()
        reset = reset_peak_rss()
        before = proc_status_kb("VmRSS")
        if before is None:  # not Linux: fall back on the peak so far
            before = peak_before_reset
        zv.write_points(os.path.join(tmp, "store.zv"), positions, attributes={ATTRIBUTE: attribute})
        peak = _peak_kb()
    return {
        "n": n,
        "input_bytes": positions.nbytes + attribute.nbytes,
        "before_kb": before,
        "peak_kb": peak,
        "peak_before_write_kb": peak_before_reset,
        "method": "VmHWM reset via clear_refs" if reset else "ru_maxrss (no peak reset)",
    }


def measure_write_memory(n: int, seed: int) -> Row:
    """Run the child for ``n`` points and turn its report into a table row.

    Parameters
    ----------
    n
        Number of points.
    seed
        Seed of the data (the same arrays as the in-process cases).

    Returns
    -------
    Row
        ``(peak - before) / input bytes`` against :data:`MEMORY_TARGET`.
    """
    report = run_child("benchmarks._memory", str(n), str(seed))
    before, peak = report["before_kb"] * 1024, report["peak_kb"] * 1024
    input_bytes = report["input_bytes"]
    ratio = (peak - before) / input_bytes
    note = ""
    if report["method"].startswith("ru_maxrss") and report["peak_before_write_kb"] * 1024 > before:
        note = "; peak before the write was higher than RSS, ratio is a lower bound"
    return Row(
        "peak memory of write",
        n,
        ratio,
        None,
        "x input",
        target=f"< {MEMORY_TARGET:g}x input",
        passed=ratio < MEMORY_TARGET,
        detail=(
            f"fresh process: RSS {before / 1e6:.0f} MB before, peak {peak / 1e6:.0f} MB, "
            f"input {input_bytes / 1e6:.0f} MB; {report['method']}{note}"
        ),
        extra=report,
    )


if __name__ == "__main__":
    print(json.dumps(_child(int(sys.argv[1]), int(sys.argv[2]))))
