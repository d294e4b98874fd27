"""The command line: demo, info, validate, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.cli import main


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "s.zarrvectors"
    positions = np.random.default_rng(0).uniform(0, 100, (2000, 3))
    zv.write_points(path, positions, chunk_shape=25.0, attributes={"a": np.arange(2000)})
    return path


def test_demo_runs_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo.zarrvectors"
    assert main(["demo", "--dir", str(out), "--points", "20000"]) == 0
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


def test_console_script_is_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "zarr_vectors.cli", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.strip() == zv.__version__
