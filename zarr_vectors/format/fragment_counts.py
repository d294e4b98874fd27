"""The counts form of fragment-index blobs (ZVFG v1 with flag 1, format 1.5, spec §6.8).

Where a chunk's fragments are all ranges that tile its rows in fragment order (every
level-0 blob, spec §6.5), the ``start`` of every range is the sum of the counts before it.
The counts form stores the 16-byte header and then only the ``F`` counts, little-endian
unsigned integers of 1, 2, 4 or 8 bytes (the narrowest that holds the largest count, named
by the header's flags)::

    offset  size        field
    0       16          header: magic, version 1, flags = 1 | (w << 1), F, R = F
    16      F * 2**w    counts, uint8 / uint16 / uint32 / uint64 for w = 0 / 1 / 2 / 3

Readers derive the starts by a prefix sum (:func:`~zarr_vectors.kernels.count_blobs.
exclusive_prefix_sum`).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import FragmentIndexError
from zarr_vectors.format.fragments import (
    FRAGMENT_INDEX_HEADER_NBYTES,
    FRAGMENT_INDEX_MAGIC,
    FRAGMENT_INDEX_VERSION,
    I64_MAX,
    IntArray,
    first_true,
)
from zarr_vectors.kernels.count_blobs import (
    counts_blob_ranges,
    exclusive_prefix_sum,
    fill_count_blobs,
)

__all__ = [
    "COUNTS_FLAG",
    "counts_blob_size",
    "counts_width",
    "decode_counts_blob",
    "decode_counts_blobs",
    "encode_counts_ragged",
    "is_counts_flags",
    "tiling_blobs",
]

COUNTS_FLAG: Final[int] = 0x0001
"""Bit 0 of the header's flags: the blob is in the counts form."""
_WIDTH_SHIFT: Final[int] = 1
_KNOWN_FLAGS: Final[int] = COUNTS_FLAG | (0b11 << _WIDTH_SHIFT)


def is_counts_flags(flags: int) -> bool:
    """Whether header ``flags`` name the counts form (bit 0 set, no unknown bit)."""
    return bool(flags & COUNTS_FLAG) and not flags & ~_KNOWN_FLAGS


def counts_width(flags: int) -> int:
    """Bytes per count named by counts-form ``flags``: 1, 2, 4 or 8."""
    return 1 << ((flags >> _WIDTH_SHIFT) & 0b11)


def counts_blob_size(flags: int, n_fragments: int) -> int:
    """``S`` of a counts-form blob: the header and ``F`` counts."""
    return FRAGMENT_INDEX_HEADER_NBYTES + counts_width(flags) * n_fragments


def tiling_blobs(starts: IntArray, counts: IntArray, bounds: IntArray) -> npt.NDArray[np.bool_]:
    """Per blob: it has fragments and its ranges tile ``[0, Σ counts)`` in order.

    Parameters
    ----------
    starts, counts
        ``(r,)`` the range of every fragment, blob after blob.
    bounds
        ``(k + 1,)`` blob ``j`` holds fragments ``bounds[j]:bounds[j+1]``.

    Examples
    --------
    >>> tiling_blobs(np.array([0, 2, 0, 6]), np.array([2, 1, 5, 1]), np.array([0, 2, 4, 4]))
    array([ True, False, False])
    """
    first = bounds[:-1]
    sizes = np.diff(bounds)
    if counts.size == 0:
        return np.zeros(sizes.shape[0], np.bool_)
    before = np.cumsum(counts) - counts
    base = np.repeat(before[np.minimum(first, before.shape[0] - 1)], sizes)
    off = np.concatenate([[0], np.cumsum(starts != before - base)])
    tiles: npt.NDArray[np.bool_] = (off[bounds[1:]] == off[first]) & (sizes > 0)
    return tiles


