"""Blosc frames of Zstandard streams decoded with one reused Zstandard context.

C-Blosc 1.x decompresses each Zstandard stream of a frame with ``ZSTD_decompress``, which
creates and frees a decompression context every time: ~10 us per stream, several times the
work of a small row block (a 2 KiB fragment blob or a 12 KiB vertex block). :func:`stage_frame`
decompresses the streams of one frame with a context the caller keeps
(``ZSTD_decompressDCtx``) and writes them back as a frame of the same header whose streams
are stored raw; C-Blosc then only copies and unshuffles them (its own code, so the result is
exactly what it would have decoded). Frames of other compressors, or stored whole
(``MEMCPYED``), are left to C-Blosc.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import numpy.typing as npt
from llvmlite import ir  # type: ignore[import-untyped]

from zarr_vectors.kernels._jit import copy_bytes, intrinsic, njit
from zarr_vectors.kernels._jit import numba_types as types

__all__ = ["stage_frame", "staged_size"]

U8 = npt.NDArray[np.uint8]

_HEADER = 16
"""Bytes of a C-Blosc 1.x frame header."""
_ZSTD_FORMAT = 4
"""Compressor format of Zstandard in a frame's flags (bits 5-7)."""
_MEMCPYED, _RESERVED, _DONT_SPLIT = 0x02, 0x08, 0x10
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
            if src < head or src + 4 > body:
                return -1
            stored = le32(buffer, start + src)
            src += 4
            if stored >= 2**31 or src + stored > body:
                return -1
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
