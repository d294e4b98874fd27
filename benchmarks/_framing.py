"""Where the bytes of a sharded per-chunk array go: payload against framing.

Used by ``python -m benchmarks.store_bytes --framing``. A shard of a per-chunk array (spec
§9.0, §9.0.1, §9.0.2) is ``row blocks ‖ place record ‖ index ‖ CRC32C of the index``; every
stored row block is its encoded bytes followed by a 4-byte CRC32C, and a Blosc-compressed
block starts with a 16-byte Blosc header. :func:`framing_split` sums these parts over the
shards of one array, so that a store's size can be split into what its data compress to
(the payload) and what the layout adds per shard, per chunk of the shard (16 bytes of index
per possible row block, stored or not) and per stored block.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BLOSC_HEADER", "Framing", "framing_split"]

BLOSC_HEADER = 16
"""Bytes of the header that starts every Blosc-compressed block."""

_MISSING = np.uint64(2**64 - 1)
_PLACE_RECORD = 12
_CRC = 4
_ENTRY = 16


@dataclass(frozen=True)
class Framing:
    """The bytes of one array's shard files, by part (their sum is the files' size)."""

    shards: int
    """Shard files."""
    entries: int
    """Index entries over all shards (row blocks the shards could hold)."""
    blocks: int
    """Row blocks stored."""
    index: int
    """Shard indexes with their CRC32C."""
    place: int
    """Place records (format 1.2 and later; 0 before)."""
    headers: int
    """Blosc headers of the stored blocks (0 for raw blocks)."""
    crc: int
    """CRC32C of the stored blocks."""
    payload: int
    """Everything else: the blocks' encoded data after their Blosc header."""

    @property
    def total(self) -> int:
        """Bytes of the files."""
        return self.index + self.place + self.headers + self.crc + self.payload


def _entries_per_shard(meta: dict[str, Any]) -> int:
    conf = meta["codecs"][0]["configuration"]
    outer = meta["chunk_grid"]["configuration"]["chunk_shape"]
    inner = conf["chunk_shape"]
    ratios = [o // i for o, i in zip(outer, inner, strict=True)]
    return int(np.prod(ratios))


def framing_split(array: str | os.PathLike[str]) -> Framing:
    """Split the files of a sharded per-chunk array into payload and framing.

    Parameters
    ----------
    array
        The directory of the array (holding its ``zarr.json`` and ``c/``), a store of this
        library's layout (one ``sharding_indexed`` codec, index at the end).

    Returns
    -------
    Framing
        The parts, summed over the array's shard files.
    """
    meta = json.loads(Path(array, "zarr.json").read_text())
    per_shard = _entries_per_shard(meta)
    inner = meta["codecs"][0]["configuration"]["codecs"]
    header = BLOSC_HEADER if any(c.get("name") == "blosc" for c in inner) else 0
    tail = _ENTRY * per_shard + _CRC
    shards = blocks = place = size = 0
    for where, _, names in os.walk(Path(array, "c")):
        for name in names:
            raw = Path(where, name).read_bytes()
            index = np.frombuffer(raw[-tail:-_CRC], dtype="<u8").reshape(-1, 2)
            stored = index[index[:, 0] != _MISSING]
            end = int((stored[:, 0] + stored[:, 1]).max()) if len(stored) else 0
            shards += 1
            blocks += len(stored)
            place += len(raw) - tail - end
            size += len(raw)
    index_bytes = shards * tail
    headers, crc = blocks * header, blocks * _CRC
    payload = size - index_bytes - place - headers - crc
    return Framing(shards, shards * per_shard, blocks, index_bytes, place, headers, crc, payload)
