"""The open store's cache of decoded row blocks (:mod:`zarr_vectors.read.block_cache`)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.read import BlockCache
from zarr_vectors.store.shards import RowLayout
from tests.helpers import examples

_BOX = ([20.0, 20.0, 20.0], [60.0, 60.0, 60.0])


def _lines(seed: int, n: int, low: float = 0.0, high: float = 100.0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, (8, 3)).astype(np.float32) for _ in range(n)]


def _write(path: Path) -> None:
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
    assert a.object_ids is not None and b.object_ids is not None
    np.testing.assert_array_equal(a.object_ids, b.object_ids)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.attributes["w"], b.attributes["w"])


def _blocks(n: int, width: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n, width), dtype=np.float32)


def test_kept_blocks_fill_their_slots_and_the_others_are_reported() -> None:
    cache = BlockCache(2**20)
    rows = _blocks(4, 6, 0)
    cache.keep("a", np.array([10, 11, 12, 13]), rows, np.array([0, 2]))
    out = np.zeros((3, 6), dtype=np.float32)
    missing = cache.fill("a", np.array([12, 13, 10]), out, np.arange(3))
    assert missing.tolist() == [1]
    np.testing.assert_array_equal(out[[0, 2]], rows[[2, 0]])
    assert not out[1].any()
    assert cache.fill("b", np.array([10]), out[:1], np.arange(1)).tolist() == [0]  # per array


def test_the_budget_holds_and_the_least_recently_used_blocks_go_first() -> None:
    row_bytes = 4 * 6 + 24  # one block of one float32 row of 6, and its bookkeeping
    cache = BlockCache(4 * row_bytes)
    rows = _blocks(8, 6, 1)
    cache.keep("a", np.arange(4), rows[:4], np.arange(4))
    cache.fill("a", np.arange(4), np.empty((4, 6), np.float32), np.array([0]))  # 0: used last
    cache.keep("a", np.arange(4, 6), rows[4:6], np.arange(2))
    assert cache.nbytes <= cache.budget and len(cache) == 4
    held = cache.cached("a", np.arange(6)).tolist()
    assert held == [True, False, False, True, True, True]
    cache.keep("b", np.arange(2), rows[:2], np.arange(2))  # another array: "a" dropped
    assert cache.nbytes <= cache.budget
    assert cache.cached("b", np.arange(2)).all()


def test_a_cache_of_no_bytes_keeps_nothing_and_a_pickled_one_starts_empty() -> None:
    empty = BlockCache(0)
    empty.keep("a", np.arange(2), _blocks(2, 3, 2), np.arange(2))
    assert len(empty) == 0 and empty.nbytes == 0
    cache = BlockCache(2**20)
    cache.keep("a", np.arange(2), _blocks(2, 3, 2), np.arange(2))
    copy = pickle.loads(pickle.dumps(cache))
    assert len(cache) == 2 and len(copy) == 0 and copy.budget == cache.budget


@settings(max_examples=examples(25, 300), deadline=None)
@given(
    st.integers(1, 12),
    st.lists(
        st.tuples(st.sampled_from("ab"), st.lists(st.integers(0, 15), min_size=1, max_size=6)),
        min_size=1,
        max_size=12,
    ),
)
def test_the_cache_returns_only_what_was_kept_within_its_budget(
    budget_blocks: int, steps: list[tuple[str, list[int]]]
) -> None:
    """Kept blocks come back exactly (a block's value is a function of its array and
    number); whatever is dropped is reported missing; the pools never pass the budget."""
    width = {"a": 3, "b": 5}
    cache = BlockCache(budget_blocks * (4 * 5 + 24))

    def value(path: str, numbers: np.ndarray) -> np.ndarray:
        base = numbers[:, None] * 100.0 + np.arange(width[path]) + (path == "b") * 0.5
        return base.astype(np.float32)

    for path, asked in steps:
        numbers = np.unique(np.array(asked, dtype=np.int64))
        out = np.full((numbers.shape[0], width[path]), -1.0, dtype=np.float32)
        missing = cache.fill(path, numbers, out, np.arange(numbers.shape[0]))
        filled = np.setdiff1d(np.arange(numbers.shape[0]), missing)
        np.testing.assert_array_equal(out[filled], value(path, numbers[filled]))
        cache.keep(path, numbers, value(path, numbers), missing)
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
    assert after.object_ids is not None and len(after.object_ids) == len(before.object_ids) + 5
    _same(refreshing.query(_BOX), after)  # cached again, from the new version


def test_levels_of_a_store_share_one_cache(tmp_path: Path) -> None:
    path = tmp_path / "lod.zv"
    zv.write_polylines(path, _lines(4, 40), chunk_shape=25.0, levels=1, progress=False)
    store = zv.open(path)
    fine, coarse = store.query(_BOX, level=0), store.query(_BOX, level=1)
    assert store._level_reader(0).blocks is store._level_reader(1).blocks is store._blocks
    paths = set(store._blocks._pools)
    assert any(p.startswith("0/") for p in paths) and any(p.startswith("1/") for p in paths)
    plain = zv.open(path, cache_bytes=0)
    np.testing.assert_array_equal(fine.positions, plain.query(_BOX, level=0).positions)
    np.testing.assert_array_equal(coarse.positions, plain.query(_BOX, level=1).positions)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "64"])
def test_cache_bytes_must_be_a_count_of_bytes(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "lines.zv"
    zv.write_polylines(path, _lines(5, 2), chunk_shape=25.0, progress=False)
    with pytest.raises(InvalidInputError, match="cache_bytes"):
        zv.open(path, cache_bytes=bad)  # type: ignore[arg-type]
