"""Object manifest blobs and the ``object_index`` data/offsets container (spec §7).

An object's manifest lists, in traversal order, every fragment the object owns as a
sequence of blocks, each naming one chunk and one or more of its fragments. Layout,
little-endian, no alignment padding (``D`` = number of chunk coordinates)::

    uint32 B                                   number of blocks
    B times:
        int64 chunk_coords[D]
        uint8 mode
        mode 0 (single):    int64 fragment                      8D + 9 bytes
        mode 1 (range):     int64 start, int64 count            8D + 17 bytes
                            -> fragments start .. start+count-1
        mode 2 (explicit):  uint32 n, int64 fragments[n]        8D + 5 + 8n bytes

An empty manifest is the 4 bytes ``00 00 00 00``. The same chunk may appear in several
blocks and the same fragment may be named more than once; order is significant.

The ``object_index`` container concatenates the blobs of objects ``0 .. n-1`` into one
byte string ``data`` and stores ``offsets`` (int64, length ``n``, no end sentinel):
object ``i``'s blob is ``data[offsets[i]:offsets[i+1]]``, the last one runs to the end.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError, ManifestError
from zarr_vectors.format.fragments import BytesLike, byte_view
from zarr_vectors.kernels.manifests import DEFAULT_MAX_REFS, decode_manifests, encode_manifests

__all__ = [
    "MAX_FRAGMENT_ID",
    "ManifestBlock",
    "encode_manifest",
    "decode_manifest",
    "encode_object_index",
    "split_object_index",
    "encode_object_index_bulk",
    "decode_object_index_bulk",
]

IntArray: TypeAlias = npt.NDArray[np.int64]

MAX_FRAGMENT_ID: Final[int] = 0xFFFFFFFE
"""Largest fragment id a manifest may name.

