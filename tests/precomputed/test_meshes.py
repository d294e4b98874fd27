"""The ``meshes`` source: cloud-volume reads the exported files and they match the store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.precomputed import PrecomputedFileNotFoundError, PrecomputedSource
from zarr_vectors.precomputed.meshes import QUANTIZATION_BITS, MeshSource, mesh_sources


def _sheet(n: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """An ``n`` x ``n`` height field of triangles: positions and faces."""
    rng = np.random.default_rng(seed)
    u, v = np.meshgrid(np.arange(n, dtype=np.float64), np.arange(n, dtype=np.float64))
    height = rng.uniform(0, 3, (n, n))
    positions = np.stack([u.ravel() * 1.5 + shift, v.ravel() * 1.25, height.ravel()], axis=1)
    corner = (np.arange(n - 1)[:, None] * n + np.arange(n - 1)[None, :]).ravel()
    faces = np.concatenate(
        [
            np.stack([corner, corner + 1, corner + n], axis=1),
            np.stack([corner + 1, corner + n + 1, corner + n], axis=1),
        ]
    )
    return positions.astype(np.float32), faces


def _sheets(path: Path, levels: int | None) -> VectorStore:
    """Two meshes (ids 4 and 21) in micrometres, with ``levels`` levels of detail."""
    first, first_faces = _sheet(12, 0.0, 1)
    second, second_faces = _sheet(9, 40.0, 2)
    zv.write_mesh(
        path,
        np.concatenate([first, second]),
        np.concatenate([first_faces, second_faces + len(first)]),
        vertex_objects=np.repeat([4, 21], [len(first), len(second)]),
        chunk_shape=8.0,
        units="micrometer",
        levels=levels,
        progress=False,
    )
    return zv.open(path)


def test_cloud_volume_reads_every_level_of_detail(
    tmp_path: Path, open_exported: Callable[[VectorStore], Any]
) -> None:
    store = _sheets(tmp_path / "sheets.zarr", levels=2)
    source = MeshSource(store)
    assert source.multiresolution
    assert len(store.levels) == 3
    volume = open_exported(store)
    for object_id in (4, 21):
        found = [store.read_objects(object_id, level=level) for level in range(3)]
        extent = np.ptp(np.concatenate([f.positions for f in found]), axis=0) * 1000.0
        for level, expected in enumerate(found):
            mesh = volume.mesh.get(object_id, lod=level)[object_id]
            nanometres = expected.positions * 1000.0
            step = extent * 2**level / (2**QUANTIZATION_BITS - 1)
            error = np.abs(mesh.vertices - nanometres)
            assert np.all(error <= 0.51 * step + 1e-6 * np.abs(nanometres)), (object_id, level)
            np.testing.assert_array_equal(mesh.faces, expected.faces)


def test_cloud_volume_reads_a_store_without_levels_exactly(
    tmp_path: Path, open_exported: Callable[[VectorStore], Any]
) -> None:
    store = _sheets(tmp_path / "sheets.zarr", levels=None)
    source = MeshSource(store)
    assert not source.multiresolution
    volume = open_exported(store)
    for object_id in (4, 21):
        expected = store.read_objects(object_id)
        mesh = volume.mesh.get(object_id, fuse=False)[object_id]  # as stored: no merging
        nanometres = expected.positions.astype(np.float64) * 1000.0
        np.testing.assert_array_equal(mesh.vertices, nanometres.astype(np.float32))
        np.testing.assert_array_equal(mesh.faces, expected.faces)


@pytest.mark.parametrize("levels", [None, 1])
def test_files_are_by_id_reads_and_unknown_paths_are_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, levels: int | None
) -> None:
    source = MeshSource(_sheets(tmp_path / "sheets.zarr", levels=levels))
    assert isinstance(source, PrecomputedSource)
    assert source.name == "meshes"
    paths = list(source.paths())
    assert paths[0] == "info"
    assert paths[1] == "segment_properties/info"
    assert len(paths) == 6
    assert json.loads(source.read("info"))["@type"].startswith("neuroglancer_")

    def refused(self: VectorStore, *args: Any, **options: Any) -> Any:
        raise AssertionError("a mesh file read the whole store")

    monkeypatch.setattr(VectorStore, "read", refused)
    monkeypatch.setattr(VectorStore, "query", refused)
    assert all(source.read(path) for path in paths[1:])
    for missing in ["7:0", "7.index", "4:1", "4.index:0", "04", "4:0:2", "", "info2"]:
        if missing in paths:
            continue
        with pytest.raises(PrecomputedFileNotFoundError, match=r"no (file|mesh)"):
            source.read(missing)


def test_other_kinds_have_no_meshes(tmp_path: Path) -> None:
    zv.write_polylines(tmp_path / "l.zarr", [np.array([[0, 0], [1, 1.0]])], chunk_shape=2.0)
    assert mesh_sources(zv.open(tmp_path / "l.zarr")) == []
    with pytest.raises(InvalidInputError, match="no meshes"):
        MeshSource(zv.open(tmp_path / "l.zarr"))
