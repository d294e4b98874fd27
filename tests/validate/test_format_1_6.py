"""Format 1.6 (spec §9.0.4): graphs and skeletons write ``links/0`` and vertex attributes at
Blosc zstd level 3 with bit shuffle, ``object_index`` and ``cross_chunk_links`` at zstd level
3 with byte shuffle; other kinds keep the settings of 1.5, and an append to a 1.5 store keeps
its version and codecs (spec §3.3).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from zarr_vectors.format.codecs import (
    GLOBAL_LZ4_SHUFFLE,
    ZSTD3_BITSHUFFLE,
    ZSTD3_SHUFFLE,
    ZSTD_BITSHUFFLE,
)
from zarr_vectors.store.io import StoreIO

GOLDEN_1_5 = Path(__file__).parents[1] / "data" / "golden" / "1.5"
GRAPH_ARRAYS = (
    "0/links/0",
    "0/attributes/radius",
    "0/object_index/data",
    "0/object_index/offsets",
    "0/cross_chunk_links",
)


def _blosc(doc: dict[str, Any]) -> dict[str, Any]:
    """``cname``, ``clevel`` and ``shuffle`` of an array's Blosc codec (inner or not)."""
    codecs = doc["codecs"]
    if codecs[0]["name"] == "sharding_indexed":
        codecs = codecs[0]["configuration"]["codecs"]
    conf = next(c["configuration"] for c in codecs if c["name"] == "blosc")
    return {k: conf[k] for k in ("cname", "clevel", "shuffle")}


def _settings(store: MemoryStore | Path, path: str) -> dict[str, Any]:
    if isinstance(store, Path):
        return _blosc(json.loads((store / path / "zarr.json").read_bytes()))
    return _blosc(json.loads(StoreIO(store).get(f"{path}/zarr.json") or b"{}"))


def _skeletons(store: Any) -> None:
    rng = np.random.default_rng(5)
    positions = rng.uniform(0.0, 20.0, (60, 3)).astype(np.float32)
    parents = np.concatenate([[-1], np.arange(29), [-1], np.arange(30, 59)])
    zv.write_skeletons(
        store,
        positions,
        parents=parents,
        vertex_objects=np.repeat([0, 1], 30),
        radius=rng.uniform(0.5, 2.0, 60).astype(np.float32),
        chunk_shape=10.0,
        progress=False,
    )


def test_skeletons_use_the_codecs_of_1_6_and_validate() -> None:
    store = MemoryStore()
    _skeletons(store)
    assert zv.open(store).metadata["zarr_vectors_version"] == "1.6"
    assert _settings(store, "0/links/0") == ZSTD3_BITSHUFFLE
    assert _settings(store, "0/attributes/radius") == ZSTD3_BITSHUFFLE
    assert _settings(store, "0/vertices") == ZSTD_BITSHUFFLE  # level 3: twice the encode time
    for path in ("0/object_index/data", "0/object_index/offsets", "0/cross_chunk_links"):
        assert _settings(store, path) == ZSTD3_SHUFFLE, path
    report = zv.validate(store, level=3)
    assert report.ok
    assert not report.warnings, report.warnings


def test_streamlines_keep_the_codecs_of_1_5() -> None:
    store = MemoryStore()
    walks = np.cumsum(np.random.default_rng(2).normal(0, 1, (4, 30, 3)), axis=1) + 10.0
    zv.write_polylines(store, list(walks.astype(np.float32)), chunk_shape=6.0, progress=False)
    assert zv.open(store).metadata["zarr_vectors_version"] == "1.6"
    assert _settings(store, "0/links/0") == ZSTD_BITSHUFFLE
    assert _settings(store, "0/cross_chunk_links") == GLOBAL_LZ4_SHUFFLE
    assert _settings(store, "0/object_index/data")["clevel"] == 1


def test_an_append_to_a_1_5_skeleton_store_keeps_its_version_and_codecs(tmp_path: Path) -> None:
    path = Path(shutil.copytree(GOLDEN_1_5 / "skeletons_3d_swc.zarrvectors", tmp_path / "s"))
    before = {a: _settings(path, a) for a in GRAPH_ARRAYS}
    assert before["0/links/0"]["clevel"] == 1
    positions = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [12.0, 12.0, 12.0]], np.float32)
    zv.append_skeletons(
        path,
        positions,
        parents=np.array([-1, 0, 1]),
        vertex_objects=np.zeros(3, np.int64),
        object_ids=[99],
        radius=np.ones(3, np.float32),
        swc_type=np.ones(3, np.int8),
        attributes={"swc_id": np.arange(1, 4, dtype=np.int32)},
        object_attributes={"soma": np.zeros((1, 3))},
        progress=False,
    )
    store = zv.open(path)
    assert store.metadata["zarr_vectors_version"] == "1.5"
    assert {a: _settings(path, a) for a in GRAPH_ARRAYS} == before
    np.testing.assert_array_equal(store.read_objects([99]).positions, positions)
    assert zv.validate(path, level=3).ok


def test_level_3_codecs_declared_1_5_are_a_warning() -> None:
    """zstd level 3 is none of the settings of 1.5 (``L2.inner_codecs_default``, a warning:
    every reader decodes it)."""
    store = MemoryStore()
    _skeletons(store)
    s.edit_root(store, lambda a: a.__setitem__("zarr_vectors_version", "1.5"))
    report = zv.validate(store, level=2)
    assert report.ok
    warned = {p.path.split("/zarr.json")[0] for p in report.warnings}
    assert {p.check_id for p in report.warnings} == {"L2.inner_codecs_default"}
    assert warned == {"0/links/0", "0/attributes/radius"}


def test_levels_built_on_a_1_5_skeleton_store_keep_its_version_and_codecs(
    tmp_path: Path,
) -> None:
    path = Path(shutil.copytree(GOLDEN_1_5 / "skeletons_3d_swc.zarrvectors", tmp_path / "s"))
    assert zv.build_levels(path, zv.Levels(count=1)) == 1
    assert zv.open(path).metadata["zarr_vectors_version"] == "1.5"
    for array in GRAPH_ARRAYS:
        coarse = array.replace("0/", "1/", 1)
        assert _settings(path, coarse) == _settings(path, array), coarse