Fragment ids index a chunk's fragment index, whose fragment count ``F`` is a uint32
(spec §6), so no valid id exceeds ``2**32 - 2``. Enforcing this bound also keeps a
corrupt mode-1 block from expanding to an absurd number of fragments.
"""

_U32: Final = struct.Struct("<I")
_I64: Final = struct.Struct("<q")
_I64_PAIR: Final = struct.Struct("<qq")
_U32_MAX: Final[int] = 0xFFFFFFFF
_I64_MIN: Final[int] = int(np.iinfo(np.int64).min)
_I64_MAX: Final[int] = int(np.iinfo(np.int64).max)

MODE_SINGLE: Final[int] = 0
MODE_RANGE: Final[int] = 1
MODE_EXPLICIT: Final[int] = 2


def _block_mode(fragments: IntArray) -> int:
    """Encoding mode of a block: 0 single, 1 ascending consecutive run (n >= 2), else 2."""
    n = fragments.size
    if n == 1:
        return MODE_SINGLE
    if n >= 2 and bool((np.diff(fragments) == 1).all()):
        return MODE_RANGE
    return MODE_EXPLICIT


def _new_block(chunk: tuple[int, ...], fragments: IntArray) -> ManifestBlock:
    """Build a block from validated, owned values (no checks, no copies)."""
    obj = object.__new__(ManifestBlock)
    fragments.flags.writeable = False
    object.__setattr__(obj, "chunk", chunk)
    object.__setattr__(obj, "fragments", fragments)
    return obj


@dataclass(frozen=True, slots=True, eq=False)
class ManifestBlock:
    """One manifest block: a chunk and the fragments of it an object owns (spec §7).

    Parameters
    ----------
    chunk : tuple of int
        Chunk coordinates, ``D`` int64 values.
    fragments : numpy.ndarray of int64, shape (n,)
        Fragment ids in object order, each in ``[0, MAX_FRAGMENT_ID]``; repeats allowed.
        The constructor copies it into a read-only int64 array.

    Notes
    -----
    The on-disk mode is derived from ``fragments`` (see :attr:`mode`). Blocks compare
    equal when their chunks and fragment arrays are equal; they are not hashable.
    """

    chunk: tuple[int, ...]
    fragments: IntArray

    def __post_init__(self) -> None:
        try:
            chunk = tuple(operator.index(c) for c in self.chunk)
        except TypeError as exc:
            raise InvalidInputError(
                f"chunk coordinates must be integers, got {self.chunk!r}"
            ) from exc
        if any(not _I64_MIN <= c <= _I64_MAX for c in chunk):
            raise InvalidInputError(f"chunk coordinates {chunk} do not fit int64")
        arr = np.asarray(self.fragments)
        if arr.ndim != 1:
            raise InvalidInputError(f"fragments must be 1-D, got shape {arr.shape}")
        if arr.size and arr.dtype.kind not in "iu":
            raise InvalidInputError(f"fragments must be integers, got dtype {arr.dtype}")
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) > MAX_FRAGMENT_ID):
            raise InvalidInputError(
                f"fragment ids must lie in [0, {MAX_FRAGMENT_ID}], got min {int(arr.min())} "
                f"max {int(arr.max())}"
            )
        if arr.size > _U32_MAX:
            raise InvalidInputError(f"a block cannot hold {arr.size} fragments (uint32 limit)")
        frags = arr.astype(np.int64, copy=True)
        frags.flags.writeable = False
        object.__setattr__(self, "chunk", chunk)
        object.__setattr__(self, "fragments", frags)

    @property
    def mode(self) -> int:
        """On-disk mode: 0 for one fragment, 1 for an ascending run ``a, a+1, …`` of at
        least two, 2 otherwise (including an empty block)."""
        return _block_mode(self.fragments)

    def nbytes(self) -> int:
        """Encoded size of this block in bytes."""
        base = 8 * len(self.chunk) + 1
        mode = self.mode
        if mode == MODE_SINGLE:
            return base + 8
        if mode == MODE_RANGE:
            return base + 16
        return base + 4 + 8 * self.fragments.size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ManifestBlock):
            return NotImplemented
        return self.chunk == other.chunk and np.array_equal(self.fragments, other.fragments)

    def __repr__(self) -> str:
        return f"ManifestBlock(chunk={self.chunk}, fragments={self.fragments.tolist()})"


def _check_ndim(ndim: int) -> int:
    value = operator.index(ndim)
    if value < 1:
        raise InvalidInputError(f"ndim must be >= 1, got {value}")
    return value


def encode_manifest(blocks: Iterable[ManifestBlock], ndim: int) -> bytes:
    """Serialise an object's manifest (spec §7).

    Parameters
    ----------
    blocks : iterable of ManifestBlock
        In object order.
    ndim : int
        Number of chunk coordinates ``D`` of every block.

    Returns
    -------
    bytes
        ``b"\\x00\\x00\\x00\\x00"`` for no block. Each block uses mode 0 for a single
        fragment, mode 1 for an ascending consecutive run of two or more, mode 2 otherwise.

    Raises
    ------
    InvalidInputError
        A block's chunk has a length other than ``ndim``, or more than ``2**32 - 1`` blocks.
    """
    d = _check_ndim(ndim)
    head = struct.Struct(f"<{d}qB")
    parts: list[bytes] = [b""]
    n_blocks = 0
    for block in blocks:
        if len(block.chunk) != d:
            raise InvalidInputError(
                f"block {n_blocks}: chunk {block.chunk} has {len(block.chunk)} coordinates, "
                f"expected {d}"
            )
        frags = block.fragments
        mode = _block_mode(frags)
        parts.append(head.pack(*block.chunk, mode))
        if mode == MODE_SINGLE:
            parts.append(_I64.pack(int(frags[0])))
        elif mode == MODE_RANGE:
            parts.append(_I64_PAIR.pack(int(frags[0]), int(frags.size)))
        else:
            parts.append(_U32.pack(int(frags.size)))
            parts.append(frags.astype("<i8").tobytes())
        n_blocks += 1
    if n_blocks > _U32_MAX:
        raise InvalidInputError(f"{n_blocks} blocks exceed the uint32 block count")
    parts[0] = _U32.pack(n_blocks)
    return b"".join(parts)


def _fail(offset: int, message: str) -> ManifestError:
    return ManifestError(f"object manifest, byte offset {offset}: {message} (spec §7)")


def _need(nbytes: int, offset: int, size: int, what: str) -> None:
    if offset + size > nbytes:
        raise _fail(
            offset,
            f"truncated {what}: needs {size} bytes [{offset}, {offset + size}) but the "
            f"blob has only {nbytes} bytes",
        )


def _check_fragment_id(offset: int, block: int, value: int) -> None:
    if value < 0:
        raise _fail(offset, f"block {block}: fragment id {value} is negative")
    if value > MAX_FRAGMENT_ID:
        raise _fail(
            offset,
            f"block {block}: fragment id {value} exceeds {MAX_FRAGMENT_ID} "
            "(fragment counts are uint32)",
        )


def decode_manifest(buf: BytesLike, ndim: int) -> list[ManifestBlock]:
    """Decode and strictly validate one object's manifest blob (spec §7).

    Parameters
    ----------
    buf : bytes-like or numpy.ndarray of uint8
        Exactly one manifest blob (no padding).
    ndim : int
        Number of chunk coordinates ``D``.

    Returns
    -------
    list of ManifestBlock
        In stored order; a mode-1 block is expanded to its fragment ids (``count == 0``
        gives an empty block).

    Raises
    ------
    ManifestError
        With the byte offset in the message, on: truncation anywhere; an unknown mode;
        negative fragment ids or counts; fragment ids, or the last id of a mode-1 run,
        above :data:`MAX_FRAGMENT_ID`; bytes left after the last block.
    InvalidInputError
        ``ndim < 1`` or ``buf`` is an array of another dtype.
    """
    d = _check_ndim(ndim)
    mv = byte_view(buf)
    nbytes = len(mv)
    _need(nbytes, 0, 4, "block count")
    (n_blocks,) = _U32.unpack_from(mv, 0)
    head = struct.Struct(f"<{d}qB")
    pos = 4
    blocks: list[ManifestBlock] = []
    for b in range(n_blocks):
        _need(nbytes, pos, head.size, f"block {b} of {n_blocks} (chunk coordinates and mode)")
        *coords, mode = head.unpack_from(mv, pos)
        mode_pos = pos + 8 * d
        pos += head.size
        if mode == MODE_SINGLE:
            _need(nbytes, pos, 8, f"block {b} fragment id")
            (frag,) = _I64.unpack_from(mv, pos)
            _check_fragment_id(pos, b, frag)
            frags = np.array([frag], dtype=np.int64)
            pos += 8
        elif mode == MODE_RANGE:
            _need(nbytes, pos, 16, f"block {b} fragment range")
            start, count = _I64_PAIR.unpack_from(mv, pos)
            _check_fragment_id(pos, b, start)
            if count < 0:
                raise _fail(pos + 8, f"block {b}: fragment count {count} is negative")
            if count and start + count - 1 > MAX_FRAGMENT_ID:
                raise _fail(
                    pos + 8,
                    f"block {b}: range start {start} count {count} runs past fragment id "
                    f"{MAX_FRAGMENT_ID} (fragment counts are uint32)",
                )
            frags = np.arange(start, start + count, dtype=np.int64)
            pos += 16
        elif mode == MODE_EXPLICIT:
            _need(nbytes, pos, 4, f"block {b} fragment list length")
            (n,) = _U32.unpack_from(mv, pos)
            pos += 4
            _need(nbytes, pos, 8 * n, f"block {b} fragment list ({n} int64)")
            frags = np.frombuffer(mv, dtype="<i8", count=n, offset=pos).astype(np.int64)
            if n and ((bad := (frags < 0) | (frags > MAX_FRAGMENT_ID)).any()):
                i = int(np.argmax(bad))
                _check_fragment_id(pos + 8 * i, b, int(frags[i]))
            pos += 8 * n
        else:
            raise _fail(mode_pos, f"block {b}: unknown mode {mode}; expected 0, 1 or 2")
        blocks.append(_new_block(tuple(coords), frags))
    if pos != nbytes:
        raise _fail(pos, f"{nbytes - pos} trailing bytes after the last of {n_blocks} blocks")
    return blocks


def encode_object_index(blobs: Sequence[BytesLike]) -> tuple[bytes, IntArray]:
    """Concatenate per-object manifest blobs into the ``object_index`` container (spec §7).

    Parameters
    ----------
    blobs : sequence of bytes-like
        Manifest blob of object ``i`` at position ``i``.

    Returns
    -------
    data : bytes
        All blobs concatenated in object order.
    offsets : numpy.ndarray of int64, shape (n_objects,)
        ``offsets[i]`` is the byte offset of object ``i``'s blob in ``data``.
    """
    views = [byte_view(b) for b in blobs]
    offsets = np.zeros(len(views), dtype=np.int64)
    if len(views) > 1:
        offsets[1:] = np.cumsum(np.array([len(v) for v in views[:-1]], dtype=np.int64))
    return b"".join(views), offsets


def split_object_index(data: BytesLike, offsets: npt.ArrayLike) -> list[memoryview]:
    """Cut the ``object_index`` container back into per-object blobs (spec §7).

    Parameters
    ----------
    data : bytes-like or numpy.ndarray of uint8
        Concatenated blobs.
    offsets : array_like of int, shape (n_objects,)
        Byte offset of each object's blob; object ``i`` runs to ``offsets[i+1]`` or, for
        the last object, to the end of ``data``.

    Returns
    -------
    list of memoryview
        Zero-copy views into ``data`` (pass them to :func:`decode_manifest`).

    Raises
    ------
    ManifestError
        ``offsets`` is not 1-D integer, ``offsets[0] != 0``, offsets decrease or point
        past the end of ``data``, or ``data`` is non-empty while there is no object.
    """
    mv = byte_view(data)
    nbytes = len(mv)
    off = np.asarray(offsets)
    if off.ndim != 1:
        raise ManifestError(f"object_index offsets must be 1-D, got shape {off.shape}")
    if off.size == 0:
        if nbytes:
            raise ManifestError(
                f"object_index has no object but its data holds {nbytes} bytes (spec §7)"
            )
        return []
    if off.dtype.kind not in "iu":
        raise ManifestError(f"object_index offsets must be integers, got dtype {off.dtype}")
    if off.dtype.kind == "u" and int(off.max()) > _I64_MAX:
        raise ManifestError("object_index offsets exceed the int64 range (spec §7)")
    off = off.astype(np.int64)
    if off[0] != 0:
        raise ManifestError(
            f"object_index offsets[0] = {int(off[0])}; the first blob must start at byte 0 "
            "(spec §7)"
        )
    if (dec := np.diff(off) < 0).any():
        i = int(np.argmax(dec)) + 1
        raise ManifestError(
            f"object_index offsets decrease: offsets[{i}] = {int(off[i])} < "
            f"offsets[{i - 1}] = {int(off[i - 1])} (spec §7)"
        )
    if int(off[-1]) > nbytes:
        i = int(np.argmax(off > nbytes))
        raise ManifestError(
            f"object_index offsets[{i}] = {int(off[i])} points past the end of the "
            f"{nbytes}-byte data (spec §7)"
        )
    starts = off.tolist()
    ends = [*starts[1:], nbytes]
    return [mv[a:b] for a, b in zip(starts, ends, strict=True)]


def encode_object_index_bulk(
    run_object: npt.ArrayLike,
    run_chunk: npt.ArrayLike,
    run_fragment: npt.ArrayLike,
    n_objects: int,
) -> tuple[npt.NDArray[np.uint8], IntArray]:
    """Build the whole ``object_index`` container from flat fragment references (spec §7).

    The bulk form of ``encode_object_index([encode_manifest(...) ...])``, byte for byte
    equal to it: one row per fragment reference, sorted by object and traversal order;
    one block per maximal run of rows of one object in the same chunk, mode chosen by the
    writer rules of spec §7.2; objects without rows get the empty manifest (spec §7.1).

    Parameters
    ----------
    run_object : array_like of int, shape (r,)
        Object id of each reference, non-decreasing, in ``[0, n_objects)``.
    run_chunk : array_like of int, shape (r, D)
        Chunk grid index of each reference (spec §5.2).
    run_fragment : array_like of int, shape (r,)
        Fragment id of each reference, in ``[0, MAX_FRAGMENT_ID]``.
    n_objects : int
        Number of objects ``n``.

    Returns
    -------
    data : numpy.ndarray of uint8
        ``object_index/data`` (spec §7.4).
    offsets : numpy.ndarray of int64, shape (n_objects,)
        ``object_index/offsets`` (spec §7.4).

    Raises
    ------
    InvalidInputError
        On malformed input (see :func:`zarr_vectors.kernels.encode_manifests`).
    """
    return encode_manifests(run_object, run_chunk, run_fragment, n_objects)


def decode_object_index_bulk(
    data: npt.ArrayLike | BytesLike,
    offsets: npt.ArrayLike,
    ids: npt.ArrayLike,
    ndim: int,
    *,
    max_refs: int = DEFAULT_MAX_REFS,
) -> tuple[IntArray, IntArray, IntArray]:
    """Decode the manifests of several objects into flat fragment references (spec §7).

    Reads object ``k``'s blob from the ``object_index`` container (spec §7.4), decodes it
    strictly (spec §7.3) and expands it in manifest order (spec §7.1).

    Parameters
    ----------
    data : numpy.ndarray of uint8 or bytes-like
        ``object_index/data``.
    offsets : array_like of int, shape (n_objects,)
        ``object_index/offsets``.
    ids : array_like of int, shape (m,)
        Objects to decode, any order, repeats allowed.
    ndim : int
        Number of chunk coordinates ``D``.
    max_refs : int, optional
        Most references the call may return (a guard against corrupt mode-1 counts).

    Returns
    -------
    ref_object : numpy.ndarray of int64, shape (t,)
        Position in ``ids`` of each reference (non-decreasing).
    ref_chunk : numpy.ndarray of int64, shape (t, D)
        Chunk grid index of each reference.
    ref_fragment : numpy.ndarray of int64, shape (t,)
        Fragment id of each reference.

    Raises
    ------
    ManifestError
        A requested blob or its span is malformed (message names the object id and byte
        offset), an id is out of range, or more than ``max_refs`` references.
    InvalidInputError
        On wrong argument types (see :func:`zarr_vectors.kernels.decode_manifests`).
    """
    return decode_manifests(data, offsets, ids, ndim, max_refs=max_refs)
