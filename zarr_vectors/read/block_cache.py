"""Decoded row blocks of one open store, kept for the next query within a byte budget.

A notebook user pans around a data set: the next box mostly meets the chunks the last one
met. :class:`BlockCache` keeps the row blocks the box reads decoded (spec §9.0: ``R`` rows of
one per-chunk array, the unit a shard stores), least recently used out first, so a box asked
again, or one that overlaps the last, takes those blocks from memory instead of reading and
decoding them again. One cache serves every level and restricted view of an open store
(:func:`zarr_vectors.open` makes it, ``cache_bytes=`` sets its budget, 0 turns it off).

The reads that go through it are those of every row of given row runs by the box-read kernels
(:meth:`~zarr_vectors.read.point_reads.PointReads.read_selected` without a selector: the
vertices, attributes and links of object box queries and reads by id, up to 2 MiB of rows);
point-cloud box reads, which select rows among decoded blocks, and larger reads do not.

The blocks of one array lie back to back in one pool (:class:`_Pool`), found by block number
with one binary search for all the blocks of a read; the missing ones are decoded straight
into the pool, and the rows asked are copied out run by run by one kernel call, so a read of
hundreds of blocks costs a few numpy calls, not a Python step or a whole-block copy per block.
A pool grows by doubling within the budget, in bytes borrowed from the reads' spare buffers
(given back when the cache is dropped); when the budget is reached, the pools of the arrays
used least recently are dropped whole, then the pool's own least recently used blocks are
replaced.

A cached block is the block of the store version the handle opened: the handle checks the
version after every data read (spec §12.4) and raises, or with ``refresh=True`` reopens the
store with a new, empty cache, exactly as for its cached shard indexes; so no block of
another version is ever returned. Reads copy rows out of the pools: no result shares their
memory.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from zarr_vectors.kernels.block_lookup import (
    add_blocks,
    cached_rows_in_box,
    claim_slots,
    copy_cached_runs,
    locate_blocks,
)
from zarr_vectors.kernels.slot_runs import copy_slot_runs
from zarr_vectors.read import _read_plans as read_plans

__all__ = ["DEFAULT_CACHE_BYTES", "BlockCache", "Decode", "SlotBlocks"]

DEFAULT_CACHE_BYTES = 128 * 2**20
"""Budget of an open store's cache of decoded row blocks (``zv.open(cache_bytes=...)``)."""

T = TypeVar("T")

_SLOT_OVERHEAD = 24
"""Bytes a pool holds per block besides its rows: its number, place and last use (int64)."""


_NONE = np.empty(0, dtype=np.int64)
"""The numbers, places and uses of a pool of no slot (shared: nothing is written to an
array of no element, and new arrays replace it as blocks are added)."""


