"""The shard indexes of one level's per-chunk arrays, fetched once and cached (spec §9.0).

A shard index lists where each row block of a shard lies. :class:`ShardIndexes` plans the
fetches of the indexes a read needs (one per shard, skipping those it holds), keeps what
was fetched, and answers which entries belong to a spatial chunk: all of a one-chunk shard's,
or the chunk's own slice of a shard of several chunks (spec §9.0.1). Entries are kept as
fetched (an array) and turned into lists only when a per-block Python loop asks for them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from itertools import chain
from operator import floordiv
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels.shard_slots import shard_slots
from zarr_vectors.store.io import ByteRange
from zarr_vectors.store.shards import RowLayout, ShardIndex, shard_key

__all__ = ["IndexRequest", "ShardIndexes", "chunk_array", "shard_of"]

IndexKey = tuple[str, tuple[int, ...]]
"""(array path, shard index) of a cached shard index (a shard is a chunk unless §9.0.1)."""

IndexRequest = tuple[IndexKey, str, ByteRange, RowLayout]
"""(cache key, shard key, suffix to fetch, layout) of a shard index to fetch."""


LISTED_FACTOR = 11
"""Bytes of an index's entries as Python lists over its array's: per entry of two uint64
(16 bytes), a list pointer (8), a two-item list (72) and two ints (~32 each)."""


def chunk_array(chunks: Sequence[tuple[int, ...]] | np.ndarray, ndim: int) -> np.ndarray:
    """``chunks`` (tuples of ``ndim`` ints, or an array) as an ``(m, ndim)`` int64 array.

    A list of tuples goes through one flat iterator (``np.fromiter``): ``np.asarray`` of a
    list of tuples converts element by element (~12 us for 38 chunks of a box, ~4 so).

    Examples
    --------
    >>> chunk_array([(1, 2), (3, 4)], 2).tolist()
    [[1, 2], [3, 4]]
    """
    if isinstance(chunks, np.ndarray):
        if chunks.dtype == np.int64 and chunks.ndim == 2 and chunks.shape[1] == ndim:
            return chunks  # as most callers pass them: no numpy step
        return np.asarray(chunks, dtype=np.int64).reshape(-1, ndim)
    flat = chain.from_iterable(chunks)
    return np.fromiter(flat, dtype=np.int64, count=len(chunks) * ndim).reshape(-1, ndim)


@functools.lru_cache(maxsize=16)
def _shard_grid(shard_chunks: tuple[int, ...]) -> np.ndarray:
    """``shard_chunks`` as an int64 array, made once per shape of shard (no kernel writes
    to it)."""
    return np.asarray(shard_chunks, dtype=np.int64)


def shard_of(layout: RowLayout, chunk: tuple[int, ...]) -> tuple[int, ...]:
    """Index of the shard holding ``chunk`` (spec §9.0.1), as a cache key."""
    if layout.chunks_per_shard == 1:
        return chunk
    return tuple(map(floordiv, chunk, layout.shard_chunks))  # no Python call per axis


class ShardIndexes:
    """The shard indexes of a level fetched so far, by array path and shard."""

    def __init__(self) -> None:
        # key and entries as lists (made from the arrays when first asked)
        self._lists: dict[IndexKey, tuple[str, list[list[int]] | None]] = {}
        self._arrays: dict[IndexKey, np.ndarray] = {}  # the same, as fetched
        # (path, chunk) -> key and the chunk's own entries as lists, once asked (§9.0.1)
        self._chunk_lists: dict[IndexKey, tuple[str, list[list[int]]]] = {}
        self._shard_keys: dict[IndexKey, IndexKey] = {}  # (path, chunk) -> (path, shard)
        self._last_slots: (
            tuple[tuple[Any, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] | None
        ) = None  # the last answer of slots

    def requests(
        self, wanted: Iterable[tuple[str, RowLayout, tuple[int, ...]]]
    ) -> list[IndexRequest]:
        """The indexes of (array path, layout, chunk) triples not cached, one per shard."""
        out: list[IndexRequest] = []
        seen: set[IndexKey] = set()
        shard_keys = self._shard_keys
        for path, layout, chunk in wanted:
            cache_key = shard_keys.get((path, chunk))
            if cache_key is None:
                cache_key = shard_keys[(path, chunk)] = (path, shard_of(layout, chunk))
            if cache_key in seen:
                continue
            seen.add(cache_key)
            if cache_key in self._lists:  # most recently used last (see trim)
                self._lists[cache_key] = self._lists.pop(cache_key)
                continue
            shard = cache_key[1]
            key = shard_key(path, np.asarray(shard), len(layout.row_shape))
            out.append((cache_key, key, -layout.tail_nbytes, layout))
        return out

    def chunk_requests(
        self,
        path: str,
        layout: RowLayout,
        chunks: Sequence[tuple[int, ...]] | np.ndarray,
    ) -> list[IndexRequest]:
        """:meth:`requests` of the chunks ``chunks`` (tuples, or an ``(m, D)`` array) of
        the array at ``path``; in a layout of several chunks per shard (spec §9.0.1),
        their shards are found by one kernel call
        (:func:`~zarr_vectors.kernels.shard_slots.shard_slots`), not chunk by chunk."""
        if layout.chunks_per_shard == 1:
            if isinstance(chunks, np.ndarray):
                chunks = [tuple(c) for c in chunks.tolist()]
            return self.requests((path, layout, chunk) for chunk in chunks)
        return self.shard_requests(path, layout, self.slots(layout, chunks)[0].tolist())

    def column_requests(
        self, arrays: Iterable[tuple[str, RowLayout]], chunks: np.ndarray
    ) -> list[IndexRequest]:
        """:meth:`chunk_requests` of the same ``(m, D)`` chunks in several arrays (path,
        layout): the shards of the chunks are found once per shape of shard, not once per
        array."""
        out: list[IndexRequest] = []
        shards: dict[tuple[int, ...], list[list[int]]] = {}
        for path, layout in arrays:
            if layout.chunks_per_shard == 1:
                out += self.chunk_requests(path, layout, chunks)
                continue
            found = shards.get(layout.shard_chunks)
            if found is None:
                found = shards[layout.shard_chunks] = self.slots(layout, chunks)[0].tolist()
            out += self.shard_requests(path, layout, found)
        return out

    def shard_requests(
        self, path: str, layout: RowLayout, shards: list[list[int]]
    ) -> list[IndexRequest]:
        """:meth:`requests` of the distinct ``shards`` (grid indices of shards, spec
        §9.0.1) of the array at ``path``."""
        out: list[IndexRequest] = []
        lists = self._lists
        row_ndim = len(layout.row_shape)
        for shard in shards:
            cache_key = (path, tuple(shard))
            if cache_key in lists:  # most recently used last (see trim)
                lists[cache_key] = lists.pop(cache_key)
                continue
            key = shard_key(path, shard, row_ndim)
            out.append((cache_key, key, -layout.tail_nbytes, layout))
        return out

    def slots(
        self, layout: RowLayout, chunks: Sequence[tuple[int, ...]] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`~zarr_vectors.kernels.shard_slots.shard_slots` of ``chunks`` (tuples,
        or an array) in ``layout``: the distinct shards, each chunk's slot among them and
        its place in its shard. The last answer is kept: a read asks it again for the
        same chunks, to plan the fetch of each column's indexes and then to use them (the
        columns of a level share one shard shape). Its arrays are not to be written."""
        coords = chunk_array(chunks, len(layout.shard_chunks))
        asked = (layout.shard_chunks, coords.shape, coords.tobytes())
        last = self._last_slots
        if last is not None and last[0] == asked:
            return last[1]
        found = shard_slots(coords, _shard_grid(layout.shard_chunks))
        self._last_slots = (asked, found)
        return found

    def holds(self, path: str, layout: RowLayout, chunks: np.ndarray) -> bool:
        """Whether the indexes of the shards holding the ``(m, D)`` ``chunks`` of the
        array at ``path`` are cached."""
        if not chunks.shape[0]:
            return True
        if layout.chunks_per_shard == 1:
            shards = chunks.tolist()
        else:
            shards = self.slots(layout, chunks)[0].tolist()
        lists = self._lists
        return all((path, tuple(shard)) in lists for shard in shards)

    def keep(
        self, requests: list[IndexRequest], tails: Sequence[bytes | None], *, strict: bool
    ) -> None:
        """Decode and cache fetched indexes; a missing shard raises only if ``strict``.

        Raises
        ------
        CorruptChunkError
            When ``strict`` and a shard is missing, or when an index does not decode.
        """
        for (cache_key, key, _, layout), tail in zip(requests, tails, strict=True):
            if tail is None:
                if strict:
                    raise CorruptChunkError(f"{key}: shard of an occupied chunk is missing")
                continue
            self.add(cache_key, key, layout.decode_index(tail, key))

    def trim(self, limit: int) -> bool:
        """Forget the least recently asked indexes until those kept hold at most about
        ``limit`` bytes (an index turned into lists counts :data:`LISTED_FACTOR` times its
        array's size), and the per-chunk memos (each chunk's entries as lists, its shard);
        whether an index was forgotten."""
        self._chunk_lists.clear()
        self._shard_keys.clear()
        held = {key: self._held(key) for key in self._lists}
        total = sum(held.values())
        dropped = False
        for key, size in held.items():
            if total <= limit:
                break
            del self._lists[key], self._arrays[key]
            total -= size
            dropped = True
        return dropped

    def held(self) -> int:
        """Estimated bytes of the indexes cached (see :meth:`trim`)."""
        return sum(self._held(key) for key in self._lists)

    def _held(self, cache_key: IndexKey) -> int:
        """Estimated bytes held for the index at ``cache_key``."""
        size = int(self._arrays[cache_key].nbytes)
        return size * LISTED_FACTOR if self._lists[cache_key][1] is not None else size

    def add(self, cache_key: IndexKey, key: str, index: np.ndarray) -> None:
        """Cache the decoded ``index`` of the shard stored at ``key``."""
        if cache_key in self._arrays:  # fetched again (rare): no chunk keeps an old list
            self._chunk_lists.clear()
        self._arrays[cache_key] = index
        self._lists[cache_key] = (key, None)  # listed on first use (entries)

    def entries(
        self, path: str, layout: RowLayout, chunk: tuple[int, ...], what: str = "shard"
    ) -> tuple[str, list[list[int]]]:
        """Shard key and the cached index entries of ``chunk`` in the array at ``path``.

        Raises
        ------
        CorruptChunkError
            When the chunk's shard was not found (its index is not cached); ``what`` names
            the array's role in the message.
        """
        listed_chunk = self._chunk_lists.get((path, chunk))
        if listed_chunk is not None:  # the usual case of a repeated read: one lookup
            return listed_chunk
        shard = shard_of(layout, chunk)
        found = self._lists.get((path, shard))
        if found is None:
            key = shard_key(path, np.asarray(chunk), len(layout.row_shape))
            raise CorruptChunkError(f"{key}: {what} of an occupied chunk is missing")
        key, listed = found
        if layout.chunks_per_shard != 1:  # list the chunk's entries only, not the shard's
            first = layout.local_chunk(chunk) * layout.n_blocks
            own = self._arrays[(path, shard)][first : first + layout.n_blocks].tolist()
            self._chunk_lists[(path, chunk)] = (key, own)
            return key, own
        if listed is None:
            listed = self._arrays[(path, shard)].tolist()
            self._lists[(path, shard)] = (key, listed)
        return key, listed

    def entry_array(
        self, path: str, layout: RowLayout, chunk: tuple[int, ...]
    ) -> tuple[str, ShardIndex]:
        """:meth:`entries`, as the array fetched when there is one (no list made)."""
        cache_key = (path, shard_of(layout, chunk))
        found = self._lists.get(cache_key)
        if found is None:
            return self.entries(path, layout, chunk)  # raises: the shard is missing
        return found[0], layout.chunk_entries(self._arrays[cache_key], chunk)

    def entry_arrays(
        self, path: str, layout: RowLayout, chunks: np.ndarray
    ) -> tuple[list[str], np.ndarray]:
        """:meth:`entry_array` of many chunks at once, for a layout of several chunks per
        shard (spec §9.0.1): the shard key of each chunk, and their entries stacked.

        Parameters
        ----------
        path, layout
            The array and its row layout (``chunks_per_shard > 1``).
        chunks
            ``(m, D)`` grid indices whose shards' indexes are cached.

        Returns
        -------
        keys, entries
            ``m`` shard keys, and the ``(m, n_blocks, 2)`` uint64 entries of each chunk.

        Raises
        ------
        CorruptChunkError
            When a chunk's shard was not found (its index is not cached).
        """
        chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, len(layout.shard_chunks))
        if not chunks.shape[0]:
            return [], np.empty((0, layout.n_blocks, 2), dtype=np.uint64)
        keys, index, slot, local = self.shard_table(path, layout, chunks)
        entries = index.reshape(index.shape[0], -1, layout.n_blocks, 2)[slot, local]
        return [keys[s] for s in slot.tolist()], entries

    def shard_table(
        self, path: str, layout: RowLayout, chunks: np.ndarray
    ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """The cached indexes of the shards holding ``chunks`` (``(m, D)``, several chunks
        per shard, spec §9.0.1), stacked: the shards' keys, their ``(s, chunks_per_shard
        * n_blocks, 2)`` uint64 entries, and per chunk its shard's slot and its place in
        the shard (:meth:`slots`).

        Raises
        ------
        CorruptChunkError
            When a chunk's shard was not found (its index is not cached).
        """
        shards, slot, local = self.slots(layout, chunks)
        keys, arrays = [], []
        for s, shard in enumerate(shards.tolist()):
            cache_key = (path, tuple(shard))
            found = self._lists.get(cache_key)
            if found is None:  # raises: the shard is missing
                self.entries(path, layout, tuple(chunks[int(np.argmax(slot == s))].tolist()))
            assert found is not None
            keys.append(found[0])
            arrays.append(self._arrays[cache_key])
        # one layout: every index has one shape (np.array stacks them ~2x faster than np.stack)
        index = arrays[0][None] if len(arrays) == 1 else np.array(arrays)
        return keys, index, slot, local

    def shards(self, path: str) -> set[tuple[int, ...]]:
        """The shards of the array at ``path`` whose indexes are cached."""
        return {shard for p, shard in self._lists if p == path}
