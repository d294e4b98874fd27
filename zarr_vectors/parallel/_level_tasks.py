"""Levels of detail of a parallel point write, built by the workers chunk by chunk (§4.3).

Point coarsening is chunk-local (spec §4.3.1 rule 3), so the worker that writes a chunk's
level 0 also computes the chunk's candidate levels (:func:`chunk_candidates`): every
candidate of the schedule, each from the one before it (``sample``) or from level 0
(``aggregate``), while it holds the chunk's level-0 rows. It returns their rows per chunk
to the coordinator, which adds them up and chooses the levels the serial writer would
write (:func:`~zarr_vectors.write.choose_candidates`: which candidates depends on the
whole store's counts). A second wave of tasks, one per writer and run where its rows are
held, writes the chosen levels' chunks (:func:`write_level_chunks`): no chunk of level 0
is read back.

A ``sample`` level is computed from the level written below it; a candidate computed from
a candidate that was not written (it reduced nothing: it holds every row of its source, in
another order) is computed again from the level below (:func:`exact_levels`), so every
level is the serial writer's, byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.fragment_encoding import encode_dense_ranges_batch
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import AGGREGATE, aggregate_coarsening, sample_coarsening
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shared import SharedLocation, open_shared
from zarr_vectors.write import (
    BinMerge,
    Levels,
    LevelWriter,
    SortedPoints,
    WriteOptions,
    candidate_steps,
    chunk_candidate,
    chunk_level,
    coarse_grid,
    level_options,
    point_blob_layout,
    shard_major_order,
)

__all__ = [
    "Candidates",
    "ChosenLevel",
    "Columns",
    "LevelRecipe",
    "chunk_candidates",
    "exact_levels",
    "level_recipe",
    "level_shard_rows",
    "write_level_chunks",
]

Columns = tuple[
    tuple[np.dtype[Any], tuple[int, ...]], dict[str, tuple[np.dtype[Any], tuple[int, ...]]]
]


@dataclass(frozen=True, slots=True)
class LevelRecipe:
    """How the workers compute the candidate levels of a chunk.

    Attributes
    ----------
    grid
        The store's chunk grid (level 0's).
    grids, caps, ratios
        Each candidate's coarse grid, ``sample`` cap and ``bin_ratio``, finest first.
    bounds
        The level-0 bounding box (float64 minimum and maximum, as the root records it).
    how
        ``aggregate``: the reduction of each attribute, in column order; None for ``sample``.
    coarsening
        Each candidate's ``coarsening`` object.
    budget
        Bytes of candidate rows a writer task keeps; beyond, it keeps only their counts.
    merges
        ``sample``: how each candidate's bins merge those of its source (the candidate
        before it, level 0 for the first), None where they do not (:class:`BinMerge`).
    """

    grid: ChunkGrid
    grids: list[ChunkGrid]
    caps: list[int]
    ratios: list[tuple[int, ...]]
    bounds: tuple[np.ndarray, np.ndarray]
    how: list[str] | None
    coarsening: list[dict[str, Any]]
    budget: int
    merges: tuple[BinMerge | None, ...] = ()


def level_recipe(
    settings: Levels,
    grid: ChunkGrid,
    bounds: tuple[np.ndarray, np.ndarray],
    dtypes: dict[str, np.dtype[Any]],
    budget: int,
    rows: np.ndarray | None = None,
) -> LevelRecipe:
    """The :class:`LevelRecipe` of ``settings`` for a store's grid, bounds and attributes.

    With ``rows`` (level 0's rows per chunk), the candidates after the first that the
    schedule surely never passes are left out (:func:`_needed`).

    Raises
    ------
    InvalidInputError
        For ``aggregate`` reductions the attributes do not allow, or a taken count name.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), 4 * one, 0 * one, one)
    >>> recipe = level_recipe(Levels(per_bin=2), grid, (one * 0.0, one * 8.0), {}, 2**20)
    >>> recipe.caps, [g.bin_shape.tolist() for g in recipe.grids]
    ([2, 2, 1], [[4.0], [8.0], [8.0]])
    """
    steps = _needed(settings, candidate_steps(settings, grid.bins), grid, rows)
    how: list[str] | None = None
    if settings.method == AGGREGATE:
        record = aggregate_coarsening(dtypes, settings.reductions, settings.count_name)
        how = [record["reductions"][name] for name in dtypes]
        coarsening = [record] * len(steps)
    else:
        coarsening = [sample_coarsening(cap) for _, cap in steps]
    grids = [coarse_grid(grid, ratio) for ratio, _ in steps]
    merges: tuple[BinMerge | None, ...] = ()
    if how is None:
        finer = [grid, *grids][: len(grids)]
        merges = tuple(BinMerge.plan(f.bins, c.bins) for f, c in zip(finer, grids, strict=True))
    return LevelRecipe(
        grid,
        grids,
        [cap for _, cap in steps],
        [tuple(int(r) for r in ratio) for ratio, _ in steps],
        bounds,
        how,
        coarsening,
        budget,
        merges,
    )


def _needed(
    settings: Levels, steps: list[tuple[np.ndarray, int]], grid: ChunkGrid, rows: np.ndarray | None
) -> list[tuple[np.ndarray, int]]:
    """The candidates up to the first whose vertex count is at most the target whatever
    the rows (``"auto"`` only): the schedule stops there or before.

    A candidate holds at most ``min(rows, cap * coarse bins)`` vertices in a chunk
    (``aggregate``: cap 1). Once that bound, summed over the chunks, is at most the
    target, the candidate is written (and is the last) or holds as many vertices as the
    last level written, which then already met the target.
    """
    if settings.count != "auto" or rows is None:
        return steps
    if int(rows.sum()) <= settings.target:
        return []  # level 0 meets the target: no level
    for k, (ratio, cap) in enumerate(steps):
        per_chunk = int(np.prod(grid.bins // ratio)) * (1 if settings.method == AGGREGATE else cap)
        if int(np.minimum(rows, per_chunk).sum()) <= settings.target:
            return steps[: k + 1]
    return steps


@dataclass(slots=True)
class Candidates:
    """The candidate levels of a writer's chunks.

    Attributes
    ----------
    counts
        ``(chunks, candidates)`` rows of each candidate in each chunk (the writer's chunks
        in C order).
    rows
        Per chunk, each candidate's rows; None once they passed the recipe's budget.
    nbytes
        Bytes of the rows kept.
    """

    counts: np.ndarray
    rows: list[list[SortedPoints]] | None
    nbytes: int = 0

    def add(self, i: int, levels: list[SortedPoints], budget: int) -> None:
        """Record chunk ``i``'s candidates, keeping their rows while they fit ``budget``."""
        self.counts[i] = [int(level.chunk_offsets[-1]) for level in levels]
        if self.rows is None:
            return
        self.rows[i] = levels
        self.nbytes += sum(c.nbytes for level in levels for c in level.columns)
        if self.nbytes > budget:
            self.rows, self.nbytes = None, 0


