"""Whole-level reads and bounding-box queries over a level's vertices (spec §8).

A box query reads only the chunks the box meets (their row counts come from
``vertex_counts``); a chunk inside the box is read whole, and inside a partly covered chunk
only the row runs of the bins the box meets are read. The exact position test is applied
only to rows of bins the box cuts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE, VERTICES
from zarr_vectors.geometry.reader import ChunkRows, LevelReader
from zarr_vectors.geometry.result import QueryResult
from zarr_vectors.kernels import points_in_box

__all__ = ["parse_bbox", "query_box", "read_all"]


def parse_bbox(bbox: Any, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate a box given as ``(lo, hi)`` (two sequences of ``D`` numbers).

    Half-open on every axis: ``lo <= p < hi``. ``±inf`` leaves an axis unbounded.

    Raises
    ------
    InvalidInputError
        When the box does not have two rows of ``D`` numbers, holds NaN, or ``lo > hi``.
    """
    try:
        box = np.asarray(bbox, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"bbox must be (lo, hi) with {ndim} numbers each") from exc
    if box.shape != (2, ndim):
        raise InvalidInputError(
            f"bbox must be (lo, hi) with {ndim} numbers each, got shape {box.shape}"
        )
    if np.isnan(box).any():
        raise InvalidInputError("bbox must not contain NaN")
    if np.any(box[0] > box[1]):
        d = int(np.flatnonzero(box[0] > box[1])[0])
        raise InvalidInputError(f"bbox lo[{d}] = {box[0, d]} is greater than hi[{d}] = {box[1, d]}")
    return box[0], box[1]


def _result(
    reader: LevelReader,
    wanted: list[ChunkRows],
    mask: np.ndarray | None,
    positions: np.ndarray | None = None,
) -> QueryResult:
    """Read every column for ``wanted`` and keep the rows flagged in ``mask`` (all if None)."""

    names = reader.attribute_names + ([OBJECT_ID_ATTRIBUTE] if reader.has_object_ids else [])
    if positions is None:
        names = [VERTICES, *names]
    read = dict(zip(names, reader.read_columns(names, wanted), strict=True))
    if positions is not None:
        read[VERTICES] = positions

    def column(name: str) -> np.ndarray:
        rows = read[name]
        return rows if mask is None else rows[mask]

    return QueryResult(
        positions=column(VERTICES),
        attributes={k: column(k) for k in reader.attribute_names},
        vertex_object_ids=column(OBJECT_ID_ATTRIBUTE) if reader.has_object_ids else None,
    )


def read_all(reader: LevelReader) -> QueryResult:
    """Every vertex of the level with its attributes, in chunk (C order) then row order."""
    grid = reader.grid
    chunks, counts = reader.occupied_chunks(np.zeros(grid.ndim, np.int64), grid.shape)
    wanted = [
        ChunkRows(tuple(int(c) for c in chunk), np.array([[0, n]], dtype=np.int64))
        for chunk, n in zip(chunks, counts, strict=True)
    ]
    return _result(reader, wanted, None)


def _bin_runs(starts: np.ndarray, sizes: np.ndarray, take: np.ndarray) -> np.ndarray:
    """Merged row runs ``[start, stop)`` of the bins flagged in ``take`` (non-empty ones)."""
    sel = take & (sizes > 0)
    a, b = starts[sel], starts[sel] + sizes[sel]
    if a.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    breaks = np.flatnonzero(a[1:] != b[:-1]) + 1
    return np.stack([a[np.r_[0, breaks]], b[np.r_[breaks - 1, b.size - 1]]], axis=1)


def _partial_plan(
    reader: LevelReader,
    chunk: np.ndarray,
    ranges: tuple[np.ndarray, np.ndarray],
    lo: np.ndarray,
    hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Row runs to read from a partly covered chunk, and which of them need the exact test."""
    meets, covers = reader.grid.bins_meeting_box(chunk, lo, hi)
    starts, sizes = ranges
    whole = _bin_runs(starts, sizes, covers)
    cut = _bin_runs(starts, sizes, meets & ~covers)
    runs = np.concatenate([whole, cut])
    order = np.argsort(runs[:, 0], kind="stable")
    needs_test = np.r_[np.zeros(len(whole), bool), np.ones(len(cut), bool)][order]
    return runs[order], needs_test


def query_box(reader: LevelReader, lo: np.ndarray, hi: np.ndarray) -> QueryResult:
    """Vertices ``p`` of the level with ``lo <= p < hi`` on every axis (spec §8)."""
    grid = reader.grid
    first, stop = grid.box_chunk_range(lo, hi)
    if np.any(stop <= first) or np.any(lo >= hi):
        return _result(reader, [], None)
    chunks, counts = reader.occupied_chunks(first, stop)
    inside = np.all(grid.chunk_lower(chunks) >= lo, axis=1) & np.all(
        grid.chunk_upper(chunks) <= hi, axis=1
    )
    partial = np.flatnonzero(~inside)
    ranges = dict(
        zip(partial.tolist(), reader.fragment_ranges(chunks[partial], counts[partial]), strict=True)
    )
    wanted: list[ChunkRows] = []
    tested: list[np.ndarray] = []
    for j, (chunk, n) in enumerate(zip(chunks, counts, strict=True)):
        key = tuple(int(c) for c in chunk)
        if inside[j]:
            wanted.append(ChunkRows(key, np.array([[0, n]], dtype=np.int64)))
            tested.append(np.zeros(1, dtype=bool))
            continue
        runs, needs_test = _partial_plan(reader, chunk, ranges[j], lo, hi)
        if runs.shape[0]:
            wanted.append(ChunkRows(key, runs))
            tested.append(needs_test)
    if not wanted:
        return _result(reader, [], None)
    positions = reader.read_rows(VERTICES, wanted)
    runs = np.concatenate([w.runs for w in wanted])
    test_rows = np.repeat(np.concatenate(tested), runs[:, 1] - runs[:, 0])
    if not test_rows.any():
        return _result(reader, wanted, None, positions)
    mask = np.ones(positions.shape[0], dtype=bool)
    mask[test_rows] = points_in_box(positions[test_rows], lo, hi)
    return _result(reader, wanted, mask, positions)
