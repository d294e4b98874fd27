"""Counts-form fragment blobs (spec §6.8): the kernels against plain-numpy twins, and the
round trip through the format layer's encoder and decoders."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.format.fragment_counts import decode_counts_blobs, tiling_blobs
from zarr_vectors.format.fragment_decoding import decode_dense_ranges, decode_fragment_index
from zarr_vectors.format.fragment_encoding import encode_ranges_ragged
from zarr_vectors.kernels import set_kernel_mode
from zarr_vectors.kernels.count_blobs import counts_needed, exclusive_prefix_sum, fill_count_blobs

HEADER = (0x5A564647, 1, 16)
GOLDEN = Path(__file__).parent.parent / "format" / "golden"


def naive_prefix_sum(counts: np.ndarray) -> np.ndarray:
    """The numpy twin of :func:`exclusive_prefix_sum`."""
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)[: counts.shape[0]]


def naive_count_blob(counts: np.ndarray) -> bytes:
    """One counts-form blob, written field by field with :mod:`struct` (spec §6.8)."""
    largest = int(counts.max())
    width = next(w for w in (1, 2, 4, 8) if largest < 256**w)
    flags = 1 | ((width.bit_length() - 1) << 1)
    head = struct.pack("<IHHII", HEADER[0], 1, flags, counts.size, counts.size)
    return head + counts.astype(f"<u{width}").tobytes()


def test_prefix_sum_equals_its_numpy_twin() -> None:
    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 300):
        counts = rng.integers(0, 2**40, n).astype(np.int64)
        np.testing.assert_array_equal(exclusive_prefix_sum(counts), naive_prefix_sum(counts))


def test_fill_count_blobs_equals_the_struct_twin() -> None:
    blobs = [np.array([3, 0, 255]), np.array([256, 1]), np.array([70_000]), np.array([2**33])]
    counts = np.concatenate(blobs).astype(np.int64)
    bounds = np.cumsum([0, *(b.size for b in blobs)]).astype(np.int64)
    want = [naive_count_blob(b) for b in blobs]
    sizes = np.array([len(w) for w in want], np.int64)
    widths = (sizes - 16) // np.diff(bounds)
    out = np.zeros(int(sizes.sum()), np.uint8)
    fill_count_blobs(out, np.cumsum(sizes) - sizes, bounds, counts, widths, HEADER)
    assert out.tobytes() == b"".join(want)
    assert widths.tolist() == [1, 2, 4, 8]


@st.composite
def ragged_ranges(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Blobs of ranges, most of them tiling, some with a gap or an empty blob."""
    sizes = draw(st.lists(st.integers(0, 6), min_size=1, max_size=5))
    starts, counts = [], []
    for size in sizes:
        c = draw(st.lists(st.integers(0, 70_000), min_size=size, max_size=size))
        s = list(np.cumsum([0, *c[:-1]])) if size else []
        if size and draw(st.booleans()):
            s[-1] += draw(st.integers(1, 3))  # a gap: the blob does not tile
        starts += s
        counts += c
    bounds = np.cumsum([0, *sizes]).astype(np.int64)
    return np.array(starts, np.int64), np.array(counts, np.int64), bounds


