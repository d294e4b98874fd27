"""The Neuroglancer static export of a point cloud with object ids (issue 38): time and files.

``zv.convert(store, "x.precomputed")`` of ``n`` float32 points in ``k`` spatially compact
objects (ids by position: slabs along y, runs along x), with two ``"sample"`` levels, chunks
of 100 units over a 1000-unit cube. Above 4,096 objects the relationship index
(``by_object``) is sharded; before, it was one file per object, each computed from its own
read by id. Run the script with ``PYTHONPATH`` at another checkout to time that one. The load
average (1 min) is printed beside every figure: the machine is shared.

Run: ``PYTHONPATH=. python benchmarks/precomputed_export.py --cases 1e5:5000,1e6:20000
--dir /tmp/x``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

import numpy as np

import zarr_vectors as zv


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def write_store(path: Path, n: int, objects: int, seed: int = 0) -> None:
    """``n`` uniform points; object ids ``0 … objects - 1`` by position (compact objects)."""
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    order = np.argsort(xyz[:, 0] + 1000 * np.floor(xyz[:, 1] / 100))
    ids = np.empty(n, dtype=np.int64)
    ids[order] = np.arange(n) * objects // n
    zv.write_points(
        path, xyz, chunk_shape=100.0, object_ids=ids, levels=zv.Levels(count=2, per_bin=4),
        progress=False,
    )  # fmt: skip


def export_once(store: Path, out: Path) -> tuple[float, int, int]:
    """Seconds of one export, its files, and its files under ``annotations/by_object``."""
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    root = zv.convert(store, out)
    seconds = time.perf_counter() - start
    assert isinstance(root, Path)
    files = sum(1 for p in root.rglob("*") if p.is_file())
    by_object = sum(1 for _ in (root / "annotations" / "by_object").iterdir())
    return seconds, files, by_object


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", default="1e5:5000", help="n:objects,...")
    parser.add_argument("--dir", required=True)
    args = parser.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    print(f"zarr_vectors from {Path(zv.__file__).parent}")
    for case in args.cases.split(","):
        n_text, k_text = case.split(":")
        n, k = int(float(n_text)), int(float(k_text))
        store = folder / f"points-{n}-{k}.zarr"
        shutil.rmtree(store, ignore_errors=True)
        write_store(store, n, k)
        seconds, files, by_object = export_once(store, folder / f"points-{n}-{k}.precomputed")
        print(
            f"n={n:,} objects={k:,}: export {seconds:.2f} s, {files:,} files, "
            f"{by_object:,} by_object files ({_load()})",
            flush=True,
        )
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(folder / f"points-{n}-{k}.precomputed", ignore_errors=True)


if __name__ == "__main__":
    main()
