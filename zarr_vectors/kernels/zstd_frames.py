"""Blosc frames of Zstandard streams decoded with one reused Zstandard context.

C-Blosc 1.x decompresses each Zstandard stream of a frame with ``ZSTD_decompress``, which
creates and frees a decompression context every time: ~10 us per stream, several times the
work of a small row block (a 2 KiB fragment blob or a 12 KiB vertex block). :func:`stage_frame`
decompresses the streams of one frame with a context the caller keeps
(``ZSTD_decompressDCtx``) and writes them back as a frame of the same header whose streams
are stored raw; C-Blosc then only copies and unshuffles them (its own code, so the result is
exactly what it would have decoded). Frames of other compressors, or stored whole
(``MEMCPYED``), are left to C-Blosc. Where C-Blosc's unshuffle functions are known, a
frame of one stream per block is decoded without staging or C-Blosc
(:func:`decode_frame_into`): each stream straight into its rows, or into a scratch buffer
and unshuffled from there by those same functions, as C-Blosc's ``blosc_d`` does (C-Blosc
makes and frees a context and its buffers per frame, and copies every staged stream once
more).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import numpy.typing as npt
from llvmlite import ir  # type: ignore[import-untyped]

from zarr_vectors.kernels._jit import copy_bytes, intrinsic, njit
from zarr_vectors.kernels._jit import numba_types as types

__all__ = [
    "decode_frame_blocks_into",
    "decode_frame_into",
    "scratch_size",
    "stage_frame",
    "staged_size",
]

U8 = npt.NDArray[np.uint8]

_HEADER = 16
"""Bytes of a C-Blosc 1.x frame header."""
_ZSTD_FORMAT = 4
"""Compressor format of Zstandard in a frame's flags (bits 5-7)."""
_SHUFFLE, _MEMCPYED, _BITSHUFFLE, _RESERVED, _DONT_SPLIT = 0x01, 0x02, 0x04, 0x08, 0x10
_FORMAT_VERSION, _ZSTD_VERSION = 2, 1
"""The frame format and Zstandard format versions C-Blosc 1.x writes (header bytes 0, 1)."""
_MAX_SPLITS, _MIN_BUFFERSIZE = 16, 128
"""C-Blosc 1.x: a block is split in ``typesize`` streams only up to this type size, and
only when it holds at least this many elements (``blosc_d``)."""


def _zstd_typer(typingctx: Any, fn: Any, dctx: Any, dst: Any, cap: Any, src: Any, size: Any) -> Any:
    """``size_t ZSTD_decompressDCtx(ZSTD_DCtx *dctx, void *dst, size_t dstCapacity, const
    void *src, size_t srcSize)`` at address ``fn``."""
    sig = types.uintp(fn, dctx, dst, cap, src, size)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        word = context.get_value_type(types.uintp)
        byte_ptr = ir.IntType(8).as_pointer()
        fn_ty = ir.FunctionType(word, [byte_ptr, byte_ptr, word, byte_ptr, word])
        a, d, o, c, s, n = (
            context.cast(builder, v, t, types.uintp)
            for v, t in zip(args, signature.args, strict=True)
        )
        func = builder.inttoptr(a, fn_ty.as_pointer())
        pointers = [builder.inttoptr(p, byte_ptr) for p in (d, o, s)]
        return builder.call(func, [pointers[0], pointers[1], c, pointers[2], n])

    return sig, codegen


_VOID, _SIZE = ctypes.c_void_p, ctypes.c_size_t
_DECOMPRESS_DCTX = ctypes.CFUNCTYPE(_SIZE, _VOID, _VOID, _SIZE, _VOID, _SIZE)


def _zstd_python(fn: int, dctx: int, dst: int, cap: int, src: int, size: int) -> int:
    """:func:`_zstd_decompress` through ctypes (kernels run as Python)."""
    args = (dctx, dst, cap, src, size)
    return int(_DECOMPRESS_DCTX(int(fn))(*(int(a) for a in args)))


_zstd_decompress: Any = intrinsic(_zstd_typer, _zstd_python)


