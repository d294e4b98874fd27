"""The ``annotations`` source, decoded with a small decoder written from Neuroglancer's
documentation of ``neuroglancer_annotations_v1`` and compared with brute force over the
store's vertices."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from tests.precomputed.ng_decoder import SIZES, decode_by_id, decode_list
from zarr_vectors.precomputed import PrecomputedFileNotFoundError, PrecomputedSource, sources
from zarr_vectors.precomputed.annotations import PointAnnotations


def _expected_row(result: Any, i: int, info: dict[str, Any]) -> tuple[Any, ...]:
    """Brute force: vertex ``i`` as the decoder gives it (float32 positions, properties)."""
    values: list[Any] = [float(np.float32(v)) for v in np.asarray(result.positions)[i]]
    props = sorted(info["properties"], key=lambda p: -SIZES.get(p["type"], ("", 1))[1])
    for prop in props:
        value = np.asarray(result.attributes[prop["id"]])[i]
        values.append(float(np.float32(value)) if prop["type"] == "float32" else int(value))
    return tuple(values)


def _points_store(
    tmp_path: Path, n: int, levels: Any, seed: int = 0, chunk: float = 20.0
) -> zv.VectorStore:
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(-30, 70, (n, 3)).astype(np.float32)
    xyz[: n // 10] = xyz[0]  # repeated points: each must still appear once
    attrs = {
        "weight": rng.normal(size=n),
        "label": rng.integers(0, 200, n).astype(np.uint8),
        "big": rng.integers(0, 10, n).astype(np.int64),
        "depth": rng.integers(-300, 300, n).astype(np.int16),
    }
    path = tmp_path / f"points{seed}.zarr"
    zv.write_points(
        path, xyz, chunk_shape=chunk, attributes=attrs,
        object_ids=rng.integers(0, 12, n), levels=levels,
    )  # fmt: skip
    return zv.open(path)


@pytest.fixture(scope="module")
def leveled(tmp_path_factory: pytest.TempPathFactory) -> zv.VectorStore:
    """600 points in 4 x 4 x 4 chunks, 4 levels: every cell list, limit and level exercised
    (1500 points in 5 x 5 x 5 chunks checked the same and cost a default run 40 s more)."""
    levels = zv.Levels(count=3, per_bin=8)
    return _points_store(tmp_path_factory.mktemp("ann"), 600, levels, chunk=25.0)


def _all_cells(source: PrecomputedSource, info: dict[str, Any]) -> dict[int, dict[str, bytes]]:
    out: dict[int, dict[str, bytes]] = {}
    for k, _ in enumerate(info["spatial"]):
        out[k] = {p: source.read(p) for p in source.paths() if p.startswith(f"spatial{k}/")}
    return out


def test_every_vertex_once_bounded_cells_and_in_their_cell(leveled: zv.VectorStore) -> None:
    source = sources(leveled)["annotations"]
    info = json.loads(source.read("info"))
    assert info["@type"] == "neuroglancer_annotations_v1"
    assert info["annotation_type"] == "point"
    assert [p["id"] for p in info["properties"]] == ["weight", "depth", "label"]  # big: int64
    assert len(info["spatial"]) == len(leveled.levels) == 4
    seen: Counter[tuple[Any, ...]] = Counter()
    ids: list[int] = []
    shuffled = False  # cells list their annotations in random order, as the format asks
    lo = np.array(info["lower_bound"])
    for k, cells in _all_cells(source, info).items():
        spec = info["spatial"][k]
        size = np.array(spec["chunk_size"])
        assert np.allclose(np.array(spec["grid_shape"]) * size, np.array(info["upper_bound"]) - lo)
        if k:
            assert np.all(np.array(info["spatial"][k - 1]["chunk_size"]) % size == 0)
        level_rows = leveled.read(level=len(leveled.levels) - 1 - k)
        level_set = Counter(_expected_row(level_rows, i, info) for i in range(len(level_rows)))
        for path, data in cells.items():
            rows = decode_list(data, info)
            assert 0 < len(rows) <= spec["limit"]  # bounded work per request
            cell = np.array([int(c) for c in path.split("/")[1].split("_")])
            pos = np.array([r[:3] for _, r in rows])
            assert np.all(pos >= lo + cell * size - 1e-4)
            assert np.all(pos < lo + (cell + 1) * size)
            assert not Counter(r for _, r in rows) - level_set  # rows of that store level
            seen.update(r for _, r in rows)
            ids.extend(i for i, _ in rows)
            shuffled |= [i for i, _ in rows] != sorted(i for i, _ in rows)
    everything = leveled.read()
    assert seen == Counter(_expected_row(everything, i, info) for i in range(len(everything)))
    assert sorted(ids) == list(range(len(everything)))
    assert shuffled


def test_by_id_and_relationships(leveled: zv.VectorStore) -> None:
    source = sources(leveled)["annotations"]
    info = json.loads(source.read("info"))
    assert info["relationships"] == [{"id": "object", "key": "by_object"}]
    everything = leveled.read()
    owner = {}
    for i in range(len(everything)):
        owner.setdefault(_expected_row(everything, i, info), set()).add(
            int(everything.vertex_object_ids[i])
        )
    spatial: dict[int, tuple[Any, ...]] = {}
    for cells in _all_cells(source, info).values():
        for data in cells.values():
            spatial.update(decode_list(data, info))
    per_object: dict[int, set[int]] = {}
    for annotation, row in sorted(spatial.items()):  # id order: chunk by chunk
        found, related = decode_by_id(source.read(f"by_id/{annotation}"), info)
        assert found == row
        assert related[0][0] in owner[row]
        per_object.setdefault(related[0][0], set()).add(annotation)
    objects = [p for p in source.paths() if p.startswith("by_object/")]
    assert sorted(int(p.split("/")[1]) for p in objects) == sorted(per_object)
    for path in objects:
        obj = int(path.split("/")[1])
        listed = decode_list(source.read(path), info)
        assert {i for i, _ in listed} == per_object[obj]
        assert all(spatial[i] == row for i, row in listed)
        assert len(listed) == len(leveled.read_objects(obj))


def test_missing_paths_raise(leveled: zv.VectorStore) -> None:
    source = sources(leveled)["annotations"]
    total = leveled.vertex_count
    for path in ("nope", f"by_id/{total}", "spatial9/0_0_0", "spatial0/5_0_0", "by_object/99"):
        with pytest.raises(PrecomputedFileNotFoundError):
            source.read(path)


def test_no_levels_and_aggregate_give_one_level_of_level_0(tmp_path: Path) -> None:
    for levels in (None, zv.Levels(count=1, method="aggregate")):
        store = _points_store(tmp_path, 200, levels, seed=1 if levels is None else 2, chunk=50.0)
        source = PointAnnotations(store, limit=10)
        info = json.loads(source.read("info"))
        assert len(info["spatial"]) == 1
        rows = [
            r
            for p in source.paths() if p.startswith("spatial0/")
            for r in decode_list(source.read(p), info)
        ]  # fmt: skip
        assert sorted(i for i, _ in rows) == list(range(200))


def test_identical_points_each_once(tmp_path: Path) -> None:
    rows = np.array([[1.0, 1, 1], [1, 1, 1], [30, 30, 30], [2, 2, 2]], dtype=np.float32)
    xyz = np.repeat(rows, 50, axis=0)
    path = tmp_path / "same.zarr"
    zv.write_points(path, xyz, chunk_shape=20.0, levels=zv.Levels(count=2, per_bin=3))
    store = zv.open(path)
    assert len(store.levels) == 3
    source = PointAnnotations(store)
    info = json.loads(source.read("info"))
    found = [
        r
        for p in source.paths() if p.startswith("spatial")
        for r in decode_list(source.read(p), info)
    ]  # fmt: skip
    assert sorted(i for i, _ in found) == list(range(200))
    assert Counter(r for _, r in found) == Counter(tuple(map(float, x)) for x in xyz)
    for annotation, row in found:
        assert decode_by_id(source.read(f"by_id/{annotation}"), info) == (row, [])


def test_limit_splits_cells(leveled: zv.VectorStore) -> None:
    small = PointAnnotations(leveled, limit=40)
    info = json.loads(small.read("info"))
    chunk_counts = leveled.chunk_counts()[1]
    for k, spec in enumerate(info["spatial"]):
        biggest = max(len(decode_list(small.read(p), info)) for p in small.paths()
                      if p.startswith(f"spatial{k}/"))  # fmt: skip
        assert biggest == spec["limit"]
        assert spec["limit"] <= max(40, int(chunk_counts.max()))


@pytest.mark.slow
def test_million_points_every_cell_bounded_and_every_point_once(tmp_path: Path) -> None:
    n = 1_000_000
    rng = np.random.default_rng(11)
    path = tmp_path / "million.zarr"
    xyz = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    attrs = {"w": rng.normal(size=n).astype(np.float32)}
    zv.write_points(path, xyz, chunk_shape=125.0, attributes=attrs, levels="auto")
    store = zv.open(path)
    assert len(store.levels) > 2
    source = PointAnnotations(store)
    info = json.loads(source.read("info"))
    assert len(info["spatial"]) == len(store.levels)
    assert np.prod(info["spatial"][0]["grid_shape"]) <= 8  # the coarsest level in few cells
    ids = []
    for k, spec in enumerate(info["spatial"]):
        assert spec["limit"] <= 10_000
        level = source.plan.levels[k]
        for cell in level.cells:
            data = source.read(f"spatial{k}/{level.cell_name(cell)}")
            (count,) = np.frombuffer(data[:8], "<u8")
            assert count <= spec["limit"]
            ids.append(np.frombuffer(data[len(data) - 8 * int(count) :], "<u8"))
    assert np.array_equal(np.sort(np.concatenate(ids)), np.arange(n))
