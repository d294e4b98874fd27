"""The box-query kernels against plain-numpy twins written from their definitions."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.helpers import examples
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.box_rows import (
    block_slots,
    box_chunks,
    box_runs,
    select_rows,
    slot_spans,
    slots_holding,
    take_rows,
    turn_spans,
)

STEP = 0.5  # coordinates on a grid that bin and chunk edges and box faces fall on


# -- plain twins ----------------------------------------------------------------------------


def naive_box_runs(
    cells: np.ndarray,
    chunk_shape: np.ndarray,
    bin_shape: np.ndarray,
    bins: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    covered: np.ndarray,
    counts: np.ndarray,
    table_row: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
) -> list[tuple[int, int, int, int, int]]:
    """Per row of every chunk: keep it (met bins only), with its faces; then merge runs."""
    rows: list[tuple[int, int, int, int]] = []  # chunk, row, faces_lo, faces_hi
    for i in range(cells.shape[0]):
        if covered[i]:
            rows += [(i, r, 0, 0) for r in range(int(counts[i]))]
            continue
        per_row = []
        for f in range(int(np.prod(bins))):
            index = np.unravel_index(f, tuple(int(b) for b in bins))
            met, f_lo, f_hi = True, 0, 0
            for d, j in enumerate(index):
                edges = cells[i, d] * chunk_shape[d] + np.arange(bins[d]) * bin_shape[d]
                edges = np.append(edges, (cells[i, d] + 1.0) * chunk_shape[d])
                e0, e1 = edges[j], edges[j + 1]
                met &= bool(e0 < hi[d] and lo[d] < e1)
                f_lo |= int(e0 < lo[d]) << d
                f_hi |= int(hi[d] < e1) << d
            if met:
                first = int(starts[table_row[i], f])
                per_row += [
                    (i, r, f_lo, f_hi) for r in range(first, first + sizes[table_row[i], f])
                ]
        rows += sorted(per_row, key=lambda t: t[1])
    runs: list[list[int]] = []
    for i, r, f_lo, f_hi in rows:
        last = runs[-1] if runs else None
        if last and last[0] == i and last[2] == r and last[3] == f_lo and last[4] == f_hi:
            last[2] = r + 1
        else:
            runs.append([i, r, r + 1, f_lo, f_hi])
    return [tuple(run) for run in runs]  # type: ignore[misc]


def naive_select(
    positions: np.ndarray,
    run_row: np.ndarray,
    run_len: np.ndarray,
    faces_lo: np.ndarray,
    faces_hi: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> np.ndarray:
    kept = []
    for q in range(run_row.shape[0]):
        rows = np.arange(run_row[q], run_row[q] + run_len[q])
        p = positions[rows].astype(np.float64)
        ok = np.ones(rows.shape[0], dtype=bool)
        for d in range(positions.shape[1]):
            if faces_lo[q] >> d & 1:
                ok &= lo[d] <= p[:, d]
            if faces_hi[q] >> d & 1:
                ok &= p[:, d] < hi[d]
        kept.append(rows[ok])
    return np.concatenate(kept) if kept else np.empty(0, np.int64)


# -- strategies -----------------------------------------------------------------------------


@st.composite
def chunk_tables(draw: st.DrawFn) -> dict[str, Any]:
    """Chunks with random per-bin row counts, in bin order or shuffled, and a box."""
    ndim = draw(st.integers(1, 4))
    bins = np.array(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    bin_shape = np.array(
        draw(st.lists(st.sampled_from([0.5, 1.0, 1.5]), min_size=ndim, max_size=ndim))
    )
    chunk_shape = bins * bin_shape
    k = draw(st.integers(0, 4))
    cells = np.array(
        draw(
            st.lists(
                st.lists(st.integers(-2, 2), min_size=ndim, max_size=ndim), min_size=k, max_size=k
            )
        ),
        dtype=np.float64,
    ).reshape(k, ndim)
    n_bins = int(np.prod(bins))
    sizes = np.array(
        draw(
            st.lists(
                st.lists(st.integers(0, 3), min_size=n_bins, max_size=n_bins),
                min_size=k,
                max_size=k,
            )
        ),
        dtype=np.int64,
    ).reshape(k, n_bins)
    starts = np.zeros_like(sizes)
    for i in range(k):
        order = np.arange(n_bins)
        if draw(st.booleans()):
            order = np.array(draw(st.permutations(list(range(n_bins)))), dtype=np.int64)
        ends = np.cumsum(sizes[i, order])
        starts[i, order] = ends - sizes[i, order]
    coords = st.integers(-8, 8).map(lambda v: v * STEP)
    a = np.array(draw(st.lists(coords, min_size=ndim, max_size=ndim)))
    b = np.array(draw(st.lists(coords, min_size=ndim, max_size=ndim)))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    covered = np.array(draw(st.lists(st.booleans(), min_size=k, max_size=k)), dtype=bool)
    return {
        "cells": cells,
        "chunk_shape": chunk_shape.astype(np.float64),
        "bin_shape": bin_shape.astype(np.float64),
        "bins": bins.astype(np.int64),
        "lo": lo.astype(np.float64),
        "hi": hi.astype(np.float64),
        "covered": covered,
        "counts": sizes.sum(axis=1),
        "table_row": np.arange(k, dtype=np.int64),
        "starts": starts,
        "sizes": sizes,
    }


# -- properties ----------------------------------------------------------------------------


@settings(max_examples=examples(37, 150), deadline=None)
@given(chunk_tables())
def test_box_runs_match_the_twin(case: dict[str, Any]) -> None:
    got = box_runs(**case)
    want = naive_box_runs(**case)
    assert list(zip(*(g.tolist() for g in got), strict=True)) == want


def test_box_runs_of_a_covered_and_a_cut_chunk() -> None:
    """Chunk 0 is covered whole; chunk 1 (bins [0,1) and [1,2) in 1-D) is cut at 1.5."""
    got = box_runs(
        cells=np.array([[0.0], [1.0]]),
        chunk_shape=np.array([2.0]),
        bin_shape=np.array([1.0]),
        bins=np.array([2]),
        lo=np.array([0.0]),
        hi=np.array([3.5]),
        covered=np.array([True, False]),
        counts=np.array([5, 7]),
        table_row=np.array([0, 0]),
        starts=np.array([[0, 3]]),
        sizes=np.array([[3, 4]]),
    )
    # chunk 1 spans [2, 4): bin [2, 3) covered (rows 0..3), bin [3, 4) cut by hi (rows 3..7)
    assert [g.tolist() for g in got] == [[0, 1, 1], [0, 0, 3], [5, 3, 7], [0, 0, 0], [0, 0, 1]]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(1, 30)), max_size=8),
    st.sampled_from([1, 4, 7, 16]),
)
def test_block_slots_match_the_twin(raw: list[tuple[int, int, int]], r: int) -> None:
    runs: list[tuple[int, int, int]] = []  # chunk, start, stop: ascending, disjoint per chunk
    for chunk, gap, length in sorted(raw):
        start = runs[-1][2] + gap if runs and runs[-1][0] == chunk else gap
        runs.append((chunk, start, start + length))
    chunks = np.array([c for c, _, _ in runs], dtype=np.int64)
    starts = np.array([a for _, a, _ in runs], dtype=np.int64)
    stops = np.array([b for _, _, b in runs], dtype=np.int64)
    slot_chunk, slot_block, run_row = block_slots(chunks, starts, stops, r)
    blocks = sorted({(c, b) for c, a, z in runs for b in range(a // r, (z - 1) // r + 1)})
    assert list(zip(slot_chunk.tolist(), slot_block.tolist(), strict=True)) == blocks
    for q, (c, a, _) in enumerate(runs):  # a run's first row lies in its first block's slot
        slot = blocks.index((c, a // r))
        assert run_row[q] == slot * r + a % r


POSITION = st.one_of(
    st.integers(-8, 8).map(lambda v: v * STEP), st.sampled_from([np.nan, np.inf, -np.inf])
)


@st.composite
def selections(draw: st.DrawFn) -> tuple[Any, ...]:
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    ndim = draw(st.integers(1, 4))
    n = draw(st.integers(0, 40))
    positions = draw(hnp.arrays(dtype, (n, ndim), elements=POSITION))
    m = draw(st.integers(0, 5))
    run_row = np.array(draw(st.lists(st.integers(0, n), min_size=m, max_size=m)), np.int64)
    run_len = np.array([draw(st.integers(0, n - a)) for a in run_row.tolist()], np.int64)
    masks = st.integers(0, 2**ndim - 1)
    faces_lo = np.array(draw(st.lists(masks, min_size=m, max_size=m)), np.int64)
    faces_hi = np.array(draw(st.lists(masks, min_size=m, max_size=m)), np.int64)
    lo = np.array(draw(st.lists(st.integers(-8, 8), min_size=ndim, max_size=ndim))) * STEP
    hi = lo + np.array(draw(st.lists(st.integers(0, 8), min_size=ndim, max_size=ndim))) * STEP
    return positions, run_row, run_len, faces_lo, faces_hi, lo, hi


@settings(max_examples=examples(50, 200), deadline=None)
@given(selections())
def test_select_rows_matches_the_twin(case: tuple[Any, ...]) -> None:
    np.testing.assert_array_equal(select_rows(*case), naive_select(*case))


def test_select_rows_of_a_run_with_every_face() -> None:
    positions = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [1.0, np.nan]], dtype=np.float32)
    all_faces = np.array([3], dtype=np.int64)
    got = select_rows(
        positions, np.array([0]), np.array([4]), all_faces, all_faces, np.ones(2), np.full(2, 2.0)
    )
    np.testing.assert_array_equal(got, [1])  # 2.0 is on the open face, NaN is outside


@settings(max_examples=examples(37, 150), deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda ndim: st.tuples(
            hnp.arrays(
                np.int64, st.tuples(st.integers(0, 12), st.just(ndim)), elements=st.integers(0, 5)
            ),
            hnp.arrays(np.int64, ndim, elements=st.integers(-3, 3)),
            hnp.arrays(np.float64, ndim, elements=st.sampled_from([0.5, 1.0, 2.5])),
            hnp.arrays(np.float64, ndim, elements=st.integers(-10, 10).map(lambda v: v * STEP)),
            hnp.arrays(np.float64, ndim, elements=st.integers(0, 16).map(lambda v: v * STEP)),
        )
    )
)
def test_box_chunks_match_the_twin(case: tuple[np.ndarray, ...]) -> None:
    coords, origin, chunk_shape, lo, size = case
    hi = lo + size
    if coords.shape[0] and np.random.default_rng(int(size.sum() * 2)).random() < 0.3:
        lo = lo.copy()
        lo[0] = -np.inf
    lower = (coords + origin).astype(np.float64) * chunk_shape
    upper = (coords + origin + 1).astype(np.float64) * chunk_shape
    meets = np.all((lower < hi) & (lo < upper), axis=1)
    covers = np.all((lo <= lower) & (upper <= hi), axis=1)
    picked, covered = box_chunks(coords, origin, chunk_shape, lo, hi)
    np.testing.assert_array_equal(picked, np.flatnonzero(meets))
    np.testing.assert_array_equal(covered, covers[meets])


def naive_slot_spans(
    slot_chunk: np.ndarray,
    slot_block: np.ndarray,
    wanted: np.ndarray,
    first: np.ndarray,
    entries: np.ndarray,
) -> tuple[list[int], list[int], list[tuple[int, int, int]], int]:
    """Per wanted slot its entry; spans: blocks of a chunk stored back to back, merged."""
    starts: list[int] = []
    lengths: list[int] = []
    spans: list[tuple[int, int, int]] = []
    for i, s in enumerate(wanted.tolist()):
        c, b = int(slot_chunk[s]), int(slot_block[s])
        if not 0 <= b < first[c + 1] - first[c]:
            return [], [], [], i
        offset, nbytes = (int(v) for v in entries[first[c] + b])
        if offset < 0 or nbytes < 0:
            return [], [], [], i
        starts.append(sum(lengths))
        lengths.append(nbytes)
        if spans and spans[-1][0] == c and spans[-1][2] == offset:
            spans[-1] = (c, spans[-1][1], offset + nbytes)
        else:
            spans.append((c, offset, offset + nbytes))
    return starts, lengths, spans, -1


@st.composite
def slot_tables(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    n_chunks = draw(st.integers(1, 4))
    blocks = draw(st.lists(st.integers(0, 5), min_size=n_chunks, max_size=n_chunks))
    first = np.concatenate([[0], np.cumsum(blocks)]).astype(np.int64)
    entries = np.empty((int(first[-1]), 2), dtype=np.int64)
    for c, n in enumerate(blocks):  # stored back to back in some order, a gap or a hole
        order = draw(st.permutations(list(range(n))))
        offset = 0
        for b in order:
            offset += draw(st.sampled_from([0, 0, 0, 3]))
            size = draw(st.integers(4, 9))
            entries[first[c] + b] = (offset, size)
            offset += size
        if n and draw(st.integers(0, 9)) == 0:
            entries[first[c] + draw(st.integers(0, n - 1))] = (-1, -1)  # not stored
    slots = sorted(
        draw(st.sets(st.tuples(st.integers(0, n_chunks - 1), st.integers(0, 6)), max_size=12))
    )
    slot_chunk = np.array([c for c, _ in slots], dtype=np.int64)
    slot_block = np.array([b for _, b in slots], dtype=np.int64)
    keep = [draw(st.booleans()) for _ in slots]
    wanted = np.flatnonzero(np.array(keep, dtype=bool)).astype(np.int64)
    return slot_chunk, slot_block, wanted, first, entries


@settings(max_examples=examples(50, 200), deadline=None)
@given(slot_tables())
def test_slot_spans_match_the_twin(case: tuple[np.ndarray, ...]) -> None:
    starts, lengths, chunk, start, stop, bad = slot_spans(*case)
    want_starts, want_lengths, want_spans, want_bad = naive_slot_spans(*case)
    assert bad == want_bad
    if bad < 0:
        assert starts.tolist() == want_starts
        assert lengths.tolist() == want_lengths
        got = list(zip(chunk.tolist(), start.tolist(), stop.tolist(), strict=True))
        assert got == want_spans
        assert sum(b - a for _, a, b in want_spans) == sum(want_lengths)


def naive_turn_spans(
    starts: np.ndarray, spans: list[tuple[int, int, int]], per_turn: int
) -> list[list[tuple[int, int, int]]]:
    """Per turn, its pieces: the bytes of the buffer its blocks occupy (from its first
    block's start to the next turn's), each mapped to (chunk, offset) through the spans
    read back to back, grouped into runs of consecutive offsets of one chunk."""
    where = [(c, offset) for c, a, b in spans for offset in range(a, b)]
    cuts = [int(starts[i]) for i in range(0, len(starts), per_turn)] + [len(where)]
    turns = []
    for lo, hi in itertools.pairwise(cuts):
        pieces: list[tuple[int, int, int]] = []
        for c, offset in where[lo:hi]:
            if pieces and pieces[-1][0] == c and pieces[-1][2] == offset:
                pieces[-1] = (c, pieces[-1][1], offset + 1)
            else:
                pieces.append((c, offset, offset + 1))
        turns.append(pieces)
    return turns


@st.composite
def stored_slots(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """:func:`slot_tables` whose wanted slots are all stored (many blocks, no failure)."""
    _, _, _, first, entries = draw(slot_tables())
    chunk, block = [], []
    for c in range(first.shape[0] - 1):
        for b in range(int(first[c + 1] - first[c])):
            if entries[first[c] + b, 0] >= 0 and draw(st.integers(0, 3)):
                chunk.append(c)
                block.append(b)
    every = np.arange(len(chunk), dtype=np.int64)
    return np.array(chunk, dtype=np.int64), np.array(block, dtype=np.int64), every, first, entries


@settings(max_examples=examples(50, 200), deadline=None)
@given(stored_slots(), st.integers(1, 5))
def test_turn_spans_match_the_twin(case: tuple[np.ndarray, ...], per_turn: int) -> None:
    starts, lengths, chunk, start, stop, bad = slot_spans(*case)
    assert bad == -1
    turn_piece, p_chunk, p_start, p_stop = turn_spans(starts, lengths, chunk, start, stop, per_turn)
    spans = list(zip(chunk.tolist(), start.tolist(), stop.tolist(), strict=True))
    want = naive_turn_spans(starts, spans, per_turn)
    assert turn_piece.shape[0] == len(want) + 1
    pieces = list(zip(p_chunk.tolist(), p_start.tolist(), p_stop.tolist(), strict=True))
    got = [pieces[a:b] for a, b in itertools.pairwise(turn_piece.tolist())]
    assert got == want


def test_turn_spans_cut_a_span_between_turns() -> None:
    starts = np.array([0, 5, 9], dtype=np.int64)
    lengths = np.array([5, 4, 6], dtype=np.int64)
    one = np.zeros(1, dtype=np.int64)
    turn_piece, chunk, start, stop = turn_spans(starts, lengths, one, one + 100, one + 115, 2)
    assert turn_piece.tolist() == [0, 1, 2]
    assert list(zip(chunk.tolist(), start.tolist(), stop.tolist(), strict=True)) == [
        (0, 100, 109),
        (0, 109, 115),
    ]


def test_turn_spans_refuse_blocks_outside_their_spans() -> None:
    starts = np.array([0, 5], dtype=np.int64)
    lengths = np.array([5, 4], dtype=np.int64)
    one = np.zeros(1, dtype=np.int64)
    with pytest.raises(InvalidInputError, match="back to back"):
        turn_spans(starts, lengths, one, one, one + 7, 1)  # 9 bytes of blocks, 7 of spans
    with pytest.raises(InvalidInputError, match="back to back"):
        turn_spans(starts + 1, lengths, one, one, one + 10, 1)  # a gap before the first
    with pytest.raises(InvalidInputError, match="at least 1"):
        turn_spans(starts, lengths, one, one, one + 9, 0)


def test_slot_spans_merge_blocks_stored_back_to_back() -> None:
    first = np.array([0, 3], dtype=np.int64)
    entries = np.array([[0, 5], [5, 4], [20, 6]], dtype=np.int64)
    every = np.arange(3, dtype=np.int64)
    starts, lengths, chunk, start, stop, bad = slot_spans(
        np.zeros(3, np.int64), every, every, first, entries
    )
    assert bad == -1
    assert starts.tolist() == [0, 5, 9]
    assert lengths.tolist() == [5, 4, 6]
    assert list(zip(chunk.tolist(), start.tolist(), stop.tolist(), strict=True)) == [
        (0, 0, 9),
        (0, 20, 26),
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda r: st.tuples(
            st.just(r),
            st.integers(0, 8).flatmap(
                lambda n: st.tuples(
                    st.just(n), st.sets(st.integers(0, max(0, n * r - 1)), max_size=n * r)
                )
            ),
        )
    )
)
def test_slots_holding_match_the_twin(case: tuple[int, tuple[int, set[int]]]) -> None:
    r, (n_slots, raw) = case
    rows = np.array(sorted(v for v in raw if v < n_slots * r), dtype=np.int64)
    np.testing.assert_array_equal(slots_holding(rows, n_slots, r), np.unique(rows // r))


@settings(max_examples=examples(25, 100), deadline=None)
@given(selections())
def test_select_rows_into_a_given_buffer(case: tuple[Any, ...]) -> None:
    total = int(case[2].sum())
    out = np.full(total + 3, -7, dtype=np.int64)
    got = select_rows(*case, out=out)
    want = naive_select(*case)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(out[: want.shape[0]], want)
    if total:
        with pytest.raises(ValueError, match="shorter"):
            select_rows(*case, out=np.empty(total - 1, dtype=np.int64))


@settings(max_examples=examples(25, 100), deadline=None)
@given(
    st.sampled_from([np.float32, np.float64, np.int32]),
    st.sampled_from([(3,), (1,), (2,), ()]),
    st.integers(0, 30).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(st.integers(0, max(n - 1, 0)), max_size=20))
    ),
)
def test_take_rows_equals_numpy_take(
    dtype: type, row_shape: tuple[int, ...], case: tuple[int, list[int]]
) -> None:
    n, picks = case
    rows = np.arange(n * int(np.prod(row_shape)), dtype=dtype).reshape(n, *row_shape)
    keep = np.array(picks if n else [], dtype=np.int64)
    got = take_rows(rows, keep)
    want = np.take(rows, keep, axis=0)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bad", [-1, 4])
def test_take_rows_refuses_rows_out_of_range(bad: int) -> None:
    with pytest.raises(IndexError, match="outside"):
        take_rows(np.zeros((4, 3), dtype=np.float32), np.array([0, bad], dtype=np.int64))
