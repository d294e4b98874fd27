"""Strict decoding of fragment-index blobs (ZVFG v1, spec §6).

Split from :mod:`zarr_vectors.format.fragments` (the model and the encoders): a decoder
must reject every malformed blob with :class:`~zarr_vectors.errors.FragmentIndexError`
naming the byte offset, and never crash or allocate beyond what the buffer can hold.
"""

from __future__ import annotations

import operator

import numpy as np

from zarr_vectors.errors import FragmentIndexError, InvalidInputError
from zarr_vectors.format.fragment_counts import decode_counts_blob, is_counts_flags
from zarr_vectors.format.fragments import (
    CSR_ZERO,
    FRAGMENT_INDEX_HEADER_NBYTES,
    FRAGMENT_INDEX_MAGIC,
    FRAGMENT_INDEX_VERSION,
    HEADER,
    I64_MAX,
    BytesLike,
    FragmentIndex,
    IntArray,
    all_range_prefix,
    bitmap_nbytes,
    byte_view,
    first_true,
    new_fragment_index,
)

__all__ = ["decode_dense_ranges", "decode_fragment_index"]


def _fail(offset: int, message: str) -> FragmentIndexError:
    return FragmentIndexError(f"ZVFG fragment index, byte offset {offset}: {message} (spec §6)")


def _need(nbytes: int, offset: int, size: int, section: str) -> None:
    """Raise when ``size`` bytes starting at ``offset`` are not all inside the blob."""
    if offset + size > nbytes:
        raise _fail(
            offset,
            f"truncated {section}: needs {size} bytes [{offset}, {offset + size}) "
            f"but the buffer has only {nbytes} bytes",
        )


def _check_tail(mv: memoryview, end: int) -> None:
    """Only zero bytes may follow the blob's last section."""
    if len(mv) > end:
        tail = np.frombuffer(mv, dtype=np.uint8, offset=end)
        if tail.any():
            pos = end + first_true(tail != 0)
            raise _fail(
                pos,
                f"non-zero trailing byte 0x{int(tail[pos - end]):02X} after the end of the "
                f"{end}-byte blob; only zero padding may follow a blob",
            )


def _read_header(mv: memoryview) -> tuple[int, int]:
    """Validate the 16-byte header and return ``(F, R)``."""
    _need(len(mv), 0, FRAGMENT_INDEX_HEADER_NBYTES, "header")
    magic, version, flags, n_frag, n_range = HEADER.unpack_from(mv, 0)
    if magic != FRAGMENT_INDEX_MAGIC:
        raise _fail(
            0,
            f"bad magic 0x{magic:08X} (bytes {bytes(mv[0:4]).hex(' ')}); expected "
            f"0x{FRAGMENT_INDEX_MAGIC:08X} (bytes 47 46 56 5a)",
        )
    if version != FRAGMENT_INDEX_VERSION:
        raise _fail(4, f"unsupported version {version}; expected {FRAGMENT_INDEX_VERSION}")
    if flags != 0:
        raise _fail(6, f"flags 0x{flags:04X}; expected 0 or a counts form (spec §6.8)")
    if n_range > n_frag:
        raise _fail(12, f"R={n_range} range fragments but only F={n_frag} fragments")
    return int(n_frag), int(n_range)


def _counts_form(mv: memoryview) -> tuple[int, int, int] | None:
    """``(flags, F, R)`` when ``mv`` starts with the header of a counts-form blob (§6.8)."""
    if len(mv) < FRAGMENT_INDEX_HEADER_NBYTES:
        return None
    magic, version, flags, n_frag, n_range = HEADER.unpack_from(mv, 0)
    if magic != FRAGMENT_INDEX_MAGIC or version != FRAGMENT_INDEX_VERSION:
        return None
    return (flags, n_frag, n_range) if is_counts_flags(flags) else None


def _check_n_rows(n_rows: int | None) -> int | None:
    if n_rows is None:
        return None
    value = operator.index(n_rows)
    if value < 0:
        raise InvalidInputError(f"n_rows must be >= 0, got {value}")
    return value


