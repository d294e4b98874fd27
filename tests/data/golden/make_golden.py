"""Regenerate the golden stores of format 1.0 (run only when the format version changes).

The golden stores are committed and read by ``tests/test_golden.py`` forever: if a change of
the library alters a single byte of what it writes for these inputs, that test fails, so the
format cannot drift silently. Usage: ``python tests/data/golden/make_golden.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv

HERE = Path(__file__).parent / "1.0"


def inputs() -> dict[str, dict[str, Any]]:
    """The inputs of every golden store, by store name (deterministic)."""
    rng = np.random.default_rng(20261121)
    xyz = np.round(rng.uniform(0, 40, (300, 3)), 2).astype(np.float32)
    xyz[:10] = np.array(
        [
            [0, 0, 0],
            [10, 10, 10],
            [20, 0, 5],
            [9.99, 10, 30],
            [30, 30, 30],
            [39.5, 0.5, 20],
            [10, 20, 30],
            [5, 5, 5],
            [15, 25, 35],
            [0, 40, 0],
        ]
    )
    xy = np.round(rng.normal(0, 12, (120, 2)), 3)
    return {
        "points_3d_attributes": {
            "positions": xyz,
            "chunk_shape": 10.0,
            "bin_shape": 5.0,
            "attributes": {
                "intensity": np.round(rng.random(300), 3).astype(np.float32),
                "rgb": rng.integers(0, 256, (300, 3)).astype(np.uint8),
            },
        },
        "points_2d_negative_ids": {
            "positions": xy,
            "chunk_shape": [8.0, 4.0],
            "bin_shape": [2.0, 4.0],
            "object_ids": rng.integers(0, 2**40, 120).astype(np.uint64),
        },
    }


def main() -> None:
    """Write every golden store under ``1.0/``, replacing what is there."""
    for name, kwargs in inputs().items():
        path = HERE / f"{name}.zarrvectors"
        shutil.rmtree(path, ignore_errors=True)
        write(path, kwargs)
        arrays = {"positions": kwargs["positions"]}
        arrays |= {f"attr_{k}": v for k, v in kwargs.get("attributes", {}).items()}
        if "object_ids" in kwargs:
            arrays["object_ids"] = kwargs["object_ids"]
        np.savez(HERE / f"{name}.expected.npz", **arrays)
        print(f"wrote {path}")


def write(path: Path, kwargs: dict[str, Any]) -> None:
    """Write one golden store exactly as the committed one was written."""
    args = dict(kwargs)
    positions = args.pop("positions")
    zv.write_points(path, positions, **args, options=zv.WriteOptions(rows_per_block=64))
    (path / "metadata.json").unlink()  # carries a timestamp; optional by spec §2.5


if __name__ == "__main__":
    main()
