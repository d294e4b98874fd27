"""``zarr-vectors convert`` with PLY, OBJ, STL, SWC, LAS/LAZ, CSV and Parquet, through
``cli.main``: out of a store, back into a new one, with options and errors."""

from __future__ import annotations

import sys
from pathlib import Path

import laspy
import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _mesh(path: Path) -> None:
    vertices = np.array(
        [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [3, 3, 3], [4, 3, 3], [3, 4, 3]]
    )
    zv.write_mesh(
        path,
        vertices.astype(np.float32),
        [[0, 1, 2], [0, 3, 1], [4, 6, 5]],
        vertex_objects=[1, 1, 1, 1, 2, 2, 2],
        attributes={"quality": np.linspace(0, 1, 7)},
    )


def _same_triangles(a: zv.VectorStore, b: zv.VectorStore) -> None:
    """The same set of triangles, compared by their corner coordinates in winding order."""

    def corners(store: zv.VectorStore) -> np.ndarray:
        found = store.read()
        assert found.faces is not None
        rows = found.positions[found.faces].reshape(-1, 9).astype(np.float64)
        return rows[np.lexsort(rows.T[::-1])]

    np.testing.assert_array_equal(corners(a), corners(b))


@pytest.mark.parametrize(
    ("suffix", "export_options", "import_options", "objects"),
    [
        ("ply", ["-o", "encoding=ascii"], [], 2),
        ("obj", [], [], 2),
        ("stl", [], ["-o", "merge_vertices=true"], 1),
    ],
)
def test_meshes_out_and_back(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    suffix: str,
    export_options: list[str],
    import_options: list[str],
    objects: int,
) -> None:
    _mesh(tmp_path / "m.zv")
    code, out, err = _run(
        capsys, "convert", tmp_path / "m.zv", tmp_path / f"m.{suffix}", *export_options
    )
    assert (code, err) == (0, "")
    assert f"wrote {tmp_path / f'm.{suffix}'}" in out
    code, out, err = _run(
        capsys,
        "convert",
        tmp_path / f"m.{suffix}",
        tmp_path / "back.zv",
        "--chunk-shape",
        "2",
        *import_options,
    )
    assert (code, err) == (0, "")
    assert f"mesh, {objects} objects" in out
    back = zv.open(tmp_path / "back.zv")
    assert zv.validate(tmp_path / "back.zv", level=3).ok
    assert back.chunk_shape == (2.0, 2.0, 2.0)
    assert back.object_count == objects
    _same_triangles(back, zv.open(tmp_path / "m.zv"))


def test_swc_out_and_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "# neuron\n1 1 0 0 0 2 -1\n2 3 1.5 0 0 0.5 1\n3 3 1.5 1 0 0.5 2\n4 2 -1 0 0 0.7 1\n"
    (tmp_path / "n.swc").write_text(text)
    code, out, _ = _run(
        capsys,
        "convert",
        tmp_path / "n.swc",
        tmp_path / "n.zv",
        "--bin-shape",
        "0.5",
        "--chunk-shape",
        "1",
    )
    assert code == 0
    assert "skeleton, 1 objects" in out
    assert zv.open(tmp_path / "n.zv").bin_shape == (0.5, 0.5, 0.5)
    assert zv.validate(tmp_path / "n.zv", level=3).ok
    code, _, _ = _run(capsys, "convert", tmp_path / "n.zv", tmp_path / "out.swc")
    assert code == 0
    lines = [ln for ln in (tmp_path / "out.swc").read_text().splitlines() if not ln.startswith("#")]
    assert lines == [
        "1 1 0.0 0.0 0.0 2.0 -1",
        "2 3 1.5 0.0 0.0 0.5 1",
        "3 3 1.5 1.0 0.0 0.5 2",
        "4 2 -1.0 0.0 0.0 0.7 1",
    ]


