"""The schedule of a point cloud's levels of detail (spec §4.3.2).

The candidate levels of a :class:`~zarr_vectors.write.levels.Levels` setting, finest first
(:func:`iter_candidates`), the ones kept (:func:`choose_candidates`), the coarse chunk grid
and write options of each, and the settings that may have given a store's recorded levels
(:func:`recorded_settings`, :func:`level_steps`). The coarse rows are computed in
:mod:`zarr_vectors.write._point_levels`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import (
    AGGREGATE,
    DEFAULT_PER_BIN,
    SAMPLE,
    level_most_rows,
    level_rows_per_block,
    level_shard_chunks,
)
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.write.levels import Levels, levels_done, warn_short
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "LevelColumns",
    "candidate_steps",
    "choose_candidates",
    "coarse_grid",
    "iter_candidates",
    "level_options",
    "level_steps",
    "next_ratio",
    "recorded_settings",
]


def next_ratio(ratio: np.ndarray, bins: np.ndarray) -> np.ndarray:
    """The next coarser ``bin_ratio``: per axis the smallest multiple of ``ratio`` that is at
    least twice it and divides the bins per chunk, or ``ratio`` where it equals them.

    Examples
    --------
    >>> import numpy as np
    >>> next_ratio(np.array([1, 2, 3]), np.array([4, 6, 3])).tolist()
    [2, 6, 3]
    """
    out = ratio.copy()
    for d in range(ratio.shape[0]):
        if ratio[d] < bins[d]:
            step = 2 * ratio[d]
            while bins[d] % step:
                step += ratio[d]
            out[d] = step
    return out


def coarse_grid(grid: ChunkGrid, ratio: np.ndarray) -> ChunkGrid:
    """The grid of a level with ``bin_ratio`` ``ratio``: bins ``base_bin_shape * ratio``.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.format.grid import ChunkGrid
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), np.array([4]), 0 * one, one)
    >>> coarse_grid(grid, np.array([2])).bin_shape.tolist()
    [4.0]
    """
    return ChunkGrid(
        grid.chunk_shape, grid.bin_shape * ratio, grid.bins // ratio, grid.origin, grid.shape
    )


LevelColumns = tuple[
    tuple[np.dtype[Any], tuple[int, ...]], dict[str, tuple[np.dtype[Any], tuple[int, ...]]]
]
"""``(dtype, row shape)`` of a level's positions and of each of its attributes."""


def level_options(
    options: WriteOptions, grid: ChunkGrid, coarsening: dict[str, Any], columns: LevelColumns
) -> WriteOptions:
    """The write settings of a coarse point level: level 0's ``options`` with the row block
    :func:`~zarr_vectors.format.levels.level_rows_per_block` gives the level (spec §9.0)
    and the spatial chunks per shard :func:`~zarr_vectors.format.levels.level_shard_chunks`
    gives it (§9.0.1), from its grid (:func:`coarse_grid`), ``coarsening`` and column types
    only; every write path of a coarse point level uses them. Level 0's ``shard_chunks``
    (the caller's) does not apply to coarse levels.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.format.levels import sample_coarsening
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([8.0]), one, 0 * one, 4 * one)
    >>> options = WriteOptions().with_kind_defaults("point_cloud")
    >>> columns = ((np.dtype(np.float32), (1,)), {})
    >>> settings = level_options(options, grid, sample_coarsening(64), columns)
    >>> settings.rows_per_block, settings.shard_shape(1)
    (64, (4,))
    """
    bins = int(np.prod(grid.bins))
    rows = level_rows_per_block(options.block_rows, bins, coarsening)
    widest = max(
        dtype.itemsize * int(np.prod(shape)) for dtype, shape in (columns[0], *columns[1].values())
    )
    most = max(rows, level_most_rows(bins, coarsening))
    per_shard = level_shard_chunks(tuple(int(g) for g in grid.shape), most * widest)
    return replace(options, rows_per_block=rows, shard_chunks=per_shard or 1)


def iter_candidates(settings: Levels, bins: np.ndarray) -> Iterator[tuple[np.ndarray, int]]:
    """``(bin_ratio, cap)`` of each candidate level, finest first (spec §4.3.2 schedule)."""
    ratio, cap = np.ones_like(bins), settings.per_bin
    while True:
        if (ratio < bins).any():
            ratio = next_ratio(ratio, bins)
        elif settings.method == SAMPLE and cap > 1:
            cap //= 2
        else:
            return
        yield ratio, cap