def _decode_table(
    mv: memoryview, pos: int, n_range: int, n_rows: int | None
) -> tuple[IntArray, IntArray]:
    """Read and validate the range table at ``pos`` (section already known to fit)."""
    table = np.frombuffer(mv, dtype="<i8", count=2 * n_range, offset=pos).astype(np.int64)
    starts = np.ascontiguousarray(table[0::2])
    counts = np.ascontiguousarray(table[1::2])
    if n_range == 0:
        return starts, counts
    if (bad := starts < 0).any():
        r = first_true(bad)
        raise _fail(pos + 16 * r, f"range row {r}: start {int(starts[r])} is negative")
    if (bad := counts < 0).any():
        r = first_true(bad)
        raise _fail(pos + 16 * r + 8, f"range row {r}: count {int(counts[r])} is negative")
    if (bad := counts > I64_MAX - starts).any():
        r = first_true(bad)
        raise _fail(
            pos + 16 * r,
            f"range row {r}: start {int(starts[r])} + count {int(counts[r])} overflows int64",
        )
    if n_rows is not None and (bad := starts + counts > n_rows).any():
        r = first_true(bad)
        raise _fail(
            pos + 16 * r,
            f"range row {r}: rows [{int(starts[r])}, {int(starts[r] + counts[r])}) "
            f"exceed the chunk's {n_rows} rows",
        )
    return starts, counts


def decode_fragment_index(buf: BytesLike, *, n_rows: int | None = None) -> FragmentIndex:
    """Decode and strictly validate a ZVFG v1 blob (spec §6).

    Parameters
    ----------
    buf : bytes-like or numpy.ndarray of uint8
        The blob, possibly followed by zero padding. Unaligned CSR indices are fine.
    n_rows : int, optional
        Number of rows of the chunk; when given, every range must lie in
        ``[0, n_rows)`` (``start + count <= n_rows``) and every explicit row below it.

    Returns
    -------
    FragmentIndex
        Arrays are copies, independent of ``buf``.

    Raises
    ------
    FragmentIndexError
        With the offending byte offset in the message, on: short header; wrong magic;
        version != 1; flags != 0; ``R > F``; any truncated section; bitmap popcount != R;
        non-zero bitmap padding; CSR ``offsets[0] != 0`` or decreasing offsets; negative
        starts, counts or indices; ``start + count`` overflowing int64; rows outside
        ``[0, n_rows)``; non-zero bytes after the blob.
    InvalidInputError
        ``buf`` is an array of another dtype, or ``n_rows`` is negative.
    """
    mv = byte_view(buf)
    rows = _check_n_rows(n_rows)
    if (counts_form := _counts_form(mv)) is not None:
        return FragmentIndex.from_ranges(*decode_counts_blob(mv, *counts_form, rows))
    nbytes = len(mv)
    n_frag, n_range = _read_header(mv)
    if n_frag == 0:
        _check_tail(mv, FRAGMENT_INDEX_HEADER_NBYTES)
        return FragmentIndex.empty()

    pos = FRAGMENT_INDEX_HEADER_NBYTES
    bm_len = bitmap_nbytes(n_frag)
    _need(nbytes, pos, bm_len, f"range bitmap (F={n_frag})")
    bits = np.unpackbits(
        np.frombuffer(mv, dtype=np.uint8, count=bm_len, offset=pos), bitorder="little"
    )
    if (pad := bits[n_frag:]).any():
        bit = n_frag + first_true(pad != 0)
        raise _fail(
            pos + bit // 8,
            f"bitmap padding bit {bit} is set; bits at and beyond F={n_frag} must be zero",
        )
    is_range = bits[:n_frag].astype(np.bool_)
    popcount = int(np.count_nonzero(is_range))
    if popcount != n_range:
        raise _fail(pos, f"bitmap marks {popcount} range fragments but the header says R={n_range}")
    pos += bm_len

    _need(nbytes, pos, 16 * n_range, f"range table (R={n_range} rows of 16 bytes)")
    starts, counts = _decode_table(mv, pos, n_range, rows)
    pos += 16 * n_range

    n_expl = n_frag - n_range
    _need(nbytes, pos, 4 * (n_expl + 1), f"CSR offsets (E+1={n_expl + 1} uint32)")
    offsets = np.frombuffer(mv, dtype="<u4", count=n_expl + 1, offset=pos).astype(np.int64)
    if offsets[0] != 0:
        raise _fail(pos, f"CSR offsets[0] = {int(offsets[0])}; expected 0")
    if n_expl and (dec := np.diff(offsets) < 0).any():
        e = first_true(dec) + 1
        raise _fail(
            pos + 4 * e,
            f"CSR offsets decrease: offsets[{e}] = {int(offsets[e])} < "
            f"offsets[{e - 1}] = {int(offsets[e - 1])}",
        )
    pos += 4 * (n_expl + 1)

    n_idx = int(offsets[-1])
    _need(nbytes, pos, 8 * n_idx, f"CSR indices (T={n_idx} int64)")
    indices = np.frombuffer(mv, dtype="<i8", count=n_idx, offset=pos).astype(np.int64)
    if n_idx:
        if (bad := indices < 0).any():
            i = first_true(bad)
            raise _fail(pos + 8 * i, f"CSR index {i} = {int(indices[i])} is negative")
        if rows is not None and (bad := indices >= rows).any():
            i = first_true(bad)
            raise _fail(
                pos + 8 * i,
                f"CSR index {i} = {int(indices[i])} outside the chunk's {rows} rows",
            )
    pos += 8 * n_idx

    _check_tail(mv, pos)
    return new_fragment_index(is_range, starts, counts, offsets, indices)


