"""Issue 34, finding 4: a write killed at any step of its commit leaves the old or the new store.

A child process runs a write, an append or a streaming overwrite, and SIGKILLs itself at a
named step of the commit (:data:`zarr_vectors.store.commit.step_hook`), or in the middle of
writing the staged store. Whatever the step, the destination then opens as the old or the new
store and validates at level 3; what the write left beside it is named by ``zv.validate``
(``L1.interrupted_write``) and removed by the next write. The same runs with the exchange
call taken away exercise the fallback commit record, which opening rolls forward or back.

Children are forked from a server that has imported zarr_vectors once, so a kill costs
tens of milliseconds, not an interpreter start.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.cli import main
from zarr_vectors.store import commit
from zarr_vectors.store.io import StoreIO

OLD = np.random.default_rng(0).uniform(0, 20, (300, 3))
NEW = np.random.default_rng(1).uniform(0, 20, (120, 3))
LINES = [np.cumsum(np.random.default_rng(k).normal(0, 1, (10, 3)), axis=0) for k in range(6)]

DURING = "during"
"""Not a commit step: the child dies at its second batch of keys written to the staging."""

REPLACEMENT_STEPS = ["cleaned", "staging", DURING, "staged", "exchanged", "committed", None]
FALLBACK_STEPS = ["staged", "recorded", "retired", "moved", "committed"]
FRESH_STEPS = ["cleaned", "staging", DURING, "staged", "moved", "committed", None]


def _write(path: str) -> None:
    zv.write_points(path, NEW, chunk_shape=5.0, mode="w", progress=False)


def _append(path: str) -> None:
    zv.append_points(path, NEW, progress=False)


def _append_objects(path: str) -> None:
    zv.append_polylines(path, LINES[3:], progress=False)


def _stream(path: str) -> None:
    with zv.PointWriter(path, chunk_shape=5.0, mode="w", progress=False) as writer:
        writer.append(NEW[:60])
        writer.append(NEW[60:])


def _write_stream(path: str) -> None:
    zv.write_points_stream(path, [NEW[:50], NEW[50:]], chunk_shape=5.0, mode="w")


def _object_order(path: str) -> None:
    """The object-ordered copy added out of core (level 0 read a chunk at a time)."""
    zv.build_object_order(path, memory_budget=1, progress=False)


SCENARIOS: dict[str, Any] = {
    "write_points": _write,
    "append_points": _append,
    "append_polylines": _append_objects,
    "PointWriter": _stream,
    "write_points_stream": _write_stream,
    "build_object_order": _object_order,
}


def _die_at(step: str | None) -> None:
    """Make this process SIGKILL itself when ``step`` is reached."""

    def hook(name: str) -> None:
        if name == step:
            os.kill(os.getpid(), signal.SIGKILL)

    commit.step_hook = hook
    if step == DURING:
        set_many = StoreIO.set_many
        calls = [0]

        def dying_set_many(self: StoreIO, items: Any) -> None:
            calls[0] += 1
            if calls[0] == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            set_many(self, items)

        StoreIO.set_many = dying_set_many  # type: ignore[method-assign]


def _child(scenario: str, path: str, step: str | None, fallback: bool) -> None:
    if fallback:
        commit._renameat2 = None
    _die_at(step)
    SCENARIOS[scenario](path)


@pytest.fixture(scope="module")
def spawner() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.store.warm_writer", "tests.store.test_commit_kills"])
    return context


def _run(
    context: multiprocessing.context.ForkServerContext,
    scenario: str,
    path: Path,
    step: str | None,
    *,
    fallback: bool = False,
) -> int | None:
    child = context.Process(target=_child, args=(scenario, os.fspath(path), step, fallback))
    child.start()
    child.join(timeout=120)
    return child.exitcode


def _old_store(path: Path, scenario: str) -> int:
    """Write the store the child changes; return its vertex count."""
    if scenario == "append_polylines":
        zv.write_polylines(path, LINES[:3], chunk_shape=5.0)
        return sum(len(line) for line in LINES[:3])
    ids = np.arange(len(OLD)) % 7 if scenario == "build_object_order" else None
    zv.write_points(path, OLD, object_ids=ids, chunk_shape=5.0)
    return len(OLD)


def _new_count(scenario: str, old: int) -> int:
    if scenario == "build_object_order":
        return old
    if scenario == "append_polylines":
        return sum(len(line) for line in LINES)
    return old + len(NEW) if scenario == "append_points" else len(NEW)


def _siblings(path: Path, *, lock: bool = False) -> list[str]:
    """Names beside the store that an interrupted write left; with ``lock``, also the writer
    lock file a killed writer leaves (not a leftover: the next writer removes it)."""
    return sorted(
        p.name
        for p in path.parent.iterdir()
        if p.name != path.name and (lock or p.name != f".{path.name}.zv-lock")
    )


def _check_cleared_by_next_write(path: Path) -> None:
    """The next write to the destination removes whatever the killed one left."""
    zv.write_points(path, OLD[:10], chunk_shape=5.0, mode="w", progress=False)
    assert _siblings(path, lock=True) == []
    assert zv.validate(path, level=3).ok


FULL_MATRIX = ("write_points", "append_points")
"""Killed at every step in the default run; the other scenarios share their commit code,
so only their steps that differ (their own writing, the swap) run by default."""


def _cases() -> list[Any]:
    cases = []
    for scenario in SCENARIOS:
        for step in REPLACEMENT_STEPS:
            default = scenario in FULL_MATRIX or step in (DURING, "staged", "exchanged")
            marks = () if default else (pytest.mark.slow,)
            cases.append(pytest.param(scenario, step, marks=marks, id=f"{scenario}-{step}"))
    return cases


@pytest.mark.parametrize(("scenario", "step"), _cases())
def test_a_crash_in_the_commit_window_keeps_the_store(
    spawner: Any, tmp_path: Path, scenario: str, step: str | None
) -> None:
    path = tmp_path / "s.zv"
    old = _old_store(path, scenario)
    code = _run(spawner, scenario, path, step)
    assert code == (0 if step is None else -signal.SIGKILL)
    assert zv.open(path).vertex_count in (old, _new_count(scenario, old))
    if step in ("exchanged", "committed", None):
        assert zv.open(path).vertex_count == _new_count(scenario, old)
    if scenario == "build_object_order":  # the copy and format 1.7 come together, or neither
        copied = (path / "0" / "object_order").is_dir()
        assert copied == (zv.open(path).metadata["zarr_vectors_version"] == "1.7")
        assert copied or step not in ("exchanged", "committed", None)
    report = zv.validate(path, level=3)
    assert report.ok
    named = {p.path for p in report.warnings if p.check_id == "L1.interrupted_write"}
    assert named == {f"../{name}" for name in _siblings(path)}
    _check_cleared_by_next_write(path)


@pytest.mark.parametrize("step", FALLBACK_STEPS)
@pytest.mark.parametrize("scenario", ["write_points", "append_points"])
def test_a_crash_in_the_commit_window_without_exchange_is_rolled_forward_or_back(
    spawner: Any, tmp_path: Path, scenario: str, step: str
) -> None:
    path = tmp_path / "s.zv"
    old = _old_store(path, scenario)
    assert _run(spawner, scenario, path, step, fallback=True) == -signal.SIGKILL
    expected = old if step in ("staged", "recorded") else _new_count(scenario, old)
    assert zv.open(path).vertex_count == expected  # "retired": rolled forward by open
    assert zv.validate(path, level=3).ok
    _check_cleared_by_next_write(path)


@pytest.mark.parametrize("scenario", ["write_points", "append_points"])
def test_a_write_after_a_cut_fallback_commit_finishes_it_first(
    spawner: Any, tmp_path: Path, scenario: str
) -> None:
    """Killed between the two renames, then written again without opening it first."""
    path = tmp_path / "s.zv"
    old = _old_store(path, scenario)
    assert _run(spawner, scenario, path, "retired", fallback=True) == -signal.SIGKILL
    assert not path.exists()
    with pytest.raises(zv.StoreExistsError, match='pass mode="w"'):
        zv.write_points(path, OLD[:10], chunk_shape=5.0)  # the rolled-forward store is kept
    assert zv.open(path).vertex_count == _new_count(scenario, old)
    _check_cleared_by_next_write(path)


@pytest.mark.parametrize("step", FRESH_STEPS)
def test_a_killed_fresh_write_leaves_nothing_partial_at_the_destination(
    spawner: Any, tmp_path: Path, step: str | None
) -> None:
    path = tmp_path / "s.zv"
    _run(spawner, "write_points", path, step)
    if step in ("moved", "committed", None):
        assert zv.open(path).vertex_count == len(NEW)
        assert zv.validate(path, level=3).ok
    elif step == "cleaned":
        assert _siblings(path) == []
        with pytest.raises(zv.StoreNotFoundError, match=r"the path does not exist$"):
            zv.open(path)
    else:  # the staging directory is left beside a missing destination, and named
        assert not path.exists()
        assert [n[: len(".s.zv.zv-writing-")] for n in _siblings(path)] == [".s.zv.zv-writing-"]
        with pytest.raises(zv.StoreNotFoundError, match=r"interrupted write left .*rm -rf"):
            zv.open(path)
    _check_cleared_by_next_write(path)


def test_leftovers_of_a_running_write_are_not_taken(tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    with zv.PointWriter(path, chunk_shape=5.0, mode="w", progress=False) as writer:
        writer.append(OLD)
        spill = [p for p in tmp_path.iterdir() if ".zv-spill-" in p.name]
        assert len(spill) == 1
        assert commit.leftovers(path) == []  # held by this writer
        zv.write_points(tmp_path / "s.zv", NEW, chunk_shape=5.0, progress=False)
        assert spill[0].exists()
        writer.append(NEW)
    assert _siblings(path) == []


def test_leftovers_are_named_by_validate_info_and_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.zv"
    zv.write_points(path, OLD, chunk_shape=5.0, progress=False)
    left = tmp_path / ".s.zv.zv-writing-0123abcd"
    left.mkdir()
    (left / "zarr.json").write_text("{}")
    report = zv.validate(path)
    assert report.ok
    assert [(p.check_id, p.path) for p in report.warnings] == [
        ("L1.interrupted_write", "../.s.zv.zv-writing-0123abcd")
    ]
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "interrupted_write" in out
    assert f"rm -rf {left}" in out
    assert main(["info", str(path), "--json"]) == 0
    assert "rm -rf" in json.loads(capsys.readouterr().out)["interrupted_write"]
    shutil.rmtree(path)
    with pytest.raises(zv.StoreNotFoundError, match="interrupted write left 1 hidden sibling"):
        zv.open(path)
    assert {p.check_id for p in zv.validate(path).problems} == {
        "L1.store_exists",
        "L1.interrupted_write",
    }
    zv.write_points(path, OLD, chunk_shape=5.0, progress=False)
    assert _siblings(path) == []


def test_a_damaged_commit_record_moves_no_other_directory(tmp_path: Path) -> None:
    """A record naming a directory that is not a sibling of the store (``../x``, another
    store) is removed without moving anything."""
    path = tmp_path / "s.zv"
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("data")
    for name in ("other", "../other", f".{path.name}.zv-spill-1", "/tmp"):
        (tmp_path / f".{path.name}.zv-commit").write_text(json.dumps({"new": name, "old": name}))
        assert commit.recover(path) is False
        assert not path.exists()
        assert (other / "keep.txt").read_text() == "data"
        assert not (tmp_path / f".{path.name}.zv-commit").exists()
