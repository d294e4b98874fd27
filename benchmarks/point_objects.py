"""Point clouds with object ids (issue 39 items 3 and 4): writes with and without ids, and
reads of 100 objects by id (``read_objects``) beside a full read filtered by id.

Data: ``n`` float32 points in objects of 100 points each (``n / 100`` objects). Two layouts:

* ``compact``: each object a cluster (uniform in a 10-unit cube at a random place in the
  1000-unit cube), as cells or segments are: an object lies in 1-8 chunks;
* ``scattered``: object ids ``arange(n) // 100`` over uniform random points (the issue's
  "100 points per object" write): an object's points lie in ~100 different chunks.

Chunks of 125 units (512 over the cube; ~20,000 points per chunk at 10^7), bins a quarter of a
chunk, one float32 attribute. Every read is checked against brute force (``np.isin`` on the
input, compared as sorted multisets of rows). The load average (1 min, /proc/loadavg) is
printed beside every figure: the machine is shared.

Run: ``PYTHONPATH=. python -m benchmarks.point_objects --sizes 1e6,1e7 --dir /tmp/x``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

import numpy as np

import zarr_vectors as zv

CHUNK = 125.0
PER_OBJECT = 100
WANTED = 100

P = ParamSpec("P")
T = TypeVar("T")


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def make(n: int, layout: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, one attribute and object ids of ``n`` points (see the module docstring)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64) // PER_OBJECT
    if layout == "compact":
        centres = rng.random((n // PER_OBJECT + 1, 3), dtype=np.float32) * np.float32(990)
        positions = centres[ids] + rng.random((n, 3), dtype=np.float32) * np.float32(10)
    else:
        positions = rng.random((n, 3), dtype=np.float32) * np.float32(1000)
    return positions.astype(np.float32), rng.random(n, dtype=np.float32), ids


def _timed(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> tuple[float, T]:
    """Seconds ``call(*args, **kwargs)`` took, and what it returned."""
    start = time.perf_counter()
    out = call(*args, **kwargs)
    return time.perf_counter() - start, out


def _read_fresh(path: Path, wanted: np.ndarray) -> zv.QueryResult:
    """Objects ``wanted`` read through a store opened afresh (no cached index)."""
    return zv.open(path).read_objects(wanted)


def _rows(positions: np.ndarray, values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    table = np.concatenate(
        [positions.view(np.int32), values.view(np.int32)[:, None], ids[:, None].astype(np.int32)],
        axis=1,
    )
    return table[np.lexsort(table.T[::-1])]


def _ok(found: zv.QueryResult, data: tuple[np.ndarray, ...], wanted: np.ndarray) -> bool:
    positions, values, ids = data
    keep = np.isin(ids, wanted)
    got = _rows(found.positions, found.attributes["v"], np.asarray(found.vertex_object_ids))
    return bool(np.array_equal(got, _rows(positions[keep], values[keep], ids[keep])))


def bench_writes(n: int, layout: str, directory: Path, repeat: int) -> None:
    """Write with and without ids, alternating, ``repeat`` times each."""
    positions, values, ids = make(n, layout)
    times: dict[str, list[float]] = {"no ids": [], "ids": [], "ids, no index": []}
    options = {
        "no ids": (None, None),
        "ids": (ids, None),
        "ids, no index": (ids, zv.WriteOptions(object_chunk_index=False)),
    }
    for _ in range(repeat):
        for label, (given, option) in options.items():
            path = directory / f"w-{layout}-{n}"
            shutil.rmtree(path, ignore_errors=True)
            t, _ = _timed(
                zv.write_points,
                path,
                positions,
                attributes={"v": values},
                object_ids=given,
                chunk_shape=CHUNK,
                options=option,
                progress=False,
            )
            times[label].append(t)
            print(f"write {layout} {n:.0e} {label}: {t:.2f} s ({_load()})", flush=True)
    best = {k: min(v) for k, v in times.items()}
    print(
        f"write {layout} {n:.0e}: best no ids {best['no ids']:.2f} s, ids {best['ids']:.2f} s "
        f"({best['ids'] / best['no ids']:.2f}x), ids without index {best['ids, no index']:.2f} s "
        f"({_load()})",
        flush=True,
    )


def bench_reads(n: int, layout: str, directory: Path, repeat: int) -> None:
    """100 objects by id, warm and cold, beside read() + filter."""
    data = make(n, layout)
    positions, values, ids = data
    path = directory / f"r-{layout}-{n}"
    if not path.exists():
        zv.write_points(
            path, positions, attributes={"v": values}, object_ids=ids, chunk_shape=CHUNK
        )
    rng = np.random.default_rng(1)
    sets = [rng.choice(n // PER_OBJECT, WANTED, replace=False) for _ in range(repeat)]
    cold, warm, ok = [], [], True
    for wanted in sets:
        t, found = _timed(_read_fresh, path, wanted)
        cold.append(t)
        ok &= _ok(found, data, wanted)
    store = zv.open(path)
    store.read_objects(sets[0])
    for wanted in sets:
        t, found = _timed(store.read_objects, wanted)
        warm.append(t)
        ok &= _ok(found, data, wanted)
    full, found = _timed(store.read)
    assert found.vertex_object_ids is not None
    keep = np.isin(found.vertex_object_ids, sets[0])
    print(
        f"by id {layout} {n:.0e} ({WANTED} objects): cold (fresh open) median "
        f"{statistics.median(cold) * 1e3:.1f} ms, warm median {statistics.median(warm) * 1e3:.1f}"
        f" ms (min {min(warm) * 1e3:.1f}); read() + filter {full:.2f} s "
        f"({int(keep.sum())} rows); ok={ok} ({_load()})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1e6,1e7")
    parser.add_argument("--layouts", default="compact,scattered")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--skip", default="", help="writes or reads")
    args = parser.parse_args()
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    warm = make(2000, "compact")
    zv.write_points(
        directory / "warm",
        warm[0],
        attributes={"v": warm[1]},
        object_ids=warm[2],
        chunk_shape=CHUNK,
        mode="w",
    )
    zv.open(directory / "warm").read_objects([1, 2])
    for n in (int(float(s)) for s in args.sizes.split(",")):
        for layout in args.layouts.split(","):
            if "writes" not in args.skip:
                bench_writes(n, layout, directory, args.repeat)
            if ("reads" not in args.skip and n >= 10**7) or args.skip == "writes":
                bench_reads(n, layout, directory, 2 * args.repeat + 1)


if __name__ == "__main__":
    main()
