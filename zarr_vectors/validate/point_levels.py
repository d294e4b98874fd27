"""Level 5 checks of the point methods' promises (spec §4.3.2, §11.6).

Every level above 0 is read chunk by chunk with a plain level reader, together with the
same chunk of the level it was computed from (level N - 1 for ``sample``, level 0 for
``aggregate``): one chunk of two levels in memory at a time. The rule checks recompute the
chunk with the writer's own function (:func:`~zarr_vectors.write.coarse_rows`); the tests
hold independent numpy versions of the rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import FormatError
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import VERTEX_COUNTS, VERTEX_FRAGMENTS, VERTICES
from zarr_vectors.kernels import bin_coords, chunk_coords
from zarr_vectors.read import ChunkRows, LevelReader
from zarr_vectors.store.shards import shard_key
from zarr_vectors.validate.coarsening import valid_methods
from zarr_vectors.validate.context import Context
from zarr_vectors.write import coarse_rows

__all__ = ["run"]

_SAMPLE_IDS = ("L5.sample_nested", "L5.sample_cap", "L5.sample_rule")
_AGGREGATE_IDS = ("L5.aggregate_counts", "L5.aggregate_rule")


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One chunk of one level: its rows (positions first) and per-bin row counts."""

    level: int
    index: np.ndarray
    columns: list[np.ndarray]
    sizes: np.ndarray

    def key(self, array: str = VERTICES) -> str:
        return shard_key(f"{self.level}/{array}", self.index, 1 if array == VERTICES else 0)


def run(ctx: Context) -> None:
    """Check every level above 0 of a point cloud whose methods L2 accepted."""
    methods = valid_methods(ctx)
    if not methods or ctx.facts.bbox is None:
        return
    try:
        root = RootMetadata.from_json(ctx.root_attrs())
    except FormatError as exc:
        ctx.report.note(f"L5 point-level checks skipped: {exc}")
        return
    ctx.mark("L5.coarse_vertex_in_bin")
    for level, coarsening in methods.items():
        ctx.mark(*(_SAMPLE_IDS if coarsening["method"] == "sample" else _AGGREGATE_IDS))
        try:
            _check_level(ctx, root, level, coarsening)
        except FormatError as exc:
            ctx.report.note(f"L5 point-level checks of level {level} stopped: {exc}")


def _check_level(ctx: Context, root: RootMetadata, level: int, coarsening: dict[str, Any]) -> None:
    source = level - 1 if coarsening["method"] == "sample" else 0
    coarse = LevelReader(ctx.io, root, level)
    finer = LevelReader(ctx.io, root, source)
    names = finer.vertex_columns[1:]
    extra = [coarsening["count"]] if coarsening["method"] == "aggregate" else []
    low_rows, high_rows = (_row_table(reader) for reader in (finer, coarse))
    bbox = root.bounding_box
    if bbox is None:
        return
    bounds = (np.asarray(bbox[0]), np.asarray(bbox[1]))
    for chunk in sorted(set(low_rows) | set(high_rows)):
        index = np.asarray(chunk, dtype=np.int64)
        low = _read_chunk(finer, source, index, low_rows.get(chunk, 0), names)
        high = _read_chunk(coarse, level, index, high_rows.get(chunk, 0), names + extra)
        _in_bins(ctx, coarse, high)
        want = coarse_rows(low.columns, names, bounds, coarse.grid, coarsening)
        if coarsening["method"] == "sample":
            _sample_checks(ctx, low, high, want, coarsening["per_bin"])
        else:
            _aggregate_checks(ctx, low, high, want)


def _row_table(reader: LevelReader) -> dict[tuple[int, ...], int]:
    """Row count of every occupied chunk of a level."""
    chunks, counts = reader.occupied_chunks(None, None)
    return {tuple(int(i) for i in c): int(n) for c, n in zip(chunks, counts, strict=True)}


