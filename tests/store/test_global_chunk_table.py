"""Every chunk of a global array is bound to its key by the array's chunk table (format 1.2,
spec §9.8.1): a chunk file swapped with, copied over or lost from another key of a global
array with several chunks (object attributes, the object index of more than 65,536 objects)
is an error on every read and in validation (``L3.global_chunks``), never other objects'
values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.format.place import CHUNK_TABLE_KEY
from zarr_vectors.store.arrays import chunk_table_problem
from zarr_vectors.store.io import StoreIO

N_OBJECTS = 70_000  # global arrays hold 65,536 rows per chunk: two chunks


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("table") / "lines.zarrvectors"
    lines = list(rng.random((N_OBJECTS, 2, 3)) * 10)
    weight = np.arange(N_OBJECTS, dtype=np.float32)
    zv.write_polylines(path, lines, object_attributes={"w": weight}, chunk_shape=5.0)
    return path


@pytest.fixture
def store(written: Path, tmp_path: Path) -> Path:
    path = tmp_path / "copy.zarrvectors"
    shutil.copytree(written, path)
    return path


def _chunk(store: Path, array: str, j: int) -> Path:
    return store / "0" / array / "c" / str(j)


def _swap(a: Path, b: Path) -> None:
    raw_a, raw_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(raw_b)
    b.write_bytes(raw_a)


def _refused_everywhere(store: Path, match: str) -> None:
    opened = zv.open(store)
    with pytest.raises(zv.CorruptChunkError, match=match):
        opened.object_attribute("w")
    with pytest.raises(zv.CorruptChunkError, match=match):
        zv.open(store).read_objects([0, N_OBJECTS - 1])
    report = zv.validate(store, level=3)
    assert "L3.global_chunks" in {p.check_id for p in report.errors}


def test_the_table_lists_each_chunks_crc32c(written: Path) -> None:
    doc = json.loads((written / "0/object_attributes/w/zarr.json").read_bytes())
    table = doc["attributes"][CHUNK_TABLE_KEY]
    tails = [_chunk(written, "object_attributes/w", j).read_bytes()[-4:] for j in (0, 1)]
    assert table == [int.from_bytes(t, "little") for t in tails]
    io = StoreIO(zv.open(written)._io.store)
    assert chunk_table_problem(io, "0/object_attributes/w", doc) is None


def test_swapped_object_attribute_chunks_are_refused(store: Path) -> None:
    """Before: object 0 read the weight of object 65,536 and so on, silently."""
    _swap(_chunk(store, "object_attributes/w", 0), _chunk(store, "object_attributes/w", 1))
    _refused_everywhere(store, "not the chunk written at this place")


def test_a_chunk_copied_over_another_is_refused(store: Path) -> None:
    source, target = (_chunk(store, "object_attributes/w", j) for j in (1, 0))
    shutil.copyfile(source, target)
    _refused_everywhere(store, "not the chunk written at this place")


def test_a_lost_chunk_is_refused(store: Path) -> None:
    _chunk(store, "object_attributes/w", 1).unlink()
    _refused_everywhere(store, "is missing")


def test_swapped_object_index_offsets_are_refused(store: Path) -> None:
    _swap(_chunk(store, "object_index/offsets", 0), _chunk(store, "object_index/offsets", 1))
    with pytest.raises(zv.FormatError):
        zv.open(store).read_objects([0])
    assert not zv.validate(store, level=3).ok


def test_an_edited_table_is_refused(store: Path) -> None:
    meta = store / "0/object_attributes/w/zarr.json"
    doc = json.loads(meta.read_bytes())
    doc["attributes"][CHUNK_TABLE_KEY][0] ^= 1
    meta.write_text(json.dumps(doc))
    _refused_everywhere(store, "not the chunk written at this place")


def test_undamaged_reads_are_exact(written: Path) -> None:
    opened = zv.open(written)
    np.testing.assert_array_equal(
        opened.object_attribute("w"), np.arange(N_OBJECTS, dtype=np.float32)
    )
    got = opened.read_objects([65_535, 65_536])
    assert got.object_attributes["w"].tolist() == [65_535.0, 65_536.0]
    assert zv.validate(written, level=3).ok
