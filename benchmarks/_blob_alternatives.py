"""What the fragment-blob arrays of an object store would weigh in other encodings.

Used by ``python -m benchmarks.store_bytes --alternatives``. Each chunk's level-0 blob
(ZVFG, spec §6, run form: one ``(int64 start, int64 count)`` range per fragment) is
compressed as one block, as format 1.4 stores it (spec §9.0.4), under:

- ``1.4``: what the store holds now, Blosc zstd 3, bit shuffle over 8-byte items, in a
  block of ``b`` bytes (the array's inner chunk) — the figure to compare the others with;
- ``byte shuffle``: the same blob and block with byte shuffle instead of bit shuffle;
- ``counts only``: a hypothetical run-form blob without the ``start`` column (starts are
  the running sum of the counts at level 0, spec §6.5): a 16-byte header and the F counts
  as unsigned integers of the narrowest of 1, 2 or 4 bytes that holds the largest count of
  the array, Blosc zstd 3 with byte shuffle, in a block of the smallest power of two (at
  least 256) that holds the longest such blob.

Sizes are the compressed blocks alone: a stored block adds 4 bytes of CRC32C and 16 bytes
of shard index entry, the same in every encoding. No such layout exists in the format; the
figures size the saving a format change would buy.
"""

from __future__ import annotations

import struct

import numpy as np
import zarr
from numcodecs import Blosc

from zarr_vectors.format.fragment_decoding import decode_dense_ranges

__all__ = ["ENCODINGS", "blob_alternatives"]

ENCODINGS = ("1.4", "byte shuffle", "counts only")
"""The encodings :func:`blob_alternatives` sizes, in its order."""


def blob_alternatives(array: str) -> dict[str, int]:
    """Compressed bytes of the blobs of a ``vertex_fragments`` or ``link_fragments`` array.

    Parameters
    ----------
    array
        The directory of the array in a store of ours (level 0, object kind).

    Returns
    -------
    dict
        Encoding name (:data:`ENCODINGS`) -> sum over the chunks of the compressed block.
    """
    blocks = np.asarray(zarr.open_array(array, mode="r")[...])
    rows = [row for row in blocks.reshape(-1, blocks.shape[-1]) if row[:4].any()]
    counts = [decode_dense_ranges(row)[1] for row in rows]
    width = _narrowest(max((int(c.max()) for c in counts if c.size), default=0))
    lean = [_counts_blob(c, width) for c in counts]
    lean_block = max(256, 1 << (max(len(x) for x in lean) - 1).bit_length()) if lean else 256
    bit = Blosc(cname="zstd", clevel=3, shuffle=Blosc.BITSHUFFLE)
    byte = Blosc(cname="zstd", clevel=3, shuffle=Blosc.SHUFFLE)
    return {
        "1.4": sum(len(bit.encode(row.view("<u8"))) for row in rows),
        "byte shuffle": sum(len(byte.encode(row.view("<u8"))) for row in rows),
        "counts only": sum(len(byte.encode(_padded(x, lean_block, width))) for x in lean),
    }


def _narrowest(largest: int) -> int:
    return next(w for w in (1, 2, 4) if largest < 256**w)


def _counts_blob(counts: np.ndarray, width: int) -> bytes:
    header = struct.pack("<IHHII", 0x5A564647, 2, width, counts.size, 0)
    return header + counts.astype(f"<u{width}").tobytes()


def _padded(blob: bytes, block: int, width: int) -> np.ndarray:
    return np.frombuffer(blob + bytes(block - len(blob)), dtype=f"<u{width}")
