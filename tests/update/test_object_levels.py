"""Object levels of detail from every write path (spec §4.3.3): one-shot, streamed, built
afterwards (``zv.build_levels``), kept through appends — the same bytes — and object
sparsity (``Levels(objects=...)``) checked against plain numpy.

The kinds are those whose writer declares a level builder, so a kind that gains one is
tested here without a change.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry import object_cases
from tests.geometry.object_cases import KINDS, files
from tests.helpers import sample_sizes
from zarr_vectors.cli import main
from zarr_vectors.geometry import object_writer
from zarr_vectors.kernels.object_sparsity import id_hashes

LEVEL_KINDS = [kind for kind in KINDS if object_writer(kind).levels is not None]
HYPOTHESIS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _levels(kind: str) -> st.SearchStrategy[zv.Levels]:
    """Levels of one to three, with every object sparsity the kind allows."""
    rules: list[dict[str, Any]] = [{}, {"objects": "coverage", "objects_per_cell": 1}]
    if kind == "polyline":
        rules.append({"objects": "length", "objects_kept": 5})
    counted = st.builds(
        lambda count, rule: zv.Levels(count=count, **rule),
        st.integers(1, 3),
        st.sampled_from(rules),
    )
    # "auto" with a small target: the coarsest level bounded by coverage when runs stall
    auto = st.builds(lambda target: zv.Levels(target=target), st.integers(1, 40))
    return st.one_of(counted, auto)


def _quiet(run: Any, *args: Any, **kwargs: Any) -> Any:
    """``run`` without the warning that fewer levels could be built than asked for."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="built .* levels of detail")
        return run(*args, **kwargs)


def _streamed(path: Path, case: dict[str, Any], levels: zv.Levels) -> None:
    extra = {"directed": case["directed"]} if case["kind"] == "graph" else {}
    kind = "polyline" if case["kind"] == "polyline" else case["kind"]
    with zv.ObjectWriter(
        path,
        kind=kind,
        chunk_shape=10.0,
        options=case["options"],
        levels=levels,
        progress=False,
        **extra,
    ) as writer:
        for a, b in object_cases.batches(case):
            if b > a:
                writer.append(**object_cases.arguments(case, a, b))


def _appended(path: Path, case: dict[str, Any], levels: zv.Levels) -> int:
    """Write the first batch with ``levels``, append the others; the levels the first
    write could build."""
    batches = object_cases.batches(case)
    object_cases.write(path, case, *batches[0], levels=levels)
    first = len(zv.open(path).levels) - 1
    for a, b in batches[1:]:
        if b > a:
            object_cases.append(path, case, a, b)
    return first


@pytest.mark.parametrize("examples", sample_sizes(1, 25))
@pytest.mark.parametrize("kind", LEVEL_KINDS)
def test_every_path_gives_the_one_shot_levels(
    tmp_path_factory: pytest.TempPathFactory, kind: str, examples: int
) -> None:
    @settings(HYPOTHESIS, max_examples=examples)
    @given(case=object_cases.cases(kind), levels=_levels(kind))
    def check(case: dict[str, Any], levels: zv.Levels) -> None:
        tmp = tmp_path_factory.mktemp("lv")
        n = len(case["objects"])
        _quiet(object_cases.write, tmp / "one", case, 0, n, levels=levels)
        _quiet(_streamed, tmp / "streamed", case, levels)
        object_cases.write(tmp / "after", case, 0, n)
        built = _quiet(zv.build_levels, tmp / "after", levels, progress=False)
        first = _quiet(_appended, tmp / "appended", case, levels)
        want = files(tmp / "one")
        assert built == len(zv.open(tmp / "one").levels) - 1
        for name in ("streamed", "after"):
            assert files(tmp / name) == want, name
        if first:  # the root records the request (level_schedule); the append reruns it
            assert files(tmp / "appended") == want
        else:  # a first write that built no level is a format 1.2 store: nothing recorded
            assert len(zv.open(tmp / "appended").levels) == 1

    check()