class _Pool:
    """The cached blocks of one array, ``block_bytes`` each, back to back in :attr:`data`.

    ``numbers`` (ascending) are the cached block numbers and ``place`` the pool slot of
    each; ``used[s]`` is the tick of slot ``s``'s last use, -1 when it is free.
    """

    def __init__(self, block_bytes: int) -> None:
        self.block_bytes = block_bytes
        self.buffer: np.ndarray | None = None  # the spare bytes data lies in
        self.data = np.empty((0, block_bytes), dtype=np.uint8)
        self.numbers = self.place = self.used = _NONE  # replaced, never written in place

    @property
    def nbytes(self) -> int:
        """Bytes allocated (every slot, free or not)."""
        return int(self.used.shape[0]) * (self.block_bytes + _SLOT_OVERHEAD)

    @property
    def last_use(self) -> int:
        """Tick of the most recent use of any block (-1: none)."""
        return int(self.used.max(initial=-1))

    def locate(self, numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per number whether it is cached, and the pool slots of the hits."""
        at = np.searchsorted(self.numbers, numbers)
        at = np.minimum(at, max(self.numbers.shape[0] - 1, 0))
        hits = self.numbers[at] == numbers if self.numbers.shape[0] else np.zeros_like(at, bool)
        return hits, self.place[at[hits]]

    def grow(self, slots: int) -> None:
        """Add ``slots`` free slots (in bytes taken from the reads' spare buffers, so a
        handle opened after another one was dropped fills memory already faulted in)."""
        n = self.data.shape[0] + slots
        buffer = read_plans.SPARE.take(n * self.block_bytes)
        data = buffer[: n * self.block_bytes].reshape(n, self.block_bytes)
        used = np.full(slots, -1, dtype=np.int64)  # the new slots are free
        if self.data.shape[0]:  # else the pool's first slots: nothing to copy
            data[: self.data.shape[0]] = self.data
            used = np.concatenate([self.used, used])
        self.release()
        self.buffer, self.data, self.used = buffer, data, used

    def release(self) -> None:
        """Give the pool's bytes back to the spare buffers (the pool is not used again,
        or its data was copied elsewhere)."""
        if self.buffer is not None:
            read_plans.SPARE.give(self.buffer)
            self.buffer = None

    def claim(self, n: int, tick: int) -> np.ndarray:
        """``n`` slots to write, free ones first, then those used least recently but
        not at ``tick`` (their blocks forgotten); none, nothing changed, when the pool
        has fewer (:func:`claim_slots`)."""
        if not self.numbers.shape[0]:  # no slot holds a block: every one is free, in order
            return np.arange(n if n <= self.used.shape[0] else 0, dtype=np.int64)
        slots, self.numbers, self.place = claim_slots(self.numbers, self.place, self.used, n, tick)
        return slots

    def add(self, numbers: np.ndarray, slots: np.ndarray, tick: int) -> None:
        """Record that blocks ``numbers`` (distinct, not cached) now lie in ``slots``."""
        self.numbers, self.place = add_blocks(
            self.numbers, self.place, self.used, numbers, slots, tick
        )

    def rows(self, dtype: np.dtype[Any], row_shape: tuple[int, ...]) -> np.ndarray:
        """The pool's blocks as rows of ``dtype`` and ``row_shape``, back to back (a view)."""
        return self.data.view(dtype).reshape(-1, *row_shape)  # a block is whole rows


Decode = Callable[[np.ndarray, np.ndarray, np.ndarray], None]
"""``decode(slots, places, rows)``: decode the blocks of a read's ``slots`` into ``rows``
at the row blocks ``places`` (raising when a block is missing or damaged)."""