def _unshuffle_typer(typingctx: Any, fn: Any, typesize: Any, size: Any, src: Any, dest: Any) -> Any:
    """``void blosc_internal_unshuffle(size_t typesize, size_t blocksize, const uint8_t
    *src, uint8_t *dest)`` at address ``fn``."""
    sig = types.void(fn, typesize, size, src, dest)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        word, pointer = context.get_value_type(types.uintp), ir.IntType(8).as_pointer()
        fn_ty = ir.FunctionType(ir.VoidType(), [word, word, pointer, pointer])
        f, t, n, s, d = (
            context.cast(builder, v, ty, types.uintp)
            for v, ty in zip(args, signature.args, strict=True)
        )
        func = builder.inttoptr(f, fn_ty.as_pointer())
        builder.call(func, [t, n, builder.inttoptr(s, pointer), builder.inttoptr(d, pointer)])
        return context.get_dummy_value()

    return sig, codegen


def _bitunshuffle_typer(
    typingctx: Any, fn: Any, typesize: Any, size: Any, src: Any, dest: Any, tmp: Any
) -> Any:
    """``int blosc_internal_bitunshuffle(size_t typesize, size_t blocksize, const uint8_t
    *src, uint8_t *dest, uint8_t *tmp)`` at address ``fn``."""
    sig = types.int64(fn, typesize, size, src, dest, tmp)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        word, pointer = context.get_value_type(types.uintp), ir.IntType(8).as_pointer()
        fn_ty = ir.FunctionType(ir.IntType(32), [word, word, pointer, pointer, pointer])
        f, t, n, s, d, m = (
            context.cast(builder, v, ty, types.uintp)
            for v, ty in zip(args, signature.args, strict=True)
        )
        func = builder.inttoptr(f, fn_ty.as_pointer())
        found = builder.call(func, [t, n, *(builder.inttoptr(p, pointer) for p in (s, d, m))])
        return builder.sext(found, ir.IntType(64))

    return sig, codegen


_UNSHUFFLE = ctypes.CFUNCTYPE(None, _SIZE, _SIZE, _VOID, _VOID)
_BITUNSHUFFLE = ctypes.CFUNCTYPE(ctypes.c_int, _SIZE, _SIZE, _VOID, _VOID, _VOID)


def _unshuffle_python(fn: int, typesize: int, size: int, src: int, dest: int) -> None:
    """:func:`_unshuffle` through ctypes (kernels run as Python)."""
    _UNSHUFFLE(int(fn))(int(typesize), int(size), int(src), int(dest))


def _bitunshuffle_python(fn: int, typesize: int, size: int, src: int, dest: int, tmp: int) -> int:
    """:func:`_bitunshuffle` through ctypes (kernels run as Python)."""
    return int(_BITUNSHUFFLE(int(fn))(int(typesize), int(size), int(src), int(dest), int(tmp)))


_unshuffle: Any = intrinsic(_unshuffle_typer, _unshuffle_python)
_bitunshuffle: Any = intrinsic(_bitunshuffle_typer, _bitunshuffle_python)


@njit
def le32(buffer: U8, at: int) -> int:
    """The little-endian uint32 at ``buffer[at:at + 4]``."""
    value = 0
    for k in range(4):
        value |= int(buffer[at + k]) << (8 * k)
    return value


@njit
def _put_le32(buffer: U8, at: int, value: int) -> None:
    for k in range(4):
        buffer[at + k] = (value >> (8 * k)) & 0xFF


