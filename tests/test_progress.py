"""Progress reporting: when a bar is drawn, what it shows, callbacks, closing on error."""

from __future__ import annotations

import io
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors import _progress
from zarr_vectors._progress import (
    Reporter,
    bar_class,
    describe,
    enclosing,
    in_notebook,
    progress_reporter,
    should_draw,
    wants_progress,
)

Update = tuple[Any, int, int]


class TTYStringIO(io.StringIO):
    """A captured stream that claims to be a terminal."""

    def isatty(self) -> bool:
        return True


def _check_stages(updates: list[Update], stages: set[Any]) -> None:
    """Every stage reported is expected, its ``done`` rises and ends at its total."""
    assert {u[0] for u in updates} == stages
    for stage in stages:
        mine = [(done, total) for s, done, total in updates if s == stage]
        done = [d for d, _ in mine]
        assert done == sorted(done)
        assert len({t for _, t in mine}) == 1
        assert mine[-1][0] == mine[-1][1]


def _cloud(n: int = 2000) -> np.ndarray:
    return np.random.default_rng(0).uniform(0, 40, (n, 3))


def _fake_kernel(monkeypatch: pytest.MonkeyPatch, *, kernel: bool) -> None:
    """Pretend to run inside an IPython shell, a Jupyter kernel when ``kernel``."""
    shell = types.SimpleNamespace(kernel=object() if kernel else None)
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))


# -- deciding -------------------------------------------------------------------------------


def test_should_draw_follows_the_choice_then_the_terminal() -> None:
    assert should_draw(True, io.StringIO())
    assert not should_draw(False, TTYStringIO())
    assert should_draw(None, TTYStringIO())
    assert not should_draw(None, io.StringIO())


def test_wants_progress_only_on_a_terminal() -> None:
    assert wants_progress(TTYStringIO())
    assert not wants_progress(io.StringIO())
    assert not wants_progress(TTYStringIO(), json_out=io.StringIO())
    assert wants_progress(TTYStringIO(), json_out=TTYStringIO())
    assert not wants_progress(io.StringIO(), json_out=TTYStringIO())


def test_a_jupyter_kernel_draws_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not in_notebook()
    _fake_kernel(monkeypatch, kernel=False)  # plain IPython in a terminal: not a notebook
    assert not in_notebook()
    _fake_kernel(monkeypatch, kernel=True)
    assert in_notebook()
    assert should_draw(None, io.StringIO())


def test_a_notebook_uses_the_widget_when_ipywidgets_is_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tqdm.notebook import tqdm as notebook_tqdm
    from tqdm.std import tqdm as text_tqdm

    assert bar_class() is text_tqdm
    _fake_kernel(monkeypatch, kernel=True)
    found = {"ipywidgets": True}
    monkeypatch.setattr(
        _progress.importlib.util,
        "find_spec",
        lambda name: object() if found.get(name) else None,
    )
    assert bar_class() is notebook_tqdm
    found["ipywidgets"] = False
    assert bar_class() is text_tqdm


def test_describe_names_each_stage() -> None:
    assert describe(0) == ("validate level 0", "chunk")
    assert describe("write") == ("write chunks", "chunk")
    assert describe("ingest") == ("ingest", "row")
    assert describe("writing chunks") == ("writing chunks", "task")


def test_a_bad_progress_value_is_refused() -> None:
    with pytest.raises(zv.InvalidInputError, match="progress"):
        progress_reporter("yes")  # type: ignore[arg-type]


# -- drawing ---------------------------------------------------------------------------------


def test_one_bar_per_stage_closed_when_the_stage_changes() -> None:
    out = io.StringIO()
    with progress_reporter(True, stream=out) as report:
        for done in range(1, 4):
            report("write", done, 3)
        report(1, 5, 5)
        report("ingest", 7, -1)
    text = out.getvalue()
    assert "write chunks: 100%" in text
    assert "3/3" in text
    assert "validate level 1: 100%" in text
    assert "ingest: 7" in text
    assert text.count("\n") == 3
    assert text.endswith("\n")


def test_a_callback_is_called_and_nothing_drawn(capfd: pytest.CaptureFixture[str]) -> None:
    seen: list[Update] = []
    with progress_reporter(lambda *u: seen.append(u), stream=TTYStringIO()) as report:
        report("write", 1, 2)
    assert seen == [("write", 1, 2)]
    assert capfd.readouterr().err == ""


