"""Streaming point-cloud writes: batches in, the one-shot store out, memory bounded.

Each batch is checked and gathered into slices that fit the memory budget, which are sorted
and spilled (:mod:`~zarr_vectors.update.point_slices`). Closing the writer builds the chunk
grid from the bounds of all batches and writes every chunk once from its pieces, so the
store is byte for byte the one a single write of the concatenated input gives (spec §5.5,
§12.3).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from zarr_vectors._closing import CloseOnExit
from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import POINT_CLOUD, VERTICES
from zarr_vectors.geometry import commit_points, level0_metadata, shared_docs
from zarr_vectors.kernels.sampling import PointSample, merge_samples, sample_rows
from zarr_vectors.store.io import StoreLike, local_destination
from zarr_vectors.store.spill import remove_scratch, scratch_directory
from zarr_vectors.store.target import check_destination, write_target
from zarr_vectors.update._read_ahead import read_ahead
from zarr_vectors.update.point_append import append_to_store, load_existing
from zarr_vectors.update.point_level_append import StoredLevel, load_levels, update_levels
from zarr_vectors.update.point_levels import Level0, build_written_levels, point_level_settings
from zarr_vectors.update.point_slices import PointSlices, union_bounds
from zarr_vectors.write import (
    FirstLevels,
    Levels,
    LevelWriter,
    WriteMode,
    WriteOptions,
    chunk_shapes,
    inputs,
    name_new_arrays,
    new_store,
    point_blob_layout,
    round_up,
    shard_major_order,
    writer_arguments,
)

__all__ = ["DEFAULT_MEMORY_BUDGET", "PointWriter"]

DEFAULT_MEMORY_BUDGET = 256 * 2**20
"""Bytes of working memory a streaming write aims to stay within (beyond the caller's batch)."""

_MIN_BUDGET = 2**16
_READ_AHEAD_SHARE = 4
"""Closing reads chunks back ahead of their writing within this fraction of the budget."""
_LEVELS_SHARE = 2
"""The first coarse levels, computed as level 0 is written, are kept within this fraction
of the budget (else level 0 is read back to build them)."""


@shared_docs
class PointWriter(PointSlices, CloseOnExit):
    """Write a point cloud from batches, with memory bounded by ``memory_budget``.

    Use it as a context manager; :meth:`append` takes a batch, and leaving the ``with``
    block without an error writes the store (or call :meth:`close`). An error inside the
    block, or :meth:`abort`, leaves the destination as it was. The store equals, byte for
    byte apart from ``creation_timestamp`` and ``commit``, what
    :func:`~zarr_vectors.write_points` writes for the concatenation of the batches with the
    same settings.

    Parameters
    ----------
    store
        Destination, as for :func:`~zarr_vectors.write_points`. It is checked when the
        writer is created and written only when it closes.
    chunk_shape, bin_shape
        As for :func:`~zarr_vectors.write_points`. Give ``chunk_shape`` for a single pass
        over the data; without it the default (about 50,000 points in the chunk of a
        point) needs all the bounds and a sample of the rows, so the rows are spilled
        twice. The sample does not depend on how the rows are cut into batches, so the
        store is the one-shot store.
    options
        Less common settings (:class:`~zarr_vectors.WriteOptions`).
    memory_budget
        Bytes of working memory to stay within, besides the caller's own batches (default
        256 MiB). Larger batches are processed in slices that fit.
    spill_dir
        Directory for temporary files (up to about the size of the data; on Linux given
        back as the chunks are written). Default: beside a local destination, else the
        system temporary directory.
    progress
        ``progress(stage, done, total)`` callback (stage ``"ingest"`` counts rows with
        total -1, ``"sort"`` rows of the second pass, ``"write"`` chunks), True for a
        progress bar on standard error, False for none; default: a bar when standard error
        is a terminal or in Jupyter.
    mode
        ``"w-"`` (default) writes a new store, refusing an existing one; ``"w"`` replaces
        an existing Zarr Vectors store (never anything else) when the writer closes;
        ``"a"`` adds the batches to the existing point cloud at ``store`` (as
        :func:`append_points`), keeping its ``chunk_shape``, ``bin_shape``, units and
        options, so those are not given then.
        The store is read when the writer is created, and the batches are committed at
        :meth:`close` only onto that version of it (spec §12.3).
    units
        Unit of the coordinates, as for :func:`~zarr_vectors.write_points`.
    overwrite
        Deprecated: ``overwrite=True`` is ``mode="w"``.
    storage_options
        URLs only: options of the fsspec filesystem (for S3: ``endpoint_url``, ``key``,
        ``secret``, ``anon``...), as for :func:`zarr_vectors.open`.
    levels
        Levels of detail, as for :func:`~zarr_vectors.write_points` (None: none). They
        are built when the writer closes, after level 0 is written, in a second pass over
        its written chunks (the ``"auto"`` level count depends on every chunk), one chunk
        at a time, so memory stays bounded; they are the levels ``write_points`` writes
        for the same points, byte for byte. Not with ``mode="a"``: an append keeps the
        store's levels.

    Raises
    ------
    StoreExistsError
        When the destination holds data and ``mode`` is ``"w-"``.
    InvalidInputError
        For invalid settings; :meth:`append` raises it for invalid batches, which are then
        not added (the batches before them are kept).
    ConcurrentWriteError
        ``mode="a"``, at :meth:`close`: another writer committed to the store after this
        writer read it; none of the batches were committed (append them again).

    {example_setup}
    >>> with zv.PointWriter(path, chunk_shape=5.0, progress=False) as writer:
    ...     for k in range(3):
    ...         writer.append(np.full((2, 3), k, dtype=np.float32))
    >>> zv.open(path).vertex_count
    6
    """

    def __init__(
        self,
        store: StoreLike,
        *,
        chunk_shape: float | Sequence[float] | None = None,
        bin_shape: float | Sequence[float] | None = None,
        overwrite: bool | None = None,
        options: WriteOptions | None = None,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        spill_dir: str | os.PathLike[str] | None = None,
        progress: ProgressOption = None,
        mode: WriteMode = "w-",
        units: str | Sequence[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        levels: int | str | Levels | None = None,
    ) -> None:
        if inputs.number(memory_budget, "memory_budget") < _MIN_BUDGET:
            raise InvalidInputError(
                f"memory_budget must be at least {_MIN_BUDGET} bytes, got {memory_budget}"
            )
        target = writer_arguments.destination(store, mode, overwrite, storage_options)
        store, overwrite = target.store, target.overwrite
        self.store, self.overwrite = store, overwrite
        self.chunk_shape, self.bin_shape = chunk_shape, bin_shape
        self.budget = int(memory_budget)
        self.schema = None
        self.grid = None
        self.n = 0
        self.lo: np.ndarray | None = None
        self.hi: np.ndarray | None = None
        self.existing = None
        self.stored_levels: list[StoredLevel] = []  # of the store appended to
        self.sample: PointSample | None = None  # for the default chunk shape
        self.levels = point_level_settings(levels)
        if target.mode == "a":
            if self.levels is not None:
                raise InvalidInputError(
                    "levels= cannot be given with mode='a': an append keeps the store's levels"
                )
            writer_arguments.check_append_settings(
                chunk_shape=chunk_shape, bin_shape=bin_shape, options=options, units=units
            )
            self._open_existing(store)
            self.options = self.existing.options if self.existing else WriteOptions()
        else:
            self.options = writer_arguments.check_settings(
                POINT_CLOUD,
                chunk_shape=chunk_shape,
                bin_shape=bin_shape,
                options=options,
                units=units,
            )
            check_destination(store, overwrite=overwrite)
        self.progress = progress_reporter(progress)
        self.scratch = scratch_directory(local_destination(store), spill_dir)
        self.raw = None
        self.binned = None
        self.runs = None
        self.pieces = {}
        self.slice = None
        self.work = None
        self.slice_rows = 0
        self.slice_bounds = None
        self.closed = False

    def _open_existing(self, store: StoreLike) -> None:
        """Take the grid, columns and bounds of the point cloud being appended to."""
        existing = load_existing(store, with_levels=True)
        root = existing.root
        self.existing = existing
        self.stored_levels = load_levels(store, root) if root.levels else []
        self.chunk_shape, self.bin_shape = root.chunk_shape, root.base_bin_shape
        columns = dict(existing.columns)
        dtype, (ndim,) = columns.pop(VERTICES)
        self.schema = (dtype, ndim, columns)
        self.grid = new_store.plan_grid(None, 0, self.chunk_shape, self.bin_shape, ndim)
        if root.bounding_box is not None:
            self.lo, self.hi = (np.asarray(b, dtype=np.float64) for b in root.bounding_box)

    # -- input ---------------------------------------------------------------------------
    @shared_docs
    def append(
        self,
        positions: Any,
        *,
        attributes: Mapping[str, Any] | None = None,
        object_ids: Any = None,
    ) -> None:
        """Add a batch of points (arguments as for :func:`~zarr_vectors.write_points`).

        Every batch must have the dimension, attribute names and row shapes of the first
        batch (of the store, in mode ``"a"``), and give ``object_ids`` if it did. Position,
        attribute and object id dtypes are cast to the first batch's (the store's) when
        numpy casts them safely (``float32`` into ``float64``, ``int16`` into ``int32``);
        a cast that can lose values is refused with the ``.astype(...)`` that does it.

        Raises
        ------
        InvalidInputError
            For an invalid batch or one that does not match the first; nothing of it is kept.


        {example_setup}
        >>> writer = zv.PointWriter(path, chunk_shape=10.0)
        >>> writer.append(np.array([[1, 1, 1], [12, 3, 4]], dtype=np.float32))
        >>> writer.append(np.array([[25, 25, 25]], dtype=np.float32))
        >>> writer.close()
        >>> zv.open(path).vertex_count
        3
        """
        self._check_open()
        pos = inputs.positions(positions)
        n = pos.shape[0]
        lo, hi = new_store.check_finite(pos)
        columns = inputs.attributes(attributes, n)
        ids = inputs.integer_ids(object_ids, n)
        pos, columns = self._fit_schema(pos, columns, ids)
        if self.grid is None and self.chunk_shape is not None:
            self.grid = new_store.plan_grid(None, 0, self.chunk_shape, self.bin_shape, pos.shape[1])
        seen = None if self.lo is None or self.hi is None else (self.lo, self.hi)
        if n and self.grid is not None and self.existing is None:  # refused now, not at close
            chunk_shapes.check_chunk_count(
                union_bounds(seen, (lo, hi)), self.grid.chunk_shape, self.n + n
            )
        if n:
            self.lo, self.hi = union_bounds(seen, (lo, hi))
        if n and self.chunk_shape is None:
            self.sample = merge_samples(self.sample, sample_rows(pos))
        assert self.schema is not None
        self._gather([pos, *(columns[name] for name in self.schema[2])], (lo, hi))
        self.n += n
        self.progress("ingest", self.n, -1)

    # -- output --------------------------------------------------------------------------
    @shared_docs
    def close(self) -> None:
        """Write the store from everything appended, then remove the temporary files.

        Raises
        ------
        InvalidInputError
            When nothing was appended (append a batch, even an empty one, first).


        {example_setup}
        >>> writer = zv.PointWriter(path, chunk_shape=10.0)
        >>> writer.append(np.zeros((0, 2), dtype=np.float32))   # an empty batch is a batch
        >>> writer.close()
        >>> zv.open(path).vertex_count
        0
        """
        self._check_open()
        try:
            self._finish()
        finally:
            self._cleanup()

    @shared_docs
    def abort(self) -> None:
        """Drop everything appended and remove the temporary files; the store is untouched.

        {example_setup}
        >>> writer = zv.PointWriter(path, chunk_shape=10.0)
        >>> writer.append(np.ones((4, 3), dtype=np.float32))
        >>> writer.abort()
        >>> path.exists()
        False
        """
        if not self.closed:
            self._cleanup()

    def _finish(self) -> None:
        self._spill_slice()
        self.slice = self.work = None
        bounds = None if self.lo is None or self.hi is None else (self.lo, self.hi)
        if self.existing is not None:
            added = {c: sum(p.count for p in pieces) for c, pieces in self.pieces.items()}
            levels = functools.partial(
                update_levels, self.stored_levels, budget=self.budget // _LEVELS_SHARE
            )
            append_to_store(
                self.store,
                self.existing,
                added,
                self._new_rows,
                bounds,
                self.progress,
                levels,
                memory_budget=self.budget,
            )
            return
        if self.schema is None:
            raise InvalidInputError("nothing to write: append at least one batch (even empty)")
        ndim = self.schema[1]
        sample = None if self.sample is None else self.sample[0]
        grid = new_store.plan_grid(bounds, self.n, self.chunk_shape, self.bin_shape, ndim, sample)
        root = new_store.root_metadata(POINT_CLOUD, grid, self.options, bounds)
        if self.raw is not None:
            self._second_pass(grid)
        chunks = sorted(self.pieces)
        counts = [sum(p.count for p in self.pieces[c]) for c in chunks]
        n_max = round_up(max(counts, default=0), self.options.block_rows)
        types = self._column_types()
        columns = (types[0], dict(zip(self.schema[2], types[1:], strict=True)))
        grid_chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, ndim) - grid.origin
        row_counts = np.asarray(counts, dtype=np.int64)
        with write_target(self.store, overwrite=self.overwrite) as io:
            name_new_arrays(io, root)
            blobs = point_blob_layout(grid)
            writer = LevelWriter(io, 0, grid, columns, n_max, self.options, blobs=blobs)
            first = self._first_levels(root, grid, row_counts)
            if first is not None:  # level 1 written beside level 0 where it can be
                first.write_first(io, grid_chunks, row_counts, columns, self.options)
            self._write_chunks(writer, grid, chunks, counts, first)
            stats = writer.finish()
            if self.levels is not None:
                meta = level0_metadata(grid, stats)
                level0 = Level0(meta, grid, grid_chunks, row_counts, columns, self.options)
                root = build_written_levels(io, root, level0, self.levels, first)
            commit_points(
                io,
                root,
                grid,
                stats,
                object_chunks=self.options.object_chunk_index,
                object_order=self.options.object_order,
                memory_budget=self.budget,
            )

    def _first_levels(
        self, root: RootMetadata, grid: ChunkGrid, counts: np.ndarray
    ) -> FirstLevels | None:
        """What computes the first candidate levels from each chunk as it is written, within
        a share of the memory budget (None without levels, or without points); it keeps
        level 0's rows too (within that share) when the first candidate may keep them all
        (chunks of ``counts`` rows), so that the next is computed from them in memory."""
        if self.levels is None or root.bounding_box is None or self.schema is None:
            return None
        bounds = (np.asarray(root.bounding_box[0]), np.asarray(root.bounding_box[1]))
        dtypes = {name: dtype for name, (dtype, _) in self.schema[2].items()}
        keep = FirstLevels.may_keep_all(self.levels, grid, counts)
        budget = self.budget // _LEVELS_SHARE
        return FirstLevels(self.levels, grid, bounds, dtypes, budget, keep_level0=keep)

    def _write_chunks(
        self,
        writer: LevelWriter,
        grid: ChunkGrid,
        chunks: list[tuple[int, ...]],
        counts: list[int],
        first: FirstLevels | None = None,
    ) -> None:
        """Give every chunk's rows, read back from the spill files, to ``writer``, shard by
        shard (and to ``first``, which computes the first levels in a worker thread). The
        next chunks are read back in a background thread while the current one is encoded
        and written, within a share of the memory budget."""
        grid_chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, grid.ndim) - grid.origin
        order = shard_major_order(grid_chunks, writer.shard_chunks).tolist()
        visit = [chunks[j] for j in order]
        row_nbytes = self._row_nbytes()
        sizes = [counts[j] * row_nbytes for j in order]
        read = functools.partial(self._chunk_rows, grid=grid)
        ahead = read_ahead(read, visit, sizes, self.budget // _READ_AHEAD_SHARE)
        with contextlib.closing(ahead) as found:  # no read outlives the loop
            try:
                for done, (chunk, (rows, blob, bins)) in enumerate(zip(visit, found, strict=True)):
                    g = np.asarray(chunk, dtype=np.int64) - grid.origin
                    writer.add_chunk(g, rows, blob)
                    if first is not None:
                        first.add_beside(g, rows, bins)
                    self.progress("write", done + 1, len(chunks))
            finally:
                if first is not None:  # no level computation outlives the loop either
                    first.wait()

    def _check_open(self) -> None:
        if self.closed:
            raise InvalidInputError("this PointWriter is closed")

    def _cleanup(self) -> None:
        self.closed = True
        self.slice = self.work = None
        for spill in (self.raw, self.binned, self.runs):
            if spill is not None:
                spill.close()
        remove_scratch(self.scratch)
        self.progress.close()
