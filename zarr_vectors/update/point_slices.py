"""The slices of a streaming point write: batches gathered into slices that fit the memory
budget, sorted by (chunk, bin) and spilled, then read back a chunk at a time.

A slice is sorted by (chunk, bin) (stable, so the rows of a bin keep input order) and
appended to spill files with the runs of one bin that each chunk's piece holds. A chunk's
pieces are read back in batch order and their runs moved to (bin, input order), the order
:func:`~zarr_vectors.write_points` gives (spec §5.5). Without a grid (no ``chunk_shape``)
the slices are spilled raw and sorted in a second pass once the grid is known.
:class:`PointSlices` holds this state for :class:`~zarr_vectors.update.point_writer.PointWriter`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors._progress import Reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.fragment_encoding import encode_dense_ranges_batch
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE
from zarr_vectors.kernels import (
    bounds_and_nonfinite,
    destinations_of_positions,
    scatter_rows,
)
from zarr_vectors.kernels.bin_runs import move_runs, run_destinations
from zarr_vectors.store.spill import SpillColumns
from zarr_vectors.update.point_append import ExistingPoints
from zarr_vectors.write import column_shapes, dense_bounds_span, inputs

__all__ = ["PointSlices", "Schema", "bin_dtype", "union_bounds"]

_MIN_SLICE_ROWS = 256
_WORK_BYTES_PER_ROW = 24
"""Scratch bytes per row of a slice besides its columns: chunk/bin keys, sort order, copies."""


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


class PointSlices:
    """The rows of a streaming point write between its batches and its chunks: the slice
    being gathered, the spill files and each chunk's pieces in them.

    The writer sets the attributes below; :meth:`_gather` takes a batch's columns, and
    :meth:`_binned_rows` gives a chunk's rows back once every batch is spilled.
    """

    budget: int
    schema: Schema | None
    grid: ChunkGrid | None
    existing: ExistingPoints | None
    scratch: Path
    progress: Reporter
    raw: SpillColumns | None
    binned: SpillColumns | None
    runs: SpillColumns | None
    pieces: dict[tuple[int, ...], list[_Piece]]
    slice: list[np.ndarray] | None
    work: _SliceWork | None
    slice_rows: int
    slice_bounds: tuple[np.ndarray, np.ndarray] | None

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
            self.slice_bounds = union_bounds(self.slice_bounds, bounds)
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


def union_bounds(
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
