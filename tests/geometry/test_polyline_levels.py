"""Levels of detail of polylines and streamlines written by ``write_polylines(levels=...)``.

Every level is checked against a recomputation with the ``runs`` kernel from the level-0
store's own objects (spec §4.3.3: objects in id order, vertices in traversal order), and a
box query at a level against brute force over that level's vertices (an object query
returns every object with a vertex in the box, whole, at that level).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.helpers import examples, sorted_rows
from zarr_vectors.kernels import CoarseGrid, coarsen_polylines

CHUNK = 16.0
BIN = 2.0
EVERYTHING = ((-np.inf,) * 3, (np.inf,) * 3)


def _walks(m: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        (np.cumsum(rng.normal(0, 1.5, (int(rng.integers(1, 40)), 3)), axis=0) + 24).astype(
            np.float32
        )
        for _ in range(m)
    ]


def _write(path: Path, walks: list[np.ndarray], levels: object, seed: int = 0) -> None:
    n = sum(len(w) for w in walks)
    rng = np.random.default_rng(seed)
    zv.write_polylines(
        path,
        walks,
        kind="streamline",
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes={"w": rng.random(n).astype(np.float32), "k": np.arange(n, dtype=np.int32)},
        object_attributes={"score": rng.random(len(walks))},
        groups={"g": [0, len(walks) - 1]},
        levels=levels,
        progress=False,
    )


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("polyline-levels") / "lines.zv"
    _write(path, _walks(60, 1), zv.Levels(count=3))
    return path


def _level0(store: zv.VectorStore) -> zv.QueryResult:
    return store.read_objects(np.arange(store.object_count), level=0)


def _recomputed(store: zv.VectorStore, level: int) -> tuple[zv.QueryResult, object]:
    base = _level0(store)
    info = store.levels[level]
    root = store.metadata
    grid = CoarseGrid(root["chunk_shape"], info.bin_shape, root["chunk_grid_origin"])
    return base, coarsen_polylines(base.positions, base.offsets, grid)


def test_levels_listed_with_runs_metadata_and_version_1_3(lines: Path) -> None:
    store = zv.open(lines)
    assert store.metadata["zarr_vectors_version"] == "1.6"
    assert [info.level for info in store.levels] == [0, 1, 2, 3]
    counts = [info.vertex_count for info in store.levels]
    assert counts == sorted(counts, reverse=True)
    assert counts[-1] < counts[0]
    for info in store.levels[1:]:
        assert info.coarsening == {"method": "runs", "representative": "ends_and_middle"}
        attrs = zarr.open_group(str(lines / str(info.level)), mode="r").attrs
        assert attrs["kept_object_count"] == store.object_count
        assert attrs["object_count"] == store.object_count
        assert attrs["object_sparsity"] == 1.0


@pytest.mark.parametrize("level", [1, 2, 3])
def test_each_level_equals_the_kernel_over_the_stored_level0(lines: Path, level: int) -> None:
    store = zv.open(lines)
    base, coarse = _recomputed(store, level)
    found = store.read_objects(np.arange(store.object_count), level=level)
    np.testing.assert_array_equal(found.offsets, coarse.offsets)
    np.testing.assert_array_equal(found.positions, base.positions[coarse.source])
    for name in ("w", "k"):
        np.testing.assert_array_equal(found.attributes[name], base.attributes[name][coarse.source])
    np.testing.assert_array_equal(found.object_attributes["score"], base.object_attributes["score"])
    counts = zarr.open_array(str(lines / str(level) / "object_vertex_counts"), mode="r")[:]
    np.testing.assert_array_equal(counts, np.diff(coarse.offsets))
    assert counts.sum() == store.levels[level].vertex_count


@pytest.mark.parametrize("level", [1, 3])
def test_read_objects_keeps_ends_and_order(lines: Path, level: int) -> None:
    store = zv.open(lines)
    ids = [0, 7, 31, 59]
    fine = store.read_objects(ids, level=0)
    coarse = store.read_objects(ids, level=level)
    for k in range(len(ids)):
        a = fine.positions[fine.offsets[k] : fine.offsets[k + 1]]
        b = coarse.positions[coarse.offsets[k] : coarse.offsets[k + 1]]
        assert len(b) == min(len(a), max(2, len(b)))
        np.testing.assert_array_equal(b[[0, -1]], a[[0, -1]])
        ka = fine.attributes["k"][fine.offsets[k] : fine.offsets[k + 1]]
        kb = coarse.attributes["k"][coarse.offsets[k] : coarse.offsets[k + 1]]
        assert np.all(np.diff(kb) > 0)
        assert np.isin(kb, ka).all()


def test_validate_level5_is_clean(lines: Path) -> None:
    report = zv.validate(lines, level=5)
    assert report.ok, report.summary()
    assert not report.warnings, report.summary()


def test_levels_none_writes_the_same_bytes_as_no_levels(tmp_path: Path) -> None:
    walks = _walks(12, 2)
    _write(tmp_path / "a.zv", walks, None)
    _write(tmp_path / "b.zv", walks, 0)
    files = sorted(p.relative_to(tmp_path / "a.zv") for p in (tmp_path / "a.zv").rglob("*"))
    for rel in files:
        a, b = tmp_path / "a.zv" / rel, tmp_path / "b.zv" / rel
        if a.is_file() and rel.name != "metadata.json" and "zattrs" not in rel.name:
            assert a.read_bytes() == b.read_bytes() or rel.name == "zarr.json", rel
    assert zv.open(tmp_path / "a.zv").metadata["zarr_vectors_version"] == "1.6"


def test_aggregate_is_refused_for_polylines(tmp_path: Path) -> None:
    with pytest.raises(zv.InvalidInputError, match="runs"):
        _write(tmp_path / "x.zv", _walks(3, 0), zv.Levels(method="aggregate"))
    assert not (tmp_path / "x.zv").exists()


def test_runs_is_refused_for_points(tmp_path: Path) -> None:
    with pytest.raises(zv.InvalidInputError, match="runs"):
        zv.write_points(tmp_path / "p.zv", np.zeros((3, 3)), levels=zv.Levels(method="runs"))


def test_other_object_kinds_refuse_the_runs_method(tmp_path: Path) -> None:
    with pytest.raises(zv.InvalidInputError, match="cluster"):
        zv.write_graph(
            tmp_path / "g.zv", np.zeros((2, 3)), np.array([[0, 1]]), levels=zv.Levels(method="runs")
        )


@settings(
    max_examples=examples(10, 100),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(0, 2**16),
    m=st.integers(1, 12),
    level=st.integers(1, 3),
    corner=st.tuples(*[st.floats(0, 48) for _ in range(3)]),
    size=st.tuples(*[st.floats(0.5, 30) for _ in range(3)]),
)
def test_box_query_at_a_level_is_brute_force(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    m: int,
    level: int,
    corner: tuple[float, float, float],
    size: tuple[float, float, float],
) -> None:
    path = tmp_path_factory.mktemp("box") / "lines.zv"
    with warnings.catch_warnings():  # short objects may allow fewer levels than asked
        warnings.filterwarnings("ignore", "built .* levels of detail", UserWarning)
        _write(path, _walks(m, seed), zv.Levels(count=level), seed)
    store = zv.open(path)
    level = store.levels[-1].level
    everything = store.read(level=level)
    lo, hi = np.asarray(corner), np.asarray(corner) + np.asarray(size)
    inside = np.all((everything.positions >= lo) & (everything.positions < hi), axis=1)
    owner = np.repeat(everything.object_ids, np.diff(everything.offsets))
    expected = np.unique(owner[inside])
    found = store.query((lo, hi), level=level)
    assert found.level == level
    np.testing.assert_array_equal(np.sort(found.object_ids), expected)
    kept = np.isin(owner, expected)
    found_owner = np.repeat(found.object_ids, np.diff(found.offsets))
    np.testing.assert_array_equal(
        sorted_rows(found.positions, found.attributes["k"], found_owner),
        sorted_rows(everything.positions[kept], everything.attributes["k"][kept], owner[kept]),
    )


def _set_method(path: Path, level: int, method: str) -> None:
    node = path / str(level) / "zarr.json"
    doc = json.loads(node.read_text())
    doc["attributes"]["coarsening"]["method"] = method
    node.write_text(json.dumps(doc))


def test_the_validator_knows_runs_and_flags_another_method(tmp_path: Path) -> None:
    path = tmp_path / "lines.zv"
    _write(path, _walks(8, 4), zv.Levels(count=1))
    ids = {p.check_id for p in zv.validate(path, level=5).problems}
    assert "L2.coarsening_method_unknown" not in ids
    _set_method(path, 1, "thin")
    ids = {p.check_id for p in zv.validate(path, level=5).problems}
    assert "L2.coarsening_method_unknown" in ids
