"""Level 3 checks: consistency of counts, shards, fragment indices and vertices (spec §11.4).

Per level: ``vertex_counts`` is read whole, the shard keys of every per-chunk array are
listed once (shard presence and clean empty chunks), then the occupied chunks — all of
them, or an evenly spaced sample — are read shard by shard, each shard once, and checked
by :class:`~zarr_vectors.validate.chunks.ChunkChecker`.
"""

from __future__ import annotations

import numpy as np

from zarr_vectors.format.jsonutil import pointer
from zarr_vectors.validate import object_chunks, object_order
from zarr_vectors.validate.arrays import PER_CHUNK_ROLES, level_arrays, link_attribute_arrays
from zarr_vectors.validate.chunks import ChunkChecker, LevelArrays
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.counts import parse_shard_key, read_nonzero_counts
from zarr_vectors.validate.grid import grid_label
from zarr_vectors.validate.link_checks import run_link_checks
from zarr_vectors.validate.names import (
    FRAGMENT_RECORDS,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_KINDS,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.validate.object_checks import run_object_checks
from zarr_vectors.validate.object_data import LevelIndex, ObjectLevel
from zarr_vectors.validate.shard_check import (
    ArraySpec,
    array_spec,
    empty_entries_clean,
    stray_place,
)

__all__ = ["run", "sample_positions"]

BATCH_CHUNKS = 16
"""Chunks whose shards are fetched in one concurrent batch."""
_READ_ROLES = frozenset(
    {VERTICES, VERTEX_FRAGMENTS, FRAGMENT_RECORDS, "attribute", "fragment_attribute"}
)
"""Arrays whose shards L3 reads (object kinds: also ``links/0`` and ``link_fragments``)."""
_LINK_ROLES = frozenset({LINKS, LINK_FRAGMENTS, "link_attribute"})

Chunk = tuple[int, ...]


def run(ctx: Context) -> None:
    """Run the L3 checks on every level (spec §11.4)."""
    f = ctx.facts
    if f.ndim is None or f.grid_shape is None or f.chunk_shape is None or f.origin is None:
        return
    for level in f.levels:
        facts = f.level.get(level)
        if facts is not None and facts.n_max is not None:
            _Level(ctx, level).run()
    object_chunks.check_consistency(ctx)
    object_order.check_consistency(ctx)


def sample_positions(m: int, k: int | None) -> np.ndarray:
    """Positions of the chunks checked among ``m`` occupied chunks: all, or ``k`` evenly spaced.

    Position ``i`` of the sample is ``floor(i · m / k)`` for ``i < k``: distinct, in
    ascending order, starting with the first chunk.
    """
    if k is None or k >= m:
        return np.arange(m)
    return (np.arange(k) * m) // k


class _Level:
    """L3 of one level."""

    def __init__(self, ctx: Context, level: int) -> None:
        f = ctx.facts
        assert f.ndim is not None
        assert f.grid_shape is not None
        self.ctx, self.level, self.base = ctx, level, str(level)
        self.grid, self.ndim = f.grid_shape, f.ndim
        self.n_max = f.level[level].n_max or 0
        self.specs: dict[str, ArraySpec] = {}
        for array in level_arrays(ctx, level):
            spec = array_spec(ctx, array, f.ndim) if array.role in PER_CHUNK_ROLES else None
            if spec is not None:
                self.specs[array.path] = spec
        if f.kind in OBJECT_KINDS:
            for array in link_attribute_arrays(ctx, level):
                spec = array_spec(ctx, array, f.ndim)
                if spec is not None:
                    self.specs[array.path] = spec
        self.objects: ObjectLevel | None = None
        self.required = [
            s
            for s in self.specs.values()
            if s.role in _READ_ROLES or (s.role == LINK_FRAGMENTS and f.kind in OBJECT_KINDS)
        ]

    def _arrays(self) -> LevelArrays | None:
        by_role = {s.role: s for s in self.specs.values()}
        fragments = by_role.get(VERTEX_FRAGMENTS) or by_role.get(FRAGMENT_RECORDS)
        if VERTICES not in by_role or fragments is None:
            return None
        return LevelArrays(
            by_role[VERTICES],
            fragments,
            [s for s in self.specs.values() if s.role == "attribute"],
            [s for s in self.specs.values() if s.role == "fragment_attribute"],
        )

    def run(self) -> None:
        """Counts, shard keys, then the data of the chosen chunks, then level-wide checks."""
        counted = self._occupancy()
        if counted is None:
            return
        occupied, invalid = counted
        present = self._listing(occupied, invalid)
        arrays = self._arrays()
        if arrays is None:
            return
        checker = self._checker(arrays)
        checker.mark()
        self.objects = self._object_level()
        sampled = self._read_chunks(checker, occupied, present)
        self._finish(checker, sampled=sampled)
        if self.objects is not None:
            self._object_checks(checker, occupied, sampled=sampled)

    def _object_level(self) -> ObjectLevel | None:
        kind = self.ctx.facts.kind
        if kind not in OBJECT_KINDS:
            return None
        by_role = {s.role: s for s in self.specs.values()}
        objects = ObjectLevel(
            self.ctx,
            self.level,
            str(kind),
            by_role.get(LINKS),
            by_role.get(LINK_FRAGMENTS),
            [s for s in self.specs.values() if s.role == "link_attribute"],
        )
        objects.mark()
        return objects

    def _object_checks(
        self, checker: ChunkChecker, occupied: dict[Chunk, int], *, sampled: bool
    ) -> None:
        assert self.objects is not None
        index = LevelIndex(self.grid, self.n_max, occupied)
        refs = run_object_checks(self.ctx, self.objects, index, sampled=sampled)
        geometry = (checker.chunk_shape, checker.origin)
        run_link_checks(self.ctx, self.objects, index, refs, geometry, sampled=sampled)

    def _occupancy(self) -> tuple[dict[Chunk, int], set[Chunk]] | None:
        """Valid non-zero counts by chunk, and the chunks whose count is out of range."""
        ctx = self.ctx
        ctx.mark("L3.counts_range")
        got = read_nonzero_counts(ctx, f"{self.base}/{VERTEX_COUNTS}")
        if isinstance(got, str):
            ctx.fail("L3.counts_range", f"{self.base}/{VERTEX_COUNTS}", got)
            return None
        cells, values = got
        valid = self._counts_range(cells, values)
        if valid.all():
            self._totals(values)
        occupied = {
            tuple(int(c) for c in g): int(n)
            for g, n in zip(cells[valid], values[valid], strict=True)
        }
        return occupied, {tuple(int(c) for c in g) for g in cells[~valid]}

    def _read_chunks(
        self, checker: ChunkChecker, occupied: dict[Chunk, int], present: dict[str, set[Chunk]]
    ) -> bool:
        """Check every occupied chunk, or the sample; return whether it was a sample."""
        chunks = list(occupied)
        picks = sample_positions(len(chunks), self.ctx.sample)
        sampled = bool(picks.shape[0] < len(chunks))
        if sampled:
            self.ctx.report.note(
                f"level {self.level}: L3 read {picks.shape[0]} of {len(chunks)} occupied chunks "
                f"(sample={self.ctx.sample}); bounding_box_exact only checked containment"
            )
        chosen = [chunks[i] for i in picks.tolist()]
        report = self.ctx.progress
        for start in range(0, len(chosen), BATCH_CHUNKS):
            self._batch(checker, chosen[start : start + BATCH_CHUNKS], occupied, present)
            if report is not None:
                report(self.level, min(start + BATCH_CHUNKS, len(chosen)), len(chosen))
        return sampled

    def _checker(self, arrays: LevelArrays) -> ChunkChecker:
        f = self.ctx.facts
        assert f.chunk_shape is not None
        assert f.origin is not None
        bins = f.base_bin_shape if self.level == 0 else f.level[self.level].bin_shape
        return ChunkChecker(
            self.ctx,
            self.level,
            arrays,
            np.asarray(f.chunk_shape, dtype=np.float64),
            np.asarray(bins or f.chunk_shape, dtype=np.float64),
            np.asarray(f.origin, dtype=np.int64),
        )

    # -- counts --------------------------------------------------------------------------
    def _counts_range(self, cells: np.ndarray, values: np.ndarray) -> np.ndarray:
        valid = (values >= 0) & (values <= self.n_max)
        for i in np.flatnonzero(~valid).tolist():
            self.ctx.fail(
                "L3.counts_range",
                f"{self.base}/{VERTEX_COUNTS}#g={grid_label(cells[i])}",
                f"count {int(values[i])} is outside [0, N_max = {self.n_max}]",
            )
        return valid

    def _totals(self, values: np.ndarray) -> None:
        facts = self.ctx.facts.level[self.level]
        where = f"{self.base}/zarr.json"
        pairs = (
            ("L3.vertex_count_total", "vertex_count", facts.vertex_count, int(values.sum())),
            ("L3.chunk_count_total", "chunk_count", facts.chunk_count, int((values > 0).sum())),
        )
        for check_id, key, stated, actual in pairs:
            if stated is None:
                continue
            self.ctx.mark(check_id)
            if stated != actual:
                self.ctx.fail(
                    check_id,
                    pointer(where, "attributes", key),
                    f"{key} is {stated}, vertex_counts gives {actual}",
                )

    # -- shard keys ----------------------------------------------------------------------
    def _listing(self, occupied: dict[Chunk, int], invalid: set[Chunk]) -> dict[str, set[Chunk]]:
        """Shard keys of every per-chunk array; L3.shard_present and L3.empty_chunk_clean."""
        ctx = self.ctx
        ctx.mark("L3.shard_present", "L3.empty_chunk_clean")
        present: dict[str, set[Chunk]] = {}
        for spec in self.specs.values():
            found: set[Chunk] = set()
            keys = ctx.list_keys(f"{spec.path}/c/")
            if f"{spec.path}/c/" in ctx.unreadable:
                ctx.report.note(f"{spec.path}: shard keys cannot be listed; presence not checked")
                present[spec.path] = set(occupied)
                continue
            if spec.sharded:
                present[spec.path] = self._shared_shards(spec, keys, occupied, invalid)
                continue
            stray = []
            for key in keys:
                g = parse_shard_key(key, spec.path, self.grid, len(spec.row_shape))
                if g is None or (g not in occupied and g not in invalid):
                    ctx.fail(
                        "L3.empty_chunk_clean",
                        key,
                        "a stored key of an empty chunk" if g is not None else "a stray key",
                    )
                    stray.append(key)
                else:
                    found.add(g)
            stray_place(ctx, spec, stray)
            present[spec.path] = found
        for g in occupied:
            for spec in self.required:
                if g not in present[spec.path]:
                    ctx.fail(
                        "L3.shard_present",
                        spec.key(g),
                        f"chunk {grid_label(g)} holds {occupied[g]} rows but this shard is missing",
                    )
        return present

    def _shared_shards(
        self, spec: ArraySpec, keys: list[str], occupied: dict[Chunk, int], invalid: set[Chunk]
    ) -> set[Chunk]:
        """Chunks (occupied or invalid) whose shard of several chunks is stored (§9.0.1).

        A stored shard none of whose chunks is occupied fails L3.empty_chunk_clean.
        """
        per = spec.index_layout.shard_chunks
        shard_grid = tuple(-(-g // s) for g, s in zip(self.grid, per, strict=True))
        used: dict[Chunk, list[Chunk]] = {}
        for g in [*occupied, *invalid]:
            used.setdefault(spec.shard_of(g), []).append(g)
        found: set[Chunk] = set()
        stray = []
        for key in keys:
            s = parse_shard_key(key, spec.path, shard_grid, len(spec.row_shape))
            if s is None or s not in used:
                self.ctx.fail(
                    "L3.empty_chunk_clean",
                    key,
                    "a stored shard whose chunks are all empty" if s is not None else "a stray key",
                )
                stray.append(key)
            else:
                found.update(used[s])
        stray_place(self.ctx, spec, stray)
        return found

    # -- chunk data ----------------------------------------------------------------------
    def _batch(
        self,
        checker: ChunkChecker,
        chunks: list[Chunk],
        occupied: dict[Chunk, int],
        present: dict[str, set[Chunk]],
    ) -> None:
        roles = _READ_ROLES | (_LINK_ROLES if self.objects is not None else frozenset())
        wanted = [
            (g, spec)
            for g in chunks
            for spec in self.specs.values()
            if g in present[spec.path] and spec.role in roles
        ]
        keys = list(dict.fromkeys(spec.key(g) for g, spec in wanted))
        fetched = dict(zip(keys, self.ctx.fetch([(key, None) for key in keys]), strict=True))
        raws = [fetched[spec.key(g)] for g, spec in wanted]
        shards: dict[Chunk, dict[str, bytes | None]] = {g: {} for g in chunks}
        unchecked = set(keys)
        for (g, spec), raw in zip(wanted, raws, strict=True):
            shards[g][spec.path] = raw
            if spec.sharded and raw is not None and spec.key(g) in unchecked:
                unchecked.remove(spec.key(g))  # each shared shard's empty chunks checked once
                empty_entries_clean(self.ctx, spec, raw, g, occupied)
            required = any(spec is r for r in self.required)
            if raw is None and required and spec.key(g) not in self.ctx.unreadable:
                self.ctx.fail("L3.shard_present", spec.key(g), "the shard is missing")
        for g in chunks:
            checked = checker.check(g, occupied[g], shards[g])
            if self.objects is not None:
                self.objects.add(g, occupied[g], checked, shards[g], checker)

    def _finish(self, checker: ChunkChecker, *, sampled: bool) -> None:
        ctx = self.ctx
        arrays = checker.arrays
        if arrays.fragment_attributes:
            ctx.mark("L3.fragment_attribute_rows")
        for spec in arrays.fragment_attributes:
            if checker.max_fragments > spec.n_rows:
                ctx.fail(
                    "L3.fragment_attribute_rows",
                    f"{spec.path}/zarr.json",
                    f"a chunk has {checker.max_fragments} fragments, F_max is {spec.n_rows}",
                )
        if self.level == 0:
            self._bounding_box(checker, sampled=sampled)
        else:
            self.ctx.facts.coarse_bounds[self.level] = checker.bounds

    def _bounding_box(self, checker: ChunkChecker, *, sampled: bool) -> None:
        ctx = self.ctx
        if not ctx.facts.bbox_valid or not checker.complete:
            return
        ctx.mark("L3.bounding_box_exact")
        bbox, where = ctx.facts.bbox, pointer("zarr.json", "attributes", "bounding_box")
        seen = bool(checker.bounds)
        if bbox is None:
            if seen:
                ctx.fail("L3.bounding_box_exact", where, "bounding_box is null but vertices exist")
            return
        lo, hi = np.asarray(bbox[0]), np.asarray(bbox[1])
        if sampled:
            if seen and (np.any(checker.lo < lo) or np.any(checker.hi > hi)):
                ctx.fail(
                    "L3.bounding_box_exact", where, "sampled vertices lie outside bounding_box"
                )
            return
        if not seen or not (np.array_equal(checker.lo, lo) and np.array_equal(checker.hi, hi)):
            ctx.fail(
                "L3.bounding_box_exact",
                where,
                f"bounding_box is {lo.tolist()}..{hi.tolist()}, the vertices span "
                f"{checker.lo.tolist()}..{checker.hi.tolist()}",
            )
