"""Parallel object-store writes on dask.distributed: batches of whole objects in, one store out.

The write runs in stages, each waited for as a whole:

1. one task per partition counts its objects; the coordinator numbers the partitions' default
   object ids one after another (partition order is object order);
2. one task per partition writes it alone, with the one-shot writer and the store's settings,
   into a scratch store (as :class:`~zarr_vectors.ObjectWriter` does with its batches);
3. the coordinator opens the scratch stores (their shared parts only) and plans the merge
   once (:func:`~zarr_vectors.update.object_merge.plan_merge`); for meshes, tasks check
   whether renumbered face references need int64;
4. one task per bucket of chunks (C order, about equal rows; whole shards with
   ``shard_chunks``) writes its chunks into the destination from the scratch stores
   (:func:`~zarr_vectors.update.object_merge.merge_chunks`) — disjoint keys, no shared
   document;
5. the coordinator writes the shared parts — array metadata, counts, object index, object and
   group attributes, cross-chunk links, level and root metadata — the root last
   (:func:`~zarr_vectors.update.object_merge.commit_merge`);
6. with ``levels``, tasks (one per partition) summarise, coarsen and spill the partitions'
   objects level by level; the coordinator decides the object sparsity and writes each
   level from the spills (:mod:`~._object_level_tasks`), then the root again.

The store equals, byte for byte apart from ``creation_timestamp`` and ``commit``, what one
``write_*`` call of all the objects writes. A failure commits nothing, and the scratch
stores are removed.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.parallel._cluster import Tasks, cluster_client, write_tasks
from zarr_vectors.parallel._object_level_tasks import LevelPart, WorkerPasses
from zarr_vectors.store.io import StoreLike, local_destination
from zarr_vectors.store.shared import (
    SharedLocation,
    check_shareable,
    open_shared,
    shared_location,
)
from zarr_vectors.store.spill import remove_scratch, scratch_directory
from zarr_vectors.store.target import check_destination, write_target
from zarr_vectors.update import (
    BatchSpec,
    MergePlan,
    check_globals,
    checked_levels,
    commit_merge,
    commit_passed_levels,
    for_chunk_writers,
    links_may_be_wide,
    merge_chunks,
    open_source,
    plan_merge,
    set_link_dtype,
    wide_links,
)
from zarr_vectors.write import (
    Levels,
    WriteMode,
    WriteOptions,
    name_new_arrays,
    new_store_destination,
    shard_major_order,
)

__all__ = ["write_objects_parallel"]

Chunk = tuple[int, ...]


def write_objects_parallel(
    store: StoreLike,
    kind: str,
    partitions: Iterable[Any],
    *,
    chunk_shape: float | Sequence[float],
    bin_shape: float | Sequence[float] | None = None,
    client: Any = None,
    scheduler_address: str | None = None,
    n_workers: int = 2,
    scratch: str | os.PathLike[str] | None = None,
    mode: WriteMode = "w-",
    overwrite: bool | None = None,
    options: WriteOptions | None = None,
    progress: ProgressOption = None,
    storage_options: Mapping[str, Any] | None = None,
    levels: Any = None,
    **settings: Any,
) -> None:
    """Write an object store from partitions of whole objects, on dask.distributed workers.

    The store is byte for byte (apart from ``creation_timestamp`` and ``commit``) the one the kind's
    ``write_*`` function writes for all the objects, in partition order.

    Parameters
    ----------
    store
        Destination every worker can reach: a local directory (on a file system the
        workers share) or a remote store (URL or zarr store object, not a memory store
        nor a zip file).
    kind
        ``"polyline"``, ``"streamline"``, ``"graph"``, ``"skeleton"`` or ``"mesh"``.
    partitions
        Batches of whole objects, in object order. Each is a mapping of the keyword
        arguments of the kind's ``write_*`` function after the store (as
        :meth:`~zarr_vectors.ObjectWriter.append` takes them, e.g. ``{"polylines": lines,
        "object_attributes": {...}}``), or the value of its first argument alone (the
        polylines of a batch). Without ``object_ids`` (and without other labels in
        ``vertex_objects``) objects are numbered after those of the partitions before.
    chunk_shape
        Chunk size per axis (one number for all axes): required, the default depends on
        all the data.
    bin_shape
        As for the ``write_*`` functions.
    client, scheduler_address, n_workers
        The cluster, as for :func:`~zarr_vectors.write_points_parallel`.
    scratch
        Directory every worker can write and read, for the partitions' temporary stores
        (about the size of the data). Default: beside a local destination; required for
        other destinations. Removed at the end, whatever happens.
    mode
        ``"w-"`` (default): refuse an existing store; ``"w"``: replace an existing Zarr
        Vectors store (never anything else; a local one only once the new one is complete).
    overwrite
        Deprecated: ``overwrite=True`` is ``mode="w"``.
    storage_options
        URLs only: options of the fsspec filesystem, as for :func:`zarr_vectors.open`.
    options
        Less common settings (:class:`~zarr_vectors.WriteOptions`).
    progress
        A progress bar per stage over its tasks: None (default) on a terminal or in
        Jupyter, True always, False never, or a callable ``progress(stage, done, total)``.
    levels
        Levels of detail (spec §4.3.3), as for the kind's ``write_*`` function, the same
        bytes as a one-shot write. The workers coarsen the partitions' objects (each
        task one partition, read back in batches) and spill the coarse levels beside
        them; the client decides which objects each level keeps from a summary of every
        object, and writes each level's chunks from the spilled files, one chunk at a
        time (it reads no vertex of level 0).
    **settings
        Store-wide arguments of the kind's ``write_*`` function: ``units`` (of the
        coordinates, as for :func:`~zarr_vectors.write_points`), ``directed`` (graph),
        ``winding_order`` and ``closed_surface`` (mesh), ``metadata``.

    Raises
    ------
    InvalidInputError
        For an unknown kind, settings or arguments the kind does not take, partitions that
        are not valid or do not fit together (their attributes, groups or ids), or a
        destination workers cannot share.
    StoreExistsError
        When the destination holds data and ``mode`` is ``"w-"``.
    ParallelWriteError
        When a task fails or workers keep dying: nothing is committed.
    MissingDependencyError
        Without the ``distributed`` extra.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import distributed
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> lines = [np.array([[0, 0, 0], [5, 5, 5.0]]), np.array([[20, 0, 0], [20, 9, 0.0]])]
    >>> with distributed.Client(processes=False, n_workers=1, dashboard_address=":0") as client:
    ...     zv.write_objects_parallel(path, "polyline", [{"polylines": lines[:1]},
    ...                               {"polylines": lines[1:]}], chunk_shape=10.0, client=client)
    >>> store = zv.open(path)
    >>> store.kind, store.object_count, store.vertex_count
    ('polyline', 2, 4)
    """
    target = new_store_destination(
        store, mode, overwrite, storage_options, "write_objects_parallel"
    )
    store, overwrite = target.store, target.overwrite
    spec = BatchSpec.create(kind, chunk_shape, bin_shape, options, settings)
    wanted = checked_levels(kind, levels)
    batches = [_arguments(spec, part) for part in partitions]
    if not batches:
        raise InvalidInputError("nothing to write: give at least one partition")
    check_shareable(store)
    check_destination(store, overwrite=overwrite)
    near = local_destination(store)
    if scratch is None and near is None:
        raise InvalidInputError("a destination that is not a local path needs scratch=")
    space = scratch_directory(near, scratch)
    try:
        with (
            progress_reporter(progress) as report,
            cluster_client(client, scheduler_address, n_workers) as dask_client,
            write_tasks(dask_client, report if report.active else None) as tasks,
        ):
            parts = _write_partitions(tasks, spec, batches, space)
            _merge(tasks, spec, (parts, space), (store, overwrite), wanted)
    finally:
        remove_scratch(space)


def _merge(
    tasks: Tasks,
    spec: BatchSpec,
    written: tuple[list[LevelPart], Path],
    destination: tuple[StoreLike, bool],
    levels: Levels | None,
) -> None:
    """Plan the merge of the partitions' stores, write its chunks in buckets, have the
    workers build the ``levels``, commit it; ``written`` is the partitions and the scratch
    directory, ``destination`` the store and ``overwrite``."""
    store, overwrite = destination
    parts, space = written
    plan = plan_merge(
        [open_source(p.path) for p in parts],
        has_base=False,
        check_links=False,
        shard_chunks=spec.shard_chunks,
    )
    ids, groups = check_globals(plan)
    buckets = _buckets(plan, 2 * tasks.workers)
    if links_may_be_wide(plan) and any(_run_buckets(tasks, plan, buckets, None)):
        set_link_dtype(plan, np.dtype(np.int64))
    with write_target(store, overwrite=overwrite) as io:
        name_new_arrays(io, plan.root)
        _run_buckets(tasks, plan, buckets, shared_location(io))
        commit_merge(io, plan, ids, groups)
        if levels is not None:

            def passes(options: WriteOptions) -> WorkerPasses:
                return WorkerPasses(tasks, parts, spec.kind, options, space)

            commit_passed_levels(io, levels, passes)


def _arguments(spec: BatchSpec, partition: Any) -> dict[str, Any]:
    if isinstance(partition, Mapping):
        return spec.arguments((), partition)
    return spec.arguments((partition,), {})


def _write_partitions(
    tasks: Tasks, spec: BatchSpec, batches: list[dict[str, Any]], space: Path
) -> list[LevelPart]:
    """Write every partition alone into ``space``, ids numbered in partition order; the
    partitions' stores, first objects and object counts."""
    held = [tasks.put(f"batch-{k}", batch) for k, batch in enumerate(batches)]
    counts = tasks.run(
        [tasks.submit(f"count-{k}", _count, spec, h) for k, h in enumerate(held)],
        "counting objects",
    )
    firsts = [0, *itertools.accumulate(counts)][:-1]
    paths = [os.fspath(space / f"part-{k}") for k in range(len(batches))]
    tasks.run(
        [
            tasks.submit(f"part-{k}", _write_partition, spec, h, path, first)
            for k, (h, path, first) in enumerate(zip(held, paths, firsts, strict=True))
        ],
        "writing partitions",
    )
    tasks.release()  # no partition is written again while the merge reads it
    return [LevelPart(*part) for part in zip(paths, firsts, counts, strict=True)]


