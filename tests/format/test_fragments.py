"""Tests of the ZVFG fragment-index codec (spec §6)."""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import FragmentIndexError, InvalidInputError
from zarr_vectors.format.fragment_counts import counts_width, is_counts_flags
from zarr_vectors.format.fragment_decoding import decode_dense_ranges, decode_fragment_index
from zarr_vectors.format.fragment_encoding import encode_dense_ranges, encode_dense_ranges_batch
from zarr_vectors.format.fragments import (
    FRAGMENT_INDEX_MAGIC,
    FragmentIndex,
    encode_fragment_index,
    fragment_index_nbytes,
)

GOLDEN = Path(__file__).parent / "golden"
I64_MAX = 2**63 - 1
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def golden(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


# --------------------------------------------------------------------------- independent builder


def pad8(n: int) -> int:
    return (n + 7) // 8 * 8


def build_blob(
    n_frag: int,
    n_range: int,
    bitmap: bytes | None = None,
    table: list[tuple[int, int]] | None = None,
    offsets: list[int] | None = None,
    indices: list[int] | None = None,
    *,
    magic: int = 0x5A564647,
    version: int = 1,
    flags: int = 0,
) -> bytes:
    """Assemble a blob field by field with struct -- deliberately independent of the codec.

    Sections left as None are omitted; the bitmap is written exactly as given.
    """
    out = struct.pack("<IHHII", magic, version, flags, n_frag, n_range)
    if bitmap is not None:
        out += bitmap
    for start, count in table or []:
        out += struct.pack("<qq", start, count)
    if offsets is not None:
        out += struct.pack(f"<{len(offsets)}I", *offsets)
    if indices is not None:
        out += struct.pack(f"<{len(indices)}q", *indices)
    return out


def bitmap_of(bits: list[int], nbytes: int | None = None) -> bytes:
    raw = bytearray(pad8((len(bits) + 7) // 8) if nbytes is None else nbytes)
    for f, bit in enumerate(bits):
        if bit:
            raw[f // 8] |= 1 << (f % 8)
    return bytes(raw)


EXAMPLE_A = [(0, 4), [12, 7, 19], (20, 8)]


def expected_rows(frag: Any) -> npt.NDArray[np.int64]:
    if isinstance(frag, tuple):
        return np.arange(frag[0], frag[0] + frag[1], dtype=np.int64)
    return np.asarray(frag, dtype=np.int64).reshape(-1)


# --------------------------------------------------------------------------- golden bytes


def test_golden_example_a() -> None:
    blob = golden("zvfg_example_a.bin")
    assert len(blob) == 88
    idx = decode_fragment_index(blob)
    assert idx.n_fragments == 3
    assert idx.n_ranges == 2
    assert idx.is_range.tolist() == [True, False, True]
    assert idx.fragment_rows(0).tolist() == [0, 1, 2, 3]
    assert idx.fragment_rows(1).tolist() == [12, 7, 19]
    assert idx.fragment_rows(2).tolist() == list(range(20, 28))
    assert idx.csr_offsets.tolist() == [0, 3]
    assert idx.row_extent() == 28
    assert idx.encode() == blob
    assert encode_fragment_index(idx) == blob
    assert FragmentIndex.from_fragments(EXAMPLE_A).encode() == blob
    assert fragment_index_nbytes(3, 2, 3) == 88 == idx.nbytes()


def test_golden_example_b_misaligned_csr() -> None:
    blob = golden("zvfg_example_b.bin")
    assert len(blob) == 84
    idx = decode_fragment_index(blob)
    assert idx.is_range.tolist() == [False, False, True]
    assert [idx.fragment_rows(f).tolist() for f in range(3)] == [[3, 1], [0, 2], [4]]
    assert idx.encode() == blob
    # a one-element list is auto-classified as the range (4, 1)
    assert FragmentIndex.from_fragments([[3, 1], [0, 2], [4]]).encode() == blob
    assert FragmentIndex.from_fragments([np.array([3, 1]), [0, 2], (4, 1)]).encode() == blob
    # indices start at 0x34, only 4-byte aligned
    assert struct.unpack_from("<q", blob, 0x34)[0] == 3
    assert idx.rows_of([2, 0, 1]).tolist() == [4, 3, 1, 0, 2]


def test_golden_example_c_dense() -> None:
    blob = golden("zvfg_example_c_dense.bin")
    assert len(blob) == 92
    starts, counts = [0, 2, 2, 3], [2, 0, 1, 0]
    idx = decode_fragment_index(blob, n_rows=3)
    assert idx.dense_ranges()[0].tolist() == starts
    assert idx.dense_ranges()[1].tolist() == counts
    assert idx.row_extent() == 3
    assert FragmentIndex.from_ranges(starts, counts).encode() == blob
    assert encode_dense_ranges(starts, counts) == blob
    got_s, got_c = decode_dense_ranges(blob, n_rows=3)
    assert got_s.tolist() == starts
    assert got_c.tolist() == counts
    assert got_s.dtype == np.int64
    batch = encode_dense_ranges_batch([starts, starts], [counts, counts])
    assert batch.shape == (2, 92)
    assert bytes(batch[0]) == blob
    assert bytes(batch[1]) == blob
    assert idx.rows_of([0, 1, 2, 3]).tolist() == [0, 1, 2]


def test_golden_example_c_sparse() -> None:
    blob = golden("zvfg_example_c_sparse.bin")
    assert len(blob) == 60
    idx = decode_fragment_index(blob)
    assert idx.range_starts.tolist() == [0, 2]
    assert idx.range_counts.tolist() == [2, 1]
    assert FragmentIndex.from_fragments([(0, 2), (2, 1)]).encode() == blob
    assert FragmentIndex.from_ranges([0, 2], [2, 1]).encode() == blob
    assert [a.tolist() for a in decode_dense_ranges(blob)] == [[0, 2], [2, 1]]


def test_golden_empty() -> None:
    blob = golden("zvfg_empty.bin")
    assert len(blob) == 16
    idx = decode_fragment_index(blob)
    assert idx.n_fragments == 0
    assert idx.row_extent() == 0
    assert idx == FragmentIndex.empty()
    assert FragmentIndex.empty().encode() == blob
    assert FragmentIndex.from_ranges([], []).encode() == blob
    assert FragmentIndex.from_fragments([]).encode() == blob
    assert fragment_index_nbytes(0, 0, 0) == 16
    starts, counts = decode_dense_ranges(blob)
    assert starts.size == 0
    assert counts.size == 0


@pytest.mark.parametrize(
    "name",
    [
        "zvfg_example_a.bin",
        "zvfg_example_b.bin",
        "zvfg_example_c_dense.bin",
        "zvfg_example_c_sparse.bin",
        "zvfg_empty.bin",
    ],
)
def test_golden_with_zero_padding_and_buffer_types(name: str) -> None:
    blob = golden(name)
    ref = decode_fragment_index(blob)
    padded = blob + bytes(37)
    for buf in (padded, bytearray(padded), memoryview(padded), np.frombuffer(padded, np.uint8)):
        assert decode_fragment_index(buf) == ref
    # a zero-padded row of a 2-D uint8 array, as read from the store
    grid = np.zeros((3, len(padded)), dtype=np.uint8)
    grid[1, : len(blob)] = np.frombuffer(blob, np.uint8)
    assert decode_fragment_index(grid[1]) == ref


def test_golden_readme_lists_every_file() -> None:
    readme = (GOLDEN / "README.md").read_text()
    for path in GOLDEN.glob("*.bin"):
        assert path.name in readme


# --------------------------------------------------------------------------- model behaviour


def test_fragment_rows_and_rows_of() -> None:
    idx = FragmentIndex.from_fragments(EXAMPLE_A)
    assert idx.rows_of([]).tolist() == []
    assert idx.rows_of(np.array([1, 1], dtype=np.uint16)).tolist() == [12, 7, 19, 12, 7, 19]
    got = idx.rows_of([2, 1, 0])
    want = np.concatenate([expected_rows(EXAMPLE_A[f]) for f in (2, 1, 0)])
    np.testing.assert_array_equal(got, want)
    with pytest.raises(FragmentIndexError, match="fragment id 3 out of range"):
        idx.fragment_rows(3)
    with pytest.raises(FragmentIndexError, match="fragment id -1"):
        idx.fragment_rows(-1)
    with pytest.raises(FragmentIndexError, match="fragment id 7"):
        idx.rows_of([0, 7])
    with pytest.raises(FragmentIndexError, match="explicit"):
        idx.dense_ranges()


def test_arrays_are_read_only_and_independent() -> None:
    buf = bytearray(golden("zvfg_example_a.bin"))
    idx = decode_fragment_index(buf)
    buf[0x18] = 99  # mutating the source must not change the decoded index
    assert idx.range_starts[0] == 0
    for arr in (idx.is_range, idx.range_starts, idx.range_counts, idx.csr_offsets):
        assert not arr.flags.writeable
    starts = np.array([0, 5])
    FragmentIndex.from_ranges(starts, [5, 1])
    starts[0] = 1  # caller's array stays writeable and is not aliased
    assert decode_dense_ranges(golden("zvfg_example_c_dense.bin"))[0].flags.writeable


def test_direct_constructor_validates() -> None:
    # the constructor also accepts lists and other integer dtypes and copies them
    base: dict[str, Any] = {
        "is_range": np.array([True, False]),
        "range_starts": [3],
        "range_counts": np.array([2], dtype=np.uint8),
        "csr_offsets": [0, 2],
        "csr_indices": [9, 1],
    }
    good = FragmentIndex(**base)
    assert good.range_counts.dtype == np.int64
    assert good == FragmentIndex.from_fragments([(3, 2), [9, 1]])
    assert good != FragmentIndex.empty()
    assert "n_fragments=2" in repr(good)
    bad_cases: list[dict[str, Any]] = [
        {"range_starts": [3, 4]},
        {"csr_offsets": [0, 2, 2]},
        {"csr_offsets": [1, 2]},
        {"csr_offsets": [0, 3]},
        {"csr_indices": [9, -1]},
        {"range_counts": [-2]},
        {"range_starts": [I64_MAX]},
        {"is_range": np.array([1, 0])},
        {"range_starts": [3.0]},
    ]
    for change in bad_cases:
        with pytest.raises(InvalidInputError):
            FragmentIndex(**{**base, **change})
    decreasing: dict[str, Any] = {
        "is_range": np.array([False, False]),
        "range_starts": [],
        "range_counts": [],
        "csr_offsets": [0, 2, 1],
        "csr_indices": [1],
    }
    with pytest.raises(InvalidInputError, match="decreases at entry 2"):
        FragmentIndex(**decreasing)


@pytest.mark.parametrize(
    ("starts", "counts"),
    [([-1], [1]), ([0], [-1]), ([I64_MAX], [1]), ([0, 1], [1]), ([[0]], [[1]]), ([0.5], [1])],
)
def test_from_ranges_rejects(starts: Any, counts: Any) -> None:
    with pytest.raises(InvalidInputError):
        FragmentIndex.from_ranges(starts, counts)
    with pytest.raises(InvalidInputError):
        encode_dense_ranges(starts, counts)


@pytest.mark.parametrize(
    "frags",
    [
        [(1, 2, 3)],
        [(-1, 2)],
        [(1, -2)],
        [(1.0, 2)],
        [[1, -2]],
        [np.zeros((2, 2), dtype=np.int64)],
        [np.array([0.0, 1.0])],
        [np.array([True, False])],
    ],
)
def test_from_fragments_rejects(frags: Any) -> None:
    with pytest.raises(InvalidInputError):
        FragmentIndex.from_fragments(frags)


def test_from_fragments_classification() -> None:
    idx = FragmentIndex.from_fragments(
        [[5], [7, 8, 9], [9, 8], [], np.array([], dtype=np.int64), [2, 2], (4, 0)]
    )
    assert idx.is_range.tolist() == [True, True, False, False, False, False, True]
    assert idx.range_starts.tolist() == [5, 7, 4]
    assert idx.range_counts.tolist() == [1, 3, 0]
    assert idx.csr_offsets.tolist() == [0, 2, 2, 2, 4]
    assert idx.csr_indices.tolist() == [9, 8, 2, 2]


def test_encode_dense_ranges_batch_rejects_and_handles_zero_fragments() -> None:
    with pytest.raises(InvalidInputError):
        encode_dense_ranges_batch([0, 1], [1, 1])
    with pytest.raises(InvalidInputError):
        encode_dense_ranges_batch([[0, 1]], [[1, -1]])
    out = encode_dense_ranges_batch(np.zeros((3, 0), np.int64), np.zeros((3, 0), np.int64))
    assert out.shape == (3, 16)
    assert bytes(out[2]) == golden("zvfg_empty.bin")


def test_fragment_index_nbytes_rejects() -> None:
    for args in [(-1, 0, 0), (1, 2, 0), (0, 0, 1), (2, 1, -1)]:
        with pytest.raises(InvalidInputError):
            fragment_index_nbytes(*args)
    assert fragment_index_nbytes(64, 64, 0) == 16 + 8 + 64 * 16 + 4
    assert fragment_index_nbytes(65, 0, 0) == 16 + 16 + 4 * 66


def test_n_rows_must_be_non_negative() -> None:
    with pytest.raises(InvalidInputError):
        decode_fragment_index(golden("zvfg_empty.bin"), n_rows=-1)
    with pytest.raises(InvalidInputError):
        decode_dense_ranges(golden("zvfg_empty.bin"), n_rows=-1)


def test_wrong_array_dtype_is_rejected() -> None:
    with pytest.raises(InvalidInputError):
        decode_fragment_index(np.zeros(4, dtype=np.int32))


def test_n_rows_boundaries_accepted() -> None:
    blob = FragmentIndex.from_ranges([0, 3], [3, 0]).encode()
    decode_fragment_index(blob, n_rows=3)  # count-0 range starting at n_rows is fine
    decode_dense_ranges(blob, n_rows=3)
    with pytest.raises(FragmentIndexError):
        decode_dense_ranges(blob, n_rows=2)
    decode_fragment_index(golden("zvfg_example_b.bin"), n_rows=5)
    decode_fragment_index(golden("zvfg_empty.bin"), n_rows=0)


# --------------------------------------------------------------------------- strictness rules

A = golden("zvfg_example_a.bin")
B = golden("zvfg_example_b.bin")
C = golden("zvfg_example_c_dense.bin")


def patch(blob: bytes, offset: int, fmt: str, *values: int) -> bytes:
    out = bytearray(blob)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


# (id, blob, n_rows, byte offset named in the message, message fragment)
STRICT_CASES: list[tuple[str, bytes, int | None, int, str]] = [
    ("short-header", A[:15], None, 0, "truncated header"),
    ("empty-buffer", b"", None, 0, "truncated header"),
    ("magic", patch(A, 0, "<I", 0x5A564648), None, 0, "bad magic"),
    ("magic-byteswapped", patch(A, 0, ">I", FRAGMENT_INDEX_MAGIC), None, 0, "bad magic"),
    ("all-zero-buffer", bytes(32), None, 0, "bad magic"),
    ("version-2", patch(A, 4, "<H", 2), None, 4, "unsupported version 2"),
    ("version-0", patch(A, 4, "<H", 0), None, 4, "unsupported version 0"),
    ("flags-1", patch(A, 6, "<H", 1), None, 6, "flags 0x0001"),
    ("flags-high", patch(C, 6, "<H", 0x8000), None, 6, "flags 0x8000"),
    ("r-gt-f", build_blob(1, 2, bitmap_of([1]), [(0, 1), (1, 1)], [0]), None, 12, "R=2"),
    ("r-gt-f-empty", build_blob(0, 1), None, 12, "R=1"),
    ("trunc-bitmap", A[:20], None, 16, "truncated range bitmap"),
    ("trunc-bitmap-huge-f", build_blob(0xFFFFFFFF, 0), None, 16, "truncated range bitmap"),
    (
        "trunc-bitmap-huge-fr",
        build_blob(0xFFFFFFFF, 0xFFFFFFFF, b"\xff" * 8),
        None,
        16,
        "truncated range bitmap",
    ),
    ("trunc-table", A[: 0x18 + 20], None, 0x18, "truncated range table"),
    ("trunc-table-dense", C[:40], None, 0x18, "truncated range table"),
    ("trunc-offsets", A[: 0x38 + 6], None, 0x38, "truncated CSR offsets"),
    ("trunc-offsets-dense", C[:90], None, 0x58, "truncated CSR offsets"),
    ("trunc-indices", A[:87], None, 0x40, "truncated CSR indices"),
    ("trunc-indices-misaligned", B[:60], None, 0x34, "truncated CSR indices"),
    (
        "trunc-indices-huge-t",
        build_blob(1, 0, bitmap_of([0]), [], [0, 0xFFFFFFFF]),
        None,
        0x20,
        "truncated CSR indices",
    ),
    (
        "popcount",
        build_blob(3, 1, bitmap_of([1, 1, 0]), [(0, 1)], [0, 1, 2], [5, 6]),
        None,
        16,
        "bitmap marks 2 range fragments but the header says R=1",
    ),
    (
        "popcount-dense",
        build_blob(4, 4, bitmap_of([1, 1, 1, 0]), [(0, 1)] * 4, [0]),
        None,
        16,
        "bitmap marks 3",
    ),
    (
        "padding-bit-same-byte",
        build_blob(3, 2, bitmap_of([1, 0, 1, 1]), [(0, 4), (20, 8)], [0, 3], [12, 7, 19]),
        None,
        16,
        "padding bit 3",
    ),
    (
        "padding-byte",
        build_blob(3, 2, b"\x05" + bytes(6) + b"\x01", [(0, 4), (20, 8)], [0, 3], [12, 7, 19]),
        None,
        23,
        "padding bit 56",
    ),
    (
        "padding-bit-across-byte-boundary",
        build_blob(9, 9, bitmap_of([1] * 9 + [0, 1]), [(0, 1)] * 9, [0]),
        None,
        17,
        "padding bit 10",
    ),
    ("offsets0", patch(A, 0x38, "<I", 1), None, 0x38, "CSR offsets[0] = 1"),
    ("offsets0-dense", patch(C, 0x58, "<I", 1), None, 0x58, "CSR offsets[0] = 1"),
    ("offsets-decrease", patch(B, 0x2C, "<I", 5), None, 0x30, "offsets[2] = 4 < offsets[1] = 5"),
    ("negative-start", patch(A, 0x18, "<q", -1), None, 0x18, "start -1 is negative"),
    ("negative-count", patch(A, 0x30, "<q", -8), None, 0x30, "count -8 is negative"),
    ("negative-count-dense", patch(C, 0x20, "<q", -2), None, 0x20, "count -2 is negative"),
    (
        "start-count-overflow",
        patch(patch(C, 0x48, "<q", I64_MAX), 0x50, "<q", 1),
        None,
        0x48,
        "overflows int64",
    ),
    ("negative-index", patch(A, 0x48, "<q", -7), None, 0x48, "CSR index 1 = -7 is negative"),
    ("range-beyond-n-rows", A, 27, 0x28, "rows [20, 28) exceed the chunk's 27 rows"),
    ("range-beyond-n-rows-dense", C, 2, 0x38, "rows [2, 3) exceed"),
    (
        "empty-range-beyond-n-rows",
        build_blob(1, 1, bitmap_of([1]), [(4, 0)], [0]),
        3,
        0x18,
        "rows [4, 4) exceed",
    ),
    (
        "explicit-beyond-n-rows",
        build_blob(2, 1, bitmap_of([1, 0]), [(0, 2)], [0, 2], [9, 1]),
        5,
        0x30,
        "CSR index 0 = 9 outside the chunk's 5 rows",
    ),
    ("trailing-nonzero", A + b"\x00\x00\x01", None, 90, "non-zero trailing byte 0x01"),
    ("trailing-nonzero-dense", C + b"\x07", None, 92, "non-zero trailing byte 0x07"),
    (
        "trailing-nonzero-empty",
        golden("zvfg_empty.bin") + b"\x00" * 8 + b"\xff",
        None,
        24,
        "non-zero trailing byte 0xFF",
    ),
]


@pytest.mark.parametrize(
    ("blob", "n_rows", "offset", "text"),
    [case[1:] for case in STRICT_CASES],
    ids=[case[0] for case in STRICT_CASES],
)
def test_strict_decoder_rejects(blob: bytes, n_rows: int | None, offset: int, text: str) -> None:
    with pytest.raises(FragmentIndexError) as info:
        decode_fragment_index(blob, n_rows=n_rows)
    message = str(info.value)
    assert text in message
    assert f"byte offset {offset}:" in message
    # the hot-path decoder applies the same rules with the same messages
    with pytest.raises(FragmentIndexError) as info_dense:
        decode_dense_ranges(blob, n_rows=n_rows)
    assert str(info_dense.value) == message


def test_strict_cases_violate_one_rule_only() -> None:
    """Sanity check of the table: repairing the violated field makes each blob decode."""
    fixed = build_blob(3, 1, bitmap_of([0, 0, 1]), [(0, 1)], [0, 1, 2], [5, 6])
    decode_fragment_index(fixed)
    fixed = build_blob(9, 9, bitmap_of([1] * 9), [(0, 1)] * 9, [0])
    decode_dense_ranges(fixed)
    decode_fragment_index(build_blob(1, 1, bitmap_of([1]), [(4, 0)], [0]), n_rows=4)
    decode_fragment_index(build_blob(2, 1, bitmap_of([1, 0]), [(0, 2)], [0, 2], [9, 1]), n_rows=10)
    decode_fragment_index(patch(patch(C, 0x48, "<q", I64_MAX - 1), 0x50, "<q", 1))


def test_huge_header_counts_fail_fast_without_allocating() -> None:
    """F, R, T near 2**32 are checked against the buffer length before any allocation."""
    blobs = [
        build_blob(0xFFFFFFFF, 0xFFFFFFFF, b"\xff" * 64),
        build_blob(0xFFFFFFFF, 0, bytes(64)),
        build_blob(1, 0, bitmap_of([0]), [], [0, 0xFFFFFFFF]),
    ]
    begin = time.perf_counter()
    for blob in blobs:
        for decode in (decode_fragment_index, decode_dense_ranges):
            with pytest.raises(FragmentIndexError, match="truncated"):
                decode(blob)
    assert time.perf_counter() - begin < 0.5


def test_dense_decoder_rejects_explicit_fragments() -> None:
    with pytest.raises(FragmentIndexError, match="fragment 1 is explicit"):
        decode_dense_ranges(A)
    with pytest.raises(FragmentIndexError, match="fragment 0 is explicit"):
        decode_dense_ranges(B)


def test_trailing_zero_bytes_accepted_everywhere() -> None:
    for blob in (A, B, C, golden("zvfg_empty.bin")):
        assert decode_fragment_index(blob + bytes(100)).encode() == blob


# --------------------------------------------------------------------------- round trips

range_frag = st.tuples(st.integers(0, 10**6), st.integers(0, 40))
explicit_frag = st.lists(st.integers(0, 3000), max_size=6).map(
    lambda rows: np.array(rows, dtype=np.int64)
)
any_frag = st.one_of(range_frag, explicit_frag)


@st.composite
def big_range(draw: st.DrawFn) -> tuple[int, int]:
    start = draw(st.integers(0, I64_MAX))
    count = draw(st.integers(0, min(I64_MAX - start, 2**62)))
    return (start, count)


@given(frags=st.lists(any_frag, max_size=70), pad=st.integers(0, 24))
@settings(max_examples=200, deadline=None)
def test_round_trip_mixed(frags: list[Any], pad: int) -> None:
    idx = FragmentIndex.from_fragments(frags)
    blob = idx.encode()
    n_idx = int(idx.csr_indices.size)
    assert len(blob) == fragment_index_nbytes(len(frags), idx.n_ranges, n_idx)
    back = decode_fragment_index(blob + bytes(pad))
    assert back == idx
    assert back.encode() == blob
    for f, frag in enumerate(frags):
        np.testing.assert_array_equal(back.fragment_rows(f), expected_rows(frag))
    if frags:
        order = np.arange(len(frags))[::-1].repeat(2)
        want = np.concatenate([expected_rows(frags[f]) for f in order])
        np.testing.assert_array_equal(back.rows_of(order), want)
    extent = back.row_extent()
    all_rows = [expected_rows(fr) for fr in frags]
    ends = [int(r.max()) + 1 for r in all_rows if r.size]
    ends += [fr[0] for fr in frags if isinstance(fr, tuple) and fr[1] == 0]
    assert extent == max(ends, default=0)
    decode_fragment_index(blob, n_rows=extent)
    if extent > 0:
        with pytest.raises(FragmentIndexError):
            decode_fragment_index(blob, n_rows=extent - 1)


@given(
    n_explicit=st.integers(0, 9),
    n_range=st.integers(0, 9),
    data=st.data(),
)
@settings(max_examples=60, deadline=None)
def test_round_trip_csr_alignment(n_explicit: int, n_range: int, data: st.DataObject) -> None:
    frags: list[Any] = [[2 * i + 1, 0] for i in range(n_explicit)] + [
        (i, 1) for i in range(n_range)
    ]
    frags = data.draw(st.permutations(frags))
    idx = FragmentIndex.from_fragments(frags)
    blob = idx.encode()
    n_frag = len(frags)
    if n_frag:
        index_offset = 16 + pad8((n_frag + 7) // 8) + 16 * n_range + 4 * (n_explicit + 1)
        # misaligned exactly when E + 1 is odd
        assert (index_offset % 8 == 4) == (n_explicit % 2 == 0)
        if n_explicit:
            assert (
                struct.unpack_from("<q", blob, index_offset)[0]
                == expected_rows(next(f for f in frags if not isinstance(f, tuple)))[0]
            )
    assert decode_fragment_index(blob) == idx


@given(ranges=st.lists(st.one_of(range_frag, big_range()), max_size=70))
@settings(max_examples=200, deadline=None)
def test_round_trip_all_ranges(ranges: list[tuple[int, int]]) -> None:
    starts = np.array([r[0] for r in ranges], dtype=np.int64)
    counts = np.array([r[1] for r in ranges], dtype=np.int64)
    idx = FragmentIndex.from_ranges(starts, counts)
    blob = idx.encode()
    assert blob == FragmentIndex.from_fragments(ranges).encode()
    assert blob == encode_dense_ranges(starts, counts)
    assert blob == bytes(encode_dense_ranges_batch(starts[None, :], counts[None, :])[0])
    assert decode_fragment_index(blob) == idx
    got_s, got_c = decode_dense_ranges(blob + bytes(5))
    np.testing.assert_array_equal(got_s, starts)
    np.testing.assert_array_equal(got_c, counts)
    assert idx.row_extent() == int((starts + counts).max(initial=0))


# --------------------------------------------------------------------------- fuzz


def reencode(idx: FragmentIndex, buf: bytes) -> bytes:
    """``idx`` encoded in the form of ``buf``: the counts form of its width when its flags name
    it (spec §6.8: readers accept any width), else the form ``FragmentIndex.encode`` writes."""
    (flags,) = struct.unpack_from("<H", buf, 6)
    if not is_counts_flags(flags):
        return idx.encode()
    n_frag = idx.n_fragments
    header = struct.pack("<IHHII", FRAGMENT_INDEX_MAGIC, 1, flags, n_frag, n_frag)
    return header + idx.range_counts.astype(f"<u{counts_width(flags)}").tobytes()


def assert_consistent(idx: FragmentIndex, buf: bytes) -> None:
    """Everything a decoded index promises, checked without materialising huge ranges."""
    n_frag = idx.n_fragments
    assert idx.is_range.shape == (n_frag,)
    assert idx.is_range.dtype == np.bool_
    n_range = int(np.count_nonzero(idx.is_range))
    assert idx.range_starts.shape == (n_range,) == idx.range_counts.shape
    assert idx.csr_offsets.shape == (n_frag - n_range + 1,)
    assert idx.csr_offsets[0] == 0
    assert (np.diff(idx.csr_offsets) >= 0).all()
    assert idx.csr_offsets[-1] == idx.csr_indices.size
    for arr in (idx.range_starts, idx.range_counts, idx.csr_indices):
        assert arr.dtype == np.int64
        assert (arr >= 0).all()
    assert (idx.range_counts <= I64_MAX - idx.range_starts).all()
    assert idx.row_extent() >= 0
    enc = reencode(idx, buf)
    assert buf[: len(enc)] == enc
    assert not any(buf[len(enc) :])
    assert decode_fragment_index(enc) == idx
    for f in range(n_frag):
        if not idx.is_range[f]:
            idx.fragment_rows(f)


def check_buffer(buf: bytes) -> None:
    try:
        idx = decode_fragment_index(buf)
    except FragmentIndexError:
        idx = None
    if idx is not None:
        assert_consistent(idx, buf)
    try:
        dense = decode_dense_ranges(buf)
    except FragmentIndexError:
        assert idx is None or not idx.all_ranges
    else:
        assert idx is not None
        assert idx.all_ranges
        np.testing.assert_array_equal(dense[0], idx.range_starts)
        np.testing.assert_array_equal(dense[1], idx.range_counts)


header_like = st.builds(
    lambda f, r, flags, tail: struct.pack("<IHHII", FRAGMENT_INDEX_MAGIC, 1, flags, f, r) + tail,
    st.one_of(st.integers(0, 80), st.integers(0, 2**32 - 1)),
    st.one_of(st.integers(0, 80), st.integers(0, 2**32 - 1)),
    st.sampled_from([0, 0, 0, 1]),
    st.binary(max_size=300),
)


@given(buf=st.one_of(st.binary(max_size=200), header_like))
@example(buf=b"GFVZ\x01\x00\x01\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00")
@example(buf=b"GFVZ\x01\x00\x03\x00\x01\x00\x00\x00\x01\x00\x00\x00\x03\x00")
@FUZZ
def test_fuzz_arbitrary_bytes(buf: bytes) -> None:
    check_buffer(buf)


@given(
    frags=st.lists(st.one_of(range_frag, big_range(), explicit_frag), max_size=20),
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 7)), max_size=4),
    cut=st.one_of(st.none(), st.integers(0, 10**6)),
    extra=st.binary(max_size=12),
)
@FUZZ
def test_fuzz_mutated_valid_blobs(
    frags: list[Any], flips: list[tuple[int, int]], cut: int | None, extra: bytes
) -> None:
    blob = bytearray(FragmentIndex.from_fragments(frags).encode())
    for pos, bit in flips:
        blob[pos % len(blob)] ^= 1 << bit
    if cut is not None:
        del blob[cut % (len(blob) + 1) :]
    blob += extra
    check_buffer(bytes(blob))
