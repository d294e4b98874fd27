"""Check a store you received before trusting it: validate it, then find a damaged chunk.

A collaborator sends a store. ``zv.validate`` checks it level by level (1 structure, 2
metadata, 3 chunk data, 4 geometry, 5 pyramid) and names every problem with a stable check
id; ``sample=`` reads only some chunks when the store is large. Here the store is first
checked as received, then one of its chunk files is damaged on purpose (as a bad copy
would) and the validator points at it, while a query refuses to return wrong data.

Run: python examples/validate_received_store.py [OUTPUT_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import zarr_vectors as zv


def receive(out_dir: Path) -> Path:
    """Stand-in for the store a collaborator sends: nuclei with a volume attribute."""
    rng = np.random.default_rng(3)
    xyz = rng.uniform(0, 400, (50_000, 3)).astype(np.float32)
    volume = rng.lognormal(5, 0.4, len(xyz)).astype(np.float32)
    path = out_dir / "received.zarrvectors"
    zv.write_points(path, xyz, chunk_shape=100.0, attributes={"volume": volume}, mode="w")
    return path


def damage_one_chunk(path: Path) -> Path:
    """Flip one byte in the middle of one chunk file of the vertex array."""
    shard = sorted((path / "0" / "vertices" / "c").rglob("*"))
    victim = next(p for p in shard if p.is_file())
    raw = bytearray(victim.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    victim.write_bytes(bytes(raw))
    return victim


def main(out_dir: Path) -> None:
    """Validate a received store, damage it, and validate it again."""
    path = receive(out_dir)
    quick = zv.validate(path, level=3, sample=8)  # 8 evenly spaced chunks per level
    print(quick.summary())
    full = zv.validate(path, level=4)  # every chunk, and the geometry claims
    print(full.summary())
    assert quick.ok
    assert full.ok

    victim = damage_one_chunk(path)
    print(f"\ndamaged {victim.relative_to(path)}")
    after = zv.validate(path, level=3)
    print(after.summary())
    assert not after.ok
    for problem in after.errors[:3]:
        print(f"  {problem.check_id}: {problem.path}")

    try:
        zv.open(path).read()
    except zv.FormatError as exc:  # a damaged chunk is an error, never a wrong answer
        print(f"reading the damaged store fails cleanly: {type(exc).__name__}")
    else:
        raise AssertionError("a damaged chunk was read without an error")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
