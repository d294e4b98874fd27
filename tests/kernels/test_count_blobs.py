"""Counts-form fragment blobs (spec §6.8): the kernels against plain-numpy twins, and the
round trip through the format layer's encoder and decoders."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.format.fragment_counts import tiling_blobs
from zarr_vectors.format.fragment_decoding import decode_dense_ranges, decode_fragment_index
from zarr_vectors.format.fragment_encoding import encode_ranges_ragged
from zarr_vectors.kernels.count_blobs import exclusive_prefix_sum, fill_count_blobs

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
