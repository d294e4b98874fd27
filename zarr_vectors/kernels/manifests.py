"""Bulk object-manifest codec: many objects' manifests in one numba pass (spec §7).

Byte-for-byte the same format as the pure-Python codec in
:mod:`zarr_vectors.format.manifest` (that module is the reference; this one is the hot
path). A manifest blob, little-endian, no padding, ``D`` chunk coordinates::

    uint32 B                                   number of blocks
    B times:
        int64 chunk[D], uint8 mode
        mode 0 (single):    int64 fragment                      8D + 9 bytes
        mode 1 (range):     int64 start, int64 count            8D + 17 bytes
        mode 2 (explicit):  uint32 n, int64 fragments[n]        8D + 5 + 8n bytes

The ``object_index`` container (spec §7.4) concatenates the blobs of objects
``0 .. n-1`` into ``data`` (uint8) with ``offsets`` (int64, length ``n``, no end
sentinel). Both directions work on flat "reference" rows, one per fragment reference
``(object, chunk, fragment)`` in manifest order, so no Python loop runs per object.

Private ``_name`` functions are numba kernels; they report problems as a status code
plus a position and the public wrappers turn that into
:class:`~zarr_vectors.errors.InvalidInputError` (bad arguments) or
:class:`~zarr_vectors.errors.ManifestError` (bad bytes). Arrays in, arrays out, no I/O.
This module does not import :mod:`zarr_vectors.format` (that package wraps it).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError, ManifestError
from zarr_vectors.kernels._checks import checked_integer, int_array
from zarr_vectors.kernels._jit import njit

__all__ = [
    "MAX_FRAGMENT_ID",
    "DEFAULT_MAX_REFS",
    "encode_manifests",
    "decode_manifests",
]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

MAX_FRAGMENT_ID: Final[int] = 0xFFFFFFFE
"""Largest fragment id a manifest may name (fragment counts ``F`` are uint32, spec §6);
equal to :data:`zarr_vectors.format.manifest.MAX_FRAGMENT_ID`."""

DEFAULT_MAX_REFS: Final[int] = 2**27
"""Default cap on the number of fragment references one :func:`decode_manifests` call
may return (see there)."""

_U32_MAX: Final[int] = 0xFFFFFFFF
_MAX_NDIM: Final[int] = 2**20  # keeps every byte-size computation far from int64 overflow

# Kernel status codes. The encoder reports the offending run; the decoder reports the
# position in ``ids``, the absolute byte offset in ``data``, the block number and a value.
_OK: Final = 0
# encoder
_E_OBJECT_RANGE: Final = 1
_E_OBJECT_ORDER: Final = 2
_E_FRAGMENT_RANGE: Final = 3
_E_BLOCK_TOO_LONG: Final = 4
_E_TOO_MANY_BLOCKS: Final = 5
# decoder
_D_ID_RANGE: Final = 10
_D_SPAN: Final = 11
_D_TRUNC_COUNT: Final = 12
_D_TRUNC_HEAD: Final = 13
_D_BAD_MODE: Final = 14
_D_TRUNC_PAYLOAD: Final = 15
_D_NEG_FRAGMENT: Final = 16
_D_BIG_FRAGMENT: Final = 17
_D_NEG_COUNT: Final = 18
_D_RANGE_OVERFLOW: Final = 19
_D_TRAILING: Final = 20
_D_TOO_MANY_REFS: Final = 21


# --------------------------------------------------------------------------- byte helpers


@njit
def _put_u32(buf: U8, pos: int, value: int) -> None:
    for k in range(4):
        buf[pos + k] = np.uint8((value >> (8 * k)) & 0xFF)


@njit
def _put_i64(buf: U8, pos: int, value: int) -> None:
    # Arithmetic shift + mask yields the two's-complement bytes of negative values too.
    for k in range(8):
        buf[pos + k] = np.uint8((value >> (8 * k)) & 0xFF)


@njit
def _get_u32(buf: U8, pos: int) -> int:
    # np.int64 on every byte: numba's int() of a uint8 is unsigned, and mixing unsigned
    # with signed integers would promote to float64.
    return (
        np.int64(buf[pos])  # type: ignore[return-value]
        | (np.int64(buf[pos + 1]) << 8)
        | (np.int64(buf[pos + 2]) << 16)
        | (np.int64(buf[pos + 3]) << 24)
    )


@njit
def _get_i64(buf: U8, pos: int) -> int:
    # Two signed-safe halves: hi * 2**32 lies in [-2**63, 2**63 - 2**32], so no overflow.
    lo = _get_u32(buf, pos)
    hi = _get_u32(buf, pos + 4)
    if hi >= 0x80000000:
        hi -= 0x100000000
    return hi * 0x100000000 + lo


# --------------------------------------------------------------------------- encoder kernels


@njit
def _encode_plan(
    run_object: I64,
    run_chunk: I64,
    run_fragment: I64,
    n_objects: int,
    block_start: I64,
    block_mode: U8,
) -> tuple[I64, I64, I64, U8, int, int, int]:
    """Pass 1: split runs into blocks, choose modes, size every object's blob.

    Fills ``block_start`` (``nb + 1`` used entries of ``r + 1``) and ``block_mode`` (``r``);
    returns per-object byte sizes, block counts, both block arrays, the block count ``nb``
    and ``(status, row)``.
    """
    r, dim = run_chunk.shape
    sizes = np.full(n_objects, 4, np.int64)
    n_blocks = np.zeros(n_objects, np.int64)
    head = 8 * dim + 1
    nb = 0
    prev = np.int64(0)
    i = 0
    while i < r:
        o = run_object[i]
        if o < 0 or o >= n_objects:
            return sizes, n_blocks, block_start, block_mode, nb, _E_OBJECT_RANGE, i
        if o < prev:
            return sizes, n_blocks, block_start, block_mode, nb, _E_OBJECT_ORDER, i
        prev = o
        f = run_fragment[i]
        if f < 0 or f > MAX_FRAGMENT_ID:
            return sizes, n_blocks, block_start, block_mode, nb, _E_FRAGMENT_RANGE, i
        j = i + 1
        ascending = True
        while j < r and run_object[j] == o:
            same = True
            for d in range(dim):
                if run_chunk[j, d] != run_chunk[i, d]:
                    same = False
                    break
            if not same:
                break
            g = run_fragment[j]
            if g < 0 or g > MAX_FRAGMENT_ID:
                return sizes, n_blocks, block_start, block_mode, nb, _E_FRAGMENT_RANGE, j
            if g != run_fragment[j - 1] + 1:
                ascending = False
            j += 1
        n = j - i
        if n > _U32_MAX:
            return sizes, n_blocks, block_start, block_mode, nb, _E_BLOCK_TOO_LONG, i
        # Spec §7.2: one fragment -> mode 0; f, f+1, ... (n >= 2) -> mode 1; else mode 2.
        if n == 1:
            block_mode[nb] = 0
            sizes[o] += head + 8
        elif ascending:
            block_mode[nb] = 1
            sizes[o] += head + 16
        else:
            block_mode[nb] = 2
            sizes[o] += head + 4 + 8 * n
        n_blocks[o] += 1
        if n_blocks[o] > _U32_MAX:
            return sizes, n_blocks, block_start, block_mode, nb, _E_TOO_MANY_BLOCKS, i
        block_start[nb] = i
        nb += 1
        i = j
    block_start[nb] = r
    return sizes, n_blocks, block_start, block_mode, nb, _OK, -1


@njit
def _encode_fill(
    run_object: I64,
    run_chunk: I64,
    run_fragment: I64,
    offsets: I64,
    n_blocks: I64,
    block_start: I64,
    block_mode: U8,
    nb: int,
    data: U8,
) -> None:
    """Pass 2: write every byte of ``data`` exactly once (``offsets``: each blob's start)."""
    n_objects = offsets.shape[0]
    dim = run_chunk.shape[1]
    for k in range(n_objects):
        _put_u32(data, offsets[k], n_blocks[k])
    pos = 0
    current = -1
    for b in range(nb):
        i = block_start[b]
        n = block_start[b + 1] - i
        o = run_object[i]
        if o != current:
            current = o
            pos = offsets[o] + 4
        for d in range(dim):
            _put_i64(data, pos, run_chunk[i, d])
            pos += 8
        mode = block_mode[b]
        data[pos] = mode
        pos += 1
        if mode == 0:
            _put_i64(data, pos, run_fragment[i])
            pos += 8
        elif mode == 1:
            _put_i64(data, pos, run_fragment[i])
            _put_i64(data, pos + 8, n)
            pos += 16
        else:
            _put_u32(data, pos, n)
            pos += 4
            for j in range(i, i + n):
                _put_i64(data, pos, run_fragment[j])
                pos += 8


# --------------------------------------------------------------------------- decoder kernels


@njit
def _span(offsets: I64, nbytes: int, k: int) -> tuple[int, int]:
    start = offsets[k]
    end = offsets[k + 1] if k + 1 < offsets.shape[0] else nbytes
    return start, end


@njit
def _decode_count(
    data: U8, offsets: I64, ids: I64, dim: int, max_refs: int
) -> tuple[I64, int, int, int, int, int]:
    """Pass 1: validate every requested blob strictly and count its references.

    Returns ``(counts, status, j, pos, block, value)``: ``counts[j]`` references for
    ``ids[j]``; on failure ``j`` is the position in ``ids``, ``pos`` the absolute byte
    offset of the offending field, ``block`` its block number and ``value`` the bad
    value (mode, count, fragment id, ...).
    """
    nbytes = data.shape[0]
    n_objects = offsets.shape[0]
    m = ids.shape[0]
    counts = np.zeros(m, np.int64)
    head = 8 * dim + 1
    total = 0
    for j in range(m):
        k = ids[j]
        if k < 0 or k >= n_objects:
            return counts, _D_ID_RANGE, j, -1, -1, k
        start, end = _span(offsets, nbytes, k)
        if start < 0 or start > end or end > nbytes:
            return counts, _D_SPAN, j, start, -1, end
        if end - start < 4:
            return counts, _D_TRUNC_COUNT, j, start, -1, end - start
        n_blocks = _get_u32(data, start)
        pos = start + 4
        refs = 0
        for b in range(n_blocks):
            if end - pos < head:
                return counts, _D_TRUNC_HEAD, j, pos, b, n_blocks
            pos += head
            payload = pos
            mode = int(np.int64(data[pos - 1]))
            if mode == 0:
                if end - pos < 8:
                    return counts, _D_TRUNC_PAYLOAD, j, pos, b, 8
                f = _get_i64(data, pos)
                if f < 0:
                    return counts, _D_NEG_FRAGMENT, j, pos, b, f
                if f > MAX_FRAGMENT_ID:
                    return counts, _D_BIG_FRAGMENT, j, pos, b, f
                refs += 1
                pos += 8
            elif mode == 1:
                if end - pos < 16:
                    return counts, _D_TRUNC_PAYLOAD, j, pos, b, 16
                f = _get_i64(data, pos)
                c = _get_i64(data, pos + 8)
                if f < 0:
                    return counts, _D_NEG_FRAGMENT, j, pos, b, f
                if f > MAX_FRAGMENT_ID:
                    return counts, _D_BIG_FRAGMENT, j, pos, b, f
                if c < 0:
                    return counts, _D_NEG_COUNT, j, pos + 8, b, c
                # start + count - 1 <= MAX without computing start + count (int64 overflow).
                if c > MAX_FRAGMENT_ID + 1 - f:
                    return counts, _D_RANGE_OVERFLOW, j, pos + 8, b, c
                refs += c
                pos += 16
            elif mode == 2:
                if end - pos < 4:
                    return counts, _D_TRUNC_PAYLOAD, j, pos, b, 4
                n = _get_u32(data, pos)
                pos += 4
                if end - pos < 8 * n:  # n < 2**32: 8 n cannot overflow
                    return counts, _D_TRUNC_PAYLOAD, j, pos, b, 8 * n
                for _q in range(n):
                    f = _get_i64(data, pos)
                    if f < 0:
                        return counts, _D_NEG_FRAGMENT, j, pos, b, f
                    if f > MAX_FRAGMENT_ID:
                        return counts, _D_BIG_FRAGMENT, j, pos, b, f
                    pos += 8
                refs += n
            else:
                return counts, _D_BAD_MODE, j, pos - 1, b, mode
            # Fail fast, before anything is allocated. Each block adds at most 2**32 - 1
            # references, so ``total`` stays far below the int64 limit.
            if total + refs > max_refs:
                at = payload + 8 if mode == 1 else payload  # the count (or fragment) field
                return counts, _D_TOO_MANY_REFS, j, at, b, total + refs
        if pos != end:
            return counts, _D_TRAILING, j, pos, -1, end - pos
        counts[j] = refs
        total += refs
    return counts, _OK, -1, -1, -1, total


@njit
def _copy_chunk(ref_chunk: I64, t: int, chunk: I64) -> None:
    """``ref_chunk[t, :] = chunk`` as a loop: the slice assignment's shape check compiled
    numba's string formatting for its error message (2-3 s of a first decode). Callers
    pass ``int(t)``: a literal 0 would compile it twice."""
    for d in range(chunk.shape[0]):
        ref_chunk[t, d] = chunk[d]


@njit
def _decode_fill(
    data: U8, offsets: I64, ids: I64, dim: int, counts: I64, total: int
) -> tuple[I64, I64, I64]:
    """Pass 2: expand the blobs validated by :func:`_decode_count` (no checks)."""
    nbytes = data.shape[0]
    ref_object = np.empty(total, np.int64)
    ref_chunk = np.empty((total, dim), np.int64)
    ref_fragment = np.empty(total, np.int64)
    chunk = np.empty(dim, np.int64)
    t = 0
    for j in range(ids.shape[0]):
        ref_object[t : t + counts[j]] = j
        start, _ = _span(offsets, nbytes, ids[j])
        n_blocks = _get_u32(data, start)
        pos = start + 4
        for _b in range(n_blocks):
            for d in range(dim):
                chunk[d] = _get_i64(data, pos)
                pos += 8
            mode = data[pos]
            pos += 1
            if mode == 0:
                ref_fragment[t] = _get_i64(data, pos)
                _copy_chunk(ref_chunk, int(t), chunk)
                t += 1
                pos += 8
            elif mode == 1:
                f = _get_i64(data, pos)
                c = _get_i64(data, pos + 8)
                for q in range(c):
                    ref_fragment[t] = f + q
                    _copy_chunk(ref_chunk, int(t), chunk)
                    t += 1
                pos += 16
            else:
                n = _get_u32(data, pos)
                pos += 4
                for _q in range(n):
                    ref_fragment[t] = _get_i64(data, pos)
                    _copy_chunk(ref_chunk, int(t), chunk)
                    t += 1
                    pos += 8
    return ref_object, ref_chunk, ref_fragment


# --------------------------------------------------------------------------- validation


def _data_array(data: npt.ArrayLike | bytes | bytearray | memoryview) -> U8:
    if isinstance(data, bytes | bytearray | memoryview):
        mv = memoryview(data)
        if not mv.c_contiguous:
            mv = memoryview(mv.tobytes())
        return np.frombuffer(mv.cast("B"), dtype=np.uint8)
    arr = np.asarray(data)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise InvalidInputError(
            f"object_index data must be a 1-d uint8 array, got dtype {arr.dtype} shape {arr.shape}"
        )
    return np.ascontiguousarray(arr)


# --------------------------------------------------------------------------- public API


def encode_manifests(
    run_object: npt.ArrayLike,
    run_chunk: npt.ArrayLike,
    run_fragment: npt.ArrayLike,
    n_objects: int,
) -> tuple[U8, I64]:
    """Encode the manifests of objects ``0 .. n_objects-1`` into one container (spec §7).

    Each input row is one fragment reference ("run"); rows are sorted by object and, per
    object, in traversal order. Every maximal sequence of consecutive rows of one object
    with the same chunk becomes one block (spec §7.2), encoded as mode 0 for a single
    fragment, mode 1 for an ascending run ``f, f+1, ...`` of two or more, mode 2 (order
    kept) otherwise. Objects without rows get the empty 4-byte manifest.

    Parameters
    ----------
    run_object : array_like of int, shape (r,)
        Object id of each row, non-decreasing, in ``[0, n_objects)``.
    run_chunk : array_like of int, shape (r, D)
        Chunk grid index of each row, ``D >= 1``.
    run_fragment : array_like of int, shape (r,)
        Fragment id of each row, in ``[0, MAX_FRAGMENT_ID]``.
    n_objects : int
        Number of objects, ``>= 0``.

    Returns
    -------
    data : numpy.ndarray of uint8, shape (total_bytes,)
        The blobs of objects ``0 .. n_objects-1`` concatenated (``object_index/data``).
    offsets : numpy.ndarray of int64, shape (n_objects,)
        Byte offset of each object's blob (``object_index/offsets``, spec §7.4).

    Raises
    ------
    InvalidInputError
        On wrong shapes or dtypes, an object id out of range or decreasing, a fragment
        id out of range, a block of more than ``2**32 - 1`` fragments or an object of
        more than ``2**32 - 1`` blocks.

    Notes
    -----
    Byte for byte equal to
    ``encode_object_index([encode_manifest(blocks_k, D) for k in range(n_objects)])``
    of :mod:`zarr_vectors.format.manifest`. Two numba passes (plan, then fill).
    """
    objects = int_array(run_object, 1, "run_object")
    chunks = int_array(run_chunk, 2, "run_chunk")
    fragments = int_array(run_fragment, 1, "run_fragment")
    n = checked_integer(n_objects, "n_objects", 0)
    r = objects.shape[0]
    if chunks.shape[0] != r or fragments.shape[0] != r:
        raise InvalidInputError(
            f"run_object ({r},), run_chunk {chunks.shape} and run_fragment "
            f"{fragments.shape} must have the same number of rows"
        )
    if not 1 <= chunks.shape[1] <= _MAX_NDIM:
        raise InvalidInputError(
            f"run_chunk must have D in [1, {_MAX_NDIM}] columns, got {chunks.shape[1]}"
        )
    # the large arrays come from numpy: its allocations of fresh memory fault in faster
    block_start = np.empty(r + 1, np.int64)
    block_mode = np.empty(r, np.uint8)
    sizes, n_blocks, block_start, block_mode, nb, status, row = _encode_plan(
        objects, chunks, fragments, n, block_start, block_mode
    )
    if status != _OK:
        if status == _E_OBJECT_RANGE:
            msg = f"run_object[{row}] = {objects[row]} is outside [0, {n})"
        elif status == _E_OBJECT_ORDER:
            msg = (
                f"run_object must be non-decreasing: run_object[{row}] = {objects[row]} "
                f"follows {objects[row - 1]}"
            )
        elif status == _E_FRAGMENT_RANGE:
            msg = f"run_fragment[{row}] = {fragments[row]} is outside [0, {MAX_FRAGMENT_ID}]"
        elif status == _E_BLOCK_TOO_LONG:
            msg = f"the block starting at run {row} has more than {_U32_MAX} fragments"
        else:
            msg = f"object {objects[row]} has more than {_U32_MAX} blocks (run {row})"
        raise InvalidInputError(f"{msg} (spec §7)")
    ends = np.cumsum(sizes)
    offsets = ends - sizes
    data = np.empty(int(ends[-1]) if n else 0, np.uint8)
    _encode_fill(objects, chunks, fragments, offsets, n_blocks, block_start, block_mode, nb, data)
    return data, offsets


def decode_manifests(
    data: npt.ArrayLike | bytes | bytearray | memoryview,
    offsets: npt.ArrayLike,
    ids: npt.ArrayLike,
    ndim: int,
    *,
    max_refs: int = DEFAULT_MAX_REFS,
) -> tuple[I64, I64, I64]:
    """Decode and strictly validate the manifests of the objects ``ids`` (spec §7).

    Parameters
    ----------
    data : numpy.ndarray of uint8, shape (total_bytes,), or bytes-like
        ``object_index/data``.
    offsets : array_like of int, shape (n_objects,)
        ``object_index/offsets``: object ``k``'s blob is ``data[offsets[k]:end_k]`` with
        ``end_k = offsets[k+1]``, or ``len(data)`` for the last object (spec §7.4).
    ids : array_like of int, shape (m,)
        Objects to decode, in any order; repeats allowed.
    ndim : int
        Number of chunk coordinates ``D``, >= 1.
    max_refs : int, optional
        Most fragment references the call may return (default
        :data:`DEFAULT_MAX_REFS`, 2**27).

    Returns
    -------
    ref_object : numpy.ndarray of int64, shape (t,)
        Position in ``ids`` (not the id) of each reference, non-decreasing.
    ref_chunk : numpy.ndarray of int64, shape (t, D)
        Chunk grid index of each reference.
    ref_fragment : numpy.ndarray of int64, shape (t,)
        Fragment id of each reference.

    The rows of ``ids[j]`` are those with ``ref_object == j``, in manifest order (blocks
    in order, mode-1 ranges expanded, mode-2 lists in stored order).

    Raises
    ------
    ManifestError
        Naming the object id and byte offset, when an id is outside ``[0, n_objects)``;
        ``offsets[0] != 0``, or ``data`` is non-empty with no object; a requested
        object's span is reversed or runs past ``data``; or a requested blob is
        truncated, has an unknown mode, a negative fragment id or count, a fragment id or
        range end above :data:`MAX_FRAGMENT_ID`, or trailing bytes; or the references
        would exceed ``max_refs``.
    InvalidInputError
        On wrong argument types or shapes (``data`` not uint8, ``ndim < 1``, ...).

    Notes
    -----
    Offsets are checked for the requested objects only (``offsets[k] <= end_k <=
    len(data)``), so the cost is proportional to the requested bytes; decoding every id
    checks the whole container like
    :func:`zarr_vectors.format.manifest.split_object_index`.

    A first numba pass validates and counts, a second one fills exactly allocated
    arrays. The counting pass bounds every allocation: blob fields are only read inside
    the object's span, block and list lengths are checked against the remaining bytes,
    and each mode-1 block is limited to ``start + count - 1 <= MAX_FRAGMENT_ID``. A
    mode-1 block of ``8D + 17`` bytes can still legitimately expand to ``2**32 - 1``
    references, so no multiple of ``len(data)`` bounds the output; ``max_refs`` does
    instead: a corrupt count fails fast here (a ``ManifestError``, nothing allocated)
    rather than requesting tens of gigabytes. 2**27 references are about
    ``8 (D + 2) * 2**27`` bytes of output (5 GiB for D = 3), far above any realistic
    query; raise the limit explicitly for larger bulk decodes.
    """
    buf = _data_array(data)
    off = int_array(offsets, 1, "object_index offsets", ManifestError)
    wanted = int_array(ids, 1, "ids")
    dim = checked_integer(ndim, "ndim", 1, _MAX_NDIM)
    limit = checked_integer(max_refs, "max_refs", 0)
    nbytes = buf.shape[0]
    if off.size == 0 and nbytes:
        raise ManifestError(
            f"object_index has no object but its data holds {nbytes} bytes (spec §7.4)"
        )
    if off.size and off[0] != 0:
        raise ManifestError(
            f"object 0: object_index offsets[0] = {int(off[0])} is byte offset {int(off[0])}; "
            "the first blob must start at byte 0 (spec §7.4)"
        )
    counts, status, j, pos, block, value = _decode_count(buf, off, wanted, dim, limit)
    if status != _OK:
        raise _decode_error(status, j, pos, block, value, off, wanted, nbytes, limit)
    return _decode_fill(buf, off, wanted, dim, counts, int(value))


def _decode_error(
    status: int,
    j: int,
    pos: int,
    block: int,
    value: int,
    off: I64,
    ids: I64,
    nbytes: int,
    limit: int,
) -> ManifestError:
    k = int(ids[j])
    if status == _D_ID_RANGE:
        return ManifestError(
            f"ids[{j}] = {k}: object id outside [0, {off.size}) of the object_index (spec §7.4)"
        )
    start = int(off[k])
    end = int(off[k + 1]) if k + 1 < off.size else nbytes
    if status == _D_SPAN:
        return ManifestError(
            f"object {k}: object_index span data[{start}:{end}] at byte offset {start} is "
            f"reversed or runs past the {nbytes}-byte data (offsets must be non-decreasing, "
            "spec §7.4)"
        )
    where = f"object {k}, byte offset {pos - start} of its manifest (data byte {pos})"
    blk = f"block {block}: " if block >= 0 else ""
    if status == _D_TRUNC_COUNT:
        what = f"truncated block count: the blob has only {value} bytes, needs 4"
    elif status == _D_TRUNC_HEAD:
        what = f"truncated block {block} of {value} (chunk coordinates and mode)"
        blk = ""
    elif status == _D_TRUNC_PAYLOAD:
        what = f"truncated payload: needs {value} bytes, {end - pos} left"
    elif status == _D_BAD_MODE:
        what = f"unknown mode {value}; expected 0, 1 or 2"
    elif status == _D_NEG_FRAGMENT:
        what = f"fragment id {value} is negative"
    elif status == _D_BIG_FRAGMENT:
        what = f"fragment id {value} exceeds {MAX_FRAGMENT_ID} (fragment counts are uint32)"
    elif status == _D_NEG_COUNT:
        what = f"fragment count {value} is negative"
    elif status == _D_RANGE_OVERFLOW:
        what = f"range count {value} runs past fragment id {MAX_FRAGMENT_ID}"
    elif status == _D_TRAILING:
        what = f"{value} trailing bytes after the last block"
    else:
        what = (
            f"{value} or more fragment references requested, more than max_refs={limit} "
            "(corrupt count? pass a larger max_refs for bigger bulk decodes)"
        )
    return ManifestError(f"{where}: {blk}{what} (spec §7)")