@pytest.fixture(scope="module")
def walks() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [
        (np.cumsum(rng.normal(0, 1.5, (int(rng.integers(2, 30)), 3)), axis=0) + 30).astype(
            np.float32
        )
        for _ in range(80)
    ]


def _level_attributes(path: Path, level: int) -> dict[str, Any]:
    return dict(json.loads((path / str(level) / "zarr.json").read_text())["attributes"])


def _kept(path: Path, level: int) -> np.ndarray:
    """Which objects hold a vertex at ``level``, from its ``object_vertex_counts``."""
    return np.asarray(zarr.open_array(path / str(level) / "object_vertex_counts")[:]) > 0


def _coverage_by_numpy(walks: list[np.ndarray], bin_shape: np.ndarray, per_cell: int) -> np.ndarray:
    """Rule ``spatial_coverage`` (id hash) in plain numpy: cell of each first vertex, the
    ``per_cell`` smallest hashes per cell (the chunk of the first vertex is implied: the
    coarse bin divides the chunk, and the grid origin is 0 here)."""
    cells = [tuple(np.floor(w[0].astype(np.float64) / bin_shape).astype(int)) for w in walks]
    hashes = id_hashes(np.arange(len(walks)))
    kept = np.zeros(len(walks), bool)
    for cell in set(cells):
        members = [i for i, c in enumerate(cells) if c == cell]
        members.sort(key=lambda i: (int(hashes[i]), i))
        kept[members[:per_cell]] = True
    return kept


def test_coverage_keeps_per_cell_objects_and_records_it(tmp_path: Path, walks: list) -> None:
    path = tmp_path / "cov.zv"
    levels = zv.Levels(count=3, objects="coverage", objects_per_cell=2)
    zv.write_polylines(path, walks, chunk_shape=16.0, bin_shape=2.0, levels=levels, progress=False)
    store = zv.open(path)
    assert len(store.levels) == 4
    for info in store.levels[1:]:
        attrs = _level_attributes(path, info.level)
        want = _coverage_by_numpy(walks, np.asarray(info.bin_shape), 2)
        got = _kept(path, info.level)
        np.testing.assert_array_equal(got, want)
        assert attrs["kept_object_count"] == int(want.sum())
        assert attrs["object_sparsity"] == int(want.sum()) / len(walks)
        assert attrs["sparsity_strategy"] == "spatial_coverage"
        assert attrs["coarsening"]["objects"] == {
            "rule": "spatial_coverage",
            "per_cell": 2,
            "priority": "id_hash",
        }
        cells = {tuple(np.floor(w[0] / np.asarray(info.bin_shape)).astype(int)) for w in walks}
        assert int(want.sum()) <= 2 * len(cells)  # bounded: per_cell per occupied coarse bin
    assert zv.validate(path, level=5).ok


def test_length_keeps_the_longest_objects(tmp_path: Path, walks: list) -> None:
    path = tmp_path / "len.zv"
    levels = zv.Levels(count=2, objects="length", objects_kept=12)
    zv.write_polylines(path, walks, chunk_shape=16.0, levels=levels, progress=False)
    lengths = np.array(
        [np.sqrt((np.diff(w.astype(np.float64), axis=0) ** 2).sum(axis=1)).sum() for w in walks]
    )
    want = np.zeros(len(walks), bool)
    want[np.lexsort((np.arange(len(walks)), -lengths))[:12]] = True
    for level in (1, 2):
        np.testing.assert_array_equal(_kept(path, level), want)
        attrs = _level_attributes(path, level)
        assert attrs["coarsening"]["objects"] == {"rule": "length", "count": 12}
        assert (attrs["sparsity_strategy"], attrs["kept_object_count"]) == ("length", 12)
    assert zv.validate(path, level=5).ok


