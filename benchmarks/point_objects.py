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

``--object-order on`` (or ``both``) adds the object-ordered copy (spec §9.15,
``WriteOptions(object_order=True)``) to the stores read by id and a write with it to the
write rows; ``--order-rows 64,128,256`` writes one store per row block size ``R`` of the copy
(the library default otherwise). Reads print wall and CPU (``time.process_time``) medians
and the store's bytes.
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
from zarr_vectors.geometry import object_order as order_module

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


def bench_writes(n: int, layout: str, directory: Path, repeat: int, ordered: bool) -> None:
    """Write with and without ids (and with the object-ordered copy when ``ordered``),
    alternating, ``repeat`` times each; the bytes of each store."""
    positions, values, ids = make(n, layout)
    options = {
        "no ids": (None, None),
        "ids": (ids, None),
        "ids, no index": (ids, zv.WriteOptions(object_chunk_index=False)),
    }
    if ordered:
        options["ids + copy"] = (ids, zv.WriteOptions(object_order=True))
    times: dict[str, list[float]] = {label: [] for label in options}
    cpus: dict[str, list[float]] = {label: [] for label in options}
    for _ in range(repeat):
        for label, (given, option) in options.items():
            path = directory / f"w-{layout}-{n}"
            shutil.rmtree(path, ignore_errors=True)
            t, cpu, _ = _timed_cpu(
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
            cpus[label].append(cpu)
            print(
                f"write {layout} {n:.0e} {label}: {t:.2f} s (CPU {cpu:.2f} s), "
                f"{_bytes(path) / 1e6:.1f} MB "
                f"({_load()})",
                flush=True,
            )
    best = {k: min(v) for k, v in times.items()}
    print(
        f"write {layout} {n:.0e}: best no ids {best['no ids']:.2f} s, ids {best['ids']:.2f} s "
        f"({best['ids'] / best['no ids']:.2f}x), ids without index {best['ids, no index']:.2f} s "
        + (f"ids + copy {best['ids + copy']:.2f} s " if ordered else "")
        + f"({_load()})",
        flush=True,
    )
    least = {k: min(v) for k, v in cpus.items()}
    print(
        f"write {layout} {n:.0e}: best CPU no ids {least['no ids']:.2f} s, ids "
        f"{least['ids']:.2f} s ({least['ids'] / least['no ids']:.2f}x)"
        + (f", ids + copy {least['ids + copy']:.2f} s" if ordered else ""),
        flush=True,
    )


def _bytes(path: Path) -> int:
    """Bytes of the files of the store at ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _write_read_store(path: Path, data: tuple[np.ndarray, ...], rows: int | None) -> None:
    """The store read by id: without the copy (``rows`` None), else with a copy of row
    blocks of ``rows`` rows (the library's default R set for this one write)."""
    positions, values, ids = data
    default = order_module.ORDER_ROWS_PER_BLOCK
    order_module.ORDER_ROWS_PER_BLOCK = rows or default  # type: ignore[misc]
    try:
        zv.write_points(
            path,
            positions,
            attributes={"v": values},
            object_ids=ids,
            chunk_shape=CHUNK,
            options=zv.WriteOptions(object_order=rows is not None),
            progress=False,
        )
    finally:
        order_module.ORDER_ROWS_PER_BLOCK = default  # type: ignore[misc]


def _timed_cpu(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> tuple[float, float, T]:
    """Wall and CPU seconds (``time.process_time``, every thread) of one call, its value."""
    cpu = time.process_time()
    wall, out = _timed(call, *args, **kwargs)
    return wall, time.process_time() - cpu, out


def bench_reads(
    n: int, layout: str, directory: Path, repeat: int, copies: list[int | None]
) -> None:
    """100 objects by id, warm and cold, beside read() + filter, from one store per entry of
    ``copies`` (None: no object-ordered copy; else the copy's R), the stores read in turn."""
    data = make(n, layout)
    paths = {}
    for rows in copies:
        path = (
            directory / f"r-{layout}-{n}" if rows is None else directory / f"r-{layout}-{n}-o{rows}"
        )
        if not path.exists():
            _write_read_store(path, data, rows)
        paths[rows] = path
    rng = np.random.default_rng(1)
    sets = [rng.choice(n // PER_OBJECT, WANTED, replace=False) for _ in range(repeat)]
    figures: dict[int | None, dict[str, list[float]]] = {
        rows: {"cold": [], "cold cpu": [], "warm": [], "warm cpu": []} for rows in copies
    }
    ok = True
    stores = {rows: zv.open(path) for rows, path in paths.items()}
    for store in stores.values():
        store.read_objects(sets[0])
    for wanted in sets:  # the stores in turn, set by set: the same load for each
        for rows, path in paths.items():
            wall, cpu, found = _timed_cpu(_read_fresh, path, wanted)
            figures[rows]["cold"].append(wall)
            figures[rows]["cold cpu"].append(cpu)
            ok &= _ok(found, data, wanted)
            wall, cpu, found = _timed_cpu(stores[rows].read_objects, wanted)
            figures[rows]["warm"].append(wall)
            figures[rows]["warm cpu"].append(cpu)
            ok &= _ok(found, data, wanted)
    for rows, got in figures.items():
        med = {k: statistics.median(v) * 1e3 for k, v in got.items()}
        name = "no copy" if rows is None else f"copy R={rows}"
        print(
            f"by id {layout} {n:.0e} {name} ({WANTED} objects): cold median {med['cold']:.1f} ms "
            f"(cpu {med['cold cpu']:.1f}), warm median {med['warm']:.1f} ms (min "
            f"{min(got['warm']) * 1e3:.1f}; cpu {med['warm cpu']:.1f}); "
            f"{_bytes(paths[rows]) / 1e6:.1f} MB; ok={ok} ({_load()})",
            flush=True,
        )
    if n >= 10**7:
        return
    full, found = _timed(stores[copies[0]].read)
    print(f"read() {layout} {n:.0e}: {full:.2f} s ({_load()})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1e6,1e7")
    parser.add_argument("--layouts", default="compact,scattered")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--skip", default="", help="writes or reads")
    parser.add_argument("--object-order", default="off", choices=("off", "on", "both"))
    parser.add_argument("--order-rows", default="", help="R of the copy, e.g. 64,128,256")
    args = parser.parse_args()
    copies: list[int | None] = [] if args.object_order == "on" else [None]
    if args.object_order != "off":
        sizes = args.order_rows.split(",") if args.order_rows else [""]
        copies += [int(r) if r else order_module.ORDER_ROWS_PER_BLOCK for r in sizes]
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
                bench_writes(n, layout, directory, args.repeat, args.object_order != "off")
            if ("reads" not in args.skip and n >= 10**7) or args.skip == "writes":
                bench_reads(n, layout, directory, 2 * args.repeat + 1, copies)


if __name__ == "__main__":
    main()
