"""Encoding and decoding many stored row blocks (spec §9.0) in one call, through native C
functions.

Each stored row block is its encoded bytes followed by their little-endian CRC32C; the
encoded bytes are either the raw rows or one Blosc frame of them. :func:`decode_blocks`
checks and decodes a batch of blocks lying in one byte buffer, calling the C functions
whose addresses it is given (``crc32c_value`` of libcrc32c and ``blosc_decompress_ctx`` of
C-Blosc, found by :func:`zarr_vectors.store.native_blocks.native_block_functions`), with no
Python work per block. It stops at the first block that fails a check and reports it, so the
caller can decode that one the slow way for a precise error. :func:`encode_blocks` is its
inverse, through ``blosc_compress_ctx``.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import numpy.typing as npt
from llvmlite import ir  # type: ignore[import-untyped]

from zarr_vectors.kernels._jit import copy_bytes, intrinsic, njit
from zarr_vectors.kernels._jit import numba_types as types
from zarr_vectors.kernels.zstd_frames import (
    decode_frame_blocks_into,
    decode_frame_into,
    scratch_size,
    stage_frame,
    staged_size,
)
from zarr_vectors.kernels.zstd_frames import le32 as _le32

__all__ = [
    "BLOSC_COMPRESS_CTX",
    "BLOSC_MAX_OVERHEAD",
    "CRC_RESIDUE",
    "block_spans",
    "crc32c_value",
    "decode_blocks",
    "decode_chunk_blocks",
    "dense_blob_ranges",
    "encode_blocks",
    "read_only",
]

CRC_RESIDUE = 0x48674BC7
"""CRC32C of any bytes followed by their own CRC32C (little-endian)."""

_BLOSC_HEADER = 16
BLOSC_MAX_OVERHEAD = 16
"""Bytes a Blosc frame may exceed its input by (C-Blosc 1.x ``BLOSC_MAX_OVERHEAD``)."""

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]


def _crc32c_typer(typingctx: Any, fn: Any, data: Any, size: Any) -> Any:
    """``uint32_t crc32c_value(const uint8_t *data, size_t size)`` at address ``fn``."""
    sig = types.uint32(fn, data, size)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        word = context.get_value_type(types.uintp)
        byte_ptr = ir.IntType(8).as_pointer()
        fn_ty = ir.FunctionType(ir.IntType(32), [byte_ptr, word])
        a, b, c = (
            context.cast(builder, v, t, types.uintp)
            for v, t in zip(args, signature.args, strict=True)
        )
        func = builder.inttoptr(a, fn_ty.as_pointer())
        return builder.call(func, [builder.inttoptr(b, byte_ptr), c])

    return sig, codegen


def _blosc_typer(typingctx: Any, fn: Any, src: Any, dest: Any, size: Any) -> Any:
    """``int blosc_decompress_ctx(const void *src, void *dest, size_t destsize, int
    numinternalthreads)`` at address ``fn``, with one thread."""
    sig = types.int32(fn, src, dest, size)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        word = context.get_value_type(types.uintp)
        byte_ptr = ir.IntType(8).as_pointer()
        fn_ty = ir.FunctionType(ir.IntType(32), [byte_ptr, byte_ptr, word, ir.IntType(32)])
        a, b, c, d = (
            context.cast(builder, v, t, types.uintp)
            for v, t in zip(args, signature.args, strict=True)
        )
        func = builder.inttoptr(a, fn_ty.as_pointer())
        one = ir.Constant(ir.IntType(32), 1)
        return builder.call(
            func, [builder.inttoptr(b, byte_ptr), builder.inttoptr(c, byte_ptr), d, one]
        )

    return sig, codegen


def _blosc_compress_typer(
    typingctx: Any,
    fn: Any,
    clevel: Any,
    shuffle: Any,
    typesize: Any,
    nbytes: Any,
    src: Any,
    dest: Any,
    destsize: Any,
    cname: Any,
) -> Any:
    """``int blosc_compress_ctx(int clevel, int doshuffle, size_t typesize, size_t nbytes,
    const void *src, void *dest, size_t destsize, const char *compressor, size_t blocksize,
    int numinternalthreads)`` at address ``fn``, with an automatic block size and one
    thread."""
    sig = types.int32(fn, clevel, shuffle, typesize, nbytes, src, dest, destsize, cname)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        word = context.get_value_type(types.uintp)
        int32 = ir.IntType(32)
        byte_ptr = ir.IntType(8).as_pointer()
        arg_types = [int32, int32, word, word, byte_ptr, byte_ptr, word, byte_ptr, word, int32]
        fn_ty = ir.FunctionType(int32, arg_types)
        a, lvl, shf, ts, nb, sp, dp, ds, cn = (
            context.cast(builder, v, t, types.uintp)
            for v, t in zip(args, signature.args, strict=True)
        )
        func = builder.inttoptr(a, fn_ty.as_pointer())
        return builder.call(
            func,
            [
                builder.trunc(lvl, int32),
                builder.trunc(shf, int32),
                ts,
                nb,
                builder.inttoptr(sp, byte_ptr),
                builder.inttoptr(dp, byte_ptr),
                ds,
                builder.inttoptr(cn, byte_ptr),
                ir.Constant(word, 0),
                ir.Constant(int32, 1),
            ],
        )

    return sig, codegen


_CRC32C = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t)
_DECOMPRESS = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
)
BLOSC_COMPRESS_CTX = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_size_t,
    ctypes.c_size_t,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
)
"""The ctypes prototype of ``int blosc_compress_ctx(int clevel, int doshuffle, size_t
typesize, size_t nbytes, const void *src, void *dest, size_t destsize, const char
*compressor, size_t blocksize, int numinternalthreads)`` (the compressor's name given by
address): call the function at an address with it."""


def _crc32c_python(fn: int, data: int, size: int) -> int:
    """:func:`_crc32c_value` through ctypes (kernels run as Python)."""
    return int(_CRC32C(int(fn))(int(data), int(size)))


def _blosc_python(fn: int, src: int, dest: int, size: int) -> int:
    """:func:`_blosc_decompress_ctx` through ctypes (kernels run as Python)."""
    return int(_DECOMPRESS(int(fn))(int(src), int(dest), int(size), 1))


def _blosc_compress_python(
    fn: int,
    clevel: int,
    shuffle: int,
    typesize: int,
    nbytes: int,
    src: int,
    dest: int,
    destsize: int,
    cname: int,
) -> int:
    """:func:`_blosc_compress_ctx` through ctypes (kernels run as Python)."""
    args = (clevel, shuffle, typesize, nbytes, src, dest, destsize, cname)
    return int(BLOSC_COMPRESS_CTX(int(fn))(*(int(a) for a in args), 0, 1))


_crc32c_value: Any = intrinsic(_crc32c_typer, _crc32c_python)
crc32c_value: Any = _crc32c_value
"""``crc32c_value(fn, data, size)`` inside kernels: libcrc32c's function at address ``fn``."""
_blosc_decompress_ctx: Any = intrinsic(_blosc_typer, _blosc_python)
_blosc_compress_ctx: Any = intrinsic(_blosc_compress_typer, _blosc_compress_python)


