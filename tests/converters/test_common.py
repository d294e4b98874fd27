"""Helpers shared by the format modules (zarr_vectors.converters._common)."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zarr_vectors as zv
from tests.converters import tract_files as tf
from zarr_vectors.converters import meshes
from zarr_vectors.converters._common import (
    atomic_output,
    check_options,
    join_columns,
    safe_name,
    split_columns,
    text_of,
)
from zarr_vectors.format.names import is_valid_name


def test_split_then_join_gives_the_columns_back() -> None:
    columns = {
        "a": np.arange(4),
        "vec": np.arange(12, dtype=np.float32).reshape(4, 3),
        "pair": np.ones((4, 2), bool),
    }
    split = split_columns(columns)
    assert list(split) == ["a", "vec_0", "vec_1", "vec_2", "pair_0", "pair_1"]
    np.testing.assert_array_equal(split["vec_1"], [1, 4, 7, 10])
    joined = join_columns(split)
    assert list(joined) == list(columns)
    for name, values in columns.items():
        assert joined[name].dtype == values.dtype
        np.testing.assert_array_equal(joined[name], values)


@pytest.mark.parametrize(
    "names",
    [
        ["a_0", "a_2"],  # not a complete run
        ["a_1", "a_2"],  # does not start at 0
        ["a_0"],  # a single column
        ["a", "a_0", "a_1"],  # the base name is a column itself
        ["a_0", "a_01"],  # a leading zero is not a number of the run
    ],
)
def test_join_leaves_other_names_alone(names: list[str]) -> None:
    columns = {name: np.arange(3) for name in names}
    assert list(join_columns(columns)) == names


def test_join_needs_one_dtype() -> None:
    columns = {"a_0": np.arange(3), "a_1": np.arange(3.0)}
    assert list(join_columns(columns)) == ["a_0", "a_1"]


def test_split_refuses_a_name_taken_twice() -> None:
    with pytest.raises(zv.InvalidInputError, match="'v_0'"):
        split_columns({"v_0": np.arange(2), "v": np.zeros((2, 2))})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("intensity", "intensity"),
        ("Refl dB", "Refl_dB"),
        ("scalar-Intensity", "scalar_Intensity"),
        ("1st", "_1st"),
        ("class", "class_"),
        ("zv_x", "_zv_x"),
        ("", "_"),
        ("été", "_t_"),
    ],
)
def test_safe_name(raw: str, expected: str) -> None:
    assert safe_name(raw) == expected
    assert is_valid_name(expected)


@given(st.text(max_size=12))
@settings(max_examples=50, deadline=None)
def test_safe_name_always_gives_a_valid_name(raw: str) -> None:
    assert is_valid_name(safe_name(raw))


def test_atomic_output_replaces_only_on_success(tmp_path: Path) -> None:
    target = tmp_path / "out.ply"
    target.write_text("old")
    seen: list[Path] = []

    def fail_halfway() -> None:
        with atomic_output(target) as tmp:
            seen.append(tmp)
            tmp.write_text("half")
            raise RuntimeError

    with pytest.raises(RuntimeError):
        fail_halfway()
    assert seen[0].parent == tmp_path
    assert seen[0].suffix == ".ply"
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.ply"]
    with atomic_output(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.ply"]


def test_check_options_names_the_unknown_and_the_known() -> None:
    check_options("ply", {"ids": [1]}, ("ids", "encoding"))
    with pytest.raises(
        zv.InvalidInputError, match=r"unknown option\(s\) b, c for ply; its options: a"
    ):
        check_options("ply", {"a": 1, "c": 2, "b": 3}, ("a",))


@given(
    f64=hnp.arrays(np.float64, 20, elements=st.floats(allow_nan=False)),
    f32=hnp.arrays(np.float32, 20, elements=st.floats(allow_nan=False, width=32)),
)
@settings(max_examples=30, deadline=None)
def test_text_of_reads_back_exactly(f64: np.ndarray, f32: np.ndarray) -> None:
    np.testing.assert_array_equal(np.array([float(t) for t in text_of(f64)]), f64)
    np.testing.assert_array_equal(np.array([float(t) for t in text_of(f32)], np.float32), f32)
    assert list(text_of(np.array([True, False]))) == ["1", "0"]
    assert list(text_of(np.array([-3, 7], np.int16))) == ["-3", "7"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small store of every kind an export format holds, by kind."""
    base = tmp_path_factory.mktemp("kinds")
    zv.write_points(base / "p.zv", np.arange(12.0).reshape(4, 3), attributes={"a": np.arange(4)})
    zv.write_mesh(base / "m.zv", np.eye(3), [[0, 1, 2]])
    zv.write_skeletons(base / "s.zv", [[0, 0, 0], [1, 0, 0.0]], parents=[-1, 0])
    tf.write_trk(base / "t.trk", tf.random_lines(1, 3))
    zv.convert(base / "t.trk", base / "t.zv")
    return {"point_cloud": base / "p.zv", "mesh": base / "m.zv", "skeleton": base / "s.zv",
            "streamline": base / "t.zv"}  # fmt: skip


