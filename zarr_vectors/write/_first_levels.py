"""The first levels of detail of a point cloud, computed beside level 0 (spec §4.3.2).

:class:`FirstLevels` computes the candidate levels chunk by chunk while a writer holds each
chunk's level-0 rows, and writes level 1 as its shards fill; what it keeps is finished by
:func:`~zarr_vectors.write._stored_levels.build_point_levels`.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future
from typing import Any

import numpy as np

from zarr_vectors.format.fragment_encoding import encode_dense_ranges_batch
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import (
    AGGREGATE,
    aggregate_coarsening,
    sample_coarsening,
)
from zarr_vectors.kernels import results_of, shared_pool
from zarr_vectors.store.io import StoreIO
from zarr_vectors.write._bin_merge import BinMerge
from zarr_vectors.write._layouts import point_blob_layout
from zarr_vectors.write._level_plan import LevelColumns, coarse_grid, iter_candidates, level_options
from zarr_vectors.write._level_writer import LevelStats, LevelWriter
from zarr_vectors.write._point_levels import chunk_level
from zarr_vectors.write._sorting import SortedPoints
from zarr_vectors.write.levels import Levels
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "FirstLevels",
    "bin_blobs",
    "chunk_candidate",
]


class _EarlyLevel:
    """Level 1 written as its chunks are computed: each coarse shard once all of its
    chunks are there (they come in level 0's order). The shard's chunks are sorted by the
    shard assembler, so the bytes are those :func:`_write_stored_level` writes."""

    def __init__(
        self,
        io: StoreIO,
        grid: ChunkGrid,
        columns: LevelColumns,
        options: WriteOptions,
        chunks: np.ndarray,
    ) -> None:
        self.io = io
        self.writer = LevelWriter(
            io, 1, grid, columns, options.block_rows, options, blobs=point_blob_layout(grid)
        )
        self.width = 1 + len(columns[1])
        per = np.asarray(self.writer.shard_chunks or (1,) * grid.ndim, dtype=np.int64)
        self.shard_of: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.missing: dict[tuple[int, ...], int] = {}
        for chunk, shard in zip(chunks.tolist(), (chunks // per).tolist(), strict=True):
            self.shard_of[tuple(chunk)] = tuple(shard)
            self.missing[tuple(shard)] = self.missing.get(tuple(shard), 0) + 1
        self.ready: dict[tuple[int, ...], list[tuple[tuple[int, ...], SortedPoints]]] = {}

    def add(self, chunk: tuple[int, ...], level: SortedPoints) -> None:
        """Take one chunk's rows; write its shard when it is the shard's last chunk."""
        shard = self.shard_of[chunk]
        held = self.ready.setdefault(shard, [])
        held.append((chunk, level))
        if len(held) < self.missing[shard]:
            return
        ready = self.ready.pop(shard)
        blobs = bin_blobs(np.concatenate([rows.bin_offsets for _, rows in ready]))
        columns = [[rows.columns[k] for _, rows in ready] for k in range(self.width)]
        keys = np.asarray([key for key, _ in ready], dtype=np.int64)
        self.writer.add_chunks(keys, columns, list(blobs))  # the rows are not changed after

    def finish(self) -> LevelStats:
        """Write the rest of the level (every chunk was added)."""
        if self.ready:
            raise ValueError("level 1 written early is missing chunks")
        return self.writer.finish()

    def discard(self) -> None:
        """Delete what was written of the level."""
        self.writer.flush()
        self.io.delete_many(self.io.list_prefix("1/"))


_PENDING_CHUNKS = 4
"""Chunks :meth:`FirstLevels.add_beside` lets wait for the worker, at most."""


class FirstLevels:
    """The candidate levels computed from level 0 (``sample``: the first; ``aggregate``:
    every one), chunk by chunk while a writer holds each chunk's level-0 rows, kept while
    they fit ``budget`` bytes (then dropped: the builder reads level 0 back instead).

    Parameters
    ----------
    settings
        The levels to build.
    grid, bounds
        The store's chunk grid and level-0 bounding box (as the root records it).
    dtypes
        Every attribute's dtype, by name, in column order.
    budget
        Bytes the kept rows may take.
    keep_level0
        Keep level 0's rows too (of the chunks given with their bin offsets), while they
        fit the budget beside the candidates: the builder then computes the candidates that
        follow a candidate which reduced nothing from them instead of reading level 0 back.
        The arrays given to :meth:`add` are kept, not copied.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), 4 * one, 0 * one, one)
    >>> rows = [np.array([[1.0], [1.5], [5.0]], np.float32)]
    >>> first = FirstLevels(Levels(per_bin=1), grid, (rows[0][0], rows[0][2]), {}, 2**20)
    >>> first.add(np.zeros(1, np.int64), rows)
    >>> first.rows_of(np.zeros((1, 1), np.int64))[0][0].columns[0].ravel().tolist()
    [1.5, 5.0]
    """

    def __init__(
        self,
        settings: Levels,
        grid: ChunkGrid,
        bounds: tuple[np.ndarray, np.ndarray],
        dtypes: dict[str, np.dtype[Any]],
        budget: int,
        keep_level0: bool = False,
    ) -> None:
        self.how: list[str] | None = None
        if settings.method == AGGREGATE:
            record = aggregate_coarsening(dtypes, settings.reductions, settings.count_name)
            self.how = [record["reductions"][name] for name in dtypes]
        candidates = list(iter_candidates(settings, grid.bins))
        self.steps = candidates if self.how is not None else candidates[:1]
        self.grids = [coarse_grid(grid, ratio) for ratio, _ in self.steps]
        self.merges = [
            None if self.how is not None else BinMerge.plan(grid.bins, coarse.bins)
            for coarse in self.grids
        ]
        self.bounds, self.budget, self.bins = bounds, budget, grid.bins
        self.rows: dict[tuple[int, ...], list[SortedPoints]] | None = {}
        self.nbytes = 0
        self.level0: dict[tuple[int, ...], SortedPoints] | None = {} if keep_level0 else None
        self.level0_nbytes = 0
        self.pending: deque[Future[None]] = deque()
        self.early: _EarlyLevel | None = None

    def add(
        self, chunk: np.ndarray, columns: list[np.ndarray], bin_offsets: np.ndarray | None = None
    ) -> None:
        """Compute the candidates of a chunk (grid index) from its level-0 ``columns``
        (and their ``(P + 1,)`` bin offsets, if known: ``sample`` then groups the bins
        instead of binning the positions again, where that is exact)."""
        if self.rows is None:
            return
        levels = [
            chunk_candidate(columns, bin_offsets, merge, chunk, (self.bounds, grid, cap, self.how))
            for grid, (_, cap), merge in zip(self.grids, self.steps, self.merges, strict=True)
        ]
        self.nbytes += sum(c.nbytes for level in levels for c in level.columns)
        key = tuple(int(c) for c in chunk)
        self.rows[key] = levels
        if self.early is not None:
            self.early.add(key, levels[0])
        if self.level0 is not None and bin_offsets is not None:
            offsets = np.array([0, columns[0].shape[0]], dtype=np.int64)
            self.level0[key] = SortedPoints(
                columns, chunk.reshape(1, -1), offsets, bin_offsets[None]
            )
            self.level0_nbytes += sum(c.nbytes for c in columns)
        if self.level0 is not None and self.nbytes + self.level0_nbytes > self.budget:
            self.level0, self.level0_nbytes = None, 0  # the candidates are worth more
        if self.nbytes > self.budget:
            self.rows = None

    @staticmethod
    def may_keep_all(settings: Levels, grid: ChunkGrid, counts: np.ndarray) -> bool:
        """Whether the first ``sample`` candidate may keep every row (no chunk of
        ``counts`` rows holds more than its cap per coarse bin times its coarse bins): the
        schedule then skips it and computes the next from level 0, which is worth keeping
        (``keep_level0``). False for ``aggregate`` (its candidates are all computed here).

        Examples
        --------
        >>> import numpy as np
        >>> one = np.ones(1, int)
        >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), 4 * one, 0 * one, one)
        >>> FirstLevels.may_keep_all(Levels(per_bin=2), grid, np.array([3, 4]))
        True
        >>> FirstLevels.may_keep_all(Levels(per_bin=2), grid, np.array([5]))
        False
        """
        if settings.method == AGGREGATE:
            return False
        ratio, cap = next(iter_candidates(settings, grid.bins), (None, 0))
        if ratio is None:
            return False
        most = cap * int(np.prod(coarse_grid(grid, ratio).bins))
        return int(np.max(counts, initial=0)) <= most

    def write_first(
        self,
        io: StoreIO,
        chunks: np.ndarray,
        counts: np.ndarray,
        columns: LevelColumns,
        options: WriteOptions,
    ) -> None:
        """Write the first ``sample`` candidate as level 1 while its chunks are computed
        (each coarse shard once all its chunks are), when its layout and its being kept in
        memory are known now: its ``N_max`` is its row block (at most ``per_bin`` rows per
        coarse bin fit one block) and its rows fit the budget whatever level 0 holds.

        ``chunks``, ``counts``: grid indices and rows of every occupied level-0 chunk, all
        of which :meth:`add` will be given. :func:`build_point_levels` keeps the level
        when the schedule writes this candidate as level 1, and deletes it otherwise.
        """
        if self.how is not None or not len(counts):
            return
        grid, (_, cap) = self.grids[0], self.steps[0]
        coarsening = sample_coarsening(cap)
        settings = level_options(options, grid, coarsening, columns)
        most = cap * int(np.prod(grid.bins))
        widths = [
            d.itemsize * int(np.prod(shape)) for d, shape in (columns[0], *columns[1].values())
        ]
        kept = int(np.minimum(counts, most).sum()) * sum(widths)
        if most > settings.block_rows or kept > self.budget:
            return
        self.early = _EarlyLevel(io, grid, columns, settings, chunks)

    def first_written(self) -> LevelStats | None:
        """What :meth:`write_first` wrote, finished (every chunk was added), or None."""
        early, self.early = self.early, None
        return None if early is None else early.finish()

    def discard_first(self) -> None:
        """Delete what :meth:`write_first` wrote (the schedule did not keep it as level 1)."""
        if self.early is not None:
            self.early.discard()
            self.early = None

    def add_beside(
        self, chunk: np.ndarray, columns: list[np.ndarray], bin_offsets: np.ndarray | None = None
    ) -> None:
        """:meth:`add` in a worker thread, beside the caller (the kernels release the GIL).

        The chunks are computed one at a time in the order given; at most
        :data:`_PENDING_CHUNKS` wait, so the caller waits for the oldest beyond them (and
        gets its exception, if any). The arrays given must not change until :meth:`wait`.
        """
        pool = shared_pool("zv-first-levels", 1)
        self.pending.append(pool.submit(self.add, chunk, columns, bin_offsets))
        while len(self.pending) > _PENDING_CHUNKS:
            self.pending.popleft().result()

    def wait(self) -> None:
        """Wait until every chunk given to :meth:`add_beside` is computed; raise the first
        exception of them, once all have ended."""
        pending, self.pending = list(self.pending), deque()
        results_of(pending)

    def level0_rows(self, chunks: np.ndarray) -> tuple[list[SortedPoints], np.ndarray] | None:
        """Level 0's rows of each of ``chunks`` (grid indices, the builder's order) and its
        bins per chunk, when ``keep_level0`` kept every one of them; else None. They are
        dropped here (the caller holds them alone)."""
        rows, self.level0, self.level0_nbytes = self.level0, None, 0
        if rows is None or any(tuple(int(c) for c in chunk) not in rows for chunk in chunks):
            return None
        return [rows[tuple(int(c) for c in chunk)] for chunk in chunks], self.bins

    def take_rows(self, chunks: np.ndarray) -> dict[int, list[SortedPoints]]:
        """:meth:`rows_of`, then drop them here (the caller holds them alone)."""
        rows = self.rows_of(chunks)
        self.rows, self.nbytes = None, 0
        return rows

    def rows_of(self, chunks: np.ndarray) -> dict[int, list[SortedPoints]]:
        """Candidate index → the rows of each of ``chunks`` (grid indices, the builder's
        order); empty when they were dropped or a chunk is missing."""
        rows = self.rows
        if rows is None or any(tuple(int(c) for c in chunk) not in rows for chunk in chunks):
            return {}
        return {
            k: [rows[tuple(int(c) for c in chunk)][k] for chunk in chunks]
            for k in range(len(self.steps))
        }


def chunk_candidate(
    columns: list[np.ndarray],
    bin_offsets: np.ndarray | None,
    merge: BinMerge | None,
    chunk: np.ndarray,
    setting: tuple[tuple[np.ndarray, np.ndarray], ChunkGrid, int, list[str] | None],
) -> SortedPoints:
    """One chunk of a candidate level: ``sample`` by grouping the finer bins where
    ``merge`` allows it (the same rows, :mod:`~zarr_vectors.write._bin_merge`), else
    :func:`chunk_level` (``setting``: its bounds, grid, cap and reductions)."""
    bounds, grid, cap, how = setting
    if how is None and merge is not None and bin_offsets is not None:
        return merge.sample(columns, bin_offsets, cap, chunk)
    return chunk_level(columns, bounds, grid, cap, how)


def bin_blobs(bins: np.ndarray) -> np.ndarray:
    """The vertex-fragment blob (the bins as ranges) of each chunk of ``bins`` (``(m, P +
    1)`` bin offsets), encoded together: row ``i`` is that of ``bins[i]``."""
    return encode_dense_ranges_batch(bins[:, :-1], np.diff(bins, axis=1))