def read_only(array: U8) -> U8:
    """``array``, or a read-only view of it: byte inputs reach the kernels writable from
    some callers and read-only from others, and each was a separate compilation.

    Examples
    --------
    >>> import numpy as np
    >>> read_only(np.zeros(3, np.uint8)).flags.writeable
    False
    """
    if not array.flags.writeable:
        return array
    view = array.view()
    view.flags.writeable = False
    return view


_NO_NAME = read_only(np.zeros(1, dtype=np.uint8))
"""The compressor name passed when blocks are stored raw (unused; read-only like a name)."""


def block_spans(
    sizes: I64, block_nbytes: int, total: int, blocks: int, pad_nbytes: int
) -> tuple[I64, I64] | None:
    """Where each row block of chunks of ``sizes`` bytes (back to back) starts, and how
    many of its bytes are rows (``block_nbytes`` but in a chunk's short last block); None
    unless the sizes are non-negative, add up to ``total``, make ``blocks`` blocks, and
    ``pad_nbytes`` covers every short last block.

    Examples
    --------
    >>> import numpy as np
    >>> starts, takes = block_spans(np.array([6, 4, 8], np.int64), 4, 18, 5, 4)
    >>> starts.tolist(), takes.tolist()
    ([0, 4, 6, 10, 14], [4, 2, 4, 4, 4])
    >>> block_spans(np.array([6, 4, 8], np.int64), 4, 18, 5, 0) is None
    True
    """
    starts = np.empty(blocks, np.int64)
    takes = np.empty(blocks, np.int64)
    fits = _block_spans(sizes, block_nbytes, total, pad_nbytes, starts, takes)
    return (starts, takes) if fits else None