def test_an_append_rewrites_only_the_coarse_files_that_change(tmp_path: Path, walks: list) -> None:
    path, one = tmp_path / "app.zv", tmp_path / "one.zv"
    levels = zv.Levels(count=2)
    zv.write_polylines(one, walks, chunk_shape=16.0, levels=levels, progress=False)
    zv.write_polylines(path, walks[:-3], chunk_shape=16.0, levels=levels, progress=False)
    before = {
        p: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes())
        for p in path.rglob("*")
        if p.is_file()
    }
    zv.write_polylines(path, walks[-3:], mode="a", progress=False)
    assert files(path) == files(one)
    coarse = [p for p in path.rglob("*") if p.is_file() and p.relative_to(path).parts[0] != "0"]
    same = [p for p in coarse if p in before and before[p][2] == p.read_bytes()]
    assert 0 < len(same) < len(coarse)  # some coarse files change, most do not
    for p in same:
        if p.name != "zarr.json":
            assert (p.stat().st_ino, p.stat().st_mtime_ns) == before[p][:2], p
    assert zv.validate(path, level=5).ok
    streamed = tmp_path / "streamed.zv"
    zv.write_polylines(streamed, walks[:-3], chunk_shape=16.0, levels=levels, progress=False)
    with zv.ObjectWriter(streamed, kind="polyline", mode="a", progress=False) as writer:
        writer.append(walks[-3:-1])
        writer.append(walks[-1:])
    assert files(streamed) == files(one)


def test_build_levels_rebuilds_and_removes_levels(tmp_path: Path, walks: list) -> None:
    path = tmp_path / "b.zv"
    zv.write_polylines(path, walks, chunk_shape=16.0, levels=2, progress=False)
    stages: list[Any] = []
    assert zv.build_levels(path, 1, progress=lambda *a: stages.append(a)) == 1
    assert stages[-1] == ("levels", 1, 1)
    assert not (path / "2").exists()
    assert len(zv.open(path).levels) == 2
    assert zv.build_levels(path, zv.Levels(count=0), progress=False) == 0
    plain = tmp_path / "plain.zv"
    zv.write_polylines(plain, walks, chunk_shape=16.0, progress=False)
    assert files(path) == files(plain)  # a format 1.2 store again


def test_the_command_line_builds_object_levels(tmp_path: Path, walks: list) -> None:
    path, one = tmp_path / "cli.zv", tmp_path / "one.zv"
    zv.write_polylines(path, walks, chunk_shape=16.0, progress=False)
    levels = zv.Levels(count=2, objects="coverage", objects_per_cell=3)
    zv.write_polylines(one, walks, chunk_shape=16.0, levels=levels, progress=False)
    args = ["build-levels", str(path), "--levels", "2", "--objects", "coverage"]
    assert main([*args, "--objects-per-cell", "3"]) == 0
    assert files(path) == files(one)


def test_levels_are_refused_with_mode_a_and_for_kinds_without_a_builder(tmp_path: Path) -> None:
    line = np.zeros((2, 3), np.float32)
    with pytest.raises(zv.InvalidInputError, match="mode='a'"):
        zv.ObjectWriter(tmp_path / "x.zv", kind="polyline", mode="a", levels=1)
    missing = [kind for kind in KINDS if object_writer(kind).levels is None]
    for kind in missing:
        with pytest.raises(zv.InvalidInputError, match="levels"):
            zv.ObjectWriter(tmp_path / "y.zv", kind=kind, chunk_shape=1.0, levels=1)
    with pytest.raises(zv.InvalidInputError, match="objects"):
        zv.Levels(objects="random")
    del line


def test_a_failed_build_leaves_the_store_as_it_was(
    tmp_path: Path, walks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.zv"
    zv.write_polylines(path, walks, chunk_shape=16.0, levels=1, progress=False)
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}

    def fail(*args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("zarr_vectors.update.object_levels.commit_root", fail)
    with pytest.raises(OSError, match="disk full"):
        zv.build_levels(path, 2, progress=False)
    assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file()} == before


def test_an_append_in_place_keeps_the_levels(walks: list) -> None:
    levels = zv.Levels(count=2, objects="coverage", objects_per_cell=2)
    one, appended = MemoryStore(), MemoryStore()
    zv.write_polylines(one, walks, chunk_shape=16.0, levels=levels, progress=False)
    zv.write_polylines(appended, walks[:-5], chunk_shape=16.0, levels=levels, progress=False)
    zv.write_polylines(appended, walks[-5:], mode="a", progress=False)
    assert object_cases.keys(appended) == object_cases.keys(one)
    assert zv.build_levels(appended, 1, progress=False) == 1
    assert not [k for k in object_cases.keys(appended) if k.startswith("2/")]


