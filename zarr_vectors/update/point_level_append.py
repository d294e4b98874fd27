"""Levels of detail kept up to date by point-cloud appends (spec §4.3, §5.5, §12.5).

An append reruns the schedule the root records (``level_schedule``, spec §4.3.1 rule 9:
what ``levels=`` asked for; a store without it: the levels as recorded, their count,
method and parameters) over the new level 0, so the result is, byte for byte, what
``write_points`` writes for all the points with the same request.

Every coarse level is a function of level 0's stored rows, and coarsening is chunk-local
(a coarse bin never crosses a chunk). While the schedule gives the recorded levels again
(the same candidates, each still reducing, the schedule stopping after the last one),
:func:`update_levels` rebuilds only the chunks whose level-0 rows changed, from the new
level 0 (``aggregate``) or the new level below (``sample``), and keeps the other chunks'
files as they are (moved or re-indexed only when level 0's are: the grid origin moved or a
level's ``N_max`` grew). Otherwise — a level the data did not allow before, a skipped
candidate now reducing, ``"auto"`` reaching its target at another level — every level is
built again from the new level 0, chunk by chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import AGGREGATE
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import VERTICES
from zarr_vectors.geometry import level0_metadata
from zarr_vectors.read import ChunkRows, LevelReader
from zarr_vectors.store.io import StoreIO, StoreLike, resolve_store
from zarr_vectors.update.point_append import (
    Appended,
    ExistingPoints,
    existing_level,
    replace_level_chunks,
)
from zarr_vectors.update.point_levels import (
    chunk_batches,
    first_levels,
    read_chunks,
    stored_level0,
)
from zarr_vectors.write import (
    BinMerge,
    Levels,
    SortedPoints,
    build_point_levels,
    chunk_candidate,
    chunk_level,
    coarse_grid,
    level_options,
    level_steps,
    levels_done,
    recorded_settings,
    write_level_metadata,
)

__all__ = ["DEFAULT_LEVELS_BUDGET", "StoredLevel", "load_levels", "update_levels"]

Chunk = tuple[int, ...]

DEFAULT_LEVELS_BUDGET = 128 * 2**20
"""Bytes of coarse rows :func:`update_levels` keeps by default (the levels' share, half,
of the streaming writers' default memory budget)."""


@dataclass(frozen=True, slots=True)
class StoredLevel:
    """A coarse level of a store before an append: its metadata and its chunks.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update.point_append import load_existing
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> points = np.random.default_rng(0).random((400, 2)) * 10
    >>> zv.write_points(path, points, chunk_shape=5.0, levels=zv.Levels(count=1, per_bin=8),
    ...                 progress=False)
    >>> level = load_levels(path, load_existing(path, with_levels=True).root)[0]
    >>> level.meta.level, level.meta.bin_ratio, level.points.vertex_count
    (1, (2, 2), 128)
    """

    meta: LevelMetadata
    points: ExistingPoints


def load_levels(store: StoreLike, root: RootMetadata) -> list[StoredLevel]:
    """Read the coarse levels of a point-cloud store about to be appended to (before the
    append changes anything: a store changed in place loses its counts first).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update.point_append import load_existing
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> points = np.random.default_rng(0).random((400, 2)) * 10
    >>> zv.write_points(path, points, chunk_shape=5.0, levels=1, progress=False)
    >>> root = load_existing(path, with_levels=True).root
    >>> [level.meta.level for level in load_levels(path, root)]
    [1]
    """
    io = StoreIO(resolve_store(store, mode="r"))
    return [
        StoredLevel(
            LevelReader(io, root, entry.level).meta, existing_level(io, root, entry.level, None)
        )
        for entry in root.levels
    ]


@dataclass(frozen=True, slots=True)
class _Levels:
    """The recorded levels of an appended store and how to compute a chunk of each."""

    change: Appended
    stored: list[StoredLevel]
    settings: Levels
    names: list[str]
    how: list[str] | None  # aggregate reductions in ``names`` order

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        box = self.change.root.bounding_box
        assert box is not None
        return np.asarray(box[0]), np.asarray(box[1])

    @property
    def metas(self) -> list[LevelMetadata]:
        return [level.meta for level in self.stored]

    def grid(self, ratio: np.ndarray | tuple[int, ...]) -> ChunkGrid:
        return coarse_grid(self.change.grid, np.asarray(ratio, dtype=np.int64))

    def compute(self, columns: list[np.ndarray], ratio: np.ndarray, cap: int) -> SortedPoints:
        return chunk_level(columns, self.bounds, self.grid(ratio), cap, self.how)


def update_levels(
    stored: list[StoredLevel], change: Appended, budget: int = DEFAULT_LEVELS_BUDGET
) -> RootMetadata:
    """Bring the levels of detail of an appended point cloud up to date.

    Each coarse chunk rebuilt is computed once: the rows computed to count a level's
    chunks are kept, while they fit ``budget`` bytes, and written from memory (a chunk
    beyond it is computed again from its source level read back). Building every level
    again reads level 0 once, in batches within ``budget``.

    Parameters
    ----------
    stored
        Its coarse levels before the append (:func:`load_levels`).
    change
        The append, level 0 written (:class:`~zarr_vectors.update.point_append.Appended`).
    budget
        Bytes of coarse rows kept in memory (it does not change the levels).

    Returns
    -------
    RootMetadata
        The root listing the levels (the recorded ones, or those built again).

    Examples
    --------
    :func:`~zarr_vectors.update.point_append.append_to_store` calls it once the new
    rows of level 0 are written (here one point, in bin 0 of chunk ``(0, 0)``); the
    levels are those a one-shot write of all the points has:

    >>> import functools, pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update.point_append import append_to_store, load_existing
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> points = np.random.default_rng(0).random((400, 2)) * 10
    >>> levels = zv.Levels(count=1, per_bin=8)
    >>> zv.write_points(folder / "p.zarr", points, chunk_shape=5.0, bin_shape=2.5,
    ...                 levels=levels, progress=False)
    >>> existing = load_existing(folder / "p.zarr", with_levels=True)
    >>> stored = load_levels(folder / "p.zarr", existing.root)
    >>> new = np.array([[1.0, 1.0]])
    >>> append_to_store(
    ...     folder / "p.zarr",
    ...     existing,
    ...     {(0, 0): 1},
    ...     lambda chunk: ([new], np.zeros(1, np.int64)),
    ...     (points.min(0), points.max(0)),
    ...     lambda stage, done, total: None,
    ...     functools.partial(update_levels, stored),
    ... )
    >>> zv.write_points(folder / "q.zarr", np.concatenate([points, new]), chunk_shape=5.0,
    ...                 bin_shape=2.5, levels=levels, progress=False)
    >>> appended, rewritten = zv.open(folder / "p.zarr"), zv.open(folder / "q.zarr")
    >>> appended.levels[1].vertex_count == rewritten.levels[1].vertex_count
    True
    >>> np.array_equal(appended.read(level=1).positions, rewritten.read(level=1).positions)
    True
    """
    metas = [level.meta for level in stored]
    names = [name for name in change.existing.columns if name != VERTICES]
    how = None
    if (metas[0].coarsening or {}).get("method") == AGGREGATE:
        how = [(metas[0].coarsening or {})["reductions"][name] for name in names]
    write_level_metadata(change.target, level0_metadata(change.grid, change.stats))
    asked = change.root.schedule
    schedules = (
        recorded_settings(metas, change.grid.bins)
        if asked is None
        else [Levels.from_schedule(asked)]
    )
    for settings in schedules:
        levels = _Levels(change, stored, settings, names, how)
        steps = level_steps(settings, metas, change.grid.bins)
        computed = None
        if steps is not None and _same_shards(levels):
            computed = _changed_counts(levels, steps, budget)
        if computed is not None:
            for k in range(len(stored)):
                _rewrite_level(levels, k, computed)
            return change.root
    return _rebuild(_Levels(change, stored, schedules[0], names, how), budget)


def _same_shards(levels: _Levels) -> bool:
    """Whether every recorded level has the chunks per shard (spec §9.0.1) that
    :func:`~zarr_vectors.write.level_options` gives it over the grid after the append (a
    grid that grew may give larger shards; every level is then built again)."""
    change = levels.change
    for level in levels.stored:
        columns = level.points.columns
        types = (columns[VERTICES], {n: t for n, t in columns.items() if n != VERTICES})
        grid = levels.grid(level.meta.bin_ratio)
        coarsening = level.meta.coarsening or {}
        settings = level_options(change.existing.options, grid, coarsening, types)
        if level.points.layouts[VERTICES].shard_chunks != settings.shard_shape(grid.ndim):
            return False
    return True


def _reader(levels: _Levels, level: int) -> Callable[[Chunk, int], list[np.ndarray]]:
    """Reads the rows of an absolute chunk of a level of the store being written."""
    change = levels.change
    reader = LevelReader(change.target, change.root, level)
    columns = [VERTICES, *levels.names]

    def read(chunk: Chunk, rows: int) -> list[np.ndarray]:
        g = tuple(int(c) for c in np.asarray(chunk) - change.grid.origin)
        return reader.read_columns(columns, [ChunkRows(g, np.asarray([[0, rows]], np.int64))])

    return read


@dataclass(slots=True)
class _Computed:
    """The recorded levels' chunks whose level-0 rows changed: how many rows each holds,
    and the rows themselves while they fit ``budget`` bytes (the others are computed
    again when written)."""

    counts: list[dict[Chunk, int]]
    rows: list[dict[Chunk, SortedPoints]]
    budget: int
    nbytes: int = 0

    def add(self, k: int, chunk: Chunk, level: SortedPoints) -> None:
        """Record chunk ``chunk`` of recorded level ``k``; keep its rows if they fit."""
        self.counts[k][chunk] = int(level.chunk_offsets[-1])
        size = sum(values.nbytes for values in level.columns)
        if self.nbytes + size <= self.budget:
            self.rows[k][chunk] = level
            self.nbytes += size

    def take(self, k: int, chunk: Chunk) -> SortedPoints | None:
        """The kept rows of chunk ``chunk`` of recorded level ``k`` (dropped here), or None."""
        level = self.rows[k].pop(chunk, None)
        if level is not None:
            self.nbytes -= sum(values.nbytes for values in level.columns)
        return level


def _changed_counts(
    levels: _Levels, steps: list[tuple[np.ndarray, int, int]], budget: int
) -> _Computed | None:
    """Rows of each recorded level in every chunk whose level-0 rows changed (and the
    rows, within ``budget`` bytes), or None when the recorded levels are no longer the
    schedule's (a skipped candidate now reduces, or a level no longer does).

    Level 0's changed chunks are read in batches with their bin offsets, so a ``sample``
    candidate whose bins merge those of its source is computed by grouping them
    (:func:`~zarr_vectors.write.chunk_candidate`: the same rows, without binning again).
    """
    change = levels.change
    plan = _step_plans(levels, steps)
    computed = _Computed([{} for _ in levels.stored], [{} for _ in levels.stored], budget)
    changed = sorted(_level0_rows(change).items())
    grids = np.asarray([c for c, _ in changed], np.int64).reshape(-1, change.grid.ndim)
    grids -= change.grid.origin
    counts = np.asarray([n for _, n in changed], np.int64)
    reader = LevelReader(change.target, change.root, 0)
    row = sum(t[0].itemsize * int(np.prod(t[1])) for t in change.existing.columns.values())
    batches = chunk_batches(counts, row, budget // 4)
    names = [VERTICES, *levels.names]
    for j, base, offsets in read_chunks(reader, names, (grids, counts), batches):
        finer, finer_offsets, finer_rows = base, offsets, int(counts[j])
        for (grid, cap, k), merge in plan:
            setting = (levels.bounds, grid, cap, levels.how)
            if levels.how is not None:  # aggregate: from level 0
                level = chunk_candidate(base, None, merge, grids[j], setting)
            else:
                level = chunk_candidate(finer, finer_offsets, merge, grids[j], setting)
            n = int(level.chunk_offsets[-1])
            if k < 0:
                if n < finer_rows:
                    return None
                continue
            computed.add(k, changed[j][0], level)
            finer, finer_rows = list(level.columns[: 1 + len(levels.names)]), n
            finer_offsets = level.bin_offsets[0]
    return computed if _same_levels(levels, computed.counts) else None


def _step_plans(
    levels: _Levels, steps: list[tuple[np.ndarray, int, int]]
) -> list[tuple[tuple[ChunkGrid, int, int], BinMerge | None]]:
    """Each step's grid, cap and recorded level (-1: skipped), and for ``sample`` how its
    bins merge those of its source (the last recorded level before it, or level 0)."""
    plans: list[tuple[tuple[ChunkGrid, int, int], BinMerge | None]] = []
    finer = levels.change.grid.bins
    for ratio, cap, k in steps:
        grid = levels.grid(ratio)
        merge = None if levels.how is not None else BinMerge.plan(finer, grid.bins)
        plans.append(((grid, cap, k), merge))
        if k >= 0:
            finer = grid.bins
    return plans


def _same_levels(levels: _Levels, counts: list[dict[Chunk, int]]) -> bool:
    """Whether every recorded level still holds fewer vertices than the one below and the
    schedule stops after the last one, as it did (``"auto"``: the target is reached there
    and not before; a count: as many levels as asked)."""
    change = levels.change
    below = change.stats.vertex_count
    for k, (level, changed) in enumerate(zip(levels.stored, counts, strict=True)):
        total = sum((_rows(level.points) | changed).values())
        if total >= below or levels_done(levels.settings, k, below):
            return False
        below = total
    return levels_done(levels.settings, len(levels.stored), below)


def _rewrite_level(levels: _Levels, k: int, computed: _Computed) -> None:
    """Rewrite the changed chunks of recorded level ``k`` (from the rows ``computed``
    kept, else computed again from the level below) and write its metadata."""
    change, meta = levels.change, levels.stored[k].meta
    counts = computed.counts
    source = 0 if levels.how is not None or k == 0 else levels.metas[k - 1].level
    below = counts[k - 1] if source else _level0_rows(change)
    read = _reader(levels, source)
    grid = levels.grid(meta.bin_ratio)
    cap = int((meta.coarsening or {}).get("per_bin", 1))
    order = _column_order(levels, k)

    def rows(chunk: Chunk) -> tuple[list[np.ndarray], np.ndarray]:
        level = computed.take(k, chunk)
        if level is None:
            level = levels.compute(read(chunk, below[chunk]), np.asarray(meta.bin_ratio), cap)
        offsets = level.bin_offsets[0]
        bins = np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))
        return [level.columns[i] for i in order], bins

    stats = replace_level_chunks(
        levels.stored[k].points,
        grid,
        meta.level,
        (change.source, change.target),
        (counts[k], rows),
        change.progress,
    )
    write_level_metadata(
        change.target,
        LevelMetadata(
            level=meta.level,
            bin_ratio=meta.bin_ratio,
            bin_shape=meta.bin_shape,
            vertex_count=stats.vertex_count,
            chunk_count=stats.chunk_count,
            coarsening=meta.coarsening,
        ),
    )


