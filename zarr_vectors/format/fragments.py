"""Fragment-index blob v1 ("ZVFG"): the per-chunk table of fragments (spec §6).

A fragment is a named subset of the rows of one chunk: either a contiguous *range*
``[start, start + count)`` or an *explicit* list of row indices (order significant,
duplicates allowed). The fragment index of a chunk is stored as one opaque byte blob.
All integers are little-endian and there is no alignment padding except where stated::

    offset  size               field
    0       uint32             magic 0x5A564647 (bytes 47 46 56 5A)
    4       uint16             version, 1
    6       uint16             flags, 0 (bit 0 set: the counts form of format 1.5, whose
                               layout after the header is that of
                               :mod:`zarr_vectors.format.fragment_counts`)
    8       uint32             F, number of fragments
    12      uint32             R, number of range fragments (popcount of the bitmap)
    --- when F == 0 the blob ends here (16 bytes) ---
    16      pad8(ceil(F/8))    range bitmap, LSB first: bit f set <=> fragment f is a range;
                               bits/bytes beyond F are zero
    ...     16 * R             range table: int64 start, int64 count; row r belongs to the
                               r-th set bit of the bitmap (not to fragment r)
    ...     4 * (E + 1)        uint32 CSR offsets of the E = F - R explicit fragments,
                               offsets[0] = 0, non-decreasing, T = offsets[E]
    ...     8 * T              int64 CSR indices (absolute chunk-local rows, >= 0); only
                               4-byte aligned when E + 1 is odd

Blobs live zero-padded in a ``uint8`` array, so zero bytes may follow a blob; any other
trailing byte is an error.

This module is pure numpy + :mod:`struct`. The two hot paths are
:meth:`FragmentIndex.from_ranges` + :meth:`FragmentIndex.encode` (the writer, one blob per
chunk, see also the batch encoders of :mod:`zarr_vectors.format.fragment_encoding`) and
:func:`decode_dense_ranges` (the reader, once per chunk per query).
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import FragmentIndexError, InvalidInputError

__all__ = [
    "FRAGMENT_INDEX_MAGIC",
    "FRAGMENT_INDEX_VERSION",
    "FRAGMENT_INDEX_HEADER_NBYTES",
    "FragmentIndex",
    "encode_fragment_index",
    "fragment_index_nbytes",
]

BytesLike: TypeAlias = bytes | bytearray | memoryview | npt.NDArray[np.uint8]
"""Anything the decoders accept: a bytes-like object or a ``uint8`` numpy array."""

IntArray: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]

FRAGMENT_INDEX_MAGIC: Final[int] = 0x5A564647
"""Magic number of a ZVFG blob (uint32 LE; on-disk bytes ``47 46 56 5A``), spec §6."""
FRAGMENT_INDEX_VERSION: Final[int] = 1
"""The only blob version defined (spec §6)."""
FRAGMENT_INDEX_HEADER_NBYTES: Final[int] = 16
"""Size of the header; also the complete size of a blob with no fragment."""

# The names below (and the helpers after them without a leading underscore) are the shared
# building blocks of the ZVFG codec: fragment_encoding, fragment_decoding and manifest use
# them. They are public to the format package, not part of the library's API (``__all__``).
HEADER: Final = struct.Struct("<IHHII")
"""The ZVFG header: magic, version, flags, number of fragments, number of ranges (spec §6)."""
U32_MAX: Final[int] = 0xFFFFFFFF
I64_MAX: Final[int] = int(np.iinfo(np.int64).max)
CSR_ZERO: Final[bytes] = b"\x00\x00\x00\x00"


# --------------------------------------------------------------------------- helpers


def byte_view(buf: BytesLike) -> memoryview:
    """Return a flat, contiguous, unsigned-byte memoryview of ``buf`` (no copy if possible)."""
    if isinstance(buf, np.ndarray):
        if buf.dtype != np.uint8:
            raise InvalidInputError(f"expected a uint8 array of blob bytes, got dtype {buf.dtype}")
        return np.ascontiguousarray(buf).reshape(-1).data
    mv = memoryview(buf)
    if mv.format == "B" and mv.ndim == 1 and mv.c_contiguous:
        return mv
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    return mv.cast("B")


def bitmap_nbytes(n_fragments: int) -> int:
    """Bitmap section length: ``ceil(F/8)`` rounded up to a multiple of 8 (0 when F == 0)."""
    return (((n_fragments + 7) // 8 + 7) // 8) * 8


def _readonly(arr: npt.NDArray[np.generic]) -> None:
    arr.flags.writeable = False


_EMPTY_I64: Final[IntArray] = np.zeros(0, dtype=np.int64)
_readonly(_EMPTY_I64)
_ZERO_OFFSETS: Final[IntArray] = np.zeros(1, dtype=np.int64)
_readonly(_ZERO_OFFSETS)
_EMPTY_BOOL: Final[BoolArray] = np.zeros(0, dtype=np.bool_)
_readonly(_EMPTY_BOOL)


def all_range_prefix(n_fragments: int) -> bytes:
    """Header + bitmap of a blob whose ``n_fragments`` fragments are all ranges."""
    if n_fragments <= 4096:  # the usual bins-per-chunk sizes are cached
        return _cached_all_range_prefix(n_fragments)
    return _build_all_range_prefix(n_fragments)


@lru_cache(maxsize=64)
def _cached_all_range_prefix(n_fragments: int) -> bytes:
    return _build_all_range_prefix(n_fragments)


def _build_all_range_prefix(n_fragments: int) -> bytes:
    header = HEADER.pack(FRAGMENT_INDEX_MAGIC, FRAGMENT_INDEX_VERSION, 0, n_fragments, n_fragments)
    bitmap = bytearray(bitmap_nbytes(n_fragments))
    full, rest = divmod(n_fragments, 8)
    bitmap[:full] = b"\xff" * full
    if rest:
        bitmap[full] = (1 << rest) - 1
    return header + bytes(bitmap)


def as_int64_vector(name: str, values: npt.ArrayLike) -> IntArray:
    """Copy ``values`` into a fresh 1-D int64 array, rejecting non-integer input."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8 and int(arr.max()) > I64_MAX:
        raise InvalidInputError(f"{name} holds a value above the int64 maximum")
    return arr.astype(np.int64, copy=True)