@pytest.mark.parametrize("suffix", ["las", "laz"])
def test_las_out_and_back(tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    xyz = np.array([[1000.5, 2000.25, 10.125], [1001.0, 2001.0, 11.0], [999.0, 2002.5, 9.5]])
    classes = np.array([2, 6, 9], np.uint8)
    zv.write_points(tmp_path / "p.zv", xyz, attributes={"classification": classes})
    code, _, _ = _run(
        capsys, "convert", tmp_path / "p.zv", tmp_path / f"p.{suffix}", "-o", "scale=0.125"
    )
    assert code == 0
    las = laspy.read(str(tmp_path / f"p.{suffix}"))
    np.testing.assert_array_equal(las.header.scales, [0.125] * 3)
    code, out, _ = _run(capsys, "convert", tmp_path / f"p.{suffix}", tmp_path / "back.zv")
    assert code == 0
    assert "point_cloud, 3 vertices" in out
    found = zv.open(tmp_path / "back.zv").read()
    order = np.argsort(found.positions[:, 0])
    np.testing.assert_array_equal(found.positions[order], xyz[np.argsort(xyz[:, 0])])
    np.testing.assert_array_equal(found.attributes["classification"][order], [9, 2, 6])


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_tables_out_and_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    xyz = np.random.default_rng(1).normal(0, 5, (40, 3))
    zv.write_points(
        tmp_path / "p.zv",
        xyz,
        attributes={"k": np.arange(40, dtype=np.int64)},
        object_ids=np.arange(40) % 3,
    )
    code, _, _ = _run(capsys, "convert", tmp_path / "p.zv", tmp_path / f"p.{suffix}")
    assert code == 0
    code, _, _ = _run(
        capsys, "convert", tmp_path / f"p.{suffix}", tmp_path / "back.zv", "-o", 'columns=["x","y"]'
    )
    assert code == 0
    back = zv.open(tmp_path / "back.zv")
    assert zv.validate(tmp_path / "back.zv", level=3).ok
    assert back.ndim == 2
    found = back.read()
    order = np.argsort(found.attributes["k"])
    np.testing.assert_array_equal(found.positions[order], xyz[:, :2])
    np.testing.assert_array_equal(found.attributes["z"][order], xyz[:, 2])
    assert found.vertex_object_ids is not None
    np.testing.assert_array_equal(found.vertex_object_ids[order], np.arange(40) % 3)


def test_format_flag_for_an_unusual_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cells.txt").write_text("x;y\n1;2\n3;4\n")
    code, out, err = _run(
        capsys,
        "convert",
        tmp_path / "cells.txt",
        tmp_path / "c.zv",
        "--format",
        "csv",
        "-o",
        "delimiter=;",
    )
    assert (code, err) == (0, "")
    assert "point_cloud, 2 vertices" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{dir}/m.zv", "{dir}/m.ply"], "exists; pass --overwrite to replace it"),
        (["{dir}/m.zv", "{dir}/m.las"], "mesh store cannot be written as las"),
        (["{dir}/m.zv", "{dir}/out.ply", "-o", "colour=red"], "unknown option(s) colour for ply"),
        (["{dir}/m.zv", "{dir}/out.obj", "--chunk-shape", "2"], "unknown option(s) --chunk-shape"),
        (["{dir}/bad.swc", "{dir}/bad.zv"], "bad.swc line 1: expected 7 columns"),
        (["{dir}/m.zv", "{dir}/out.xyz"], "format of '{dir}/out.xyz'; give --format"),
        (["{dir}/bad/nothere.ply", "{dir}/out.zarrvectors"], "no such file: {dir}/bad/nothere.ply"),
        (["{dir}/nothere.zv", "{dir}/out.zarrvectors"], "no store at '{dir}/nothere.zv'"),
        (["{dir}/bad.swc", "{dir}/m.ply", "--overwrite"], "is named like a ply file"),
        (["{dir}/m.zv", "{dir}/out.csv", "-o", "object_id=quality"], "with -o object_id=..."),
    ],
)
def test_errors_exit_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    _mesh(tmp_path / "m.zv")
    (tmp_path / "m.ply").write_text("already here")
    (tmp_path / "bad.swc").write_text("1 1 0 0 0 -1\n")
    code, out, err = _run(capsys, "convert", *(a.format(dir=tmp_path) for a in argv))
    assert code == 2
    assert out == ""
    assert err.startswith("zarr-vectors: error: ")
    assert message.format(dir=tmp_path) in err
    assert "=True" not in err
    assert (tmp_path / "m.ply").read_text() == "already here"
    assert not (tmp_path / "bad.zv").exists()


def test_overwrite_flag_replaces_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _mesh(tmp_path / "m.zv")
    (tmp_path / "m.ply").write_text("already here")
    code, _, _ = _run(capsys, "convert", tmp_path / "m.zv", tmp_path / "m.ply", "--overwrite")
    assert code == 0
    assert (tmp_path / "m.ply").read_bytes().startswith(b"ply\nformat binary_little_endian 1.0\n")


def test_missing_library_exits_2_naming_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _mesh(tmp_path / "m.zv")
    monkeypatch.setitem(sys.modules, "plyfile", None)
    code, _, err = _run(capsys, "convert", tmp_path / "m.zv", tmp_path / "out.ply")
    assert code == 2
    assert "writing PLY meshes needs the plyfile package: pip install 'zarr-vectors[mesh]'" in err
