"""The command line: demo, info, validate, exit codes."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors import converters
from zarr_vectors.cli import (
    CONVERT_OPTIONS,
    DEBUG_ENV,
    EXIT_BROKEN_PIPE,
    EXIT_BUG,
    FLAGS,
    in_flags,
    main,
)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "s.zarrvectors"
    positions = np.random.default_rng(0).uniform(0, 100, (2000, 3))
    zv.write_points(path, positions, chunk_shape=25.0, attributes={"a": np.arange(2000)})
    return path


def test_demo_runs_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "zarr-vectors-demo.zarrvectors"
    assert main(["demo", "--dir", str(tmp_path), "--points", "20000"]) == 0
    text = capsys.readouterr().out
    assert "wrote" in text
    assert "bbox query" in text
    assert "validate (level 3): valid" in text
    assert "brute force agrees: True" in text
    assert zv.open(out).vertex_count == 20000


def test_info(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(store_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["vertex_count"] == 2000
    assert doc["attributes"] == ["a"]
    assert doc["geometry_type"] == "point_cloud"
    assert doc["chunk_shape"] == [25.0] * 3
    assert main(["info", str(store_path)]) == 0
    assert "vertex_count" in capsys.readouterr().out


def test_validate_exit_codes(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(store_path)]) == 0
    assert "valid" in capsys.readouterr().out
    assert main(["validate", str(store_path), "--level", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    doc = json.loads((store_path / "zarr.json").read_text())
    doc["attributes"]["chunk_shape"] = [25.0, -1.0, 25.0]
    (store_path / "zarr.json").write_text(json.dumps(doc))
    assert main(["validate", str(store_path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert report["problems"]
    assert all({"check_id", "severity", "path", "message"} <= set(p) for p in report["problems"])


def test_unreadable_store_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(tmp_path / "missing")]) == 2
    assert "error" in capsys.readouterr().err


class TTYStringIO(io.StringIO):
    """A captured stream that claims to be a terminal."""

    def isatty(self) -> bool:
        return True


def _vertex_shards(store: Path) -> list[Path]:
    """The shard files of ``0/vertices``, in C order of their chunk index."""
    root = store / "0" / "vertices" / "c"
    files = [f for f in root.rglob("*") if f.is_file()]
    return sorted(files, key=lambda f: tuple(int(part) for part in f.relative_to(root).parts))


def test_validate_level3_valid_and_damaged(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(store_path), "--level", "3"]) == 0
    assert "valid at level 3" in capsys.readouterr().out
    _vertex_shards(store_path)[0].unlink()
    assert main(["validate", str(store_path), "--level", "3"]) == 1
    captured = capsys.readouterr()
    assert "INVALID at level 3" in captured.out
    assert captured.err == ""


def test_validate_missing_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "missing.zarrvectors")
    assert main(["validate", missing]) == 2
    captured = capsys.readouterr()
    assert "L1.store_exists" in captured.out
    assert "not a readable store" in captured.err
    assert main(["validate", missing, "--json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [p["check_id"] for p in report["problems"]] == ["L1.store_exists"]


@pytest.mark.parametrize("content", [None, "notes.txt"], ids=["empty", "other-files"])
def test_validate_non_store_directory_exits_2(
    tmp_path: Path, content: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    if content is not None:
        (folder / content).write_text("not a store")
    assert main(["validate", str(folder), "--level", "3"]) == 2
    assert "not a readable store" in capsys.readouterr().err


def test_validate_sample_passes_through(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    last = _vertex_shards(store_path)[-1]
    last.write_bytes(b"\xff" * last.stat().st_size)
    assert main(["validate", str(store_path), "--level", "3", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert "L3.shard_index" in {p["check_id"] for p in report["problems"]}
    assert report["notes"] == []
    assert main(["validate", str(store_path), "--level", "3", "--sample", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert any("read 1 of 64 occupied chunks (sample=1)" in n for n in report["notes"])


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "x"])
def test_validate_sample_must_be_positive(
    store_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(store_path), "--sample", value])
    assert exc.value.code == 2
    assert "--sample" in capsys.readouterr().err


def test_validate_json_is_all_of_stdout(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(store_path), "--level", "3", "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["ok"] is True
    assert report["level"] == 3
    assert "L3.counts_range" in report["checks_run"]
    assert captured.err == ""


def test_validate_draws_progress_on_a_tty(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tty = TTYStringIO()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["validate", str(store_path), "--level", "3"]) == 0
    drawn = tty.getvalue()
    assert drawn.startswith("\rvalidate level 0: ")
    assert "100%" in drawn
    assert "64/64" in drawn
    assert drawn.endswith("\n")
    assert drawn.count("\n") == 1
    assert "\r" not in capsys.readouterr().out


def test_validate_no_progress_without_a_tty(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(store_path), "--level", "3"]) == 0
    assert capsys.readouterr().err == ""


def test_validate_no_progress_when_json_goes_to_a_pipe(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tty = TTYStringIO()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["validate", str(store_path), "--level", "3", "--json"]) == 0
    assert tty.getvalue() == ""
    assert json.loads(capsys.readouterr().out)["ok"] is True
    out = TTYStringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["validate", str(store_path), "--level", "3", "--json"]) == 0
    assert "64/64" in tty.getvalue()
    assert json.loads(out.getvalue())["ok"] is True


def test_validate_no_progress_below_level_3(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tty = TTYStringIO()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["validate", str(store_path), "--level", "2"]) == 0
    assert tty.getvalue() == ""


def test_console_script_is_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "zarr_vectors.cli", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.strip() == zv.__version__


def _run_with_stdout_closed(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run the command with stdout a pipe whose reader has gone (as ``... | head`` ends)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "zarr_vectors.cli", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
@pytest.mark.parametrize("command", [["validate", "--json"], ["info"], ["info", "--json"]])
def test_broken_pipe_ends_quietly(store_path: Path, command: list[str]) -> None:
    done = _run_with_stdout_closed(*command, str(store_path))
    assert done.stderr == ""
    assert done.returncode == EXIT_BROKEN_PIPE == 141


def test_broken_pipe_in_process_returns_141(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["validate", "--json", str(store_path)]) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""


def _boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError("boom\nsecond line")


def test_unexpected_error_is_one_line_naming_a_bug(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    monkeypatch.setattr(zv, "validate", _boom)
    assert main(["validate", str(store_path)]) == EXIT_BUG == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(
        "zarr-vectors: error: validate failed unexpectedly: RuntimeError: boom second line -- "
        f"this is a bug in zarr-vectors {zv.__version__}; please report it"
    )
    assert "--debug" in captured.err
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("how", ["flag before", "flag after", "environment"])
def test_debug_shows_the_traceback(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.setattr(zv, "validate", _boom)
    argv = ["validate", str(store_path)]
    if how == "flag before":
        argv.insert(0, "--debug")
    elif how == "flag after":
        argv.append("--debug")
    else:
        monkeypatch.setenv(DEBUG_ENV, "1")
    with pytest.raises(RuntimeError, match="boom"):
        main(argv)


def test_ctrl_c_is_one_line(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(zv, "validate", interrupt)
    assert main(["validate", str(store_path)]) == 130
    assert capsys.readouterr().err == "zarr-vectors: error: interrupted\n"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ('x exists; pass mode="w" to replace it', "x exists; pass --overwrite to replace it"),
        ("x exists; pass mode='w' to replace it", "x exists; pass --overwrite to replace it"),
        ("mode='w-' (default) or 'w'", "mode='w-' (default) or 'w'"),
        ("the format of 'a'; give format=", "the format of 'a'; give --format"),
        ("pass allow_degenerate=True to keep", "pass -o allow_degenerate=true to keep"),
        ("choose them with columns=[...])", "choose them with -o columns=[...])"),
        ("give ids= or group=, not both", "give -o ids= or -o group=, not both"),
        ("range (start=3, count=5) and lo=[1, 2]", "range (start=3, count=5) and lo=[1, 2]"),
        ("given chunk_shape=[1.0, 2.0] is bad", "given chunk_shape=[1.0, 2.0] is bad"),
        ("pass chunk_shape= to choose", "pass --chunk-shape to choose"),
        ("option(s) chunk_shape, bin_shape", "option(s) --chunk-shape, --bin-shape"),
        ("-o ids= already", "-o ids= already"),
        ("format='ply' and overwrite=False", "format='ply' and overwrite=False"),
        ("split_objects=False, dtype='float32'", "-o split_objects=false, -o dtype='float32'"),
    ],
)  # fmt: skip
def test_messages_speak_in_flags(message: str, expected: str) -> None:
    assert in_flags(message) == expected


def test_messages_keep_what_the_user_typed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert in_flags("no store at 'ids=3': pass mode=\"w\"", ["ids=3"]) == (
        "no store at 'ids=3': pass --overwrite"
    )
    assert in_flags("chunk_shape is required", ["", "x"]) == "--chunk-shape is required"
    odd = tmp_path / "columns=x.zv"
    assert main(["info", str(odd)]) == 2
    assert f"no store at '{odd}'" in capsys.readouterr().err


def _hints_in_raised_messages(folder: Path) -> dict[str, str]:
    """``{keyword: message}`` for each ``keyword=`` in the text of a ``raise`` under ``folder``."""
    hints: dict[str, str] = {}
    for source in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            for part in ast.walk(node.exc):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    for match in re.finditer(r"(?<![\w-])([a-z_][a-z0-9_]*)=", part.value):
                        hints[match.group(1)] = f"{source}: {part.value}"
    return hints


def test_every_keyword_a_conversion_error_names_is_a_flag_or_option() -> None:
    package = Path(zv.__file__).parent
    hints = _hints_in_raised_messages(package / "converters")
    hints |= _hints_in_raised_messages(package / "store")
    assert {"mode", "format", "columns"} <= set(hints)
    for name, where in hints.items():
        assert name in FLAGS or name in CONVERT_OPTIONS, where


def test_every_converter_option_is_known_to_the_cli() -> None:
    names: set[str] = set()
    for converter in (*converters.registry.BUILT_IN, converters.ZARR_VECTORS_V):
        assert isinstance(converter, converters.FileConverter)
        names |= {*converter.import_options, *converter.export_options}
    assert {"group_by", "ids", "group", "reference", "dtype", "columns", "lossy"} <= names
    assert names == CONVERT_OPTIONS


def test_convert_help_lists_the_registered_formats(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "convert a file (PLY, OBJ, STL, SWC" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "ply (.ply), obj (.obj)" in out
    assert "las (.las, .laz)" in out
