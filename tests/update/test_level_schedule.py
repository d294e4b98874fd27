"""The requested level schedule (issue 37): the root records what ``levels=`` asked for
(``level_schedule``, spec §3.1, §4.3.1) and appends rerun it, so a store that could build
fewer levels than asked gains them when an append makes them possible, exactly as one write
of all the data; ``build_levels`` rebuilds or removes a point cloud's levels; and a writer
killed in the level step leaves the store as it was."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import signal
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.geometry.object_cases import files
from zarr_vectors.cli import main
from zarr_vectors.errors import MetadataError
from zarr_vectors.format.levels import check_schedule

CHUNK = 10.0
FIRST = np.array([[1, 1, 1], [2, 2, 2], [15, 15, 15]], np.float32)
"""Two points share a chunk: cap 2 keeps both (skipped), cap 1 reduces: one level."""
MORE = np.array([[3, 3, 3], [25, 25, 25]], np.float32)
"""A third point in that chunk: cap 2 now reduces too, so two levels."""


def _quiet(run: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``run`` without the warning that fewer levels were built than asked for."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="built .* levels of detail")
        return run(*args, **kwargs)


def _coarse(path: Path) -> int:
    return len(zv.open(path).levels) - 1


def _schedule(path: Path) -> Any:
    return json.loads((path / "zarr.json").read_text())["attributes"].get("level_schedule")


POINT_REQUESTS = {
    "count": zv.Levels(count=2, per_bin=2),
    "auto": zv.Levels(count="auto", target=2, per_bin=2),
}


@pytest.mark.parametrize("asked", list(POINT_REQUESTS))
def test_a_point_append_reruns_the_asked_schedule(tmp_path: Path, asked: str) -> None:
    levels = POINT_REQUESTS[asked]
    _quiet(zv.write_points, tmp_path / "a", FIRST, chunk_shape=CHUNK, levels=levels)
    assert _coarse(tmp_path / "a") == 1
    assert _schedule(tmp_path / "a") == levels.to_schedule()
    _quiet(zv.append_points, tmp_path / "a", MORE, progress=False)
    whole = np.concatenate([FIRST, MORE])
    zv.write_points(tmp_path / "once", whole, chunk_shape=CHUNK, levels=levels, progress=False)
    assert _coarse(tmp_path / "once") == 2
    assert files(tmp_path / "a") == files(tmp_path / "once")
    assert zv.validate(tmp_path / "a", level=5).ok


REQUESTS = st.builds(
    zv.Levels,
    count=st.sampled_from([1, 2, 3, "auto"]),
    method=st.sampled_from(["sample", "aggregate"]),
    target=st.integers(1, 30),
    per_bin=st.integers(1, 4),
)


@pytest.mark.slow
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(4, 80),
    cuts=st.lists(st.floats(0.05, 0.95), min_size=1, max_size=3),
    levels=REQUESTS,
)
def test_appends_of_points_give_one_write_of_the_request(
    tmp_path_factory: pytest.TempPathFactory, seed: int, n: int, cuts: list[float], levels: Any
) -> None:
    """Whatever levels the first batch allowed, appends end as one write of all the points
    with the same ``levels=`` (a first batch that allowed none is a format 1.2 store, which
    records no request: it stays without levels)."""
    rng = np.random.default_rng(seed)
    points = (rng.random((n, 2)) * 30).astype(np.float32)
    points[: n // 4] = points[n // 4 : 2 * (n // 4)]  # repeated coordinates
    kw: dict[str, Any] = {"chunk_shape": CHUNK, "bin_shape": 2.5, "progress": False}
    tmp = tmp_path_factory.mktemp("sched")
    ends = [*sorted({max(1, min(n - 1, int(c * n))) for c in cuts}), n]
    _quiet(zv.write_points, tmp / "a", points[: ends[0]], levels=levels, **kw)
    first = _coarse(tmp / "a")
    for a, b in itertools.pairwise(ends):
        _quiet(zv.append_points, tmp / "a", points[a:b], progress=False)
    if not first:  # a format 1.2 store: it records no request and stays without levels
        assert _coarse(tmp / "a") == 0
        return
    _quiet(zv.write_points, tmp / "once", points, levels=levels, **kw)
    assert files(tmp / "a") == files(tmp / "once")


def _walks() -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A short walk that gives one level of the two asked, and one whose runs give two."""
    rng = np.random.default_rng(7)
    first = [np.cumsum(rng.normal(0, 3, (int(rng.integers(3, 8)), 2)), axis=0) + 16]
    more = [np.cumsum(rng.normal(0, 3, (int(rng.integers(3, 12)), 2)), axis=0) + 16]
    return first, more


def test_an_object_append_reruns_the_asked_schedule(tmp_path: Path) -> None:
    first, more = _walks()
    kw: dict[str, Any] = {"chunk_shape": 32.0, "bin_shape": 8.0, "progress": False}
    levels = zv.Levels(count=2)
    _quiet(zv.write_polylines, tmp_path / "a", first, levels=levels, **kw)
    assert _coarse(tmp_path / "a") == 1
    _quiet(zv.append_polylines, tmp_path / "a", more, progress=False)
    zv.write_polylines(tmp_path / "once", first + more, levels=levels, **kw)
    assert _coarse(tmp_path / "once") == 2
    assert files(tmp_path / "a") == files(tmp_path / "once")
    assert _schedule(tmp_path / "a") == levels.to_schedule()