class BlockCache:
    """Decoded row blocks by array path and block number, least recently used forgotten
    first, holding at most ``budget`` bytes.

    Block numbers are ``flat chunk index * blocks per chunk + block``, so one number names
    one block of one array.

    Parameters
    ----------
    budget
        Bytes the pools may allocate (rows and 24 bytes of bookkeeping per block); 0 keeps
        nothing.

    Examples
    --------
    >>> import numpy as np
    >>> cache = BlockCache(budget=2**20)
    >>> def decode(slots, places, rows):  # block b holds rows of value b, 2 rows a block
    ...     rows.reshape(-1, 2)[places] = np.asarray(numbers)[slots, None]
    >>> numbers = np.array([7, 3])
    >>> out = np.empty(3, dtype=np.int64)
    >>> cache.read_runs("0/vertices", numbers, 2, (np.array([1]), np.array([3])), out, decode)
    True
    >>> out.tolist(), len(cache)
    ([7, 3, 3], 2)
    """

    def __init__(self, budget: int) -> None:
        self.budget = int(budget)
        self._pools: dict[str, _Pool] = {}
        self._tick = 0
        self._lock = threading.Lock()
        weakref.finalize(self, _release, self._pools)  # a dropped handle's bytes reused

    def __getstate__(self) -> dict[str, Any]:
        """Only the budget pickles (dask ships readers to workers): a copy starts empty."""
        return {"budget": self.budget}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["budget"])  # type: ignore[misc]

    @property
    def nbytes(self) -> int:
        """Bytes the pools hold now, at most :attr:`budget`."""
        return sum(pool.nbytes for pool in self._pools.values())

    def __len__(self) -> int:
        """Number of blocks cached."""
        return sum(int(pool.numbers.shape[0]) for pool in self._pools.values())

    def clear(self) -> None:
        """Forget every block."""
        with self._lock:
            _release(self._pools)

    def cached(self, path: str, numbers: np.ndarray) -> np.ndarray:
        """Per block number of the array at ``path``, whether it is cached now."""
        with self._lock:
            pool = self._pools.get(path)
            if pool is None:
                return np.zeros(numbers.shape[0], dtype=bool)
            return pool.locate(numbers)[0]

    def read_runs(
        self,
        path: str,
        numbers: np.ndarray,
        r: int,
        runs: tuple[np.ndarray, np.ndarray],
        out: np.ndarray,
        decode: Decode,
    ) -> bool:
        """Rows of blocks, cached or decoded into the cache, copied run by run into ``out``.

        The blocks not cached are decoded by ``decode`` straight into the cache (no block
        is copied whole); then only the rows asked are copied out.

        Parameters
        ----------
        path
            The array's path in the store.
        numbers
            The block number of every slot of the read (distinct).
        r
            Rows per block.
        runs
            ``(first, length)``: run ``q`` is ``length[q]`` rows from row ``first[q]`` of
            the slots' rows (slot ``s`` is rows ``s * r`` to ``(s + 1) * r``), written one
            run after another into ``out``.
        out
            Room for the rows of every run (``length.sum()`` rows of the column's dtype and
            row shape).
        decode
            Decodes the blocks of the slots not cached (see :data:`Decode`).

        Returns
        -------
        bool
            False, with nothing done, when the budget cannot hold the read's blocks.
        """

        def copy(rows: np.ndarray, place: np.ndarray) -> bool:
            copy_slot_runs(rows, place, r, *runs, out)
            return True

        return self.visit(path, numbers, r, (out.dtype, out.shape[1:]), decode, copy) is not None

    def visit(
        self,
        path: str,
        numbers: np.ndarray,
        r: int,
        spec: tuple[np.dtype[Any], tuple[int, ...]],
        decode: Decode,
        use: Callable[[np.ndarray, np.ndarray], T],
    ) -> T | None:
        """``use(rows, place)`` of blocks cached or decoded into the cache: what
        :meth:`read_runs` does, with ``use`` in place of the copy.

        ``rows`` are the pool's rows (of the column's ``spec``: dtype and row shape, ``r``
        a block) and ``place[s]`` the block of slot ``s`` among them; ``use`` runs under
        the cache's lock and must not keep ``rows``. None, with nothing done, when the
        budget cannot hold the read's blocks.
        """
        block_bytes = r * spec[0].itemsize * math.prod(spec[1])
        with self._lock:
            pool = self._pools.get(path)
            if pool is None:
                pool = self._pools[path] = _Pool(block_bytes)
            self._tick += 1
            tick = self._tick
            if pool.numbers.shape[0]:  # the read's own blocks are marked used: replaced last
                hits, place, n_missing = locate_blocks(
                    pool.numbers, pool.place, pool.used, numbers, tick
                )
            else:  # the array's first read (a cold query's): no block to look up
                hits, n_missing = None, numbers.shape[0]
                place = np.empty(n_missing, dtype=np.int64)
            if n_missing:
                missing = np.arange(n_missing) if hits is None else np.flatnonzero(~hits)
                self._make_room(path, pool, n_missing)
                free = pool.claim(n_missing, tick)  # free until added: a failure keeps none
                if free.shape[0] < n_missing:
                    return None
                rows = pool.rows(*spec)
                decode(missing, free, rows)
                pool.add(numbers[missing], free, tick)
                place[missing] = free
                return use(rows, place)
            return use(pool.rows(*spec), place)

    def may_hold(self, path: str, n_chunks: int) -> bool:
        """Whether the array at ``path`` may have the blocks of a read of ``n_chunks``
        chunks cached: False when it has fewer blocks cached (each chunk read needs one at
        least), so that a cold read does not look them up block by block first."""
        pool = self._pools.get(path)
        return pool is not None and pool.numbers.shape[0] >= n_chunks

    def copy_runs(
        self,
        path: str,
        chunk_flat: np.ndarray,
        runs: tuple[np.ndarray, np.ndarray, np.ndarray],
        layout: tuple[int, int],
        out: np.ndarray,
        boxes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> bool:
        """Every row of row runs copied into ``out``, one run after another, when every
        block is cached (the blocks found and the rows copied in one kernel call,
        :func:`copy_cached_runs`; with ``boxes``, vertex rows checked to lie in their
        chunks there); False, nothing marked used, otherwise."""
        with self._lock:
            pool = self._pools.get(path)
            if pool is None:
                return False
            self._tick += 1
            cached = (pool.numbers, pool.place, pool.used)
            tick = self._tick
            return copy_cached_runs(chunk_flat, runs, layout, cached, tick, pool.data, out, boxes)

    def rows_in_box(
        self,
        path: str,
        chunk_flat: np.ndarray,
        runs: tuple[np.ndarray, np.ndarray, np.ndarray],
        layout: tuple[int, int],
        spec: tuple[np.dtype[Any], tuple[int, ...]],
        boxes: tuple[np.ndarray, np.ndarray, np.ndarray],
        box: tuple[np.ndarray, np.ndarray],
    ) -> tuple[np.ndarray, int] | None:
        """Whether every row of row runs lies in ``box``, tested where the rows lie, each
        checked to lie in its chunk's box, when every block is cached (one kernel call,
        :func:`cached_rows_in_box`); None, nothing done, otherwise."""
        with self._lock:
            pool = self._pools.get(path)
            if pool is None:
                return None
            self._tick += 1
            cached = (pool.numbers, pool.place, pool.used)
            rows = pool.rows(*spec)
            tick = self._tick
            return cached_rows_in_box(chunk_flat, runs, layout, cached, tick, rows, boxes, box)

    def _make_room(self, path: str, pool: _Pool, n: int) -> None:
        """Grow ``pool`` towards ``n`` free slots within the budget (doubling), dropping
        the pools of other arrays used least recently first when the budget is reached."""
        free = int(np.count_nonzero(pool.used < 0))
        if free >= n:
            return
        slot_bytes = pool.block_bytes + _SLOT_OVERHEAD
        grow = max(n - free, pool.used.shape[0])
        held = self.nbytes
        if held + grow * slot_bytes > self.budget:  # the other pools, least recently used first
            others = sorted((p for p in self._pools if p != path), key=self._last_use)
            while others and held + grow * slot_bytes > self.budget:
                self._pools.pop(others.pop(0)).release()
                held = self.nbytes
        grow = min(grow, (self.budget - held) // slot_bytes)
        if grow > 0:
            pool.grow(grow)

    def _last_use(self, path: str) -> int:
        return self._pools[path].last_use


class SlotBlocks:
    """The row blocks one column of a read needs, by slot, read through the cache.

    Parameters
    ----------
    cache
        The open store's cache.
    path
        The column's array path.
    numbers
        Block number (see :class:`BlockCache`) of every slot of the read.
    """

    def __init__(self, cache: BlockCache, path: str, numbers: np.ndarray) -> None:
        self.cache = cache
        self.path = path
        self.numbers = numbers

    def missing(self, wanted: np.ndarray) -> np.ndarray:
        """The slots among ``wanted`` (ascending) whose blocks are not cached now."""
        found: np.ndarray = wanted[~self.cache.cached(self.path, self.numbers[wanted])]
        return found

    def read_runs(
        self, r: int, runs: tuple[np.ndarray, np.ndarray], out: np.ndarray, decode: Decode
    ) -> bool:
        """:meth:`BlockCache.read_runs` of this column's slots."""
        return self.cache.read_runs(self.path, self.numbers, r, runs, out, decode)

    def visit(
        self,
        r: int,
        spec: tuple[np.dtype[Any], tuple[int, ...]],
        decode: Decode,
        use: Callable[[np.ndarray, np.ndarray], T],
    ) -> T | None:
        """:meth:`BlockCache.visit` of this column's slots."""
        return self.cache.visit(self.path, self.numbers, r, spec, decode, use)


def _release(pools: dict[str, _Pool]) -> None:
    """Give the bytes of every pool back to the spare buffers and forget the pools."""
    for pool in pools.values():
        pool.release()
    pools.clear()
