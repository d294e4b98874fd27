"""The ``meshes`` source: cloud-volume reads the exported files and they match the store."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError, MissingDependencyError
from zarr_vectors.precomputed import PrecomputedFileNotFoundError, PrecomputedSource
from zarr_vectors.precomputed.meshes import (
    QUANTIZATION_BITS,
    MeshSource,
    _Lod,
    _multilod_files,
    mesh_sources,
)


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


def test_multiresolution_without_dracopy_says_which_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = MeshSource(_sheets(tmp_path / "sheets.zarr", levels=1))
    monkeypatch.setitem(sys.modules, "DracoPy", None)
    with pytest.raises(MissingDependencyError, match=r"zarr-vectors\[neuroglancer\]"):
        source.read("4.index")


def _read_manifest(manifest: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """Plain-numpy reading of a manifest with one fragment per LOD: the cell, the grid
    origin, the vertex offsets of each LOD and the fragment sizes."""
    cell = np.frombuffer(manifest, "<f4", count=3).astype(np.float64)
    origin = np.frombuffer(manifest, "<f4", count=3, offset=12).astype(np.float64)
    count = int(np.frombuffer(manifest, "<u4", count=1, offset=24)[0])
    offset = 28 + 4 * count  # past lod_scales
    shifts = np.frombuffer(manifest, "<f4", count=3 * count, offset=offset).reshape(count, 3)
    offset += 12 * count
    assert np.frombuffer(manifest, "<u4", count=count, offset=offset).tolist() == [1] * count
    offset += 4 * count
    sizes = []
    for _ in range(count):
        assert np.frombuffer(manifest, "<u4", count=3, offset=offset).tolist() == [0, 0, 0]
        sizes.append(int(np.frombuffer(manifest, "<u4", count=1, offset=offset + 12)[0]))
        offset += 16
    assert offset == len(manifest)
    return cell, origin, shifts, sizes


def _fragments(data: bytes, sizes: list[int]) -> list[bytes]:
    """The data file cut into its fragments."""
    ends = np.cumsum(sizes).tolist()
    assert ends[-1] == len(data)
    return [data[end - size : end] for size, end in zip(sizes, ends, strict=True)]


def _decoded_lods(manifest: bytes, data: bytes) -> list[np.ndarray]:
    """Every LOD's positions back in stored model units by the format's formula."""
    draco = pytest.importorskip("DracoPy")
    cell, origin, shifts, sizes = _read_manifest(manifest)
    lods = []
    for level, fragment in enumerate(_fragments(data, sizes)):
        steps = np.asarray(draco.decode(fragment).points, dtype=np.float64)
        fraction = steps / (2**QUANTIZATION_BITS - 1)  # fragment position 0
        lods.append(origin + shifts[level] + cell * 2**level * fraction)
    return lods


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), count=st.integers(1, 3), span=st.floats(1e-3, 1e5))
def test_multiresolution_files_decode_to_the_levels_within_half_a_step(
    seed: int, count: int, span: float
) -> None:
    rng = np.random.default_rng(seed)
    lods = []
    for level in range(count):
        n = int(rng.integers(3, 30))
        positions = (rng.uniform(-1, 1, (n, 3)) * span).astype(np.float32)
        faces = rng.integers(0, n, (max(n - 2, 1), 3))
        lods.append(_Lod(positions, faces, float(2**level)))
    manifest, data = _multilod_files(lods)
    everything = np.concatenate([lod.positions for lod in lods]).astype(np.float64)
    extent = np.ptp(everything, axis=0)
    for level, decoded in enumerate(_decoded_lods(manifest, data)):
        step = np.maximum(extent, 1.0) * 2**level / (2**QUANTIZATION_BITS - 1)
        error = np.abs(decoded - lods[level].positions)
        assert np.all(error <= 0.51 * step + 1e-6 * np.abs(everything).max())


def _neuroglancer_client() -> Path:
    """The folder of the Neuroglancer client bundled in the ``neuroglancer`` package."""
    spec = importlib.util.find_spec("neuroglancer")
    if spec is None or spec.origin is None:
        pytest.skip("the neuroglancer package is not installed: pip install 'zarr-vectors[dev]'")
    client = Path(spec.origin).parent / "static" / "client"
    if not list(client.glob("*.wasm")):
        pytest.skip(f"no WebAssembly modules in {client}: a neuroglancer package without client")
    return client


def test_neuroglancers_own_draco_decoder_reads_every_fragment(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: Neuroglancer's Draco decoder (WebAssembly) runs in it")
    client = _neuroglancer_client()
    draco = pytest.importorskip("DracoPy")
    source = MeshSource(_sheets(tmp_path / "sheets.zarr", levels=2))
    arguments, expected = [], []
    for object_id in (4, 21):
        sizes = _read_manifest(source.read(f"{object_id}.index"))[3]
        for level, fragment in enumerate(_fragments(source.read(str(object_id)), sizes)):
            path = tmp_path / f"{object_id}-{level}.drc"
            path.write_bytes(fragment)
            arguments += [str(path), "1" if level else "0"]  # LODs above 0 are partitioned
            expected.append((level, draco.decode(fragment)))
    decoder = Path(__file__).parent / "ng_draco_decode.mjs"
    command = [node, str(decoder), str(client), str(QUANTIZATION_BITS), *arguments]
    lines = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    for line, (level, mesh) in zip(lines.stdout.splitlines(), expected, strict=True):
        decoded = json.loads(line)
        assert decoded["code"] == 0
        np.testing.assert_array_equal(np.reshape(decoded["positions"], (-1, 3)), mesh.points)
        np.testing.assert_array_equal(np.reshape(decoded["indices"], (-1, 3)), mesh.faces)
        corners = 3 * len(mesh.faces)  # every triangle of a coarse LOD in its first octant
        assert decoded["offsets"] == ([0] + [corners] * 8 if level else [0, corners])