def test_silent_reporter_is_inactive_and_draws_nothing() -> None:
    out = TTYStringIO()
    with progress_reporter(False, stream=out) as report:
        report("write", 1, 2)
    assert not report.active
    assert out.getvalue() == ""


def test_nested_operations_report_to_the_enclosing_one() -> None:
    seen: list[Update] = []
    with progress_reporter(lambda *u: seen.append(u)) as outer, enclosing(outer):
        with progress_reporter(None) as inner:
            inner("write", 1, 1)
        with progress_reporter(False) as off:
            off("write", 9, 9)
    with progress_reporter(None, stream=io.StringIO()) as after:
        assert not after.active
    assert seen == [("write", 1, 1)]


# -- operations --------------------------------------------------------------------------------


def test_write_points_reports_every_chunk(tmp_path: Path) -> None:
    seen: list[Update] = []
    zv.write_points(tmp_path / "s", _cloud(), chunk_shape=10.0, progress=lambda *u: seen.append(u))
    _check_stages(seen, {"write"})
    assert seen[-1][2] == zv.open(tmp_path / "s").chunk_count


def test_progress_true_draws_on_stderr(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    zv.write_points(tmp_path / "s", _cloud(), chunk_shape=10.0, progress=True)
    err = capfd.readouterr().err
    assert "write chunks: 100%" in err
    assert err.endswith("\n")


def test_default_off_a_terminal_draws_nothing(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    zv.write_points(tmp_path / "s", _cloud(), chunk_shape=10.0)
    zv.open(tmp_path / "s").read()
    zv.validate(tmp_path / "s", level=3)
    captured = capfd.readouterr()
    assert captured.err == ""
    assert captured.out == ""


def test_default_on_a_terminal_draws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tty = TTYStringIO()
    monkeypatch.setattr(sys, "stderr", tty)
    zv.write_points(tmp_path / "s", _cloud(), chunk_shape=10.0)
    assert "write chunks: 100%" in tty.getvalue()


def test_progress_false_is_silent_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tty = TTYStringIO()
    monkeypatch.setattr(sys, "stderr", tty)
    zv.write_points(tmp_path / "s", _cloud(), chunk_shape=10.0, progress=False)
    zv.validate(tmp_path / "s", level=3, progress=False)
    assert tty.getvalue() == ""


def test_a_failing_write_closes_its_bar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from zarr_vectors.write import _level_writer

    closed: list[Reporter] = []
    original = _progress.Reporter.close

    def close(self: Reporter) -> None:
        if self._bar is not None:
            closed.append(self)
        original(self)

    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(_progress.Reporter, "close", close)
    monkeypatch.setattr(_level_writer.LevelWriter, "finish", fail)
    with pytest.raises(OSError, match="disk full"):
        zv.write_points(tmp_path / "s", _cloud(), chunk_shape=10.0, progress=True)
    assert len(closed) == 1
    assert closed[0]._bar is None
    err = capfd.readouterr().err
    assert "write chunks: 100%" in err
    assert err.endswith("\n")
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("kind", ["polyline", "graph", "skeleton", "mesh"])
def test_object_writes_and_appends_report_chunks(tmp_path: Path, kind: str) -> None:
    rng = np.random.default_rng(1)
    path = tmp_path / kind
    lines = [np.cumsum(rng.normal(0, 3, (20, 3)), axis=0) for _ in range(6)]
    positions = np.concatenate(lines)
    chain = np.stack([np.arange(119), np.arange(1, 120)], axis=1)
    chain = chain[(chain[:, 0] + 1) % 20 != 0]
    parents = np.arange(120) - 1
    faces = np.stack([np.arange(118), np.arange(1, 119), np.arange(2, 120)], axis=1)
    writes: dict[str, Callable[..., None]] = {
        "polyline": lambda p, progress, w=zv.write_polylines: w(
            path, lines, chunk_shape=10.0, progress=progress
        ),
        "graph": lambda p, progress: zv.write_graph(
            path, positions, chain, chunk_shape=10.0, progress=progress
        ),
        "skeleton": lambda p, progress: zv.write_skeletons(
            path, positions, parents=parents, chunk_shape=10.0, progress=progress
        ),
        "mesh": lambda p, progress: zv.write_mesh(
            path, positions, faces, chunk_shape=10.0, allow_degenerate=True, progress=progress
        ),
    }
    seen: list[Update] = []
    writes[kind](path, lambda *u: seen.append(u))
    _check_stages(seen, {"write"})
    assert seen[-1][2] == zv.open(path).chunk_count
    if kind != "polyline":
        return
    seen.clear()
    zv.append_polylines(path, [line + 5 for line in lines], progress=lambda *u: seen.append(u))
    _check_stages(seen, {"write", "merge"})
    assert [u for u in seen if u[0] == "merge"][-1][2] == zv.open(path).chunk_count


def test_streaming_and_appending_points_report_their_stages(tmp_path: Path) -> None:
    seen: list[Update] = []
    batches = np.array_split(_cloud(), 3)
    zv.write_points_stream(tmp_path / "s", batches, progress=lambda *u: seen.append(u))
    ingest = [u for u in seen if u[0] == "ingest"]
    assert [u[1] for u in ingest] == [667, 1334, 2000]
    assert {u[2] for u in ingest} == {-1}
    _check_stages([u for u in seen if u[0] != "ingest"], {"sort", "write"})
    seen.clear()
    zv.append_points(tmp_path / "s", _cloud(50) + 30, progress=lambda *u: seen.append(u))
    _check_stages([u for u in seen if u[0] != "ingest"], {"write"})


def test_object_writer_reports_the_merge(tmp_path: Path) -> None:
    seen: list[Update] = []
    rng = np.random.default_rng(2)
    with zv.ObjectWriter(
        tmp_path / "s", kind="polyline", chunk_shape=10.0, progress=lambda *u: seen.append(u)
    ) as writer:
        for _ in range(2):
            writer.append([np.cumsum(rng.normal(0, 3, (30, 3)), axis=0) for _ in range(4)])
    _check_stages(seen, {"merge"})
    assert seen[-1][2] == zv.open(tmp_path / "s").chunk_count


def test_read_reports_chunks_and_returns_the_same_points(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "s", _cloud(), chunk_shape=10.0, attributes={"a": np.arange(2000)})
    store = zv.open(tmp_path / "s")
    seen: list[Update] = []
    reported = store.read(progress=lambda *u: seen.append(u))
    _check_stages(seen, {"read"})
    assert seen[-1][2] == store.chunk_count
    plain = store.read(progress=False)
    np.testing.assert_array_equal(reported.positions, plain.positions)
    np.testing.assert_array_equal(reported.attributes["a"], plain.attributes["a"])
    assert sorted(plain.attributes["a"].tolist()) == list(range(2000))


def test_validate_reports_each_level_by_default_as_a_callback(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "s", _cloud(), chunk_shape=10.0)
    seen: list[Update] = []
    assert zv.validate(tmp_path / "s", level=3, progress=lambda *u: seen.append(u)).ok
    _check_stages(seen, {0})


def test_convert_reports_reading_and_writing(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    zv.write_points(tmp_path / "s", _cloud(), chunk_shape=10.0)
    seen: list[Update] = []
    zv.convert(tmp_path / "s", tmp_path / "p.csv", progress=lambda *u: seen.append(u))
    _check_stages(seen, {"read", "write file"})
    assert [u[0] for u in seen][-1] == "write file"
    seen.clear()
    zv.convert(tmp_path / "p.csv", tmp_path / "t", progress=lambda *u: seen.append(u))
    assert seen[0] == ("read file", 0, 1)
    _check_stages(seen[1:], {"write"})


def test_cli_convert_draws_only_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from zarr_vectors.cli import main

    zv.write_points(tmp_path / "s", _cloud(), chunk_shape=10.0, progress=False)
    assert main(["convert", str(tmp_path / "s"), str(tmp_path / "a.csv")]) == 0
    assert capsys.readouterr().err == ""
    tty = TTYStringIO()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["convert", str(tmp_path / "a.csv"), str(tmp_path / "t")]) == 0
    drawn = tty.getvalue()
    assert "read file: 100%" in drawn
    assert "write chunks: 100%" in drawn
    assert "\r" not in capsys.readouterr().out