def candidate_steps(settings: Levels, bins: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """``(bin_ratio, cap)`` of every candidate level of ``settings``, finest first (spec
    §4.3.2 schedule): the levels actually written are those :func:`choose_candidates`
    keeps.

    Examples
    --------
    >>> import numpy as np
    >>> [(r.tolist(), c) for r, c in candidate_steps(Levels(per_bin=2), np.array([2]))]
    [([2], 2), ([2], 1)]
    """
    return list(iter_candidates(settings, bins))


def choose_candidates(settings: Levels, totals: list[int], level0: int) -> tuple[list[int], int]:
    """The candidates written as levels 1, 2, ... (their indices), and the vertices of the
    last, from every candidate's vertex count (each computed from the candidate before it).

    The rule of :func:`build_point_levels`: a candidate is written when it holds fewer
    vertices than the last level written, until :func:`levels_done`. A ``sample``
    candidate's count per coarse bin is the smaller of its cap and the count of the bin
    in its source, a function of the source's per-bin counts only; a skipped candidate
    keeps every row of its source, so the counts do not depend on which candidate each
    one was computed from.

    Examples
    --------
    >>> choose_candidates(Levels(count=2), [10, 6, 6, 3], 10)
    ([1, 3], 3)
    """
    chosen: list[int] = []
    total = level0
    for index, count in enumerate(totals):
        if levels_done(settings, len(chosen), total):
            break
        if count < total:
            chosen.append(index)
            total = count
    warn_short(settings, len(chosen), total)
    return chosen, total


def recorded_settings(levels: list[LevelMetadata], bins: np.ndarray) -> list[Levels]:
    """The :class:`Levels` that may have given a point cloud's recorded levels (``count``
    their number), most likely first.

    ``sample`` records each level's cap, not the ``per_bin`` the schedule started from.
    When the first level's coarse bins are smaller than the chunk, its cap is that
    ``per_bin``; otherwise the schedule may have halved a larger one (candidates that
    reduced nothing are skipped): the default ``per_bin`` is tried first when halving it
    reaches the first level's cap, then that cap.

    Examples
    --------
    >>> import numpy as np
    >>> meta = LevelMetadata(level=1, bin_ratio=(4,), bin_shape=(4.0,), vertex_count=3,
    ...     chunk_count=1, coarsening={"method": "sample", "key": "splitmix64", "per_bin": 64})
    >>> [s.per_bin for s in recorded_settings([meta], np.array([4]))]
    [256, 64]
    """
    first = levels[0].coarsening or {}
    if first.get("method") == AGGREGATE:
        reductions = dict(first["reductions"])
        return [
            Levels(
                count=len(levels),
                method=AGGREGATE,
                reductions=reductions,
                count_name=first["count"],
            )
        ]
    cap = int(first["per_bin"])
    start = DEFAULT_PER_BIN
    while start > cap:
        start //= 2
    caps = [cap]
    if start == cap < DEFAULT_PER_BIN and (np.asarray(levels[0].bin_ratio) >= bins).all():
        caps.insert(0, DEFAULT_PER_BIN)
    return [Levels(count=len(levels), per_bin=c) for c in caps]


def level_steps(
    settings: Levels, levels: list[LevelMetadata], bins: np.ndarray
) -> list[tuple[np.ndarray, int, int]] | None:
    """The schedule's candidates up to the last of the recorded ``levels``, each as
    ``(bin_ratio, cap, k)``: ``k`` the index of the recorded level it is, -1 for a
    candidate that was skipped (it reduced nothing). None when the recorded levels are
    not candidates of ``settings`` in order.

    Examples
    --------
    >>> import numpy as np
    >>> meta = LevelMetadata(level=1, bin_ratio=(4,), bin_shape=(4.0,), vertex_count=3,
    ...     chunk_count=1, coarsening={"method": "sample", "key": "splitmix64", "per_bin": 8})
    >>> [(r.tolist(), c, k) for r, c, k in level_steps(Levels(per_bin=8), [meta], np.array([4]))]
    [([2], 8, -1), ([4], 8, 0)]
    """
    steps: list[tuple[np.ndarray, int, int]] = []
    k = 0
    for ratio, cap in iter_candidates(settings, bins):
        if k == len(levels):
            break
        meta = levels[k]
        same = tuple(int(r) for r in ratio) == tuple(meta.bin_ratio) and (
            settings.method == AGGREGATE or cap == (meta.coarsening or {}).get("per_bin")
        )
        steps.append((ratio, cap, k if same else -1))
        k += int(same)
    return steps if k == len(levels) else None