def first_true(mask: npt.NDArray[np.bool_]) -> int:
    """Position of the first True of a mask known to contain one."""
    return int(np.argmax(mask))


def check_ranges(starts: IntArray, counts: IntArray, what: str) -> None:
    """Raise InvalidInputError for negative starts/counts or ``start + count`` overflow."""
    if starts.size == 0:
        return
    # fast accept: with both non-negative, an overflowing sum wraps to a negative value
    if int((starts | counts | (starts + counts)).min()) >= 0:
        return
    if (neg := starts < 0).any():
        i = first_true(neg)
        raise InvalidInputError(f"{what} {i}: start {int(starts[i])} is negative")
    if (neg := counts < 0).any():
        i = first_true(neg)
        raise InvalidInputError(f"{what} {i}: count {int(counts[i])} is negative")
    if (ovf := counts > I64_MAX - starts).any():
        i = first_true(ovf)
        raise InvalidInputError(
            f"{what} {i}: start {int(starts[i])} + count {int(counts[i])} overflows int64"
        )


def new_fragment_index(
    is_range: BoolArray,
    range_starts: IntArray,
    range_counts: IntArray,
    csr_offsets: IntArray,
    csr_indices: IntArray,
) -> FragmentIndex:
    """Build a FragmentIndex from arrays already validated and owned (no checks, no copies)."""
    obj = object.__new__(FragmentIndex)
    for name, arr in (
        ("is_range", is_range),
        ("range_starts", range_starts),
        ("range_counts", range_counts),
        ("csr_offsets", csr_offsets),
        ("csr_indices", csr_indices),
    ):
        if arr.flags.writeable:
            _readonly(arr)
        object.__setattr__(obj, name, arr)
    object.__setattr__(obj, "_slot_of", None)
    return obj


# --------------------------------------------------------------------------- model


