"""The blocks of a read found among a cache's blocks in one kernel pass equal a dict
lookup: hits, pool slots and the slots marked used."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.block_lookup import (
    add_blocks,
    cached_rows_in_box,
    claim_slots,
    copy_cached_runs,
    locate_blocks,
)


@st.composite
def lookups(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Cached numbers (ascending, distinct) in a permutation of pool slots (some free),
    their last uses, and distinct wanted numbers in any order, cached or not."""
    cached = sorted(draw(st.sets(st.integers(0, 60), max_size=20)))
    n_slots = len(cached) + draw(st.integers(0, 4))
    slots = draw(st.permutations(range(n_slots)))[: len(cached)]
    used = np.array(draw(st.lists(st.integers(-1, 9), min_size=n_slots, max_size=n_slots)))
    wanted = draw(st.lists(st.integers(0, 70), unique=True, max_size=25))
    return (
        np.array(cached, np.int64),
        np.array(slots, np.int64),
        used.astype(np.int64),
        np.array(wanted, np.int64),
    )


@settings(max_examples=200, deadline=None)
@given(case=lookups(), tick=st.integers(10, 20))
def test_locate_equals_the_twin(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tick: int
) -> None:
    numbers, place, used, wanted = case
    mine, theirs = used.copy(), used.copy()
    got = locate_blocks(numbers, place, mine, wanted, tick)
    want = naive.locate_blocks(numbers, place, theirs, wanted, tick)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2] == want[2] == int((~got[0]).sum())
    np.testing.assert_array_equal(mine, theirs)
    # only the hits' slots changed, to the tick
    changed = np.flatnonzero(mine != used)
    assert set(changed.tolist()) <= set(got[1][got[0]].tolist())


