"""The per-chunk fragment record (ZVFR v1, format 1.6, spec §6.9): golden bytes, round trips,
strict rejection and a fuzz property."""

from __future__ import annotations

import contextlib
import itertools
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import FragmentIndexError
from zarr_vectors.format.fragment_records import (
    FRAGMENT_RECORD_MAGIC,
    decode_fragment_record,
    encode_fragment_record,
    encode_records_ragged,
    fragment_record_size,
)

GOLDEN = Path(__file__).parent / "golden" / "zvfr_example.bin"


def test_worked_example_golden_bytes() -> None:
    """§6.9's example: two objects (3 and 5), two fragments each; uint16 counts."""
    golden = GOLDEN.read_bytes()
    assert encode_fragment_record([4, 2, 300, 1], [3, 1, 299, 0], [3, 3, 5, 5]) == golden
    record = decode_fragment_record(golden, n_rows=307, n_links=303, n_objects=6)
    assert record.vertex_ranges()[0].tolist() == [0, 4, 6, 306]
    assert record.link_ranges()[0].tolist() == [0, 3, 4, 303]
    assert record.fragment_objects().tolist() == [3, 3, 5, 5]


def test_ragged_equals_one_by_one() -> None:
    vc, lc, ob = np.array([1, 2, 70000, 4]), np.array([0, 1, 2, 3]), np.array([0, 0, 9, 2])
    out = encode_records_ragged(vc, lc, ob, np.array([0, 3, 4]))
    assert [x.tobytes() for x in out] == [
        encode_fragment_record(vc[:3], lc[:3], ob[:3]),
        encode_fragment_record(vc[3:], lc[3:], ob[3:]),
    ]


@given(
    chunks=st.lists(
        st.lists(
            st.tuples(st.integers(1, 2**33), st.integers(0, 2**17), st.integers(0, 2)),
            min_size=1,
            max_size=6,
        ),
        min_size=1,
        max_size=5,
    )
)
@settings(max_examples=30, deadline=None)
def test_ragged_property(chunks: list[list[tuple[int, int, int]]]) -> None:
    """All chunks at once give each chunk's one-by-one bytes, whatever the widths."""
    vc = np.array([f[0] for c in chunks for f in c])
    lc = np.array([f[1] for c in chunks for f in c])
    ob = np.concatenate([np.cumsum([f[2] for f in c]) * 300 for c in chunks])
    bounds = np.concatenate([[0], np.cumsum([len(c) for c in chunks])])
    out = encode_records_ragged(vc, lc, ob, bounds)
    for j, (a, b) in enumerate(itertools.pairwise(bounds.tolist())):
        assert out[j].tobytes() == encode_fragment_record(vc[a:b], lc[a:b], ob[a:b])
    with pytest.raises(FragmentIndexError):
        encode_records_ragged(vc * 0, lc, ob, bounds)  # a fragment without a vertex


def _mutate(golden: bytes, offset: int, value: bytes) -> bytes:
    return golden[:offset] + value + golden[offset + len(value) :]


@pytest.mark.parametrize(
    ("offset", "value", "message"),
    [
        (0, b"RFVY", "magic"),
        (4, b"\x02\x00", "version"),
        (6, b"\x05\x01", "flag"),
        (12, b"\x00\x00", "P"),
        (12, b"\x05\x00", "P"),
        (8, b"\x05\x00", "truncated"),
        (16, b"\x00\x00", "no vertex row"),
        (32, b"\x05\x03", "strictly"),
        (34, b"\x02\x01", "sum to F"),
        (34, b"\x00\x04", "sum to F"),
    ],
)
def test_rejects_malformed(offset: int, value: bytes, message: str) -> None:
    bad = _mutate(GOLDEN.read_bytes(), offset, value)
    with pytest.raises(FragmentIndexError, match=message):
        decode_fragment_record(bad)


