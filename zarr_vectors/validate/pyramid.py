"""Level 5 checks: relations between resolution levels (spec §11.6).

They run only when the store has more than one level. The relations of the counts and
bounds read no vertex again: L3 records the per-chunk coordinate bounds of every level it
reads. The checks of the point methods' promises (:mod:`zarr_vectors.validate.point_levels`)
read the levels chunk by chunk; those of the skeleton, graph and mesh links
(:mod:`zarr_vectors.validate.coarse_links`) a batch of objects at a time.
"""

from __future__ import annotations

from zarr_vectors.format.jsonutil import as_int_list, is_int, is_number, pointer
from zarr_vectors.format.levels import IMPORTED
from zarr_vectors.validate import coarse_links, object_levels, point_levels
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.names import ATTRIBUTES, OBJECT_KINDS, POINT_CLOUD

__all__ = ["run"]


def _datasets_path(*tokens: str | int) -> str:
    return pointer("zarr.json", "attributes", "multiscales", 0, "datasets", *tokens)


def run(ctx: Context) -> None:
    """Run the L5 checks when the store lists more than one level."""
    levels = sorted(ctx.facts.datasets)
    if len(levels) < 2:
        return
    _contiguous(ctx, levels)
    _bin_ratio(ctx, levels)
    _non_increasing(ctx, levels, "vertex_count", "L5.vertex_count_non_increasing")
    if ctx.facts.kind in OBJECT_KINDS:
        _non_increasing(ctx, levels, "object_count", "L5.object_count_non_increasing")
        _sparsity(ctx, levels)
    _attribute_names(ctx, levels)
    _coarse_in_bbox(ctx, levels)
    if ctx.facts.kind == POINT_CLOUD:
        point_levels.run(ctx)
    else:
        object_levels.run(ctx)
        coarse_links.run(ctx)


def _contiguous(ctx: Context, levels: list[int]) -> None:
    ctx.mark("L5.levels_contiguous")
    if levels != list(range(len(levels))):
        ctx.fail(
            "L5.levels_contiguous",
            _datasets_path(),
            f"levels {levels} are not 0, 1, ..., {len(levels) - 1}",
        )


def _bin_ratio(ctx: Context, levels: list[int]) -> None:
    ndim = ctx.facts.ndim
    ctx.mark("L5.bin_ratio_monotone")
    previous: list[int] | None = None
    for level in levels:
        index, entry = ctx.facts.datasets[level]
        ratio = as_int_list(entry.get("bin_ratio"), ndim)
        if ratio is None:
            continue
        if previous is not None and any(r < p for r, p in zip(ratio, previous, strict=True)):
            ctx.fail(
                "L5.bin_ratio_monotone",
                _datasets_path(index, "bin_ratio"),
                f"bin_ratio {ratio} of level {level} is smaller than {previous} on some axis",
            )
        previous = ratio


def _non_increasing(ctx: Context, levels: list[int], key: str, check_id: str) -> None:
    ctx.mark(check_id)
    previous: int | None = None
    for level in levels:
        facts = ctx.facts.level.get(level)
        value = facts.attrs.get(key) if facts is not None else None
        if not is_int(value):
            continue
        if previous is not None and value > previous:
            ctx.fail(
                check_id,
                pointer(f"{level}/zarr.json", "attributes", key),
                f"{key} {value} of level {level} exceeds {previous} of a finer level",
            )
        previous = value


def _sparsity(ctx: Context, levels: list[int]) -> None:
    """``L5.object_sparsity_consistent``: a level's kept objects (``kept_object_count``, spec
    §4.3.3; ``object_count`` for a level without it) are about ``object_sparsity`` of level
    0's objects."""
    ctx.mark("L5.object_sparsity_consistent")
    base = ctx.facts.level.get(0)
    total = base.attrs.get("object_count") if base is not None else None
    if not is_int(total):
        return
    for level in levels[1:]:
        facts = ctx.facts.level.get(level)
        if facts is None:
            continue
        key = "kept_object_count" if "kept_object_count" in facts.attrs else "object_count"
        count, sparsity = facts.attrs.get(key), facts.attrs.get("object_sparsity")
        if is_int(count) and is_number(sparsity) and abs(count - total * sparsity) > 1:
            ctx.fail(
                "L5.object_sparsity_consistent",
                pointer(f"{level}/zarr.json", "attributes", key),
                f"{key} {count} is not object_count[0] x object_sparsity = {total * sparsity:g}",
            )


def _imported(ctx: Context, level: int) -> bool:
    """Whether ``level``'s coarsening method is ``"imported"`` (spec §4.3.4)."""
    facts = ctx.facts.level.get(level)
    coarsening = facts.attrs.get("coarsening") if facts is not None else None
    return isinstance(coarsening, dict) and coarsening.get("method") == IMPORTED


def _attribute_names(ctx: Context, levels: list[int]) -> None:
    ctx.mark("L5.attribute_names_match")
    finest = {n for n in ctx.children(f"0/{ATTRIBUTES}") if n != "zarr.json"}
    for level in levels[1:]:
        if _imported(ctx, level):
            continue  # imported levels carry no vertex attribute (spec §4.3.4)
        names = {n for n in ctx.children(f"{level}/{ATTRIBUTES}") if n != "zarr.json"}
        missing = sorted(finest - names)
        if missing:
            ctx.fail(
                "L5.attribute_names_match",
                f"{level}/{ATTRIBUTES}",
                f"level {level} lacks the level-0 attributes {', '.join(missing)}",
            )


def _coarse_in_bbox(ctx: Context, levels: list[int]) -> None:
    bbox = ctx.facts.bbox
    if bbox is None:
        return
    ctx.mark("L5.coarse_vertices_in_bbox")
    lo, hi = bbox
    for level in levels[1:]:
        for key, low, high in ctx.facts.coarse_bounds.get(level, []):
            outside = [
                d
                for d in range(len(lo))
                if not (lo[d] <= float(low[d]) and float(high[d]) <= hi[d])
            ]
            if outside:
                ctx.fail(
                    "L5.coarse_vertices_in_bbox",
                    key,
                    f"vertices of level {level} leave the bounding box on axis {outside[0]}",
                )