@dataclass(frozen=True, slots=True, eq=False)
class FragmentIndex:
    """Decoded fragment index of one chunk (spec §6).

    Parameters
    ----------
    is_range : numpy.ndarray of bool, shape (F,)
        ``is_range[f]`` is True when fragment ``f`` is a contiguous range.
    range_starts, range_counts : numpy.ndarray of int64, shape (R,)
        Start row and row count of each range fragment, in fragment order
        (row ``r`` belongs to the ``r``-th fragment whose ``is_range`` is True).
    csr_offsets : numpy.ndarray of int64, shape (E + 1,)
        CSR offsets of the ``E = F - R`` explicit fragments (``csr_offsets[0] == 0``,
        non-decreasing, last entry ``== T``).
    csr_indices : numpy.ndarray of int64, shape (T,)
        Concatenated chunk-local row indices of the explicit fragments.

    Notes
    -----
    The constructor copies its inputs into read-only int64/bool arrays and validates
    them, raising :class:`~zarr_vectors.errors.InvalidInputError` on inconsistency.
    Instances compare equal when all five arrays are equal; they are not hashable.
    Prefer the constructors :meth:`from_ranges`, :meth:`from_fragments` and
    :meth:`empty`, or :func:`decode_fragment_index`.
    """

    is_range: BoolArray
    range_starts: IntArray
    range_counts: IntArray
    csr_offsets: IntArray
    csr_indices: IntArray
    _slot_of: IntArray | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        is_range = np.asarray(self.is_range)
        if is_range.ndim != 1 or (is_range.size and is_range.dtype != np.bool_):
            raise InvalidInputError(
                f"is_range must be a 1-D bool array, got shape {is_range.shape} "
                f"dtype {is_range.dtype}"
            )
        is_range = is_range.astype(np.bool_, copy=True)
        starts = as_int64_vector("range_starts", self.range_starts)
        counts = as_int64_vector("range_counts", self.range_counts)
        offsets = as_int64_vector("csr_offsets", self.csr_offsets)
        indices = as_int64_vector("csr_indices", self.csr_indices)
        n_frag = is_range.size
        n_range = int(np.count_nonzero(is_range))
        if n_frag > U32_MAX:
            raise InvalidInputError(f"{n_frag} fragments exceed the uint32 limit of spec §6")
        if starts.size != n_range or counts.size != n_range:
            raise InvalidInputError(
                f"is_range marks {n_range} ranges but range_starts has {starts.size} and "
                f"range_counts {counts.size} entries"
            )
        n_expl = n_frag - n_range
        if offsets.size != n_expl + 1:
            raise InvalidInputError(
                f"csr_offsets must have E + 1 = {n_expl + 1} entries, got {offsets.size}"
            )
        if offsets[0] != 0:
            raise InvalidInputError(f"csr_offsets[0] must be 0, got {int(offsets[0])}")
        if (dec := np.diff(offsets) < 0).any():
            i = first_true(dec) + 1
            raise InvalidInputError(f"csr_offsets decreases at entry {i}")
        if int(offsets[-1]) != indices.size:
            raise InvalidInputError(
                f"csr_offsets[-1] = {int(offsets[-1])} but csr_indices has {indices.size} entries"
            )
        if indices.size > U32_MAX:
            raise InvalidInputError(
                f"{indices.size} explicit row indices exceed the uint32 limit of spec §6"
            )
        check_ranges(starts, counts, "range")
        if indices.size and (neg := indices < 0).any():
            i = first_true(neg)
            raise InvalidInputError(f"csr_indices[{i}] = {int(indices[i])} is negative")
        for name, arr in (
            ("is_range", is_range),
            ("range_starts", starts),
            ("range_counts", counts),
            ("csr_offsets", offsets),
            ("csr_indices", indices),
        ):
            _readonly(arr)
            object.__setattr__(self, name, arr)

    # ----------------------------------------------------------------- constructors

    @classmethod
    def empty(cls) -> FragmentIndex:
        """Return the index of a chunk without fragments (encodes to 16 bytes).

        Returns
        -------
        FragmentIndex
            ``F == 0``.
        """
        return new_fragment_index(_EMPTY_BOOL, _EMPTY_I64, _EMPTY_I64, _ZERO_OFFSETS, _EMPTY_I64)

    @classmethod
    def from_ranges(cls, starts: npt.ArrayLike, counts: npt.ArrayLike) -> FragmentIndex:
        """Build an all-range index: fragment ``f`` = rows ``[starts[f], starts[f]+counts[f])``.

        This is the dense per-bin form written for point clouds (spec §6): one range
        per bin, ``count`` may be 0.

        Parameters
        ----------
        starts, counts : array_like of int, shape (F,)
            Non-negative start rows and row counts.

        Returns
        -------
        FragmentIndex

        Raises
        ------
        InvalidInputError
            Shapes differ, non-integer input, negative values, ``start + count`` overflows
            int64, or ``F`` exceeds the uint32 limit.
        """
        s = as_int64_vector("starts", starts)
        c = as_int64_vector("counts", counts)
        if s.size != c.size:
            raise InvalidInputError(f"starts has {s.size} entries but counts has {c.size}")
        if s.size > U32_MAX:
            raise InvalidInputError(f"{s.size} fragments exceed the uint32 limit of spec §6")
        check_ranges(s, c, "range")
        return new_fragment_index(np.ones(s.size, dtype=np.bool_), s, c, _ZERO_OFFSETS, _EMPTY_I64)

    @classmethod
    def from_fragments(cls, frags: Sequence[tuple[int, int] | npt.ArrayLike]) -> FragmentIndex:
        """Build an index from a mixed sequence of fragments, in fragment order.

        Parameters
        ----------
        frags : sequence
            Each item is either a ``(start, count)`` tuple -- always a range -- or a 1-D
            integer array-like of row indices. An array equal to ``arange(a, a + n)`` with
            ``a >= 0`` and ``n >= 1`` is stored as the range ``(a, n)`` (so ``[5]`` becomes
            ``(5, 1)``); any other array, including an empty one, stays explicit.

        Returns
        -------
        FragmentIndex

        Raises
        ------
        InvalidInputError
            A tuple that is not two integers, a non-1-D or non-integer array, negative rows,
            or overflowing ranges.
        """
        is_range: list[bool] = []
        starts: list[int] = []
        counts: list[int] = []
        lengths: list[int] = []
        explicit: list[IntArray] = []
        for pos, item in enumerate(frags):
            if isinstance(item, tuple):
                if len(item) != 2:
                    raise InvalidInputError(
                        f"fragment {pos}: a tuple must be (start, count), got {len(item)} items"
                    )
                try:
                    start, count = operator.index(item[0]), operator.index(item[1])
                except TypeError as exc:
                    raise InvalidInputError(
                        f"fragment {pos}: (start, count) must be integers, got {item!r}"
                    ) from exc
                if start < 0 or count < 0 or start > I64_MAX - count:
                    raise InvalidInputError(
                        f"fragment {pos}: range (start={start}, count={count}) must have "
                        "non-negative start and count and end within int64"
                    )
                is_range.append(True)
                starts.append(start)
                counts.append(count)
                continue
            rows = as_int64_vector(f"fragment {pos}", item)
            n = rows.size
            if n and int(rows.min()) < 0:
                raise InvalidInputError(f"fragment {pos}: row indices must be >= 0")
            if n == 1 or (n > 1 and bool((np.diff(rows) == 1).all())):
                is_range.append(True)
                starts.append(int(rows[0]))
                counts.append(n)
            else:
                is_range.append(False)
                lengths.append(n)
                explicit.append(rows)
        if len(is_range) > U32_MAX:
            raise InvalidInputError(f"{len(is_range)} fragments exceed the uint32 limit")
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(np.array(lengths, dtype=np.int64))
        if int(offsets[-1]) > U32_MAX:
            raise InvalidInputError("explicit fragments hold more than 2**32 - 1 rows in total")
        indices = np.concatenate(explicit) if explicit else np.zeros(0, dtype=np.int64)
        return new_fragment_index(
            np.array(is_range, dtype=np.bool_),
            np.array(starts, dtype=np.int64),
            np.array(counts, dtype=np.int64),
            offsets,
            indices,
        )

    # ----------------------------------------------------------------- accessors

    @property
    def n_fragments(self) -> int:
        """Number of fragments ``F``."""
        return int(self.is_range.size)

    @property
    def n_ranges(self) -> int:
        """Number of range fragments ``R``."""
        return int(self.range_starts.size)

    @property
    def n_explicit(self) -> int:
        """Number of explicit fragments ``E = F - R``."""
        return self.n_fragments - self.n_ranges

    @property
    def all_ranges(self) -> bool:
        """True when every fragment is a range (the dense per-bin form qualifies)."""
        return self.n_ranges == self.n_fragments

    def _slots(self) -> IntArray:
        """Per fragment: its row in the range table (ranges) or its CSR row (explicit)."""
        slot = self._slot_of
        if slot is None:
            ranges_through = np.cumsum(self.is_range, dtype=np.int64)
            slot = np.where(
                self.is_range,
                ranges_through - 1,
                np.arange(self.n_fragments, dtype=np.int64) - ranges_through,
            )
            _readonly(slot)
            object.__setattr__(self, "_slot_of", slot)
        return slot

    def _check_fragment_ids(self, ids: IntArray) -> None:
        if ids.size and ((bad := (ids < 0) | (ids >= self.n_fragments)).any()):
            f = int(ids[first_true(bad)])
            raise FragmentIndexError(
                f"fragment id {f} out of range: this chunk has F={self.n_fragments} fragments"
            )

    def fragment_rows(self, f: int) -> IntArray:
        """Return the chunk-local rows of fragment ``f``, in stored order.

        Parameters
        ----------
        f : int
            Fragment id, ``0 <= f < F``.

        Returns
        -------
        numpy.ndarray of int64
            ``arange(start, start + count)`` for a range, the stored list (order and
            duplicates kept) for an explicit fragment.

        Raises
        ------
        FragmentIndexError
            ``f`` is not a fragment of this index.
        """
        fid = operator.index(f)
        if not 0 <= fid < self.n_fragments:
            raise FragmentIndexError(
                f"fragment id {fid} out of range: this chunk has F={self.n_fragments} fragments"
            )
        slot = int(self._slots()[fid])
        if self.is_range[fid]:
            start = int(self.range_starts[slot])
            return np.arange(start, start + int(self.range_counts[slot]), dtype=np.int64)
        lo, hi = int(self.csr_offsets[slot]), int(self.csr_offsets[slot + 1])
        return self.csr_indices[lo:hi].copy()

    def rows_of(self, fragments: npt.ArrayLike) -> IntArray:
        """Concatenate the rows of several fragments, in the given order (vectorised).

        Parameters
        ----------
        fragments : array_like of int, shape (k,)
            Fragment ids; repeats allowed.

        Returns
        -------
        numpy.ndarray of int64
            ``concatenate([fragment_rows(f) for f in fragments])``.

        Raises
        ------
        FragmentIndexError
            An id is not a fragment of this index.
        InvalidInputError
            ``fragments`` is not a 1-D integer array.
        """
        ids = as_int64_vector("fragments", np.ravel(np.asarray(fragments)))
        self._check_fragment_ids(ids)
        if ids.size == 0:
            return np.zeros(0, dtype=np.int64)
        slot = self._slots()[ids]
        ranged = self.is_range[ids]
        expl = ~ranged
        base = np.empty(ids.size, dtype=np.int64)
        length = np.empty(ids.size, dtype=np.int64)
        rs = slot[ranged]
        base[ranged] = self.range_starts[rs]
        length[ranged] = self.range_counts[rs]
        es = slot[expl]
        base[expl] = self.csr_offsets[es]
        length[expl] = self.csr_offsets[es + 1] - self.csr_offsets[es]
        ends = np.cumsum(length)
        total = int(ends[-1])
        # position k of the output takes base[j] + (k - first output position of j)
        out = np.repeat(base - (ends - length), length) + np.arange(total, dtype=np.int64)
        if expl.any():
            take = np.repeat(expl, length)
            out[take] = self.csr_indices[out[take]]
        return out

    def row_extent(self) -> int:
        """Number of rows the index covers: the chunk's valid row count (spec §6).

        Returns
        -------
        int
            ``max(start + count over ranges, max(explicit rows) + 1)``; 0 when there is
            no row reference at all.
        """
        extent = 0
        if self.range_starts.size:
            extent = int((self.range_starts + self.range_counts).max())
        if self.csr_indices.size:
            extent = max(extent, int(self.csr_indices.max()) + 1)
        return extent

    def dense_ranges(self) -> tuple[IntArray, IntArray]:
        """Return per-fragment ``(starts, counts)`` of an all-range index.

        Returns
        -------
        starts, counts : numpy.ndarray of int64, shape (F,)
            Read-only arrays; entry ``f`` describes fragment ``f``.

        Raises
        ------
        FragmentIndexError
            Some fragment is explicit.
        """
        if not self.all_ranges:
            first = first_true(~self.is_range)
            raise FragmentIndexError(
                f"fragment {first} is explicit ({self.n_explicit} of {self.n_fragments} "
                "fragments are); per-fragment (starts, counts) exist only when every "
                "fragment is a range (spec §6)"
            )
        return self.range_starts, self.range_counts

    # ----------------------------------------------------------------- encoding

    def nbytes(self) -> int:
        """Size in bytes of :meth:`encode`'s output."""
        return fragment_index_nbytes(self.n_fragments, self.n_ranges, int(self.csr_indices.size))

    def encode(self) -> bytes:
        """Serialise to a ZVFG v1 blob (spec §6).

        Returns
        -------
        bytes
            Exactly :func:`fragment_index_nbytes` bytes, padding zeroed.
        """
        n_frag = self.n_fragments
        if n_frag == 0:
            return HEADER.pack(FRAGMENT_INDEX_MAGIC, FRAGMENT_INDEX_VERSION, 0, 0, 0)
        if self.all_ranges:
            return encode_all_ranges(self.range_starts, self.range_counts)
        n_range = self.n_ranges
        header = HEADER.pack(FRAGMENT_INDEX_MAGIC, FRAGMENT_INDEX_VERSION, 0, n_frag, n_range)
        bitmap = np.zeros(bitmap_nbytes(n_frag), dtype=np.uint8)
        packed = np.packbits(self.is_range, bitorder="little")
        bitmap[: packed.size] = packed
        table = np.empty((n_range, 2), dtype="<i8")
        table[:, 0] = self.range_starts
        table[:, 1] = self.range_counts
        return b"".join(
            (
                header,
                bitmap.tobytes(),
                table.tobytes(),
                self.csr_offsets.astype("<u4").tobytes(),
                self.csr_indices.astype("<i8").tobytes(),
            )
        )

    # ----------------------------------------------------------------- dunder

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FragmentIndex):
            return NotImplemented
        return (
            np.array_equal(self.is_range, other.is_range)
            and np.array_equal(self.range_starts, other.range_starts)
            and np.array_equal(self.range_counts, other.range_counts)
            and np.array_equal(self.csr_offsets, other.csr_offsets)
            and np.array_equal(self.csr_indices, other.csr_indices)
        )

    def __repr__(self) -> str:
        return (
            f"FragmentIndex(n_fragments={self.n_fragments}, n_ranges={self.n_ranges}, "
            f"n_explicit_rows={self.csr_indices.size})"
        )


