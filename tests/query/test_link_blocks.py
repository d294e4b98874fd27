"""Cross-chunk links read block by block in a bounded read (what ``zv.build_levels`` reads
level 0 with): the same objects and the same levels as the whole-table read, for a table
sorted by its first column (only the blocks meeting a read are read again) and for one in
any row order (every block scanned; spec §9.11: readers do not rely on the order)."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import LocalStore

import zarr_vectors as zv
from tests.geometry.object_cases import files
from tests.query.test_bounded_reads import _same
from zarr_vectors.format.names import CROSS_CHUNK_LINK_ATTRIBUTES, CROSS_CHUNK_LINKS
from zarr_vectors.query import ObjectReader
from zarr_vectors.query._link_blocks import blocks_meeting
from zarr_vectors.read import LevelReader
from zarr_vectors.store.arrays import write_global_array
from zarr_vectors.store.io import StoreIO
from zarr_vectors.update.object_levels import CACHE_SHARE, stored_batches, whole_index_bytes
from zarr_vectors.update.object_sources import open_source

BLOCK = 4
"""Rows a block of the rewritten tables: a few dozen blocks."""


@settings(max_examples=25, deadline=None)
@given(
    ids=st.lists(st.integers(0, 60), max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=8),
    runs=st.lists(st.tuples(st.integers(0, 60), st.integers(1, 6)), max_size=6),
)
def test_blocks_meeting_are_those_holding_an_id_of_a_run(
    ids: list[int], cuts: list[int], runs: list[tuple[int, int]]
) -> None:
    """Against the blocks of a sorted column cut anywhere, and runs made disjoint."""
    column = np.sort(np.asarray(ids, np.int64))
    bounds = np.unique(np.clip([0, *cuts, column.shape[0]], 0, column.shape[0]))
    blocks = [column[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    spans = np.array([[b.min(), b.max()] for b in blocks], np.int64).reshape(-1, 2)
    keys: set[int] = set()
    start, length = [], []
    for first, count in sorted(runs):
        if not keys or first > max(keys):
            start.append(first)
            length.append(count)
            keys.update(range(first, first + count))
    got = blocks_meeting(spans, np.asarray(start, np.int64), np.asarray(length, np.int64))
    span_keys = [set(range(int(lo), int(hi) + 1)) for lo, hi in spans]
    assert got.tolist() == [j for j, held in enumerate(span_keys) if held & keys]


def _graph(path: Path, levels: int = 0) -> None:
    """16 chains of 10 vertices with a float32 edge attribute, chunks 8: about 70 links
    across chunks."""
    rng = np.random.default_rng(1)
    m, k = 16, 10
    walks = rng.random((m, 1, 3)) * 40 + np.cumsum(rng.normal(0, 2, (m, k, 3)), axis=1)
    edges = np.array([(o * k + i, o * k + i + 1) for o in range(m) for i in range(k - 1)])
    zv.write_graph(
        path,
        walks.reshape(-1, 3).astype(np.float32),
        edges,
        vertex_objects=np.repeat(np.arange(m), k),
        edge_attributes={"w": rng.random(edges.shape[0]).astype(np.float32)},
        chunk_shape=8.0,
        bin_shape=4.0,
        levels=levels,
        progress=False,
    )


def _rewrite_links(path: Path, order: Any) -> int:
    """Write level 0's cross-chunk links and their attribute again, rows taken in
    ``order`` (a function of the row count), :data:`BLOCK` rows a chunk; the row count."""
    source = open_source(path)
    reader = LevelReader(source.io, source.root, 0)
    io = StoreIO(LocalStore(str(path)))
    names = [CROSS_CHUNK_LINKS, f"{CROSS_CHUNK_LINK_ATTRIBUTES}/w"]
    found = reader.read_globals(names)
    rows = order(found[0].shape[0])
    for name, values in zip(names, found, strict=True):
        meta = reader.array_metadata(f"0/{name}")
        chunks = (BLOCK, *values.shape[1:])
        data = values[rows]
        write_global_array(
            io, f"0/{name}", data, chunks, meta["fill_value"], meta["attributes"], compressed=True
        )
    return int(found[0].shape[0])


def _shuffled(n: int) -> np.ndarray:
    return np.random.default_rng(7).permutation(n)


@pytest.mark.parametrize("order", [np.arange, _shuffled], ids=["sorted", "shuffled"])
def test_levels_built_bounded_are_the_one_shot_levels(tmp_path: Path, order: Any) -> None:
    """Rebuilt at a budget of half the whole indexes' cache share (level 0 read bounded,
    in batches): the level files of the one-shot write, whatever the table's row order."""
    _graph(tmp_path / "one.zv", levels=1)
    shutil.copytree(tmp_path / "one.zv", tmp_path / "after.zv")  # its levels built again
    assert _rewrite_links(tmp_path / "after.zv", order) > 10 * BLOCK
    source = open_source(tmp_path / "after.zv")
    budget = whole_index_bytes(LevelReader(source.io, source.root, 0)) * CACHE_SHARE // 2
    assert len(list(stored_batches(source, budget).read())) > 1
    assert zv.build_levels(tmp_path / "after.zv", 1, progress=False, memory_budget=budget) == 1
    want, got = files(tmp_path / "one.zv"), files(tmp_path / "after.zv")
    coarse = {k for k in want if not k.startswith("0/")}
    assert {k for k in got if not k.startswith("0/")} == coarse
    assert all(got[k] == want[k] for k in coarse)


