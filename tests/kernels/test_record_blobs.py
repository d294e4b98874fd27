"""The batch decoder of fragment records (kernel) against the strict decoder (its plain
numpy twin, :func:`zarr_vectors.format.fragment_records.decode_fragment_record`)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import FragmentIndexError
from zarr_vectors.format.fragment_records import (
    FRAGMENT_RECORD_MAGIC,
    decode_fragment_record,
    encode_fragment_record,
)
from zarr_vectors.kernels import record_blobs, set_kernel_mode
from zarr_vectors.kernels.record_blobs import records_batch, records_needed

fragments = st.lists(
    st.tuples(st.integers(1, 2**17), st.integers(0, 300), st.integers(0, 2)),
    min_size=1,
    max_size=8,
)
record = st.builds(
    lambda frags, base: encode_fragment_record(
        [f[0] for f in frags], [f[1] for f in frags], base + np.cumsum([f[2] for f in frags])
    ),
    fragments,
    st.integers(0, 2**40),
)
damaged = st.tuples(
    record, st.lists(st.tuples(st.integers(0, 999), st.integers(0, 7)), max_size=2)
).map(lambda rf: _flip(*rf))


def _flip(raw: bytes, flips: list[tuple[int, int]]) -> bytes:
    out = bytearray(raw)
    for pos, bit in flips:
        out[pos % len(out)] ^= 1 << bit
    return bytes(out)


@pytest.mark.parametrize("mode", ["python", "compiled"])
@given(records=st.lists(st.one_of(record, damaged), min_size=1, max_size=5), pad=st.integers(0, 5))
@settings(max_examples=25, deadline=None)
def test_batch_equals_the_strict_decoder(records: list[bytes], pad: int, mode: str) -> None:
    previous = set_kernel_mode(mode)
    try:
        parts = [np.frombuffer(r + bytes(pad), np.uint8) for r in records]
        sizes = np.array([p.shape[0] for p in parts], np.int64)
        ends = np.cumsum(sizes)
        got = records_batch(np.concatenate(parts), ends - sizes, ends, FRAGMENT_RECORD_MAGIC)
    finally:
        set_kernel_mode(previous)
    vstarts, vcounts, lstarts, lcounts, owners, bounds, ok = got
    for j, part in enumerate(parts):
        try:
            want = decode_fragment_record(part)
        except FragmentIndexError:
            assert not ok[j]
            continue
        assert ok[j]
        a, b = int(bounds[j]), int(bounds[j + 1])
        np.testing.assert_array_equal(vcounts[a:b], want.vertex_counts)
        np.testing.assert_array_equal(vstarts[a:b], want.vertex_ranges()[0])
        np.testing.assert_array_equal(lcounts[a:b], want.link_counts)
        np.testing.assert_array_equal(lstarts[a:b], want.link_ranges()[0])
        np.testing.assert_array_equal(owners[a:b], want.fragment_objects())


# -- records_needed: the fragments a read asks for -------------------------------------------
wide_fragments = st.lists(
    st.tuples(
        st.one_of(st.integers(1, 300), st.integers(1, 2**17), st.integers(2**32, 2**40)),
        st.one_of(st.integers(0, 300), st.integers(0, 2**17)),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=8,
)
wide_record = st.builds(
    lambda frags: encode_fragment_record(
        [f[0] for f in frags], [f[1] for f in frags], np.cumsum([f[2] for f in frags])
    ),
    wide_fragments,
)


def needed_twin(raw: bytes, need: np.ndarray) -> tuple[list[np.ndarray], int, int, int] | None:
    """Plain numpy: the count columns of a record whose header, sizes and counts are sound
    (None otherwise; the owner runs are not read), restricted to the fragments ``need``
    (-1 outside ``[0, F)``); and F and the two totals."""
    buf = np.frombuffer(raw, np.uint8)
    if buf.shape[0] < 16:
        return None
    magic, version, flags, n_frag, n_runs = struct.unpack_from("<IHHII", raw)
    if magic != FRAGMENT_RECORD_MAGIC or version != 1 or flags > 0xFF or n_frag < 1:
        return None
    widths = [1 << ((flags >> shift) & 3) for shift in (0, 2, 4, 6)]
    stop = 16 + n_frag * (widths[0] + widths[1]) + n_runs * (widths[2] + widths[3])
    if not 1 <= n_runs <= n_frag or stop > buf.shape[0] or buf[stop:].any():
        return None
    columns = []
    at = 16
    for width, least in zip(widths[:2], (1, 0), strict=True):
        cells = [raw[at + width * i : at + width * (i + 1)] for i in range(n_frag)]
        counts = [int.from_bytes(cell, "little") for cell in cells]
        if min(counts) < least or sum(counts) >= 2**63:
            return None
        columns.append(np.array(counts, np.int64))
        at += width * n_frag
    out = []
    inside = (need >= 0) & (need < n_frag)
    at = np.clip(need, 0, n_frag - 1)
    for counts in columns:
        starts = np.cumsum(counts) - counts
        out.append(np.where(inside, starts[at], -1))
        out.append(np.where(inside, counts[at], -1))
    return out, n_frag, int(columns[0].sum()), int(columns[1].sum())


@st.composite
def needs(draw: st.DrawFn, n: int) -> np.ndarray:
    """Fragment numbers: none, all, the first, the last, or any in any order with
    repeats, maybe outside ``[0, F)``."""
    pick = draw(st.sampled_from(["none", "all", "first", "last", "any"]))
    chosen = {"none": [], "all": list(range(n)), "first": [0], "last": [n - 1]}.get(pick)
    if chosen is None:
        chosen = draw(st.lists(st.integers(-1, n + 2), max_size=n + 2))
    return np.array(chosen, np.int64)


@pytest.mark.parametrize("mode", ["python", "compiled"])
@given(data=st.data(), pad=st.integers(0, 5))
@settings(max_examples=25, deadline=None)
def test_needed_fragments_equal_the_full_decode_restricted(
    data: st.DataObject, pad: int, mode: str
) -> None:
    records = data.draw(st.lists(st.one_of(wide_record, record, damaged), min_size=1, max_size=4))
    parts = [np.frombuffer(r + bytes(pad), np.uint8) for r in records]
    wanted = [data.draw(needs(max(min(int.from_bytes(r[8:12], "little"), 12), 1))) for r in records]
    sizes = np.array([p.shape[0] for p in parts], np.int64)
    ends = np.cumsum(sizes)
    need_bounds = np.concatenate([[0], np.cumsum([w.shape[0] for w in wanted])])
    previous = set_kernel_mode(mode)
    try:
        got = records_needed(
            np.concatenate(parts),
            ends - sizes,
            ends,
            FRAGMENT_RECORD_MAGIC,
            need_bounds,
            np.concatenate(wanted),
        )
        vertex_only = records_needed(
            np.concatenate(parts),
            ends - sizes,
            ends,
            FRAGMENT_RECORD_MAGIC,
            need_bounds,
            np.concatenate(wanted),
            links=False,
        )
    finally:
        set_kernel_mode(previous)
    *columns, fragments, vertex_rows, link_rows, ok = got
    assert (ok <= vertex_only[-1]).all()  # without links: the same, or more accepted
    both = np.repeat(ok, np.diff(need_bounds))
    for a, b in zip(vertex_only[:2], columns[:2], strict=True):
        np.testing.assert_array_equal(a[both], b[both])
    assert (vertex_only[2] == -1).all()  # links unread
    assert not vertex_only[6].any()
    for j, (part, need) in enumerate(zip(parts, wanted, strict=True)):
        twin = needed_twin(part.tobytes(), need)
        assert ok[j] == (twin is not None)
        try:  # a record the strict decoder accepts is decoded the same
            full = decode_fragment_record(part)
        except FragmentIndexError:
            full = None
        assert full is None or ok[j]
        if twin is None:
            continue
        want, n_frag, v_rows, l_rows = twin
        a, b = need_bounds[j], need_bounds[j + 1]
        for column, expected in zip(columns, want, strict=True):
            np.testing.assert_array_equal(column[a:b], expected)
        assert (fragments[j], vertex_rows[j], link_rows[j]) == (n_frag, v_rows, l_rows)
        if full is not None:  # the full decode, restricted to the fragments asked
            inside = (need >= 0) & (need < full.n_fragments)
            at = need[inside]
            for column, values in zip(
                columns, (*full.vertex_ranges(), *full.link_ranges()), strict=True
            ):
                np.testing.assert_array_equal(column[a:b][inside], values[at])
                assert (column[a:b][~inside] == -1).all()


# -- records_batch: wide columns, refused records, the column readers ------------------------
@pytest.mark.parametrize("mode", ["python", "compiled"])
@given(records=st.lists(st.one_of(wide_record, record, damaged), min_size=1, max_size=5))
@settings(max_examples=25, deadline=None)
def test_batch_of_wide_records_equals_the_strict_decoder(records: list[bytes], mode: str) -> None:
    """Counts of 4 and 8 bytes too; a refused record's fragments (if any) are zeros."""
    parts = [np.frombuffer(r, np.uint8) for r in records]
    sizes = np.array([p.shape[0] for p in parts], np.int64)
    ends = np.cumsum(sizes)
    previous = set_kernel_mode(mode)
    try:
        got = records_batch(np.concatenate(parts), ends - sizes, ends, FRAGMENT_RECORD_MAGIC)
    finally:
        set_kernel_mode(previous)
    *columns, bounds, ok = got
    for j, part in enumerate(parts):
        a, b = int(bounds[j]), int(bounds[j + 1])
        try:
            want = decode_fragment_record(part)
        except FragmentIndexError:
            assert not ok[j]
            assert all((column[a:b] == 0).all() for column in columns)
            continue
        assert ok[j]
        expected = (*want.vertex_ranges(), *want.link_ranges(), want.fragment_objects())
        for column, values in zip(columns, expected, strict=True):
            np.testing.assert_array_equal(column[a:b], values)


