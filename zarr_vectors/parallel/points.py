"""Parallel point-cloud writes on dask.distributed: many workers, one store, nothing lost.

The write runs in stages, each waited for as a whole (:meth:`~._cluster.Tasks.run`):

1. one task per partition loads and checks it (:func:`~._partitions.load_points`); the
   coordinator receives only its size, bounds, column types and (without ``chunk_shape``)
   its sample of rows, and fixes the grid with the serial writer's own functions
   (``plan_grid``, ``root_metadata``);
2. one task per partition sorts its rows by chunk and returns the rows per chunk; the
   coordinator adds them up, sets ``N_max`` and cuts the chunks, in C order, into buckets
   of about equal rows, one per writer task;
3. per partition and bucket a task cuts out the partition's rows of the bucket (the shuffle:
   dask moves these pieces to the writers), and one task per bucket writes its chunks'
   shards straight into the destination — disjoint keys, no shared document;
   With ``levels``, each writer also computes its chunks' candidate levels of detail
   (:mod:`~._level_tasks`) and returns their rows per chunk; the coordinator adds them up,
   chooses the levels (as the serial writer does) and one task per writer, where its
   candidates are held, writes the chosen levels' chunks;
4. the coordinator writes the array metadata, ``vertex_counts``, the level metadata and the
   root metadata, last.

The store equals, byte for byte apart from ``creation_timestamp`` and ``commit``, what
:func:`~zarr_vectors.write_points` writes for the concatenated partitions. Until step 4 ends
the destination does not open as a complete store (spec §2.4); a failure anywhere raises and
commits nothing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors._deprecation import warn_renamed
from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError, ParallelWriteError
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import POINT_CLOUD
from zarr_vectors.geometry import commit_points, level0_metadata
from zarr_vectors.kernels.sampling import PointSample, merge_samples, sample_rows
from zarr_vectors.parallel._cluster import Tasks, cluster_client, write_tasks
from zarr_vectors.parallel._level_commit import (
    chosen_levels,
    commit_level,
    keep_level,
    written_summary,
)
from zarr_vectors.parallel._level_tasks import (
    ChosenLevel,
    LevelRecipe,
    level_recipe,
    level_shard_rows,
    write_level_chunks,
)
from zarr_vectors.parallel._partitions import ColumnTypes, Loaded, Schema, submit_loads
from zarr_vectors.parallel._point_tasks import (
    Binning,
    LevelSpec,
    bin_partition,
    chunk_counts,
    take_chunks,
    write_chunks,
)
from zarr_vectors.store.io import StoreIO, StoreLike
from zarr_vectors.store.shared import SharedLocation, check_shareable, shared_location
from zarr_vectors.store.target import check_destination, write_target
from zarr_vectors.update import Level0, build_written_levels, point_level_settings
from zarr_vectors.update.point_stream import DEFAULT_MEMORY_BUDGET
from zarr_vectors.write import (
    Levels,
    WriteOptions,
    dense_bounds_span,
    grid_indices,
    name_new_arrays,
    new_store,
    round_up,
    write_point_level,
    writer_arguments,
)

__all__ = ["write_points_parallel"]

_BUCKET_BYTES = 256 * 2**20
"""Rows a writer task holds at most, in bytes of columns (more buckets than workers else)."""

_CANDIDATE_BYTES = _BUCKET_BYTES
"""Bytes of candidate levels a writer task keeps for the level writers; when one holds more,
the coordinator builds the levels from the written chunks instead."""

Stats = tuple[Schema, int, np.ndarray, np.ndarray, PointSample | None]


def write_points_parallel(
    store: StoreLike,
    partitions: Any,
    *,
    chunk_shape: float | Sequence[float] | None = None,
    bin_shape: float | Sequence[float] | None = None,
    attribute_names: Sequence[str] | None = None,
    client: Any = None,
    scheduler_address: str | None = None,
    n_workers: int = 2,
    units: str | Sequence[str] | None = None,
    mode: writer_arguments.WriteMode = "w-",
    overwrite: bool | None = None,
    options: WriteOptions | None = None,
    progress: ProgressOption = None,
    storage_options: Mapping[str, Any] | None = None,
    attributes: Sequence[str] | None = None,
    levels: int | str | Levels | None = None,
) -> None:
    """Write a point cloud from partitions, binned and written by dask.distributed workers.

    The store is byte for byte (apart from ``creation_timestamp`` and ``commit``) the one
    :func:`~zarr_vectors.write_points` writes for the partitions concatenated in order.

    Parameters
    ----------
    store
        Destination every worker can reach: a local directory (on a file system the
        workers share) or a remote store (URL or zarr store object, not a memory store
        nor a zip file).
    partitions
        A list whose items are each a positions array, a mapping ``{"positions": ...,
        "attributes": {...}, "object_ids": ...}`` (as :func:`~zarr_vectors.write_points`
        takes them) or the path of a ``.npy`` file (positions) or ``.npz`` file
        (``positions``, optional ``object_ids``, every other key an attribute); or a dask
        array ``(n, D)`` (its blocks along axis 0 are the partitions); or a dask dataframe
        with position columns ``x, y[, z[, w]]`` (or ``options.axis_names``), an optional
        ``object_id`` column and attribute columns. Every partition must have the same
        position dtype, dimension and attribute columns; the rows of partition ``k``
        follow those of partition ``k - 1``. Paths are opened by the workers.
    chunk_shape, bin_shape
        As for :func:`~zarr_vectors.write_points` (the default chunk shape depends on all
        the bounds and on a sample of the rows, which the first stage gathers; the sample
        does not depend on how the rows are partitioned, so the store is the serial one).
    attribute_names
        Names of the attributes to keep (default: every attribute of the partitions).
    client
        A ``distributed.Client`` to run on.
    scheduler_address
        Without ``client``: address of a running scheduler (``"tcp://host:8786"``).
    n_workers
        Without either: worker processes of a ``LocalCluster`` started and closed here
        (one thread each). A script that uses it needs ``if __name__ == "__main__":``,
        as any program starting worker processes does.
    units
        Unit of the coordinates, as for :func:`~zarr_vectors.write_points`.
    mode
        ``"w-"`` (default): refuse an existing store; ``"w"``: replace an existing Zarr
        Vectors store (never anything else).
    overwrite
        Deprecated: ``overwrite=True`` is ``mode="w"``. A local store is replaced only
        once the new one is complete (it is written beside it and swapped in), so a failed
        write leaves it as it was; a remote store is cleared first.
    storage_options
        URLs only: options of the fsspec filesystem, as for :func:`zarr_vectors.open`.
    attributes
        Deprecated: a list of names is ``attribute_names`` (``attributes`` is a mapping of
        values everywhere else; here the values come with the partitions).
    options
        Less common settings (:class:`~zarr_vectors.WriteOptions`).
    progress
        A progress bar per stage over its tasks: None (default) on a terminal or in
        Jupyter, True always, False never, or a callable ``progress(stage, done, total)``.
    levels
        Levels of detail, as for :func:`~zarr_vectors.write_points` (None: none): the
        levels ``write_points`` writes for the same points, byte for byte. Point
        coarsening is chunk-local, so the worker writing a chunk's level 0 also computes
        the chunk's candidate levels; the coordinator chooses the levels from their
        summed counts and the same workers write them (level 0 is not read back). A
        writer whose candidates take more than 256 MiB keeps only their counts; the
        coordinator then builds the levels from the written chunks (level 0 read once, in
        batches; its candidates kept within 128 MiB, beyond that computed again chunk by
        chunk).

    Raises
    ------
    InvalidInputError
        For invalid partitions (raised before the destination is touched), partitions that
        do not match each other, or a destination workers cannot share.
    StoreExistsError
        When the destination holds data and ``mode`` is ``"w-"``.
    ParallelWriteError
        When a task fails or workers keep dying (``KilledWorker``): nothing is committed,
        the destination does not open as a store, and a local destination is removed.
    MissingDependencyError
        Without the ``distributed`` extra.

    Notes
    -----
    The coordinator holds only sizes, bounds and per-chunk row counts; the rows go from
    the partition tasks to the writer tasks through dask. A worker that dies has its tasks
    run again elsewhere by the scheduler; every task is idempotent (a writer run twice
    writes the same bytes to the same keys), so the retried write is the same store.
    In-memory partitions travel inside their tasks so that they can be run again; for
    data larger than the coordinator's memory, pass files or a dask collection.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import distributed
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> tiles = [np.array([[1, 1, 1], [12, 3, 4]], dtype=np.float32),
    ...          np.array([[25, 25, 25]], dtype=np.float32)]
    >>> with distributed.Client(processes=False, n_workers=1, dashboard_address=":0") as client:
    ...     zv.write_points_parallel(path, tiles, chunk_shape=10.0, client=client)
    >>> zv.open(path).vertex_count
    3
    """
    target = writer_arguments.new_store_destination(
        store, mode, overwrite, storage_options, "write_points_parallel"
    )
    store, overwrite = target.store, target.overwrite
    options = writer_arguments.check_settings(
        POINT_CLOUD, chunk_shape=chunk_shape, bin_shape=bin_shape, options=options, units=units
    )
    names = _attribute_names(attributes, attribute_names)
    settings = point_level_settings(levels)
    check_shareable(store)
    check_destination(store, overwrite=overwrite)
    with (
        progress_reporter(progress) as report,
        cluster_client(client, scheduler_address, n_workers) as dask_client,
        write_tasks(dask_client, report if report.active else None) as tasks,
    ):
        loaded = submit_loads(tasks, partitions, names, options.axis_names)
        sampled = chunk_shape is None
        schema, n, bounds, sample = _combine(
            tasks.run(
                [tasks.submit(f"stats-{k}", _stats, f, sampled) for k, f in enumerate(loaded)],
                "loading partitions",
            )
        )
        grid = new_store.plan_grid(bounds, n, chunk_shape, bin_shape, schema[1], sample)
        root = new_store.root_metadata(POINT_CLOUD, grid, options, bounds)
        if bounds is None:
            with write_target(store, overwrite=overwrite) as io:
                name_new_arrays(io, root)
                columns = _empty_columns(schema)
                level = write_point_level(io, 0, columns, grid, options, _no_bounds(schema))
                commit_points(
                    io,
                    root,
                    grid,
                    level,
                    object_chunks=options.object_chunk_index,
                    object_order=options.object_order,
                )
            return
        binning = Binning(grid, *dense_bounds_span(bounds, grid))
        written = (root, options, settings)
        _write_binned(tasks, (store, overwrite), loaded, schema, binning, written)


def _write_binned(
    tasks: Tasks,
    destination: tuple[StoreLike, bool],
    loaded: list[Any],
    schema: Schema,
    binning: Binning,
    written: tuple[RootMetadata, WriteOptions, Levels | None],
) -> None:
    """Bin the loaded partitions, write their chunks (and candidate levels of detail) in
    buckets, write the chosen levels, then commit the store with its root and options."""
    root, options, levels = written
    binned = [tasks.submit(f"bin-{k}", bin_partition, f, binning) for k, f in enumerate(loaded)]
    counting = [tasks.submit(f"counts-{k}", chunk_counts, b) for k, b in enumerate(binned)]
    counts = tasks.run(counting, "binning partitions")
    tasks.release([*loaded, *counting])  # the binned copies are what the writers read
    plan = _plan_writers(tasks.workers, schema, binning, counts, options)
    recipe = None if levels is None else _recipe(levels, root, plan)
    store, overwrite = destination
    with write_target(store, overwrite=overwrite) as io:
        name_new_arrays(io, root)
        location = shared_location(io)
        writes = _submit_writers(tasks, location, plan, binned, counts, recipe)
        summaries = tasks.run(
            [tasks.submit(f"written-{b}", written_summary, w) for b, w in enumerate(writes)],
            "writing chunks",
        )
        chosen = None
        if levels is not None and recipe is not None and all(s[2] for s in summaries):
            chosen = _write_levels(tasks, location, (plan, recipe, levels), summaries, writes)
        tasks.release()  # from here on, no writer runs again
        _commit(io, (root, levels), plan, [s[0] for s in summaries], chosen)


def _recipe(levels: Levels, root: RootMetadata, plan: _WriterPlan) -> LevelRecipe | None:
    """What the writers compute of the levels of detail (None for an empty store)."""
    if root.bounding_box is None:
        return None
    bounds = (np.asarray(root.bounding_box[0]), np.asarray(root.bounding_box[1]))
    spec = plan.spec
    dtypes = {name: dtype for name, (dtype, _) in spec.columns[1].items()}
    grid = spec.binning.grid
    return level_recipe(levels, grid, bounds, dtypes, _CANDIDATE_BYTES, plan.totals)


_Chosen = tuple[tuple[ChosenLevel, ...], LevelRecipe]


def _write_levels(
    tasks: Tasks,
    location: SharedLocation,
    planned: tuple[_WriterPlan, LevelRecipe, Levels],
    summaries: list[tuple[int, np.ndarray | None, bool]],
    writes: list[Any],
) -> _Chosen:
    """Choose the levels from the writers' candidate counts and have each writer's chunks
    of them written where the candidates are held (no level-0 chunk is read back)."""
    plan, recipe, levels = planned
    spec = plan.spec
    counts = np.concatenate([s[1] for s in summaries if s[1] is not None])
    rows = int(plan.totals.sum())
    chosen = chosen_levels(levels, recipe, (spec.columns, spec.options), counts, rows)
    if chosen:
        binning = spec.binning
        grids = grid_indices(plan.chunks, binning.span_lo, binning.span_shape, binning.grid)
        rows_per_shard = level_shard_rows(recipe, spec.options, chosen)
        futures = [
            tasks.submit(
                f"levels-{n}",
                write_level_chunks,
                location,
                recipe,
                spec.options,
                (grids[a:z], np.arange(a, z), list(chosen)),
                [writes[b] for b in group],
            )
            for n, (group, a, z) in enumerate(_shard_groups(plan.buckets, grids, rows_per_shard))
        ]
        tasks.run(futures, "writing levels")
    return chosen, recipe


def _shard_groups(
    buckets: list[tuple[int, int]], grids: np.ndarray, rows: int
) -> list[tuple[list[int], int, int]]:
    """The writer buckets joined into runs that hold whole coarse shards: a run ends where
    the shard row (``g_1 // rows``) changes between one bucket and the next. Each run as
    ``(buckets, first chunk, end chunk)``.

    Examples
    --------
    >>> grids = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [2, 0], [2, 1]])
    >>> _shard_groups([(0, 2), (2, 4), (4, 6)], grids, 2)
    [([0, 1], 0, 4), ([2], 4, 6)]
    >>> _shard_groups([(0, 2), (2, 4), (4, 6)], grids, 1)
    [([0], 0, 2), ([1], 2, 4), ([2], 4, 6)]
    """
    groups: list[tuple[list[int], int, int]] = []
    for b, (a, z) in enumerate(buckets):
        if groups and grids[a - 1, 0] // rows == grids[a, 0] // rows:
            joined, first, _ = groups[-1]
            groups[-1] = ([*joined, b], first, z)
        else:
            groups.append(([b], a, z))
    return groups


@dataclass(frozen=True, slots=True)
class _WriterPlan:
    """The occupied chunks (flat, C order), their rows, and the chunks of each writer."""

    spec: LevelSpec
    chunks: np.ndarray
    totals: np.ndarray
    buckets: list[tuple[int, int]]


def _plan_writers(
    workers: int,
    schema: Schema,
    binning: Binning,
    counts: list[tuple[np.ndarray, np.ndarray]],
    options: WriteOptions,
) -> _WriterPlan:
    """Add up the rows per chunk, set ``N_max`` and cut the chunks into writer buckets."""
    chunks, totals = _totals(counts)
    n_max = round_up(int(totals.max()), options.block_rows)
    spec = LevelSpec(binning, (_position_type(schema), schema[2]), n_max, options)
    count = _bucket_count(workers, schema, int(totals.sum()), totals.shape[0])
    cuts = _shard_cuts(chunks, binning, options.shard_shape(binning.grid.ndim))
    return _WriterPlan(spec, chunks, totals, _buckets(totals, count, cuts))


def _shard_cuts(chunks: np.ndarray, binning: Binning, shard_chunks: tuple[int, ...]) -> np.ndarray:
    """Positions where the chunks (flat, C order) may be cut between writers.

    With several chunks per shard (spec §9.0.1) a shard is written whole by one writer, so
    buckets are cut only where the shard row along the first axis changes: every shard's
    chunks then fall in one bucket. Otherwise anywhere.
    """
    if not shard_chunks:
        return np.arange(1, chunks.shape[0])
    grid = binning.grid
    g = grid_indices(chunks, binning.span_lo, binning.span_shape, grid)
    row = g[:, 0] // shard_chunks[0]
    return np.flatnonzero(row[1:] != row[:-1]) + 1


def _commit(
    io: StoreIO,
    committed: tuple[RootMetadata, Levels | None],
    plan: _WriterPlan,
    written: list[int],
    chosen: _Chosen | None = None,
) -> None:
    """Check what the writers wrote, then write every shared document and the levels of
    detail (written by the workers, ``chosen``; else built here), the root last."""
    root, levels = committed
    for (a, z), rows in zip(plan.buckets, written, strict=True):
        if rows != int(plan.totals[a:z].sum()):
            raise ParallelWriteError(
                f"a writer wrote {rows} rows where {int(plan.totals[a:z].sum())} were planned"
            )
    spec, grid = plan.spec, plan.spec.binning.grid
    chunks = grid_indices(plan.chunks, spec.binning.span_lo, spec.binning.span_shape, grid)
    stats = keep_level(io, (0, grid, spec.columns, spec.n_max, spec.options), chunks, plan.totals)
    if chosen is not None and levels is not None:
        entries = [commit_level(io, level, chosen[1], spec.options, chunks) for level in chosen[0]]
        root = root.with_levels(tuple(entries), levels.to_schedule())
    elif levels is not None:
        level0 = Level0(
            level0_metadata(grid, stats),
            grid,
            chunks,
            plan.totals,
            (spec.columns[0], dict(spec.columns[1])),
            spec.options,
        )
        root = build_written_levels(io, root, level0, levels, budget=DEFAULT_MEMORY_BUDGET)
    commit_points(
        io,
        root,
        grid,
        stats,
        object_chunks=spec.options.object_chunk_index,
        object_order=spec.options.object_order,
    )


def _submit_writers(
    tasks: Tasks,
    location: SharedLocation,
    plan: _WriterPlan,
    binned: list[Any],
    counts: list[tuple[np.ndarray, np.ndarray]],
    recipe: LevelRecipe | None,
) -> list[Any]:
    """One writer task per bucket, fed by the pieces of the partitions that reach it."""
    writes = []
    for b, (a, z) in enumerate(plan.buckets):
        first, last = int(plan.chunks[a]), int(plan.chunks[z - 1])
        pieces = [
            tasks.submit(f"take-{b}-{p}", take_chunks, binned[p], first, last)
            for p, (occupied, _) in enumerate(counts)
            if _overlaps(occupied, first, last)
        ]
        writes.append(
            tasks.submit(
                f"write-{b}", write_chunks, location, plan.spec, plan.chunks[a:z], pieces, recipe
            )
        )
    return writes


def _attribute_names(
    attributes: Sequence[str] | None, attribute_names: Sequence[str] | None
) -> tuple[str, ...] | None:
    """The names of the attributes to keep, from ``attribute_names`` or the deprecated
    list ``attributes``.

    Raises
    ------
    InvalidInputError
        For a mapping of values, or both spellings at once.
    """
    if attributes is not None:
        if isinstance(attributes, Mapping):
            raise InvalidInputError(
                "the attribute values of a parallel write come with the partitions; name the "
                "attributes to keep with attribute_names=[...]"
            )
        warn_renamed("attributes=[names]", "attribute_names=[names]", stacklevel=4)
        if attribute_names is not None:
            raise InvalidInputError("give attribute_names only (attributes is its old name)")
        attribute_names = attributes
    if attribute_names is None:
        return None
    if isinstance(attribute_names, str):
        return (attribute_names,)
    return tuple(str(a) for a in attribute_names)


def _stats(loaded: Loaded, sampled: bool) -> Stats:
    """What the coordinator needs of a loaded partition (a task): with ``sampled``, also
    its sample of rows for the default chunk shape."""
    sample = sample_rows(loaded.positions) if sampled and loaded.positions.shape[0] else None
    return loaded.schema, int(loaded.positions.shape[0]), loaded.lo, loaded.hi, sample


def _describe(types: ColumnTypes) -> str:
    return "{" + ", ".join(f"{k}: {d}{list(s) if s else ''}" for k, (d, s) in types.items()) + "}"


def _combine(
    stats: list[Stats],
) -> tuple[Schema, int, tuple[np.ndarray, np.ndarray] | None, np.ndarray | None]:
    """The common schema, the total rows, the bounds and the merged sample of rows (when
    the partitions give one) of every partition together.

    Raises
    ------
    InvalidInputError
        When partitions differ in position dtype, dimension or attribute columns.
    """
    first = stats[0][0]
    for k, (schema, *_) in enumerate(stats):
        if schema[:2] != first[:2]:
            raise InvalidInputError(
                f"partition {k} has positions ({schema[1]}-D, {schema[0]}); partition 0 has "
                f"({first[1]}-D, {first[0]}): every partition must match"
            )
        if schema[2] != first[2]:
            raise InvalidInputError(
                f"partition {k} has the columns {_describe(schema[2])}, partition 0 "
                f"{_describe(first[2])}: every partition must match"
            )
    n = sum(s[1] for s in stats)
    filled = [s for s in stats if s[1]]
    if not filled:
        return first, 0, None, None
    lo = np.min(np.stack([s[2] for s in filled]), axis=0)
    hi = np.max(np.stack([s[3] for s in filled]), axis=0)
    sample: PointSample | None = None
    for part in filled:
        if part[4] is not None:
            sample = merge_samples(sample, part[4])
    return first, n, (lo, hi), None if sample is None else sample[0]


def _position_type(schema: Schema) -> tuple[np.dtype[Any], tuple[int, ...]]:
    return schema[0], (schema[1],)


def _empty_columns(schema: Schema) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    positions = np.empty((0, schema[1]), schema[0])
    return positions, {k: np.empty((0, *s), d) for k, (d, s) in schema[2].items()}


def _no_bounds(schema: Schema) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(schema[1]), np.zeros(schema[1])


def _totals(counts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Occupied flat chunk indices (sorted) and their rows over every partition."""
    flat = np.concatenate([c[0] for c in counts])
    rows = np.concatenate([c[1] for c in counts])
    chunks, where = np.unique(flat, return_inverse=True)
    return chunks, np.bincount(where, weights=rows, minlength=chunks.shape[0]).astype(np.int64)