@njit
def _block_spans(
    sizes: I64, block_nbytes: int, total: int, pad_nbytes: int, starts: I64, takes: I64
) -> bool:
    b = 0
    offset = 0
    for c in range(sizes.shape[0]):
        end = offset + sizes[c]
        if sizes[c] < 0 or end > total:
            return False
        for first in range(offset, end, block_nbytes):
            if b >= starts.shape[0]:
                return False
            starts[b] = first
            takes[b] = min(block_nbytes, end - first)
            if takes[b] < block_nbytes and pad_nbytes < block_nbytes:
                return False
            b += 1
        offset = end
    return b == starts.shape[0] and offset == total


def encode_blocks(
    rows: U8,
    sizes: I64,
    pad: U8,
    block_nbytes: int,
    out: U8,
    lengths: I64,
    blosc: tuple[int, int, int, U8] | None,
    crc_fn: int,
    blosc_fn: int,
) -> int:
    """Encode the row blocks of several chunks back to back into ``out``, each followed by
    its CRC32C.

    Parameters
    ----------
    rows
        The bytes of every chunk's rows, back to back (no padding).
    sizes
        ``(chunks,)`` bytes of each chunk. A chunk is cut into blocks of ``block_nbytes``;
        its last block, when shorter, is completed with the bytes of ``pad`` that follow
        (in a scratch block: the padding is never copied for the whole batch).
    pad
        One block of the fill value (``block_nbytes`` bytes), or empty when every chunk is
        a whole number of blocks.
    block_nbytes
        Bytes of one block (``R`` rows).
    out
        Destination, room for ``block_nbytes + BLOSC_MAX_OVERHEAD + 4`` bytes per block.
    lengths
        ``(blocks,)`` set to each stored block's length (CRC32C included); ``blocks`` is
        the sum over chunks of ``ceil(size / block_nbytes)``.
    blosc
        ``(clevel, shuffle, typesize, compressor name as NUL-terminated bytes)`` of
        ``blosc_compress_ctx``, or None to store the raw rows.
    crc_fn, blosc_fn
        Addresses of ``crc32c_value`` and ``blosc_compress_ctx`` (the latter unused without
        ``blosc``).

    Returns
    -------
    int
        Bytes written to ``out``, or -1 when C-Blosc failed on a block (or the sizes,
        ``pad`` or ``out`` do not fit the blocks).
    """
    found = block_spans(sizes, block_nbytes, rows.shape[0], lengths.shape[0], pad.shape[0])
    if found is None:
        return -1
    starts, takes = found
    last = np.array(pad[:block_nbytes], copy=True)  # a chunk's last rows, then the fill
    clevel, shuffle, typesize, cname = (0, 0, 0, _NO_NAME) if blosc is None else blosc
    spans = (starts, takes, read_only(pad), last, block_nbytes, out, lengths)
    codec = (clevel, shuffle, typesize, read_only(cname), blosc is not None)
    return int(_encode_blocks(rows, *spans, *codec, crc_fn, blosc_fn if blosc else 0))


@njit
def _encode_blocks(
    rows: U8,
    starts: I64,
    takes: I64,
    pad: U8,
    last: U8,
    block_nbytes: int,
    out: U8,
    lengths: I64,
    clevel: int,
    shuffle: int,
    typesize: int,
    cname: U8,
    compressed: bool,
    crc_fn: int,
    blosc_fn: int,
) -> int:
    dest = out.ctypes.data
    at = 0
    for b in range(starts.shape[0]):
        first, take = starts[b], takes[b]
        if take <= 0 or first + take > rows.shape[0]:
            return -1
        if at + block_nbytes + BLOSC_MAX_OVERHEAD + 4 > out.shape[0]:
            return -1
        whole = take == block_nbytes
        if not whole:  # the chunk's last rows, then the fill value
            copy_bytes(last, 0, rows, first, take)
        src = rows.ctypes.data + first if whole else last.ctypes.data
        if compressed:
            body = _blosc_compress_ctx(
                blosc_fn,
                clevel,
                shuffle,
                typesize,
                block_nbytes,
                src,
                dest + at,
                block_nbytes + BLOSC_MAX_OVERHEAD,
                cname.ctypes.data,
            )
        elif whole:
            body = block_nbytes
            copy_bytes(out, at, rows, first, body)
        else:
            body = block_nbytes
            copy_bytes(out, at, last, 0, body)
        if not whole:
            copy_bytes(last, 0, pad, 0, take)
        if body <= 0:
            return -1
        crc = _crc32c_value(crc_fn, dest + at, body)
        for k in range(4):
            out[at + body + k] = (crc >> (8 * k)) & 0xFF
        lengths[b] = body + 4
        at += body + 4
    return at