@st.composite
def pools(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A pool's cached numbers (ascending, distinct) in distinct slots, each occupied slot
    used at some tick, the other slots free (-1)."""
    cached = sorted(draw(st.sets(st.integers(0, 60), max_size=20)))
    n_slots = len(cached) + draw(st.integers(0, 5))
    slots = draw(st.permutations(range(n_slots)))[: len(cached)]
    used = np.full(n_slots, -1, np.int64)
    for slot in slots:
        used[slot] = draw(st.integers(0, 12))
    return np.array(cached, np.int64), np.array(slots, np.int64), used


@settings(max_examples=200, deadline=None)
@given(pool=pools(), n=st.integers(0, 26), tick=st.integers(0, 12))
def test_claimed_slots_equal_the_twin(
    pool: tuple[np.ndarray, np.ndarray, np.ndarray], n: int, tick: int
) -> None:
    numbers, place, used = pool
    mine, theirs = used.copy(), used.copy()
    got = claim_slots(numbers, place, mine, n, tick)
    want = naive.claim_slots(numbers, place, theirs, n, tick)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(mine, theirs)
    slots = got[0]
    assert slots.shape[0] in (0, n)
    assert len(set(slots.tolist())) == slots.shape[0]  # each slot once
    assert not np.any(used[slots] == tick)  # never a slot the read itself uses
    assert np.all(mine[slots] == -1)  # all free until the blocks are added


@settings(max_examples=200, deadline=None)
@given(pool=pools(), data=st.data(), tick=st.integers(13, 20))
def test_added_blocks_equal_the_twin(
    pool: tuple[np.ndarray, np.ndarray, np.ndarray], data: st.DataObject, tick: int
) -> None:
    numbers, place, used = pool
    free = np.flatnonzero(used < 0)
    k = data.draw(st.integers(0, free.shape[0]))
    fresh = [b for b in range(80) if b not in set(numbers.tolist())]
    new = np.array(data.draw(st.permutations(fresh))[:k], np.int64)
    slots = np.array(data.draw(st.permutations(free.tolist()))[:k], np.int64)
    mine, theirs = used.copy(), used.copy()
    got = add_blocks(numbers, place, mine, new, slots, tick)
    want = naive.add_blocks(numbers, place, theirs, new, slots, tick)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(mine, theirs)
    assert np.all(np.diff(got[0]) > 0)  # ascending, distinct


@st.composite
def run_reads(draw: st.DrawFn) -> tuple[np.ndarray, tuple[np.ndarray, ...], int, int]:
    """Chunks (distinct flat indices) and row runs of them, ascending and disjoint within a
    chunk, chunks in order; sometimes a run past the chunk's blocks or an empty run."""
    r = draw(st.integers(1, 4))
    n_blocks = draw(st.integers(1, 4))
    flat = sorted(draw(st.sets(st.integers(0, 9), min_size=1, max_size=4)))
    chunk, start, stop = [], [], []
    for c in range(len(flat)):
        edges = sorted(draw(st.sets(st.integers(0, r * n_blocks + 1), max_size=6)))
        for a, z in zip(edges[::2], edges[1::2], strict=False):
            chunk.append(c), start.append(a), stop.append(z)
    if draw(st.booleans()) and chunk:
        stop[-1] = start[-1]  # an empty run: refused
    runs = tuple(np.array(x, np.int64) for x in (chunk, start, stop))
    return np.array(flat, np.int64), runs, r, n_blocks


def _pool(data: st.DataObject, every: int) -> tuple[np.ndarray, np.ndarray, int]:
    """A cache holding every block number up to ``every``, or all but one, at places in a
    permutation of its slots (some free): the numbers, their places and the slots."""
    cached = list(range(every + 1))
    if data.draw(st.booleans()):  # a block missing
        cached.pop(data.draw(st.integers(0, every)))
    n_slots = len(cached) + data.draw(st.integers(0, 3))
    place = np.array(data.draw(st.permutations(range(n_slots)))[: len(cached)], np.int64)
    return np.array(cached, np.int64), place, n_slots


@settings(max_examples=150, deadline=None)
@given(read=run_reads(), data=st.data())
def test_copy_cached_runs_equals_the_twin(
    read: tuple[np.ndarray, tuple[np.ndarray, ...], int, int], data: st.DataObject
) -> None:
    """The rows copied out in one call are the twin's slots' rows gathered, run after run;
    nothing is copied nor marked when a block is missing; with chunk boxes, a row outside
    its chunk's box (a placement check) declines the copy too."""
    flat, runs, r, n_blocks = read
    numbers, place, n_slots = _pool(data, int(flat.max()) * n_blocks + n_blocks)
    blocks = np.arange(n_slots * r * 2, dtype=np.float32).reshape(-1, 2)  # 2 values a row
    blocks[data.draw(st.integers(0, blocks.shape[0] - 1))] = data.draw(st.floats(-1, 1e3))
    k = flat.shape[0]
    where = np.array(data.draw(st.permutations(range(k + 1)))[:k], np.int64)  # one box unused
    high = float(blocks.max()) + data.draw(st.sampled_from([0.0, 1.0]))  # 0: one row outside
    lower, upper = np.full((k + 1, 2), -1.0), np.full((k + 1, 2), high)
    boxes = (where, lower, upper) if data.draw(st.booleans()) else None
    mine, theirs = np.full(n_slots, -1, np.int64), np.full(n_slots, -1, np.int64)
    n = int(np.maximum(runs[2] - runs[1], 0).sum())
    out = np.full((n, 2), np.nan, np.float32)
    raw = blocks.view(np.uint8).reshape(n_slots, -1)
    copied = copy_cached_runs(flat, runs, (r, n_blocks), (numbers, place, mine), 5, raw, out, boxes)  # type: ignore[arg-type]
    want = naive.cached_run_slots(flat, runs, r, n_blocks, (numbers, place, theirs.copy()), 5)  # type: ignore[arg-type]
    expected = None
    if want is not None:
        expected = naive.copy_slot_runs(blocks, want[0], r, want[1], runs[2] - runs[1])
        if boxes is not None and not (expected < high).all():
            expected = None  # a row outside its chunk's box
        else:
            theirs[want[0]] = 5
    assert copied == (expected is not None)
    np.testing.assert_array_equal(mine, theirs)
    if expected is not None:
        np.testing.assert_array_equal(out, expected)


@settings(max_examples=150, deadline=None)
@given(read=run_reads(), data=st.data())
def test_cached_rows_in_box_equals_the_twin(
    read: tuple[np.ndarray, tuple[np.ndarray, ...], int, int], data: st.DataObject
) -> None:
    """The rows tested where they lie in one call: the twin's gather tested by numpy,
    the first row outside its chunk's box found; nothing marked when a block is missing."""
    flat, runs, r, n_blocks = read
    numbers, place, n_slots = _pool(data, int(flat.max()) * n_blocks + n_blocks)
    values = st.floats(3.75, 6.25, width=32)  # mostly in every chunk box, in the box or not
    size = n_slots * r * 2
    blocks = np.array(data.draw(st.lists(values, min_size=size, max_size=size)), np.float32)
    blocks = blocks.reshape(-1, 2)
    k = flat.shape[0]
    where = np.array(data.draw(st.permutations(range(k + 1)))[:k], np.int64)  # one box unused
    corners = st.lists(st.floats(-2, 4), min_size=2 * k + 2, max_size=2 * k + 2)
    lower = np.array(data.draw(corners)).reshape(-1, 2)
    upper = lower + 8.0
    box = (np.array([0.0, 1.0]), np.array([6.0, np.inf]))
    mine, theirs = np.full(n_slots, -1, np.int64), np.full(n_slots, -1, np.int64)
    got = cached_rows_in_box(
        flat,
        runs,
        (r, n_blocks),
        (numbers, place, mine),
        5,
        blocks,
        (where, lower, upper),
        box,  # type: ignore[arg-type]
    )
    want = naive.cached_run_slots(flat, runs, r, n_blocks, (numbers, place, theirs), 5)  # type: ignore[arg-type]
    assert (got is None) == (want is None)
    np.testing.assert_array_equal(mine, theirs)
    if got is None or want is None:
        return
    lengths = runs[2] - runs[1]
    boxes = (lower[where[runs[0]]], upper[where[runs[0]]])  # each run's chunk box
    expected = naive.slot_rows_in_box(blocks, want[0], r, want[1], lengths, boxes, *box)
    contained, misplaced = got
    assert misplaced == expected[1]
    if misplaced < 0:
        np.testing.assert_array_equal(contained, expected[0])
