"""Quick start: the code of the README's "Use" section, verbatim between the markers.

``tests/test_examples.py`` checks that the README shows exactly this code.

Run: python examples/quickstart.py [OUTPUT_DIR]
"""

import os
import sys
import tempfile

os.chdir(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())

# README quick start: begin
import numpy as np

import zarr_vectors as zv

xyz = np.random.default_rng(0).uniform(0, 1000, (1_000_000, 3)).astype(np.float32)
intensity = np.random.default_rng(1).random(1_000_000, dtype=np.float32)

zv.write_points(
    "spots.zarrvectors", xyz, chunk_shape=200.0, bin_shape=50.0, attributes={"intensity": intensity}
)

store = zv.open("spots.zarrvectors")
hits = store.query(([100, 100, 100], [300, 300, 300]))  # half-open box [lo, hi)
hits.positions, hits.attributes["intensity"]

report = zv.validate("spots.zarrvectors", level=2)
print(report.ok, report.problems)
# README quick start: end
