"""The whole plan of an object read in one kernel equals the steps it fuses."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.object_plan import object_read_plan


@st.composite
def object_refs(draw: st.DrawFn) -> tuple:
    """References to the fragments of a few chunk slots (fragments back to back or with
    gaps, some empty, each with a range of link rows), named once or more in any order by
    a few objects; now and then a start past its slot's rows, a fragment named by two
    references with other rows (overlap) or a fragment or owner out of range."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_slots, n_max = draw(st.integers(1, 4)), draw(st.integers(4, 40))
    frags: list[tuple[int, int, int, int, int, int]] = []  # slot, fragment, rows, links
    slot_rows = np.zeros(n_slots, np.int64)
    for s in range(n_slots):
        row = link = 0
        for f in range(int(rng.integers(1, 5))):
            row += int(rng.integers(0, 2))
            link += int(rng.integers(0, 2))
            n, k = int(rng.integers(0, 4)), int(rng.integers(0, 3))
            frags.append((s, f, row, n, link, k))
            row, link = row + n, link + k
        slot_rows[s] = row + int(rng.integers(0, 2))
    picks = rng.integers(0, len(frags), size=int(rng.integers(0, 14)))
    table = np.array(frags, dtype=np.int64).reshape(-1, 6)[picks]
    slot, fragment, starts, sizes, link_starts, link_counts = (table[:, i].copy() for i in range(6))
    n_objects = int(rng.integers(1, 4))
    owner = rng.integers(0, n_objects, size=slot.shape[0]).astype(np.int64)
    if slot.shape[0] and draw(st.booleans()):
        damage = draw(st.sampled_from(["start", "owner", "fragment", "overlap"]))
        i = int(rng.integers(slot.shape[0]))
        if damage == "start":
            starts[i] = slot_rows[slot[i]] + 1 if rng.random() < 0.5 else -1
        elif damage == "owner":
            owner[i] = n_objects
        elif damage == "fragment":
            fragment[i] = -1
        else:
            starts[i] = int(rng.integers(0, slot_rows[slot[i]] + 1))
    chunk_flat = np.cumsum(rng.integers(1, 4, size=n_slots)).astype(np.int64)
    links = (fragment, link_starts, link_counts) if draw(st.booleans()) else None
    return (slot, starts, sizes, owner), slot_rows, chunk_flat, n_max, n_objects, links


@settings(max_examples=150, deadline=None)
@given(object_refs())
def test_object_read_plan_equals_the_steps(case: tuple) -> None:
    got = object_read_plan(*case)
    want = naive.object_read_plan(*case)
    if want is None:
        assert got is None
        return
    assert got is not None
    for name, a, b in zip(got.plan._fields, got.plan, want[0], strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert (got.pieces is None) == (want[1] is None)
    if got.pieces is not None:
        for a, b in zip(got.pieces, want[1], strict=True):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got.offsets, want[2])
    assert (got.link_runs is None) == (want[3] is None)
    if got.link_runs is not None:
        for a, b in zip(got.link_runs, want[3], strict=True):
            np.testing.assert_array_equal(a, b)
    # the rows placed are every reference's rows, one reference after another
    sizes = case[0][2]
    if got.pieces is not None:
        assert int(got.pieces[2].sum()) == int(sizes.sum())
    assert int(got.offsets[-1]) == int(sizes.sum())


def test_no_reference() -> None:
    empty = np.empty(0, np.int64)
    found = object_read_plan((empty,) * 4, np.array([3]), np.array([0]), 4, 2, (empty,) * 3)
    assert found is not None
    assert found.offsets.tolist() == [0, 0, 0]
    assert found.plan.run_slot.shape == (0,)
    assert found.link_runs is not None
    assert found.link_runs[0].shape == (0,)
