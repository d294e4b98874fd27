"""Box reads of point clouds: per-bin ranges and selected row blocks of many chunks at once.

A :class:`PointReads` serves the box queries of one :class:`~zarr_vectors.read.reader.
LevelReader` over a point cloud (spec §8, §9.0). :meth:`PointReads.read_selected` fetches
the row blocks holding many row runs into one buffer per column and decodes each once by a
kernel calling the C functions of C-Blosc and libcrc32c directly
(:mod:`zarr_vectors.kernels.row_blocks`); a caller's selector then picks the rows, and the
other columns decode only the blocks holding picked rows. A large read from a local directory
is instead shared with the decoding helper thread: every column's blocks are cut into turns
that either thread takes, reading a turn's bytes and decoding them, so one thread reads while
the other decodes; the rows are picked once all are decoded. Their byte spans are planned by
a kernel from tables kept by position among the occupied chunks (the chunks' shard index
entries and per-bin ranges, filled as chunks are first read), and the scratch they are
read and decoded into is reused from one read to the next (never the arrays returned).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import (
    POINT_CLOUD,
    VERTICES,
)
from zarr_vectors.kernels.bin_runs import copy_row_runs
from zarr_vectors.kernels.box_rows import block_slots, slots_holding, take_rows, turn_spans
from zarr_vectors.kernels.distinct import distinct_ascending
from zarr_vectors.read import _read_plans as read_plans
from zarr_vectors.read import block_tables, fragment_tables
from zarr_vectors.read.block_cache import SlotBlocks
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.native_blocks import in_turns
from zarr_vectors.store.shards import RowLayout

if TYPE_CHECKING:
    from zarr_vectors.read.reader import LevelReader

__all__ = ["PointReads", "RowRuns", "RowSelector"]

T = TypeVar("T")

_TURNS_MIN_BYTES = 2 * 2**20
"""Decoded bytes (every column) from which a local read is shared in turns. Measured on 2
CPUs: in turns, a 1% box of 1e6 points (about 1.1 MB decoded) took 20% longer; a 4% box
of 1e6 points 7% less, 1% and 25% boxes of 1e7 points 8% and 14% less."""
_TURN_BLOCKS = 16
"""Row blocks per turn."""


@dataclass(frozen=True, slots=True)
class RowRuns:
    """Row runs of several chunks: run ``q`` is rows ``[start[q], stop[q])`` of chunk
    ``chunks[chunk[q]]``; runs in chunk order, ascending and non-overlapping per chunk."""

    chunks: list[tuple[int, ...]]
    chunk: np.ndarray  # (m,) int64
    start: np.ndarray  # (m,) int64
    stop: np.ndarray  # (m,) int64
    where: np.ndarray | None = None  # (len(chunks),) positions in occupied_chunks(), if known


RowSelector = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""``select(rows, run_row, out)``: the rows to keep among decoded rows, written at the start
of ``out`` (room for one per decoded row; see read_selected)."""


