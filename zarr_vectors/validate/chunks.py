"""L3 checks on the data of one occupied chunk: blob, vertices, attributes (spec §11.4).

:class:`ChunkChecker` holds what the checks of one level share (array specs, grid, bins)
and accumulates what is checked after the last chunk (coordinate bounds, largest F).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE
from zarr_vectors.kernels import bin_coords, chunk_coords, segment_bounds
from zarr_vectors.validate.blobs import Blob, BlobError, blob_size, checked_blob
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.grid import grid_label
from zarr_vectors.validate.names import FRAGMENT_RECORDS, POINT_CLOUD, VERTEX_COUNTS
from zarr_vectors.validate.records import CheckedRecord, checked_record, record_size
from zarr_vectors.validate.shard_check import (
    ArraySpec,
    blob_blocks_present,
    placed_store,
    read_blob_payload,
    read_rows,
)

__all__ = ["CheckedChunk", "ChunkChecker", "LevelArrays"]

Shards = dict[str, bytes | None]


@dataclass(frozen=True, slots=True)
class LevelArrays:
    """The per-chunk arrays of one level that L3 reads."""

    vertices: ArraySpec
    fragments: ArraySpec
    attributes: list[ArraySpec]
    fragment_attributes: list[ArraySpec]


@dataclass(frozen=True, slots=True)
class CheckedChunk:
    """What the checks of one chunk read, for the level-wide object checks.

    Attributes
    ----------
    blob
        The parsed ``vertex_fragments`` blob (or the vertex fragments of the chunk's
        fragment record, format 1.6), or None when unusable.
    rows
        The vertex rows ``[0, n)``, or None when unusable.
    fragment_rows
        Rows ``[0, F)`` of each readable fragment attribute, by name (the record's owners
        as ``object_id``).
    links
        The link fragments of the chunk's fragment record (format 1.6), else None.
    """

    blob: Blob | None
    rows: np.ndarray | None
    fragment_rows: dict[str, np.ndarray]
    links: Blob | None = None


@dataclass(slots=True)
class ChunkChecker:
    """Checks chunk after chunk of one level and keeps the level-wide accumulators.

    Attributes
    ----------
    ctx
        The validation run.
    level
        Level number.
    arrays
        The arrays to read.
    chunk_shape, bin_shape
        ``C`` and the level's bin shape ``B`` (float64).
    origin
        ``chunk_grid_origin``.
    lo, hi
        Running per-axis minimum and maximum of the coordinates read.
    complete
        False once some chunk's vertices could not be fully checked.
    max_fragments
        Largest F over the blobs read.
    bounds
        Per chunk: (vertices shard key, minimum, maximum) of its coordinates.
    """

    ctx: Context
    level: int
    arrays: LevelArrays
    chunk_shape: np.ndarray
    bin_shape: np.ndarray
    origin: np.ndarray
    lo: np.ndarray = field(init=False)
    hi: np.ndarray = field(init=False)
    complete: bool = True
    max_fragments: int = 0
    bounds: list[tuple[str, np.ndarray, np.ndarray]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lo = np.full(self.chunk_shape.shape[0], np.inf)
        self.hi = np.full(self.chunk_shape.shape[0], -np.inf)

    @property
    def bins(self) -> np.ndarray:
        """Bins per chunk per axis, ``round(C / B)``."""
        bins: np.ndarray = np.maximum(np.round(self.chunk_shape / self.bin_shape), 1)
        return bins.astype(np.int64)

    def mark(self) -> None:
        """Record the checks this level evaluates."""
        ctx = self.ctx
        ctx.mark("L3.shard_index", "L3.shard_rows_present", "L3.shard_rows_beyond")
        if placed_store(ctx):
            ctx.mark("L3.chunk_place")
        elif self.level == 0 and ctx.facts.version is not None:
            ctx.report.note(
                "the store predates format 1.2: its shards carry no place records (spec "
                "§9.0.2), so a chunk file moved to another key cannot be detected; rewrite "
                "the store with this library to add them"
            )
        ctx.mark(*_FRAG_IDS, "L3.frag_bounds", "L3.counts_match_fragments")
        if self.arrays.fragments.role == FRAGMENT_RECORDS:
            ctx.mark("L3.frag_record")
        ctx.mark("L3.vertices_finite", "L3.vertex_in_chunk")
        if self.level == 0:
            ctx.mark("L3.frag_tiling", "L3.vertex_in_bin")
        if self.level == 0 and ctx.facts.kind == POINT_CLOUD:
            ctx.mark("L3.frag_dense_form")
        if any(a.dtype.kind == "f" for a in self.arrays.attributes):
            ctx.mark("L3.attribute_finite")

    def check(self, g: tuple[int, ...], n: int, shards: Shards) -> CheckedChunk:
        """Run every per-chunk check on chunk ``g`` holding ``n`` rows; return what was read."""
        record = None
        if self.arrays.fragments.role == FRAGMENT_RECORDS:
            record = self._record(g, n, shards.get(self.arrays.fragments.path))
            blob = None if record is None else record.vertices
        else:
            blob = self._blob(g, n, shards.get(self.arrays.fragments.path))
        rows = self._vertices(g, n, shards.get(self.arrays.vertices.path), blob)
        for spec in self.arrays.attributes:
            self._attribute(g, n, spec, shards.get(spec.path))
        fragment_rows = {}
        for spec in self.arrays.fragment_attributes:
            shard = shards.get(spec.path)
            if blob is not None and shard is not None and blob.n_fragments <= spec.n_rows:
                got = read_rows(self.ctx, spec, g, shard, blob.n_fragments)
                if got is not None:
                    fragment_rows[spec.path.rsplit("/", 1)[-1]] = got
        if record is None:
            return CheckedChunk(blob, rows, fragment_rows)
        fragment_rows[OBJECT_ID_ATTRIBUTE] = record.owners
        return CheckedChunk(blob, rows, fragment_rows, record.links)

    # -- fragment index ------------------------------------------------------------------
    def _payload(
        self, g: tuple[int, ...], shard: bytes | None, size: Callable[[np.ndarray], int]
    ) -> np.ndarray | None:
        """The chunk's fragment blob or record bytes (``size`` gives their length from
        them), or None when they are unreadable or their blocks are missing (reported)."""
        spec, ctx = self.arrays.fragments, self.ctx
        if shard is None:
            self._unreadable(spec, g)
            return None
        got = read_blob_payload(ctx, spec, g, shard)
        if got is None:
            return None
        payload, present = got
        if not blob_blocks_present(ctx, spec, g, present, size(payload)):
            return None
        return payload

    def _blob(self, g: tuple[int, ...], n: int, shard: bytes | None) -> Blob | None:
        spec, ctx = self.arrays.fragments, self.ctx
        if (payload := self._payload(g, shard, blob_size)) is None:
            return None
        try:
            blob = checked_blob(payload, ctx.facts.version)
        except BlobError as exc:
            ctx.fail(exc.check_id, spec.key(g), exc.message)
            return None
        self.max_fragments = max(self.max_fragments, blob.n_fragments)
        self._blob_context(g, n, blob)
        return blob

    def _record(self, g: tuple[int, ...], n: int, shard: bytes | None) -> CheckedRecord | None:
        """The chunk's fragment record (format 1.6, spec §6.9), checked as a blob is."""
        spec, ctx = self.arrays.fragments, self.ctx
        if (payload := self._payload(g, shard, record_size)) is None:
            return None
        try:
            record = checked_record(payload)
        except BlobError as exc:
            ctx.fail(exc.check_id, spec.key(g), exc.message)
            return None
        self.max_fragments = max(self.max_fragments, record.vertices.n_fragments)
        self._blob_context(g, n, record.vertices)
        return record

    def _blob_context(self, g: tuple[int, ...], n: int, blob: Blob) -> None:
        ctx, key = self.ctx, self.arrays.fragments.key(g)
        extent = blob.extent
        if extent > n:
            ctx.fail("L3.frag_bounds", key, f"fragments reach row {extent - 1}; the chunk has {n}")
        if extent != n:
            ctx.fail(
                "L3.counts_match_fragments",
                f"{self.level}/{VERTEX_COUNTS}#g={grid_label(g)}",
                f"vertex_counts is {n} but the fragment index covers {extent} rows",
            )
        if self.level == 0 and not blob.tiles(n):
            ctx.fail("L3.frag_tiling", key, f"the fragments are not ranges tiling rows [0, {n})")
        bins = int(np.prod(self.bins))
        if self.level == 0 and ctx.facts.kind == POINT_CLOUD and blob.n_fragments != bins:
            ctx.fail(
                "L3.frag_dense_form",
                key,
                f"{blob.n_fragments} fragments; the dense form has one per bin ({bins})",
            )

    # -- vertices ------------------------------------------------------------------------
    def _vertices(
        self, g: tuple[int, ...], n: int, shard: bytes | None, blob: Blob | None
    ) -> np.ndarray | None:
        spec = self.arrays.vertices
        rows = None if shard is None else read_rows(self.ctx, spec, g, shard, n)
        if shard is None:
            self._unreadable(spec, g)
        if rows is None:
            self.complete = False
            return None
        key = spec.key(g)
        per_bin = self.level == 0 and blob is not None and blob.tiles(n)
        starts = blob.starts[blob.counts > 0] if per_bin and blob is not None else None
        if starts is None or not starts.size:
            starts = np.zeros(1, dtype=np.int64)
        seg_low, seg_high, finite = segment_bounds(rows, starts)
        if not finite:
            row = int(np.argmin(np.isfinite(rows).all(axis=1)))
            self.ctx.fail("L3.vertices_finite", key, f"row {row} is {rows[row].tolist()}")
            self.complete = False
            return None
        low, high = seg_low.min(axis=0), seg_high.max(axis=0)
        self.lo, self.hi = np.minimum(self.lo, low), np.maximum(self.hi, high)
        self.bounds.append((key, low, high))
        chunk = np.asarray(g, dtype=np.int64) + self.origin
        in_chunk = self._in_chunk(key, rows, chunk, (low, high))
        if in_chunk and per_bin and blob is not None:
            self._in_bin(key, rows, chunk, blob, (seg_low, seg_high))
        return rows

    def _in_chunk(
        self, key: str, rows: np.ndarray, chunk: np.ndarray, bounds: tuple[np.ndarray, np.ndarray]
    ) -> bool:
        """L3.vertex_in_chunk: ``c·C ≤ p < (c+1)·C`` on every axis (spec §5.1).

        The attained minimum and maximum decide it for the whole chunk; the rows are only
        mapped one by one (to name the first offending row) when that test fails.
        """
        lower = chunk.astype(np.float64) * self.chunk_shape
        upper = (chunk + 1).astype(np.float64) * self.chunk_shape
        if np.all(lower <= bounds[0]) and np.all(bounds[1] < upper):
            return True
        try:
            found = chunk_coords(rows, self.chunk_shape)
        except InvalidInputError as exc:
            self.ctx.fail("L3.vertex_in_chunk", key, str(exc))
            return False
        row = int(np.argmax((found != chunk).any(axis=1)))
        self.ctx.fail(
            "L3.vertex_in_chunk",
            key,
            f"row {row} {rows[row].tolist()} lies in chunk {found[row].tolist()}, "
            f"not {chunk.tolist()}",
        )
        return False

    def _bin_boxes(self, chunk: np.ndarray, bins_flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Edges ``[e_b, e_{b+1})`` of the given bins of ``chunk`` (spec §5.3, float64)."""
        bins = self.bins
        local = np.stack(np.unravel_index(bins_flat, tuple(bins)), axis=1)
        corner = chunk.astype(np.float64) * self.chunk_shape
        lower = corner + local * self.bin_shape
        upper = corner + (local + 1) * self.bin_shape
        top = local + 1 == bins
        upper[top] = np.broadcast_to((chunk + 1).astype(np.float64) * self.chunk_shape, top.shape)[
            top
        ]
        return lower, upper

    def _in_bin(
        self,
        key: str,
        rows: np.ndarray,
        chunk: np.ndarray,
        blob: Blob,
        bounds: tuple[np.ndarray, np.ndarray],
    ) -> None:
        """L3.vertex_in_bin for a blob whose ranges tile the chunk (spec §11.4).

        Dense form (point clouds, spec §6.6): fragment ``f`` is bin ``f``. Sparse form: the
        bin of a fragment is the bin of its first row and bins must not decrease with ``f``.
        Run form (object kinds, §10.3): the bin of a fragment is the bin of its first row.
        Each fragment's attained per-axis minimum and maximum (``bounds``, one row per
        non-empty fragment) are compared with its bin's edges.
        """
        used = blob.counts > 0
        starts = blob.starts[used]
        if not starts.size:
            return
        dense = self.ctx.facts.kind == POINT_CLOUD and blob.n_fragments == int(np.prod(self.bins))
        if dense:
            frag_bins = np.flatnonzero(used)
        else:
            frag_bins = self._row_bins(rows[starts], chunk)
            sparse = self.ctx.facts.kind == POINT_CLOUD  # run form: bins follow object order
            if sparse and (np.diff(frag_bins) < 0).any():
                self.ctx.fail("L3.vertex_in_bin", key, "fragment bins decrease with f")
                return
        lower, upper = self._bin_boxes(chunk, frag_bins)
        if np.all(lower <= bounds[0]) and np.all(bounds[1] < upper):
            return
        expected = np.repeat(frag_bins, blob.counts[used])
        found = self._row_bins(rows, chunk)
        row = int(np.argmax(found != expected))
        self.ctx.fail(
            "L3.vertex_in_bin",
            key,
            f"row {row} {rows[row].tolist()} lies in bin {int(found[row])}, its fragment "
            f"stands for bin {int(expected[row])}",
        )

    def row_bins(self, rows: np.ndarray, g: tuple[int, ...]) -> np.ndarray:
        """Bin flat index of each row of the chunk of grid index ``g`` (spec §5.3)."""
        return self._row_bins(rows, np.asarray(g, dtype=np.int64) + self.origin)

    def _row_bins(self, rows: np.ndarray, chunk: np.ndarray) -> np.ndarray:
        """Bin flat index of each row of chunk ``chunk`` (spec §5.3)."""
        chunks = np.broadcast_to(chunk, rows.shape)
        local = bin_coords(rows, chunks, self.chunk_shape, self.bin_shape, self.bins)
        flat: np.ndarray = np.ravel_multi_index(tuple(local.T), tuple(self.bins))
        return flat

    # -- attributes ----------------------------------------------------------------------
    def _attribute(self, g: tuple[int, ...], n: int, spec: ArraySpec, shard: bytes | None) -> None:
        if shard is None:
            self._unreadable(spec, g)
            return
        rows = read_rows(self.ctx, spec, g, shard, n)
        if rows is None or spec.dtype.kind != "f":
            return
        if np.isfinite(rows).all():
            return
        finite = np.isfinite(rows.reshape(n, -1)).all(axis=1)
        if not finite.all():
            row = int(np.argmin(finite))
            self.ctx.fail("L3.attribute_finite", spec.key(g), f"row {row} is {rows[row].tolist()}")

    def _unreadable(self, spec: ArraySpec, g: tuple[int, ...]) -> None:
        """A shard that was listed (or expected) but could not be read."""
        key = spec.key(g)
        if key in self.ctx.unreadable:
            self.ctx.fail("L3.shard_index", key, f"the shard {self.ctx.unreadable[key]}")


_FRAG_IDS = (
    "L3.frag_truncated",
    "L3.frag_magic",
    "L3.frag_version",
    "L3.frag_flags",
    "L3.frag_range_count",
    "L3.frag_popcount",
    "L3.frag_padding",
    "L3.frag_range_values",
    "L3.frag_csr_start",
    "L3.frag_csr_monotone",
    "L3.frag_indices_non_negative",
    "L3.frag_trailing_bytes",
)
