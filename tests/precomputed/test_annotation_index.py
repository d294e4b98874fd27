"""The plan of an annotation source from chunk counts alone: ids locate back, cells nest and
stay within their limit, every annotation is counted once."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from zarr_vectors.precomputed.annotation_index import chunk_of, plan_annotations


@st.composite
def _nested_counts(draw: st.DrawFn) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], int]:
    """Occupied chunks of level 0 and nested coarser levels (never more per chunk)."""
    ndim = draw(st.integers(1, 3))
    cells = draw(
        st.lists(st.tuples(*[st.integers(-5, 6)] * ndim), min_size=1, max_size=30, unique=True)
    )
    chunks = np.array(sorted(cells), dtype=np.int64).reshape(-1, ndim)
    counts = {0: np.array(draw(st.lists(st.integers(1, 60), min_size=len(cells),
                                         max_size=len(cells))))}  # fmt: skip
    levels = draw(st.integers(0, 3))
    for s in range(1, levels + 1):
        counts[s] = np.maximum(counts[s - 1] // 3, 1)
    return {s: (chunks, c) for s, c in counts.items()}, draw(st.integers(1, 200))


@settings(max_examples=examples(15, 40), deadline=None)
@given(_nested_counts())
def test_plan_counts_every_annotation_once_within_limits(case: tuple[dict, int]) -> None:
    counts, limit = case
    used = sorted(counts, reverse=True)
    plan = plan_annotations(counts, used, limit)
    assert plan.total == int(counts[0][1].sum())
    chunks, finest = counts[0]
    per_chunk = np.zeros(chunks.shape[0], dtype=np.int64)
    previous = None
    for k, lv in enumerate(plan.levels):
        assert lv.level == used[k]
        assert np.array_equal(lv.grid_shape << lv.shift, plan.span)  # cells tile the grid
        if previous is not None:
            assert np.all(lv.shift <= previous.shift)  # finer levels: cells divide coarser ones
        held = plan.counts[k]
        cells = (np.stack(np.unravel_index(plan.keys[k], tuple(plan.extent)), axis=1)) >> lv.shift
        sums: dict[tuple[int, ...], int] = {}
        for cell, h in zip(map(tuple, cells.tolist()), held.tolist(), strict=True):
            sums[cell] = sums.get(cell, 0) + h
        assert max(sums.values(), default=0) == lv.limit or not sums
        single = int(held.max()) if held.size else 0
        assert lv.limit <= max(limit, single) or int(lv.shift.max()) == 0
        assert sorted(sums) == sorted(map(tuple, lv.cells.tolist()))
        flat = plan.flat(chunks)
        for f, h in zip(plan.keys[k].tolist(), held.tolist(), strict=True):
            per_chunk[np.flatnonzero(flat == f)[0]] += h
        previous = lv
    assert np.array_equal(per_chunk, finest)  # the levels together: level 0, once
    for annotation in {0, plan.total - 1, plan.total // 2}:
        k, flat_chunk, rank = plan.locate(annotation)
        assert plan.first_id(k, np.array([flat_chunk]))[0] + rank == annotation
    assert plan.locate(plan.total) is None


@settings(max_examples=40, deadline=None)
@given(st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([0.1, 0.3, 1.0, 7.5, 125.0]))
def test_chunk_of_is_the_spec_rule(p: float, size: float) -> None:
    (c,) = chunk_of(np.array([[p]]), np.array([size]))[0]
    assert float(c) * size <= p < float(c + 1) * size
