"""Streamlines from a TRK file, with bundle groups: import, query a box, read a bundle, export.

A tracker writes a TRK file whose per-streamline ``bundle`` column labels each streamline
(here the file is made with nibabel: three synthetic bundles). Importing it with
``group_by="bundle"`` makes one store group per label, so a bundle is read back without
scanning the rest; a box query returns the whole streamlines passing through a region; and
the store goes back out to TRX (groups kept) and TRK (header kept).

Needs the ``tracts`` extra: ``pip install 'zarr-vectors[tracts]'``.

Run: python examples/streamlines_from_trk.py [OUTPUT_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nibabel as nib
import numpy as np

import zarr_vectors as zv


def synthetic_trk(path: Path, per_bundle: int = 300) -> None:
    """Three bundles of noisy curved streamlines in a 100 mm box, labelled 0, 1, 2."""
    rng = np.random.default_rng(11)
    lines, labels = [], []
    t = np.linspace(0.0, 1.0, 60)[:, None]
    for bundle, (start, end) in enumerate(
        [((10, 10, 10), (90, 90, 30)), ((10, 90, 50), (90, 10, 50)), ((50, 50, 5), (50, 50, 95))]
    ):
        for _ in range(per_bundle):
            a = np.asarray(start) + rng.normal(0, 3, 3)
            b = np.asarray(end) + rng.normal(0, 3, 3)
            bend = np.sin(np.pi * t) * rng.normal(0, 6, 3)
            lines.append((a + (b - a) * t + bend).astype(np.float32))
            labels.append(bundle)
    tractogram = nib.streamlines.Tractogram(
        lines,
        data_per_streamline={"bundle": np.asarray(labels, np.float32)[:, None]},
        affine_to_rasmm=np.eye(4),
    )
    header = {"dimensions": (100, 100, 100), "voxel_sizes": (1.0, 1.0, 1.0)}
    nib.streamlines.save(tractogram, str(path), header=header)


def main(out_dir: Path) -> None:
    """Import a TRK with bundle groups, query it, and export it."""
    trk = out_dir / "tracts.trk"
    synthetic_trk(trk)
    store = zv.convert(
        trk, out_dir / "tracts.zarrvectors", group_by="bundle", chunk_shape=25.0, overwrite=True
    )
    assert isinstance(store, zv.VectorStore)
    print(store)

    bundle = store.query(group="bundle_1")
    print(f"bundle_1: {len(bundle.object_ids)} streamlines, {len(bundle)} points")

    box = ([40, 40, 40], [60, 60, 60])
    hits = store.query(box)
    inside = store.query(box, clip=True)
    print(
        f"{len(hits.object_ids)} streamlines pass through {box}; "
        f"{len(inside)} of their points lie inside it"
    )

    trx = zv.convert(store, out_dir / "tracts.trx", overwrite=True)
    back = zv.convert(store, out_dir / "roundtrip.trk", overwrite=True)
    original = nib.streamlines.load(str(trk)).streamlines
    again = nib.streamlines.load(str(back)).streamlines
    assert len(original) == len(again)
    assert all(np.allclose(a, b, atol=1e-4) for a, b in zip(original, again, strict=True))
    print(f"exported {trx.name} (with groups) and {back.name} (same streamlines as the input)")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