def encode_counts_ragged(counts: IntArray, bounds: IntArray) -> list[npt.NDArray[np.uint8]]:
    """Counts-form blobs of the fragments ``bounds[j]:bounds[j+1]`` of ``counts``.

    The caller has checked the counts (non-negative, the blob sizes within uint32) and
    that every blob tiles (:func:`tiling_blobs`).

    Examples
    --------
    >>> [b.tolist()[6:] for b in encode_counts_ragged(np.array([3, 300]), np.array([0, 1, 2]))]
    [[1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 3], [3, 0, 1, 0, 0, 0, 1, 0, 0, 0, 44, 1]]
    """
    sizes = np.diff(bounds)
    largest = np.zeros(sizes.shape[0], np.int64)
    nonempty = sizes > 0
    if counts.size:
        largest[nonempty] = np.maximum.reduceat(counts, bounds[:-1][nonempty])
    widths = np.ones(sizes.shape[0], np.int64)
    for width in (2, 4, 8):
        widths[largest >= 1 << (8 * width // 2)] = width
    nbytes = FRAGMENT_INDEX_HEADER_NBYTES + widths * sizes
    ends = np.cumsum(nbytes)
    begins = ends - nbytes
    out = np.zeros(int(ends[-1]) if ends.size else 0, dtype=np.uint8)
    header = (FRAGMENT_INDEX_MAGIC, FRAGMENT_INDEX_VERSION, FRAGMENT_INDEX_HEADER_NBYTES)
    fill_count_blobs(out, begins, bounds, counts, widths, header)
    return [out[a:b] for a, b in zip(begins.tolist(), ends.tolist(), strict=True)]


def decode_counts_blob(
    mv: memoryview, flags: int, n_frag: int, n_range: int, n_rows: int | None
) -> tuple[IntArray, IntArray]:
    """Strictly decode a counts-form blob whose header has been read (spec §6.8).

    Returns
    -------
    starts, counts : numpy.ndarray of int64, shape (F,)

    Raises
    ------
    FragmentIndexError
        ``F = 0`` or ``R ≠ F``; a truncated count table; counts whose sum overflows int64
        or exceeds ``n_rows``; non-zero bytes after the blob.
    """
    if n_frag == 0 or n_range != n_frag:
        raise _fail(
            6,
            f"flags 0x{flags:04X} name the counts form, which needs F = R > 0; "
            f"got F={n_frag}, R={n_range}",
        )
    width = counts_width(flags)
    end = counts_blob_size(flags, n_frag)
    if end > len(mv):
        raise _fail(
            FRAGMENT_INDEX_HEADER_NBYTES,
            f"truncated count table: needs {end} bytes but the buffer has only {len(mv)}",
        )
    raw = np.frombuffer(mv, dtype=f"<u{width}", count=n_frag, offset=FRAGMENT_INDEX_HEADER_NBYTES)
    big = width >= 4 and float(raw.sum(dtype=np.float64)) >= 2.0**62
    if big and sum(int(c) for c in raw.tolist()) > I64_MAX:
        raise _fail(FRAGMENT_INDEX_HEADER_NBYTES, "the counts' sum overflows int64")
    counts = raw.astype(np.int64)
    starts = exclusive_prefix_sum(counts)
    total = int(starts[-1] + counts[-1])
    if n_rows is not None and total > n_rows:
        raise _fail(
            FRAGMENT_INDEX_HEADER_NBYTES,
            f"the fragments cover {total} rows but the chunk has only {n_rows}",
        )
    if len(mv) > end and (tail := np.frombuffer(mv, dtype=np.uint8, offset=end)).any():
        raise _fail(end + first_true(tail != 0), "non-zero byte after the blob")
    return starts, counts


def decode_counts_blobs(
    buffer: npt.NDArray[np.uint8], begins: IntArray, ends: IntArray
) -> list[tuple[IntArray, IntArray] | None]:
    """The ``(starts, counts)`` of many blobs at once, each as :func:`decode_counts_blob`
    gives them for a well-formed counts-form blob; None for any other blob (another form,
    or a damaged one: decode it with
    :func:`~zarr_vectors.format.fragment_decoding.decode_dense_ranges`, which names the
    fault).

    Parameters
    ----------
    buffer
        Bytes holding the blobs; blob ``j`` is ``buffer[begins[j]:ends[j]]``, possibly
        followed by zero padding.
    begins, ends
        ``(k,)`` int64 bounds of each blob in ``buffer``.

    Examples
    --------
    >>> blobs = encode_counts_ragged(np.array([3, 4, 300]), np.array([0, 2, 3]))
    >>> joined = np.concatenate([blobs[0], np.zeros(5, np.uint8), blobs[1]])
    >>> found = decode_counts_blobs(joined, np.array([0, 23]), np.array([23, 41]))
    >>> [(s.tolist(), c.tolist()) for s, c in found]
    [([0, 3], [3, 4]), ([0], [300])]
    >>> decode_counts_blobs(np.zeros(16, np.uint8), np.array([0]), np.array([16]))
    [None]
    """
    header = (FRAGMENT_INDEX_MAGIC, FRAGMENT_INDEX_VERSION, FRAGMENT_INDEX_HEADER_NBYTES)
    starts, counts, bounds, ok = counts_blob_ranges(
        buffer,
        np.asarray(begins, dtype=np.int64),
        np.asarray(ends, dtype=np.int64),
        header,
    )
    edges = bounds.tolist()
    return [
        (starts[a:b], counts[a:b]) if good else None
        for a, b, good in zip(edges[:-1], edges[1:], ok.tolist(), strict=True)
    ]


def _fail(offset: int, message: str) -> FragmentIndexError:
    return FragmentIndexError(
        f"ZVFG fragment index (counts form), byte offset {offset}: {message} (spec §6.8)"
    )
