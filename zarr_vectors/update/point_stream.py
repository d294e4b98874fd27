"""Streaming point-cloud writes: batches in, the one-shot store out, memory bounded.

Each batch is checked, gathered into slices that fit the memory budget, sorted by (chunk,
bin) (stable, so the rows of a bin keep input order) and appended to spill files, with the
runs of one bin that each chunk's piece holds. Closing the writer builds the chunk grid from
the bounds of all batches and writes every chunk once: its pieces are read back in batch
order and their runs moved to (bin, input order), the order
:func:`~zarr_vectors.write_points` gives, so the store is byte for byte the one a single
write of the concatenated input gives (spec §5.5, §12.3).

Without a ``chunk_shape`` the grid depends on all the data, so the batches are first spilled
as they come and sorted by chunk in a second pass when the writer closes.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors._closing import CloseOnExit
from zarr_vectors._progress import Progress, ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.fragment_encoding import encode_dense_ranges_batch
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE, POINT_CLOUD, VERTICES
from zarr_vectors.geometry import commit_points, level0_metadata, shared_docs
from zarr_vectors.kernels import (
    bounds_and_nonfinite,
    destinations_of_positions,
    scatter_rows,
)
from zarr_vectors.kernels.bin_runs import move_runs, run_destinations
from zarr_vectors.kernels.sampling import PointSample, merge_samples, sample_rows
from zarr_vectors.store.io import StoreLike, local_destination
from zarr_vectors.store.spill import SpillColumns, remove_scratch, scratch_directory
from zarr_vectors.store.target import check_destination, write_target
from zarr_vectors.store.writer_lock import writer_lock
from zarr_vectors.update._read_ahead import read_ahead
from zarr_vectors.update.point_append import ExistingPoints, append_to_store, load_existing
from zarr_vectors.update.point_level_append import StoredLevel, load_levels, update_levels
from zarr_vectors.update.point_levels import Level0, build_written_levels, point_level_settings
from zarr_vectors.write import (
    FirstLevels,
    Levels,
    LevelWriter,
    WriteMode,
    WriteOptions,
    chunk_shapes,
    column_shapes,
    dense_bounds_span,
    inputs,
    name_new_arrays,
    point_blob_layout,
    round_up,
    shard_major_order,
)

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "PointWriter",
    "Progress",
    "append_points",
    "bin_dtype",
    "write_points_stream",
]

DEFAULT_MEMORY_BUDGET = 256 * 2**20
"""Bytes of working memory a streaming write aims to stay within (beyond the caller's batch)."""

_MIN_BUDGET = 2**16
_MIN_SLICE_ROWS = 256
_WORK_BYTES_PER_ROW = 24
"""Scratch bytes per row of a slice besides its columns: chunk/bin keys, sort order, copies."""
_READ_AHEAD_SHARE = 4
"""Closing reads chunks back ahead of their writing within this fraction of the budget."""
_LEVELS_SHARE = 2
"""The first coarse levels, computed as level 0 is written, are kept within this fraction
of the budget (else level 0 is read back to build them)."""


Schema = tuple[np.dtype[Any], int, dict[str, tuple[np.dtype[Any], tuple[int, ...]]]]


@dataclass(slots=True)
class _Piece:
    """Rows ``[start, start + count)`` of the binned spill belong to one chunk; they are
    the runs ``[run_start, run_start + run_count)`` of the runs spill (one bin each)."""

    start: int
    count: int
    run_start: int
    run_count: int


@dataclass(frozen=True, slots=True)
class _SliceWork:
    """Arrays a slice is sorted with, kept from slice to slice: fresh memory costs the
    kernel a page fault and a zeroed page per 4 KiB (or 2 MiB) on first touch, which is
    more than sorting into memory already touched (about 1 s of 14 s CPU at 1e8 points)."""

    keys: tuple[np.ndarray, np.ndarray]  # chunk and bin of every row, then destinations
    columns: list[np.ndarray]  # the sorted rows, one array per column

    @classmethod
    def allocate(
        cls, rows: int, columns: list[tuple[np.dtype[Any], tuple[int, ...]]]
    ) -> _SliceWork:
        keys = (np.empty(rows, np.int64), np.empty(rows, np.int64))
        return cls(keys, [np.empty((rows, *shape), dtype=dtype) for dtype, shape in columns])


@shared_docs
class PointWriter(CloseOnExit):
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
        target = inputs.destination(store, mode, overwrite, storage_options)
        store, overwrite = target.store, target.overwrite
        self.store, self.overwrite = store, overwrite
        self.chunk_shape, self.bin_shape = chunk_shape, bin_shape
        self.budget = int(memory_budget)
        self.schema: Schema | None = None
        self.grid: ChunkGrid | None = None
        self.n = 0
        self.lo: np.ndarray | None = None
        self.hi: np.ndarray | None = None
        self.existing: ExistingPoints | None = None
        self.stored_levels: list[StoredLevel] = []  # of the store appended to
        self.sample: PointSample | None = None  # for the default chunk shape
        self.levels = point_level_settings(levels)
        if target.mode == "a":
            if self.levels is not None:
                raise InvalidInputError(
                    "levels= cannot be given with mode='a': an append keeps the store's levels"
                )
            inputs.check_append_settings(
                chunk_shape=chunk_shape, bin_shape=bin_shape, options=options, units=units
            )
            self._open_existing(store)
            self.options = self.existing.options if self.existing else WriteOptions()
        else:
            self.options = inputs.check_settings(
                POINT_CLOUD,
                chunk_shape=chunk_shape,
                bin_shape=bin_shape,
                options=options,
                units=units,
            )
            check_destination(store, overwrite=overwrite)
        self.progress = progress_reporter(progress)
        self.scratch = scratch_directory(local_destination(store), spill_dir)
        self.raw: SpillColumns | None = None
        self.binned: SpillColumns | None = None
        self.runs: SpillColumns | None = None
        self.pieces: dict[tuple[int, ...], list[_Piece]] = {}
        self.slice: list[np.ndarray] | None = None
        self.work: _SliceWork | None = None
        self.slice_rows = 0
        self.slice_bounds: tuple[np.ndarray, np.ndarray] | None = None
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
        self.grid = inputs.plan_grid(None, 0, self.chunk_shape, self.bin_shape, ndim)
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
        lo, hi = inputs.check_finite(pos)
        columns = inputs.attributes(attributes, n)
        ids = inputs.integer_ids(object_ids, n)
        pos, columns = self._fit_schema(pos, columns, ids)
        if self.grid is None and self.chunk_shape is not None:
            self.grid = inputs.plan_grid(None, 0, self.chunk_shape, self.bin_shape, pos.shape[1])
        seen = None if self.lo is None or self.hi is None else (self.lo, self.hi)
        if n and self.grid is not None and self.existing is None:  # refused now, not at close
            chunk_shapes.check_chunk_count(
                _union(seen, (lo, hi)), self.grid.chunk_shape, self.n + n
            )
        if n:
            self.lo, self.hi = _union(seen, (lo, hi))
        if n and self.chunk_shape is None:
            self.sample = merge_samples(self.sample, sample_rows(pos))
        assert self.schema is not None
        self._gather([pos, *(columns[name] for name in self.schema[2])], (lo, hi))
        self.n += n
        self.progress("ingest", self.n, -1)

    def _gather(self, values: list[np.ndarray], bounds: tuple[np.ndarray, np.ndarray]) -> None:
        """Copy a batch into the slice being gathered, spilling each slice once it is full.

        Small batches are spilled together, so a chunk ends up in few pieces however the
        input is cut (reading a chunk back costs a read per piece); a slice holds at most
        what the memory budget allows (:meth:`_slice_rows`).
        """
        n = values[0].shape[0]
        done = 0
        while done < n:
            if self.slice is None:
                step = self._slice_rows()
                self.slice = [np.empty((step, *v.shape[1:]), dtype=v.dtype) for v in values]
            if self.slice_rows == 0 and self.raw is not None:
                self.raw.wait()  # the raw spill may still be writing from the slice buffers
            room = self.slice[0].shape[0] - self.slice_rows
            take = min(room, n - done)
            for buffer, column in zip(self.slice, values, strict=True):
                buffer[self.slice_rows : self.slice_rows + take] = column[done : done + take]
            self.slice_rows += take
            self.slice_bounds = _union(self.slice_bounds, bounds)
            done += take
            if take == room:
                self._spill_slice()

    def _spill_slice(self) -> None:
        """Sort (or keep raw) and spill the rows gathered so far."""
        if not self.slice_rows or self.slice is None or self.slice_bounds is None:
            return
        piece = [buffer[: self.slice_rows] for buffer in self.slice]
        if self.grid is None:
            self._spill_raw(piece)
        else:
            self._spill_binned(piece, self.grid, self.slice_bounds)
        self.slice_rows, self.slice_bounds = 0, None

    def _fit_schema(
        self, pos: np.ndarray, attributes: dict[str, np.ndarray], ids: np.ndarray | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """A batch's positions and columns (object ids last) fitted to the schema of the
        store or of the first batch, which the first batch sets.

        Safe casts are done (float32 positions into a float64 store...); a batch that
        does not fit raises an error naming the argument at fault.
        """
        columns = dict(attributes)
        if ids is not None:
            columns[OBJECT_ID_ATTRIBUTE] = ids
        if self.schema is None:
            self.schema = (
                pos.dtype,
                pos.shape[1],
                {k: column_shapes(v) for k, v in columns.items()},
            )
            return pos, columns
        dtype, ndim, stored = self.schema
        holder = "the store" if self.existing else "the first batch"
        if pos.shape[1] != ndim:
            raise InvalidInputError(
                f"positions are {pos.shape[1]}-D but {holder} holds {ndim}-D positions: "
                "every batch must have the same dimension"
            )
        pos = inputs.cast_to(pos, dtype, "positions", holder)
        stored_ids = stored.get(OBJECT_ID_ATTRIBUTE)
        if (ids is None) != (stored_ids is None):
            has = "has no" if stored_ids is None else "has"
            give = "omit" if stored_ids is None else "pass"
            raise InvalidInputError(f"{holder} {has} object ids: {give} object_ids")
        fitted = inputs.cast_columns(
            attributes,
            {k: v for k, v in stored.items() if k != OBJECT_ID_ATTRIBUTE},
            "attributes",
            holder,
        )
        if ids is not None and stored_ids is not None:
            fitted[OBJECT_ID_ATTRIBUTE] = inputs.cast_to(ids, stored_ids[0], "object_ids", holder)
        return pos, {name: fitted[name] for name in stored}

    def _slice_rows(self) -> int:
        row = self._row_nbytes()
        return max(_MIN_SLICE_ROWS, self.budget // (2 * row + _WORK_BYTES_PER_ROW))

    def _row_nbytes(self) -> int:
        """Bytes of one row of every column."""
        assert self.schema is not None
        dtype, ndim, attrs = self.schema
        return dtype.itemsize * ndim + sum(
            d.itemsize * int(np.prod(s, dtype=np.int64)) for d, s in attrs.values()
        )

    def _column_types(self) -> list[tuple[np.dtype[Any], tuple[int, ...]]]:
        assert self.schema is not None
        dtype, ndim, attrs = self.schema
        return [(dtype, (ndim,)), *attrs.values()]

    def _spill_raw(self, values: list[np.ndarray]) -> None:
        if self.raw is None:
            self.raw = SpillColumns(self.scratch, "raw", self._column_types())
        self.raw.append(values)

    def _spill_binned(
        self, values: list[np.ndarray], grid: ChunkGrid, bounds: tuple[np.ndarray, np.ndarray]
    ) -> None:
        """Sort a slice by (chunk, bin), keeping input order in a bin, and spill it with the
        runs of one bin of each chunk.

        ``bounds`` hold the slice's positions (they may be wider, e.g. its batch's).
        """
        if not values[0].shape[0]:
            return
        if self.binned is None or self.runs is None:
            self.binned = SpillColumns(self.scratch, "binned", self._column_types())
            self.runs = SpillColumns(self.scratch, "runs", [(np.dtype(np.int64), (2,))])
        if self.work is None:
            self.work = _SliceWork.allocate(self._slice_rows(), self._column_types())
        first, shape = dense_bounds_span(bounds, grid)
        destination, occupied, offsets, bin_offsets = destinations_of_positions(
            values[0], grid.chunk_shape, grid.bin_shape, grid.bins, first, shape, out=self.work.keys
        )
        self.binned.wait()  # the previous slice's rows are written before this one's exist
        spilled = [
            scatter_rows(v, destination, out=out)
            for v, out in zip(values, self.work.columns, strict=True)
        ]
        runs, run_offsets = _bin_runs(bin_offsets)
        start = self.binned.append(spilled)
        run_start = self.runs.append([runs])
        coords = np.stack(np.unravel_index(occupied, tuple(int(s) for s in shape)), axis=1) + first
        pieces = zip(
            coords.tolist(),
            (start + offsets[:-1]).tolist(),
            np.diff(offsets).tolist(),
            (run_start + run_offsets[:-1]).tolist(),
            np.diff(run_offsets).tolist(),
            strict=True,
        )
        for chunk, a, count, r, run_count in pieces:
            self.pieces.setdefault(tuple(chunk), []).append(_Piece(a, count, r, run_count))

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
        grid = inputs.plan_grid(bounds, self.n, self.chunk_shape, self.bin_shape, ndim, sample)
        root = inputs.root_metadata(POINT_CLOUD, grid, self.options, bounds)
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

    def _second_pass(self, grid: ChunkGrid) -> None:
        """Sort the raw spill by chunk now that the grid is known."""
        assert self.raw is not None
        step = self._slice_rows()
        for a in range(0, self.raw.rows, step):
            b = min(a + step, self.raw.rows)
            piece = [self.raw.read(k, [(a, b)]) for k in range(len(self.raw.columns))]
            self.raw.done_with([(a, b)])
            lo, hi, _ = bounds_and_nonfinite(piece[0])
            self._spill_binned(piece, grid, (lo, hi))
            self.progress("sort", b, self.raw.rows)
        self.work = None

    def _binned_rows(
        self, chunk: tuple[int, ...], n_bins: int
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """The appended rows of a chunk, every column, in (bin, input order), and the
        ``(n_bins + 1,)`` offsets of its bins; read once per chunk (their spill space is
        then given back)."""
        assert self.binned is not None
        assert self.runs is not None
        pieces = self.pieces[chunk]
        runs = self.runs.read(0, [(p.run_start, p.run_start + p.run_count) for p in pieces])
        ranges = [(p.start, p.start + p.count) for p in pieces]
        starts, bin_offsets = run_destinations(runs[:, 0], runs[:, 1], n_bins)
        values = [
            move_runs(self.binned.read(k, ranges), runs[:, 1], starts)
            for k in range(len(self.binned.columns))
        ]
        self.binned.done_with(ranges)
        return values, bin_offsets

    def _new_rows(self, chunk: tuple[int, ...]) -> tuple[list[np.ndarray], np.ndarray]:
        """The appended rows of a chunk, every column, in (bin, input order), and their bins."""
        assert self.grid is not None
        n_bins = self.grid.bins_per_chunk_total
        values, bin_offsets = self._binned_rows(chunk, n_bins)
        return values, np.repeat(np.arange(n_bins, dtype=np.int64), np.diff(bin_offsets))

    def _chunk_rows(
        self, chunk: tuple[int, ...], grid: ChunkGrid
    ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """A chunk's rows of every column in storage order, its dense fragment blob and
        its ``(P + 1,)`` bin offsets."""
        values, offsets = self._binned_rows(chunk, grid.bins_per_chunk_total)
        blob = encode_dense_ranges_batch(offsets[None, :-1], np.diff(offsets)[None])[0]
        return values, blob, offsets

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


@shared_docs
def write_points_stream(
    store: StoreLike,
    batches: Iterable[Any],
    **settings: Any,
) -> None:
    """Write a point cloud from an iterable of batches (see :class:`PointWriter`).

    Parameters
    ----------
    store
        Destination.
    batches
        Each item is a positions array, or a mapping with ``"positions"`` and optionally
        ``"attributes"`` and ``"object_ids"`` (the arguments of :meth:`PointWriter.append`).
    **settings
        Keyword arguments of :class:`PointWriter` (``chunk_shape``, ``bin_shape``,
        ``units``, ``overwrite``, ``options``, ``memory_budget``, ``spill_dir``,
        ``progress``, ``levels``).

    {example_setup}
    >>> batches = (np.full((3, 3), k, dtype=np.float32) for k in range(4))
    >>> zv.write_points_stream(path, batches, chunk_shape=5.0, progress=False)
    >>> zv.open(path).vertex_count
    12
    """
    with PointWriter(store, **settings) as writer:
        for batch in batches:
            if isinstance(batch, Mapping):
                unknown = set(batch) - {"positions", "attributes", "object_ids"}
                if unknown or "positions" not in batch:
                    raise InvalidInputError(
                        "a batch mapping holds 'positions' and optionally 'attributes' and "
                        f"'object_ids'; got keys {sorted(batch)}"
                    )
                writer.append(
                    batch["positions"],
                    attributes=batch.get("attributes"),
                    object_ids=batch.get("object_ids"),
                )
            else:
                writer.append(batch)


def _union(
    a: tuple[np.ndarray, np.ndarray] | None, b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Per-axis bounds covering both (``a`` may be None)."""
    return b if a is None else (np.minimum(a[0], b[0]), np.maximum(a[1], b[1]))


def bin_dtype(grid: ChunkGrid) -> np.dtype[Any]:
    """The smallest unsigned type holding a bin flat index of ``grid``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update.point_append import load_existing
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [7.0, 7.0]], chunk_shape=8.0, bin_shape=1.0)
    >>> grid = load_existing(path).grid
    >>> grid.bins_per_chunk_total, bin_dtype(grid)
    (64, dtype('uint16'))
    """
    bins = grid.bins_per_chunk_total
    return np.dtype(np.uint16 if bins <= 2**16 else np.uint32 if bins <= 2**32 else np.uint64)


def _bin_runs(bin_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The runs of one bin of each sorted chunk, from its ``(m, n_bins + 1)`` bin offsets.

    Returns
    -------
    runs, run_offsets
        ``(k, 2)`` int64 ``(bin, rows)`` of every non-empty bin, chunk by chunk in bin order,
        and the ``(m + 1,)`` offsets of each chunk's runs.
    """
    lengths = np.diff(bin_offsets, axis=1)
    chunk, bin_ = np.nonzero(lengths)
    runs = np.stack([bin_, lengths[chunk, bin_]], axis=1).astype(np.int64, copy=False)
    run_offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(chunk, minlength=lengths.shape[0]), out=run_offsets[1:])
    return runs, run_offsets


@shared_docs
def append_points(
    store: StoreLike,
    positions: Any,
    *,
    attributes: Mapping[str, Any] | None = None,
    object_ids: Any = None,
    **settings: Any,
) -> None:
    """Add points to an existing point-cloud store.

    The store becomes, byte for byte apart from ``creation_timestamp`` and ``commit``, the one
    :func:`~zarr_vectors.write_points` writes for the old input followed by the new.
    Chunks that receive no new point are not rewritten; they are moved only when the new
    points lie below the grid origin, and re-indexed only when the largest chunk outgrows
    the shards' ``N_max``. With several chunks per shard (``shard_chunks``), a shard is
    rewritten when one of its chunks gets new points, from the unchanged chunks' encoded
    row blocks and the changed chunks' rows, and every shard is rewritten when the origin
    moves or ``N_max`` grows. A local store is changed in a sibling directory swapped in at
    the end, so a failed append leaves it as it was; other stores are changed in place and
    an interrupted append leaves them incomplete (spec §2.4), never wrong.

    A store with levels of detail keeps them: the schedule its root records
    (``level_schedule``: what ``levels=`` asked for; for a store without it, the levels as
    recorded) is run again over the new level 0, so the store is the one ``write_points``
    writes for all the points with the same ``levels=`` (levels may be added). While the
    levels stay the same, only the coarse chunks whose level-0 rows change are rebuilt and
    the others' files kept; when their count changes, every level is built again.

    Concurrent appends (threads, or processes on one machine's local store) take turns:
    each takes the store's writer lock before it reads the store, so every batch is
    committed, in some order (spec §12.3).

    Parameters
    ----------
    store
        An existing point-cloud store (a local path or a writable zarr store; not a zip).
    positions, attributes, object_ids
        The new points, as for :func:`~zarr_vectors.write_points`; the dimension,
        attribute names and row shapes and the presence of object ids must match the
        store's. Dtypes are cast to the store's when numpy casts them safely (float32
        positions into a float64 store, int16 into int32); a cast that can lose values
        is refused with the ``.astype(...)`` that does it, naming the argument.
    **settings
        ``memory_budget``, ``spill_dir``, ``progress`` as for :class:`PointWriter`.

    Raises
    ------
    InvalidInputError
        For input that does not match the store, or a store that cannot be appended to.
    ConcurrentWriteError
        When another writer committed meanwhile without the lock (another process on a
        memory or object store) or held the lock for over an hour; nothing was committed.

    {example_setup}
    >>> positions = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    >>> zv.write_points(path, positions, chunk_shape=5.0, progress=False)
    >>> zv.append_points(path, positions + 10, progress=False)
    >>> zv.open(path).vertex_count
    4
    """
    with writer_lock(store), PointWriter(store, mode="a", **settings) as writer:
        writer.append(positions, attributes=attributes, object_ids=object_ids)


inputs.register_append((POINT_CLOUD,), append_points)  # write_points(mode="a") runs it
