"""The one-pass steps of an object read equal the sorts they replace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.query._fragment_refs import (
    FragmentTable,
    joined_runs,
    slot_order,
)

Array = np.ndarray[Any, Any]


@st.composite
def references(draw: st.DrawFn) -> tuple[Array, Array, Array]:
    """Slots, starts in ``[0, rows]`` (ties and empty last fragments included), rows."""
    k = draw(st.integers(1, 6))
    rows = np.asarray(draw(st.lists(st.integers(0, 9), min_size=k, max_size=k)), np.int64)
    n = draw(st.integers(0, 30))
    slot = np.asarray(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)), np.int64)
    starts = np.asarray(
        [draw(st.integers(0, int(rows[s]))) for s in slot.tolist()], dtype=np.int64
    ).reshape(-1)
    return slot, starts, rows


@settings(max_examples=80, deadline=None)
@given(references(), st.booleans())
def test_slot_order_equals_lexsort(case: tuple[Array, Array, Array], sparse: bool) -> None:
    slot, starts, rows = case
    if sparse:  # a key range too wide for a table: the one-key stable sort
        rows = rows + 10**9
    np.testing.assert_array_equal(slot_order(slot, starts, rows), np.lexsort((starts, slot)))


def test_slot_order_of_starts_outside_their_slot_is_lexsort() -> None:
    slot, starts, rows = np.array([0, 0, 1]), np.array([5, -1, 0]), np.array([2, 2])
    np.testing.assert_array_equal(slot_order(slot, starts, rows), np.lexsort((starts, slot)))


def test_rows_of_gathers_each_reference_and_refuses_a_missing_fragment() -> None:
    ranges = [(np.array([0, 2, 2]), np.array([2, 0, 3])), (np.array([0]), np.array([4]))]
    table = FragmentTable.of(ranges, np.array([5, 4]))
    chunks = np.array([[0, 1], [3, 0]])
    starts, sizes = table.rows_of(np.array([1, 0, 0]), np.array([0, 2, 1]), chunks)
    assert starts.tolist() == [0, 2, 2]
    assert sizes.tolist() == [4, 3, 0]
    with pytest.raises(CorruptChunkError, match=r"names fragment 3 of 3"):
        table.rows_of(np.array([1, 0]), np.array([0, 3]), chunks)


@settings(max_examples=80, deadline=None)
@given(
    pieces=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(1, 4)), min_size=0, max_size=12
    )
)
def test_joined_runs_hold_the_same_rows_in_fewer_runs(pieces: list[tuple[int, int, int]]) -> None:
    slot, start, stop, at = [], [], [], {}
    for s, gap, n in sorted(pieces, key=lambda p: p[0]):  # ascending runs within a slot
        first = at.get(s, 0) + gap
        slot.append(s), start.append(first), stop.append(first + n)
        at[s] = first + n
    runs = [np.asarray(x, dtype=np.int64) for x in (slot, start, stop)]
    j_slot, j_start, j_stop = joined_runs(*runs)

    def rows(s: Array, a: Array, b: Array) -> list[tuple[int, int]]:
        return [(int(k), r) for k, x, y in zip(s, a, b, strict=True) for r in range(x, y)]

    assert rows(j_slot, j_start, j_stop) == rows(*runs)
    assert not np.any((j_slot[1:] == j_slot[:-1]) & (j_start[1:] == j_stop[:-1]))
