"""What the numeric arrays of a store would weigh under other Blosc settings.

Used by ``python -m benchmarks.store_bytes --codecs``. Every stored block of an array
(the row blocks of a sharded per-chunk array, found through the shard indexes; the chunks
of a global array such as ``cross_chunk_links`` or ``object_index/data``) is decoded as the
store holds it (Blosc, after its 4-byte CRC32C is cut off) and encoded again, block by
block as the writer would, under each of :data:`SETTINGS`. Sizes are the compressed blocks
alone (a stored block adds its CRC32C and the shard framing, the same in every setting);
times are the process CPU time of encoding every block once, the least of ``repeats``
passes.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
from numcodecs import Blosc, blosc

__all__ = ["SETTINGS", "codec_alternatives", "stored_blocks"]

SETTINGS: tuple[tuple[str, int, str], ...] = (
    ("zstd", 1, "bitshuffle"),
    ("zstd", 3, "bitshuffle"),
    ("zstd", 1, "shuffle"),
    ("zstd", 3, "shuffle"),
    ("zstd", 1, "noshuffle"),
    ("lz4", 5, "shuffle"),
    ("lz4", 5, "bitshuffle"),
)
"""``(cname, clevel, shuffle)`` of numcodecs Blosc (``clevel`` is Blosc's level)."""

_SHUFFLES = {"noshuffle": Blosc.NOSHUFFLE, "shuffle": Blosc.SHUFFLE, "bitshuffle": Blosc.BITSHUFFLE}
_MISSING = np.uint64(2**64 - 1)


def _files(array: Path) -> list[Path]:
    return sorted(Path(where, name) for where, _, names in os.walk(array / "c") for name in names)


def _shard_ranges(raw: bytes, entries: int) -> list[tuple[int, int]]:
    index = np.frombuffer(raw[-(16 * entries + 4) : -4], dtype="<u8").reshape(-1, 2)
    return [(int(a), int(n)) for a, n in index[index[:, 0] != _MISSING]]


def stored_blocks(array: str | os.PathLike[str]) -> list[np.ndarray]:
    """The decoded blocks of a Blosc-compressed array, in storage order.

    Parameters
    ----------
    array
        The directory of the array. A sharded array (one ``sharding_indexed`` codec) gives
        its stored row blocks; any other array its chunks. Raw (uncompressed) arrays give
        no blocks.

    Returns
    -------
    list of numpy.ndarray
        One 1-D array of the array's dtype per block.
    """
    meta = json.loads(Path(array, "zarr.json").read_text())
    dtype = np.dtype(meta["data_type"]).newbyteorder("<")
    codecs = meta["codecs"]
    sharded = codecs[0].get("name") == "sharding_indexed"
    inner = codecs[0]["configuration"]["codecs"] if sharded else codecs
    if not any(c.get("name") == "blosc" for c in inner):
        return []
    entries = 0
    if sharded:
        outer = meta["chunk_grid"]["configuration"]["chunk_shape"]
        shape = codecs[0]["configuration"]["chunk_shape"]
        entries = int(np.prod([o // i for o, i in zip(outer, shape, strict=True)]))
    blocks = []
    for path in _files(Path(array)):
        raw = path.read_bytes()
        ranges = _shard_ranges(raw, entries) if sharded else [(0, len(raw))]
        for start, length in ranges:
            decoded = blosc.decompress(raw[start : start + length - 4])
            blocks.append(np.frombuffer(decoded, dtype=dtype))
    return blocks


def _encode_all(codec: Blosc, blocks: list[np.ndarray]) -> tuple[int, float]:
    started = time.process_time()
    size = sum(len(codec.encode(block)) for block in blocks)
    return size, time.process_time() - started


def codec_alternatives(
    blocks: list[np.ndarray], repeats: int = 3
) -> dict[tuple[str, int, str], tuple[int, float]]:
    """Compressed bytes and encoding CPU seconds of ``blocks`` under each of :data:`SETTINGS`.

    Parameters
    ----------
    blocks
        Decoded blocks (:func:`stored_blocks`); each is compressed alone, with the item size
        of its dtype as Blosc's type size.
    repeats
        Encoding passes per setting; the least CPU time is kept.

    Returns
    -------
    dict
        ``(cname, clevel, shuffle) -> (bytes, CPU seconds)``.
    """
    out = {}
    for cname, clevel, shuffle in SETTINGS:
        codec = Blosc(cname=cname, clevel=clevel, shuffle=_SHUFFLES[shuffle])
        runs = [_encode_all(codec, blocks) for _ in range(repeats)]
        out[(cname, clevel, shuffle)] = (runs[0][0], min(t for _, t in runs))
    return out