@njit
def staged_size(buffer: U8, start: int) -> int:
    """Bytes :func:`stage_frame` needs for the frame at ``buffer[start:]`` (its header
    read; at least 16 bytes of it must be there), or 0 when the frame is left to C-Blosc:
    not Zstandard, stored whole, a reserved flag, or a header it would refuse."""
    flags = int(buffer[start + 2])
    typesize = int(buffer[start + 3])
    nbytes, blocksize = le32(buffer, start + 4), le32(buffer, start + 8)
    if flags >> 5 != _ZSTD_FORMAT or flags & (_MEMCPYED | _RESERVED):
        return 0
    if typesize < 1 or nbytes < 1 or blocksize < 1 or nbytes >= 2**31 or blocksize >= 2**31:
        return 0
    n_blocks = -(-nbytes // blocksize)
    return _HEADER + 4 * n_blocks * (1 + min(typesize, _MAX_SPLITS)) + nbytes


@njit
def _stream_length(buffer: U8, start: int, body: int, head: int, at: int) -> int:
    """The stored length of the stream whose length word is at offset ``at`` of the frame
    at ``buffer[start:start + body]`` (past its ``head`` bytes of header and block
    starts); -1 when the word or the stream lies outside the frame."""
    if at < head or at + 4 > body:
        return -1
    stored = le32(buffer, start + at)
    return -1 if stored >= 2**31 or at + 4 + stored > body else stored


@njit
def stage_frame(buffer: U8, start: int, body: int, out: U8, zstd_fn: int, dctx: int) -> int:
    """Write into ``out`` the frame at ``buffer[start:start + body]`` with its Zstandard
    streams decompressed (by ``ZSTD_decompressDCtx`` at address ``zstd_fn`` with context
    ``dctx``) and stored raw: a frame C-Blosc decodes to the same bytes without calling
    Zstandard.

    Parameters
    ----------
    buffer, start, body
        The Blosc frame (``body`` bytes, header included).
    out
        Destination of at least :func:`staged_size` bytes.
    zstd_fn, dctx
        Address of ``ZSTD_decompressDCtx`` and a context of this thread.

    Returns
    -------
    int
        The staged frame's length; 0 when the frame is left to C-Blosc (see
        :func:`staged_size`, or ``out`` too small); -1 when a block start, a stream length
        or a stream's decompressed size is wrong (the frame is damaged).
    """
    need = staged_size(buffer, start)
    if need == 0 or need > out.shape[0]:
        return 0
    flags = int(buffer[start + 2])
    typesize = int(buffer[start + 3])
    nbytes, blocksize = le32(buffer, start + 4), le32(buffer, start + 8)
    n_blocks = -(-nbytes // blocksize)
    head = _HEADER + 4 * n_blocks
    if head > body:
        return -1
    copy_bytes(out, 0, buffer, start, _HEADER)
    base, dest = buffer.ctypes.data + start, out.ctypes.data
    at = head
    for j in range(n_blocks):
        size = min(blocksize, nbytes - j * blocksize)
        leftover = size < blocksize
        splits = 1
        split = not (flags & _DONT_SPLIT or leftover) and typesize <= _MAX_SPLITS
        if split and size // typesize >= _MIN_BUFFERSIZE:
            splits = typesize
        part = size // splits
        _put_le32(out, _HEADER + 4 * j, at)
        src = le32(buffer, start + _HEADER + 4 * j)
        for _ in range(splits):
            stored = _stream_length(buffer, start, body, head, src)
            if stored < 0:
                return -1
            src += 4
            _put_le32(out, at, part)
            at += 4
            if stored == part:
                copy_bytes(out, at, buffer, start + src, part)
            elif _zstd_decompress(zstd_fn, dctx, dest + at, part, base + src, stored) != part:
                return -1
            at += part
            src += stored
    _put_le32(out, 12, at)
    return at


@njit
def scratch_size(buffer: U8, start: int) -> int:
    """Bytes of scratch :func:`decode_frame_into` needs for the frame at ``buffer[start:]``
    (its 16-byte header there): twice its block size and ``4 * typesize`` when it has a
    shuffle to undo (a byte shuffle of 1-byte items has none), else 0."""
    flags, typesize = int(buffer[start + 2]), int(buffer[start + 3])
    if not (flags & _BITSHUFFLE or (flags & _SHUFFLE and typesize > 1)):
        return 0
    return 2 * le32(buffer, start + 8) + 4 * typesize


@njit
def decode_frame_into(
    buffer: U8,
    start: int,
    body: int,
    out: U8,
    at: int,
    zstd_fn: int,
    dctx: int,
    unshuffles: tuple[int, int],
    scratch: U8,
) -> int:
    """Decode the frame at ``buffer[start:start + body]`` straight into ``out[at:]``: each
    block's stream decompressed (by ``ZSTD_decompressDCtx``) into place, or into
    ``scratch`` and unshuffled from there by C-Blosc's own ``blosc_internal_unshuffle`` /
    ``blosc_internal_bitunshuffle`` (``unshuffles``: their addresses, 0 when unknown), as
    C-Blosc's ``blosc_d`` does; no staged frame, no C-Blosc context per block.

    Taken: frames :func:`stage_frame` takes, of the format versions C-Blosc 1.x writes
    (:data:`_FORMAT_VERSION`, :data:`_ZSTD_VERSION`), one stream per block (not split),
    a block size at most the frame's size, and ``scratch`` of at least twice the block
    size plus ``4 * typesize`` bytes when there is a shuffle to undo.

    Returns
    -------
    int
        The bytes decoded (the frame's size); 0 when the frame is left to
        :func:`stage_frame` and C-Blosc (any other frame, or ``out`` too small); -1 when a
        block start, a stream length or a stream's decompressed size is wrong (the frame
        is damaged; ``out[at:]`` may be partly written).
    """
    return decode_frame_blocks_into(
        buffer, start, body, out, at, zstd_fn, dctx, unshuffles, scratch, _EVERY_BLOCK
    )


_EVERY_BLOCK = np.zeros(0, dtype=np.uint8)
"""The ``wanted`` of :func:`decode_frame_blocks_into` that decodes every block."""


@njit
def decode_frame_blocks_into(
    buffer: U8,
    start: int,
    body: int,
    out: U8,
    at: int,
    zstd_fn: int,
    dctx: int,
    unshuffles: tuple[int, int],
    scratch: U8,
    wanted: U8,
) -> int:
    """:func:`decode_frame_into` of only the frame's blocks that ``wanted`` marks.

    Parameters
    ----------
    buffer, start, body, out, at, zstd_fn, dctx, unshuffles, scratch
        As for :func:`decode_frame_into`.
    wanted
        Non-zero for each block of the frame (``blocksize`` bytes of its rows, the last
        one shorter) to decode; empty for every block. Block ``j`` decodes to
        ``out[at + j * blocksize:]``; the bytes of the blocks not wanted are not written.

    Returns
    -------
    int
        As :func:`decode_frame_into`; 0 also when ``wanted`` is neither empty nor one
        entry per block.
    """
    if not staged_size(buffer, start):
        return 0
    flags, typesize = int(buffer[start + 2]), int(buffer[start + 3])
    nbytes, blocksize = le32(buffer, start + 4), le32(buffer, start + 8)
    if buffer[start] != _FORMAT_VERSION or buffer[start + 1] != _ZSTD_VERSION:
        return 0
    if blocksize > nbytes or not (flags & _DONT_SPLIT or typesize == 1):
        return 0
    byte = flags & _SHUFFLE != 0 and typesize > 1  # blosc_d: doshuffle, then dobitshuffle
    bits = flags & _BITSHUFFLE != 0
    if (byte and not unshuffles[0]) or (bits and not unshuffles[1]):
        return 0
    if (byte or bits) and scratch.shape[0] < 2 * blocksize + 4 * typesize:
        return 0
    if at < 0 or at + nbytes > out.shape[0]:
        return 0
    n_blocks = -(-nbytes // blocksize)
    every = wanted.shape[0] == 0
    if not every and wanted.shape[0] != n_blocks:
        return 0
    head = _HEADER + 4 * n_blocks
    if head > body:
        return -1
    base, dest, tmp = buffer.ctypes.data + start, out.ctypes.data, scratch.ctypes.data
    for j in range(n_blocks):
        if not every and not wanted[j]:
            continue
        size = min(blocksize, nbytes - j * blocksize)
        target = at + j * blocksize
        shuffled = byte or (bits and size >= typesize)
        src = le32(buffer, start + _HEADER + 4 * j)
        stored = _stream_length(buffer, start, body, head, src)
        if stored < 0:
            return -1
        src += 4
        into = tmp if shuffled else dest + target  # the stream's bytes go there
        if stored == size:
            copy_bytes(
                scratch if shuffled else out, 0 if shuffled else target, buffer, start + src, size
            )
        elif _zstd_decompress(zstd_fn, dctx, into, size, base + src, stored) != size:
            return -1
        if byte:
            _unshuffle(unshuffles[0], typesize, size, tmp, dest + target)
        elif shuffled:
            spare = tmp + blocksize
            if _bitunshuffle(unshuffles[1], typesize, size, tmp, dest + target, spare) < 0:
                return -1
    return nbytes
