"""Fragment blobs held decoded from their codecs but not parsed, per blob array and chunk.

A read by id needs a few fragments of each chunk it meets; parsing a chunk's fragment
record (format 1.6, spec §6.9) or counts-form blob (format 1.5, §6.8) whole wrote a row
per fragment of the chunk, most of the cost of a cold read. A reader holds the decoded
bytes instead (a tenth of the parsed rows' size) and parses only what each read asks
(:func:`~zarr_vectors.read.blob_batches.needed_record_ranges`). Blobs fetched together
share one buffer; blobs held from several fetches are joined once into one buffer when a
read asks them together, so the kernels take one buffer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import attrgetter, is_
from typing import NamedTuple

import numpy as np

__all__ = ["HeldBlob", "HeldBlobs", "held_blobs"]

Chunk = tuple[int, ...]


class HeldBlob(NamedTuple):
    """A chunk's blob: ``buffer[begin:end]`` (the blob and its zero padding), and its
    shard key (for error messages)."""

    buffer: np.ndarray
    begin: int
    end: int
    key: str


_BUFFER, _BEGIN, _END, _KEY = map(attrgetter, ("buffer", "begin", "end", "key"))


def held_blobs(
    buffer: np.ndarray, begins: Iterable[int], ends: Iterable[int], keys: Iterable[str]
) -> list[HeldBlob]:
    """The blobs ``buffer[begins[i]:ends[i]]`` of shard keys ``keys``, made without a
    Python call per blob (``tuple.__new__``, not the named tuple's ``__new__``).

    Examples
    --------
    >>> held_blobs(np.arange(4, dtype=np.uint8), [0, 1], [1, 4], ["a", "b"])[1][1:]
    (1, 4, 'b')
    """
    fields = zip(repeat(buffer), begins, ends, keys)
    return list(map(tuple.__new__, repeat(HeldBlob), fields))


def _one_buffer(blobs: list[HeldBlob]) -> list[HeldBlob]:
    """``blobs`` copied, in order, into one new buffer; blobs that follow each other in
    one buffer are copied as one slice (those of one fetch usually do)."""
    pieces: list[np.ndarray] = []
    buffer, begin, end = None, 0, 0
    for blob in blobs:
        if blob.buffer is buffer and blob.begin == end:
            end = blob.end
            continue
        if buffer is not None:
            pieces.append(buffer[begin:end])
        buffer, begin, end = blob.buffer, blob.begin, blob.end
    if buffer is not None:
        pieces.append(buffer[begin:end])
    sizes = np.fromiter(map(_END, blobs), np.int64, len(blobs))
    sizes -= np.fromiter(map(_BEGIN, blobs), np.int64, len(blobs))
    ends = np.cumsum(sizes)
    joined = np.concatenate(pieces) if pieces else np.empty(0, np.uint8)
    return held_blobs(joined, (ends - sizes).tolist(), ends.tolist(), map(_KEY, blobs))


class HeldBlobs:
    """The held blobs of one level, least recently used first."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, Chunk], HeldBlob] = {}

    def missing(self, name: str, chunks: Iterable[Chunk]) -> list[Chunk]:
        """The distinct ``chunks`` whose blob of array ``name`` is not held, in order."""
        return [c for c in dict.fromkeys(chunks) if (name, c) not in self._held]

    def keep(self, name: str, chunks: Sequence[Chunk], blobs: Sequence[HeldBlob]) -> None:
        """Hold the blobs of array ``name`` of ``chunks``."""
        self._held.update(zip(zip(repeat(name), chunks), blobs, strict=True))  # no frame per blob

    def joined(
        self, name: str, chunks: Sequence[Chunk]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """The held blobs of array ``name`` of ``chunks`` (distinct, all held) in one
        buffer: the buffer, each blob's bounds in it and its shard key. Blobs held in
        several buffers are copied into one, in which they are then held.

        Examples
        --------
        >>> held = HeldBlobs()
        >>> held.keep("b", [(0,), (1,)], [HeldBlob(np.arange(4, dtype=np.uint8), 1, 3, "k0"),
        ...                               HeldBlob(np.ones(2, np.uint8), 0, 2, "k1")])
        >>> buffer, begins, ends, keys = held.joined("b", [(1,), (0,)])
        >>> buffer.tolist(), begins.tolist(), ends.tolist(), keys
        ([1, 1, 1, 2], [0, 2], [2, 4], ['k1', 'k0'])
        """
        held = self._held
        keys = list(zip(repeat(name), chunks))
        blobs = list(map(held.pop, keys))  # moved to the end: most recently used last
        held.update(zip(keys, blobs, strict=True))
        buffers = list(map(_BUFFER, blobs))
        if not all(map(is_, buffers, repeat(buffers[0] if blobs else None))):
            blobs = _one_buffer(blobs)
            self.keep(name, chunks, blobs)
        buffer = blobs[0].buffer if blobs else np.empty(0, np.uint8)
        begins = np.fromiter(map(_BEGIN, blobs), dtype=np.int64, count=len(blobs))
        stops = np.fromiter(map(_END, blobs), dtype=np.int64, count=len(blobs))
        return buffer, begins, stops, list(map(_KEY, blobs))

    def nbytes(self) -> int:
        """The bytes of the blobs held (their padding included)."""
        return sum(b.end - b.begin for b in self._held.values())

    def trim(self, excess: int) -> int:
        """Forget the least recently used blobs until ``excess`` bytes are freed or none
        is held; the bytes freed."""
        freed = 0
        for key in list(self._held):
            if freed >= excess:
                break
            blob = self._held.pop(key)
            freed += blob.end - blob.begin
        return freed

    def get(self, name: str, chunk: Chunk) -> HeldBlob:
        """The held blob of array ``name`` of ``chunk`` (a KeyError if none)."""
        return self._held[(name, chunk)]
