"""The row filter of reads by id (member_rows) against a plain-numpy twin."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from zarr_vectors.kernels.id_members import member_rows


def naive_member_rows(
    ids: np.ndarray, run_row: np.ndarray, lengths: np.ndarray, wanted: np.ndarray
) -> np.ndarray:
    """Every row of the runs, kept when ``np.isin`` finds its id in ``wanted``."""
    rows = [np.arange(a, a + n, dtype=np.int64) for a, n in zip(run_row, lengths, strict=True)]
    candidates = np.concatenate([np.empty(0, dtype=np.int64), *rows])
    return candidates[np.isin(ids[candidates], wanted)]


@st.composite
def cases(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """Ids drawn from a few values (runs of equal ids, as objects give), some runs over
    them (ascending, disjoint, some empty), and wanted ids (some absent)."""
    dtype = draw(st.sampled_from([np.int64, np.int32, np.uint64]))
    big = [2**63 + 1, 2**64 - 1] if dtype == np.uint64 else [-(2**31), -1]
    values = st.sampled_from([0, 1, 2, 7, 2**31 - 1, *big])
    groups = draw(st.lists(st.tuples(values, st.integers(1, 6)), max_size=12))
    ids = np.repeat(np.array([v for v, _ in groups], dtype=dtype), [k for _, k in groups]).astype(
        dtype
    )
    n = ids.shape[0]
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    starts = np.array(cuts[0::2], dtype=np.int64)
    stops = np.array(cuts[1::2], dtype=np.int64)
    starts = starts[: stops.shape[0]]
    wanted = np.unique(np.array(draw(st.lists(values | st.just(5), max_size=5)), dtype=dtype))
    return ids, starts, stops - starts, wanted


@settings(max_examples=examples(40, 400), deadline=None)
@given(cases())
def test_member_rows_equals_its_twin(case: tuple[np.ndarray, ...]) -> None:
    ids, run_row, lengths, wanted = case
    out = np.full(max(1, int(lengths.sum())), -1, dtype=np.int64)
    n = member_rows(ids, run_row, lengths, wanted, out)
    assert np.array_equal(out[:n], naive_member_rows(ids, run_row, lengths, wanted))


def test_member_rows_looks_up_again_after_a_change_of_id() -> None:
    """A run of equal ids reuses one lookup; the next id (kept or not) is looked up."""
    ids = np.array([5, 5, 5, 2, 2, 5, 9, 9], dtype=np.int64)
    out = np.empty(8, dtype=np.int64)
    n = member_rows(ids, np.array([0, 5]), np.array([5, 3]), np.array([5, 9]), out)
    assert out[:n].tolist() == [0, 1, 2, 5, 6, 7]
