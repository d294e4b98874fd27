"""Regression tests of the failures the data-file corpus found (one per finding).

Before the fixes: a damaged ``link_attributes``, ``groupings_attributes`` or
``cross_chunk_link_attributes`` array made every read raise but validated as ok (L3 never
read these arrays), and a lost ``cross_chunk_links`` chunk (read as its fill value, -1)
made graphs and skeletons lose their cross-chunk edges without an error.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarr_vectors as zv
from tests.corpus import stores
from tests.corpus.harness import BOX
from zarr_vectors.format.place import CHUNK_TABLE_KEY


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    path = tmp_path / "graph.zv"
    stores.graph(path)
    return path


def one_file(root: Path, array: str) -> Path:
    """The first stored chunk or shard file of ``array``."""
    found = sorted(p for p in (root / array / "c").rglob("*") if p.is_file())
    assert found, array
    return found[0]


def flip_middle_byte(file: Path) -> None:
    raw = bytearray(file.read_bytes())
    raw[len(raw) // 2] ^= 0x04
    file.write_bytes(bytes(raw))


def error_ids(path: Path) -> set[str]:
    report = zv.validate(path, level=3, progress=False)
    assert not report.ok
    return {p.check_id for p in report.errors}


def test_damaged_link_attribute_shard_is_reported(graph: Path) -> None:
    flip_middle_byte(one_file(graph, "0/link_attributes/e"))
    with pytest.raises(zv.CorruptChunkError):
        zv.open(graph).read()
    assert "L3.shard_index" in error_ids(graph)


def test_deleted_link_attribute_shard_is_reported(graph: Path) -> None:
    one_file(graph, "0/link_attributes/e").unlink()
    with pytest.raises(zv.ZarrVectorsError):
        zv.open(graph).read()
    assert "L3.shard_present" in error_ids(graph)


def test_damaged_groupings_attribute_is_reported(graph: Path) -> None:
    flip_middle_byte(one_file(graph, "0/groupings_attributes/w"))
    with pytest.raises(zv.CorruptChunkError):
        zv.open(graph).group_attributes  # noqa: B018 - the property reads the array
    assert "L3.shard_index" in error_ids(graph)


def test_damaged_cross_chunk_link_attribute_is_reported(graph: Path) -> None:
    flip_middle_byte(one_file(graph, "0/cross_chunk_link_attributes/e"))
    with pytest.raises(zv.CorruptChunkError):
        zv.open(graph).read()
    assert "L3.shard_index" in error_ids(graph)


@pytest.mark.parametrize("kind", ["graph", "skeleton"])
def test_deleted_cross_chunk_links_chunk_is_an_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "s.zv"
    getattr(stores, kind)(path)
    assert zv.open(path).read().edges is not None
    one_file(path, "0/cross_chunk_links").unlink()
    opened = zv.open(path)
    for read in (opened.read, lambda: opened.read_objects([0]), lambda: opened.query(BOX)):
        with pytest.raises(zv.CorruptChunkError, match="is missing"):
            read()
    assert "L3.global_chunks" in error_ids(path)


def _retable(array: Path) -> None:
    """Make the chunk table of ``array`` (spec §9.8.1) list its chunks as they now are."""
    meta = array / "zarr.json"
    doc = json.loads(meta.read_bytes())
    chunks = sorted(p for p in (array / "c").rglob("*") if p.is_file())
    tails = [int.from_bytes(p.read_bytes()[-4:], "little") for p in chunks]
    doc["attributes"][CHUNK_TABLE_KEY] = tails
    meta.write_text(json.dumps(doc))


def test_cross_chunk_link_beyond_the_grid_is_an_error(graph: Path) -> None:
    table = zarr.open_array(str(graph / "0/cross_chunk_links"), mode="r+")
    rows = np.asarray(table[...])
    vertices = zarr.open_array(str(graph / "0/vertices"), mode="r")
    rows[0, 1] = int(np.prod(vertices.shape[:3])) * vertices.shape[3]  # one past the last gid
    table[...] = rows
    _retable(graph / "0/cross_chunk_links")  # values edited with their checksums made valid
    with pytest.raises(zv.CorruptChunkError, match="not a global vertex id"):
        zv.open(graph).read()


@pytest.mark.parametrize("kind", ["points", "streamlines", "mesh"])
def test_deleted_vertex_counts_chunk_is_an_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "s.zv"
    getattr(stores, kind)(path)
    one_file(path, "0/vertex_counts").unlink()  # reads as 0 rows everywhere
    opened = zv.open(path)
    for read in (opened.read, lambda: opened.query(BOX)):
        with pytest.raises(zv.CorruptChunkError, match="vertex_count"):
            read()
    assert "L3.vertex_count_total" in error_ids(path)


def test_deleted_groupings_chunk_is_an_error(graph: Path) -> None:
    one_file(graph, "0/groupings").unlink()  # reads as -1 everywhere: every group empty
    opened = zv.open(graph)
    for read in (lambda: opened.groups, lambda: opened.query(group="first")):
        with pytest.raises(zv.CorruptChunkError, match="is missing"):
            read()
    assert "L3.global_chunks" in error_ids(graph)


def test_groups_that_are_all_empty_still_read(tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    zv.write_polylines(path, [np.zeros((2, 3))], groups={"none": [], "also": []})
    assert {k: v.tolist() for k, v in zv.open(path).groups.items()} == {"none": [], "also": []}
    assert zv.validate(path, level=3, progress=False).ok


def test_deleted_groupings_chunk_of_a_format_1_0_store_is_an_error(tmp_path: Path) -> None:
    """Before format 1.2 a global array's chunk of fill values may be missing, so a lost
    chunk is caught by what it leaves: no group as wide as the table."""
    golden = Path(__file__).parents[1] / "data" / "golden" / "1.0" / "streamlines_3d_groups"
    path = tmp_path / "s.zarrvectors"
    shutil.copytree(golden.with_suffix(".zarrvectors"), path)
    (path / "0" / "groupings" / "c" / "0" / "0").unlink()
    with pytest.raises(zv.CorruptChunkError, match="no group that many members"):
        zv.open(path).groups  # noqa: B018 - the property reads the array
    assert "L3.groupings_members" in error_ids(path)
