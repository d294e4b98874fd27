"""A box query of objects reuses the ``vertices`` rows its owners lookup decoded: the rows
of the chunks held are copied from them, the others read, and the answer is the one of the
owners lookup followed by a plain read, and of brute force."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.format.names import VERTICES
from zarr_vectors.query import ObjectReader
from zarr_vectors.query._held_rows import HeldRows, copy_held_rows, read_vertex_columns
from zarr_vectors.query.regions import BoxRegion
from zarr_vectors.read import LevelReader, RowRuns
from zarr_vectors.read.block_cache import BlockCache
from zarr_vectors.update.object_sources import open_source


def _skeletons(path: Any) -> list[np.ndarray]:
    """12 chains of 30 nodes over chunks of 10 (8-row blocks); the nodes of each."""
    rng = np.random.default_rng(7)
    nodes = [rng.uniform(0, 40, 3) + np.cumsum(rng.normal(0, 2, (30, 3)), 0) for _ in range(12)]
    base = np.repeat(np.arange(12) * 30, 30)
    chain = np.tile(np.arange(30) - 1, 12)
    zv.write_skeletons(
        path,
        np.concatenate(nodes),
        parents=np.where(chain >= 0, chain + base, -1),
        vertex_objects=np.repeat(np.arange(12), 30),
        radius=np.arange(360, dtype=np.float32),
        chunk_shape=10.0,
        options=zv.WriteOptions(rows_per_block=8),
        progress=False,
    )
    return nodes


def _reader(path: Any, cache: BlockCache | None = None) -> LevelReader:
    source = open_source(path)
    return LevelReader(source.io, source.root, 0, cache)


def test_a_box_read_with_held_rows_is_the_plain_read_and_brute_force(tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    nodes = _skeletons(path)
    lo, hi = np.array([5.0, 5.0, 5.0]), np.array([25.0, 22.0, 30.0])
    objects = ObjectReader(_reader(path))
    held = objects._owners_and_rows(BoxRegion(lo, hi))[1]
    assert held is not None
    assert held.chunk_flat.shape[0] > 1  # the box cuts chunks
    got = objects.read_region(BoxRegion(lo, hi))
    plain = objects.read(objects.owners_in_region(BoxRegion(lo, hi)))
    inside = [i for i, v in enumerate(nodes) if np.any(np.all((v >= lo) & (v < hi), axis=1))]
    assert 0 < len(inside) < len(nodes)
    np.testing.assert_array_equal(got.object_ids, inside)
    np.testing.assert_array_equal(got.positions, np.concatenate([nodes[i] for i in inside]))
    for name in ("positions", "offsets", "vertex_object_ids", "edges"):
        np.testing.assert_array_equal(getattr(got, name), getattr(plain, name), err_msg=name)
    np.testing.assert_array_equal(got.attributes["radius"], plain.attributes["radius"])


def test_rows_in_the_cache_are_tested_there_and_read_again_from_it(tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    nodes = _skeletons(path)
    lo, hi = np.array([5.0, 5.0, 5.0]), np.array([25.0, 22.0, 30.0])
    inside = [i for i, v in enumerate(nodes) if np.any(np.all((v >= lo) & (v < hi), axis=1))]
    plain = ObjectReader(_reader(path)).read_region(BoxRegion(lo, hi))
    for budget in (2**20, 0):  # a budget of 0 keeps nothing: the rows are copied out, held
        reader = _reader(path, BlockCache(budget))
        objects = ObjectReader(reader)
        owners, held = objects._owners_and_rows(BoxRegion(lo, hi))
        np.testing.assert_array_equal(owners, inside)
        assert held is not None
        assert held.cached is (budget > 0)
        assert (held.rows is None) is (budget > 0)  # tested in the cache, not copied out
        for _ in range(2):  # cold, then warm (every block cached)
            got = objects.read_region(BoxRegion(lo, hi))
            np.testing.assert_array_equal(got.object_ids, inside)
            np.testing.assert_array_equal(got.positions, np.concatenate([nodes[i] for i in inside]))
            for name in ("offsets", "vertex_object_ids", "edges"):
                np.testing.assert_array_equal(getattr(got, name), getattr(plain, name), name)
            np.testing.assert_array_equal(got.attributes["radius"], plain.attributes["radius"])


def test_held_chunks_are_copied_and_the_others_read(tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    _skeletons(path)
    reader = _reader(path)
    flat, n, runs = _three_chunks(reader)
    names = [VERTICES, "radius"]
    want = reader.read_runs(names, runs)
    first = want[0][: n[0]] + 1000  # marked: must come from the held rows, not the store
    second = want[0][n[0] : n[0] + n[1] - 1] + 1000  # one row short: its run is read
    held = HeldRows(flat[:2], np.array([n[0], n[1] - 1]), np.concatenate([first, second]))
    copied = copy_held_rows(reader, runs, flat, held)
    got = read_vertex_columns(reader, names, runs, copied, turns=False)
    expected = want[0].copy()
    expected[: n[0]] += 1000
    np.testing.assert_array_equal(got[0], expected)
    np.testing.assert_array_equal(got[1], want[1])


def test_object_storage_reads_every_row_in_one_wave() -> None:
    store = MemoryStore()  # not a local directory: no second request wave for the split
    _skeletons(store)
    reader = _reader(store)
    chunks, counts = reader.occupied_chunks(None, None)
    flat = np.ravel_multi_index(tuple(chunks[:1].T), reader.grid.shape).astype(np.int64)
    runs = RowRuns([tuple(chunks[0])], np.zeros(1, np.int64), np.zeros(1, np.int64), counts[:1])
    want = reader.read_runs([VERTICES], runs)[0]
    held = HeldRows(flat, counts[:1].astype(np.int64), want + 1000)
    assert copy_held_rows(reader, runs, flat, held) is None
    got = read_vertex_columns(reader, [VERTICES], runs, None, turns=False)
    np.testing.assert_array_equal(got[0], want)


def test_first_rows_of_held_and_other_chunks() -> None:
    held = HeldRows(np.array([3, 7, 9]), np.array([4, 0, 5]), np.zeros((9, 2)))
    base, count = held.first_rows(np.array([9, 1, 7, 3, 12]))
    np.testing.assert_array_equal(base, [4, -1, 4, 0, -1])
    np.testing.assert_array_equal(count, [5, 0, 0, 4, 0])


def test_held_chunks_left_in_the_cache_are_read_there(tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    _skeletons(path)
    reader = _reader(path, BlockCache(2**20))
    flat, n, runs = _three_chunks(reader)
    names = [VERTICES, "radius"]
    want = reader.read_runs(names, runs)
    held = HeldRows(flat[:2], n[:2], None, True)  # tested in the cache, not copied out
    copied = copy_held_rows(reader, runs, flat, held)
    assert copied is not None
    assert copied[1].tolist() == [True, True, False]
    got = read_vertex_columns(reader, names, runs, copied, turns=False)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def _three_chunks(reader: LevelReader) -> tuple[np.ndarray, np.ndarray, RowRuns]:
    """The flat indices and row counts of the first three occupied chunks, and every row
    of them as row runs."""
    chunks, counts = reader.occupied_chunks(None, None)
    assert chunks.shape[0] >= 3
    keys = [tuple(c) for c in chunks[:3].tolist()]
    flat = np.ravel_multi_index(tuple(chunks[:3].T), reader.grid.shape).astype(np.int64)
    n = counts[:3].astype(np.int64)
    return flat, n, RowRuns(keys, np.arange(3, dtype=np.int64), np.zeros(3, np.int64), n)
