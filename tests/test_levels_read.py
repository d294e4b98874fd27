"""Reading by resolution level: ``level=``, ``max_vertices=``, ``store.levels``, ``plot()``.

Point stores get their levels from the library (``write_points(levels=zv.Levels(...))``:
nested per-coarse-bin samples, or per-bin aggregates); object kinds from the test-only builder
of :mod:`tests.levels_fixtures` (a copy of level 0 as level 1), since no object writer builds
levels yet. Every answer is checked against brute force over the level's own vertices.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from benchmarks._latency import LatencyStore
from tests.helpers import examples, sorted_rows
from tests.levels_fixtures import add_copy_level
from tests.result.result_cases import html_rows

EXTENT = 100.0
CHUNK = 25.0
PER_BIN = 2
RATIOS, CAPS = (2, 4, 4), (2, 2, 1)  # bins 12.5 (base 6.25), then 25 = the chunk, cap 1
EVERYTHING = ((-np.inf,) * 3, (np.inf,) * 3)
FIXTURE_SETTINGS = settings(
    max_examples=examples(25, 200),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _cloud(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(0, EXTENT, (n, 3)).astype(np.float32)
    return xyz, rng.random(n)


def _point_store(store: object, n: int = 4000) -> None:
    xyz, value = _cloud(n)
    zv.write_points(
        store,
        xyz,
        chunk_shape=CHUNK,
        bin_shape=CHUNK / 4,
        attributes={"v": value},
        levels=zv.Levels(count=len(RATIOS), per_bin=PER_BIN),
    )


@pytest.fixture(scope="module")
def points(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("levels") / "cells.zv"
    _point_store(path)
    return path


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("levels") / "lines.zv"
    rng = np.random.default_rng(3)
    walks = [
        np.cumsum(rng.normal(0, 6, (int(rng.integers(2, 12)), 3)), axis=0) + rng.uniform(0, 100, 3)
        for _ in range(40)
    ]
    zv.write_polylines(
        path, walks, chunk_shape=CHUNK, attributes={"a": rng.random(sum(map(len, walks)))}
    )
    add_copy_level(path)
    return path


@pytest.fixture(scope="module")
def aggregated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("levels") / "means.zv"
    xyz, value = _cloud(3000, seed=1)
    zv.write_points(
        path,
        xyz,
        chunk_shape=CHUNK,
        bin_shape=CHUNK / 4,
        attributes={"v": value, "kind": (value * 4).astype(np.int32)},
        levels=zv.Levels(count=2, method="aggregate"),  # bins 12.5, then 25
    )
    return path


def _coarse_cells(xyz: np.ndarray, bin_shape: tuple[float, ...] | None) -> np.ndarray:
    """Each vertex's (chunk, bin) cell for bins of ``bin_shape`` (spec §5), one row each."""
    assert bin_shape is not None
    p = xyz.astype(np.float64)
    chunks = np.floor(p / CHUNK)
    bins = np.floor((p - chunks * CHUNK) / np.asarray(bin_shape))
    return np.concatenate([chunks, bins], axis=1)


def _level_vertices(store: zv.VectorStore, level: int) -> zv.QueryResult:
    return store.read(level=level)