def _aligned_offsets(sizes: Sequence[int]) -> np.ndarray:
    """Offsets of regions of ``sizes`` bytes laid back to back, each starting at a multiple
    of 64 bytes; the last entry is the total."""
    padded = [-(-size // 64) * 64 for size in sizes]
    return np.concatenate([[0], np.cumsum(padded, dtype=np.int64)]).astype(np.int64)


def _read_spans(
    io: StoreIO,
    keys: Sequence[str],
    span_key: np.ndarray,
    span_start: np.ndarray,
    span_stop: np.ndarray,
    buffer: np.ndarray,
) -> None:
    """:meth:`StoreIO.read_spans_into`, raising when a shard is missing or short.

    Raises
    ------
    CorruptChunkError
        Naming the first shard that could not be read whole.
    """
    failed = io.read_spans_into(keys, span_key, span_start, span_stop, buffer)
    if failed >= 0:
        raise CorruptChunkError(f"{keys[failed]}: shard of an occupied chunk disappeared")


@dataclass(frozen=True, slots=True)
class _ColumnTurns:
    """One column's part of a read in turns (:meth:`PointReads._read_in_turns`): its
    blocks' plan, cut in turns of :data:`_TURN_BLOCKS` blocks (:func:`turn_spans`), the
    buffer its stored blocks are read into and the rows they decode to."""

    layout: RowLayout
    keys: list[str]
    plan: read_plans.SlotPlan
    cut: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    raw: np.ndarray
    rows: np.ndarray

    @classmethod
    def make(
        cls,
        layout: RowLayout,
        keys: list[str],
        plan: read_plans.SlotPlan,
        raw: np.ndarray,
        rows: np.ndarray,
    ) -> _ColumnTurns:
        """The column's turns, reading into ``raw`` and decoding into ``rows``."""
        spans = (plan.span_chunk, plan.span_start, plan.span_stop)
        cut = turn_spans(plan.starts, plan.lengths, *spans, _TURN_BLOCKS)
        return cls(layout, keys, plan, cut, raw[: plan.nbytes], rows)

    @property
    def count(self) -> int:
        """Number of turns."""
        return int(self.cut[0].shape[0]) - 1

    def read(self, io: StoreIO, t: int, slot_where: np.ndarray, slot_block: np.ndarray) -> None:
        """Read turn ``t``'s bytes and decode its blocks (either thread may call this).

        Raises
        ------
        CorruptChunkError
            When a shard is missing or short, or a block does not decode.
        """
        turn_piece, chunk, start, stop = self.cut
        a, b = int(turn_piece[t]), int(turn_piece[t + 1])
        plan = self.plan
        x = t * _TURN_BLOCKS
        y = min(x + _TURN_BLOCKS, plan.starts.shape[0])
        lo, hi = int(plan.starts[x]), int(plan.starts[y - 1] + plan.lengths[y - 1])
        _read_spans(io, self.keys, chunk[a:b], start[a:b], stop[a:b], self.raw[lo:hi])
        slots = plan.slots[x:y]
        describe = read_plans.block_describer(self.keys, slots, slot_where, slot_block)
        self.layout.decode_blocks_at(
            self.raw, plan.starts[x:y], plan.lengths[x:y], slots, self.rows, describe
        )


def _run_rows(rows: np.ndarray, run_row: np.ndarray, runs: RowRuns) -> np.ndarray:
    """Every row of ``runs``, run after run, from the decoded ``rows`` in which run ``q``
    starts at row ``run_row[q]``."""
    lengths = runs.stop - runs.start
    out = np.empty((int(lengths.sum()), *rows.shape[1:]), dtype=rows.dtype)
    copy_row_runs(rows, run_row, out, np.cumsum(lengths) - lengths, lengths)
    return out


def _rows_at(learn: np.ndarray, where: np.ndarray, rows: np.ndarray | None) -> np.ndarray | None:
    """Row counts of the chunks at positions ``learn``, from ``rows`` (one per chunk at
    positions ``where``), or None (their vertex counts)."""
    if rows is None:
        return None
    order = np.argsort(where, kind="stable")
    return np.asarray(rows, dtype=np.int64)[order[np.searchsorted(where, learn, sorter=order)]]


class PointReads:
    """The box-query reads of one point-cloud level, with the tables they keep.

    Parameters
    ----------
    reader
        The level's reader: its metadata, caches and fetches are used. It holds this
        object, which refers back to it weakly, so dropping a store frees both at once.
    checked_bins
        Chunks whose per-bin ranges were checked: shared with the reader's restricted
        views (:meth:`for_view`), as that cache is.
    """

    def __init__(
        self, reader: LevelReader, checked_bins: set[tuple[int, ...]] | None = None
    ) -> None:
        self._reader = weakref.ref(reader)
        self.checked_bins = set() if checked_bins is None else checked_bins
        self.bins: read_plans.BinTable | None = None  # by position among the occupied chunks
        self.tables: dict[tuple[str, ...], read_plans.BlockTable] = {}  # per column set
        self.flat: np.ndarray | None = None  # flat index of each occupied chunk, by position
        self.flat_order: np.ndarray | None = None  # the positions by ascending flat index
        self.specs: dict[str, tuple[np.dtype[Any], tuple[int, ...]]] = {}  # column_spec
        self.ranges: read_plans.RangeTable | None = None  # object chunks' fragment ranges
        self.row_bytes: dict[tuple[Any, ...], int] = {}  # kernel_row_bytes
        self.boxes: tuple[np.ndarray, np.ndarray] | None = None  # chunk_boxes
        self.last_slots: tuple[RowRuns, int, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = (
            None  # _block_slots
        )

    @property
    def reader(self) -> LevelReader:
        """The level's reader."""
        reader = self._reader()
        if reader is None:
            raise ReferenceError("the reader of these point reads is gone")
        return reader

    def __getstate__(self) -> dict[str, Any]:
        """The state to pickle, with the reader itself: a weak reference does not pickle
        (dask ships readers to worker processes)."""
        return {**self.__dict__, "_reader": self.reader}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reader = weakref.ref(state["_reader"])

    def for_view(self, view: LevelReader) -> PointReads:
        """The reads of a restricted view of the reader: shared caches, fresh tables (they
        are kept by position among the occupied chunks, which the view changes)."""
        return PointReads(view, self.checked_bins)

    # The per-chunk fragment tables, kept by position (read/fragment_tables.py).
    bin_ranges = fragment_tables.bin_ranges
    bin_table = fragment_tables.bin_table
    range_table = fragment_tables.range_table

    def kernel_row_bytes(self, names: Sequence[str], any_rows: bool) -> int:
        """Bytes of one row of every column of ``names`` when
        :meth:`LevelReader.read_runs` may read them by the box-read kernels, else 0 (kept
        per column list): columns among :attr:`LevelReader.vertex_columns` (any per-chunk
        row arrays when ``any_rows``) that :meth:`can_select`, of a level of objects
        (point clouds: ``read_many`` checks bins too)."""
        key = (*names, any_rows)
        found = self.row_bytes.get(key)
        if found is None:
            reader = self.reader
            layouts = [reader.layouts.get(name) for name in names]
            vertex = any_rows or all(name in reader.vertex_columns for name in names)
            usable = reader.kind != POINT_CLOUD and vertex and self.can_select(names)
            found = sum(layout.row_nbytes for layout in layouts if layout is not None)
            found = found if usable else 0
            if all(layout is not None for layout in layouts):  # a column added later changes it
                self.row_bytes[key] = found
        return found

    def chunk_boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """The lower and upper corners ``(m, D)`` (float64, C order, absolute coordinates)
        of every occupied chunk, by position (made once)."""
        if self.boxes is None:
            grid = self.reader.grid
            coords = self.reader.occupied_chunks(None, None)[0] + grid.origin
            cells = np.ascontiguousarray(coords, dtype=np.float64)  # one kernel signature
            self.boxes = (cells * grid.chunk_shape, (cells + 1.0) * grid.chunk_shape)
        return self.boxes

    def can_select(self, names: Sequence[str]) -> bool:
        """Whether :meth:`read_selected` reads the columns ``names`` (else
        :meth:`LevelReader.read_many` does).

        It does when every column is in row blocks we decode, all of the same ``R``.
        """
        found = self.reader.layouts
        sizes: set[int] = set()
        for name in names:  # "None in layouts" would call each layout's __eq__
            layout = found.get(name)
            if layout is None:
                return False
            sizes.add(layout.rows_per_block)
        return len(sizes) == 1

    def read_selected(
        self,
        names: Sequence[str],
        runs: RowRuns,
        select: RowSelector | None,
        rows: np.ndarray | None = None,
        *,
        turns: bool = True,
    ) -> list[np.ndarray]:
        """The rows ``select`` picks among the rows of ``runs``, of every column of ``names``
        (``select`` None: every row of the runs, run after run).

        The row blocks holding the runs are decoded back to back (each once) for the first
        column; ``select(rows, run_row, out)`` gets those decoded rows and the row where
        each run starts among them, and returns the rows to keep (ascending), written at
        the start of ``out``. The other columns
        decode only the blocks holding kept rows. On object storage every column's blocks
        are fetched in one batch; a local directory is read column by column. Byte spans
        are planned by a kernel from the chunks' shard index entries (kept as arrays).

        Requires :meth:`can_select` of ``names``. Columns of one row per vertex by
        default; with ``rows`` (the row count of each chunk of ``runs`` in these columns),
        any per-chunk row arrays, e.g. an object level's ``links/0``. With ``turns=False``
        a large local read is not shared with the helper thread either: a read that keeps
        few of the rows it decodes (by id) then decodes the other columns' blocks holding
        kept rows only, and pays no hand-over between the threads. Every row of the runs
        (``select`` None) is copied run by run from the decoded blocks: no row numbers are
        made and gathered.

        Returns
        -------
        list of numpy.ndarray
            Per column, the kept rows in order.
        """
        r, table, (slot_chunk, slot_block, run_row), slot_where = self._slots(names, runs, rows)
        n_slots = slot_block.shape[0]
        if turns and self._in_turns(names, n_slots):
            slots = (slot_where, slot_block)
            return self._read_in_turns(names, table, slots, runs, run_row, select)
        every = np.arange(n_slots, dtype=np.int64)
        cached = self._cached(names, runs, slot_chunk, slot_block, select)
        fetched: list[tuple[read_plans.SlotPlan, np.ndarray] | None] = [None] * len(names)
        if not self.reader.io.is_local:  # every column's blocks in one batch
            plans = [
                read_plans.SlotPlan.make(
                    table, k, slot_where, slot_block, every if c is None else c.missing(every)
                )
                for k, c in enumerate(cached)
            ]
            fetched = list(zip(plans, self._fetch_plans(table, plans), strict=True))
        out: list[np.ndarray] = []
        keep = every[:0]
        # the rows kept (int64), one at most per row
        kept = read_plans.SPARE.take(8 * n_slots * r if select is not None else 0)
        slots = (slot_where, slot_block)
        for k, name in enumerate(names):
            wanted = every if k == 0 or select is None else slots_holding(keep, n_slots, r)
            decode = functools.partial(self._decode, table, k, name, slots, fetched[k])
            column = cached[k]
            if column is not None:  # select is None: the rows come through the cache
                found = self._cached_runs(column, name, r, run_row, runs, decode)
                if found is not None:
                    out.append(found)
                    continue
            rows, spare = self._scratch(name, n_slots)
            try:
                decode(wanted, wanted, rows)
                if select is None:
                    out.append(_run_rows(rows, run_row, runs))
                    continue
                if k == 0:
                    keep = select(rows, run_row, kept[: 8 * n_slots * r].view(np.int64))
                out.append(take_rows(rows, keep))
            finally:
                read_plans.SPARE.give(spare)
        read_plans.SPARE.give(kept)
        return out

    def _slots(
        self, names: Sequence[str], runs: RowRuns, rows: np.ndarray | None
    ) -> tuple[int, read_plans.BlockTable, tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
        """The plan of a read of ``runs`` in columns ``names`` (see :meth:`read_selected`):
        rows per block, the columns' block table (the chunks' entries learnt), the slots
        (:func:`block_slots`: each slot's chunk and block, each run's first slot row) and
        each slot's chunk position."""
        r = self.reader.layouts[names[0]].rows_per_block  # type: ignore[union-attr]
        slots = self._block_slots(runs, r)
        where = runs.where if runs.where is not None else self._positions(runs.chunks)
        table = block_tables.block_table(self, names, per_vertex=rows is None)
        slot_where = where[slots[0]]
        if not table.known[slot_where].all():
            learn = distinct_ascending(slot_where)
            block_tables.learn_blocks(self, names, table, learn, _rows_at(learn, where, rows))
        return r, table, slots, slot_where

    def visit_cached(
        self, name: str, runs: RowRuns, use: Callable[[np.ndarray, np.ndarray, int, np.ndarray], T]
    ) -> T | None:
        """``use(rows, place, r, run_row)`` of the row blocks holding ``runs`` in the vertex
        column ``name``, read through the open store's cache of decoded blocks, where they
        lie (no row is copied out): ``rows`` the cache's rows of the column, ``place`` the
        block of each slot among them, ``r`` rows per block and ``run_row`` each run's
        first slot row (as :func:`~zarr_vectors.kernels.slot_runs.copy_slot_runs` takes
        them). ``use`` runs under the cache's lock and must not keep ``rows``.

        None, with ``use`` not called, when the read would not go through the cache
        (:meth:`through_cache`) or the cache cannot hold its blocks.
        """
        cache = self.reader.blocks
        if cache is None or cache.budget <= 0 or not runs.chunk.shape[0]:
            return None
        r, table, (slot_chunk, slot_block, run_row), slot_where = self._slots([name], runs, None)
        if self._in_turns([name], slot_block.shape[0]):
            return None
        column = self._cached([name], runs, slot_chunk, slot_block, None)[0]
        assert column is not None
        slots = (slot_where, slot_block)
        decode = functools.partial(self._decode, table, 0, name, slots, None)
        return column.visit(
            r, self._spec(name), decode, lambda rows, place: use(rows, place, r, run_row)
        )

    def cached_in_box(
        self, name: str, runs: RowRuns, lo: np.ndarray, hi: np.ndarray
    ) -> tuple[np.ndarray, int] | None:
        """Whether each row of ``runs`` in the vertex column ``name`` lies in the box
        ``lo <= p < hi``, and the first row outside its chunk (-1: none), tested where
        the rows lie in the open store's cache of decoded blocks when every block is
        there (a warm read: one kernel call, :meth:`BlockCache.rows_in_box`); else None."""
        reader = self.reader
        cache = reader.blocks
        if cache is None or cache.budget <= 0 or runs.where is None or not runs.chunk.shape[0]:
            return None
        layout = reader.layouts[name]
        assert layout is not None  # a column read by kernels (can_select)
        return cache.rows_in_box(
            reader.paths[name],
            self.occupied_flat()[runs.where],
            (runs.chunk, runs.start, runs.stop),
            (layout.rows_per_block, layout.n_blocks),
            self._spec(name),
            (runs.where, *self.chunk_boxes()),
            (lo, hi),
        )

    def cached_runs(self, names: Sequence[str], runs: RowRuns) -> list[np.ndarray] | None:
        """Every row of ``runs`` in each column of ``names`` (vertex columns, or per-chunk
        row arrays read by kernels: :meth:`kernel_row_bytes`), copied out of the open
        store's cache of decoded blocks when every block is there (a warm read: one kernel
        call a column, :meth:`BlockCache.copy_runs`), each ``vertices`` row checked to lie
        in its chunk as :meth:`LevelReader.read_runs` checks it; else None (also for a row
        outside its chunk: the read that follows reports it)."""
        reader = self.reader
        cache = reader.blocks
        if cache is None or cache.budget <= 0 or runs.where is None or not runs.chunk.shape[0]:
            return None
        flat = self.occupied_flat()[runs.where]
        if not all(cache.may_hold(reader.paths[name], flat.shape[0]) for name in names):
            return None  # fewer blocks cached than chunks read (a cold read): no kernel call
        n = int((runs.stop - runs.start).sum())
        triple = (runs.chunk, runs.start, runs.stop)
        out = []
        for name in names:
            layout = reader.layouts[name]
            assert layout is not None  # a column read by kernels (can_select)
            dtype, row_shape = self._spec(name)
            rows = np.empty((n, *row_shape), dtype)
            sizes = (layout.rows_per_block, layout.n_blocks)
            boxes = (runs.where, *self.chunk_boxes()) if name == VERTICES else None
            if not cache.copy_runs(reader.paths[name], flat, triple, sizes, rows, boxes):
                return None
            out.append(rows)
        return out

    def _spec(self, name: str) -> tuple[np.dtype[Any], tuple[int, ...]]:
        """:meth:`LevelReader.column_spec` of column ``name`` (kept)."""
        spec = self.specs.get(name)
        if spec is None:
            spec = self.specs[name] = self.reader.column_spec(name)
        return spec

    def _in_turns(self, names: Sequence[str], n_slots: int) -> bool:
        """Whether a read of ``n_slots`` row blocks of every column of ``names`` is large
        enough to be read in turns with the helper thread (local stores only)."""
        layouts = self._layouts(names)
        decoded = n_slots * layouts[0].rows_per_block * sum(lay.row_nbytes for lay in layouts)
        return decoded >= _TURNS_MIN_BYTES and self.reader.io.is_local

    def through_cache(self, names: Sequence[str], runs: RowRuns) -> bool:
        """Whether :meth:`read_selected` of every row of ``runs`` in the vertex columns
        ``names`` (``turns`` on) reads their blocks through the open store's cache of
        decoded blocks (so a later read finds them there, within the cache's budget)."""
        cache = self.reader.blocks
        if cache is None or cache.budget <= 0 or not runs.chunk.shape[0]:
            return False
        r = self.reader.layouts[names[0]].rows_per_block  # type: ignore[union-attr]
        most = int((runs.stop - runs.start).sum()) // r + 2 * runs.chunk.shape[0]
        if not self._in_turns(names, most):  # a run of n rows spans n // r + 2 blocks at most
            return True
        n_slots = self._block_slots(runs, r)[1].shape[0]
        return not self._in_turns(names, n_slots)

    def _block_slots(self, runs: RowRuns, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`block_slots` of ``runs`` in blocks of ``r`` rows; the last answer is kept
        (:meth:`through_cache` asks it of the runs a read then plans)."""
        last = self.last_slots
        if last is not None and last[0] is runs and last[1] == r:
            return last[2]
        found = block_slots(runs.chunk, runs.start, runs.stop, r)
        self.last_slots = (runs, r, found)
        return found

    def _decode(
        self,
        table: read_plans.BlockTable,
        k: int,
        name: str,
        slots: tuple[np.ndarray, np.ndarray],
        fetched: tuple[read_plans.SlotPlan, np.ndarray] | None,
        wanted: np.ndarray,
        at: np.ndarray,
        rows: np.ndarray,
    ) -> None:
        """Decode column ``k``'s (``name``'s) blocks of slots ``wanted`` into the row
        blocks ``at`` of ``rows``: from ``fetched`` (the plan and bytes of a batch fetched
        already) when it holds them, else read now."""
        slot_where, slot_block = slots
        if not wanted.shape[0]:
            return
        raw = None
        try:
            if fetched is None or not fetched[0].holds(wanted):
                plan = read_plans.SlotPlan.make(table, k, slot_where, slot_block, wanted)
                raw = read_plans.SPARE.take(plan.nbytes)
                buffer = raw[: plan.nbytes]
                self._read_plan(table, k, plan, buffer)
            else:
                plan, buffer = fetched[0].pick(wanted), fetched[1]
            describe = read_plans.block_describer(table.keys[k], plan.slots, slot_where, slot_block)
            self.reader.layouts[name].decode_blocks_at(  # type: ignore[union-attr]
                buffer, plan.starts, plan.lengths, at, rows, describe
            )
        finally:
            if raw is not None:
                read_plans.SPARE.give(raw)

    def _cached(
        self,
        names: Sequence[str],
        runs: RowRuns,
        slot_chunk: np.ndarray,
        slot_block: np.ndarray,
        select: RowSelector | None,
    ) -> list[SlotBlocks | None]:
        """Per column of ``names``, its slots' blocks in the open store's cache of decoded
        blocks (:class:`~zarr_vectors.read.block_cache.BlockCache`); None when the reader
        has no cache or it keeps nothing, or for a read that selects rows (point clouds)."""
        cache = self.reader.blocks
        if cache is None or cache.budget <= 0 or select is not None or not slot_chunk.shape[0]:
            return [None] * len(names)
        if runs.where is not None:
            slot_flat = self.occupied_flat()[runs.where[slot_chunk]]
        else:
            shape = tuple(int(g) for g in self.reader.grid.shape)
            chunks = np.asarray(runs.chunks, dtype=np.int64).reshape(-1, len(shape))
            slot_flat = np.asarray(np.ravel_multi_index(tuple(chunks.T), shape))[slot_chunk]
        paths = self.reader.paths
        return [
            SlotBlocks(cache, paths[name], slot_flat * layout.n_blocks + slot_block)
            for layout, name in zip(self._layouts(names), names, strict=True)
        ]

    def occupied_flat(self) -> np.ndarray:
        """The flat index of every occupied chunk, by position (made once)."""
        if self.flat is None:
            coords, _ = self.reader.occupied_chunks(None, None)
            shape = tuple(int(g) for g in self.reader.grid.shape)
            self.flat = np.ravel_multi_index(tuple(coords.T), shape).astype(np.int64)
        return self.flat

    def _cached_runs(
        self,
        column: SlotBlocks,
        name: str,
        r: int,
        run_row: np.ndarray,
        runs: RowRuns,
        decode: Callable[[np.ndarray, np.ndarray, np.ndarray], None],
    ) -> np.ndarray | None:
        """Every row of ``runs`` (starting at slot rows ``run_row``) in column ``name``,
        through the cache (``decode`` decodes its missing blocks into it); None when the
        cache cannot hold the read's blocks."""
        spec = self._spec(name)
        lengths = runs.stop - runs.start
        out = np.empty((int(lengths.sum()), *spec[1]), dtype=spec[0])
        return out if column.read_runs(r, (run_row, lengths), out, decode) else None

    def _read_in_turns(
        self,
        names: Sequence[str],
        table: read_plans.BlockTable,
        slots: tuple[np.ndarray, np.ndarray],
        runs: RowRuns,
        run_row: np.ndarray,
        select: RowSelector | None,
    ) -> list[np.ndarray]:
        """:meth:`read_selected` of a large local read: every block of every column is
        read and decoded in turns of :data:`_TURN_BLOCKS` blocks, shared with the helper
        thread (:func:`~zarr_vectors.store.native_blocks.in_turns`); then ``select`` picks
        the rows (None: every row of ``runs``). ``slots`` are the chunk position and block
        number of each slot."""
        slot_where, slot_block = slots
        n_slots = slot_block.shape[0]
        every = np.arange(n_slots, dtype=np.int64)
        plans = [
            read_plans.SlotPlan.make(table, k, slot_where, slot_block, every)
            for k in range(len(names))
        ]
        layouts = self._layouts(names)
        n_rows = n_slots * layouts[0].rows_per_block
        raw_at = _aligned_offsets([plan.nbytes for plan in plans])
        row_at = _aligned_offsets([n_rows * layout.row_nbytes for layout in layouts])
        raw = read_plans.SPARE.take(int(raw_at[-1]))
        decoded = read_plans.SPARE.take(int(row_at[-1]))
        kept = read_plans.SPARE.take(8 * n_rows)
        try:
            columns = [
                _ColumnTurns.make(
                    layouts[k],
                    table.keys[k],
                    plans[k],
                    raw[raw_at[k] :],
                    self._rows_in(decoded[row_at[k] :], name, n_rows),
                )
                for k, name in enumerate(names)
            ]
            turns = [(column, t) for column in columns for t in range(column.count)]

            def read_turn(i: int) -> None:
                column, t = turns[i]
                column.read(self.reader.io, t, slot_where, slot_block)

            in_turns(len(turns), read_turn, n_slots * len(names))
            if select is None:
                return [_run_rows(column.rows, run_row, runs) for column in columns]
            keep = select(columns[0].rows, run_row, kept[: 8 * n_rows].view(np.int64))
            return [take_rows(column.rows, keep) for column in columns]
        finally:
            for spare in (raw, decoded, kept):
                read_plans.SPARE.give(spare)

    def _layouts(self, names: Sequence[str]) -> list[RowLayout]:
        """The row layouts of columns ``names`` (all in row blocks: :meth:`can_select`)."""
        found = self.reader.layouts
        layouts = [found[name] for name in names]
        for layout in layouts:  # "None not in layouts" would call each layout's __eq__
            assert layout is not None
        return layouts  # type: ignore[return-value]

    def _rows_in(self, spare: np.ndarray, name: str, n: int) -> np.ndarray:
        """``n`` uninitialised rows of column ``name`` viewed at the start of ``spare``."""
        dtype, row_shape = self.reader.column_spec(name)
        size = n * dtype.itemsize * int(np.prod(row_shape, dtype=np.int64))
        return spare[:size].view(dtype).reshape(n, *row_shape)

    def _positions(self, chunks: Sequence[tuple[int, ...]]) -> np.ndarray:
        """Positions of occupied chunks (zarr indices; occupied ones only) in
        :meth:`LevelReader.occupied_chunks` ``(None, None)``."""
        if not chunks:
            return np.empty(0, dtype=np.int64)
        flat = self.occupied_flat()
        if self.flat_order is None:
            self.flat_order = np.argsort(flat, kind="stable")
        shape = tuple(int(g) for g in self.reader.grid.shape)
        wanted = np.ravel_multi_index(tuple(np.asarray(chunks, dtype=np.int64).T), shape)
        order = self.flat_order
        found: np.ndarray = order[np.searchsorted(flat, wanted, sorter=order)]
        return found.astype(np.int64)

    def _fetch_plans(
        self, table: read_plans.BlockTable, plans: list[read_plans.SlotPlan]
    ) -> list[np.ndarray]:
        """Fetch the spans of every plan in one batch; per plan, the buffer of its blocks."""
        total = sum(plan.nbytes for plan in plans)
        buffer = np.empty(total, dtype=np.uint8)
        keys = [key for k in range(len(plans)) for key in table.keys[k]]
        offsets = np.cumsum([0, *(len(table.keys[k]) for k in range(len(plans)))])
        owner = np.concatenate([plan.span_chunk + offsets[k] for k, plan in enumerate(plans)])
        starts = np.concatenate([plan.span_start for plan in plans])
        stops = np.concatenate([plan.span_stop for plan in plans])
        _read_spans(self.reader.io, keys, owner, starts, stops, buffer)
        out, pos = [], 0
        for plan in plans:
            out.append(buffer[pos : pos + plan.nbytes])
            pos += plan.nbytes
        return out

    def _read_plan(
        self, table: read_plans.BlockTable, k: int, plan: read_plans.SlotPlan, buffer: np.ndarray
    ) -> None:
        """Read the spans of ``plan`` (column ``k`` of ``table``) into ``buffer``."""
        spans = (plan.span_chunk, plan.span_start, plan.span_stop)
        _read_spans(self.reader.io, table.keys[k], *spans, buffer)

    def _scratch(self, name: str, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
        """An uninitialised buffer of ``n_slots`` row blocks of column ``name``, and the
        spare bytes it lies in (to give back, :class:`read_plans.SpareBuffers`)."""
        layout = self._layouts([name])[0]
        n = n_slots * layout.rows_per_block
        spare = read_plans.SPARE.take(n * layout.row_nbytes)
        return self._rows_in(spare, name, n), spare
