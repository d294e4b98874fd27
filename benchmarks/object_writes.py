"""``python -m benchmarks.object_writes``: object writes beside zarr-vectors 0.9.2 and ``np.save``.

Issue 39's write target: streamlines (10,000 x 100 vertices), skeletons (100 x 1,000 nodes)
and a mesh (100 spheres x 10,000 triangles) on stores of small chunks — 25 mm chunks over the
200 mm cube (512 chunks), bins a quarter of a chunk, the same for both libraries and our codec
for the reference. Per kind and repeat, interleaved: our write (this process, our default
shards), the reference's write (a fresh process of its own virtualenv,
:mod:`benchmarks.reference_env`, timing only its write call) and ``np.save`` of the same
arrays; each after ``os.sync()`` (:func:`~benchmarks._measure.timed_write`). The table gives
medians and the ratios the issue names: reference / ours (target >= 5) and ours / ``np.save``
(target <= 30), and the CPU seconds of our write (every thread, user and system): the CPU
stays put from run to run while the wall time follows the cores other processes leave free.
The load average is printed beside each row, and the host's memory speed above the table
(:mod:`benchmarks._host`): on a shared machine only ratios within a row compare.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from benchmarks import objects
from benchmarks._host import host_lines, host_state
from benchmarks._measure import log, median, run_reference, timed_write
from benchmarks._table import align_table, format_seconds
from benchmarks.reference_env import ensure_venv
from benchmarks.reference_worker import timed_write_cpu
from benchmarks.side_by_side import OUR_CODEC

__all__ = ["main"]

CHUNK, BIN = 25.0, 6.25
"""512 chunks over the objects' 200 mm cube, bins a quarter of a chunk (issue 39)."""


def make(kind: str, seed: int) -> objects.ObjectSet:
    """The issue's data set of ``kind``, written with :data:`CHUNK` and :data:`BIN`."""
    objects.MESH_CHUNK = objects.SKELETON_CHUNK = CHUNK  # read by the writers when called
    objects.MESH_BIN = objects.SKELETON_BIN = BIN
    if kind == "streamlines":
        return objects.make_streamlines(10_000, 100, seed, (CHUNK, BIN))
    if kind == "mesh":
        return objects.make_mesh(100, 10_000, seed)
    return objects.make_skeletons(100, 1_000, seed)


def _reference_spec(kind: str, data: objects.ObjectSet, where: Path) -> Path:
    """Save the arrays and the reference's spec (layout, codec) under ``where``."""
    arrays = where / "data"
    arrays.mkdir(parents=True)
    data.frame.save(str(arrays))
    spec = {
        "kind": kind,
        "attribute": next(iter(data.frame.attributes)),
        "data_dir": str(arrays),
        "layout": {
            "chunk": [CHUNK] * 3,
            "bin": [BIN] * 3,
            "bounds": [[0.0] * 3, [objects.SIDE] * 3],
            "compression": OUR_CODEC,
        },
    }
    path = where / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def _reference_write(python: Path, spec: Path, store: Path) -> float:
    """Seconds of one reference write, timed inside its own process."""
    return float(
        run_reference(python, "reference_worker", "write", str(spec), str(store))["seconds"]
    )


def _timed(func: Callable[[], object], path: Path) -> float:
    """Seconds of ``func`` (a write to ``path``), then ``path`` removed."""
    seconds, _ = timed_write(func)
    shutil.rmtree(path, ignore_errors=True)
    return seconds


def run_kind(kind: str, repeat: int, seed: int, python: Path, root: Path) -> tuple[str, ...]:
    """One table row: medians of ``repeat`` interleaved writes of ``kind``."""
    data = make(kind, seed)
    where = root / kind
    spec = _reference_spec(kind, data, where)
    data.write(str(where / "warm"))  # numba's kernels loaded or compiled
    ours, cpu, reference, floor = [], [], [], []
    for i in range(repeat):
        store, npy = where / f"ours-{i}", where / f"npy-{i}"
        seconds, (user, system), _ = timed_write_cpu(partial(data.write, str(store)))
        shutil.rmtree(store, ignore_errors=True)
        ours.append(seconds)
        cpu.append(user + system)
        reference.append(_reference_write(python, spec, where / f"ref-{i}"))
        shutil.rmtree(where / f"ref-{i}", ignore_errors=True)
        npy.mkdir()
        floor.append(_timed(partial(data.frame.save, str(npy)), npy))
        log(f"object_writes: {kind} {i + 1}/{repeat}")
    t_ours, t_ref, t_floor = median(ours), median(reference), median(floor)
    return (
        f"{kind} {data.label}",
        format_seconds(t_ours),
        format_seconds(median(cpu)),
        format_seconds(t_ref),
        format_seconds(t_floor),
        f"{t_ref / t_ours:.1f}",
        f"{t_ours / t_floor:.0f}",
        f"{os.getloadavg()[0]:.1f}",
    )


def main(argv: list[str] | None = None) -> int:
    """Run every kind and print the table on stdout."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.object_writes", description=__doc__)
    parser.add_argument("--kinds", default="streamlines,skeletons,mesh")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", default=None, help="scratch parent (default: the temp dir)")
    args = parser.parse_args(argv)
    python = ensure_venv()
    before = host_state()
    header = (
        "data",
        "ours",
        "ours CPU",
        "0.9.2",
        "np.save",
        "0.9.2 / ours",
        "ours / np.save",
        "load",
    )
    with tempfile.TemporaryDirectory(prefix="zv-bench-writes-", dir=args.dir) as tmp:
        rows = [
            run_kind(kind, args.repeat, args.seed, python, Path(tmp))
            for kind in args.kinds.split(",")
        ]
    print(host_lines(before, host_state()), end="\n\n")
    print(align_table(header, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
