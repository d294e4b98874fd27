"""Level 5 checks of the coarse levels of object kinds (spec §4.3.3, §11.6).

Levels are read object by object with the library's object reader: level 0 and every coarse
level for the same batch of object ids, so memory holds one batch of every level. A store of
at most :data:`REPRODUCE_LIMIT` level-0 vertices is one batch, and only then is
``L5.object_coarsening_reproduced`` run (it recomputes each level from the whole of level 0 by
:data:`~zarr_vectors.validate.object_rules.REPRODUCERS`); above, it is skipped with a note.
The link checks of ``thin`` and ``cluster`` levels are in
:mod:`~zarr_vectors.validate.coarse_links`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import FormatError, InvalidInputError
from zarr_vectors.format.jsonutil import pointer
from zarr_vectors.format.levels import IMPORTED, RUNS
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import OBJECT_VERTEX_COUNTS
from zarr_vectors.kernels import CoarseGrid, polyline_lengths
from zarr_vectors.query import ObjectReader
from zarr_vectors.read import LevelReader
from zarr_vectors.result import QueryResult
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.names import OBJECT_KINDS
from zarr_vectors.validate.object_compare import compare_globals, reproduce
from zarr_vectors.validate.object_rules import (
    ALL_METHODS,
    KIND_METHODS,
    Recipe,
    coarsening_problem,
    kept_objects,
    offsets_of,
)
from zarr_vectors.validate.object_vertices import Level0Rows, check_objects

__all__ = ["REPRODUCE_LIMIT", "run"]

REPRODUCE_LIMIT = 4_000_000
"""Level-0 vertices up to which level 0 is read whole and each level recomputed from it."""

_MAX_REPORTED = 20


@dataclass(slots=True)
class _Level:
    """One coarse level: its metadata, reader and the per-object counts read so far."""

    number: int
    attrs: dict[str, Any]
    reader: ObjectReader
    grid: CoarseGrid
    sizes: np.ndarray
    result: QueryResult | None = None

    @property
    def coarsening(self) -> dict[str, Any]:
        value = self.attrs.get("coarsening")
        return value if isinstance(value, dict) else {}

    @property
    def imported(self) -> bool:
        """Whether the level was given as it is (method ``"imported"``, spec §4.3.4)."""
        return self.coarsening.get("method") == IMPORTED


@dataclass(slots=True)
class _Base:
    """Level 0's per-object facts the sparsity rule needs, gathered batch by batch."""

    sizes: np.ndarray
    firsts: np.ndarray
    lengths: np.ndarray | None
    result: QueryResult | None = None


def run(ctx: Context) -> None:
    """Run the object-level checks on every level above 0 of an object store."""
    kind = ctx.facts.kind
    levels = [n for n in sorted(ctx.facts.level) if n > 0]
    if kind not in OBJECT_KINDS or not levels or ctx.failed("L2.level_coarsening"):
        return
    own = [n for n in levels if _method_checked(ctx, kind, n)]
    if not own:
        return
    try:
        root = RootMetadata.from_json(ctx.root_attrs())
        base = ObjectReader(LevelReader(ctx.io, root, 0))
        coarse = [_open_level(ctx, root, n, base.n_objects) for n in own]
    except FormatError as exc:
        ctx.report.note(f"L5 object-level checks skipped: {exc}")
        return
    ctx.mark(
        "L5.object_ids_same",
        "L5.object_vertex_counts",
        "L5.object_sparsity_rule",
        "L5.coarse_vertices_of_level0",
    )
    try:
        _check_levels(ctx, base, coarse, root.spatial_dims)
    except FormatError as exc:
        ctx.report.note(f"L5 object-level checks stopped: {exc}")


def _level_path(level: int, *tokens: str | int) -> str:
    return pointer(f"{level}/zarr.json", "attributes", *tokens)


