"""The batch decoder of fragment records (kernel) against the strict decoder (its plain
numpy twin, :func:`zarr_vectors.format.fragment_records.decode_fragment_record`)."""

from __future__ import annotations

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
from zarr_vectors.kernels import set_kernel_mode
from zarr_vectors.kernels.record_blobs import records_batch

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