@pytest.mark.parametrize("mode", ["python", "compiled"])
def test_run_lengths_whose_int64_sum_wraps_are_refused(mode: str) -> None:
    """Run lengths 2**63 - 1, 2**63 - 1, F + 2 wrap to F in int64 arithmetic: refused (a
    per-run test ``f + length > F`` wrapped too and wrote outside the owners)."""
    n_frag = 3
    bad = struct.pack("<IHHII", FRAGMENT_RECORD_MAGIC, 1, 3 << 6, n_frag, 3)
    bad += bytes([1, 1, 1, 0, 0, 0, 1, 2, 3])
    bad += struct.pack("<QQQ", 2**63 - 1, 2**63 - 1, n_frag + 2)
    with pytest.raises(FragmentIndexError):
        decode_fragment_record(bad)
    good = encode_fragment_record([3, 2], [2, 1], [7, 7])
    raw = np.frombuffer(good + bad + good, np.uint8)
    sizes = np.array([len(good), len(bad), len(good)])
    begins = np.cumsum(sizes) - sizes
    previous = set_kernel_mode(mode)
    try:
        *columns, bounds, ok = records_batch(raw, begins, begins + sizes, FRAGMENT_RECORD_MAGIC)
    finally:
        set_kernel_mode(previous)
    assert ok.tolist() == [True, False, True]
    assert bounds.tolist() == [0, 2, 5, 7]
    assert columns[4].tolist() == [7, 7, 0, 0, 0, 7, 7]


