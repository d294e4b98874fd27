"""The static export ``zv.convert(store, "out.precomputed")``: every file of every source,
the bytes ``read()`` gives, written through a hidden sibling so a failed export changes
nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
import zarr_vectors.precomputed.annotations as annotations_module
from zarr_vectors.cli import main
from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.precomputed import PrecomputedSource, sources
from zarr_vectors.precomputed.export import (
    EXPORT_MARKER,
    export_precomputed,
    is_precomputed_export,
)


@pytest.fixture(scope="module")
def cells(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A points store (2 levels, 4 x 4 x 4 chunks, 5 objects) that every test exports; read
    only, written once per module."""
    n = 300
    rng = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("export") / "cells.zarr"
    zv.write_points(
        path, rng.uniform(0, 40, (n, 3)), chunk_shape=10.0,
        attributes={"w": rng.normal(size=n).astype(np.float32)},
        object_ids=rng.integers(0, 5, n), levels=zv.Levels(count=1, per_bin=4),
    )  # fmt: skip
    return path


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_export_writes_every_file_as_read_gives_it(tmp_path: Path, cells: Path) -> None:
    store = zv.open(cells)
    out = zv.convert(store, tmp_path / "cells.precomputed")
    assert isinstance(out, Path)
    expected = {
        f"{name}/{path}": source.read(path)
        for name, source in sources(store).items()
        for path in source.paths()
    }
    marker = json.loads(_tree(out).pop(EXPORT_MARKER))
    assert marker == {"zarr_vectors_precomputed_export": 1, "sources": ["annotations"]}
    expected[EXPORT_MARKER] = _tree(out)[EXPORT_MARKER]
    assert _tree(out) == expected
    assert any(p.startswith("annotations/by_object/") for p in expected)
    again = zv.convert(cells, tmp_path / "web", format="precomputed")
    assert _tree(Path(again)) == expected
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no sibling left


def test_existing_destination_refused_or_replaced(tmp_path: Path, cells: Path) -> None:
    store = zv.open(cells)
    out = tmp_path / "cells.precomputed"
    zv.convert(store, out)
    before = _tree(out)
    with pytest.raises(StoreExistsError, match=r'holds a precomputed export.*mode="w"'):
        zv.convert(store, out)
    (out / "annotations" / "info").write_bytes(b"{}")
    zv.convert(store, out, mode="w")
    assert _tree(out) == before
    other = tmp_path / "notes.precomputed"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(StoreExistsError, match=r"'keep\.txt'.*not replaced.*remove it yourself"):
        zv.convert(store, other, mode="w")  # not an export: never replaced
    assert (other / "keep.txt").read_text() == "mine"


def test_empty_directory_is_written(tmp_path: Path, cells: Path) -> None:
    store = zv.open(cells)
    for mode in ("w-", "w"):
        empty = tmp_path / f"empty-{mode}.precomputed"
        empty.mkdir()
        zv.convert(store, empty, mode=mode)
        assert is_precomputed_export(empty)
        assert (empty / "annotations" / "info").is_file()


def test_sources_without_our_marker_are_never_replaced(tmp_path: Path, cells: Path) -> None:
    """A folder of precomputed sources written by another tool (every entry a folder with an
    ``info``), an export whose marker was removed or is not ours, a store, a file."""
    store = zv.open(cells)
    theirs = tmp_path / "theirs.precomputed"
    (theirs / "segmentation").mkdir(parents=True)
    (theirs / "segmentation" / "info").write_text('{"@type": "neuroglancer_multiscale_volume"}')
    unmarked = zv.convert(store, tmp_path / "unmarked.precomputed")
    (unmarked / EXPORT_MARKER).unlink()
    foreign = zv.convert(store, tmp_path / "foreign.precomputed")
    (foreign / EXPORT_MARKER).write_text('{"tool": "other"}')
    a_file = tmp_path / "file.precomputed"
    a_file.write_bytes(b"data")
    for path, what in [
        (theirs, "'segmentation'"),
        (unmarked, "'annotations'"),
        (foreign, "'annotations'"),
        (cells, "a Zarr Vectors store"),
        (a_file, "a file"),
    ]:
        before = _tree(path) if path.is_dir() else path.read_bytes()
        with pytest.raises(StoreExistsError, match=f"{what}.*; an export replaces only"):
            zv.convert(store, path, format="precomputed", mode="w")
        assert (_tree(path) if path.is_dir() else path.read_bytes()) == before
        assert not is_precomputed_export(path)


