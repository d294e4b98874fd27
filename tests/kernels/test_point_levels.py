"""The point-level kernels equal their plain-numpy twins (spec §4.3.2)."""

from __future__ import annotations

import itertools
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import THOROUGH, examples
from zarr_vectors.kernels.point_levels import (
    _select,
    merged_sample,
    merged_sample_chunks,
    sample_keys,
    sample_segments,
    segment_extremes,
    segment_modes,
    segment_sums,
)
from zarr_vectors.kernels.sampling import row_hashes_numpy

_SALT = (0x589965CC75374CC3, 0x1D8E4E27C47D124F, 0x2D358DCCAA6C78A5, 0x8BB84B93962EACC9)
_WEIGHT = (0xD6E8FEB86659FD93, 0xA0761D6478BD642F, 0xE7037ED1A0B428DB, 0x8EBC6AF09C88C6E3)
_M = 2**64


def spec_key(row: np.ndarray) -> int:
    """The sample key of spec §4.3.2, with Python integers, word by word."""
    fmt = "<I" if row.dtype == np.float32 else "<Q"
    h = 0x9E3779B97F4A7C15
    for d, value in enumerate(row):
        word = struct.unpack(fmt, value.tobytes())[0]
        h = (h + (word ^ _SALT[d]) * _WEIGHT[d]) % _M
    h ^= h >> 30
    h = h * 0xBF58476D1CE4E5B9 % _M
    h ^= h >> 27
    h = h * 0x94D049BB133111EB % _M
    return h ^ (h >> 31)


def sample_twin(keys: np.ndarray, offsets: np.ndarray, cap: int) -> np.ndarray:
    """Per segment, rank rows by (key, position) with lexsort; keep ranks below ``cap``."""
    keep = np.zeros(keys.shape[0], dtype=bool)
    for a, b in itertools.pairwise(offsets):
        order = np.lexsort((np.arange(b - a), keys[a:b]))
        keep[a + order[:cap]] = True
    return keep


def sums_twin(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    out = np.zeros((offsets.shape[0] - 1, values.shape[1]))
    for s, (a, b) in enumerate(itertools.pairwise(offsets)):
        for i in range(a, b):
            out[s] = out[s] + values[i].astype(np.float64)
    return out


def extremes_twin(values: np.ndarray, offsets: np.ndarray, largest: bool) -> np.ndarray:
    rows = []
    for a, b in itertools.pairwise(offsets):
        seg = values[a:b]
        if seg.dtype == bool:
            rows.append(seg.any(axis=0) if largest else seg.all(axis=0))
            continue
        pick = np.argmax(seg, axis=0) if largest else np.argmin(seg, axis=0)  # first NaN/extreme
        rows.append(seg[pick, np.arange(seg.shape[1])])
    return np.asarray(rows, dtype=values.dtype).reshape(-1, values.shape[1])


def modes_twin(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    rows = []
    for a, b in itertools.pairwise(offsets):
        row = []
        for k in range(values.shape[1]):
            uniq, counts = np.unique(values[a:b, k], return_counts=True)
            row.append(uniq[np.argmax(counts)])  # unique is sorted: ties to the smallest
        rows.append(row)
    return np.asarray(rows, dtype=values.dtype).reshape(-1, values.shape[1])


@st.composite
def segments(draw: st.DrawFn, empty: bool = True) -> np.ndarray:
    lengths = draw(st.lists(st.integers(0 if empty else 1, 12), min_size=1, max_size=8))
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


SETTINGS = settings(max_examples=examples(60, 400), deadline=None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_keys_follow_the_spec_word_by_word(dtype: type) -> None:
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(50, 3)).astype(dtype)
    rows[0] = -0.0
    rows[1] = 0.0
    keys = sample_keys(rows)
    assert keys.tolist() == [spec_key(r) for r in rows]
    assert keys[0] != keys[1]  # the bits count: -0.0 is not 0.0


def test_spec_examples_of_the_key() -> None:
    assert int(sample_keys(np.zeros((1, 3), np.float32))[0]) == 0x622EFBDD2CB8268A
    one = np.array([[1.0, 2.0, 3.0]])
    assert int(sample_keys(one)[0]) == 0x318F7D39408DA9FD


@SETTINGS
@given(segments(), st.integers(1, 5), st.integers(0, 2**32), st.booleans())
def test_sample_equals_lexsort(offsets: np.ndarray, cap: int, seed: int, ties: bool) -> None:
    rng = np.random.default_rng(seed)
    n = int(offsets[-1])
    high = 3 if ties else 2**63
    keys = rng.integers(0, high, size=n).astype(np.uint64)
    keep = sample_segments(keys, offsets, cap)
    assert np.array_equal(keep, sample_twin(keys, offsets, cap))
    kept = [int(keep[a:b].sum()) for a, b in itertools.pairwise(offsets)]
    assert kept == np.minimum(np.diff(offsets), cap).tolist()


ALL_DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int64, np.uint16, np.bool_]
# Each dtype compiles the reductions anew (some seconds of the default run per dtype): the
# default run takes one float, one signed integer and bool; the thorough profile every dtype.
DTYPES = (
    ALL_DTYPES
    if settings.get_current_profile_name() == THOROUGH
    else [np.float32, np.int8, np.bool_]
)


def _values(rng: np.random.Generator, n: int, k: int, dtype: type, nan: bool) -> np.ndarray:
    if dtype is np.bool_:
        return rng.integers(0, 2, size=(n, k)).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3 if dtype in (np.int8, np.int64) else 0, 4, size=(n, k)).astype(dtype)
    values = rng.normal(size=(n, k)).astype(dtype)
    if nan and n:
        values[rng.integers(0, n)] = np.nan
    return values