def _in_box(xyz: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.all((xyz >= lo) & (xyz < hi), axis=1)


def _rows(found: zv.QueryResult) -> np.ndarray:
    return sorted_rows(found.positions, found.attributes["v"])


def _chunk_count_bound(xyz: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> int:
    """Vertices of ``xyz`` in the chunks the half-open box [lo, hi) meets (brute force)."""
    if np.any(hi <= lo):
        return 0  # an empty box meets no chunk
    cells = np.floor(xyz.astype(np.float64) / CHUNK)
    meets = np.all((cells * CHUNK < hi) & (lo < (cells + 1) * CHUNK), axis=1)
    return int(meets.sum())


boxes = st.tuples(
    st.lists(st.floats(-10, 110), min_size=3, max_size=3),
    st.lists(st.floats(0, 120), min_size=3, max_size=3),
).map(lambda b: (np.array(b[0]), np.array(b[0]) + np.array(b[1])))


# -- store.levels ------------------------------------------------------------------------
def test_levels_are_records_of_every_level(points: Path) -> None:
    store = zv.open(points)
    levels = store.levels
    assert [lv.level for lv in levels] == [0, 1, 2, 3]
    assert [lv.method for lv in levels] == [None, "sample", "sample", "sample"]
    assert [lv.bin_ratio for lv in levels] == [(1, 1, 1), *((r,) * 3 for r in RATIOS)]
    assert levels[2].bin_shape == levels[3].bin_shape == (CHUNK,) * 3
    assert [lv.coarsening["per_bin"] for lv in levels[1:]] == list(CAPS)  # type: ignore[index]
    for lv in levels:
        assert lv.vertex_count == len(store.read(level=lv.level))
        assert lv.object_count is None
        assert lv.object_sparsity == 1.0
    counts = [lv.vertex_count for lv in levels]
    assert counts == sorted(counts, reverse=True)
    assert counts[-1] < counts[0]
    assert "level 3: " in repr(store)


def test_results_record_their_level(points: Path, lines: Path) -> None:
    store = zv.open(points)
    assert store.query(EVERYTHING).level == 0
    assert store.read(level=2).level == 2
    objects = zv.open(lines)
    assert objects.read_objects([0, 3], level=1).level == 1
    assert objects.query(EVERYTHING, level=1).level == 1
    assert zv.QueryResult(positions=np.zeros((1, 2))).level == 0
    coarse = store.read(level=2)
    assert "from level 2" in repr(coarse)
    assert "from level" not in repr(store.read())
    assert ("level", "2") in html_rows(coarse._repr_html_())


# -- a box query at any level is exact over that level's vertices -----------------------
@FIXTURE_SETTINGS
@given(box=boxes, level=st.integers(0, 3))
def test_box_query_at_a_level_is_brute_force_over_its_vertices(
    points: Path, box: tuple[np.ndarray, np.ndarray], level: int
) -> None:
    store = zv.open(points)
    everything = _level_vertices(store, level)
    inside = _in_box(everything.positions, *box)
    found = store.query(box, level=level)
    assert found.level == level
    expected = sorted_rows(everything.positions[inside], everything.attributes["v"][inside])
    np.testing.assert_array_equal(_rows(found), expected)


def test_coarse_levels_are_nested_subsets(points: Path) -> None:
    store = zv.open(points)
    for level in (1, 2, 3):
        finer, coarser = _rows(store.read(level=level - 1)), _rows(store.read(level=level))
        assert {tuple(r) for r in coarser} <= {tuple(r) for r in finer}


@FIXTURE_SETTINGS
@given(box=boxes)
def test_object_query_at_a_copy_level_is_brute_force(
    lines: Path, box: tuple[np.ndarray, np.ndarray]
) -> None:
    store = zv.open(lines)
    whole = store.read(level=1)
    owner = np.repeat(whole.object_ids, np.diff(whole.offsets))
    expected = np.unique(owner[_in_box(whole.positions, *box)])
    found = store.query(box, level=1)
    np.testing.assert_array_equal(np.sort(found.object_ids), expected)
    np.testing.assert_array_equal(found.positions, store.query(box).positions)


# -- max_vertices ---------------------------------------------------------------------------
@FIXTURE_SETTINGS
@given(box=boxes, budget=st.integers(1, 5000))
def test_max_vertices_picks_the_finest_admissible_level_and_is_never_exceeded(
    points: Path, box: tuple[np.ndarray, np.ndarray], budget: int
) -> None:
    store = zv.open(points)
    bounds = [
        _chunk_count_bound(_level_vertices(store, lv.level).positions, *box) for lv in store.levels
    ]
    admissible = [level for level, n in enumerate(bounds) if n <= budget]
    if not admissible:
        with pytest.raises(zv.InvalidInputError, match=f"{bounds[-1]:,} vertices"):
            store.query(box, max_vertices=budget)
        return
    found = store.query(box, max_vertices=budget)
    assert len(found) <= budget
    assert found.level == admissible[0]
    np.testing.assert_array_equal(_rows(found), _rows(store.query(box, level=found.level)))


@FIXTURE_SETTINGS
@given(
    center=st.lists(st.floats(-10, 110), min_size=3, max_size=3),
    radius=st.floats(0, 80),
    budget=st.integers(1, 3000),
)
def test_max_vertices_in_a_ball_is_never_exceeded(
    points: Path, center: list[float], radius: float, budget: int
) -> None:
    store = zv.open(points)
    ball = zv.ball(center, radius)
    c = np.asarray(center)
    cells = np.floor(store.read(level=3).positions.astype(np.float64) / CHUNK)
    near = np.all((cells * CHUNK <= c + radius) & (c - radius <= (cells + 1) * CHUNK), axis=1)
    try:
        found = store.query(ball, max_vertices=budget)
    except zv.InvalidInputError:
        # the coarsest level's count over the chunks met is over the budget (the chunks met
        # lie in the ball's closed bounding box); the ball itself may hold none of them
        assert int(near.sum()) > budget
        return
    assert len(found) <= budget
    np.testing.assert_array_equal(_rows(found), _rows(store.query(ball, level=found.level)))


@FIXTURE_SETTINGS
@given(box=boxes, budget=st.integers(1, 400))
def test_max_vertices_over_objects_is_never_exceeded(
    lines: Path, box: tuple[np.ndarray, np.ndarray], budget: int
) -> None:
    store = zv.open(lines)
    bound = _chunk_count_bound(store.read(level=1).positions, *box)  # the same at both levels
    whole = len(store.query(box, level=1))
    if bound > budget or whole > budget:
        with pytest.raises(zv.InvalidInputError, match=r"coarsest level \(1\)"):
            store.query(box, max_vertices=budget)
        return
    found = store.query(box, max_vertices=budget)
    assert len(found) <= budget
    assert found.level == 0  # the copy level holds as many vertices: level 0 is the finest


def test_read_with_max_vertices_reads_the_finest_level_that_fits(points: Path) -> None:
    store = zv.open(points)
    counts = [lv.vertex_count for lv in store.levels]
    for level, n in enumerate(counts):
        found = store.read(max_vertices=n)
        assert (found.level, len(found)) == (level, n)
    with pytest.raises(zv.InvalidInputError, match="coarsest level"):
        store.read(max_vertices=counts[-1] - 1)


# -- real stores: valid, and a budgeted overview covers every occupied coarse cell --------
@pytest.mark.parametrize("name", ["points", "aggregated", "lines"])
def test_every_level_of_a_store_with_levels_is_valid(
    name: str, request: pytest.FixtureRequest
) -> None:
    path = request.getfixturevalue(name)
    report = zv.validate(path, level=5)
    assert report.ok, [str(p) for p in report.errors]
    assert zv.open(path).metadata["zarr_vectors_version"] == "1.6"
    assert len(zv.open(path).levels) > 1


@FIXTURE_SETTINGS
@given(name=st.sampled_from(["points", "aggregated"]), budget=st.integers(1, 5000))
def test_an_overview_within_budget_covers_every_occupied_coarse_cell(
    name: str, budget: int, request: pytest.FixtureRequest
) -> None:
    path = request.getfixturevalue(name)
    store = zv.open(path)
    levels = store.levels
    if budget < levels[-1].vertex_count:
        with pytest.raises(zv.InvalidInputError, match="coarsest level"):
            store.query(EVERYTHING, max_vertices=budget)
        return
    found = store.query(EVERYTHING, max_vertices=budget)
    chosen = levels[found.level]
    assert len(found) <= budget
    assert found.level == min(lv.level for lv in levels if lv.vertex_count <= budget)
    want = np.unique(_coarse_cells(store.read().positions, chosen.bin_shape), axis=0)
    got, per_cell = np.unique(
        _coarse_cells(found.positions, chosen.bin_shape), axis=0, return_counts=True
    )
    np.testing.assert_array_equal(got, want)  # every occupied coarse cell, and no other
    if chosen.method == "sample":  # at most per_bin of each coarse cell; aggregate: one
        assert per_cell.max() <= chosen.coarsening["per_bin"]  # type: ignore[index]
    elif chosen.method == "aggregate":
        assert per_cell.max() == 1


# -- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("level", [4, -1, 17])
def test_a_level_the_store_does_not_list_names_store_levels(points: Path, level: int) -> None:
    store = zv.open(points)
    for call in (
        lambda: store.query(EVERYTHING, level=level),
        lambda: store.read(level=level),
        lambda: store.to_dask(EVERYTHING, level=level),
    ):
        with pytest.raises(
            zv.InvalidInputError, match=r"store\.levels lists levels \[0, 1, 2, 3\]"
        ):
            call()


def test_bad_level_and_budget_arguments_are_refused(points: Path, lines: Path) -> None:
    store = zv.open(points)
    with pytest.raises(zv.InvalidInputError, match="level= or max_vertices=, not both"):
        store.query(EVERYTHING, level=1, max_vertices=10)
    with pytest.raises(zv.InvalidInputError, match="level= or max_vertices=, not both"):
        store.read(level=0, max_vertices=10)
    for bad in (True, "1", 1.0):
        with pytest.raises(zv.InvalidInputError, match="level must be an integer"):
            store.query(EVERYTHING, level=bad)
    for budget in (0, -3, 2.5, True):
        with pytest.raises(zv.InvalidInputError, match="max_vertices must be"):
            store.query(EVERYTHING, max_vertices=budget)
    with pytest.raises(zv.InvalidInputError, match=r"store\.levels lists levels \[0, 1\]"):
        zv.open(lines).read_objects([0], level=2)


# -- to_dask and read_objects at a level -------------------------------------------------------
def test_to_dask_at_a_level_computes_the_query_of_that_level(points: Path) -> None:
    pytest.importorskip("dask")
    store = zv.open(points)
    box = (np.array([10.0, 0.0, 5.0]), np.array([80.0, 60.0, 90.0]))
    lazy = store.to_dask(box, level=1)
    assert lazy.level == 1
    computed = lazy.compute(scheduler="sync")
    assert computed.level == 1
    np.testing.assert_array_equal(computed.positions, store.query(box, level=1).positions)


def test_read_objects_at_a_copy_level_equals_level_zero(lines: Path) -> None:
    store = zv.open(lines)
    ids = [5, 0, 17]
    at0, at1 = store.read_objects(ids), store.read_objects(ids, level=1)
    np.testing.assert_array_equal(at0.positions, at1.positions)
    np.testing.assert_array_equal(at0.offsets, at1.offsets)
    assert (at0.level, at1.level) == (0, 1)
    with pytest.raises(zv.ObjectNotFoundError, match="no object with id 999 at level 1"):
        store.read_objects([999], level=1)
    with pytest.raises(zv.ObjectNotFoundError, match="no object with id 999 in this store"):
        store.read_objects([999])


def test_plot_of_objects_reads_within_the_budget_or_samples_the_coarsest(lines: Path) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    store = zv.open(lines)
    total = store.levels[0].vertex_count
    assert store.plot(max_points=total).get_title().find("random sample") < 0
    assert "random sample" in store.plot(max_points=5).get_title()
    plt.close("all")


# -- the cold-open overview ---------------------------------------------------------------------
def _overview_reads(n: int) -> tuple[zv.QueryResult, list[str], int]:
    inner = MemoryStore()
    _point_store(inner, n)
    store = LatencyStore(inner)
    store.log.reset()
    found = zv.open(store).query(EVERYTHING, max_vertices=100)
    keys = [k for wave in store.log.keys_by_wave().values() for k in wave]
    return found, keys, store.log.summary().waves


def test_a_cold_overview_reads_no_level_zero_data_in_a_constant_number_of_waves() -> None:
    small, keys_small, waves_small = _overview_reads(2000)
    large, keys_large, waves_large = _overview_reads(8000)
    for found, keys in ((small, keys_small), (large, keys_large)):
        assert found.level == 3  # 64 chunks x 1 vertex; level 2 holds 2 per chunk
        assert 0 < len(found) <= 64
        level0 = [k for k in keys if k.split(" ", 1)[1].startswith("0/")]
        assert level0 == ["get 0/zarr.json"]
    # root; every level's group document; the chosen level's documents (two waves); its
    # vertex_counts; its rows (shard indexes, then blocks); the version check (spec §12.4)
    assert waves_small == waves_large == 8


def test_a_cold_overview_answers_without_level_zero_data(points: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.zv"
    shutil.copytree(points, copy)
    expected = zv.open(points).read(level=3)
    for data in (copy / "0").rglob("c"):
        shutil.rmtree(data)
    found = zv.open(copy).query(EVERYTHING, max_vertices=100)
    assert found.level == 3
    np.testing.assert_array_equal(found.positions, expected.positions)
    store = zv.open(copy)
    found = store.query(store.bounds_box, max_vertices=100)  # level 0's metadata only
    np.testing.assert_array_equal(found.positions, expected.positions)
    with pytest.raises(zv.ZarrVectorsError):
        zv.open(copy).read()  # level 0's data is gone indeed


# -- plot ---------------------------------------------------------------------------------------
def _drawn(ax: object) -> int:
    return int(ax.collections[0].get_offsets().shape[0])  # type: ignore[attr-defined]


def test_plot_reads_the_level_that_fits_its_budget(points: Path) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    store = zv.open(points)
    counts = [lv.vertex_count for lv in store.levels]
    ax = store.plot(max_points=counts[1])
    assert _drawn(ax) == counts[1]
    assert "random sample" not in ax.get_title()
    ax = store.plot(((0, 0, 0), (50, 50, 50)), max_points=counts[-1])
    assert _drawn(ax) <= counts[-1]
    ax = store.plot(max_points=3)  # even the coarsest is over: a sample of it
    assert _drawn(ax) == 3
    assert f"showing 3 of {counts[-1]}" in ax.get_title()
    with pytest.raises(zv.InvalidInputError, match="max_points must be a positive integer"):
        store.plot(max_points=0)
    plt.close("all")


def test_whole_objects_over_the_budget_say_so_and_clip_fits(tmp_path: Path) -> None:
    path = tmp_path / "long.zv"
    line = np.column_stack([np.linspace(0.5, 99.5, 50), np.full(50, 5.0), np.full(50, 5.0)])
    zv.write_polylines(path, [line], chunk_shape=CHUNK)
    add_copy_level(path)
    store = zv.open(path)
    box = ((0, 0, 0), (3, 10, 10))  # two vertices (0.5, 2.52), in a chunk of 13
    with pytest.raises(zv.InvalidInputError, match="whole objects reach outside the region"):
        store.query(box, max_vertices=13)
    clipped = store.query(box, max_vertices=13, clip=True)
    assert len(clipped) == 2
    assert clipped.level == 0
