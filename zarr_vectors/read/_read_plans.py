"""Plans and scratch of row reads.

Point-cloud box reads (:meth:`PointReads.read_selected
<zarr_vectors.read.point_reads.PointReads.read_selected>`) plan their reads by kernels
from tables kept per position among the occupied chunks: the chunks' shard index entries
(:class:`BlockTable`) and per-bin ranges (:class:`BinTable`), filled as chunks are first
read. :class:`SlotPlan` is the plan of one column's blocks, and :data:`SPARE` the scratch
bytes reused from one read to the next. Reads of given row runs of given chunks
(:meth:`LevelReader.read_many <zarr_vectors.read.reader.LevelReader.read_many>`) are
planned by :class:`RowPlan`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels import concat_ranges
from zarr_vectors.kernels.box_rows import slot_spans
from zarr_vectors.kernels.read_plan import fragment_rows
from zarr_vectors.kernels.shard_slots import empty_block_table

if TYPE_CHECKING:
    from zarr_vectors.read.row_reads import ChunkRows

__all__ = [
    "SPARE",
    "TABLES_LOCK",
    "BinTable",
    "BlockPlan",
    "BlockTable",
    "RangeTable",
    "RowJob",
    "RowPlan",
    "SlotPlan",
    "SpareBuffers",
    "block_describer",
    "chunk_keys",
]


class SpareBuffers:
    """Byte buffers reused from one read to the next, for bytes a read never returns.

    A fresh buffer of a few MiB costs a page fault per 4 KiB page on every read (the
    allocator hands large blocks back to the OS); reusing one does not. Up to
    :attr:`KEEP` buffers of :attr:`LARGEST` bytes at most are kept; they hold nothing
    between reads (every read overwrites what it uses). Safe from several threads: a
    buffer is used by one read at a time.
    """

    KEEP = 4
    LARGEST = 1 << 23

    def __init__(self) -> None:
        self._free: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> np.ndarray:
        """A uint8 buffer of at least ``nbytes`` bytes (a multiple of 64; 16-byte aligned)."""
        with self._lock:
            for i, buffer in enumerate(self._free):
                if buffer.shape[0] >= nbytes:
                    return self._free.pop(i)
        return np.empty((nbytes + (nbytes >> 3)) // 64 * 64 + 64, dtype=np.uint8)

    def give(self, buffer: np.ndarray) -> None:
        """Return a buffer from :meth:`take` (its contents are not read again)."""
        if buffer.shape[0] > self.LARGEST:
            return
        with self._lock:
            self._free.append(buffer)
            if len(self._free) > self.KEEP:
                smallest = min(range(len(self._free)), key=lambda i: self._free[i].shape[0])
                del self._free[smallest]


SPARE = SpareBuffers()
"""The scratch of :meth:`PointReads.read_selected` (decoded blocks, fetched bytes)."""

TABLES_LOCK = threading.Lock()
"""Held while a reader adds rows to its :class:`BinTable` (rare: once per chunk), so one
thread at a time does; one lock for every reader keeps readers picklable (dask)."""


def _fresh_locks() -> None:
    global SPARE, TABLES_LOCK
    SPARE = SpareBuffers()  # a forked child may inherit a lock held by another thread
    TABLES_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_fresh_locks)


@dataclass(slots=True)
class BlockTable:
    """Shard index entries of some columns, by position of the chunk among the occupied
    chunks, filled as chunks are first read (box queries plan their reads from them).

    The entries of chunk ``p``'s row blocks (``ceil(rows / R)`` of them) are rows
    ``first[p] : first[p + 1]`` of ``entries[k]`` (``(offset, nbytes)``, -1 where a block
    is not stored) for column ``k``, whose shard key is ``keys[k][p]``; ``known[p]`` says
    whether they are filled.
    """

    first: np.ndarray
    entries: list[np.ndarray]
    keys: list[list[str]]
    known: np.ndarray

    @classmethod
    def empty(cls, counts: np.ndarray, r: int, n_columns: int, rows: int = -1) -> BlockTable:
        """An unfilled table for chunks of ``counts`` rows (or of ``rows`` each, when
        ``rows >= 0``), blocks of ``r`` rows (:func:`~zarr_vectors.kernels.shard_slots.
        empty_block_table`: one kernel call)."""
        first, entries, known = empty_block_table(counts, r, n_columns, rows)
        return cls(first, list(entries), [[""] * known.shape[0] for _ in range(n_columns)], known)


@dataclass(slots=True)
class BinTable:
    """Per-bin ``(starts, sizes)`` of point-cloud chunks: chunk ``p`` (position among the
    occupied chunks) has them in row ``row[p]`` (-1 until known) of both tables."""

    row: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    used: int

    @classmethod
    def empty(cls, n_chunks: int, bins: int) -> BinTable:
        """A table for ``n_chunks`` chunks of ``bins`` bins, none known."""
        rows = np.full(n_chunks, -1, dtype=np.int64)
        none = np.zeros((0, bins), dtype=np.int64)
        return cls(rows, none, none.copy(), 0)

    def add(self, where: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> None:
        """Record the ranges of the chunks at positions ``where`` (not known yet)."""
        need = self.used + where.shape[0]
        if need > self.starts.shape[0]:
            cap = max(need, 2 * self.starts.shape[0])
            self.starts = _grown(self.starts, cap)
            self.sizes = _grown(self.sizes, cap)
        self.starts[self.used : need] = starts
        self.sizes[self.used : need] = sizes
        self.row[where] = np.arange(self.used, need, dtype=np.int64)
        self.used = need


@dataclass(slots=True)
class RangeTable:
    """The fragment ranges of object chunks, by position of the chunk among the occupied
    chunks, filled as chunks are met a second time (warm object reads take the rows of
    their references from it, :meth:`rows_of`, instead of parsing fragment records).

    Chunk ``p``'s ``count[p]`` fragments are columns ``first[p]`` on (-1 until known) of
    ``ranges``: vertex first row and rows, link first row and link rows (zeros for a kind
    without links); ``owner`` the owner object of each fragment (zeros for a level
    without fragment records); ``link_rows[p]`` its link rows; ``seen[p]`` whether it was
    asked for.
    """

    first: np.ndarray
    count: np.ndarray
    link_rows: np.ndarray
    seen: np.ndarray
    ranges: np.ndarray
    owner: np.ndarray
    used: int

    @classmethod
    def empty(cls, n_chunks: int) -> RangeTable:
        """A table for ``n_chunks`` chunks, none known."""
        zeros = np.zeros(n_chunks, dtype=np.int64)
        return cls(
            np.full(n_chunks, -1, np.int64),
            zeros,
            zeros.copy(),
            np.zeros(n_chunks, dtype=bool),
            np.zeros((4, 0), np.int64),
            np.zeros(0, np.int64),
            0,
        )

    def add(
        self,
        where: np.ndarray,
        vertex: list[tuple[np.ndarray, np.ndarray]],
        links: list[tuple[np.ndarray, np.ndarray]] | None,
        owners: list[np.ndarray] | None = None,
    ) -> None:
        """Record the vertex and link ranges (None: a kind without links) and the
        fragments' owners (None: not known) of the chunks at positions ``where`` (not known
        yet), one ``(starts, counts)`` pair each, a chunk's link ranges and owners one per
        fragment as its vertex ranges."""
        count = np.array([v[0].shape[0] for v in vertex], dtype=np.int64)
        bounds = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
        columns = [
            np.concatenate(parts) if vertex else np.empty(0, np.int64)
            for parts in [*zip(*vertex, strict=True), *zip(*(links or []), strict=True)]
        ]
        joined = None if owners is None or not vertex else np.concatenate(owners)
        self.add_flat(where, bounds, columns, joined)

    def add_flat(
        self,
        where: np.ndarray,
        bounds: np.ndarray,
        columns: list[np.ndarray],
        owners: np.ndarray | None = None,
    ) -> None:
        """:meth:`add` of the chunks at positions ``where`` (not known yet) from flat
        columns: chunk ``where[j]``'s fragments are ``bounds[j]:bounds[j + 1]`` of
        ``columns`` (vertex first rows and rows, then link first rows and link rows, or
        only the first two for a kind without links) and of ``owners`` (None: not known).
        """
        count = np.diff(bounds)
        need = self.used + int(bounds[-1])
        if need > self.ranges.shape[1]:  # columns past ``used`` are never read
            cap = max(need, 2 * self.ranges.shape[1])
            grown = np.empty((4, cap), np.int64)
            grown[:, : self.used] = self.ranges[:, : self.used]
            self.ranges = grown
            owner = np.empty(cap, np.int64)
            owner[: self.used] = self.owner[: self.used]
            self.owner = owner
        if len(columns) < 4 or owners is None:  # zeros: a kind without links, no owners
            self.ranges[len(columns) :, self.used : need] = 0
            if owners is None:
                self.owner[self.used : need] = 0
        for k, column in enumerate(columns):
            self.ranges[k, self.used : need] = column
        if owners is not None:
            self.owner[self.used : need] = owners
        if len(columns) > 2:
            summed = np.concatenate([[0], np.cumsum(columns[3], dtype=np.int64)])
            self.link_rows[where] = summed[bounds[1:]] - summed[bounds[:-1]]
        self.count[where] = count  # before first: a reader that sees first sees count
        self.first[where] = self.used + bounds[:-1]
        self.used = need

    def rows_of(self, where: np.ndarray, fragment: np.ndarray) -> tuple[np.ndarray, int]:
        """The ``(4, n)`` ranges of fragment ``fragment[i]`` of the chunk at position
        ``where[i]`` (every chunk known), and the first ``i`` whose chunk has no such
        fragment (-1: none), by one kernel call
        (:func:`~zarr_vectors.kernels.read_plan.fragment_rows`)."""
        return fragment_rows(self.first, self.count, self.ranges, where, fragment)


def _grown(table: np.ndarray, rows: int) -> np.ndarray:
    """``table`` copied into a zeroed table of ``rows`` rows."""
    out = np.zeros((rows, *table.shape[1:]), dtype=table.dtype)
    out[: table.shape[0]] = table
    return out


@dataclass(frozen=True, slots=True)
class SlotPlan:
    """The stored blocks of some slots of a column (:func:`slot_spans`): per slot, where
    its block lies once the spans are read back to back; the spans; their total bytes."""

    slots: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    span_chunk: np.ndarray
    span_start: np.ndarray
    span_stop: np.ndarray
    nbytes: int

    @classmethod
    def make(
        cls,
        table: BlockTable,
        k: int,
        slot_where: np.ndarray,
        slot_block: np.ndarray,
        wanted: np.ndarray,
    ) -> SlotPlan:
        """Plan slots ``wanted`` of column ``k`` of ``table``.

        Raises
        ------
        CorruptChunkError
            When a wanted block is not stored in its shard.
        """
        starts, lengths, chunk, start, stop, bad = slot_spans(
            slot_where, slot_block, wanted, table.first, table.entries[k]
        )
        if bad >= 0:
            s = int(wanted[bad])
            key = table.keys[k][int(slot_where[s])]
            raise CorruptChunkError(
                f"{key}: row block {int(slot_block[s])} is missing from the shard"
            )
        nbytes = int(starts[-1] + lengths[-1]) if starts.shape[0] else 0
        return cls(wanted, starts, lengths, chunk, start, stop, nbytes)

    def holds(self, wanted: np.ndarray) -> bool:
        """Whether every slot of ``wanted`` (ascending) is planned here."""
        if not self.slots.shape[0]:
            return not wanted.shape[0]
        at = np.minimum(np.searchsorted(self.slots, wanted), self.slots.shape[0] - 1)
        return bool(np.all(self.slots[at] == wanted))

    def pick(self, wanted: np.ndarray) -> SlotPlan:
        """The blocks of slots ``wanted`` (ascending, all among this plan's) of this plan
        (spans unchanged)."""
        at = np.searchsorted(self.slots, wanted)
        return SlotPlan(
            wanted,
            self.starts[at],
            self.lengths[at],
            self.span_chunk,
            self.span_start,
            self.span_stop,
            self.nbytes,
        )


def chunk_keys(chunks: np.ndarray) -> list[tuple[int, ...]]:
    """Chunk indices ``(k, D)`` as tuples of ints (cache keys)."""
    return [tuple(c) for c in np.asarray(chunks, dtype=np.int64).tolist()]


def block_describer(
    keys: list[str], slots: np.ndarray, slot_where: np.ndarray, slot_block: np.ndarray
) -> Callable[[int], tuple[int, str]]:
    """Block number and shard key of the ``i``-th block decoded (for error messages)."""

    def describe(i: int) -> tuple[int, str]:
        s = int(slots[i])
        return int(slot_block[s]), keys[int(slot_where[s])]

    return describe


def contiguous_groups(blocks: list[int]) -> list[list[int]]:
    """Ascending block numbers split into runs of consecutive numbers (one read each)."""
    groups = [[blocks[0]]]
    for b in blocks[1:]:
        if b == groups[-1][-1] + 1:
            groups[-1].append(b)
        else:
            groups.append([b])
    return groups


RowJob = tuple[int, list[list[int]], tuple[int, int] | None, int]
"""One request's part of a :class:`RowPlan` (see :attr:`RowPlan.jobs`)."""


@dataclass(frozen=True, slots=True)
class RowPlan:
    """The row blocks to read for a list of requests, for one row-block size R.

    ``jobs`` has one entry per non-empty request: ``(request index, groups of consecutive
    blocks, (start, stop) of its single run or None, first scratch block)``; requests with
    one run decode into the result at ``starts[i]``, the others into scratch blocks.
    """

    rows_per_block: int
    starts: np.ndarray
    blocks: BlockPlan
    jobs: list[RowJob]

    @classmethod
    def build(cls, wanted: list[ChunkRows], r: int) -> RowPlan:
        """Plan ``wanted`` for row blocks of ``r`` rows."""
        sizes = [int((w.runs[:, 1] - w.runs[:, 0]).sum()) for w in wanted]
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        multi = [i for i, w in enumerate(wanted) if w.runs.shape[0] > 1]
        blocks = BlockPlan.build([wanted[i].runs for i in multi], starts[multi], r)
        slot_of = dict(zip(multi, range(len(multi)), strict=True))
        jobs: list[RowJob] = []
        for i, w in enumerate(wanted):
            if not sizes[i]:
                continue
            if i in slot_of:
                a, b = blocks.bounds[slot_of[i]], blocks.bounds[slot_of[i] + 1]
                jobs.append((i, contiguous_groups(blocks.blocks[a:b].tolist()), None, int(a)))
            else:
                lo, hi = int(w.runs[0, 0]), int(w.runs[0, 1])
                jobs.append((i, [list(range(lo // r, (hi - 1) // r + 1))], (lo, hi), 0))
        return cls(r, starts, blocks, jobs)


@dataclass(frozen=True, slots=True)
class BlockPlan:
    """The row blocks several-run requests need, and where their rows go.

    ``blocks[bounds[j]:bounds[j + 1]]`` are the ascending distinct blocks of request j,
    decoded back to back into a scratch buffer; then every run ``q`` of rows is copied:
    ``out[dst[q]:][:count[q]] = scratch[src[q]:][:count[q]]``.
    """

    blocks: np.ndarray
    bounds: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    count: np.ndarray

    @classmethod
    def build(cls, runs: list[np.ndarray], out_starts: np.ndarray, r: int) -> BlockPlan:
        """Plan requests with row ``runs`` whose rows go to ``out[out_starts[j]:]``."""
        empty = np.empty(0, np.int64)
        if not runs:
            return cls(empty, np.zeros(1, np.int64), empty, empty, empty)
        all_runs = np.concatenate(runs).astype(np.int64)
        request = np.repeat(np.arange(len(runs)), [x.shape[0] for x in runs])
        keep = all_runs[:, 1] > all_runs[:, 0]
        all_runs, request = all_runs[keep], request[keep]
        lo, hi = all_runs[:, 0], all_runs[:, 1]
        first, last = lo // r, (hi - 1) // r
        span = int(last.max(initial=0)) + 1
        block_keys = request.repeat(last - first + 1) * span + concat_ranges(
            first, last - first + 1
        )
        keys = np.unique(block_keys)
        bounds = np.searchsorted(keys // span, np.arange(len(runs) + 1))
        # a run's blocks are consecutive in its request's block list, so its rows are one
        # contiguous range of the scratch buffer, starting in the slot of its first block
        slot = np.searchsorted(keys, request * span + first)
        count = hi - lo
        # a request's runs follow each other in out from its start
        before = np.cumsum(count) - count
        dst = out_starts[request] + before - before[np.searchsorted(request, request)]
        return cls(keys % span, bounds, slot * r + lo - first * r, dst, count)
