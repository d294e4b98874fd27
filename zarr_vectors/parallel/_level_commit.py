"""The coordinator's part of the levels of detail of a parallel point write (spec §4.3).

The writers return their chunks' candidate counts (:func:`written_summary`); the coordinator
chooses the levels from their sums (:func:`chosen_levels`, the serial writer's rule), and
once the workers have written the chosen levels' chunks, writes each level's shared
documents and group metadata (:func:`commit_level`), as it does level 0's
(:func:`keep_level`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import AGGREGATE
from zarr_vectors.format.metadata import LevelEntry, LevelMetadata
from zarr_vectors.parallel._level_tasks import Candidates, ChosenLevel, Columns, LevelRecipe
from zarr_vectors.store.io import StoreIO
from zarr_vectors.write import (
    Levels,
    LevelStats,
    LevelWriter,
    WriteOptions,
    choose_candidates,
    level_options,
    point_blob_layout,
    round_up,
    write_level_metadata,
)

__all__ = ["chosen_levels", "commit_level", "keep_level", "written_summary"]


def written_summary(written: tuple[int, Candidates | None]) -> tuple[int, np.ndarray | None, bool]:
    """What the coordinator needs of a writer (a task): its rows, its chunks' candidate
    counts, and whether it kept the candidates' rows."""
    rows, candidates = written
    if candidates is None:
        return rows, None, False
    return rows, candidates.counts, candidates.rows is not None


def chosen_levels(
    settings: Levels,
    recipe: LevelRecipe,
    layout: tuple[Columns, WriteOptions],
    counts: np.ndarray,
    rows: int,
) -> tuple[ChosenLevel, ...]:
    """The levels the serial writer writes, from every chunk's candidate counts.

    Parameters
    ----------
    settings
        The levels asked for.
    recipe
        The candidates the writers computed.
    layout
        Level 0's column types and the write settings.
    counts
        ``(chunks, candidates)`` rows of each candidate in each occupied chunk (C order).
    rows
        Level 0's rows.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.parallel._level_tasks import level_recipe
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), 4 * one, 0 * one, one)
    >>> settings = Levels(count=2, per_bin=2)
    >>> recipe = level_recipe(settings, grid, (one * 0.0, one * 8.0), {}, 2**20)
    >>> columns = ((np.dtype(np.float32), (1,)), {})
    >>> counts = np.array([[3, 2, 1], [2, 2, 1]])  # two chunks of 3 and 2 rows
    >>> options = WriteOptions(rows_per_block=8)
    >>> chosen = chosen_levels(settings, recipe, (columns, options), counts, 5)
    >>> [(level.number, level.candidate) for level in chosen]
    [(1, 1), (2, 2)]
    """
    level0, options = layout
    picked, _ = choose_candidates(settings, counts.sum(axis=0).tolist(), rows)
    return tuple(
        ChosenLevel(
            number,
            k,
            _level_columns(level0, recipe.coarsening[k]),
            round_up(
                int(counts[:, k].max()),
                _options(
                    options, recipe, k, _level_columns(level0, recipe.coarsening[k])
                ).block_rows,
            ),
            counts[:, k],
        )
        for number, k in enumerate(picked, start=1)
    )


def _options(options: WriteOptions, recipe: LevelRecipe, k: int, columns: Columns) -> WriteOptions:
    """The write settings of candidate ``k`` with its ``columns`` (its row block and
    chunks per shard, spec §9.0, §9.0.1)."""
    return level_options(options, recipe.grids[k], recipe.coarsening[k], columns)


def _level_columns(level0: Columns, coarsening: dict[str, Any]) -> Columns:
    """The column types of a coarse level: level 0's, then ``aggregate``'s count."""
    attributes = dict(level0[1])
    if coarsening["method"] == AGGREGATE:
        attributes[coarsening["count"]] = (np.dtype(np.int64), ())
    return level0[0], attributes


def keep_level(
    io: StoreIO,
    layout: tuple[int, ChunkGrid, Columns, int, WriteOptions],
    chunks: np.ndarray,
    counts: np.ndarray,
) -> LevelStats:
    """Write the shared documents of a level whose chunks the workers wrote."""
    number, grid, columns, n_max, options = layout
    writer = LevelWriter(io, number, grid, columns, n_max, options, blobs=point_blob_layout(grid))
    for g, count in zip(chunks, counts.tolist(), strict=True):
        writer.keep_chunk(g, count)
    return writer.finish()


def commit_level(
    io: StoreIO,
    level: ChosenLevel,
    recipe: LevelRecipe,
    options: WriteOptions,
    chunks: np.ndarray,
) -> LevelEntry:
    """Write a coarse level's shared documents and group metadata; its root entry."""
    grid = recipe.grids[level.candidate]
    layout = (
        level.number,
        grid,
        level.columns,
        level.n_max,
        _options(options, recipe, level.candidate, level.columns),
    )
    stats = keep_level(io, layout, chunks, level.counts)
    meta = LevelMetadata(
        level=level.number,
        bin_ratio=recipe.ratios[level.candidate],
        bin_shape=tuple(float(b) for b in grid.bin_shape),
        vertex_count=stats.vertex_count,
        chunk_count=stats.chunk_count,
        coarsening=recipe.coarsening[level.candidate],
    )
    write_level_metadata(io, meta)
    return meta.entry()
