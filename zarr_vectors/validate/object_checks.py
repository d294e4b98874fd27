"""Level 3 checks of object kinds over a whole level (spec §11.4, §7, §9.5, §9.8-§9.10).

Run after every chunk of the level was read into an
:class:`~zarr_vectors.validate.object_data.ObjectLevel`: the object index and its manifests,
fragment owners and order, fragment and object attributes, and groupings. The owners found
here are what :mod:`~zarr_vectors.validate.link_checks` uses to check the links.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zarr_vectors.errors import ManifestError
from zarr_vectors.format.levels import IMPORTED
from zarr_vectors.format.manifest import (
    ManifestBlock,
    decode_manifest,
    decode_object_index_bulk,
    encode_object_index_bulk,
)
from zarr_vectors.format.names import OBJECT_VERTEX_COUNTS
from zarr_vectors.store.arrays import (
    ALWAYS_STORED,
    check_stored_chunks,
    chunk_table_problem,
    read_whole,
)
from zarr_vectors.validate.context import STORE_ERRORS, Context
from zarr_vectors.validate.names import (
    CROSS_CHUNK_LINK_ATTRIBUTES,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    OBJECT_ATTRIBUTES,
    OBJECT_INDEX,
)
from zarr_vectors.validate.object_data import ChunkObjects, LevelIndex, ObjectLevel
from zarr_vectors.validate.shard_check import placed_store

__all__ = ["Refs", "object_path", "read_global", "report_objects", "run_object_checks"]

Chunk = tuple[int, ...]
_MAX_REPORTED = 20
"""Objects or rows named in one aggregated message."""


@dataclass(frozen=True, slots=True)
class Refs:
    """Decoded manifests: one row per fragment reference, in manifest order."""

    obj: np.ndarray  # (t,) dense object id
    chunk: np.ndarray  # (t, D) grid index
    frag: np.ndarray  # (t,)
    n_objects: int


def object_path(base: str, k: int) -> str:
    """Finding path of object ``k`` (spec §11.1)."""
    return f"{base}/{OBJECT_INDEX}/data#object={k}"


def report_objects(
    ctx: Context, base: str, check_id: str, objects: np.ndarray, message: str
) -> None:
    """One finding per distinct object of ``objects`` (the first few)."""
    for k in np.unique(objects)[:_MAX_REPORTED].tolist():
        ctx.fail(check_id, object_path(base, int(k)), message)


def read_global(ctx: Context, path: str, check_id: str) -> np.ndarray | None:
    """A whole global array, or None after a finding of ``check_id`` when unreadable."""
    level, name = path.split("/", 1)
    try:
        # hostile shapes are refused before allocating: the offsets' stored chunks bound
        # object_count, which L2 ties to the rows of every per-object array
        for always in {f"{OBJECT_INDEX}/offsets", name} & set(ALWAYS_STORED):
            where = f"{level}/{always}"
            check_stored_chunks(ctx.io, where, ctx.node(where).doc or {})
        data = read_whole(ctx.io.store, path)
    except STORE_ERRORS as exc:  # CorruptChunkError and MetadataError are ValueErrors
        ctx.fail(check_id, path, f"the array cannot be read ({exc})")
        return None
    if placed_store(ctx):
        _check_every_chunk_stored(ctx, path)
    return data


def _check_every_chunk_stored(ctx: Context, path: str) -> None:
    """L3.global_chunks: every chunk of a global array of format 1.2 is stored at its own
    key, as its chunk table says (§9.8.1)."""
    ctx.mark("L3.global_chunks")
    problem = chunk_table_problem(ctx.io, path, ctx.node(path).doc or {})
    if problem is not None:
        ctx.fail("L3.global_chunks", path, problem)


def run_object_checks(
    ctx: Context, data: ObjectLevel, index: LevelIndex, *, sampled: bool
) -> Refs | None:
    """The manifest, owner, attribute and grouping checks of one level.

    Fills ``index.owners`` for the chunks read and returns the decoded references (None
    when the object index is unusable), which the link checks use.
    """
    return _Checks(ctx, data, index, sampled).run()


class _Checks:
    def __init__(self, ctx: Context, data: ObjectLevel, index: LevelIndex, sampled: bool) -> None:
        self.ctx, self.data, self.index, self.sampled = ctx, data, index, sampled
        self.base = str(data.level)

    def run(self) -> Refs | None:
        refs = self._manifests()
        if refs is not None:
            self._owners(refs)
            if self.data.level == 0:
                self._fragment_order(refs)
        self._object_attributes()
        self._groupings(refs.n_objects if refs is not None else None)
        for family in (GROUPINGS_ATTRIBUTES, CROSS_CHUNK_LINK_ATTRIBUTES):
            self._decodes(family)
        return refs

    # -- helpers ---------------------------------------------------------------------------
    def _global(self, name: str, check_id: str) -> np.ndarray | None:
        return read_global(self.ctx, f"{self.base}/{name}", check_id)

    def _exists(self, name: str) -> bool:
        return self.ctx.node(f"{self.base}/{name}").is_array

    def _obj_path(self, k: int) -> str:
        return object_path(self.base, k)

    def _report_objects(self, check_id: str, objects: np.ndarray, message: str) -> None:
        report_objects(self.ctx, self.base, check_id, objects, message)

    def _slices(self, refs: Refs) -> dict[Chunk, np.ndarray]:
        """Reference indices of each chunk read, in manifest order."""
        flat = self.index.flat(refs.chunk)
        order = np.argsort(flat, kind="stable")
        uniq, first = np.unique(flat[order], return_index=True)
        bounds = np.append(first, order.shape[0])
        out = {}
        for u, a, b in zip(uniq.tolist(), bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            g = tuple(int(c) for c in np.unravel_index(u, self.index.grid))
            if g in self.data.chunks:
                out[g] = order[a:b]
        return out

    # -- object index and manifests ----------------------------------------------------------
    def _manifests(self) -> Refs | None:
        ctx = self.ctx
        if not self._exists(f"{OBJECT_INDEX}/offsets") or not self._exists(f"{OBJECT_INDEX}/data"):
            return None
        ctx.mark("L3.object_index_offsets", "L3.manifest_decodes", "L3.object_empty")
        offsets = self._global(f"{OBJECT_INDEX}/offsets", "L3.object_index_offsets")
        data = self._global(f"{OBJECT_INDEX}/data", "L3.object_index_offsets")
        if offsets is None or data is None:
            return None
        offsets, data = offsets.astype(np.int64).reshape(-1), data.astype(np.uint8).reshape(-1)
        if not self._offsets_ok(offsets, data.shape[0]):
            return None
        n = offsets.shape[0]
        ndim = len(self.index.grid)
        try:
            obj, chunk, frag = decode_object_index_bulk(data, offsets, np.arange(n), ndim)
            refs, failed = Refs(obj, chunk, frag, n), np.zeros(0, np.int64)
        except ManifestError:
            refs, failed = self._decode_each(data, offsets, ndim)
        empty = np.setdiff1d(np.setdiff1d(np.arange(n), refs.obj), failed)
        facts = ctx.facts.level.get(self.data.level)
        if facts is not None and not failed.size:
            facts.empty_objects = empty
        for k in self._unexpected_empty(empty)[:_MAX_REPORTED].tolist():
            ctx.fail("L3.object_empty", self._obj_path(k), "the object's manifest names no vertex")
        refs = self._in_context(refs)
        if self.data.level == 0 and not failed.size:
            self._canonical(refs, data, offsets)
        return refs

    def _unexpected_empty(self, empty: np.ndarray) -> np.ndarray:
        """The objects of ``empty`` L3.object_empty reports: at a level N >= 1 (spec §4.3.3)
        not those empty at level 0 (never kept) nor, at a level that records an ``objects``
        rule, those whose ``object_vertex_counts`` entry is 0 (dropped by the rule, which
        L5.object_sparsity_rule checks against level 0)."""
        if self.data.level == 0 or not empty.size:
            return empty
        base = self.ctx.facts.level.get(0)
        if base is not None and base.empty_objects is not None:
            empty = np.setdiff1d(empty, base.empty_objects)
        facts = self.ctx.facts.level.get(self.data.level)
        coarsening = facts.attrs.get("coarsening") if facts is not None else None
        if not empty.size or not isinstance(coarsening, dict):
            return empty
        if not isinstance(coarsening.get("objects"), dict) and coarsening.get("method") != IMPORTED:
            return empty
        counts = self._vertex_counts()
        if counts is None:
            return empty
        inside = empty[empty < counts.shape[0]]
        return np.setdiff1d(empty, inside[counts[inside] == 0])

    def _vertex_counts(self) -> np.ndarray | None:
        """The level's ``object_vertex_counts`` (None: absent or unreadable, which L5 reports)."""
        if not self._exists(OBJECT_VERTEX_COUNTS):
            return None
        try:
            values = read_whole(self.ctx.io.store, f"{self.base}/{OBJECT_VERTEX_COUNTS}")
        except STORE_ERRORS:
            return None
        return np.asarray(values).reshape(-1)

    def _decode_each(
        self, data: np.ndarray, offsets: np.ndarray, ndim: int
    ) -> tuple[Refs, np.ndarray]:
        """Decode manifest by manifest, reporting each that fails (L3.manifest_decodes).

        Returns the references of the manifests that decode and the objects that do not.
        """
        ends = np.append(offsets[1:], data.shape[0])
        parts: list[tuple[int, list[ManifestBlock]]] = []
        failed = []
        raw = data.tobytes()
        for k, (a, b) in enumerate(zip(offsets.tolist(), ends.tolist(), strict=True)):
            try:
                parts.append((k, decode_manifest(raw[a:b], ndim)))
            except ManifestError as exc:
                self.ctx.fail("L3.manifest_decodes", self._obj_path(k), str(exc))
                failed.append(k)
        return _flatten(parts, offsets.shape[0], ndim), np.asarray(failed, dtype=np.int64)

    def _offsets_ok(self, offsets: np.ndarray, total: int) -> bool:
        path = f"{self.base}/{OBJECT_INDEX}/offsets"
        n = offsets.shape[0]
        if n == 0:
            if total:
                self.ctx.fail("L3.object_index_offsets", path, f"no object but {total} data bytes")
            return total == 0
        ends = np.append(offsets[1:], total)
        problems = []
        if offsets[0] != 0:
            problems.append(f"offsets[0] is {int(offsets[0])}, expected 0")
        short = np.flatnonzero((ends - offsets < 4) | (offsets > total))
        if short.size:
            k = int(short[0])
            problems.append(
                f"manifest {k} spans bytes {int(offsets[k])}..{int(ends[k])} of {total}; each "
                "needs at least 4 bytes inside data"
            )
        for problem in problems:
            self.ctx.fail("L3.object_index_offsets", path, problem)
        return not problems

    def _in_context(self, refs: Refs) -> Refs:
        """L3.manifest_chunks and L3.manifest_fragments; drop the references they reject."""
        ctx = self.ctx
        ctx.mark("L3.manifest_chunks", "L3.manifest_fragments")
        inside = np.all((refs.chunk >= 0) & (refs.chunk < np.asarray(self.index.grid)), axis=1)
        flat = self.index.flat(np.where(inside[:, None], refs.chunk, 0))
        ok = inside & (self.index.rows_of_flat(flat) > 0)
        for i in np.flatnonzero(~ok)[:_MAX_REPORTED].tolist():
            ctx.fail(
                "L3.manifest_chunks",
                self._obj_path(int(refs.obj[i])),
                f"a block names chunk {tuple(refs.chunk[i].tolist())}, which is outside the "
                "grid or empty",
            )
        refs = Refs(refs.obj[ok], refs.chunk[ok], refs.frag[ok], refs.n_objects)
        keep = np.ones(refs.obj.shape[0], dtype=bool)
        for g, sel in self._slices(refs).items():
            n_frag = self.data.chunks[g].starts.shape[0]
            bad = sel[refs.frag[sel] >= n_frag]
            keep[bad] = False
            for i in bad[:_MAX_REPORTED].tolist():
                ctx.fail(
                    "L3.manifest_fragments",
                    self._obj_path(int(refs.obj[i])),
                    f"fragment {int(refs.frag[i])} of chunk {g}, which has {n_frag} fragments",
                )
        return Refs(refs.obj[keep], refs.chunk[keep], refs.frag[keep], refs.n_objects)

    def _canonical(self, refs: Refs, data: np.ndarray, offsets: np.ndarray) -> None:
        """L3.manifest_blocks_canonical: the bytes equal the §7.2 encoding of the same list."""
        self.ctx.mark("L3.manifest_blocks_canonical")
        order = np.argsort(refs.obj, kind="stable")
        try:
            want, want_offsets = encode_object_index_bulk(
                refs.obj[order], refs.chunk[order], refs.frag[order], refs.n_objects
            )
        except (ValueError, OverflowError):
            return
        if np.array_equal(want, data) and np.array_equal(want_offsets, offsets):
            return
        ends = np.append(offsets[1:], data.shape[0])
        want_ends = np.append(want_offsets[1:], want.shape[0])
        for k in range(refs.n_objects):
            got = data[offsets[k] : ends[k]]
            if not np.array_equal(got, want[want_offsets[k] : want_ends[k]]):
                self.ctx.fail(
                    "L3.manifest_blocks_canonical",
                    self._obj_path(k),
                    "the blocks or modes differ from the canonical encoding of §7.2",
                )

    # -- fragment owners ---------------------------------------------------------------------
    def _owners(self, refs: Refs) -> None:
        """Owner of every fragment; L3.manifest_partition and L3.fragment_object_id."""
        ctx = self.ctx
        facts = ctx.facts.level.get(self.data.level)
        partition = facts is None or facts.attrs.get("shared_fragments") is not True
        if partition:
            ctx.mark("L3.manifest_partition")
        slices = self._slices(refs)
        for g, data in self.data.chunks.items():
            sel = slices.get(g, np.zeros(0, np.int64))
            frags, objs = refs.frag[sel], refs.obj[sel]
            named = np.bincount(frags, minlength=data.starts.shape[0])
            owner = np.full(data.starts.shape[0], -1, dtype=np.int64)
            owner[frags[::-1]] = objs[::-1]  # the first reference wins
            if partition and np.any(named != 1):
                f = int(np.flatnonzero(named != 1)[0])
                ctx.fail(
                    "L3.manifest_partition",
                    self._fragments_key(g),
                    f"fragment {f} is named by {int(named[f])} manifests; every fragment "
                    "must be named exactly once",
                )
            self.index.owners[g] = np.repeat(owner, data.counts)
            self._fragment_object_id(g, data, owner)

    def _fragments_key(self, g: Chunk) -> str:
        return f"{self.base}/vertex_fragments/c/" + "/".join(map(str, (*g, 0)))

    def _fragment_object_id(self, g: Chunk, data: ChunkObjects, owner: np.ndarray) -> None:
        if data.owner_column is None or self.data.level != 0:
            return
        self.ctx.mark("L3.fragment_object_id")
        stored = np.asarray(data.owner_column).reshape(-1)
        if stored.shape[0] != owner.shape[0] or np.any(stored != owner):
            bad = int(np.argmax(stored != owner)) if stored.shape == owner.shape else 0
            self.ctx.fail(
                "L3.fragment_object_id",
                f"{self.base}/fragment_attributes/object_id/c/" + "/".join(map(str, (*g, 0))),
                f"row {bad} is {stored[bad] if stored.size else None}, the owner of fragment "
                f"{bad} is object {int(owner[bad]) if owner.size else None}",
            )

    def _fragment_order(self, refs: Refs) -> None:
        """L3.frag_object_order and L3.frag_maximal_runs (level 0)."""
        ctx = self.ctx
        ctx.mark("L3.frag_object_order", "L3.frag_maximal_runs")
        for g, data in self.data.chunks.items():
            owner = self.index.owners.get(g)
            if owner is None or not owner.size:
                continue
            frag_owner = owner[data.starts[data.counts > 0]]
            if np.any(np.diff(frag_owner) < 0):
                ctx.fail(
                    "L3.frag_object_order",
                    self._fragments_key(g),
                    "fragment owners decrease with the fragment number; rows are sorted by "
                    "(object, run)",
                )
        flat = self.index.flat(refs.chunk)
        order = np.lexsort((np.arange(refs.obj.shape[0]), flat, refs.obj))
        same = (np.diff(refs.obj[order]) == 0) & (np.diff(flat[order]) == 0)
        backwards = same & (np.diff(refs.frag[order]) <= 0)
        self._report_objects(
            "L3.frag_object_order",
            refs.obj[order][1:][backwards],
            "the object's fragments in a chunk are not listed in ascending fragment order",
        )
        self._maximal_runs(refs, flat)

    def _maximal_runs(self, refs: Refs, flat: np.ndarray) -> None:
        bins = np.full(refs.obj.shape[0], -2, dtype=np.int64)
        for g, sel in self._slices(refs).items():
            chunk_bins = self.data.chunks[g].bins
            if chunk_bins is not None:
                bins[sel] = chunk_bins[refs.frag[sel]]
        nxt = (np.diff(refs.obj) == 0) & (np.diff(flat) == 0) & (bins[1:] == bins[:-1])
        nxt &= bins[1:] >= 0
        self._report_objects(
            "L3.frag_maximal_runs",
            refs.obj[1:][nxt],
            "two manifest-consecutive fragments lie in the same chunk and bin; they are one run",
        )

    # -- object attributes and groupings -----------------------------------------------------
    def _object_attributes(self) -> None:
        for name in self.ctx.children(f"{self.base}/{OBJECT_ATTRIBUTES}"):
            if name == "zarr.json":
                continue
            path = f"{OBJECT_ATTRIBUTES}/{name}"
            if not self._exists(path):
                continue
            self.ctx.mark("L3.object_attribute_finite")
            # An unreadable array (a checksum failure) is an error: every reader raises on it.
            values = self._global(path, "L3.shard_index")
            if values is None or values.dtype.kind != "f":
                continue
            bad = np.flatnonzero(~np.isfinite(values.reshape(values.shape[0], -1)).all(axis=1))
            if bad.size:
                self.ctx.fail(
                    "L3.object_attribute_finite",
                    f"{self.base}/{path}",
                    f"{bad.size} objects have non-finite values (first: object {int(bad[0])})",
                )

    def _decodes(self, family: str) -> None:
        """Every array of ``family`` must decode: an unreadable one (a checksum failure) is
        the error L3.shard_index, as every reader raises on it."""
        for name in self.ctx.children(f"{self.base}/{family}"):
            if name != "zarr.json" and self._exists(f"{family}/{name}"):
                self.ctx.mark("L3.shard_index")
                self._global(f"{family}/{name}", "L3.shard_index")

    def _groupings(self, n_objects: int | None) -> None:
        if not self._exists(GROUPINGS) or n_objects is None:
            return
        self.ctx.mark("L3.groupings_members")
        table = self._global(GROUPINGS, "L3.groupings_members")
        if table is None:
            return
        table = table.astype(np.int64).reshape(table.shape[0], -1)
        pad = table < 0
        member = ~pad
        after_pad = np.cumsum(pad, axis=1) > 0
        bad_pad = np.any(member & after_pad, axis=1) | np.any(pad & (table != -1), axis=1)
        bad_range = np.any(member & (table >= n_objects), axis=1)
        steps = (np.diff(table, axis=1) <= 0) & member[:, 1:]
        bad_order = np.any(steps, axis=1)
        if table.shape[0] and table.shape[1] > 1 and not member[:, -1].any():
            self.ctx.fail(
                "L3.groupings_members",
                f"{self.base}/{GROUPINGS}",
                f"no row has M = {table.shape[1]} members (its width must be the largest group "
                "size): a chunk of the array may be missing",
            )
        for j in np.flatnonzero(bad_pad | bad_range | bad_order)[:_MAX_REPORTED].tolist():
            self.ctx.fail(
                "L3.groupings_members",
                f"{self.base}/{GROUPINGS}#row={j}",
                f"row {table[j][:8].tolist()}...: members must be object ids in "
                f"[0, {n_objects}), strictly ascending, followed only by -1",
            )


def _flatten(parts: list[tuple[int, list[ManifestBlock]]], n_objects: int, ndim: int) -> Refs:
    obj: list[int] = []
    chunks: list[tuple[int, ...]] = []
    frags: list[np.ndarray] = []
    for k, blocks in parts:
        for block in blocks:
            m = block.fragments.shape[0]
            obj.extend([k] * m)
            chunks.extend([block.chunk] * m)
            frags.append(block.fragments)
    return Refs(
        np.asarray(obj, dtype=np.int64),
        np.asarray(chunks, dtype=np.int64).reshape(-1, ndim),
        np.concatenate(frags).astype(np.int64) if frags else np.zeros(0, np.int64),
        n_objects,
    )
