"""Point-cloud levels of detail written by ``write_points(levels=...)`` (spec §4.3.2).

Each level is read alone with a plain :class:`LevelReader` and compared with a numpy
recomputation of the spec's rule from the level below (``sample``) or from level 0
(``aggregate``). Coordinates are float32 multiples of 1/64 in [0, 32) with power-of-two
chunks and bins, so that the chunk and bin of a coordinate are exact floors here.
"""

from __future__ import annotations

import itertools
import json
import pathlib
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import LocalStore

import zarr_vectors as zv
from tests.helpers import examples
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.kernels.sampling import row_hashes_numpy
from zarr_vectors.query.point_queries import query_box
from zarr_vectors.read import LevelReader
from zarr_vectors.store.io import StoreIO

CHUNK, BIN = 8.0, 2.0
EVERYWHERE = (np.full(2, -np.inf), np.full(2, np.inf))


def _points(seed: int, n: int, ndim: int = 2) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    positions = (rng.integers(0, 32 * 64, size=(n, ndim)) / 64).astype(np.float32)
    attributes = {
        "size": rng.normal(size=n).astype(np.float32),
        "label": rng.integers(0, 4, size=n).astype(np.int16),
        "rgb": rng.integers(0, 255, size=(n, 3)).astype(np.uint8),
    }
    return positions, attributes


def _write(path: pathlib.Path, seed: int, n: int, levels: Any) -> pathlib.Path:
    positions, attributes = _points(seed, n)
    zv.write_points(
        path,
        positions,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes=attributes,
        levels=levels,
        progress=False,
    )
    return path


def _root(path: pathlib.Path) -> RootMetadata:
    return RootMetadata.from_json(json.loads((path / "zarr.json").read_text())["attributes"])


def _level(path: pathlib.Path, level: int, lo: Any = None, hi: Any = None) -> Any:
    reader = LevelReader(StoreIO(LocalStore(path, read_only=True)), _root(path), level)
    low, high = EVERYWHERE if lo is None else (lo, hi)
    return query_box(reader, np.asarray(low), np.asarray(high))


def _level_attrs(path: pathlib.Path, level: int) -> dict[str, Any]:
    return json.loads((path / str(level) / "zarr.json").read_text())["attributes"]


def _groups(positions: np.ndarray, ratio: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(chunk flat, coarse bin flat) of every row: exact floors on this test's grid."""
    p = positions.astype(np.float64)
    chunk = np.floor(p / CHUNK).astype(np.int64)
    bins = np.floor((p - chunk * CHUNK) / (BIN * np.asarray(ratio))).astype(np.int64)
    per_chunk = (CHUNK / BIN / np.asarray(ratio)).astype(np.int64)
    flat_chunk = chunk[:, 0] * 1000 + chunk[:, 1]
    flat_bin = bins[:, 0] * per_chunk[1] + bins[:, 1]
    return flat_chunk, flat_bin


def _columns(result: Any) -> list[np.ndarray]:
    return [result.positions, *(result.attributes[k] for k in ("size", "label", "rgb"))]


def sample_twin(finer: list[np.ndarray], ratio: list[int], cap: int) -> list[np.ndarray]:
    """Spec §4.3.2 ``sample`` with lexsort: per (chunk, coarse bin) the ``cap`` rows of
    smallest (key, row), stored by (chunk, coarse bin, row)."""
    chunk, coarse = _groups(finer[0], ratio)
    keys = row_hashes_numpy(finer[0])
    rows = np.arange(keys.shape[0])
    order = np.lexsort((rows, keys, coarse, chunk))
    group = np.stack([chunk[order], coarse[order]], axis=1)
    first = np.ones(order.shape[0], bool)
    first[1:] = np.any(group[1:] != group[:-1], axis=1)
    start = np.maximum.accumulate(np.where(first, np.arange(order.shape[0]), 0))
    kept = order[np.arange(order.shape[0]) - start < cap]
    kept = kept[np.lexsort((kept, coarse[kept], chunk[kept]))]
    return [c[kept] for c in finer]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype
        assert x.shape == y.shape
        assert x.tobytes() == y.tobytes()


@settings(max_examples=examples(4, 30), deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6000), st.sampled_from([2, 5, 64]))
def test_sample_levels_follow_the_rule_from_the_level_below(
    tmp_path_factory: pytest.TempPathFactory, seed: int, n: int, per_bin: int
) -> None:
    path = tmp_path_factory.mktemp("lod") / "s.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # fewer levels than asked, small n
        _write(path, seed, n, zv.Levels(count=4, per_bin=per_bin))
    datasets = _root(path).levels
    finer = _columns(_level(path, 0))
    counts = [finer[0].shape[0]]
    for entry in datasets:
        coarsening = _level_attrs(path, entry.level)["coarsening"]
        level = _columns(_level(path, entry.level))
        _same(level, sample_twin(finer, list(entry.bin_ratio), coarsening["per_bin"]))
        counts.append(level[0].shape[0])
        finer = level
    assert all(b < a for a, b in itertools.pairwise(counts))