class _Failing:
    """A source whose third file cannot be computed."""

    name = "annotations"

    def paths(self) -> Iterator[str]:
        yield from ("info", "a/1", "a/2", "a/3")

    def read(self, path: str) -> bytes:
        if path == "a/2":
            raise OSError("disk gone")
        return path.encode()


@pytest.mark.parametrize("existing", [False, True])
def test_failed_export_leaves_destination_as_it_was(
    tmp_path: Path, cells: Path, existing: bool
) -> None:
    out = tmp_path / "x.precomputed"
    if existing:
        zv.convert(zv.open(cells), out)
    before = _tree(out) if existing else None
    failing: dict[str, PrecomputedSource] = {"annotations": _Failing()}
    with pytest.raises(OSError, match="disk gone"):
        export_precomputed(failing, out, overwrite=True)
    assert (_tree(out) if out.exists() else None) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_nothing_to_export_and_bad_options(tmp_path: Path, cells: Path) -> None:
    lines = tmp_path / "lines.zarr"
    zv.write_mesh(lines, [[0, 0, 0], [1, 0, 0], [0, 1, 0.0]], [[0, 1, 2]])
    if not sources(zv.open(lines)):
        with pytest.raises(InvalidInputError, match="nothing to show"):
            zv.convert(lines, tmp_path / "mesh.precomputed")
        assert not (tmp_path / "mesh.precomputed").exists()
    with pytest.raises(InvalidInputError, match="unknown option"):
        zv.convert(zv.open(cells), tmp_path / "c.precomputed", colour="red")


def test_command_line_convert_and_threads(
    tmp_path: Path, cells: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = zv.open(cells)
    assert main(["convert", str(cells), str(tmp_path / "c.precomputed")]) == 0
    assert "c.precomputed" in capsys.readouterr().out
    source = sources(store)["annotations"]
    paths = [p for p in source.paths() if not p.startswith("by_object/")]
    with ThreadPoolExecutor(4) as pool:  # as a server answers requests
        found = dict(zip(paths, pool.map(source.read, paths), strict=True))
    assert found == {
        p: (tmp_path / "c.precomputed" / "annotations" / p).read_bytes() for p in paths
    }


@pytest.mark.parametrize("sharded", [False, True])
def test_neuroglancers_own_reader_reads_the_export(
    tmp_path: Path, cells: Path, sharded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unsharded, and with the by-id and relationship indexes sharded (more than
    ``UNSHARDED_MAX`` points and objects): read through tensorstore's sharded driver."""
    pytest.importorskip("tensorstore", reason="Neuroglancer's annotation reader needs tensorstore")
    reader_module = pytest.importorskip("neuroglancer.read_precomputed_annotations")
    if sharded:
        monkeypatch.setattr(annotations_module, "UNSHARDED_MAX", 3)  # 300 points, 5 objects
    store = zv.open(cells)
    out = zv.convert(store, tmp_path / "cells.precomputed")
    info = json.loads((out / "annotations" / "info").read_text())
    assert ("sharding" in info["by_id"]) is sharded
    assert ("sharding" in info["relationships"][0]) is sharded
    reader = reader_module.AnnotationReader(f"file://{out}/annotations/")
    found = list(reader.get_within_spatial_bounds())
    everything = store.read()
    assert sorted(int(a.id) for a in found) == list(range(len(everything)))
    got = sorted((*np.float32(a.point).tolist(), float(np.float32(a.props[0]))) for a in found)
    rows = np.column_stack([everything.positions, everything.attributes["w"]]).astype(np.float32)
    assert got == sorted(map(tuple, rows.tolist()))
    for obj in np.unique(everything.vertex_object_ids).tolist():
        related = reader.relationships["object"][obj]
        assert len(related) == int((everything.vertex_object_ids == obj).sum())
    first = reader.by_id[int(found[0].id)]
    assert np.array_equal(first.point, found[0].point)
