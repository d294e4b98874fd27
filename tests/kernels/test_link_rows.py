"""Link rows of a read turned into result rows in one kernel equal the plain numpy twin."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from tests.kernels.test_link_entries import Case, entry_runs
from zarr_vectors.kernels.cross_links import _SLOT_MAP, _slot_map, cross_link_index
from zarr_vectors.kernels.link_rows import edge_result_rows, link_result_rows, link_row_runs

Runs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@st.composite
def gid_runs(draw: st.DrawFn) -> Runs:
    """Ascending, disjoint runs of global ids in one group (gaps between them)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.integers(0, 5))
    length = rng.integers(1, 4, size=m).astype(np.int64)
    start = (np.cumsum(rng.integers(0, 3, size=m) + length) - length).astype(np.int64)
    result = (rng.permutation(max(m, 1))[:m] * 4).astype(np.int64)
    return np.array([0, m], dtype=np.int64), start, length, result


def _cut(n: int, groups: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``0..n-1`` of groups ``groups`` cut into runs of consecutive rows of one group."""
    rng = np.random.default_rng(seed)
    new = np.ones(n, dtype=bool)
    new[1:] = (groups[1:] != groups[:-1]) | (rng.random(max(n - 1, 0)) < 0.5)
    first = np.flatnonzero(new)
    return groups[first], np.diff(np.append(first, n)).astype(np.int64)


@settings(max_examples=60, deadline=None)
@given(
    entry_runs(),
    gid_runs(),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**16),
    st.sampled_from([None, True, False]),
    st.booleans(),
)
def test_link_result_rows_equal_numpy(
    case: Case,
    gids: Runs,
    sentinels: bool,
    drop: bool,
    seed: int,
    dense: bool | None,
    narrow: bool,
) -> None:
    """Local rows by table or search, sentinels among the global ids, roots dropped: the
    twin's answer, the same first bad entries, and kept links in their read order; the
    entries int64 or int32 (as ``links/0`` stores them)."""
    entries, entry_group, *local = case
    run_group, run_rows = _cut(entries.shape[0], entry_group, seed)
    got, kept, bad_row, bad_gid = link_result_rows(
        entries.astype(np.int32) if narrow else entries,
        run_group,
        run_rows,
        tuple(local),
        gids,
        sentinels=sentinels,
        drop_rootless=drop,
        dense=dense,
    )
    want, want_kept, want_bad_row, want_bad_gid = naive.link_result_rows(
        entries, run_group, run_rows, tuple(local), gids, sentinels, drop
    )
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.arange(entries.shape[0]) if kept is None else kept, want_kept)
    assert (bad_row, bad_gid) == (want_bad_row, want_bad_gid)
    assert kept is None or kept.shape[0] < entries.shape[0]
    assert got.shape == (want_kept.shape[0], entries.shape[1])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 40), st.booleans())
def test_cross_link_index_orders_the_links_by_first_id(seed: int, n: int, ordered: bool) -> None:
    """Every link once, first ids ascending, links of one first id in table order; a
    table sorted by first id (as written) keeps its order."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 12, size=(n, 2)).astype(np.int64)
    if ordered:
        table = table[np.argsort(table[:, 0], kind="stable")]
    index = cross_link_index(table)
    np.testing.assert_array_equal(index.row, np.argsort(table[:, 0], kind="stable"))
    np.testing.assert_array_equal(np.stack([index.first, index.second], axis=1), table[index.row])


@st.composite
def edge_reads(draw: st.DrawFn) -> tuple:
    """Edges over ascending, disjoint runs of local rows per chunk slot (some entries
    negative, in a gap or of a slot outside ``bounds``), the same runs as global ids
    ``slot_flat[slot] * n_max + row`` (ascending slot chunks, near or far apart), and a
    cross-chunk link table whose ids are returned or not, in any order or sorted by first
    id."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    groups = draw(st.integers(1, 4))
    per_group = rng.integers(0, 4, size=groups)
    bounds = np.concatenate([[0], np.cumsum(per_group)]).astype(np.int64)
    m = int(bounds[-1])
    length = rng.integers(1, 4, size=m).astype(np.int64)
    gap = rng.integers(0, 3, size=m)
    start = np.empty(m, np.int64)
    for g in range(groups):
        run = slice(bounds[g], bounds[g + 1])
        start[run] = np.cumsum(gap[run] + length[run]) - length[run]
    result = (rng.permutation(max(m, 1))[:m] * 4).astype(np.int64)
    n_max = int((start + length).max(initial=0)) + int(rng.integers(1, 3))
    spread = 1000 if draw(st.booleans()) else 1  # chunks far apart: the slot searched
    slot_flat = np.sort(rng.choice(3 * groups, size=groups, replace=False)).astype(np.int64)
    slot_flat *= spread
    gid_start = slot_flat[np.repeat(np.arange(groups), per_group)] * n_max + start
    gids = (np.array([0, m], np.int64), gid_start, length, result)
    n = draw(st.integers(0, 12))
    entries = rng.integers(-2, n_max + 1, size=(n, 2)).astype(np.int64)
    entry_group = rng.integers(0, groups + (1 if draw(st.booleans()) else 0), size=n)
    run_group, run_rows = _cut(n, entry_group.astype(np.int64), int(rng.integers(0, 2**16)))
    table = rng.integers(0, (3 * groups * spread + 1) * n_max, size=(draw(st.integers(0, 30)), 2))
    if draw(st.booleans()):  # mostly returned ids
        table = gid_start[rng.integers(0, max(m, 1), size=table.shape)] if m else table
    if draw(st.booleans()):
        table = table[np.argsort(table[:, 0], kind="stable")]
    local = (bounds, start, length, result)
    return entries, run_group, run_rows, local, gids, table.astype(np.int64), slot_flat, n_max


@settings(max_examples=150, deadline=None)
@given(edge_reads(), st.booleans(), st.sampled_from([None, True, False]), st.booleans())
def test_edge_result_rows_equal_the_twins(
    case: tuple, drop: bool, dense: bool | None, narrow: bool
) -> None:
    """Edges and cross-chunk links in one call: the twins' rows one after the other, the
    same kept links, first bad entry and first bad cross-chunk link; the cross-chunk
    links found by the table of local rows (dense) or along the global id runs."""
    entries, run_group, run_rows, local, gids, table, slot_flat, n_max = case
    got = edge_result_rows(
        entries.astype(np.int32) if narrow else entries,
        run_group,
        run_rows,
        local,
        gids,
        (cross_link_index(table), slot_flat, n_max),
        drop_rootless=drop,
        dense=dense,
    )
    rows, kept, n_local, mine, bad_row, bad_cross = naive.edge_result_rows(
        entries, run_group, run_rows, local, gids, table, drop
    )
    np.testing.assert_array_equal(got.rows, rows)
    np.testing.assert_array_equal(
        np.arange(entries.shape[0]) if got.kept is None else got.kept, kept
    )
    np.testing.assert_array_equal(got.mine, mine)
    assert (got.local, got.bad_row, got.bad_cross) == (n_local, bad_row, bad_cross)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 400), max_size=12, unique=True))
def test_slot_map_equals_its_twin(chunks: list[int]) -> None:
    """Each slot's index at its chunk less the first slot's chunk, -1 at the chunks
    between; empty when the chunks spread wider than the map's bound."""
    slot_flat = np.sort(np.array(chunks, np.int64))
    got = _slot_map(slot_flat)
    width = int(slot_flat[-1] - slot_flat[0] + 1) if len(chunks) else 0
    per_slot, slack = _SLOT_MAP
    want = np.full(width if width <= per_slot * len(chunks) + slack else 0, -1, np.int64)
    if want.shape[0]:
        want[slot_flat - slot_flat[0]] = np.arange(len(chunks))
    np.testing.assert_array_equal(got, want)


def test_edge_rows_have_two_entries() -> None:
    local = (np.array([0, 1]), np.array([0]), np.array([2]), np.array([0]))
    links = cross_link_index(np.empty((0, 2), np.int64))
    with pytest.raises(ValueError, match="two entries"):
        edge_result_rows(
            np.zeros((1, 3)), [0], [1], local, local, (links, np.array([0]), 4), drop_rootless=False
        )


def test_runs_that_do_not_hold_the_entries_are_refused() -> None:
    local = (np.array([0, 1]), np.array([0]), np.array([2]), np.array([0]))
    with pytest.raises(ValueError, match="as many rows"):
        link_result_rows(
            np.zeros((3, 2)), [0], [2], local, local, sentinels=False, drop_rootless=False
        )


@st.composite
def fragment_refs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """References to fragments of a few slots, each fragment's link rows one range (some
    empty; fragments of a slot back to back or with gaps), named once or more, any order."""
    n_slots = draw(st.integers(1, 4))
    ranges: dict[tuple[int, int], tuple[int, int]] = {}
    for s in range(n_slots):
        row = 0
        for f in range(draw(st.integers(1, 5))):
            row += draw(st.integers(0, 2))  # a gap, or none: touching fragments
            n = draw(st.integers(0, 3))
            ranges[(s, f)] = (row, n)
            row += n
    keys = sorted(ranges)
    picks = draw(st.lists(st.sampled_from(keys), min_size=0, max_size=12))
    slot = np.array([k[0] for k in picks], dtype=np.int64)
    fragment = np.array([k[1] for k in picks], dtype=np.int64)
    starts = np.array([ranges[k][0] for k in picks], dtype=np.int64)
    counts = np.array([ranges[k][1] for k in picks], dtype=np.int64)
    return slot, fragment, starts, counts


@settings(max_examples=200, deadline=None)
@given(fragment_refs(), st.booleans())
def test_link_row_runs_equal_the_twin(refs: tuple, wide: bool) -> None:
    slot, fragment, starts, counts = refs
    if wide and fragment.size:  # a sparse key range: the comparison sort
        fragment = fragment * 100_003
    got = link_row_runs(slot, fragment, starts, counts)
    want = naive.link_row_runs(slot, fragment, starts, counts)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert not np.any((got[0][1:] == got[0][:-1]) & (got[1][1:] == got[2][:-1]))  # joined
