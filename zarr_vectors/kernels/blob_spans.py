"""Where the stored blocks of many chunks' blobs lie, planned in one kernel call each way.

The fragment blobs of a read's chunks (spec §6, §9.0.1) lie in a few shards of several
chunks. :func:`stored_spans` finds, from the chunks' shard index entries, how many blocks
each chunk stores (its first ones) and the byte span they cover, which is fetched; once
fetched into one buffer (the spans back to back), :func:`blob_blocks` places every stored
block in it for one decoding call. Anything irregular is flagged, not raised: the per-chunk
decoders name the fault.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["LARGEST", "blob_blocks", "stored_spans"]

I64 = npt.NDArray[np.int64]

LARGEST = 2**62
"""Offsets and sizes from this on are left to the per-chunk decoders."""


def stored_spans(entries: I64) -> tuple[I64, I64, I64, bool]:
    """Per chunk, its stored blocks and their byte span ``[start, end)``.

    Parameters
    ----------
    entries
        ``(m, n_blocks, 2)`` int64 shard index entries (``(offset, nbytes)``; the uint64
        index viewed as int64, so a block not stored is -1).

    Returns
    -------
    stored, start, end, regular
        Per chunk the number of blocks stored and their span (``(0, 0)`` when none);
        ``regular`` is False when some chunk does not store exactly its first blocks, or
        names an offset or size from :data:`LARGEST` on (the spans are then meaningless).

    Examples
    --------
    >>> e = np.array([[[0, 10], [10, 6]], [[40, 8], [-1, -1]]], np.int64)
    >>> [a.tolist() for a in stored_spans(e)[:3]], stored_spans(e)[3]
    ([[2, 1], [0, 40], [16, 48]], True)
    >>> stored_spans(e[:, ::-1])[3]
    False
    """
    stored, start, end, regular = _stored_spans(entries)
    return stored, start, end, bool(regular)


@njit
def _stored_spans(entries: I64) -> tuple[I64, I64, I64, bool]:
    m, n_blocks = entries.shape[0], entries.shape[1]
    stored = np.zeros(m, np.int64)
    start = np.zeros(m, np.int64)
    end = np.zeros(m, np.int64)
    for i in range(m):
        n = 0
        while n < n_blocks and entries[i, n, 0] != -1:
            n += 1
        for b in range(n, n_blocks):
            if entries[i, b, 0] != -1:
                return stored, start, end, False  # a block stored after a missing one
        lo, hi = LARGEST, 0
        for b in range(n):
            offset, size = entries[i, b, 0], entries[i, b, 1]
            if offset < 0 or offset >= LARGEST or size < 0 or size >= LARGEST:
                return stored, start, end, False
            lo, hi = min(lo, offset), max(hi, offset + size)
        stored[i] = n
        start[i] = lo if n else 0
        end[i] = hi
    return stored, start, end, True


def blob_blocks(
    entries: I64, stored: I64, start: I64, lengths: I64
) -> tuple[I64, I64, I64, I64, I64]:
    """Every stored block of the chunks' spans, fetched back to back into one buffer.

    Parameters
    ----------
    entries, stored, start
        The chunks' entries and their :func:`stored_spans` (regular).
    lengths
        Per chunk, the bytes fetched of its span (0 for an empty one).

    Returns
    -------
    starts, sizes, chunk_of, number, bounds
        Per block, in chunk order: its first byte in the buffer (the buffer's length
        when it lies outside its chunk's bytes: the decoder refuses it), its size, its
        chunk and its number in the chunk; and the ``(m + 1,)`` first block of each
        chunk (the last entry is the number of blocks).

    Examples
    --------
    >>> e = np.array([[[0, 10], [10, 6]], [[40, 8], [-1, -1]]], np.int64)
    >>> stored, start, _, _ = stored_spans(e)
    >>> [a.tolist() for a in blob_blocks(e, stored, start, np.array([16, 8]))]
    [[0, 10, 16], [10, 6, 8], [0, 0, 1], [0, 1, 0], [0, 2, 3]]
    >>> blob_blocks(e, stored, start, np.array([16, 7]))[0].tolist()  # the last one short
    [0, 10, 23]
    """
    return _blob_blocks(entries, stored, start, lengths)


@njit
def _blob_blocks(
    entries: I64, stored: I64, start: I64, lengths: I64
) -> tuple[I64, I64, I64, I64, I64]:
    m = stored.shape[0]
    bounds = np.zeros(m + 1, np.int64)
    total = 0
    for i in range(m):
        bounds[i + 1] = bounds[i] + stored[i]
        total += lengths[i]
    n = bounds[m]
    starts = np.zeros(n, np.int64)
    sizes = np.zeros(n, np.int64)
    chunk_of = np.zeros(n, np.int64)
    number = np.zeros(n, np.int64)
    base = 0
    for i in range(m):
        for b in range(stored[i]):
            j = bounds[i] + b
            offset, size = entries[i, b, 0] - start[i], entries[i, b, 1]
            inside = offset >= 0 and offset + size <= lengths[i]
            starts[j] = base + offset if inside else total
            sizes[j] = size
            chunk_of[j] = i
            number[j] = b
        base += lengths[i]
    return starts, sizes, chunk_of, number, bounds
