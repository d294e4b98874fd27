"""Write a point cloud larger than a batch from a stream of tiles, then append a new round.

Run: python examples/points_streaming_append.py [OUTPUT_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import zarr_vectors as zv


def tiles(rng: np.random.Generator, count: int) -> Iterator[dict[str, object]]:
    """Nuclei of ``count`` imaging tiles, one batch each (a loader would read files)."""
    for t in range(count):
        n = int(rng.integers(20_000, 40_000))
        corner = np.array([t % 4, t // 4, 0]) * 250.0
        xyz = (corner + rng.uniform(0, 250, (n, 3))).astype(np.float32)
        yield {"positions": xyz, "attributes": {"volume": rng.gamma(4.0, 50.0, n)}}


def main(out_dir: Path) -> None:
    """Stream 8 tiles into ``nuclei.zarrvectors``, append 4 more, query and validate."""
    rng = np.random.default_rng(11)
    path = out_dir / "nuclei.zarrvectors"
    first = list(tiles(rng, 8))
    zv.write_points_stream(path, first, chunk_shape=125.0, mode="w", progress=False)
    later = list(tiles(rng, 12))[8:]
    for tile in later:  # a new imaging round, added without rewriting the other chunks
        zv.append_points(path, tile["positions"], attributes=tile["attributes"], progress=False)

    store = zv.open(path)
    every = np.concatenate([t["positions"] for t in first + later])
    print(store)
    assert store.vertex_count == len(every)
    box = ([200.0, 200.0, 0.0], [300.0, 600.0, 100.0])
    hits = store.query(box)
    expected = int(np.all((every >= box[0]) & (every < box[1]), axis=1).sum())
    print(f"{len(hits)} nuclei in the box (brute force: {expected})")
    assert len(hits) == expected
    report = zv.validate(path, level=3)
    print(report.summary())
    assert report.ok


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