@settings(max_examples=40, deadline=None)
@given(ragged_ranges())
def test_counts_form_decodes_to_the_ranges_of_the_range_form(
    case: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """Every blob decodes to its ranges in both forms; exactly the tiling blobs with
    fragments take the counts form, which is never longer."""
    starts, counts, bounds = case
    lean = encode_ranges_ragged(starts, counts, bounds, counts_form=True)
    full = encode_ranges_ragged(starts, counts, bounds)
    tiles = tiling_blobs(starts, counts, bounds)
    for j, (a, b) in enumerate(itertools.pairwise(bounds)):
        assert bool(lean[j][6] & 1) == bool(tiles[j])
        assert len(lean[j]) <= len(full[j])
        for blob in (lean[j], full[j]):
            got_s, got_c = decode_dense_ranges(blob)
            np.testing.assert_array_equal(got_s, starts[a:b])
            np.testing.assert_array_equal(got_c, counts[a:b])
        assert decode_fragment_index(lean[j]) == decode_fragment_index(full[j])


def test_counts_form_reproduces_the_golden_example() -> None:
    """Example C of spec §6.7 in the counts form of §6.8, byte for byte both ways."""
    golden = (GOLDEN / "zvfg_example_c_counts.bin").read_bytes()
    dense = (GOLDEN / "zvfg_example_c_dense.bin").read_bytes()
    starts, counts = decode_dense_ranges(dense)
    bounds = np.array([0, 4])
    assert encode_ranges_ragged(starts, counts, bounds, counts_form=True)[0].tobytes() == golden
    got = decode_dense_ranges(golden + bytes(12))  # zero padding after the blob is fine
    np.testing.assert_array_equal(got[0], starts)
    np.testing.assert_array_equal(got[1], counts)


def naive_counts_blob_ranges(
    buffer: np.ndarray, begins: np.ndarray, ends: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """The numpy twin of :func:`counts_blob_ranges`: each blob parsed with :mod:`struct`."""
    out: list[tuple[np.ndarray, np.ndarray] | None] = []
    for a, b in zip(begins.tolist(), ends.tolist(), strict=True):
        blob = buffer[a:b].tobytes()
        if len(blob) < 16:
            out.append(None)
            continue
        magic, version, flags, n_frag, n_range = struct.unpack_from("<IHHII", blob)
        width = 1 << ((flags >> 1) & 3)
        stop = 16 + width * n_frag
        if (
            (magic, version) != HEADER[:2]
            or not flags & 1
            or flags > 7
            or n_frag == 0
            or n_range != n_frag
            or stop > len(blob)
            or any(blob[stop:])
        ):
            out.append(None)
            continue
        counts = [
            int.from_bytes(blob[16 + width * f : 16 + width * (f + 1)], "little")
            for f in range(n_frag)
        ]
        if sum(counts) > 2**63 - 1:
            out.append(None)
            continue
        starts = np.concatenate([[0], np.cumsum(counts, dtype=np.uint64)[:-1]]).astype(np.int64)
        out.append((starts, np.array(counts, np.int64)))
    return out


def _batch(blobs: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sizes = np.array([len(b) for b in blobs], np.int64)
    ends = np.cumsum(sizes)
    return np.frombuffer(b"".join(blobs), np.uint8), ends - sizes, ends


def _assert_same(got: list, want: list) -> None:
    assert [g is None for g in got] == [w is None for w in want]
    for g, w in zip(got, want, strict=True):
        if g is not None:
            np.testing.assert_array_equal(g[0], w[0])
            np.testing.assert_array_equal(g[1], w[1])


def test_counts_blob_ranges_equals_its_numpy_twin() -> None:
    """Every width, padding, and each kind of blob the kernel leaves to the strict decoder:
    another form, a bad header, a truncated table, a non-zero tail, an int64 overflow."""
    good = [naive_count_blob(np.array(c)) for c in ([3, 0, 255], [256, 1], [70_000], [2**33])]
    overflow = struct.pack("<IHHII", HEADER[0], 1, 7, 2, 2) + struct.pack("<QQ", 2**62, 2**62)
    ranges_form = encode_ranges_ragged(np.array([0, 3]), np.array([3, 4]), np.array([0, 2]))
    bad = [
        good[0][:-1],  # truncated
        good[0] + b"\x00\x01",  # non-zero tail
        good[1][:6] + b"\x09\x00" + good[1][8:],  # unknown flag bit
        good[1][:8] + struct.pack("<II", 2, 1) + good[1][16:],  # R != F
        b"\x00" * 16,
        overflow,
        ranges_form[0].tobytes(),
    ]
    blobs = [good[0] + bytes(5), *bad, *good[1:]]
    buffer, begins, ends = _batch(blobs)
    want = naive_counts_blob_ranges(buffer, begins, ends)
    assert [w is None for w in want] == [False] + [True] * len(bad) + [False] * 3
    _assert_same(decode_counts_blobs(buffer, begins, ends), want)
    for blob, w in zip(blobs, want, strict=True):
        if w is not None:
            _assert_same([decode_dense_ranges(blob)], [w])


@settings(max_examples=25, deadline=None)
@given(ragged_ranges(), st.data())
def test_batched_counts_blobs_decode_like_the_strict_decoder(
    case: tuple[np.ndarray, np.ndarray, np.ndarray], data: st.DataObject
) -> None:
    """Blobs of both forms, one byte maybe flipped: a blob the batch decodes, the strict
    decoder decodes to the same ranges; every intact counts-form blob is decoded."""
    starts, counts, bounds = case
    lean = [b.tobytes() for b in encode_ranges_ragged(starts, counts, bounds, counts_form=True)]
    intact = [bool(b[6] & 1) for b in lean]
    if data.draw(st.booleans()):
        j = data.draw(st.integers(0, len(lean) - 1))
        at = data.draw(st.integers(0, len(lean[j]) - 1))
        flipped = bytearray(lean[j])
        flipped[at] ^= data.draw(st.integers(1, 255))
        lean[j], intact[j] = bytes(flipped), False
    buffer, begins, ends = _batch(lean)
    got = decode_counts_blobs(buffer, begins, ends)
    _assert_same(got, naive_counts_blob_ranges(buffer, begins, ends))
    for blob, found, whole in zip(lean, got, intact, strict=True):
        assert found is not None or not whole
        if found is not None:
            _assert_same([decode_dense_ranges(blob)], [found])


@pytest.mark.parametrize("mode", ["python", "compiled"])
@settings(max_examples=25, deadline=None)
@given(ragged_ranges(), st.data())
def test_needed_counts_equal_the_batch_decode_restricted(
    mode: str, case: tuple[np.ndarray, np.ndarray, np.ndarray], data: st.DataObject
) -> None:
    """:func:`counts_needed` decodes exactly the blobs the numpy twin of the batch decoder
    decodes, and gives their ranges restricted to the fragments asked (none, all, the
    first, the last, or any in any order with repeats, maybe outside ``[0, F)``)."""
    starts, counts, bounds = case
    lean = [b.tobytes() for b in encode_ranges_ragged(starts, counts, bounds, counts_form=True)]
    if data.draw(st.booleans()):
        j = data.draw(st.integers(0, len(lean) - 1))
        flipped = bytearray(lean[j])
        flipped[data.draw(st.integers(0, len(flipped) - 1))] ^= data.draw(st.integers(1, 255))
        lean[j] = bytes(flipped)
    buffer, begins, ends = _batch(lean)
    want = naive_counts_blob_ranges(buffer, begins, ends)
    asked = []
    for w in want:
        n = 1 if w is None else w[0].shape[0]
        pick = data.draw(st.sampled_from(["none", "all", "first", "last", "any"]))
        asked.append(
            {"none": [], "all": list(range(n)), "first": [0], "last": [n - 1]}.get(pick)
            or data.draw(st.lists(st.integers(-1, n + 1), max_size=n + 2))
        )
    need_bounds = np.cumsum([0, *(len(a) for a in asked)])
    fragment = np.array(list(itertools.chain(*asked)), np.int64)
    previous = set_kernel_mode(mode)
    try:
        got = counts_needed(buffer, begins, ends, HEADER, (need_bounds, fragment))
    finally:
        set_kernel_mode(previous)
    got_starts, got_counts, fragments, rows, ok = got
    for j, (w, a) in enumerate(zip(want, asked, strict=True)):
        assert ok[j] == (w is not None)
        if w is None:
            continue
        need = np.array(a, np.int64)
        inside = (need >= 0) & (need < w[0].shape[0])
        at = np.clip(need, 0, w[0].shape[0] - 1)
        lo, hi = need_bounds[j], need_bounds[j + 1]
        np.testing.assert_array_equal(got_starts[lo:hi], np.where(inside, w[0][at], -1))
        np.testing.assert_array_equal(got_counts[lo:hi], np.where(inside, w[1][at], -1))
        assert (fragments[j], rows[j]) == (w[0].shape[0], w[1].sum())