def _bucket_count(workers: int, schema: Schema, n: int, n_chunks: int) -> int:
    """Writer tasks: twice the workers, more when that would not fit :data:`_BUCKET_BYTES`."""
    row = schema[0].itemsize * schema[1] + sum(
        d.itemsize * math.prod(s) for d, s in schema[2].values()
    )
    wanted = max(2 * workers, math.ceil(n * row / _BUCKET_BYTES))
    return max(1, min(n_chunks, wanted))


def _buckets(totals: np.ndarray, count: int, allowed: np.ndarray) -> list[tuple[int, int]]:
    """Cut the chunks (C order) into at most ``count`` runs ``[a, z)`` of about equal rows.

    Cuts fall only at the positions ``allowed`` (ascending), each moved to the next one.
    """
    cumulative = np.cumsum(totals)
    targets = cumulative[-1] * np.arange(1, count) / count
    cuts = np.searchsorted(cumulative, targets) + 1
    snapped = np.searchsorted(allowed, cuts)
    cuts = np.append(allowed, totals.shape[0])[snapped]
    edges = np.unique(np.concatenate([[0], np.clip(cuts, 1, totals.shape[0]), [totals.shape[0]]]))
    return [(int(a), int(z)) for a, z in itertools.pairwise(edges.tolist())]


def _overlaps(occupied: np.ndarray, first: int, last: int) -> bool:
    a, z = np.searchsorted(occupied, [first, last + 1])
    return bool(z > a)
