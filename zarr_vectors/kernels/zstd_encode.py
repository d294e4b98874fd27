"""Row blocks encoded as C-Blosc 1.x frames of Zstandard streams, with one reused
Zstandard compression context.

C-Blosc 1.x compresses each stream of a frame with ``ZSTD_compress``, which creates and
frees a compression context every time (~15 us, as much as compressing a 3 KiB stream).
:func:`encode_zstd_blocks` writes the frames C-Blosc would write, byte for byte: the
header C-Blosc chose (given: :mod:`zarr_vectors.store.zstd_encoder` takes it from C-Blosc
itself), each block shuffled by C-Blosc's own shuffle functions, each stream compressed by
``ZSTD_compressCCtx`` with a context of the calling thread at C-Blosc's level and output
bound (the bytes do not depend on the context's history), streams that do not shrink
stored raw, and a frame that does not fit stored whole (``MEMCPYED``), as ``blosc_c`` does.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import numpy.typing as npt
from llvmlite import ir  # type: ignore[import-untyped]

from zarr_vectors.kernels._jit import copy_bytes, intrinsic, njit
from zarr_vectors.kernels._jit import numba_types as types
from zarr_vectors.kernels.row_blocks import block_spans, crc32c_value, read_only

__all__ = ["encode_zstd_blocks"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

_HEADER = 16
"""Bytes of a C-Blosc 1.x frame header (the frame may exceed its input by as much)."""
_DOSHUFFLE, _MEMCPYED, _DOBITSHUFFLE, _DONT_SPLIT = 0x01, 0x02, 0x04, 0x10
"""C-Blosc 1.x header flags (byte 2)."""

_VOID, _SIZE = ctypes.c_void_p, ctypes.c_size_t


def _c_call(result: str, kinds: str, fn: Any, args: tuple[Any, ...]) -> Any:
    """``(signature, codegen)`` of an intrinsic calling the C function at address ``fn``
    with ``args``: ``kinds`` has one letter per argument, ``p`` a pointer, ``w`` a
    ``size_t``, ``i`` an ``int``; ``result`` likewise (``v`` for none, ``q`` a ``size_t``
    seen as ``int64``: a Zstandard error code is then negative)."""
    sig = {"v": types.void, "q": types.int64, "i": types.int32}[result](fn, *args)

    def codegen(context: Any, builder: Any, signature: Any, values: Any) -> Any:
        word = context.get_value_type(types.uintp)
        irs = {"p": ir.IntType(8).as_pointer(), "w": word, "i": ir.IntType(32)}
        ret_ir = {"v": ir.VoidType(), "q": word, "i": ir.IntType(32)}[result]
        words = [
            context.cast(builder, v, t, types.uintp)
            for v, t in zip(values, signature.args, strict=True)
        ]
        call_args = []
        for kind, value in zip(kinds, words[1:], strict=True):
            if kind == "p":
                value = builder.inttoptr(value, irs["p"])
            elif kind == "i":
                value = builder.trunc(value, irs["i"])
            call_args.append(value)
        fn_ty = ir.FunctionType(ret_ir, [irs[k] for k in kinds])
        done = builder.call(builder.inttoptr(words[0], fn_ty.as_pointer()), call_args)
        return context.get_dummy_value() if result == "v" else done

    return sig, codegen


def _shuffle_typer(typingctx: Any, fn: Any, typesize: Any, size: Any, src: Any, dest: Any) -> Any:
    return _c_call("v", "wwpp", fn, (typesize, size, src, dest))


def _bitshuffle_typer(
    typingctx: Any, fn: Any, typesize: Any, size: Any, src: Any, dest: Any, tmp: Any
) -> Any:
    return _c_call("i", "wwppp", fn, (typesize, size, src, dest, tmp))


def _compress_typer(
    typingctx: Any, fn: Any, cctx: Any, dst: Any, cap: Any, src: Any, size: Any, level: Any
) -> Any:
    return _c_call("q", "ppwpwi", fn, (cctx, dst, cap, src, size, level))


_SHUFFLE = ctypes.CFUNCTYPE(None, _SIZE, _SIZE, _VOID, _VOID)
_BITSHUFFLE = ctypes.CFUNCTYPE(ctypes.c_int, _SIZE, _SIZE, _VOID, _VOID, _VOID)
_COMPRESS_CCTX = ctypes.CFUNCTYPE(_SIZE, _VOID, _VOID, _SIZE, _VOID, _SIZE, ctypes.c_int)


def _shuffle_python(fn: int, typesize: int, size: int, src: int, dest: int) -> None:
    """:func:`_shuffle` through ctypes (kernels run as Python)."""
    _SHUFFLE(int(fn))(int(typesize), int(size), int(src), int(dest))


def _bitshuffle_python(fn: int, typesize: int, size: int, src: int, dest: int, tmp: int) -> int:
    """:func:`_bitshuffle` through ctypes (kernels run as Python)."""
    return int(_BITSHUFFLE(int(fn))(int(typesize), int(size), int(src), int(dest), int(tmp)))


def _compress_python(
    fn: int, cctx: int, dst: int, cap: int, src: int, size: int, level: int
) -> int:
    """:func:`_compress_cctx` through ctypes (kernels run as Python)."""
    args = (int(cctx), int(dst), int(cap), int(src), int(size), int(level))
    code = int(_COMPRESS_CCTX(int(fn))(*args))
    return code - (1 << 64) if code >= 1 << 63 else code


_shuffle: Any = intrinsic(_shuffle_typer, _shuffle_python)
"""``void blosc_internal_shuffle(size_t typesize, size_t blocksize, src, dest)``."""
_bitshuffle: Any = intrinsic(_bitshuffle_typer, _bitshuffle_python)
"""``int blosc_internal_bitshuffle(size_t typesize, size_t blocksize, src, dest, tmp)``."""
_compress_cctx: Any = intrinsic(_compress_typer, _compress_python)
"""``size_t ZSTD_compressCCtx(cctx, dst, size_t capacity, src, size_t size, int level)``."""


def _le32_typer(typingctx: Any, buffer: Any, at: Any, value: Any) -> Any:
    """``buffer[at:at + 4] = value`` as a little-endian ``uint32`` (four byte stores: no
    kernel of its own to compile)."""
    sig = types.void(buffer, at, value)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> None:
        array = context.make_array(signature.args[0])(context, builder, args[0])
        start = context.cast(builder, args[1], signature.args[1], types.int64)
        word = context.cast(builder, args[2], signature.args[2], types.uint64)
        byte = ir.IntType(8)
        for k in range(4):
            shifted = builder.lshr(word, ir.Constant(word.type, 8 * k))
            at = builder.add(start, ir.Constant(start.type, k))
            builder.store(builder.trunc(shifted, byte), builder.gep(array.data, [at]))

    return sig, codegen


def _le32_python(buffer: U8, at: int, value: int) -> None:
    buffer[at : at + 4] = np.frombuffer(int(value).to_bytes(4, "little"), dtype=np.uint8)


_le32: Any = intrinsic(_le32_typer, _le32_python)


def encode_zstd_blocks(
    rows: U8,
    sizes: I64,
    pad: U8,
    block_nbytes: int,
    out: U8,
    lengths: I64,
    frame: tuple[U8, int, int],
    functions: tuple[int, int, int, int],
    cctx: int,
) -> int:
    """Encode row blocks back to back into ``out`` as C-Blosc frames of Zstandard streams,
    each followed by its CRC32C: the bytes of
    :func:`~zarr_vectors.kernels.row_blocks.encode_blocks` with the same settings.

    Parameters
    ----------
    rows, sizes, pad, block_nbytes, out, lengths
        As for :func:`~zarr_vectors.kernels.row_blocks.encode_blocks`: the chunks' bytes
        back to back, each chunk's byte count, one block of the fill value.
    frame
        ``(header, blocksize, level)``: the first 12 bytes C-Blosc writes for a frame of
        ``block_nbytes`` bytes with these settings (version, flags, type size, sizes; not
        stored whole), its block size and the Zstandard level it compresses at.
    functions
        Addresses of ``crc32c_value``, C-Blosc's internal ``shuffle`` and ``bitshuffle``
        and ``ZSTD_compressCCtx``.
    cctx
        A Zstandard compression context of the calling thread.

    Returns
    -------
    int
        Bytes written to ``out``, or -1 when a frame failed (bit shuffle refused, ``out``
        too small, sizes that do not add up): encode those rows with C-Blosc then.
    """
    header, blocksize, level = frame
    flags, typesize = int(header[2]), int(header[3])
    scratch = blocksize + 4 * typesize if flags & _DOBITSHUFFLE else 0  # bitshuffle's own
    tmp = np.empty(blocksize + scratch, np.uint8)
    found = block_spans(sizes, block_nbytes, rows.shape[0], lengths.shape[0], pad.shape[0])
    if found is None:
        return -1
    starts, takes = found
    last = np.array(pad[:block_nbytes], copy=True)  # a chunk's last rows, then the fill
    spans = (starts, takes, read_only(pad), last, block_nbytes, out, lengths)
    settings = (flags, typesize, blocksize, level)
    return int(_encode_zstd_blocks(rows, *spans, header, *settings, tmp, *functions, cctx))


@njit
def _encode_zstd_blocks(
    rows: U8,
    starts: I64,
    takes: I64,
    pad: U8,
    last: U8,
    block_nbytes: int,
    out: U8,
    lengths: I64,
    header: U8,
    flags: int,
    typesize: int,
    blocksize: int,
    level: int,
    tmp: U8,
    crc_fn: int,
    shuffle_fn: int,
    bitshuffle_fn: int,
    zstd_fn: int,
    cctx: int,
) -> int:
    at = 0
    for b in range(starts.shape[0]):
        first, take = starts[b], takes[b]
        if take <= 0 or first + take > rows.shape[0]:
            return -1
        if at + block_nbytes + _HEADER + 4 > out.shape[0]:
            return -1
        whole = take == block_nbytes  # else the chunk's last rows, then the fill value
        if not whole:
            copy_bytes(last, 0, rows, first, take)
        nt = _zstd_frame(
            (rows, last, first, whole, block_nbytes),
            out,
            at,
            (header, flags, typesize, blocksize, level),
            tmp,
            (shuffle_fn, bitshuffle_fn, zstd_fn, cctx),
        )
        if not whole:
            copy_bytes(last, 0, pad, 0, take)
        if nt < 0:
            return -1
        crc = crc32c_value(crc_fn, out.ctypes.data + at, nt)
        _le32(out, at + nt, crc)
        lengths[b] = nt + 4
        at += nt + 4
    return at


@njit
def _zstd_frame(
    block: tuple[U8, U8, int, bool, int],
    out: U8,
    at: int,
    frame: tuple[U8, int, int, int, int],
    tmp: U8,
    functions: tuple[int, int, int, int],
) -> int:
    """The frame of a block at ``out[at:]`` as C-Blosc's ``blosc_compress_context`` writes
    it (``blosc_c`` per block); its length, -1 when bit shuffle refused. ``block`` is
    ``(rows, last, first, whole, block_nbytes)``: the block is ``rows[first:first +
    block_nbytes]`` when ``whole``, else ``last`` (a chunk's last rows and the fill)."""
    rows, last, first, whole, block_nbytes = block
    header, flags, typesize, blocksize, level = frame
    shuffle_fn, bitshuffle_fn, zstd_fn, cctx = functions
    base = rows.ctypes.data + first if whole else last.ctypes.data
    n_sub = -(-block_nbytes // blocksize)
    maxbytes = block_nbytes + _HEADER
    shuffled, scratch = tmp.ctypes.data, tmp.ctypes.data + blocksize
    copy_bytes(out, at, header, 0, 12)
    nt = _HEADER + 4 * n_sub
    for j in range(n_sub):
        _le32(out, at + _HEADER + 4 * j, nt)
        bsize = blocksize if j < n_sub - 1 else block_nbytes - j * blocksize
        start = base + j * blocksize
        if flags & _DOSHUFFLE and typesize > 1:
            _shuffle(shuffle_fn, typesize, bsize, start, shuffled)
        elif flags & _DOBITSHUFFLE and bsize >= typesize:
            if _bitshuffle(bitshuffle_fn, typesize, bsize, start, shuffled, scratch) < 0:
                return -1
        elif whole:
            copy_bytes(tmp, 0, rows, first + j * blocksize, bsize)
        else:
            copy_bytes(tmp, 0, last, j * blocksize, bsize)
        splits = typesize if not flags & _DONT_SPLIT and bsize == blocksize else 1
        part = bsize // splits
        for k in range(splits):
            nt += 4
            bound = part if nt + part <= maxbytes else maxbytes - nt
            if bound <= 0:
                nt = -1
                break
            dst = out.ctypes.data + at + nt
            size = _compress_cctx(zstd_fn, cctx, dst, bound, shuffled + k * part, part, level)
            if size < 0 or size > bound:  # a Zstandard error (C-Blosc: nothing compressed)
                size = 0
            if size == 0 or size == part:
                if nt + part > maxbytes:
                    nt = -1
                    break
                copy_bytes(out, at + nt, tmp, k * part, part)
                size = part
            _le32(out, at + nt - 4, size)
            nt += size
        if nt < 0:
            break
    if nt < 0:  # does not fit: stored whole (C-Blosc's MEMCPYED frame)
        out[at + 2] |= _MEMCPYED
        if whole:
            copy_bytes(out, at + _HEADER, rows, first, block_nbytes)
        else:
            copy_bytes(out, at + _HEADER, last, 0, block_nbytes)
        nt = maxbytes
    _le32(out, at + 12, nt)
    return nt