def test_a_store_without_the_schedule_keeps_its_recorded_levels(tmp_path: Path) -> None:
    """A 1.3 store written before ``level_schedule`` existed: the levels as recorded are
    its schedule, so the append keeps one level (the former behaviour)."""
    path = tmp_path / "old"
    _quiet(zv.write_points, path, FIRST, chunk_shape=CHUNK, levels=POINT_REQUESTS["count"])
    root = json.loads((path / "zarr.json").read_text())
    del root["attributes"]["level_schedule"]
    (path / "zarr.json").write_text(json.dumps(root))
    zv.append_points(path, MORE, progress=False)
    assert _coarse(path) == 1
    assert _schedule(path) is None
    assert zv.validate(path, level=5).ok


def test_the_schedule_round_trips_and_is_parsed_strictly() -> None:
    asked = zv.Levels(method="aggregate", reductions={"b": "max", "a": "min"}, count=3)
    record = asked.to_schedule()
    assert list(record["reductions"]) == ["a", "b"]  # sorted: attribute order does not matter
    assert zv.Levels.from_schedule(json.loads(json.dumps(record))) == asked
    for bad in ({**record, "count": 0}, {**record, "per_bin": True}, {"count": 2}, [record]):
        with pytest.raises(MetadataError, match="level_schedule"):
            check_schedule(bad)
    with pytest.raises(MetadataError, match="level_schedule"):
        zv.Levels.from_schedule({**record, "objects": "random"})


def _set_root(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the root attributes of a local store (a 1.3 store has no ``.zattrs``)."""
    root = json.loads((path / "zarr.json").read_text())
    change(root["attributes"])
    (path / "zarr.json").write_text(json.dumps(root))
    assert not (path / ".zattrs").exists()


def test_the_validator_checks_the_schedule(tmp_path: Path) -> None:
    path, plain = tmp_path / "s", tmp_path / "plain"
    _quiet(zv.write_points, path, FIRST, chunk_shape=CHUNK, levels=POINT_REQUESTS["count"])
    assert zv.validate(path, level=2).ok
    _set_root(path, lambda attrs: attrs["level_schedule"].update(count="all"))
    assert [p.check_id for p in zv.validate(path, level=2).errors] == ["L2.level_schedule"]
    zv.write_points(plain, FIRST, chunk_shape=CHUNK, progress=False)
    _set_root(plain, lambda attrs: attrs.update(level_schedule=zv.Levels().to_schedule()))
    found = zv.validate(plain, level=2).errors
    assert [(p.check_id, "no level above 0" in p.message) for p in found] == [
        ("L2.level_schedule", True)
    ]


def test_build_levels_rebuilds_and_removes_point_levels(tmp_path: Path) -> None:
    cloud = np.random.default_rng(4).random((3000, 3)).astype(np.float32) * 40
    kw: dict[str, Any] = {"chunk_shape": 20.0, "progress": False}
    path = tmp_path / "p"
    zv.write_points(path, cloud, levels=zv.Levels(count=3, per_bin=8), **kw)
    again = zv.Levels(count=1, method="aggregate")
    assert zv.build_levels(path, again, progress=False) == 1
    zv.write_points(tmp_path / "once", cloud, levels=again, **kw)
    assert files(path) == files(tmp_path / "once")
    assert main(["build-levels", str(path), "--levels", "0"]) == 0
    zv.write_points(tmp_path / "plain", cloud, **kw)
    assert files(path) == files(tmp_path / "plain")  # a format 1.2 store again
    assert zv.build_levels(path, 0, progress=False) == 0


# Kill tests: a child forked from a warm server dies (SIGKILL) right after the level step
# wrote its files, before the commit; the store must keep every byte.

LINES = [np.cumsum(np.random.default_rng(k).normal(0, 2, (30, 3)), axis=0) for k in range(6)]
CLOUD = np.random.default_rng(3).uniform(0, 20, (400, 3)).astype(np.float32)

KILLS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "append_points": (
        "zarr_vectors.update.point_writer.update_levels",
        lambda path: zv.append_points(path, CLOUD[300:], progress=False),
    ),
    "append_polylines": (
        "zarr_vectors.update.object_merge.commit_levels",
        lambda path: zv.append_polylines(path, LINES[4:], progress=False),
    ),
    "build_levels_points": (
        "zarr_vectors.update.point_levels.build_point_levels",
        lambda path: zv.build_levels(path, zv.Levels(count=2, per_bin=4), progress=False),
    ),
    "build_levels_polylines": (
        "zarr_vectors.update.object_levels.rebuild_levels",
        lambda path: zv.build_levels(path, 1, progress=False),
    ),
}


def _old_store(path: Path, case: str) -> None:
    if case.endswith("polylines"):
        zv.write_polylines(path, LINES[:4], chunk_shape=8.0, levels=2, progress=False)
    else:
        zv.write_points(path, CLOUD[:300], chunk_shape=5.0, levels=zv.Levels(count=2, per_bin=8))


def _dying(where: str) -> None:
    """Replace the function at dotted ``where`` by one that runs it, then SIGKILLs us."""
    module_name, name = where.rsplit(".", 1)
    module = __import__(module_name, fromlist=[name])
    real = getattr(module, name)

    def run_then_die(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(module, name, run_then_die)


def _child(case: str, path: str) -> None:
    where, change = KILLS[case]
    _dying(where)
    change(path)


@pytest.fixture(scope="module")
def spawner() -> Any:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.update.test_level_schedule"])
    return context


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


@pytest.mark.parametrize("case", list(KILLS))
def test_a_kill_in_the_level_step_leaves_the_store(spawner: Any, tmp_path: Path, case: str) -> None:
    path = tmp_path / "s.zv"
    _old_store(path, case)
    before = _tree(path)
    child = spawner.Process(target=_child, args=(case, os.fspath(path)))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == -signal.SIGKILL
    assert _tree(path) == before
    assert zv.validate(path, level=3).ok
