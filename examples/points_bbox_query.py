"""Write a point cloud with attributes, query a box, and validate the store.

Run: python examples/points_bbox_query.py [OUTPUT_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import zarr_vectors as zv


def main(out_dir: Path) -> None:
    """Write ``spots.zarrvectors`` into ``out_dir``, query it and validate it."""
    rng = np.random.default_rng(7)
    n = 200_000
    xyz = rng.uniform(0, 500, (n, 3)).astype(np.float32)  # micrometres
    gene = rng.integers(0, 50, n).astype(np.uint16)
    quality = rng.random(n).astype(np.float32)
    path = out_dir / "spots.zarrvectors"
    zv.write_points(
        path,
        xyz,
        chunk_shape=100.0,
        bin_shape=25.0,
        attributes={"gene": gene, "quality": quality},
        mode="w",
        options=zv.WriteOptions(axis_units="micrometer"),
    )

    store = zv.open(path)
    print(store)
    box = ([100.0, 100.0, 0.0], [200.0, 250.0, 500.0])
    hits = store.query(box)
    expected = np.all((xyz >= box[0]) & (xyz < box[1]), axis=1).sum()
    print(f"{len(hits)} spots in the box (brute force: {expected})")
    print(f"most frequent gene in the box: {np.bincount(hits.attributes['gene']).argmax()}")
    assert len(hits) == expected

    report = zv.validate(path, level=2)
    print(report.summary())
    assert report.ok


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