# --------------------------------------------------------------------------- encoding


def fragment_index_nbytes(n_fragments: int, n_ranges: int, n_explicit_rows: int) -> int:
    """Size of a ZVFG v1 blob (spec §6).

    Parameters
    ----------
    n_fragments : int
        ``F``.
    n_ranges : int
        ``R``, ``0 <= R <= F``.
    n_explicit_rows : int
        ``T``, total length of the explicit fragments.

    Returns
    -------
    int
        16 when ``F == 0``, else ``16 + pad8(ceil(F/8)) + 16 R + 4 (F - R + 1) + 8 T``.

    Raises
    ------
    InvalidInputError
        Negative counts, ``R > F``, or ``R``/``T`` non-zero while ``F == 0``.
    """
    f, r, t = operator.index(n_fragments), operator.index(n_ranges), operator.index(n_explicit_rows)
    if f < 0 or r < 0 or t < 0 or r > f:
        raise InvalidInputError(f"invalid fragment counts F={f}, R={r}, T={t}")
    if f == 0:
        if t:
            raise InvalidInputError(f"F=0 but T={t} explicit rows")
        return FRAGMENT_INDEX_HEADER_NBYTES
    return FRAGMENT_INDEX_HEADER_NBYTES + bitmap_nbytes(f) + 16 * r + 4 * (f - r + 1) + 8 * t


def encode_all_ranges(starts: IntArray, counts: IntArray) -> bytes:
    """Blob of validated per-fragment ranges (every fragment a range)."""
    n_frag = starts.size
    if n_frag == 0:
        return all_range_prefix(0)
    table = np.empty(2 * n_frag, dtype="<i8")
    table[0::2] = starts
    table[1::2] = counts
    return b"".join((all_range_prefix(n_frag), table.tobytes(), CSR_ZERO))


def encode_fragment_index(index: FragmentIndex) -> bytes:
    """Serialise ``index`` to a ZVFG v1 blob (spec §6); same as ``index.encode()``.

    Parameters
    ----------
    index : FragmentIndex

    Returns
    -------
    bytes
    """
    return index.encode()
