"""Files, write time and 1%-box query time of a point store per shard size (spec §9.0.1).

Usage: ``python -m benchmarks.sharding [--points N] [--dir DIR]``. Writes the same uniform
cloud with ``shard_chunks`` = 1, 2 and 4 on local disk and prints one line per store.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import zarr_vectors as zv


def _files(path: Path) -> int:
    return sum(1 for p in path.rglob("*") if p.is_file())


def main() -> None:
    """Write and query the store for each shard size and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=float, default=1e6)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    n = int(args.points)
    rng = np.random.default_rng(0)
    xyz = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    box = (np.array([400.0, 400.0, 400.0]), np.array([615.4, 615.4, 615.4]))  # 1% of the volume
    root = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        zv.write_points(root / "warm.zarrvectors", xyz[:1000], chunk_shape=62.5)  # compile
        for shard in (1, 2, 4):
            path = root / f"s{shard}.zarrvectors"
            options = zv.WriteOptions(shard_chunks=shard)
            start = time.perf_counter()
            zv.write_points(path, xyz, chunk_shape=62.5, options=options)
            written = time.perf_counter() - start
            store = zv.open(path)
            store.query(box)  # warm the caches of the first read
            start = time.perf_counter()
            for _ in range(5):
                hits = zv.open(path).query(box)
            queried = (time.perf_counter() - start) / 5
            print(
                f"S={shard}: {_files(path)} files, write {written:.2f} s, "
                f"open + 1% box {1000 * queried:.1f} ms ({len(hits)} points)"
            )
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
