"""One Zstandard decompression context per thread, for the native row-block decoder.

C-Blosc 1.x creates and frees a Zstandard context for every stream it decompresses (~10
us each, more than a small row block's decoding). The row-block kernel decompresses
Zstandard streams itself with a context kept here
(:func:`~zarr_vectors.kernels.zstd_frames.stage_frame`): ``ZSTD_decompressDCtx`` of the
same C-Blosc library the decoder uses (the library exports its bundled Zstandard), one
context per thread (a context must not be shared by threads at once), freed with its
thread. Used only after a self test; else frames go to C-Blosc whole, as before. With
the library's own unshuffle functions (internal: found in its symbol table,
:func:`~zarr_vectors.store.elf_symbols.function_addresses`), a frame of one stream per
block is decoded without staging nor C-Blosc
(:func:`~zarr_vectors.kernels.zstd_frames.decode_frame_into`), after its own self test.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any

import google_crc32c
import numpy as np
from numcodecs import Blosc

from zarr_vectors.kernels.row_blocks import decode_blocks
from zarr_vectors.store.elf_symbols import function_addresses
from zarr_vectors.store.native_blocks import blosc_libraries, native_block_functions

__all__ = ["zstd_context", "zstd_functions"]

_NONE = (0, 0, 0, 0)
"""What :func:`zstd_context` gives without usable functions: frames go to C-Blosc whole."""

_UNSHUFFLES = ("blosc_internal_unshuffle", "blosc_internal_bitunshuffle")
_EXPORTED = ("blosc_compress_ctx", "blosc_decompress_ctx", "blosc_getitem")


@functools.cache
def zstd_functions() -> tuple[int, Callable[..., Any], Callable[..., Any], int, int] | None:
    """``ZSTD_decompressDCtx``'s address, ``ZSTD_createDCtx`` and ``ZSTD_freeDCtx`` from
    the C-Blosc library of :func:`native_block_functions`, and the addresses of its
    :data:`_UNSHUFFLES` (0 and 0 when it does not name them or they fail the self test);
    None when that library does not export the Zstandard functions or they fail the self
    test."""
    native = native_block_functions()
    if native is None:
        return None
    for path in blosc_libraries():
        try:
            library = ctypes.CDLL(path)
            chosen = ctypes.cast(library.blosc_decompress_ctx, ctypes.c_void_p).value
            if chosen != native[1]:
                continue
            decompress = library.ZSTD_decompressDCtx
            create, free = library.ZSTD_createDCtx, library.ZSTD_freeDCtx
        except (OSError, AttributeError):
            continue
        create.restype, create.argtypes = ctypes.c_void_p, []
        free.restype, free.argtypes = ctypes.c_size_t, [ctypes.c_void_p]
        address = ctypes.cast(decompress, ctypes.c_void_p).value
        if not address or not _self_test(native, address, create, free, (0, 0)):
            return None
        found = function_addresses(path, _UNSHUFFLES, _EXPORTED) or {}
        unshuffles = (found.get(_UNSHUFFLES[0], 0), found.get(_UNSHUFFLES[1], 0))
        if 0 in unshuffles or not _self_test(native, address, create, free, unshuffles):
            unshuffles = (0, 0)
        return address, create, free, *unshuffles
    return None


class _Context:
    """A thread's Zstandard context (freed when the thread's locals go)."""

    def __init__(self) -> None:
        found = zstd_functions()
        pointer = found[1]() if found is not None else None
        self.pair: tuple[int, int, int, int] = _NONE
        if found is not None and pointer:
            self.pair = (found[0], int(pointer), found[3], found[4])
            weakref.finalize(self, found[2], pointer)


_local = threading.local()


def zstd_context() -> tuple[int, int, int, int]:
    """``(ZSTD_decompressDCtx address, context, unshuffle address, bitunshuffle address)``
    of the calling thread, the last arguments of
    :func:`~zarr_vectors.kernels.row_blocks.decode_blocks`; zeros when unusable (the
    unshuffles alone may be zeros).

    Examples
    --------
    >>> fn, dctx, unshuffle, bitunshuffle = zstd_context()
    >>> (fn == 0) == (dctx == 0)
    True
    """
    context = getattr(_local, "context", None)
    if context is None:
        context = _local.context = _Context()
    found: tuple[int, int, int, int] = context.pair
    return found


def _self_test(
    native: tuple[int, int],
    address: int,
    create: Callable[..., Any],
    free: Callable[..., Any],
    unshuffles: tuple[int, int],
) -> bool:
    """Whether frames of several Zstandard blocks, shuffled and bit shuffled (with a
    leftover block), decode to numcodecs' rows through a context (and ``unshuffles``), and
    a damaged stream is refused."""
    rows = (np.arange(6000, dtype="<f4") * np.float32(0.37)).reshape(2000, 3)
    rows[1000:] = np.random.default_rng(0).random((1000, 3), dtype=np.float32)
    blocks = []
    for shuffle in (Blosc.SHUFFLE, Blosc.BITSHUFFLE):
        codec = Blosc(cname="zstd", clevel=1, shuffle=shuffle, blocksize=4096)
        body = bytes(codec.encode(rows))
        blocks.append(body + google_crc32c.value(body).to_bytes(4, "little"))
    stored = np.frombuffer(b"".join(blocks), dtype=np.uint8).copy()
    lengths = np.array([len(b) for b in blocks], dtype=np.int64)
    starts = np.array([0, lengths[0]], dtype=np.int64)
    out = np.zeros((2, *rows.shape), dtype=rows.dtype)
    flat, size = out.reshape(-1).view(np.uint8), rows.nbytes
    pointer = create()
    if not pointer:
        return False
    try:
        slots = np.arange(2, dtype=np.int64)
        args = (flat, slots, size, True, *native, address, int(pointer), *unshuffles)
        if decode_blocks(stored, starts, lengths, *args) != -1:
            return False
        if not (np.array_equal(out[0], rows) and np.array_equal(out[1], rows)):
            return False
        # the magic number of the second frame's first Zstandard stream, checksum redone
        frame = stored[starts[1] : starts[1] + lengths[1]]
        frame[int(frame[16:20].view("<u4")[0]) + 4] ^= 0xFF
        frame[-4:] = np.frombuffer(
            google_crc32c.value(frame[:-4].tobytes()).to_bytes(4, "little"), dtype=np.uint8
        )
        return decode_blocks(stored, starts, lengths, *args) == 1
    finally:
        free(pointer)