def chunk_candidates(
    columns: list[np.ndarray],
    recipe: LevelRecipe,
    located: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[SortedPoints]:
    """Every candidate level of one chunk from its level-0 rows in storage order.

    ``sample``: candidate ``k`` from candidate ``k - 1`` (the first from level 0), by
    grouping the source's bins where they merge (``located``: the chunk's grid index and
    its level-0 ``(P + 1,)`` bin offsets; the same rows as binning the positions again,
    :func:`~zarr_vectors.write.chunk_candidate`); ``aggregate``: each from level 0.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), 4 * one, 0 * one, one)
    >>> rows = [np.array([[1.0], [1.5], [5.0]], np.float32)]
    >>> recipe = level_recipe(Levels(per_bin=1), grid, (one * 0.0, one * 8.0), {}, 2**20)
    >>> [int(c.chunk_offsets[-1]) for c in chunk_candidates(rows, recipe)]
    [2, 1]
    """
    levels: list[SortedPoints] = []
    source = columns
    chunk, offsets = (None, None) if located is None else located
    for k, (grid, cap) in enumerate(zip(recipe.grids, recipe.caps, strict=True)):
        merge = recipe.merges[k] if recipe.merges and chunk is not None else None
        setting = (recipe.bounds, grid, cap, recipe.how)
        if merge is not None and chunk is not None:
            level = chunk_candidate(source, offsets, merge, chunk, setting)
        else:
            level = chunk_level(source, recipe.bounds, grid, cap, recipe.how)
        levels.append(level)
        if recipe.how is None:
            source, offsets = level.columns, level.bin_offsets[0]
    return levels


def exact_levels(
    candidates: list[SortedPoints], chosen: list[int], recipe: LevelRecipe
) -> list[SortedPoints]:
    """The rows of the chosen candidates as the serial writer computes them (one chunk).

    A ``sample`` level is computed from the level written below it. Candidate ``k`` was
    computed from candidate ``k - 1``: the same when that one was written, else (it was
    skipped: it holds every row of the level below, in its own order) computed again from
    the level below. Level 0 itself, when needed, is the first candidate's source put
    back in level-0 order: the rows of a skipped candidate sorted by level-0 bin, stably
    (a finer bin fixes every coarser one, so the order inside a level-0 bin is level 0's).

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), 4 * one, 0 * one, one)
    >>> rows = [np.array([[1.0], [1.5], [5.0]], np.float32)]
    >>> recipe = level_recipe(Levels(per_bin=1), grid, (one * 0.0, one * 8.0), {}, 2**20)
    >>> [len(c.columns[0]) for c in exact_levels(chunk_candidates(rows, recipe), [1], recipe)]
    [1]
    """
    if recipe.how is not None:
        return [candidates[k] for k in chosen]
    levels: list[SortedPoints] = []
    below: SortedPoints | None = None  # the last level written (None: level 0)
    last = -1
    for k in chosen:
        if k == last + 1 and (below is None or below is candidates[last]):
            level = candidates[k]
        else:
            if below is None:
                below = _level0(candidates[k - 1], recipe)
            level = chunk_level(below.columns, recipe.bounds, recipe.grids[k], recipe.caps[k], None)
        levels.append(level)
        below, last = level, k
    return levels


def _level0(every_row: SortedPoints, recipe: LevelRecipe) -> SortedPoints:
    """Level 0 of a chunk from a candidate holding every one of its rows."""
    rows = max(1, int(every_row.chunk_offsets[-1]))
    return chunk_level(every_row.columns, recipe.bounds, recipe.grid, rows, None)


@dataclass(frozen=True, slots=True)
class ChosenLevel:
    """A level the coordinator chose, as the level writers write it.

    Attributes
    ----------
    number
        The level (1, 2, ...).
    candidate
        Its candidate index in the recipe.
    columns
        ``(dtype, row shape)`` of the positions and of every attribute it stores.
    n_max
        Its rows per chunk (``N_max``), over the whole store.
    counts
        Rows of each occupied chunk (C order, the whole store's chunks).
    """

    number: int
    candidate: int
    columns: Columns
    n_max: int
    counts: np.ndarray


def write_level_chunks(
    location: SharedLocation,
    recipe: LevelRecipe,
    options: WriteOptions,
    work: tuple[np.ndarray, np.ndarray, list[ChosenLevel]],
    written: list[tuple[int, Candidates | None]],
) -> int:
    """Write the chosen levels' shards of some writers' chunks from their candidates.

    A coarse level packs several chunks per shard (spec §9.0.1), so the writers given
    together hold every chunk of each coarse shard they touch (:func:`shard_groups`).

    Parameters
    ----------
    location
        The destination.
    recipe
        How the candidates were computed.
    options
        The write settings.
    work
        The writers' chunks (grid indices, C order), their positions among the store's
        occupied chunks, and the chosen levels.
    written
        What the level-0 writers of the chunks returned, in order: their rows, and what
        they kept of the chunks' candidates.

    Returns
    -------
    int
        Rows written, over every level.

    Raises
    ------
    CorruptChunkError
        When the rows kept were dropped, or a chunk's rows are not those planned.
    """
    chunks, where, chosen = work
    held: list[list[SortedPoints]] = []
    for _, candidates in written:
        if candidates is None or candidates.rows is None:
            raise CorruptChunkError("a writer dropped its candidate levels; they cannot be written")
        held.extend(candidates.rows)
    if not chosen:
        return 0
    picked = [c.candidate for c in chosen]
    io = open_shared(location)
    exact = [exact_levels(rows, picked, recipe) for rows in held]
    total = 0
    for k, level in enumerate(chosen):
        writer = _level_writer(io, level, recipe, options)
        for i in shard_major_order(chunks, writer.shard_chunks).tolist():
            _add_chunk(writer, level, chunks[i], exact[i][k], int(level.counts[where[i]]))
            total += int(exact[i][k].chunk_offsets[-1])
        writer.flush()
    return total


def level_shard_rows(
    recipe: LevelRecipe, options: WriteOptions, chosen: tuple[ChosenLevel, ...]
) -> int:
    """Chunks along the first axis of the tallest shard of the chosen levels (1 without
    levels): writers whose chunks are cut where ``g_1 // rows`` changes hold whole coarse
    shards (chunks per shard are powers of two, so every level's shards nest in these).

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), 4 * one, 0 * one, 5 * one)
    >>> recipe = level_recipe(Levels(per_bin=2), grid, (one * 0.0, one * 40.0), {}, 2**20)
    >>> columns = ((np.dtype(np.float32), (1,)), {})
    >>> level = ChosenLevel(1, 0, columns, 16, np.ones(5, np.int64))
    >>> level_shard_rows(recipe, WriteOptions(rows_per_block=64), (level,))
    8
    """
    tallest = 1
    for level in chosen:
        grid = recipe.grids[level.candidate]
        settings = level_options(options, grid, recipe.coarsening[level.candidate], level.columns)
        per = settings.shard_shape(grid.ndim)
        tallest = max(tallest, per[0] if per else 1)
    return tallest


def _level_writer(
    io: StoreIO, level: ChosenLevel, recipe: LevelRecipe, options: WriteOptions
) -> LevelWriter:
    """A chunk writer of a chosen level (its shared documents are the coordinator's)."""
    grid = recipe.grids[level.candidate]
    return LevelWriter(
        io,
        level.number,
        grid,
        level.columns,
        level.n_max,
        level_options(options, grid, recipe.coarsening[level.candidate], level.columns),
        blobs=point_blob_layout(grid),
        documents=False,
    )


def _add_chunk(
    writer: LevelWriter, level: ChosenLevel, chunk: np.ndarray, rows: SortedPoints, planned: int
) -> None:
    """Encode one chunk of a level, checking it holds the rows the coordinator planned."""
    if int(rows.chunk_offsets[-1]) != planned:
        raise CorruptChunkError(
            f"chunk {chunk.tolist()} of level {level.number} holds "
            f"{int(rows.chunk_offsets[-1])} rows, {planned} planned"
        )
    bins = rows.bin_offsets
    blob = encode_dense_ranges_batch(bins[:, :-1], np.diff(bins, axis=1))[0]
    writer.add_chunk(chunk, rows.columns[: 1 + len(level.columns[1])], blob)
