"""A read of a few objects decodes their own manifests (the Blosc blocks of
``object_index`` holding them), not the whole index: the same objects as a read from the
whole index, for every kind and any selection, before and after the handle reads the index
whole; a damaged index is refused either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry import object_cases
from tests.geometry.object_cases import KINDS
from tests.query.test_bounded_reads import _same
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import OBJECT_INDEX
from zarr_vectors.query import ObjectReader, object_queries
from zarr_vectors.read import LevelReader
from zarr_vectors.store.arrays import write_global_array
from zarr_vectors.update.object_sources import open_source

DATA = f"{OBJECT_INDEX}/data"


def _reader(path: Path) -> ObjectReader:
    source = open_source(path)
    return ObjectReader(LevelReader(source.io, source.root, 0))


@pytest.mark.parametrize("kind", KINDS)
def test_few_objects_read_from_their_manifests_equal_the_whole_index_reads(
    tmp_path_factory: pytest.TempPathFactory, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    @settings(
        deadline=None,
        max_examples=4,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(case=object_cases.cases(kind), data=st.data())
    def check(case: dict[str, Any], data: st.DataObject) -> None:
        path = tmp_path_factory.mktemp("few") / "store.zv"
        m = len(case["objects"])
        object_cases.write(path, case, 0, m)
        asks = data.draw(st.lists(st.lists(st.integers(0, m - 1), max_size=5), max_size=3))
        selections = [np.asarray(ask, dtype=np.int64) for ask in [*asks, list(range(m))]]
        monkeypatch.setattr(object_queries, "FEW_MANIFESTS_BYTES", 10**12)
        whole = _reader(path)
        expected = [whole.read(dense) for dense in selections]
        assert DATA in whole._cache
        monkeypatch.setattr(object_queries, "FEW_MANIFESTS_BYTES", 1)
        few = _reader(path)
        for dense, want in zip(selections, expected, strict=True):
            _same(few.read(dense), want)
            assert DATA not in few._cache
        assert few._decoded.gather(np.arange(m)) is not None  # every manifest kept

    check()


def _streamlines(path: Path, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(4)
    lines = [np.cumsum(rng.normal(0, 1.5, (int(n), 3)), axis=0) for n in rng.integers(2, 9, count)]
    zv.write_polylines(path, lines, kind="streamline", chunk_shape=4.0, progress=False)
    return lines


def test_reads_pass_to_the_whole_index_once_their_objects_add_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Boxes moving over a level end up decoding the index whole once, not its blocks again
    and again: a handle reads one object per FEW_MANIFESTS_BYTES of the index by itself."""
    lines = _streamlines(tmp_path / "s.zv", 300)
    size = zv.open(tmp_path / "s.zv")._objects.reader.array_metadata(f"0/{DATA}")["shape"][0]
    monkeypatch.setattr(object_queries, "FEW_MANIFESTS_BYTES", size // 5)  # 5 objects
    objects = _reader(tmp_path / "s.zv")
    first = objects.read(np.array([7, 3, 250]))
    assert DATA not in objects._cache
    second = objects.read(np.array([3, 8, 9, 10]))  # 3 new: 6 > 5
    assert DATA in objects._cache
    for result, ids in ((first, [7, 3, 250]), (second, [3, 8, 9, 10])):
        np.testing.assert_array_equal(result.positions, np.concatenate([lines[i] for i in ids]))


def test_a_damaged_index_chunk_is_refused_by_a_read_of_few_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _streamlines(tmp_path / "s.zv", 300)
    chunk = tmp_path / "s.zv" / "0" / OBJECT_INDEX / "data" / "c" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[len(raw) // 2] ^= 0x21
    chunk.write_bytes(bytes(raw))
    monkeypatch.setattr(object_queries, "FEW_MANIFESTS_BYTES", 1)
    with pytest.raises(CorruptChunkError, match="checksum mismatch"):
        zv.open(tmp_path / "s.zv").read_objects([5])


def test_rows_of_a_global_array_come_from_their_chunks_checked_against_the_table(
    tmp_path: Path,
) -> None:
    """take_global_rows: the rows asked, from the chunks holding them; a chunk file moved
    among the others (not read) is still found by the chunk table, in the same batch."""
    walk = np.cumsum(np.full((20, 3), 0.5, np.float32), axis=0)
    zv.write_polylines(tmp_path / "s.zv", [walk], chunk_shape=8.0, progress=False)
    source = open_source(tmp_path / "s.zv")
    data = np.arange(23, dtype=np.int64) * 3 - 5
    write_global_array(source.io, "0/probe", data, (5,), 0, {}, compressed=True)
    reader = LevelReader(source.io, source.root, 0)
    for rows in ([0], [22, 3, 3, 11], [4, 5, 19, 20]):
        got = reader.take_global_rows("probe", np.array(rows, dtype=np.int64))
        np.testing.assert_array_equal(got, data[rows])
    probe = tmp_path / "s.zv" / "0" / "probe" / "c"
    three, four = (probe / "3").read_bytes(), (probe / "4").read_bytes()
    (probe / "3").write_bytes(four)
    (probe / "4").write_bytes(three)
    with pytest.raises(CorruptChunkError, match="not the chunk written at this place"):
        LevelReader(source.io, source.root, 0).take_global_rows("probe", np.array([1]))


def test_a_store_that_is_not_local_reads_the_index_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """In one round trip with the level's other global arrays, not two more."""
    store = MemoryStore()
    lines = [np.cumsum(np.full((6, 3), 0.7), axis=0) + k for k in range(40)]
    zv.write_polylines(store, lines, chunk_shape=4.0, progress=False)
    monkeypatch.setattr(object_queries, "FEW_MANIFESTS_BYTES", 1)
    opened = zv.open(store)
    np.testing.assert_array_equal(opened.read_objects([3]).positions, lines[3])
    assert DATA in opened._objects._cache
