"""Strict inspection of fragment-index blobs (ZVFG v1) with one check id per rule (spec §6.4).

:func:`inspect_blob` walks a blob in the order of spec §6.3 and reports the first rule it
breaks as ``(check id, message)``. Well-formed dense blobs (the common case) are accepted
by the library's fast decoder first, so the walk only runs on unusual blobs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

import numpy as np

from zarr_vectors.errors import FragmentIndexError
from zarr_vectors.format.codecs import COUNTS_BLOBS_VERSION
from zarr_vectors.format.fragment_counts import (
    counts_blob_size,
    is_counts_flags,
)
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.format.fragments import (
    FRAGMENT_INDEX_HEADER_NBYTES,
    FRAGMENT_INDEX_MAGIC,
    FRAGMENT_INDEX_VERSION,
)
from zarr_vectors.format.version import parse_version

__all__ = ["Blob", "BlobError", "blob_size", "checked_blob", "inspect_blob"]

_HEADER: Final = struct.Struct("<IHHII")
_I64_MAX: Final = 2**63 - 1
_COUNTS_VERSION: Final = parse_version(COUNTS_BLOBS_VERSION)


@dataclass(frozen=True, slots=True)
class Blob:
    """A decoded, well-formed fragment index.

    Attributes
    ----------
    size
        ``S``, the blob length in bytes.
    is_range
        ``(F,)`` bool: fragment ``f`` is a range.
    starts, counts
        ``(R,)`` int64 range rows, in fragment order of the range fragments.
    offsets, indices
        CSR offsets ``(E+1,)`` and indices ``(T,)`` of the explicit fragments.
    counts_form
        The blob is in the counts form of spec §6.8 (format 1.5).
    """

    size: int
    is_range: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    offsets: np.ndarray
    indices: np.ndarray
    counts_form: bool = False

    @property
    def n_fragments(self) -> int:
        """``F``."""
        return int(self.is_range.shape[0])

    @property
    def all_ranges(self) -> bool:
        """True when every fragment is a range."""
        return bool(self.is_range.all())

    @property
    def extent(self) -> int:
        """Row extent: the largest ``start + count`` of a range or ``index + 1`` (spec §6.3)."""
        top = int((self.starts + self.counts).max(initial=0))
        if self.indices.size:
            top = max(top, int(self.indices.max()) + 1)
        return top

    def tiles(self, n_rows: int) -> bool:
        """Every fragment is a range and the ranges tile ``[0, n_rows)`` in fragment order."""
        if not self.all_ranges:
            return False
        ends = np.cumsum(self.counts)
        starts = ends - self.counts
        return bool(np.array_equal(starts, self.starts)) and int(ends[-1] if ends.size else 0) == (
            n_rows
        )


class BlobError(Exception):
    """A broken rule: ``check_id`` of spec §11.4 and a message."""

    def __init__(self, check_id: str, message: str) -> None:
        super().__init__(message)
        self.check_id = check_id
        self.message = message


def _bitmap_nbytes(n_fragments: int) -> int:
    return (((n_fragments + 7) // 8 + 7) // 8) * 8


def blob_size(payload: np.ndarray) -> int:
    """``S`` of the blob at the start of ``payload`` as far as it can be read (spec §6.2).

    A header that is not a ZVFG header, or a payload too short to hold the last CSR
    offset, gives the part of the size that is known (at least 16).
    """
    if payload.shape[0] < FRAGMENT_INDEX_HEADER_NBYTES:
        return FRAGMENT_INDEX_HEADER_NBYTES
    magic, version, flags, n_frag, n_range = _HEADER.unpack_from(payload.data, 0)
    zvfg = magic == FRAGMENT_INDEX_MAGIC and version == FRAGMENT_INDEX_VERSION
    if zvfg and is_counts_flags(flags):
        return counts_blob_size(flags, n_frag)
    if not zvfg or flags or n_range > n_frag or n_frag == 0:
        return FRAGMENT_INDEX_HEADER_NBYTES
    last: int = FRAGMENT_INDEX_HEADER_NBYTES + _bitmap_nbytes(n_frag) + 16 * n_range
    last += 4 * (n_frag - n_range)
    if last + 4 > payload.shape[0]:
        return last + 4
    total = int(np.frombuffer(payload, "<u4", count=1, offset=last)[0])
    return last + 4 + 8 * total


def inspect_blob(payload: np.ndarray) -> Blob:
    """Decode a blob strictly (spec §6.4, context-free rules).

    Parameters
    ----------
    payload
        The ``L_max`` bytes of the chunk (``uint8``; blocks not stored are zeros).

    Returns
    -------
    Blob

    Raises
    ------
    BlobError
        With the id of the first rule broken: ``L3.frag_truncated``, ``frag_magic``,
        ``frag_version``, ``frag_flags``, ``frag_range_count``, ``frag_popcount``,
        ``frag_padding``, ``frag_range_values``, ``frag_csr_start``, ``frag_csr_monotone``,
        ``frag_indices_non_negative`` or ``frag_trailing_bytes``.
    """
    try:
        starts, counts = decode_dense_ranges(payload)
    except FragmentIndexError:
        return _walk(payload)
    n = starts.shape[0]
    counts_form = _counts_flags(payload) is not None
    size = blob_size(payload)
    empty = np.zeros(0, np.int64)
    ones = np.ones(n, bool)
    return Blob(size, ones, starts, counts, np.zeros(1, np.int64), empty, counts_form)


def checked_blob(payload: np.ndarray, version: tuple[int, int] | None) -> Blob:
    """:func:`inspect_blob`, and a counts-form blob only in a store of format 1.5 or later.

    Raises
    ------
    BlobError
        As :func:`inspect_blob`; ``L3.frag_flags`` for the counts form (spec §6.8) in a
        store of an older format.
    """
    blob = inspect_blob(payload)
    if blob.counts_form and version is not None and version < _COUNTS_VERSION:
        raise BlobError(
            "L3.frag_flags",
            f"a counts-form blob (flags 0x{int(payload[6]) | int(payload[7]) << 8:04X}) in a "
            f"store of format {version[0]}.{version[1]}; the form needs format 1.5 (spec §6.8)",
        )
    return blob


def _counts_flags(payload: np.ndarray) -> int | None:
    """The flags of a ZVFG header naming the counts form (spec §6.8), else None."""
    if payload.shape[0] < FRAGMENT_INDEX_HEADER_NBYTES:
        return None
    magic, version, flags, _, _ = _HEADER.unpack_from(payload.data, 0)
    zvfg = magic == FRAGMENT_INDEX_MAGIC and version == FRAGMENT_INDEX_VERSION
    return flags if zvfg and is_counts_flags(flags) else None


def _walk_counts(payload: np.ndarray, flags: int) -> Blob:
    """Report the first rule a counts-form blob breaks (spec §6.8)."""
    _, _, _, n_frag, n_range = _HEADER.unpack_from(payload.data, 0)
    if n_frag == 0 or n_range != n_frag:
        raise BlobError(
            "L3.frag_range_count",
            f"a counts-form blob needs F = R > 0, F = {n_frag}, R = {n_range}",
        )
    end = counts_blob_size(flags, n_frag)
    _need(payload, end, "count table")
    _trailing(payload, end)
    # the one rule left that the decoder checks
    raise BlobError("L3.frag_range_values", "the counts' sum overflows int64")


def _need(payload: np.ndarray, end: int, what: str) -> None:
    if end > payload.shape[0]:
        raise BlobError(
            "L3.frag_truncated",
            f"the {what} ends at byte {end} but the payload holds {payload.shape[0]} bytes",
        )


def _walk(payload: np.ndarray) -> Blob:
    _need(payload, FRAGMENT_INDEX_HEADER_NBYTES, "header")
    if (flags := _counts_flags(payload)) is not None:
        return _walk_counts(payload, flags)
    n_frag, n_range = _header(payload)
    pos = FRAGMENT_INDEX_HEADER_NBYTES
    if n_frag == 0:
        _trailing(payload, pos)
        empty = np.zeros(0, np.int64)
        return Blob(pos, np.zeros(0, bool), empty, empty, np.zeros(1, np.int64), empty)
    size = _bitmap_nbytes(n_frag)
    _need(payload, pos + size, "range bitmap")
    is_range = _bitmap(payload[pos : pos + size], n_frag, n_range)
    pos += size
    _need(payload, pos + 16 * n_range, "range table")
    table = payload[pos : pos + 16 * n_range].view("<i8").astype(np.int64)
    starts, counts = table[0::2], table[1::2]
    _range_values(starts, counts)
    pos += 16 * n_range
    n_expl = n_frag - n_range
    _need(payload, pos + 4 * (n_expl + 1), "CSR offsets")
    offsets = payload[pos : pos + 4 * (n_expl + 1)].view("<u4").astype(np.int64)
    _offsets(offsets)
    pos += 4 * (n_expl + 1)
    total = int(offsets[-1])
    _need(payload, pos + 8 * total, "CSR indices")
    indices = payload[pos : pos + 8 * total].view("<i8").astype(np.int64)
    if indices.size and int(indices.min()) < 0:
        i = int(np.argmax(indices < 0))
        raise BlobError("L3.frag_indices_non_negative", f"CSR index {i} is {int(indices[i])}")
    pos += 8 * total
    _trailing(payload, pos)
    return Blob(pos, is_range, starts, counts, offsets, indices)


def _header(payload: np.ndarray) -> tuple[int, int]:
    magic, version, flags, n_frag, n_range = _HEADER.unpack_from(payload.data, 0)
    if magic != FRAGMENT_INDEX_MAGIC:
        raise BlobError("L3.frag_magic", f"magic is 0x{magic:08X}, expected 0x5A564647")
    if version != FRAGMENT_INDEX_VERSION:
        raise BlobError("L3.frag_version", f"version is {version}, expected 1")
    if flags != 0:
        raise BlobError(
            "L3.frag_flags", f"flags are 0x{flags:04X}, expected 0 or a counts form (spec §6.8)"
        )
    if n_range > n_frag:
        raise BlobError("L3.frag_range_count", f"R = {n_range} exceeds F = {n_frag}")
    return int(n_frag), int(n_range)


def _bitmap(raw: np.ndarray, n_frag: int, n_range: int) -> np.ndarray:
    bits = np.unpackbits(raw, bitorder="little")
    is_range = bits[:n_frag].astype(bool)
    popcount = int(np.count_nonzero(is_range))
    if popcount != n_range:
        raise BlobError("L3.frag_popcount", f"the bitmap marks {popcount} ranges, R = {n_range}")
    if bits[n_frag:].any():
        raise BlobError("L3.frag_padding", f"bitmap bits or bytes beyond F = {n_frag} are set")
    return is_range


def _range_values(starts: np.ndarray, counts: np.ndarray) -> None:
    bad = (starts < 0) | (counts < 0)
    bad |= ~bad & (counts > _I64_MAX - np.maximum(starts, 0))
    if bad.any():
        r = int(np.argmax(bad))
        raise BlobError(
            "L3.frag_range_values",
            f"range row {r} (start {int(starts[r])}, count {int(counts[r])}) is negative or "
            "overflows int64",
        )


def _offsets(offsets: np.ndarray) -> None:
    if offsets[0] != 0:
        raise BlobError("L3.frag_csr_start", f"CSR offsets[0] is {int(offsets[0])}, expected 0")
    if offsets.size > 1 and (np.diff(offsets) < 0).any():
        e = int(np.argmax(np.diff(offsets) < 0)) + 1
        raise BlobError("L3.frag_csr_monotone", f"CSR offsets decrease at entry {e}")


def _trailing(payload: np.ndarray, end: int) -> None:
    tail = payload[end:]
    if tail.any():
        pos = end + int(np.argmax(tail != 0))
        raise BlobError(
            "L3.frag_trailing_bytes", f"non-zero byte at {pos}, after the {end}-byte blob"
        )
