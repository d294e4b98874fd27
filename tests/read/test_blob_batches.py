"""Fragment blobs of many chunks planned together (read/blob_batches.py) against the
per-chunk plan: the stored blocks and byte span of each chunk, or None when the per-chunk
path must name a fault."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.read.blob_batches import stored_spans

MISSING = 2**64 - 1


def naive_spans(entries: np.ndarray) -> tuple[list[int], list[int], list[int]] | None:
    """Chunk by chunk, as the per-chunk path plans them: the stored blocks are the first
    ``stored`` (those with an offset), each with an offset and a size."""
    stored, starts, ends = [], [], []
    for chunk in entries.tolist():
        n = sum(1 for offset, _ in chunk if offset != MISSING)
        own = chunk[:n]
        if any(o == MISSING or s == MISSING or o >= 2**62 or s >= 2**62 for o, s in own):
            return None
        if any(o != MISSING for o, _ in chunk[n:]):
            return None
        stored.append(n)
        starts.append(min((o for o, _ in own), default=0))
        ends.append(max((o + s for o, s in own), default=0))
    return stored, starts, ends


@st.composite
def shard_entries(draw: st.DrawFn) -> np.ndarray:
    """Index entries of a few chunks: most store their first blocks, some are irregular."""
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    value = st.integers(0, 5_000) | st.just(MISSING)
    rows = []
    for _ in range(m):
        stored = draw(st.integers(0, n))
        chunk = [[draw(st.integers(0, 5_000)), draw(st.integers(1, 600))] for _ in range(stored)]
        chunk += [[MISSING, MISSING]] * (n - stored)
        if draw(st.integers(0, 4)) == 0:  # damage: any entry, any value
            b, k = draw(st.integers(0, n - 1)), draw(st.integers(0, 1))
            chunk[b][k] = draw(value)
        rows.append(chunk)
    return np.array(rows, dtype=np.uint64)


@settings(max_examples=40, deadline=None)
@given(shard_entries())
def test_stored_spans_equal_the_per_chunk_plan(entries: np.ndarray) -> None:
    got = stored_spans(entries)
    want = naive_spans(entries)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert [a.tolist() for a in got] == [list(w) for w in want]