def _method_checked(ctx: Context, kind: str, level: int) -> bool:
    """``L5.object_coarsening_method`` of one level; True when the level's method is the
    kind's own with the parameters §4.3.3 lists (its other checks then run)."""
    attrs = ctx.facts.level[level].attrs
    value = attrs.get("coarsening")
    if not isinstance(value, dict) or value.get("method") not in ALL_METHODS:
        return False  # L2 reported it, or warned of a method this validator does not know
    ctx.mark("L5.object_coarsening_method")
    problem = coarsening_problem(kind, value, attrs.get("sparsity_strategy"))
    if problem is not None:
        ctx.fail("L5.object_coarsening_method", _level_path(level, "coarsening"), problem)
    return problem is None and value["method"] in (KIND_METHODS[kind], IMPORTED)


def _open_level(ctx: Context, root: RootMetadata, level: int, n_objects: int) -> _Level:
    reader = ObjectReader(LevelReader(ctx.io, root, level))
    grid = CoarseGrid(root.chunk_shape, reader.reader.meta.bin_shape, root.chunk_grid_origin)
    attrs = ctx.facts.level[level].attrs
    return _Level(level, attrs, reader, grid, np.zeros(n_objects, np.int64))


def _batches(n_objects: int, vertices: int) -> Iterator[np.ndarray]:
    """Object ids in batches of about :data:`REPRODUCE_LIMIT` level-0 vertices (one empty
    batch for a store without objects)."""
    step = n_objects if vertices <= REPRODUCE_LIMIT else n_objects * REPRODUCE_LIMIT // vertices
    step = max(1, step)
    for start in range(0, max(n_objects, 1), step):
        yield np.arange(start, min(n_objects, start + step), dtype=np.int64)


def _check_levels(ctx: Context, base: ObjectReader, levels: list[_Level], ndim: int) -> None:
    m = base.n_objects
    polylines = KIND_METHODS[base.kind] == RUNS
    facts = _Base(np.zeros(m, np.int64), np.zeros((m, ndim)), np.zeros(m) if polylines else None)
    vertices = ctx.facts.level[0].vertex_count or 0
    for ids in _batches(m, vertices):
        found = base.read(ids)
        _gather(facts, ids, found)
        rows = Level0Rows(found)
        for level in levels:
            coarse = level.reader.read(ids)
            level.sizes[ids] = np.diff(offsets_of(coarse))
            level.result = coarse if ids.shape[0] == m else None
            if level.imported:
                continue  # not level-0 vertices (spec §4.3.4)
            check_objects(ctx, level.number, (rows, coarse), ids, (level.grid, level.coarsening))
        facts.result = found if ids.shape[0] == m else None
    for level in levels:
        compare_globals(ctx, base, level.reader, level.number)
        _vertex_counts(ctx, level, m)
        if level.imported:
            _imported_objects(ctx, facts, level)
            continue
        keep = _sparsity(ctx, facts, level)
        _reproduce(ctx, facts, level, keep)


def _gather(facts: _Base, ids: np.ndarray, found: QueryResult) -> None:
    offsets = offsets_of(found)
    sizes = np.diff(offsets)
    facts.sizes[ids] = sizes
    filled = sizes > 0
    facts.firsts[ids[filled]] = found.positions[offsets[:-1][filled]]
    if facts.lengths is not None:
        facts.lengths[ids] = polyline_lengths(found.positions, offsets)


def _vertex_counts(ctx: Context, level: _Level, m: int) -> None:
    """``L5.object_vertex_counts``: the stored array, ``vertex_count``, ``kept_object_count``
    and ``object_sparsity`` agree with the manifests of the level."""
    where = f"{level.number}/{OBJECT_VERTEX_COUNTS}"
    try:
        (stored,) = level.reader.reader.read_globals([OBJECT_VERTEX_COUNTS])
    except FormatError as exc:
        ctx.fail("L5.object_vertex_counts", where, f"cannot be read: {exc}")
        return
    if stored.dtype != np.int64 or stored.shape != (m,):
        ctx.fail(
            "L5.object_vertex_counts",
            where,
            f"must be int64 of shape ({m},), got {stored.dtype} {stored.shape}",
        )
        return
    for k in np.flatnonzero(stored != level.sizes)[:_MAX_REPORTED].tolist():
        ctx.fail(
            "L5.object_vertex_counts",
            f"{where}#object={k}",
            f"entry {int(stored[k])}, but object {k} has {int(level.sizes[k])} vertices",
        )
    _count_keys(ctx, level, m)


