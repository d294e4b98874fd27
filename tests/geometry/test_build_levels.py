"""``build_levels`` adds to a stored point cloud the levels ``write_points(levels=...)``
writes, byte for byte, as a new version; a failed build leaves the store as it was."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from tests.geometry import object_cases
from zarr_vectors.cli import main
from zarr_vectors.update import point_levels as build_module


def _files(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _root_doc(raw: bytes) -> Any:
    doc = json.loads(raw)
    attrs = doc.get("attributes", doc)
    attrs.pop("commit", None)
    attrs.pop("software", None)
    return doc


def _inputs(seed: int = 4, n: int = 20_000) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    positions = (rng.random((n, 3)) * 100).astype(np.float32)
    attributes = {
        "b": rng.integers(0, 5, n).astype(np.int16),
        "a": rng.random((n, 2)),
    }
    return positions, attributes


def _write(path: pathlib.Path, levels: Any, options: zv.WriteOptions | None = None) -> None:
    positions, attributes = _inputs()
    zv.write_points(
        path,
        positions,
        chunk_shape=25.0,
        attributes=attributes,
        object_ids=np.arange(positions.shape[0]) % 7,
        levels=levels,
        options=options,
        progress=False,
    )


@pytest.mark.parametrize(
    ("levels", "options"),
    [
        (zv.Levels(count=3, per_bin=16), None),
        (zv.Levels(count=2, method="aggregate", reductions={"b": "max"}), None),
        (zv.Levels(target=2000), zv.WriteOptions(shard_chunks=2, rows_per_block=256)),
    ],
)
def test_build_levels_writes_the_levels_of_one_write(
    tmp_path: pathlib.Path, levels: Any, options: zv.WriteOptions | None
) -> None:
    once, after = tmp_path / "once.zarr", tmp_path / "after.zarr"
    _write(once, levels, options)
    _write(after, None, options)
    built = zv.build_levels(after, levels)
    assert built == len(zv.open(once).metadata["multiscales"][0]["datasets"]) - 1 > 0
    a, b = _files(once), _files(after)
    assert sorted(a) == sorted(b)
    for key, raw in a.items():
        if key in ("zarr.json", ".zattrs"):
            assert _root_doc(raw) == _root_doc(b[key])
        elif key != "metadata.json":
            assert raw == b[key], key
    assert json.loads(b["zarr.json"])["attributes"]["commit"]["serial"] == 2
    assert zv.validate(after, level=5).ok


def test_nothing_to_build_leaves_the_store(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "p.zarr"
    _write(path, None)
    before = _files(path)
    assert zv.build_levels(path, None) == 0
    assert zv.build_levels(path, zv.Levels(target=10**9)) == 0
    assert _files(path) == before
    assert zv.open(path).metadata["zarr_vectors_version"] == "1.6"


def test_a_store_with_levels_gets_them_built_again(tmp_path: pathlib.Path) -> None:
    path, one = tmp_path / "p.zarr", tmp_path / "one.zarr"
    _write(path, 1)
    asked = zv.Levels(count=2, per_bin=16)
    assert zv.build_levels(path, asked) == 2
    _write(one, asked)
    assert object_cases.files(path) == object_cases.files(one)


def test_object_stores_get_the_levels_of_their_writer(tmp_path: pathlib.Path) -> None:
    lines = [np.cumsum(np.ones((40, 3)), axis=0) + k for k in range(3)]
    path, one = tmp_path / "lines.zarr", tmp_path / "one.zarr"
    zv.write_polylines(path, lines, chunk_shape=16.0, progress=False)
    zv.write_polylines(one, lines, chunk_shape=16.0, levels=2, progress=False)
    assert zv.build_levels(path, 2, progress=False) == 2
    assert object_cases.files(path) == object_cases.files(one)


def test_a_failed_build_leaves_the_store_as_it_was(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.zarr"
    _write(path, None)
    before = _files(path)
    real = build_module.build_point_levels

    def fail_after_building(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        raise OSError("disk full")

    monkeypatch.setattr(build_module, "build_point_levels", fail_after_building)
    with pytest.raises(OSError, match="disk full"):
        zv.build_levels(path, 2)
    assert _files(path) == before
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".zv-lock")) == [
        "p.zarr"
    ]


def test_the_command_line_builds_levels(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.zarr"
    _write(path, None)
    args = ["build-levels", str(path), "--levels", "2", "--per-bin", "16"]
    assert main(args) == 0
    assert "2 levels of detail built" in capsys.readouterr().out
    datasets = zv.open(path).metadata["multiscales"][0]["datasets"]
    assert [d["level"] for d in datasets] == [0, 1, 2]
    assert main(["build-levels", str(path), "--levels", "0"]) == 0  # removes them
    assert "no levels of detail (level 0 only)" in capsys.readouterr().out
    assert len(zv.open(path).levels) == 1


def test_build_levels_within_a_small_budget_writes_the_same_levels(tmp_path: pathlib.Path) -> None:
    """1 MiB: level 0 read in three batches, the first candidates kept but not level 0's
    rows, so the coarser candidates read level 0 back chunk by chunk."""
    levels = zv.Levels(count=3, per_bin=16)
    once, after = tmp_path / "once.zarr", tmp_path / "after.zarr"
    _write(once, levels)
    _write(after, None)
    assert zv.build_levels(after, levels, progress=False, memory_budget=2**20) == 3
    a, b = _files(once), _files(after)
    assert sorted(a) == sorted(b)
    assert all(a[k] == b[k] for k in a if k not in ("zarr.json", ".zattrs", "metadata.json"))
