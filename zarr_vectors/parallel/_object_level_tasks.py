"""Levels of detail of a parallel object write, coarsened by the workers (spec §4.3.3).

An object is coarsened alone, so each partition's objects (its scratch store, written
in stage 2 of :mod:`~zarr_vectors.parallel.objects`) are coarsened by one task, read back
in batches within a memory budget. What is global is small and decided by the
coordinator, as the serial level builder decides it
(:func:`~zarr_vectors.write.write_object_levels`, run with :class:`WorkerPasses`):

1. each task summarises its objects (first vertex, length, bounds); the coordinator joins
   the summaries and decides which objects each coarse level keeps (object sparsity);
2. per coarse level, each task coarsens its objects, keeps the coarse tables in a file
   and returns, per chunk, the rows, fragments and links they give (:func:`part_sizes`),
   and every object's vertex count;
3. each task spills its coarse tables to files beside the partitions (:func:`spill_part`),
   its rows in every chunk placed after those of the partitions before it (the
   coordinator's sums); the spills, joined, are the level of every object
   (:meth:`~zarr_vectors.write.LevelSpill.joined`), written chunk by chunk from the files.

So the coordinator reads no vertex of level 0 and holds a few numbers per object, chunk
and fragment, and the levels are the bytes a one-shot write gives.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.parallel._cluster import Tasks
from zarr_vectors.store.spill import remove_scratch
from zarr_vectors.update import stored_batches
from zarr_vectors.update.point_stream import DEFAULT_MEMORY_BUDGET
from zarr_vectors.write import (
    LevelSpill,
    ObjectSummary,
    ObjectTable,
    SparseLevel,
    WriteOptions,
    coarse_batches,
    object_method,
)

__all__ = ["LevelPart", "LevelTask", "PartSizes", "WorkerPasses", "part_sizes", "spill_part"]

Length = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True, slots=True)
class LevelPart:
    """A partition's objects: its scratch store, its first object and how many."""

    path: str
    first: int
    n_objects: int


@dataclass(frozen=True, slots=True)
class LevelTask:
    """What a task needs of one coarse level.

    Attributes
    ----------
    kind
        The geometry kind.
    grid
        The level's grid.
    sparse
        The objects of the task's partition the level keeps (its slice of the level's).
    options
        The store's write options.
    bounds, most
        Level 0's bounds and vertex count (as the level's spill takes them).
    """

    kind: str
    grid: ChunkGrid
    sparse: SparseLevel
    options: WriteOptions
    bounds: tuple[np.ndarray, np.ndarray]
    most: int


@dataclass(frozen=True, slots=True)
class PartSizes:
    """What a partition's objects give on a coarse level.

    Attributes
    ----------
    flats
        The chunks they put rows in (flat indices, ascending).
    per_chunk
        ``(k, 3)`` their rows, fragments and links in each.
    counts
        ``(n,)`` every object's vertex count on the level.
    """

    flats: np.ndarray
    per_chunk: np.ndarray
    counts: np.ndarray


def part_summary(part: LevelPart, length: Length | None) -> ObjectSummary:
    """The :class:`~zarr_vectors.write.ObjectSummary` of a partition's objects."""
    return ObjectSummary.of(stored_batches(part.path, DEFAULT_MEMORY_BUDGET), length)


def _coarse(part: LevelPart, level: LevelTask) -> Iterator[ObjectTable]:
    """The coarse tables of a partition's objects, batch by batch."""
    batches = stored_batches(part.path, DEFAULT_MEMORY_BUDGET)
    return coarse_batches(batches, level.grid, level.sparse, object_method(level.kind))


def _spill(level: LevelTask, folder: Path, before: dict[int, list[int]] | None) -> LevelSpill:
    return LevelSpill(folder, level.grid, level.options, level.bounds, level.most, before)


def part_sizes(part: LevelPart, level: LevelTask, keep: str | None = None) -> PartSizes:
    """The rows, fragments and links a partition's objects put in each chunk of a coarse
    level, and their vertex counts; with ``keep`` (a file path), the coarse tables are
    kept there for :func:`spill_part`."""
    sizer = _spill(level, Path(part.path), None)
    flats, sizes, counts = [], [], []
    with contextlib.ExitStack() as stack:
        kept = None if keep is None else stack.enter_context(Path(keep).open("wb"))
        for table in _coarse(part, level):
            found = sizer.sizes(table)
            flats.append(found[0])
            sizes.append(found[1])
            counts.append(np.diff(table.offsets).astype(np.int64))
            if kept is not None:
                pickle.dump(table, kept, protocol=pickle.HIGHEST_PROTOCOL)
    every, where = np.unique(np.concatenate(flats), return_inverse=True)
    per_chunk = np.zeros((every.shape[0], 3), np.int64)
    np.add.at(per_chunk, where, np.concatenate(sizes))
    return PartSizes(every.astype(np.int64), per_chunk, np.concatenate(counts))