def decode_blocks(
    buffer: U8,
    starts: I64,
    lengths: I64,
    out: U8,
    slots: I64,
    block_nbytes: int,
    compressed: bool,
    crc_fn: int,
    blosc_fn: int,
    zstd_fn: int = 0,
    dctx: int = 0,
    unshuffle_fn: int = 0,
    bitunshuffle_fn: int = 0,
) -> int:
    """Check and decode stored row blocks into their slots of ``out``.

    Parameters
    ----------
    buffer
        Bytes holding the stored blocks.
    starts, lengths
        ``(k,)`` where each stored block lies in ``buffer`` (CRC32C included).
    out
        Flat uint8 destination; block ``i`` decodes to
        ``out[slots[i] * block_nbytes : (slots[i] + 1) * block_nbytes]``.
    slots
        ``(k,)`` destination slot of each block.
    block_nbytes
        Decoded bytes of one block (``R`` rows).
    compressed
        Whether blocks are Blosc frames (else the raw rows).
    crc_fn, blosc_fn
        Addresses of ``crc32c_value`` and ``blosc_decompress_ctx`` (the latter unused when
        not ``compressed``).
    zstd_fn, dctx
        Address of ``ZSTD_decompressDCtx`` and a Zstandard context of the calling thread:
        Blosc frames of Zstandard streams are then decompressed with it (and staged for
        C-Blosc: :func:`~zarr_vectors.kernels.zstd_frames.stage_frame`); 0 to leave every
        frame to C-Blosc.
    unshuffle_fn, bitunshuffle_fn
        Addresses of C-Blosc's ``blosc_internal_unshuffle`` and
        ``blosc_internal_bitunshuffle`` (0: unknown): with ``zstd_fn``, a frame of one
        stream per block is decoded straight into ``out``, unshuffled by them, without
        staging nor C-Blosc
        (:func:`~zarr_vectors.kernels.zstd_frames.decode_frame_into`).

    Returns
    -------
    int
        -1 when every block decoded, else the position of the first block that failed a
        check (checksum, Blosc header, decoded size); blocks before it are decoded.
    """
    return int(
        _decode_blocks(
            read_only(buffer),
            starts,
            lengths,
            out,
            slots,
            block_nbytes,
            compressed,
            crc_fn,
            blosc_fn,
            zstd_fn,
            dctx,
            (unshuffle_fn, bitunshuffle_fn),
        )
    )


