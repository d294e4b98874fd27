"""Fixtures of the precomputed tests: cloud-volume (imported once) and a file export."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

import pytest

from zarr_vectors.precomputed import PrecomputedSource

VOLUME_INFO = {
    "type": "segmentation",
    "data_type": "uint64",
    "num_channels": 1,
    "scales": [
        {
            "key": "1_1_1",
            "resolution": [1, 1, 1],
            "size": [1, 1, 1],
            "voxel_offset": [0, 0, 0],
            "chunk_sizes": [[1, 1, 1]],
            "encoding": "raw",
        }
    ],
    "skeletons": "skeletons",
    "mesh": "meshes",
}
"""A one-voxel segmentation ``info``: cloud-volume opens a skeleton or mesh source only
through a volume whose ``info`` names it."""


def export(sources: Iterable[PrecomputedSource], root: Path) -> Path:
    """Every file of ``sources`` under ``root/<name>/``, plus the volume ``info`` at ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "info").write_text(json.dumps(VOLUME_INFO))
    for source in sources:
        for path in source.paths():
            target = root / source.name / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read(path))
    return root


@pytest.fixture(scope="module")
def cloudvolume() -> ModuleType:
    """The cloud-volume package (2-3 s to import), or the test is skipped with the reason."""
    return pytest.importorskip(
        "cloudvolume", reason="cloud-volume is not installed: pip install 'zarr-vectors[dev]'"
    )


@pytest.fixture
def open_exported(
    cloudvolume: ModuleType, tmp_path: Path
) -> Callable[[Iterable[PrecomputedSource]], object]:
    """Export sources to a temporary folder and open it with ``cloudvolume.CloudVolume``."""

    def opened(sources: Iterable[PrecomputedSource]) -> object:
        root = export(sources, tmp_path / "out.precomputed")
        return cloudvolume.CloudVolume(f"precomputed://file://{root}", progress=False)

    return opened
