"""Fixtures shared by the converter tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import zarr_vectors as zv

LAYOUT_V = Path(__file__).resolve().parent.parent / "data" / "layout_v"
LAYOUT_V_CASES = {
    "points": False,
    "points_objects": True,  # object attributes and groups of a point cloud
    "polylines": False,
    "streamlines": False,  # 0.9.2's coarse level 1, imported as it is
    "graph": False,
    "skeleton": True,  # coarse level 1; 0.9.2 keeps edge weights of stored edges only
    "mesh": False,
    "points_pyramid": True,  # 0.9.2's level 2: its coarse bin is larger than the chunk
    "polylines_pyramid": False,  # two coarse levels, random object sparsity at level 2
    "graph_pyramid": False,  # coarse level 1
    "mesh_pyramid": False,  # coarse level 1
}
"""Golden layout-V store (``tests/data/layout_v``) -> whether its import needs ``lossy``."""


@pytest.fixture(scope="session")
def imported_v_stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every golden layout-V store imported once (read-only for the tests)."""
    folder = tmp_path_factory.mktemp("from-v")
    out = {}
    for name, lossy in LAYOUT_V_CASES.items():
        out[name] = folder / f"{name}.zarr"
        zv.convert(LAYOUT_V / f"{name}.zv", out[name], lossy=lossy)
    return out
