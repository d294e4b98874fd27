"""The spans and blocks of many chunks' blobs (kernels) against array operations (their
plain numpy twins)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels import set_kernel_mode
from zarr_vectors.kernels.blob_spans import LARGEST, blob_blocks, stored_spans

entry = st.one_of(
    st.tuples(st.integers(0, 500), st.integers(0, 60)),  # a block as written
    st.just((-1, -1)),  # not stored
    st.tuples(st.sampled_from([-5, LARGEST, 2**63 - 1]), st.integers(-2, 60)),  # damaged
    st.tuples(st.integers(0, 500), st.sampled_from([-1, LARGEST])),
)


@st.composite
def chunk_entries(draw: st.DrawFn) -> np.ndarray:
    """``(m, n_blocks, 2)`` int64 entries, mostly regular (stored blocks first)."""
    m, n_blocks = draw(st.integers(0, 6)), draw(st.integers(1, 4))
    if draw(st.booleans()):  # anything, damage included
        rows = draw(st.lists(entry, min_size=m * n_blocks, max_size=m * n_blocks))
        return np.array(rows, np.int64).reshape(m, n_blocks, 2)
    out = np.full((m, n_blocks, 2), -1, np.int64)
    for i in range(m):
        at = draw(st.integers(0, 400))
        for b in range(draw(st.integers(0, n_blocks))):
            size = draw(st.integers(0, 50))
            out[i, b] = (at, size)
            at += size + draw(st.integers(0, 3))
    return out


@pytest.mark.parametrize("mode", ["python", "compiled"])
@given(entries=chunk_entries(), short=st.lists(st.integers(0, 4), min_size=6, max_size=6))
@settings(max_examples=80, deadline=None)
def test_spans_and_blocks_equal_array_operations(
    entries: np.ndarray, short: list[int], mode: str
) -> None:
    previous = set_kernel_mode(mode)
    try:
        got = stored_spans(entries)
        stored, start, end, regular = got
        want = naive.stored_spans(entries)
        assert regular == want[3]
        if not regular:
            return
        for g, w in zip(got[:3], want[:3], strict=True):
            np.testing.assert_array_equal(g, w)
        # fetched spans, some cut short (a file shorter than its index says)
        lengths = np.maximum(end - start - np.array(short[: end.shape[0]], np.int64), 0)
        blocks = blob_blocks(entries, stored, start, lengths)
    finally:
        set_kernel_mode(previous)
    for g, w in zip(blocks, naive.blob_blocks(entries, stored, start, lengths), strict=True):
        np.testing.assert_array_equal(g, w)
    starts, sizes, _, _, _ = blocks
    total = int(lengths.sum())
    inside = starts < total
    assert (starts[inside] + sizes[inside] <= total).all()  # every block placed in the buffer
