"""The blocks of a read found among a cache's blocks in one kernel pass equal a dict
lookup: hits, pool slots and the slots marked used."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.block_lookup import locate_blocks


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
