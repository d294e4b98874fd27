"""The repr and notebook HTML of a VectorStore, its size on disk and its levels."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from zarr.storage import MemoryStore, ZipStore

import zarr_vectors as zv
from tests.result import result_cases as cases
from zarr_vectors.display import format_bytes, format_count
from zarr_vectors.store.io import StoreIO


def _chunks(positions: np.ndarray, chunk: float) -> set[tuple[int, ...]]:
    return {tuple(c) for c in np.floor(positions / chunk).astype(int).tolist()}


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_point_store_repr(tmp_path: Path) -> None:
    written = cases.points(str(tmp_path / "p.zv"))
    store = written.open()
    text = repr(store)
    lines = text.splitlines()
    assert lines[0] == f"<VectorStore {tmp_path / 'p.zv'}"
    n = written.positions.shape[0]
    chunks = len(_chunks(written.positions, 50.0))
    assert f"point_cloud, 3-D (x, y, z in micrometer): {n} vertices in {chunks} chunks" in text
    assert "bounds [0.5, 0.75, 0.25] .. [99.5, 98.75, 97]" in text
    assert "chunk_shape [50, 50, 50], bin_shape [25, 25, 25], grid 2 x 2 x 2, levels 0" in text
    assert "vertex attributes: intensity float32, rgb uint8[3]" in text
    files = _files(tmp_path / "p.zv")
    size = sum(p.stat().st_size for p in files)
    assert f"stored: {format_bytes(size)} in {len(files)} keys>" in text
    assert len(lines) <= 8


def test_object_store_repr_and_html() -> None:
    written = cases.streamlines()
    store = written.open()
    assert written.offsets is not None
    m, n = len(written.offsets) - 1, written.positions.shape[0]
    chunks = len(_chunks(written.positions, 8.0))
    text = repr(store)
    headline = f"streamline, 3-D (x, y, z in micrometer): {m} objects, {n} vertices in {chunks} "
    assert headline + "chunks" in text
    assert "vertex attributes: fa float64" in text
    assert "object attributes: tag int16, weight float32" in text
    assert "groups (2): cst, af" in text
    rows = cases.html_rows(store._repr_html_())
    assert ("objects", str(m)) in rows
    assert ("vertices", format_count(n)) in rows
    assert (
        "chunks",
        f"{chunks} non-empty, grid {store.grid_shape[0]} x "
        f"{store.grid_shape[1]} x {store.grid_shape[2]}",
    ) in rows
    for row in [
        ("vertex", "fa", "float64"),
        ("object", "weight", "float32"),
        ("object", "tag", "int16"),
    ]:
        assert row in rows
    lo, hi = written.positions.min(axis=0), written.positions.max(axis=0)
    for d, axis in enumerate("xyz"):
        assert (
            axis,
            "micrometer",
            f"{lo[d]:g}",
            f"{hi[d]:g}",
            "8",
            "2",
            str(store.grid_shape[d]),
        ) in rows
    assert ("0", "cst") in rows
    assert ("1", "af") in rows


def test_mesh_and_graph_link_attributes_are_named_by_role() -> None:
    # per-chunk link attributes are one value per link: no trailing column shape
    assert re.search(r"face attributes: quality float32$", repr(cases.meshes().open()), re.M)
    assert re.search(r"edge attributes: weight float64$", repr(cases.graph().open()), re.M)


def test_html_is_self_contained_and_escapes_group_names() -> None:
    evil = '<img src=x onerror="alert(1)">'
    store = MemoryStore()
    zv.write_polylines(store, [np.zeros((2, 2)), np.ones((3, 2))], groups={evil: [0]})
    page = zv.open(store)._repr_html_()
    assert "<img" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    for forbidden in ("<script", "<link", "<style", "class=", "http://", "https://"):
        assert forbidden not in page


def test_nbytes_of_each_store_kind(tmp_path: Path) -> None:
    local = cases.points(str(tmp_path / "a.zv")).open()
    assert local.nbytes == sum(p.stat().st_size for p in _files(tmp_path / "a.zv"))

    memory = MemoryStore()
    cases.points(memory)
    io = StoreIO(memory)
    keys = io.list_prefix("")
    expected = sum(len(io.get(k) or b"") for k in keys)
    opened = zv.open(memory)
    assert opened.nbytes == expected
    assert f"in {len(keys)} keys" in repr(opened)

    zipped = tmp_path / "a.zip"
    writer = ZipStore(zipped, mode="w")
    cases.points(writer)  # the writer closes the zip file
    assert zv.open(str(zipped)).nbytes == os.path.getsize(zipped)


def test_levels_lists_every_level_of_the_multiscales_block(tmp_path: Path) -> None:
    root = tmp_path / "s.zv"
    cases.points(str(root))
    assert [lv.level for lv in zv.open(str(root)).levels] == [0]
    # a second level: a copy of level 0 declared in multiscales (library support is planned)
    shutil.copytree(root / "0", root / "1")
    level = json.loads((root / "1" / "zarr.json").read_text())
    level["attributes"] |= {
        "level": 1,
        "bin_ratio": [2, 2, 2],
        "bin_shape": [50.0] * 3,
        "coarsening": {"method": "sample", "key": "splitmix64", "per_bin": 4},
    }
    (root / "1" / "zarr.json").write_text(json.dumps(level))
    doc = json.loads((root / "zarr.json").read_text())
    datasets = doc["attributes"]["multiscales"][0]["datasets"]
    datasets.append(dict(datasets[0], path="1", level=1, bin_ratio=[2, 2, 2]))
    (root / "zarr.json").write_text(json.dumps(doc))
    store = zv.open(str(root))
    assert [lv.level for lv in store.levels] == [0, 1]
    assert [lv.method for lv in store.levels] == [None, "sample"]
    assert store.levels[1].bin_ratio == (2, 2, 2)
    assert store.levels[1].coarsening == {"method": "sample", "key": "splitmix64", "per_bin": 4}
    n, chunks = format_count(store.vertex_count), format_count(store.chunk_count)
    assert "levels 0, 1" in repr(store)
    assert f"level 1: {n} vertices in {chunks} chunks, bin_shape [50, 50, 50], sample" in repr(
        store
    )
    rows = cases.html_rows(store._repr_html_())
    assert ("levels",) in rows
    assert ("0", "[25, 25, 25]", n, chunks, "-", "1", "-") in rows
    assert ("1", "[50, 50, 50]", n, chunks, "-", "1", "sample") in rows


def test_repr_of_a_damaged_store_says_what_is_missing(tmp_path: Path) -> None:
    root = tmp_path / "d.zv"
    cases.streamlines(str(root))
    (root / "0" / "vertices" / "zarr.json").unlink()
    store = zv.open(str(root))
    text = repr(store)
    assert "could not read everything: MetadataError" in text
    assert "streamline" in text
    assert "could not read" in store._repr_html_()


@pytest.mark.parametrize("kind", sorted(cases.BUILDERS))
def test_every_kind_has_a_repr_and_html(kind: str) -> None:
    store = cases.BUILDERS[kind]().open()
    assert repr(store).startswith("<VectorStore ")
    assert repr(store).endswith(">")
    assert f">{kind}</td>" in store._repr_html_()
