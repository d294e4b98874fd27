"""Fixtures of the precomputed tests: cloud-volume (imported once) reading a static export."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

import zarr_vectors as zv

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
"""A one-voxel segmentation ``info`` given to cloud-volume, which opens a skeleton or mesh
source only through a volume whose ``info`` names it (the export has no volume)."""


@pytest.fixture(scope="module")
def cloudvolume() -> ModuleType:
    """The cloud-volume package (2-3 s to import), or the test is skipped with the reason."""
    return pytest.importorskip(
        "cloudvolume", reason="cloud-volume is not installed: pip install 'zarr-vectors[dev]'"
    )


@pytest.fixture
def open_exported(cloudvolume: ModuleType, tmp_path: Path) -> Callable[[zv.VectorStore], object]:
    """Export a store with ``zv.convert(store, "out.precomputed")``; open it in cloud-volume."""

    def opened(store: zv.VectorStore) -> object:
        root = zv.convert(store, tmp_path / "out.precomputed")
        url = f"precomputed://file://{root}"
        return cloudvolume.CloudVolume(url, info=VOLUME_INFO, progress=False)

    return opened