def test_levels_nest_and_cap_every_coarse_bin(tmp_path: pathlib.Path) -> None:
    path = _write(tmp_path / "s.zarr", 3, 20_000, zv.Levels(count=3, per_bin=16))
    base = {r.tobytes() for r in _level(path, 0).positions}
    for entry in _root(path).levels:
        cap = _level_attrs(path, entry.level)["coarsening"]["per_bin"]
        positions = _level(path, entry.level).positions
        assert {r.tobytes() for r in positions} <= base
        chunk, coarse = _groups(positions, list(entry.bin_ratio))
        _, per_bin = np.unique(np.stack([chunk, coarse], 1), axis=0, return_counts=True)
        assert per_bin.max() <= cap


def test_levels_depend_on_level_zero_alone(tmp_path: pathlib.Path) -> None:
    """Input rows in another chunk order, each bin's rows in the same order: level 0 is the
    same, so every level is the same, byte for byte."""
    positions, attributes = _points(7, 8000)
    chunk, _ = _groups(positions, [1, 1])
    chunks = np.unique(chunk)
    rank = np.random.default_rng(1).permutation(chunks.shape[0])
    order = np.argsort(rank[np.searchsorted(chunks, chunk)], kind="stable")
    assert not np.array_equal(order, np.arange(order.shape[0]))
    stores = []
    for name, rows in (("a", np.arange(positions.shape[0])), ("b", order)):
        path = tmp_path / f"{name}.zarr"
        zv.write_points(
            path,
            positions[rows],
            chunk_shape=CHUNK,
            bin_shape=BIN,
            attributes={k: v[rows] for k, v in attributes.items()},
            levels=3,
            progress=False,
        )
        stores.append(path)
    for level in ("0", "1", "2", "3"):
        files_a = sorted(p.relative_to(stores[0]) for p in (stores[0] / level).rglob("*"))
        files_b = sorted(p.relative_to(stores[1]) for p in (stores[1] / level).rglob("*"))
        assert files_a == files_b
        for rel in files_a:
            if (stores[0] / rel).is_file():
                assert (stores[0] / rel).read_bytes() == (stores[1] / rel).read_bytes()


@settings(max_examples=examples(10, 60), deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([0, 1, 2]), st.data())
def test_box_queries_at_a_level_are_exact(
    tmp_path_factory: pytest.TempPathFactory, seed: int, level: int, data: st.DataObject
) -> None:
    path = tmp_path_factory.mktemp("lod") / "q.zarr"
    method = data.draw(st.sampled_from(["sample", "aggregate"]))
    _write(path, seed, 3000, zv.Levels(count=2, method=method, per_bin=4))
    every = _level(path, level)
    lo = np.asarray(data.draw(st.lists(st.floats(-1, 33), min_size=2, max_size=2)))
    hi = lo + np.asarray(data.draw(st.lists(st.floats(0, 20), min_size=2, max_size=2)))
    got = _level(path, level, lo, hi)
    p = every.positions.astype(np.float64)
    inside = np.all((p >= lo) & (p < hi), axis=1)
    assert got.positions.tobytes() == every.positions[inside].tobytes()
    for name, values in got.attributes.items():
        assert values.tobytes() == every.attributes[name][inside].tobytes()


