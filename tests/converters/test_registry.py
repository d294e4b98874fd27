"""The format registry and the convert entry points (zarr_vectors.converters)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.converters import Converter, converters, format_of, import_file


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mesh.ply", "ply"),
        ("MESH.OBJ", "obj"),
        ("part.stl", "stl"),
        ("neuron.swc", "swc"),
        ("tracts.trk", "trk"),
        ("tracts.tck", "tck"),
        ("tracts.trx", "trx"),
        ("survey.las", "las"),
        ("survey.LAZ", "las"),
        ("cells.csv", "csv"),
        ("cells.parquet", "parquet"),
        ("cells.pq", "parquet"),
    ],
)
def test_format_of_a_suffix(name: str, expected: str) -> None:
    fmt = format_of(Path("/data") / name)
    assert fmt is not None
    assert fmt.name == expected
    assert format_of(str(Path("/data") / name)) == fmt


def test_format_of_a_name_wins_over_the_suffix() -> None:
    fmt = format_of("cells.txt", "CSV")
    assert fmt is not None
    assert fmt.name == "csv"
    assert format_of("cells.txt") is None
    assert format_of("store.zarrvectors") is None
    assert format_of(MemoryStore()) is None


def test_unknown_format_name_lists_the_known_ones() -> None:
    with pytest.raises(zv.InvalidInputError, match=r"unknown format 'vtk'.*ply, obj, stl, swc"):
        format_of("a.vtk", "vtk")


def test_every_registered_converter_is_a_converter() -> None:
    names = [c.name for c in converters()]
    assert len(names) == len(set(names))
    suffixes = [s for c in converters() for s in c.suffixes]
    assert len(suffixes) == len(set(suffixes))
    for converter in converters():
        assert isinstance(converter, Converter), converter.name
        assert callable(converter.import_file), converter.name
        assert callable(converter.export_store), converter.name


def _points(path: Path) -> Path:
    zv.write_points(path, np.arange(12.0).reshape(4, 3), attributes={"a": np.arange(4)})
    return path


def test_convert_goes_both_ways(tmp_path: Path) -> None:
    out = zv.convert(_points(tmp_path / "p.zv"), tmp_path / "p.parquet")
    assert out == tmp_path / "p.parquet"
    back = zv.convert(str(out), tmp_path / "q.zv")
    assert isinstance(back, zv.VectorStore)
    assert back.vertex_count == 4
    store = zv.open(tmp_path / "q.zv")
    assert isinstance(zv.convert(store, tmp_path / "r.csv"), Path)


def test_import_into_a_zarr_store(tmp_path: Path) -> None:
    zv.convert(_points(tmp_path / "p.zv"), tmp_path / "p.csv")
    memory = MemoryStore()
    store = zv.convert(tmp_path / "p.csv", memory)
    assert isinstance(store, zv.VectorStore)
    assert store.vertex_count == 4


def test_import_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(zv.InvalidInputError, match=r"no such file: .*missing\.ply"):
        import_file(tmp_path / "missing.ply", tmp_path / "m.zv")
    (tmp_path / "folder.ply").mkdir()
    with pytest.raises(zv.InvalidInputError, match=r"folder\.ply is not a file"):
        import_file(tmp_path / "folder.ply", tmp_path / "m.zv")


@pytest.mark.parametrize("dst", ["out.zarrvectors", "out.csv"])
def test_missing_source_is_named_as_the_source(tmp_path: Path, dst: str) -> None:
    with pytest.raises(zv.InvalidInputError, match=r"^no such file: .*nothere\.ply"):
        zv.convert(tmp_path / "bad" / "nothere.ply", tmp_path / dst)
    with pytest.raises(zv.StoreNotFoundError, match=r"no store at .*nothere\.zv"):
        zv.convert(tmp_path / "nothere.zv", tmp_path / dst)
    assert list(tmp_path.iterdir()) == []


def test_a_file_of_no_known_format_is_named_as_the_source(tmp_path: Path) -> None:
    (tmp_path / "cells.txt").write_text("x,y\n1,2\n")
    with pytest.raises(zv.InvalidInputError, match=r"cannot tell the format of .*cells\.txt"):
        zv.convert(tmp_path / "cells.txt", tmp_path / "out.zarrvectors")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.txt"]


def test_export_needs_a_file_path(tmp_path: Path) -> None:
    with pytest.raises(zv.InvalidInputError, match="needs a file path"):
        zv.convert(_points(tmp_path / "p.zv"), MemoryStore())


def test_an_existing_destination_needs_overwrite(tmp_path: Path) -> None:
    _points(tmp_path / "p.zv")
    (tmp_path / "p.csv").write_text("keep me\n")
    with pytest.raises(zv.StoreExistsError, match='mode="w"'):
        zv.convert(tmp_path / "p.zv", tmp_path / "p.csv")
    assert (tmp_path / "p.csv").read_text() == "keep me\n"
    zv.convert(tmp_path / "p.zv", tmp_path / "p.csv", mode="w")
    assert (tmp_path / "p.csv").read_text().startswith('"x","y","z"')
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "p.zv").rglob("*"))
    with pytest.raises(zv.StoreExistsError):
        zv.convert(tmp_path / "p.csv", tmp_path / "p.zv")
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "p.zv").rglob("*")) == before
    store = zv.convert(tmp_path / "p.csv", tmp_path / "p.zv", mode="w")
    assert isinstance(store, zv.VectorStore)
    assert store.attribute_names == ["a"]


def test_convert_overwrite_is_the_deprecated_mode_w(tmp_path: Path) -> None:
    _points(tmp_path / "p.zv")
    (tmp_path / "p.csv").write_text("keep me\n")
    with pytest.warns(DeprecationWarning, match='overwrite=True is deprecated; use mode="w"'):
        zv.convert(tmp_path / "p.zv", tmp_path / "p.csv", overwrite=True)
    assert (tmp_path / "p.csv").read_text().startswith('"x","y","z"')
    with pytest.raises(zv.InvalidInputError, match="a conversion writes a new store"):
        zv.convert(tmp_path / "p.csv", tmp_path / "q.zv", mode="a")
    with pytest.raises(zv.InvalidInputError, match="mode must be 'w-'"):
        zv.convert(tmp_path / "p.zv", tmp_path / "q.csv", mode="x")


def _hide(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """Make ``import module`` fail as when the package is not installed."""
    monkeypatch.setitem(sys.modules, module, None)


@pytest.mark.parametrize(
    ("module", "suffix", "extra"),
    [
        ("plyfile", ".ply", "mesh"),
        ("trimesh", ".stl", "mesh"),
        ("laspy", ".las", "las"),
        ("lazrs", ".laz", "las"),
        ("pyarrow", ".csv", "tables"),
        ("pyarrow", ".parquet", "tables"),
    ],
)
def test_a_missing_library_names_its_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, suffix: str, extra: str
) -> None:
    kind = "mesh" if extra == "mesh" else "points"
    if kind == "mesh":
        zv.write_mesh(tmp_path / "s.zv", np.eye(3), [[0, 1, 2]])
    else:
        _points(tmp_path / "s.zv")
    (tmp_path / f"in{suffix}").write_bytes(b"not read")
    _hide(monkeypatch, module)
    for run in (
        lambda: zv.convert(tmp_path / "s.zv", tmp_path / f"out{suffix}"),
        lambda: zv.convert(tmp_path / f"in{suffix}", tmp_path / "new.zv"),
    ):
        with pytest.raises(
            zv.MissingDependencyError, match=rf"pip install 'zarr-vectors\[{extra}\]'"
        ):
            run()
    assert not (tmp_path / f"out{suffix}").exists()
    assert not (tmp_path / "new.zv").exists()


def test_missing_dependency_is_an_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "plyfile")
    with pytest.raises(ImportError, match="reading PLY meshes needs the plyfile package"):
        zv.convert(Path(__file__), "x.zv", format="ply")


@pytest.mark.parametrize("dst", ["b.obj", "b.csv", "b.LAS"])
def test_import_into_a_store_named_like_a_file_is_refused(tmp_path: Path, dst: str) -> None:
    (tmp_path / "a.swc").write_text("1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n")
    with pytest.raises(zv.InvalidInputError, match=r"is named like a \w+ file, but importing"):
        zv.convert(tmp_path / "a.swc", tmp_path / dst)
    assert [p.name for p in tmp_path.iterdir()] == ["a.swc"]
    store = zv.convert(tmp_path / "a.swc", tmp_path / "b.zarrvectors")
    assert isinstance(store, zv.VectorStore)