_EXPORTS = [
    ("csv", "point_cloud"), ("parquet", "point_cloud"), ("las", "point_cloud"),
    ("laz", "point_cloud"), ("ply", "mesh"), ("obj", "mesh"), ("stl", "mesh"),
    ("swc", "skeleton"), ("trk", "streamline"), ("tck", "streamline"), ("trx", "streamline"),
]  # fmt: skip


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
@pytest.mark.parametrize("mask", [0o022, 0o002])
@pytest.mark.parametrize(("suffix", "kind"), _EXPORTS)
def test_exports_honour_the_umask(
    tmp_path: Path, stores: dict[str, Path], suffix: str, kind: str, mask: int
) -> None:
    out = tmp_path / f"out.{suffix}"
    with _umask(mask):
        zv.convert(stores[kind], out)
        (tmp_path / "plain").write_text("")
    mode = stat.S_IMODE(out.stat().st_mode)
    assert mode == 0o666 & ~mask
    assert mode == stat.S_IMODE((tmp_path / "plain").stat().st_mode)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_failed_export_leaves_no_partial_file_and_the_old_file(
    tmp_path: Path, stores: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.obj"
    out.write_text("old")

    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setitem(meshes._WRITERS, "obj", broken)
    with _umask(0o022), pytest.raises(OSError, match="disk full"):
        zv.convert(stores["mesh"], out, mode="w")
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.obj"]


def test_export_through_a_symlink_keeps_the_link(tmp_path: Path, stores: dict[str, Path]) -> None:
    (tmp_path / "real.csv").write_text("old")
    (tmp_path / "link.csv").symlink_to(tmp_path / "real.csv")
    zv.convert(stores["point_cloud"], tmp_path / "link.csv", mode="w")
    assert (tmp_path / "link.csv").is_symlink()
    assert (tmp_path / "real.csv").read_text().startswith('"x","y","z"')
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "link.csv",
        "link.csv-metadata.json",
        "real.csv",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="named pipes")
def test_export_onto_a_device_or_pipe_is_refused(tmp_path: Path, stores: dict[str, Path]) -> None:
    os.mkfifo(tmp_path / "fifo.csv")
    (tmp_path / "dev.csv").symlink_to("/dev/null")
    for name in ("fifo.csv", "dev.csv"):
        with pytest.raises(zv.InvalidInputError, match="not a regular file"):
            zv.convert(stores["point_cloud"], tmp_path / name, mode="w")
    assert stat.S_ISFIFO((tmp_path / "fifo.csv").stat().st_mode)
    assert (tmp_path / "dev.csv").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev.csv", "fifo.csv"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_an_overwritten_export_keeps_its_permissions(
    tmp_path: Path, stores: dict[str, Path]
) -> None:
    out = tmp_path / "out.ply"
    out.write_text("old")
    out.chmod(0o640)
    with _umask(0o022):
        zv.convert(stores["mesh"], out, mode="w")
    assert out.read_bytes().startswith(b"ply\n")
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