def test_rejects_context_and_tail() -> None:
    golden = GOLDEN.read_bytes()
    with pytest.raises(FragmentIndexError, match="after the record"):
        decode_fragment_record(golden + b"\x00\x01")
    with pytest.raises(FragmentIndexError, match="sum to 307, not"):
        decode_fragment_record(golden, n_rows=306)
    with pytest.raises(FragmentIndexError, match="links"):
        decode_fragment_record(golden, n_links=302)
    with pytest.raises(FragmentIndexError, match="objects"):
        decode_fragment_record(golden, n_objects=5)
    huge = struct.pack("<IHHII", FRAGMENT_RECORD_MAGIC, 1, 0b11, 2, 1) + struct.pack(
        "<QQBBBB", 2**63 - 1, 1, 0, 0, 0, 2
    )
    with pytest.raises(FragmentIndexError, match="2\\*\\*63"):
        decode_fragment_record(huge)


def test_encoder_rejects_what_it_cannot_store() -> None:
    with pytest.raises(FragmentIndexError):
        encode_fragment_record([], [], [])
    with pytest.raises(FragmentIndexError):
        encode_fragment_record([1, 0], [0, 0], [0, 0])
    with pytest.raises(FragmentIndexError):
        encode_fragment_record([1, 1], [0, 0], [1, 0])


fragments = st.lists(
    st.tuples(st.integers(1, 2**17), st.integers(0, 2**9), st.integers(0, 3)),
    min_size=1,
    max_size=12,
)


@given(frags=fragments, base=st.integers(0, 2**33))
@settings(max_examples=40, deadline=None)
def test_round_trip(frags: list[tuple[int, int, int]], base: int) -> None:
    vc = np.array([f[0] for f in frags])
    lc = np.array([f[1] for f in frags])
    ob = base + np.cumsum([f[2] for f in frags])
    blob = encode_fragment_record(vc, lc, ob)
    _, _, flags, n, p = struct.unpack_from("<IHHII", blob)
    assert len(blob) == fragment_record_size(flags, n, p)
    record = decode_fragment_record(blob + bytes(5), n_rows=int(vc.sum()), n_links=int(lc.sum()))
    assert record.vertex_counts.tolist() == vc.tolist()
    assert record.link_counts.tolist() == lc.tolist()
    assert record.fragment_objects().tolist() == ob.tolist()
    assert record.vertex_ranges()[0].tolist() == (np.cumsum(vc) - vc).tolist()


@given(
    frags=fragments,
    flips=st.lists(st.tuples(st.integers(0, 10**4), st.integers(0, 7)), max_size=3),
    cut=st.one_of(st.none(), st.integers(0, 10**4)),
    extra=st.binary(max_size=6),
)
@settings(max_examples=60, deadline=None)
def test_fuzz_mutated_records(
    frags: list[tuple[int, int, int]],
    flips: list[tuple[int, int]],
    cut: int | None,
    extra: bytes,
) -> None:
    """Damaged bytes either decode into a record that obeys every rule or raise
    ``FragmentIndexError``; nothing else escapes."""
    ob = np.cumsum([f[2] for f in frags])
    blob = bytearray(encode_fragment_record([f[0] for f in frags], [f[1] for f in frags], ob))
    for pos, bit in flips:
        blob[pos % len(blob)] ^= 1 << bit
    if cut is not None:
        del blob[cut % (len(blob) + 1) :]
    blob += extra
    try:
        record = decode_fragment_record(bytes(blob))
    except FragmentIndexError:
        return
    n = record.n_fragments
    assert n >= 1
    assert record.vertex_counts.min() >= 1
    assert record.link_counts.min() >= 0
    assert int(record.run_lengths.sum()) == n
    assert record.run_lengths.min() >= 1
    assert (np.diff(record.run_objects) > 0).all()
    assert record.fragment_objects().shape == (n,)
    again = encode_fragment_record(
        record.vertex_counts, record.link_counts, record.fragment_objects()
    )
    assert decode_fragment_record(again).fragment_objects().tolist() == (
        record.fragment_objects().tolist()
    )


@given(buf=st.binary(max_size=80))
@settings(max_examples=40, deadline=None)
def test_fuzz_arbitrary_bytes(buf: bytes) -> None:
    head = struct.pack("<IHH", FRAGMENT_RECORD_MAGIC, 1, buf[0] if buf else 0)
    for candidate in (buf, head + buf[1:]):
        with contextlib.suppress(FragmentIndexError):
            decode_fragment_record(candidate)
