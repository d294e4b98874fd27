"""Row blocks compressed with Blosc Zstandard through one Zstandard context per thread
(the encode side of :mod:`zarr_vectors.store.zstd_contexts`).

C-Blosc 1.x makes and frees a Zstandard compression context for every stream it
compresses. :func:`encode_zstd` writes the same frames itself
(:func:`~zarr_vectors.kernels.zstd_encode.encode_zstd_blocks`) with the functions of the
C-Blosc library that encodes otherwise: its exported ``ZSTD_compressCCtx`` with a context
kept per thread, its internal shuffles (found by :mod:`~zarr_vectors.store.elf_symbols`),
and the frame header C-Blosc itself writes for the settings (:func:`_frame`). It is used
only after a self test that compares its frames with C-Blosc's; else, and for any call it
declines, C-Blosc encodes as before.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from zarr_vectors.kernels.row_blocks import BLOSC_COMPRESS_CTX, BLOSC_MAX_OVERHEAD, encode_blocks
from zarr_vectors.kernels.zstd_encode import encode_zstd_blocks
from zarr_vectors.store.elf_symbols import function_addresses

__all__ = ["ZstdEncoder", "encode_zstd", "zstd_encoder"]

_SHUFFLES = ("blosc_internal_shuffle", "blosc_internal_bitshuffle")
_EXPORTED = ("blosc_compress_ctx", "blosc_decompress_ctx", "blosc_getitem")
_MEMCPYED = 0x02
_MAX_CLEVEL = 8
"""C-Blosc compresses at Zstandard level ``2 * clevel - 1`` up to this Blosc level (9: the
library's maximum, not taken here)."""


class ZstdEncoder(NamedTuple):
    """The C functions :func:`encode_zstd` calls, from one C-Blosc library."""

    crc: int
    """``crc32c_value``."""
    compress: int
    """``blosc_compress_ctx``: the frame headers, and the self test's reference."""
    shuffle: int
    bitshuffle: int
    compress_cctx: int
    """``ZSTD_compressCCtx``."""
    create: Callable[[], Any]
    free: Callable[[Any], Any]


@functools.cache
def zstd_encoder(crc: int, compress: int, libraries: tuple[str, ...]) -> ZstdEncoder | None:
    """The functions of the library of ``libraries`` whose ``blosc_compress_ctx`` is at
    ``compress``, after a self test; None when it lacks one or fails.

    Examples
    --------
    >>> zstd_encoder(0, 0, ()) is None
    True
    """
    for path in libraries:
        try:
            library = ctypes.CDLL(path)
            if ctypes.cast(library.blosc_compress_ctx, ctypes.c_void_p).value != compress:
                continue
            cctx_fn = library.ZSTD_compressCCtx
            create, free = library.ZSTD_createCCtx, library.ZSTD_freeCCtx
        except (OSError, AttributeError):
            return None
        shuffles = function_addresses(path, _SHUFFLES, _EXPORTED)
        if shuffles is None:
            return None
        create.restype, create.argtypes = ctypes.c_void_p, []
        free.restype, free.argtypes = ctypes.c_size_t, [ctypes.c_void_p]
        address = ctypes.cast(cctx_fn, ctypes.c_void_p).value or 0
        shuffle, bitshuffle = (shuffles[name] for name in _SHUFFLES)
        found = ZstdEncoder(crc, compress, shuffle, bitshuffle, address, create, free)
        return found if address and _self_test(found) else None
    return None


class _Context:
    """A thread's Zstandard compression context (freed when the thread's locals go)."""

    def __init__(self, encoder: ZstdEncoder) -> None:
        self.pointer = int(encoder.create() or 0)
        if self.pointer:
            weakref.finalize(self, encoder.free, self.pointer)


_local = threading.local()


def _context(encoder: ZstdEncoder) -> int:
    """The calling thread's compression context (0 when none could be made)."""
    context = getattr(_local, "context", None)
    if context is None:
        context = _local.context = _Context(encoder)
    pointer: int = context.pointer
    return pointer


_ZSTD = np.frombuffer(b"zstd\0", dtype=np.uint8)
"""The compressor's name C-Blosc is given (by address)."""


@functools.cache
def _frame(
    compress: int, nbytes: int, clevel: int, shuffle: int, typesize: int
) -> tuple[np.ndarray, int, int] | None:
    """``(header, blocksize, level)`` of C-Blosc's frames of ``nbytes`` bytes with these
    settings: the first 12 bytes of the frame ``blosc_compress_ctx`` at ``compress`` writes
    for zeros (the header does not depend on the bytes but for the ``MEMCPYED`` flag of
    data that does not shrink), its block size and its Zstandard level. None when C-Blosc
    stores such frames whole (small or level 0) or the level is not ``2 * clevel - 1``."""
    if not 1 <= clevel <= _MAX_CLEVEL or nbytes < 1:
        return None
    zeros = np.zeros(nbytes, dtype=np.uint8)
    out = np.empty(nbytes + BLOSC_MAX_OVERHEAD, dtype=np.uint8)
    function = BLOSC_COMPRESS_CTX(compress)
    args = (zeros.ctypes.data, out.ctypes.data, out.nbytes, _ZSTD.ctypes.data, 0, 1)
    if function(clevel, shuffle, typesize, nbytes, *args) < BLOSC_MAX_OVERHEAD:
        return None
    header = out[:12].copy()
    blocksize = int(header[8:12].view("<u4")[0])
    # a frame the kernel's bounds assume: not stored whole, its block starts within it
    if header[2] & _MEMCPYED or blocksize < 4 or -(-nbytes // blocksize) * 4 > nbytes:
        return None
    header.flags.writeable = False
    return header, blocksize, 2 * clevel - 1


def encode_zstd(
    encoder: ZstdEncoder,
    rows: np.ndarray,
    sizes: np.ndarray,
    pad: np.ndarray,
    block_nbytes: int,
    out: np.ndarray,
    lengths: np.ndarray,
    settings: tuple[int, int, int],
) -> int | None:
    """:func:`~zarr_vectors.kernels.zstd_encode.encode_zstd_blocks` of the blocks (the
    arguments of :func:`~zarr_vectors.kernels.row_blocks.encode_blocks`: the chunks' bytes
    back to back, their sizes, one block of the fill value, the block size and the
    outputs; ``settings`` ``(clevel, shuffle code, typesize)`` of Blosc zstd), or None
    when this encoder declines: encode them with C-Blosc then."""
    clevel, shuffle, typesize = settings
    frame = _frame(encoder.compress, block_nbytes, clevel, shuffle, typesize)
    cctx = _context(encoder)
    if frame is None or not cctx:
        return None
    functions = (encoder.crc, encoder.shuffle, encoder.bitshuffle, encoder.compress_cctx)
    total = encode_zstd_blocks(rows, sizes, pad, block_nbytes, out, lengths, frame, functions, cctx)
    return total if total >= 0 else None


def _self_test(encoder: ZstdEncoder) -> bool:
    """Whether :func:`encode_zstd` gives C-Blosc's bytes for blocks of every shuffle and
    type size the writer uses, in one Blosc block or several, of data that compresses,
    that does not (streams stored raw), and that does not fit (a frame stored whole).

    Every call stays below the size from which a kernel not compiled yet compiles
    (:data:`~zarr_vectors.kernels._jit.SMALL_NBYTES`): a first small write compiles nothing.
    """
    rng = np.random.default_rng(7)
    smooth = (np.arange(16384, dtype="<f4") * np.float32(0.37)).view(np.uint8)
    noise = rng.integers(0, 256, 1 << 16, dtype=np.uint8)
    several = np.concatenate([smooth[:40000], noise[:26000]])  # 64 KiB Blosc blocks
    cases = [
        (smooth[:24576], 2, 1, 2, 4),
        (smooth[:12288], 1, 3, 2, 4),
        (np.concatenate([smooth[:8192], noise[:8192]]), 2, 3, 2, 8),
        (smooth[:16384], 2, 1, 1, 8),
        (noise[:16384], 2, 1, 0, 1),
        (several, 1, 1, 0, 1),
        (noise[:3000], 2, 3, 2, 4),
    ]
    for data, blocks, clevel, shuffle, typesize in cases:
        n = data.shape[0] // blocks
        rows, pad = data[: n * blocks], data[:0]
        sizes = np.array([rows.shape[0]], np.int64)
        size = blocks * (n + BLOSC_MAX_OVERHEAD + 4)
        ours, theirs = np.zeros(size, np.uint8), np.zeros(size, np.uint8)
        lengths, expected = np.zeros(blocks, np.int64), np.zeros(blocks, np.int64)
        settings = (clevel, shuffle, typesize, _ZSTD)
        done = encode_zstd(encoder, rows, sizes, pad, n, ours, lengths, settings[:3])
        total = encode_blocks(
            rows, sizes, pad, n, theirs, expected, settings, encoder.crc, encoder.compress
        )
        if done is None or done != total or not np.array_equal(ours[:done], theirs[:total]):
            return False
        if not np.array_equal(lengths, expected):
            return False
    return True