def _count_keys(ctx: Context, level: _Level, m: int) -> None:
    kept = int(np.count_nonzero(level.sizes))
    total = ctx.facts.level[0].attrs.get("object_count")
    share = kept / total if isinstance(total, int) and total > 0 else 1.0
    expected = {
        "vertex_count": int(level.sizes.sum()),
        "kept_object_count": kept,
        "object_sparsity": share,
    }
    for key, want in expected.items():
        value = level.attrs.get(key)
        if value != want or isinstance(value, bool):
            ctx.fail(
                "L5.object_vertex_counts",
                _level_path(level.number, key),
                f"{key} is {value!r}; the level's manifests give {want!r}",
            )


def _sparsity(ctx: Context, facts: _Base, level: _Level) -> np.ndarray:
    """``L5.object_sparsity_rule``: the objects with vertices are those the rule keeps."""
    objects = level.coarsening.get("objects")
    keep = kept_objects(objects, facts.sizes, facts.firsts, facts.lengths, level.grid)
    have = level.sizes > 0
    rule = "every object with a level-0 vertex" if objects is None else f"the rule {objects}"
    for k in np.flatnonzero(keep != have)[:_MAX_REPORTED].tolist():
        state = "has vertices" if have[k] else "has no vertex"
        ctx.fail(
            "L5.object_sparsity_rule",
            f"{level.number}/{OBJECT_VERTEX_COUNTS}#object={k}",
            f"object {k} {state} at level {level.number}, but {rule} "
            f"{'keeps' if keep[k] else 'drops'} it",
        )
    return keep


def _imported_objects(ctx: Context, facts: _Base, level: _Level) -> None:
    """``L5.object_sparsity_rule`` of an ``"imported"`` level (spec §4.3.4): only objects
    with level-0 vertices have vertices (the level's objects are a subset of level 0's)."""
    for k in np.flatnonzero((level.sizes > 0) & (facts.sizes == 0))[:_MAX_REPORTED].tolist():
        ctx.fail(
            "L5.object_sparsity_rule",
            f"{level.number}/{OBJECT_VERTEX_COUNTS}#object={k}",
            f"object {k} has vertices at level {level.number} but none at level 0",
        )


def _reproduce(ctx: Context, facts: _Base, level: _Level, keep: np.ndarray) -> None:
    """``L5.object_coarsening_reproduced`` when level 0 was read in one batch."""
    if facts.result is None or level.result is None:
        ctx.report.note(
            f"L5.object_coarsening_reproduced skipped at level {level.number}: level 0 holds "
            f"more than {REPRODUCE_LIMIT} vertices"
        )
        return
    method = str(level.coarsening.get("method"))
    within = level.coarsening.get("within")
    directed = ctx.root_attrs().get("is_directed") is True
    recipe = Recipe(level.grid, keep, within if isinstance(within, str) else None, directed)
    try:
        problem = reproduce(method, facts.result, level.result, recipe)
    except InvalidInputError as exc:
        ctx.report.note(
            f"L5.object_coarsening_reproduced skipped at level {level.number}: level 0 cannot "
            f"be coarsened ({exc})"
        )
        return
    if problem is None:
        ctx.report.note(
            f"L5.object_coarsening_reproduced skipped at level {level.number}: this validator "
            f"cannot recompute method {method!r}"
        )
        return
    ctx.mark("L5.object_coarsening_reproduced")
    if problem:
        ctx.fail("L5.object_coarsening_reproduced", f"{level.number}/", problem)