def _read_chunk(
    reader: LevelReader, level: int, index: np.ndarray, count: int, names: list[str]
) -> _Chunk:
    """The rows of one chunk (positions, then the columns ``names``) and its bin sizes."""
    columns = [VERTICES, *names]
    if count == 0:
        empty = [
            np.empty((0, *reader.column_spec(c)[1]), reader.column_spec(c)[0]) for c in columns
        ]
        return _Chunk(level, index, empty, np.zeros(reader.grid.bins_per_chunk_total, np.int64))
    wanted = [ChunkRows(tuple(int(i) for i in index), np.asarray([[0, count]], np.int64))]
    rows = reader.read_columns(columns, wanted)  # before the ranges: no bin check on read
    _, sizes = reader.fragment_ranges(index[None], np.asarray([count]))[0]
    return _Chunk(level, index, rows, sizes)


def _in_bins(ctx: Context, reader: LevelReader, chunk: _Chunk) -> None:
    """``L5.coarse_vertex_in_bin``: row r of fragment f lies in coarse bin f."""
    positions = chunk.columns[0]
    if positions.shape[0] == 0:
        return
    grid = reader.grid
    local = bin_coords(
        positions,
        chunk_coords(positions, grid.chunk_shape),
        grid.chunk_shape,
        grid.bin_shape,
        grid.bins,
    )
    flat = np.ravel_multi_index(tuple(local.T), tuple(int(b) for b in grid.bins))
    expected = np.repeat(np.arange(chunk.sizes.shape[0]), chunk.sizes)
    if not np.array_equal(flat, expected):
        row = int(np.flatnonzero(flat != expected)[0])
        ctx.fail(
            "L5.coarse_vertex_in_bin",
            chunk.key(),
            f"row {row} of level {chunk.level} lies in coarse bin {int(flat[row])}, its "
            f"fragment is bin {int(expected[row])}",
        )


def _rows(columns: list[np.ndarray]) -> list[bytes]:
    """Each row of every column, as one byte string."""
    n = columns[0].shape[0]
    parts = [np.ascontiguousarray(c).reshape(n, -1).view(np.uint8).reshape(n, -1) for c in columns]
    table = np.concatenate(parts, axis=1) if parts else np.empty((n, 0), np.uint8)
    return [row.tobytes() for row in table]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(
        x.shape[0] == y.shape[0] and x.dtype == y.dtype and x.tobytes() == y.tobytes()
        for x, y in zip(a, b, strict=True)
    )


def _sample_checks(
    ctx: Context, low: _Chunk, high: _Chunk, want: list[np.ndarray], cap: int
) -> None:
    finer = set(_rows(low.columns))
    strays = [i for i, row in enumerate(_rows(high.columns)) if row not in finer]
    if strays:
        ctx.fail(
            "L5.sample_nested",
            high.key(),
            f"row {strays[0]} of level {high.level} is not a row of level {low.level}",
        )
    if high.sizes.max(initial=0) > cap:
        ctx.fail(
            "L5.sample_cap",
            high.key(VERTEX_FRAGMENTS),
            f"a coarse bin holds {int(high.sizes.max())} rows, more than per_bin = {cap}",
        )
    if not _same(high.columns, want):
        ctx.fail(
            "L5.sample_rule",
            high.key(),
            f"the rows of level {high.level} are not those spec §4.3.2 selects from level "
            f"{low.level}",
        )


def _aggregate_checks(ctx: Context, low: _Chunk, high: _Chunk, want: list[np.ndarray]) -> None:
    counts = high.columns[-1]
    total = int(counts.sum()) if counts.shape[0] else 0
    where = f"{high.level}/{VERTEX_COUNTS}#g=({','.join(str(int(i)) for i in high.index)})"
    if high.sizes.max(initial=0) > 1 or (counts.shape[0] and counts.min() < 1):
        ctx.fail("L5.aggregate_counts", where, "a coarse bin holds several rows or a count < 1")
    elif total != low.columns[0].shape[0]:
        ctx.fail(
            "L5.aggregate_counts",
            where,
            f"the counts add up to {total}, level 0 holds {low.columns[0].shape[0]} rows here",
        )
    if not _same(high.columns, want):
        ctx.fail(
            "L5.aggregate_rule",
            high.key(),
            f"the rows of level {high.level} are not those spec §4.3.2 computes from level 0",
        )