def _stalled_counts(path: Path, walks: list) -> tuple[int, np.ndarray]:
    """The last level without sparsity (coarse bin = chunk here) and its per-object counts."""
    store = zv.open(path)
    last = max(i.level for i in store.levels[1:] if "objects" not in _coarsening(path, i.level))
    counts = np.asarray(zarr.open_array(path / str(last) / "object_vertex_counts")[:])
    return last, counts


def _coarsening(path: Path, level: int) -> dict[str, Any]:
    return dict(_level_attributes(path, level)["coarsening"])


@pytest.mark.parametrize("target", [60, 200])
def test_auto_bounds_a_crowded_store_by_coverage(tmp_path: Path, walks: list, target: int) -> None:
    path = tmp_path / "auto.zv"
    zv.write_polylines(
        path,
        walks,
        chunk_shape=16.0,
        bin_shape=2.0,
        levels=zv.Levels(target=target),
        progress=False,
    )
    store = zv.open(path)
    stalled, counts = _stalled_counts(path, walks)
    assert store.levels[stalled].vertex_count > target  # runs alone stop above the target
    top = store.levels[-1]
    assert top.level == stalled + 1
    assert top.vertex_count <= target
    assert top.bin_shape == store.levels[stalled].bin_shape == (16.0, 16.0, 16.0)

    def vertices(per_cell: int) -> int:
        return int(counts[_coverage_by_numpy(walks, np.asarray(top.bin_shape), per_cell)].sum())

    per_cell = _coarsening(path, top.level)["objects"]["per_cell"]
    assert vertices(per_cell) == top.vertex_count  # kept objects keep their coarse vertices
    assert vertices(per_cell + 1) > target  # the finest per_cell the target allows
    np.testing.assert_array_equal(
        _kept(path, top.level), _coverage_by_numpy(walks, np.asarray(top.bin_shape), per_cell)
    )
    assert _level_attributes(path, top.level)["sparsity_strategy"] == "spatial_coverage"
    assert zv.validate(path, level=5).ok


def test_auto_bounded_levels_are_the_same_from_every_path(tmp_path: Path, walks: list) -> None:
    levels = zv.Levels(target=60)
    one, after, appended = tmp_path / "one.zv", tmp_path / "after.zv", tmp_path / "app.zv"
    zv.write_polylines(one, walks, chunk_shape=16.0, levels=levels, progress=False)
    assert "objects" in _coarsening(one, len(zv.open(one).levels) - 1)
    zv.write_polylines(after, walks, chunk_shape=16.0, progress=False)
    zv.build_levels(after, levels, progress=False)
    zv.write_polylines(appended, walks[:-7], chunk_shape=16.0, levels=levels, progress=False)
    zv.write_polylines(appended, walks[-7:], mode="a", progress=False)
    streamed = tmp_path / "streamed.zv"
    with zv.ObjectWriter(
        streamed, kind="polyline", chunk_shape=16.0, levels=levels, progress=False
    ) as writer:
        writer.append(walks[:30])
        writer.append(walks[30:])
    want = files(one)
    for path in (after, appended, streamed):
        assert files(path) == want, path.name


def test_an_explicit_rule_or_count_is_not_bounded(tmp_path: Path, walks: list) -> None:
    rule, counted = tmp_path / "rule.zv", tmp_path / "counted.zv"
    asked = zv.Levels(target=60, objects="coverage", objects_per_cell=3)
    zv.write_polylines(rule, walks, chunk_shape=16.0, levels=asked, progress=False)
    for info in zv.open(rule).levels[1:]:
        assert _coarsening(rule, info.level)["objects"]["per_cell"] == 3
    zv.write_polylines(counted, walks, chunk_shape=16.0, levels=2, progress=False)
    assert all("objects" not in _coarsening(counted, i.level) for i in zv.open(counted).levels[1:])