@pytest.mark.parametrize("order", [np.arange, _shuffled], ids=["sorted", "shuffled"])
def test_a_sorted_table_is_read_again_only_where_a_read_meets_it(
    tmp_path: Path, order: Any
) -> None:
    """Runs of objects read bounded are the whole-table reads; after the first read only
    blocks meeting the objects are read from a sorted table, every block from another."""
    _graph(tmp_path / "g.zv")
    n = _rewrite_links(tmp_path / "g.zv", order)
    source = open_source(tmp_path / "g.zv")
    plain = ObjectReader(LevelReader(source.io, source.root, 0))
    bounded = ObjectReader(LevelReader(source.io, source.root, 0), bounded=True)
    blocks_read: list[int] = []
    real = bounded.reader.global_rows

    def counted(path: str, start: int, stop: int) -> np.ndarray:
        blocks_read.append(path == CROSS_CHUNK_LINKS)
        return real(path, start, stop)

    bounded.reader.global_rows = counted  # type: ignore[method-assign]
    reads = []
    for first in (0, 3, 9, 15):
        dense = np.arange(first, first + 1, dtype=np.int64)
        before = sum(blocks_read)
        _same(bounded.read(dense), plain.read(dense))
        reads.append(sum(blocks_read) - before)
    assert bounded.link_blocks is not None
    assert bounded.link_blocks.ordered == (order is np.arange)
    every = -(-n // BLOCK)
    assert reads[0] == every
    if order is np.arange:
        assert max(reads[1:]) <= every // 3, reads
    else:
        assert reads[1:] == [every] * 3


def test_a_bad_entry_in_a_block_is_refused(tmp_path: Path) -> None:
    """An entry that is not a global vertex id (a lost chunk's fill, -1) is refused by a
    bounded read as by the whole-table read."""
    _graph(tmp_path / "g.zv")
    source = open_source(tmp_path / "g.zv")
    reader = LevelReader(source.io, source.root, 0)
    table = reader.read_globals([CROSS_CHUNK_LINKS])[0].copy()
    table[2 * BLOCK + 1, 1] = -1
    meta = reader.array_metadata(f"0/{CROSS_CHUNK_LINKS}")
    io = StoreIO(LocalStore(str(tmp_path / "g.zv")))
    write_global_array(
        io, f"0/{CROSS_CHUNK_LINKS}", table, (BLOCK, 2), -1, meta["attributes"], compressed=True
    )
    for bounded in (False, True):
        objects = ObjectReader(LevelReader(source.io, source.root, 0), bounded=bounded)
        with pytest.raises(zv.CorruptChunkError, match="not a global vertex id"):
            objects.read(np.arange(2, dtype=np.int64))