def decode_dense_ranges(buf: BytesLike, *, n_rows: int | None = None) -> tuple[IntArray, IntArray]:
    """Decode an all-range blob straight to per-fragment ``(starts, counts)`` (spec §6).

    The reader's hot path: a well-formed dense blob is checked with a handful of
    vectorised comparisons; anything unusual falls back to
    :func:`decode_fragment_index`, so the checks and error messages are exactly those
    of the full decoder.

    Parameters
    ----------
    buf : bytes-like or numpy.ndarray of uint8
        The blob, possibly followed by zero padding.
    n_rows : int, optional
        As in :func:`decode_fragment_index`.

    Returns
    -------
    starts, counts : numpy.ndarray of int64, shape (F,)
        Fresh arrays; entry ``f`` describes fragment ``f``.

    Raises
    ------
    FragmentIndexError
        The blob is malformed (see :func:`decode_fragment_index`) or some fragment is
        explicit.
    InvalidInputError
        As :func:`decode_fragment_index`.
    """
    mv = byte_view(buf)
    rows = _check_n_rows(n_rows)
    if (counts_form := _counts_form(mv)) is not None:
        return decode_counts_blob(mv, *counts_form, rows)
    nbytes = len(mv)
    if nbytes >= FRAGMENT_INDEX_HEADER_NBYTES:
        magic, version, flags, n_frag, n_range = HEADER.unpack_from(mv, 0)
        if (
            magic == FRAGMENT_INDEX_MAGIC
            and version == FRAGMENT_INDEX_VERSION
            and flags == 0
            and n_range == n_frag
            and n_frag > 0
        ):
            # size check first: the prefix is only built (and cached) for a blob that fits
            plen = FRAGMENT_INDEX_HEADER_NBYTES + bitmap_nbytes(n_frag)
            end = plen + 16 * n_frag + 4
            if (
                end <= nbytes
                and mv[:plen] == all_range_prefix(n_frag)
                and mv[end - 4 : end] == CSR_ZERO
            ):
                table = np.frombuffer(mv, dtype="<i8", count=2 * n_frag, offset=plen)
                starts = table[0::2].astype(np.int64)
                counts = table[1::2].astype(np.int64)
                ends = starts + counts  # wraps negative on overflow of non-negative values
                if (
                    int((starts | counts | ends).min()) >= 0
                    and (rows is None or int(ends.max()) <= rows)
                    and (nbytes == end or not np.frombuffer(mv, np.uint8, offset=end).any())
                ):
                    return starts, counts
    index = decode_fragment_index(mv, n_rows=rows)
    starts_ro, counts_ro = index.dense_ranges()
    return starts_ro.copy(), counts_ro.copy()