@njit
def _decode_blocks(
    buffer: U8,
    starts: I64,
    lengths: I64,
    out: U8,
    slots: I64,
    block_nbytes: int,
    compressed: bool,
    crc_fn: int,
    blosc_fn: int,
    zstd_fn: int,
    dctx: int,
    unshuffles: tuple[int, int],
) -> int:
    base = buffer.ctypes.data
    dest = out.ctypes.data
    staged = np.empty(0, np.uint8)  # made at the first frame staged
    scratch = np.empty(0, np.uint8)  # made at the first shuffled frame decoded in place
    for i in range(starts.shape[0]):
        start, length, slot = starts[i], lengths[i], slots[i]
        if (
            length < 4
            or start < 0
            or start + length > buffer.shape[0]
            or slot < 0
            or (slot + 1) * block_nbytes > out.shape[0]
        ):
            return i
        if _crc32c_value(crc_fn, base + start, length) != CRC_RESIDUE:
            return i
        body = length - 4
        target = slot * block_nbytes
        if not compressed:
            if body != block_nbytes:
                return i
            copy_bytes(out, target, buffer, start, body)
            continue
        if body < _BLOSC_HEADER or _le32(buffer, start + 12) != body:
            return i
        if _le32(buffer, start + 4) != block_nbytes:
            return i
        frame = base + start
        if zstd_fn:  # decoded in place, without staging nor C-Blosc, when it can be
            if scratch.shape[0] < scratch_size(buffer, start) <= 2 * block_nbytes + 1024:
                scratch = np.empty(2 * block_nbytes + 1024, np.uint8)
            direct = decode_frame_into(
                buffer, start, body, out, target, zstd_fn, dctx, unshuffles, scratch
            )
            if direct < 0:
                return i
            if direct > 0:
                continue
            if not staged.shape[0]:
                staged = np.empty(block_nbytes + block_nbytes // 4 + 4096, np.uint8)
        if zstd_fn and 0 < staged_size(buffer, start) <= staged.shape[0]:
            staged_length = stage_frame(buffer, start, body, staged, zstd_fn, dctx)
            if staged_length < 0:
                return i
            if staged_length > 0:
                frame = staged.ctypes.data
        done = _blosc_decompress_ctx(blosc_fn, frame, dest + target, block_nbytes)
        if done != block_nbytes:
            return i
    return -1


def decode_chunk_blocks(
    chunk: U8,
    out: U8,
    wanted: U8,
    crc_fn: int,
    zstd_fn: int,
    dctx: int,
    unshuffle_fn: int,
    bitunshuffle_fn: int,
) -> int:
    """Check a stored chunk (one Blosc frame, then its CRC32C) whole and decode only the
    frame's blocks ``wanted`` marks into ``out``.

    A read of a few rows of a large plain array (the manifests of a few objects in an
    object index of megabytes) then decompresses the Blosc blocks holding them, not the
    chunk; the checksum still covers every stored byte.

    Parameters
    ----------
    chunk
        The stored chunk.
    out
        Flat uint8 destination of the chunk's decoded bytes; those of the blocks not wanted
        are left as they are.
    wanted
        Non-zero for each block of the frame to decode (one entry per block of the block
        size its header gives; a wrong count is 0 returned), or empty for every block.
    crc_fn, zstd_fn, dctx, unshuffle_fn, bitunshuffle_fn
        As for :func:`decode_blocks` (``zstd_fn`` not 0).

    Returns
    -------
    int
        1 when the wanted blocks are decoded; 0 when the chunk is sound but its frame is
        not one decoded block by block (see
        :func:`~zarr_vectors.kernels.zstd_frames.decode_frame_blocks_into`: decode it
        whole); -1 when the checksum, the header's sizes or a block is wrong.

    Examples
    --------
    >>> from numcodecs import Blosc
    >>> import google_crc32c
    >>> from zarr_vectors.store.native_blocks import native_block_functions
    >>> from zarr_vectors.store.zstd_contexts import zstd_context
    >>> rows = np.arange(4096, dtype=np.uint8)
    >>> frame = Blosc("zstd", 1, Blosc.SHUFFLE, blocksize=1024).encode(rows)
    >>> chunk = np.frombuffer(frame + google_crc32c.value(frame).to_bytes(4, "little"), np.uint8)
    >>> out = np.zeros(4096, np.uint8)
    >>> wanted = np.array([0, 0, 1, 0], np.uint8)
    >>> decode_chunk_blocks(chunk, out, wanted, native_block_functions()[0], *zstd_context())
    1
    >>> bool((out[2048:3072] == rows[2048:3072]).all()), int(out[:2048].max())
    (True, 0)
    """
    return int(
        _decode_chunk_blocks(
            read_only(chunk), out, wanted, crc_fn, zstd_fn, dctx, (unshuffle_fn, bitunshuffle_fn)
        )
    )


@njit
def _decode_chunk_blocks(
    chunk: U8,
    out: U8,
    wanted: U8,
    crc_fn: int,
    zstd_fn: int,
    dctx: int,
    unshuffles: tuple[int, int],
) -> int:
    length = chunk.shape[0]
    if length < _BLOSC_HEADER + 4:
        return -1
    if _crc32c_value(crc_fn, chunk.ctypes.data, length) != CRC_RESIDUE:
        return -1
    body = length - 4
    if _le32(chunk, 12) != body or _le32(chunk, 4) != out.shape[0]:
        return -1
    need = scratch_size(chunk, 0)
    if need > 2 * out.shape[0] + 1024:  # a block larger than the chunk: decoded whole
        return 0
    scratch = np.empty(need, np.uint8)
    done = decode_frame_blocks_into(
        chunk, 0, body, out, 0, zstd_fn, dctx, unshuffles, scratch, wanted
    )
    return -1 if done < 0 else (1 if done else 0)


def dense_blob_ranges(
    buffer: U8,
    starts: I64,
    lengths: I64,
    n_blocks: int,
    rows_per_block: int,
    prefix: U8,
    suffix: U8,
    n_fragments: int,
    crc_fn: int,
) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
    """Per-fragment ranges of whole fragment-blob shards of uncompressed row blocks.

    Shard ``i`` is ``buffer[starts[i] : starts[i] + lengths[i]]``: its stored blocks, then
    its index of ``n_blocks`` (offset, length) uint64 pairs and that index's CRC32C (spec
    §9.0). The stored blocks must be blocks ``0 .. s-1``, each ``R`` raw bytes and their
    CRC32C; back to back they hold an all-range blob of ``n_fragments`` fragments: the
    bytes ``prefix`` (header and bitmap), the int64 table of (start, count) pairs, the
    bytes ``suffix``, and only zeros after (spec §6).

    Returns
    -------
    range_starts, range_counts, ok
        ``(k, n_fragments)`` starts and counts, and per shard whether it passed every check
        (starts, counts and their sums non-negative); the rows of the others are undefined.
    """
    return _dense_blob_ranges(
        read_only(buffer),
        starts,
        lengths,
        n_blocks,
        rows_per_block,
        read_only(prefix),
        read_only(suffix),
        n_fragments,
        crc_fn,
    )


@njit
def _dense_blob_ranges(
    buffer: U8,
    starts: I64,
    lengths: I64,
    n_blocks: int,
    rows_per_block: int,
    prefix: U8,
    suffix: U8,
    n_fragments: int,
    crc_fn: int,
) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
    k = starts.shape[0]
    out_starts = np.zeros((k, n_fragments), np.int64)
    out_counts = np.zeros((k, n_fragments), np.int64)
    ok = np.zeros(k, np.bool_)
    blob = np.empty(n_blocks * rows_per_block, np.uint8)
    base = buffer.ctypes.data
    for i in range(k):
        stored = _blob_bytes(
            buffer, starts[i], lengths[i], n_blocks, rows_per_block, blob, base, crc_fn
        )
        if stored < 0:
            continue
        ok[i] = _parse_dense(
            blob[: stored * rows_per_block],
            prefix,
            suffix,
            n_fragments,
            out_starts[i],
            out_counts[i],
        )
    return out_starts, out_counts, ok


@njit
def _blob_bytes(
    buffer: U8,
    start: int,
    length: int,
    n_blocks: int,
    r: int,
    blob: U8,
    base: int,
    crc_fn: int,
) -> int:
    """Copy the stored raw blocks of one shard into ``blob``; their count, or -1."""
    index_nbytes = 16 * n_blocks + 4
    if length < index_nbytes or start < 0 or start + length > buffer.shape[0]:
        return -1
    at = start + length - index_nbytes
    if _crc32c_value(crc_fn, base + at, index_nbytes) != CRC_RESIDUE:
        return -1
    stored = 0
    for b in range(n_blocks):
        offset = _le64(buffer, at + 16 * b)
        if offset == -1:  # 2**64 - 1: not stored
            break
        nbytes = _le64(buffer, at + 16 * b + 8)
        if nbytes != r + 4 or offset < 0 or offset + nbytes > length - index_nbytes:
            return -1
        if _crc32c_value(crc_fn, base + start + offset, nbytes) != CRC_RESIDUE:
            return -1
        copy_bytes(blob, b * r, buffer, start + offset, r)
        stored += 1
    for b in range(stored, n_blocks):  # stored blocks must come first
        if _le64(buffer, at + 16 * b) != -1:
            return -1
    return stored


@njit
def _parse_dense(
    blob: U8, prefix: U8, suffix: U8, n: int, out_starts: I64, out_counts: I64
) -> bool:
    """Parse an all-range blob of ``n`` fragments (see :func:`dense_blob_ranges`)."""
    plen = prefix.shape[0]
    end = plen + 16 * n + suffix.shape[0]
    if end > blob.shape[0]:
        return False
    for j in range(plen):
        if blob[j] != prefix[j]:
            return False
    for j in range(suffix.shape[0]):
        if blob[end - suffix.shape[0] + j] != suffix[j]:
            return False
    for j in range(end, blob.shape[0]):
        if blob[j] != 0:
            return False
    for f in range(n):
        a = _le64(blob, plen + 16 * f)
        c = _le64(blob, plen + 16 * f + 8)
        if a < 0 or c < 0 or a + c < 0:
            return False
        out_starts[f] = a
        out_counts[f] = c
    return True


@njit
def _le64(buffer: U8, at: int) -> np.int64:
    """The little-endian int64 at ``buffer[at:at + 8]`` (wrapping like two's complement)."""
    value = np.uint64(0)
    for k in range(8):
        value |= np.uint64(buffer[at + k]) << np.uint64(8 * k)
    return np.int64(value)