@pytest.mark.parametrize("width", [1, 2, 4])
@given(data=st.data(), least=st.integers(0, 1), first=st.integers(0, 3))
@settings(max_examples=40, deadline=None)
def test_narrow_column_equals_the_checked_one(
    data: st.DataObject, width: int, least: int, first: int
) -> None:
    """The column reader without overflow checks (values of at most 4 bytes) gives what the
    checked one gives: values, prefix sums, bytes read or -1."""
    count = data.draw(st.integers(0, 40))
    raw = np.frombuffer(
        data.draw(st.binary(min_size=width * count, max_size=width * count)), np.uint8
    )
    buffer = np.concatenate([np.full(5, 255, np.uint8), raw])
    results = []
    for reader in (record_blobs._narrow_column, record_blobs._checked_column):
        out, starts = np.full(first + count, -7, np.int64), np.full(first + count, -7, np.int64)
        used = reader(buffer, 5, width, out, starts, first, count, least)
        results.append((used, out, starts))
    (used, out, starts), (want_used, want_out, want_starts) = results
    assert used == want_used
    values = np.frombuffer(raw.tobytes(), f"<u{width}").astype(np.int64)
    assert used == (width * count if count == 0 or values.min() >= least else -1)
    if used >= 0:
        np.testing.assert_array_equal(out[first:], values)
        np.testing.assert_array_equal(starts[first:], np.cumsum(values) - values)
        np.testing.assert_array_equal(out, want_out)
        np.testing.assert_array_equal(starts, want_starts)
