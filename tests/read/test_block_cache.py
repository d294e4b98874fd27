"""The open store's cache of decoded row blocks (:mod:`zarr_vectors.read.block_cache`)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from benchmarks._latency import LatencyStore
from tests.helpers import examples
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.read import BlockCache
from zarr_vectors.store.shards import RowLayout

_BOX = ([20.0, 20.0, 20.0], [60.0, 60.0, 60.0])


def _lines(seed: int, n: int, low: float = 0.0, high: float = 100.0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, (8, 3)).astype(np.float32) for _ in range(n)]


def _write(path: Path | MemoryStore) -> None:
    lines = _lines(1, 60)
    weight = np.arange(480, dtype=np.float32)  # one per vertex
    zv.write_polylines(  # blocks of 16 rows: runs of rows cross blocks
        path,
        lines,
        chunk_shape=25.0,
        attributes={"w": weight},
        options=zv.WriteOptions(rows_per_block=16),
        progress=False,
    )


def _same(a: zv.QueryResult, b: zv.QueryResult) -> None:
    assert a.object_ids is not None
    assert b.object_ids is not None
    np.testing.assert_array_equal(a.object_ids, b.object_ids)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.attributes["w"], b.attributes["w"])


def _value(path: str, numbers: np.ndarray, r: int) -> np.ndarray:
    """The rows of blocks ``numbers`` of array ``path`` (``r`` rows of 3 each): a function
    of the block, its row and the array."""
    rows = np.arange(r)[None, :, None] * 10 + np.arange(3) + (path == "b") * 0.5
    return (numbers[:, None, None] * 1000 + rows).reshape(-1, 3).astype(np.float32)


class _Decoder:
    """A ``decode`` for :meth:`BlockCache.read_runs` that writes :func:`_value` and
    records the slots it was asked."""

    def __init__(self, path: str, numbers: np.ndarray, r: int) -> None:
        self.path, self.numbers, self.r = path, numbers, r
        self.asked: list[int] = []

    def __call__(self, slots: np.ndarray, places: np.ndarray, rows: np.ndarray) -> None:
        self.asked += slots.tolist()
        blocks = _value(self.path, self.numbers[slots], self.r).reshape(-1, self.r, 3)
        rows.reshape(-1, self.r, 3)[places] = blocks


def _read(
    cache: BlockCache, path: str, numbers: list[int], r: int, runs: list[tuple[int, int]]
) -> tuple[bool, np.ndarray, list[int]]:
    """Read ``runs`` (first slot row, length) of blocks ``numbers`` through ``cache``:
    whether it could, the rows, and the slots decoded."""
    blocks = np.array(numbers, dtype=np.int64)
    first, length = (np.array(c, dtype=np.int64) for c in zip(*runs, strict=True))
    out = np.full((int(length.sum()), 3), -1.0, dtype=np.float32)
    decoder = _Decoder(path, blocks, r)
    done = cache.read_runs(path, blocks, r, (first, length), out, decoder)
    return done, out, decoder.asked


def _expected(path: str, numbers: list[int], r: int, runs: list[tuple[int, int]]) -> np.ndarray:
    every = _value(path, np.array(numbers, dtype=np.int64), r)
    return np.concatenate([every[a : a + n] for a, n in runs])


def test_runs_come_from_the_cache_and_only_missing_blocks_are_decoded() -> None:
    cache = BlockCache(2**20)
    runs = [(1, 5), (9, 2)]  # the first run crosses from block 0 into block 1
    done, out, asked = _read(cache, "a", [10, 11, 12], 4, runs)
    assert done
    assert asked == [0, 1, 2]
    np.testing.assert_array_equal(out, _expected("a", [10, 11, 12], 4, runs))
    done, out, asked = _read(cache, "a", [12, 13], 4, [(0, 8)])
    assert done
    assert asked == [1]
    np.testing.assert_array_equal(out, _expected("a", [12, 13], 4, [(0, 8)]))
    assert _read(cache, "b", [12], 4, [(0, 4)])[2] == [0]  # another array, other blocks
    assert len(cache) == 5
    assert cache.cached("a", np.array([13, 14])).tolist() == [True, False]


def test_the_budget_holds_and_the_least_recently_used_blocks_go_first() -> None:
    block = 4 * 3 * 4 + 24  # 4 rows of 3 float32, and the block's bookkeeping
    cache = BlockCache(4 * block)
    _read(cache, "a", [0, 1, 2, 3], 4, [(0, 16)])
    _read(cache, "a", [0], 4, [(0, 1)])  # block 0 used last
    _read(cache, "a", [4, 5], 4, [(0, 8)])
    assert cache.nbytes <= cache.budget
    assert len(cache) == 4
    assert cache.cached("a", np.arange(6)).tolist() == [True, False, False, True, True, True]
    done, _, _ = _read(cache, "a", [6, 7, 8, 9, 10], 4, [(0, 20)])  # more than the budget
    assert not done
    assert cache.nbytes <= cache.budget
    assert _read(cache, "b", [0, 1], 4, [(0, 8)])[0]  # another array: "a" dropped for it
    assert cache.nbytes <= cache.budget
    assert cache.cached("b", np.arange(2)).all()


def test_a_failed_decode_caches_nothing() -> None:
    cache = BlockCache(2**20)

    def failing(slots: np.ndarray, places: np.ndarray, rows: np.ndarray) -> None:
        rows[:] = 7
        raise ValueError("damaged")

    out = np.empty((4, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="damaged"):
        cache.read_runs("a", np.array([1]), 4, (np.array([0]), np.array([4])), out, failing)
    assert len(cache) == 0
    done, got, asked = _read(cache, "a", [1], 4, [(0, 4)])
    assert done
    assert asked == [0]
    np.testing.assert_array_equal(got, _expected("a", [1], 4, [(0, 4)]))


def test_a_cache_of_no_bytes_keeps_nothing_and_a_pickled_one_starts_empty() -> None:
    assert not _read(BlockCache(0), "a", [1, 2], 4, [(0, 8)])[0]
    cache = BlockCache(2**20)
    _read(cache, "a", [1, 2], 4, [(0, 8)])
    copy = pickle.loads(pickle.dumps(cache))
    assert len(cache) == 2
    assert len(copy) == 0
    assert copy.budget == cache.budget


@settings(max_examples=examples(25, 300), deadline=None)
@given(
    st.integers(1, 12),
    st.lists(
        st.tuples(st.sampled_from("ab"), st.sets(st.integers(0, 15), min_size=1, max_size=6)),
        min_size=1,
        max_size=12,
    ),
)
def test_the_cache_returns_only_what_was_decoded_within_its_budget(
    budget_blocks: int, steps: list[tuple[str, set[int]]]
) -> None:
    """Every read equals the blocks' rows (a function of array and block); a block is
    decoded again only once forgotten; the pools never pass the budget."""
    r = 2
    cache = BlockCache(budget_blocks * (r * 3 * 4 + 24))
    for path, asked in steps:
        numbers = sorted(asked)
        n = len(numbers)
        runs = [(r * i + 1, 2 if i + 1 < n else 1) for i in range(n)]  # across blocks
        held = cache.cached(path, np.array(numbers, dtype=np.int64))
        done, out, decoded = _read(cache, path, numbers, r, runs)
        if done:
            np.testing.assert_array_equal(out, _expected(path, numbers, r, runs))
            assert decoded == np.flatnonzero(~held).tolist()
        else:
            assert not decoded
            assert len(numbers) - int(held.sum()) > 0
        assert cache.nbytes <= cache.budget


def test_a_repeated_box_is_decoded_once_and_equals_an_uncached_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lines.zv"
    _write(path)
    expected = zv.open(path, cache_bytes=0).query(_BOX)
    store = zv.open(path)
    _same(store.query(_BOX), expected)
    decoded: list[int] = []
    original = RowLayout.decode_blocks_at

    def counted(self: RowLayout, *args: object, **kwargs: object) -> None:
        decoded.append(1)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RowLayout, "decode_blocks_at", counted)
    again = store.query(_BOX)
    _same(again, expected)
    assert not decoded  # every block came from the cache
    assert 0 < store._blocks.nbytes <= store._blocks.budget


def test_results_do_not_share_memory_with_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "lines.zv"
    _write(path)
    expected = zv.open(path, cache_bytes=0).query(_BOX)
    store = zv.open(path)
    first = store.query(_BOX)
    pools = [pool.data for pool in store._blocks._pools.values()]
    assert pools
    for column in (first.positions, first.attributes["w"]):
        assert not any(np.shares_memory(column, pool) for pool in pools)
        column[...] = -7  # the caller may change what it got
    _same(store.query(_BOX), expected)


def test_a_small_budget_holds_over_moving_boxes_and_every_answer_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "lines.zv"
    _write(path)
    store = zv.open(path, cache_bytes=3000)
    plain = zv.open(path, cache_bytes=0)
    rng = np.random.default_rng(3)
    for low in rng.uniform(0, 70, (12, 3)):
        box = (low, low + 30.0)
        _same(store.query(box), plain.query(box))
        assert store._blocks.nbytes <= 3000


def test_an_append_through_another_handle_is_never_answered_from_the_cache(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lines.zv"
    _write(path)
    store = zv.open(path)
    refreshing = zv.open(path, refresh=True)
    before = store.query(_BOX)
    _same(refreshing.query(_BOX), before)
    new = _lines(2, 5, low=30.0, high=50.0)  # inside the box
    zv.append_polylines(path, new, attributes={"w": np.zeros(40, np.float32)})
    with pytest.raises(zv.StoreChangedError):
        store.query(_BOX)
    after = refreshing.query(_BOX)
    _same(after, zv.open(path, cache_bytes=0).query(_BOX))
    assert after.object_ids is not None
    assert len(after.object_ids) == len(before.object_ids) + 5
    _same(refreshing.query(_BOX), after)  # cached again, from the new version


def test_levels_of_a_store_share_one_cache(tmp_path: Path) -> None:
    path = tmp_path / "lod.zv"
    zv.write_polylines(path, _lines(4, 40), chunk_shape=25.0, levels=1, progress=False)
    store = zv.open(path)
    fine, coarse = store.query(_BOX, level=0), store.query(_BOX, level=1)
    assert store._level_reader(0).blocks is store._level_reader(1).blocks is store._blocks
    paths = set(store._blocks._pools)
    assert any(p.startswith("0/") for p in paths)
    assert any(p.startswith("1/") for p in paths)
    plain = zv.open(path, cache_bytes=0)
    np.testing.assert_array_equal(fine.positions, plain.query(_BOX, level=0).positions)
    np.testing.assert_array_equal(coarse.positions, plain.query(_BOX, level=1).positions)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "64"])
def test_cache_bytes_must_be_a_count_of_bytes(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "lines.zv"
    zv.write_polylines(path, _lines(5, 2), chunk_shape=25.0, progress=False)
    with pytest.raises(InvalidInputError, match="cache_bytes"):
        zv.open(path, cache_bytes=bad)  # type: ignore[arg-type]


def test_object_storage_fetches_only_the_blocks_not_cached() -> None:
    """Over a non-local store (blocks planned and fetched in one batch before decoding): a
    box asked again fetches no row block, and a moved box, partly cached, is exact."""
    inner = MemoryStore()
    _write(inner)
    store = LatencyStore(inner)
    plain = zv.open(inner, cache_bytes=0)
    opened = zv.open(store)
    _same(opened.query(_BOX), plain.query(_BOX))
    store.log.reset()
    _same(opened.query(_BOX), plain.query(_BOX))
    assert not [r for r in store.log.requests if "/vertices/c/" in r.key]
    moved = ([30.0, 20.0, 20.0], [70.0, 60.0, 60.0])
    _same(opened.query(moved), plain.query(moved))