def _kept(path: Path) -> Iterator[ObjectTable]:
    """The coarse tables :func:`part_sizes` kept in ``path``, in order."""
    with path.open("rb") as kept:
        while True:
            try:
                yield pickle.load(kept)
            except EOFError:
                return


def spill_part(
    part: LevelPart, level: LevelTask, folder: str, before: dict[int, list[int]]
) -> LevelSpill:
    """Spill a partition's coarse objects (the tables :func:`part_sizes` kept in
    ``folder + ".pickle"``) into ``folder`` (a fresh directory), placed after the ``before``
    rows, fragments and links of each chunk the partitions before it hold."""
    remove_scratch(Path(folder))  # what a run of this task on a lost worker left
    Path(folder).mkdir(parents=True)
    spill = _spill(level, Path(folder), before)
    first = part.first
    for table in _kept(Path(folder + ".pickle")):
        spill.add(table, first)
        first += table.n_objects
    return spill


def _seeds(found: list[PartSizes]) -> tuple[list[dict[int, list[int]]], dict[int, list[int]]]:
    """Per partition, what the partitions before it put in each of its chunks; and every
    chunk's sums."""
    sums: dict[int, list[int]] = {}
    seeds = []
    for sizes in found:
        seeds.append({f: sums.get(f, [0, 0, 0]) for f in sizes.flats.tolist()})
        for f, own in zip(sizes.flats.tolist(), sizes.per_chunk.tolist(), strict=True):
            sums[f] = [a + b for a, b in zip(sums.get(f, [0, 0, 0]), own, strict=True)]
    return seeds, sums


class WorkerPasses:
    """The passes over level 0 of a parallel object write, run by its workers
    (:class:`~zarr_vectors.write.LevelPasses`).

    Parameters
    ----------
    tasks
        The write's tasks.
    parts
        The partitions, in object order.
    kind
        The geometry kind.
    options
        The store's write options.
    space
        The write's scratch directory (every worker reads and writes it).
    """

    def __init__(
        self, tasks: Tasks, parts: list[LevelPart], kind: str, options: WriteOptions, space: Path
    ) -> None:
        self.tasks, self.kind, self.options, self.space = tasks, kind, options, space
        self.parts = [p for p in parts if p.n_objects]
        self.names = itertools.count()
        self.found: ObjectSummary | None = None
        self.folder: Path | None = None  # the spill of the last level computed

    def _run(
        self, stage: str, function: Callable[..., Any], arguments: list[tuple[Any, ...]]
    ) -> list[Any]:
        futures = [
            self.tasks.submit(f"{stage.split()[0]}-{next(self.names)}", function, *a)
            for a in arguments
        ]
        try:
            return self.tasks.run(futures, stage)
        finally:
            self.tasks.release(futures)

    def summary(self, length: Length | None) -> ObjectSummary:
        """Level 0's summary, from every partition's."""
        parts = self._run("summarising objects", part_summary, [(p, length) for p in self.parts])
        self.found = ObjectSummary.joined(parts)
        return self.found

    def _levels(self, grid: ChunkGrid, sparse: SparseLevel) -> list[LevelTask]:
        """Each partition's :class:`LevelTask` of a level."""
        assert self.found is not None, "summary() comes first"
        bounds, most = self.found.bounds, self.found.n_vertices
        kept = sparse.kept
        return [
            LevelTask(
                self.kind,
                grid,
                sparse
                if kept is None
                else dataclasses.replace(sparse, kept=kept[p.first : p.first + p.n_objects]),
                self.options,
                bounds,
                most,
            )
            for p in self.parts
        ]

    def _sizes(self, levels: list[LevelTask], keep: list[str] | None = None) -> list[PartSizes]:
        kept: list[str | None] = [None] * len(levels) if keep is None else list(keep)
        arguments = list(zip(self.parts, levels, kept, strict=True))
        return self._run("coarsening objects", part_sizes, arguments)

    def level(self, grid: ChunkGrid, sparse: SparseLevel) -> LevelSpill:
        """The coarse level of ``grid``: coarsened and sized, then spilled by the workers,
        joined."""
        levels = self._levels(grid, sparse)
        if self.folder is not None:
            remove_scratch(self.folder)
        self.folder = self.space / f"level-{next(self.names)}"
        self.folder.mkdir()
        folders = [str(self.folder / f"part-{k}") for k in range(len(levels))]
        seeds, sums = _seeds(self._sizes(levels, [f"{f}.pickle" for f in folders]))
        spills = self._run(
            "spilling levels",
            spill_part,
            list(zip(self.parts, levels, folders, seeds, strict=True)),
        )
        return LevelSpill.joined(spills, sums)

    def counts(self, grid: ChunkGrid) -> np.ndarray:
        """Every object's vertex count on the level of ``grid`` without object sparsity."""
        found = self._sizes(self._levels(grid, SparseLevel(None, None, None)))
        return np.concatenate([sizes.counts for sizes in found])