def _column_order(levels: _Levels, k: int) -> list[int]:
    """Where each column of recorded level ``k``, in the order its arrays are stored, is
    among the computed columns (positions, level 0's attributes, ``aggregate``'s count)."""
    computed = [VERTICES, *levels.names]
    if levels.how is not None:
        computed.append((levels.stored[k].meta.coarsening or {})["count"])
    return [computed.index(name) for name in levels.stored[k].points.columns]


def _level0_rows(change: Appended) -> dict[Chunk, int]:
    """Rows of level 0 after the append in each chunk that changed."""
    old = _rows(change.existing)
    return {c: old.get(c, 0) + n for c, n in change.added.items()}


def _rows(points: ExistingPoints) -> dict[Chunk, int]:
    """Rows stored per absolute chunk of a level."""
    return {tuple(c): int(n) for c, n in zip(points.chunks.tolist(), points.counts, strict=True)}


def _rebuild(levels: _Levels, budget: int) -> RootMetadata:
    """Build every level again from the new level 0: read once in batches, the first
    candidates computed from it and kept within ``budget`` bytes
    (:func:`~zarr_vectors.update.point_levels.first_levels`), the rest chunk by chunk."""
    change = levels.change
    target = change.target
    for meta in levels.metas:
        target.delete_many(target.list_prefix(f"{meta.level}/"))
    existing = existing_level(target, change.root, 0, None)
    base = stored_level0(existing, levels.bounds, target, target)
    first = first_levels(change.root, base, levels.settings, target, 2 * budget)
    built = build_point_levels(base, levels.settings, first)
    return change.root.with_levels(tuple(level.entry() for level in built))