@SETTINGS
@given(
    segments(empty=False),
    st.integers(1, 3),
    st.sampled_from(DTYPES),
    st.integers(0, 2**32),
    st.booleans(),
)
def test_reductions_equal_their_twins(
    offsets: np.ndarray, k: int, dtype: type, seed: int, nan: bool
) -> None:
    rng = np.random.default_rng(seed)
    values = _values(rng, int(offsets[-1]), k, dtype, nan)
    for largest in (False, True):
        got = segment_extremes(values, offsets, largest)
        assert got.dtype == values.dtype
        want = extremes_twin(values, offsets, largest)
        assert got.tobytes() == want.tobytes()
    if np.issubdtype(values.dtype, np.floating):
        assert np.array_equal(
            segment_sums(values, offsets), sums_twin(values, offsets), equal_nan=True
        )
    else:
        got = segment_modes(values, offsets)
        assert got.tobytes() == modes_twin(values, offsets).tobytes()


def test_sums_add_in_row_order() -> None:
    values = np.array([[1e16], [1.0], [-1e16], [1.0]])
    # left to right: (1e16 + 1) rounds to 1e16, then 0, then 1
    assert segment_sums(values, np.array([0, 4]))[0, 0] == 1.0


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.integers(0, 3000), min_size=1, max_size=4),
    st.integers(1, 300),
    st.integers(0, 2**32),
    st.sampled_from(["uniform", "high", "ties"]),
)
def test_sample_of_long_segments_equals_lexsort(
    lengths: list[int], cap: int, seed: int, spread: str
) -> None:
    """Long segments: hash-like keys take the prefiltered path to the cap-th key, keys all
    in the top of the range (or few distinct ones) the full partition; both exact."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    keys = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
    if spread == "high":
        keys |= np.uint64(1 << 63)
    elif spread == "ties":
        keys = rng.integers(0, 3, size=n).astype(np.uint64)
    keep = sample_segments(keys, offsets, cap)
    assert np.array_equal(keep, sample_twin(keys, offsets, cap))


@settings(max_examples=examples(40, 400), deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=40),
    st.integers(0, 39),
    st.sampled_from(["as drawn", "sorted", "reversed", "few values"]),
)
def test_select_equals_the_sorted_value(values: list[int], k: int, order: str) -> None:
    """The quickselect that replaced numba's np.partition: the value of rank k, for orders
    that make a poor pivot choice slow and for many equal values."""
    keys = np.array(values, dtype=np.uint64)
    if order == "few values":
        keys %= np.uint64(3)
    elif order != "as drawn":
        keys = np.sort(keys)[:: 1 if order == "sorted" else -1].copy()
    k = k % keys.shape[0]
    reordered = keys.copy()
    assert _select(reordered, k) == np.sort(keys)[k]
    assert np.array_equal(np.sort(reordered), np.sort(keys))  # reordered, nothing lost


def merged_sample_twin(
    bin_offsets: np.ndarray, coarse: np.ndarray, keys: np.ndarray, cap: int, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per coarse bin, its finer bins' rows in finer bin order, ranked by (key, position)
    with lexsort; the ``cap`` first kept in position order."""
    chosen, offsets = [], [0]
    for c in range(count):
        rows = np.concatenate(
            [np.arange(bin_offsets[f], bin_offsets[f + 1]) for f in np.flatnonzero(coarse == c)]
            or [np.zeros(0, np.int64)]
        ).astype(np.int64)
        ranked = np.lexsort((np.arange(rows.shape[0]), keys[rows]))[:cap]
        chosen.append(rows[np.sort(ranked)])
        offsets.append(offsets[-1] + min(cap, rows.shape[0]))
    return np.concatenate(chosen).astype(np.int64), np.asarray(offsets, dtype=np.int64)