def _count(spec: BatchSpec, arguments: dict[str, Any]) -> int:
    return spec.count(arguments)


def _write_partition(spec: BatchSpec, arguments: dict[str, Any], path: str, first: int) -> str:
    """Write one partition into its scratch store (again from scratch if a retry)."""
    spec.write(path, arguments, first, overwrite=True)
    return path


def _buckets(plan: MergePlan, count: int) -> list[list[Chunk]]:
    """The chunks in C order, cut into about ``count`` runs of about equal rows.

    With several chunks per shard the chunks go shard by shard and runs hold whole shards
    (a shard is written once, by one task).
    """
    chunks, starts = _shard_runs(plan)
    if not chunks:
        return []
    rows = np.cumsum([plan.totals[c] for c in chunks])
    cuts = np.searchsorted(rows, rows[-1] * np.arange(1, count) / count) + 1
    cuts = np.append(starts, len(chunks))[np.searchsorted(starts, cuts)]
    edges = np.unique(np.concatenate([[0], np.clip(cuts, 1, len(chunks)), [len(chunks)]]))
    return [chunks[a:z] for a, z in itertools.pairwise(edges.tolist())]


def _shard_runs(plan: MergePlan) -> tuple[list[Chunk], np.ndarray]:
    """The chunks in write order, and the positions where a bucket may start (ascending)."""
    chunks = sorted(plan.holders)
    if not plan.shard_chunks or not chunks:
        return chunks, np.arange(1, len(chunks))
    grid = np.asarray([plan.grid_index(c) for c in chunks], dtype=np.int64)
    order = shard_major_order(grid, plan.shard_chunks)
    shards = grid[order] // np.asarray(plan.shard_chunks, dtype=np.int64)
    starts = np.flatnonzero(np.any(shards[1:] != shards[:-1], axis=1)) + 1
    return [chunks[j] for j in order.tolist()], starts


def _run_buckets(
    tasks: Tasks,
    plan: MergePlan,
    buckets: list[list[Chunk]],
    location: SharedLocation | None,
) -> list[Any]:
    """Per bucket, write its chunks into ``location``, or (None) check for int64 links."""
    stage = "checking link widths" if location is None else "writing chunks"
    name = "links" if location is None else "merge"
    shipped = tasks.put(f"plan-{name}", for_chunk_writers(plan))
    futures = [
        tasks.submit(f"{name}-{b}", _merge_task, shipped, chunks, location)
        for b, chunks in enumerate(buckets)
    ]
    try:
        return tasks.run(futures, stage)
    finally:
        tasks.release()  # no chunk is written again once the stage is over


def _merge_task(plan: MergePlan, chunks: list[Chunk], location: SharedLocation | None) -> bool:
    """Write ``chunks`` into ``location``; without one, whether their links need int64."""
    if location is None:
        return wide_links(plan, chunks)
    merge_chunks(open_shared(location), plan, chunks)
    return True