def aggregate_twin(level0: Any, ratio: list[int]) -> dict[str, np.ndarray]:
    """Spec §4.3.2 ``aggregate``: per (chunk, coarse bin), in level-0 row order."""
    chunk, coarse = _groups(level0.positions, ratio)
    order = np.lexsort((np.arange(chunk.shape[0]), coarse, chunk))
    keys = np.stack([chunk[order], coarse[order]], 1)
    _, starts = np.unique(keys, axis=0, return_index=True)
    bounds = [*starts.tolist(), order.shape[0]]
    out: dict[str, list[Any]] = {"positions": [], "size": [], "label": [], "rgb": [], "count": []}
    for a, b in itertools.pairwise(bounds):
        rows = order[a:b]
        p = level0.positions[rows]
        total = np.zeros(p.shape[1])
        for row in p.astype(np.float64):
            total = total + row
        mean = (total / len(rows)).astype(np.float32)
        out["positions"].append(np.clip(mean, p.min(0), p.max(0)))
        size = 0.0
        for v in level0.attributes["size"][rows].astype(np.float64):
            size += v
        out["size"].append(np.float32(size / len(rows)))
        labels, counts = np.unique(level0.attributes["label"][rows], return_counts=True)
        out["label"].append(labels[np.argmax(counts)])
        out["rgb"].append(level0.attributes["rgb"][rows].max(0))
        out["count"].append(len(rows))
    dtypes = {
        "positions": np.float32,
        "size": np.float32,
        "label": np.int16,
        "rgb": np.uint8,
        "count": np.int64,
    }
    return {k: np.asarray(v, dtype=dtypes[k]) for k, v in out.items()}


def test_aggregate_levels_follow_the_rule_from_level_zero(tmp_path: pathlib.Path) -> None:
    levels = zv.Levels(count=2, method="aggregate", reductions={"rgb": "max"})
    path = _write(tmp_path / "a.zarr", 11, 5000, levels)
    level0 = _level(path, 0)
    for entry in _root(path).levels:
        got = _level(path, entry.level)
        want = aggregate_twin(level0, list(entry.bin_ratio))
        assert got.positions.tobytes() == want["positions"].tobytes()
        for name in ("size", "label", "rgb", "count"):
            assert got.attributes[name].tobytes() == want[name].tobytes(), name
        assert int(got.attributes["count"].sum()) == 5000
        coarsening = _level_attrs(path, entry.level)["coarsening"]
        assert coarsening == {
            "method": "aggregate",
            "count": "count",
            "reductions": {"size": "mean", "label": "mode", "rgb": "max"},
        }


def test_without_levels_the_store_is_format_1_3_too(tmp_path: pathlib.Path) -> None:
    plain = _write(tmp_path / "p.zarr", 1, 500, None)
    assert _root(plain).version == "1.6"  # every new store (spec §3.3)
    assert _root(plain).levels == ()
    lod = _write(tmp_path / "l.zarr", 1, 500, 1)
    assert _root(lod).version == "1.6"
    assert len(_root(lod).levels) == 1
    for rel in (plain / "0").rglob("*"):
        if rel.is_file():
            assert (lod / rel.relative_to(plain)).read_bytes() == rel.read_bytes()


def test_auto_stops_at_the_target(tmp_path: pathlib.Path) -> None:
    path = _write(tmp_path / "t.zarr", 2, 20_000, zv.Levels(target=1000, per_bin=64))
    counts = [_level_attrs(path, n)["vertex_count"] for n in range(len(_root(path).levels) + 1)]
    assert counts[-1] <= 1000 < counts[-2]
    assert zv.validate(path, level=5).ok


def test_asking_too_many_levels_warns(tmp_path: pathlib.Path) -> None:
    with pytest.warns(UserWarning, match="no coarser level"):
        _write(tmp_path / "w.zarr", 2, 50, 30)


@pytest.mark.parametrize(
    ("levels", "match"),
    [
        ("many", "levels must be"),
        (-1, "levels must be"),
        (zv.Levels, "levels must be"),
        ({"method": "sample"}, "levels must be"),
    ],
)
def test_bad_levels_are_refused(tmp_path: pathlib.Path, levels: Any, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        _write(tmp_path / "x.zarr", 1, 10, levels)
    assert not (tmp_path / "x.zarr").exists()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "spline"}, "method must be one of"),
        ({"per_bin": 0}, "per_bin must be"),
        ({"count": 1.5}, "count must be"),
    ],
)
def test_bad_level_settings_are_refused(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        zv.Levels(**kwargs)


@pytest.mark.parametrize(
    ("levels", "match"),
    [
        (zv.Levels(method="aggregate", reductions={"label": "mean"}), "not allowed"),
        (zv.Levels(method="aggregate", reductions={"nope": "max"}), "do not exist"),
        (zv.Levels(method="aggregate", count_name="size"), "already named"),
    ],
)
def test_bad_reductions_are_refused(tmp_path: pathlib.Path, levels: Any, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        _write(tmp_path / "x.zarr", 1, 100, levels)


def test_levels_are_not_taken_with_append(tmp_path: pathlib.Path) -> None:
    path = _write(tmp_path / "a.zarr", 1, 100, None)
    positions, _ = _points(2, 10)
    with pytest.raises(InvalidInputError, match="mode='a'"):
        zv.write_points(path, positions, mode="a", levels=1, progress=False)