@settings(max_examples=examples(25, 400), deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=12),
    st.integers(1, 4),
    st.integers(1, 6),
    st.integers(0, 2**32),
    st.booleans(),
)
def test_merged_sample_equals_its_twin(
    sizes: list[int], count: int, cap: int, seed: int, ties: bool
) -> None:
    """Short bins; ``ties``: few distinct positions, so equal keys decide by position."""
    rng = np.random.default_rng(seed)
    bin_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    coarse = rng.integers(0, count, size=len(sizes)).astype(np.int64)
    n = int(bin_offsets[-1])
    positions = rng.integers(0, 2 if ties else 2**20, size=(n, 2)).astype(np.float32)
    _check_merged_sample(bin_offsets, coarse, positions, cap, count)


@settings(max_examples=10, deadline=None)
@given(
    st.lists(st.integers(0, 1500), min_size=1, max_size=6),
    st.integers(1, 2),
    st.integers(1, 200),
    st.integers(0, 2**32),
    st.sampled_from([np.float32, np.float64]),
)
def test_merged_sample_of_long_bins_equals_its_twin(
    sizes: list[int], count: int, cap: int, seed: int, dtype: type
) -> None:
    """Coarse bins of up to 9,000 rows: the rows are kept aside by key limit (or all of
    them, when fewer than ``cap`` are below it); exact either way."""
    rng = np.random.default_rng(seed)
    bin_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    coarse = rng.integers(0, count, size=len(sizes)).astype(np.int64)
    positions = rng.random((int(bin_offsets[-1]), 3)).astype(dtype)
    _check_merged_sample(bin_offsets, coarse, positions, cap, count)


def _check_merged_sample(
    bin_offsets: np.ndarray, coarse: np.ndarray, positions: np.ndarray, cap: int, count: int
) -> None:
    order = np.argsort(coarse, kind="stable")
    chosen, offsets = merged_sample(bin_offsets, order, coarse, positions, cap, count)
    keys = row_hashes_numpy(positions)
    want_chosen, want_offsets = merged_sample_twin(bin_offsets, coarse, keys, cap, count)
    assert chosen.tolist() == want_chosen.tolist()
    assert offsets.tolist() == want_offsets.tolist()


@settings(max_examples=examples(15, 200), deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 40), min_size=3, max_size=3), min_size=1, max_size=5),
    st.integers(1, 2),
    st.integers(1, 30),
    st.integers(0, 2**32),
)
def test_merged_sample_chunks_equals_the_twin_per_chunk(
    chunks: list[list[int]], count: int, cap: int, seed: int
) -> None:
    """Several chunks (three finer bins each, some empty) at once: each chunk's rows are
    those of the twin over that chunk alone, moved by the chunk's first row."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, count, size=3).astype(np.int64)
    bin_offsets = np.array([np.concatenate([[0], np.cumsum(c)]) for c in chunks], np.int64)
    chunk_offsets = np.concatenate([[0], np.cumsum(bin_offsets[:, -1])]).astype(np.int64)
    positions = rng.integers(0, 50, size=(int(chunk_offsets[-1]), 3)).astype(np.float32)
    order = np.argsort(coarse, kind="stable")
    chosen, offsets = merged_sample_chunks(
        chunk_offsets, bin_offsets, order, coarse, positions, cap, count
    )
    keys = row_hashes_numpy(positions)
    want_chosen, want_offsets = [], []
    for i, bins in enumerate(bin_offsets):
        start, end = chunk_offsets[i], chunk_offsets[i + 1]
        rows, per_bin = merged_sample_twin(bins, coarse, keys[start:end], cap, count)
        want_chosen.extend((rows + start).tolist())
        want_offsets.append(per_bin.tolist())
    assert chosen.tolist() == want_chosen
    assert offsets.tolist() == want_offsets
