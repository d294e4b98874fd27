"""Level 2 checks on the ``multiscales`` block and the level metadata (spec §3.2, §4, §11.3)."""

from __future__ import annotations

import math
from typing import Any

from zarr_vectors.format.jsonutil import (
    approx,
    as_float_list,
    as_int_list,
    is_int,
    is_number,
    json_equal,
    pointer,
)
from zarr_vectors.validate.context import Context, LevelFacts
from zarr_vectors.validate.names import OBJECT_KINDS, POINT_CLOUD

__all__ = ["counts_plausible", "run"]

_SPARSITY_STRATEGIES = ("spatial_coverage", "length", "attribute", "random")


def _ms_path(*tokens: str | int) -> str:
    return pointer("zarr.json", "attributes", "multiscales", *tokens)


def _level_path(level: int, *tokens: str | int) -> str:
    return pointer(f"{level}/zarr.json", "attributes", *tokens)


def run(ctx: Context, attrs: dict[str, Any]) -> None:
    """Check ``multiscales`` (axes, datasets) and the metadata of every level."""
    entry = _multiscales(ctx, attrs.get("multiscales"))
    if entry is not None:
        _axes(ctx, entry.get("axes"), attrs.get("axis_units", "unknown"))
        _datasets(ctx, entry.get("datasets"))
    for level in ctx.facts.levels:
        _level(ctx, level)


def _multiscales(ctx: Context, value: Any) -> dict[str, Any] | None:
    ctx.mark("L2.multiscales_valid")
    if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], dict):
        ctx.fail(
            "L2.multiscales_valid",
            _ms_path(),
            "multiscales must be a list holding exactly one object",
        )
        return (
            value[0] if isinstance(value, list) and value and isinstance(value[0], dict) else None
        )
    entry: dict[str, Any] = value[0]
    problems = []
    if entry.get("version") != "0.5":
        problems.append(f"version must be '0.5', got {entry.get('version')!r}")
    if entry.get("type") != "zarr_vectors_multiscale":
        problems.append(f"type must be 'zarr_vectors_multiscale', got {entry.get('type')!r}")
    for key in ("axes", "datasets"):
        if not isinstance(entry.get(key), list):
            problems.append(f"{key} must be a list")
    if "name" in entry and not isinstance(entry["name"], str):
        problems.append("name must be a string")
    for problem in problems:
        ctx.fail("L2.multiscales_valid", _ms_path(0), problem)
    return entry


def _axis_unit(axis_units: Any, d: int, ndim: int) -> str | None:
    """The unit ``axis_units`` gives axis ``d``; None when ``axis_units`` is malformed."""
    if isinstance(axis_units, str):
        return axis_units
    if (
        isinstance(axis_units, list)
        and len(axis_units) == ndim
        and all(isinstance(u, str) for u in axis_units)
        and d < ndim
    ):
        unit: str = axis_units[d]
        return unit
    return None


def _axes(ctx: Context, axes: Any, axis_units: Any) -> None:
    ndim = ctx.facts.ndim
    if not isinstance(axes, list) or ndim is None:
        return
    ctx.mark("L2.axes_valid", "L2.axes_type", "L2.axes_units_consistent")
    if len(axes) != ndim:
        ctx.fail("L2.axes_valid", _ms_path(0, "axes"), f"{len(axes)} axes, expected {ndim}")
    seen: set[str] = set()
    for d, axis in enumerate(axes):
        where = _ms_path(0, "axes", d)
        if not isinstance(axis, dict):
            ctx.fail("L2.axes_valid", where, "an axis must be an object")
            continue
        name, kind = axis.get("name"), axis.get("type")
        if not isinstance(name, str) or not name or name in seen:
            ctx.fail("L2.axes_valid", where, f"axis name {name!r} is not a unique non-empty string")
        else:
            seen.add(name)
        if not isinstance(kind, str):
            ctx.fail("L2.axes_valid", where, f"axis type must be a string, got {kind!r}")
        elif kind != "space":
            ctx.fail("L2.axes_type", pointer(where, "type"), f"axis type is {kind!r}, not 'space'")
        if "unit" in axis and not isinstance(axis["unit"], str):
            ctx.fail("L2.axes_valid", where, "axis unit must be a string")
        _axis_unit_consistent(ctx, axis, _axis_unit(axis_units, d, ndim), where)


def _axis_unit_consistent(ctx: Context, axis: dict[str, Any], unit: str | None, where: str) -> None:
    if unit is None:
        return
    if unit == "unknown" and "unit" in axis:
        ctx.fail(
            "L2.axes_units_consistent",
            pointer(where, "unit"),
            f"unit {axis['unit']!r} given but axis_units is 'unknown' for this axis",
        )
    elif unit != "unknown" and axis.get("unit") != unit:
        ctx.fail(
            "L2.axes_units_consistent",
            pointer(where, "unit"),
            f"unit is {axis.get('unit')!r}, axis_units gives {unit!r}",
        )


def _datasets(ctx: Context, datasets: Any) -> None:
    if not isinstance(datasets, list):
        return
    ctx.mark("L2.datasets_valid")
    if not datasets:
        ctx.fail("L2.datasets_valid", _ms_path(0, "datasets"), "datasets is empty")
        return
    previous: int | None = None
    for i, entry in enumerate(datasets):
        where = _ms_path(0, "datasets", i)
        if not isinstance(entry, dict):
            ctx.fail("L2.datasets_valid", where, "a datasets entry must be an object")
            continue
        level, path = entry.get("level"), entry.get("path")
        problem = _dataset_problem(i, level, path, previous)
        if problem:
            ctx.fail("L2.datasets_valid", where, problem)
        if is_int(level):
            previous = level if previous is None else max(previous, level)
            if path == str(level) and level not in ctx.facts.datasets:
                ctx.facts.datasets[level] = (i, entry)
        _dataset_entry(ctx, i, entry, level if is_int(level) else None)


def _dataset_problem(i: int, level: Any, path: Any, previous: int | None) -> str:
    if not is_int(level) or level < 0:
        return f"level must be a non-negative integer, got {level!r}"
    if i == 0 and (level != 0 or path != "0"):
        return f"the first entry must be level 0 with path '0', got level {level} path {path!r}"
    if previous is not None and level <= previous:
        return f"levels must be strictly ascending, got {level} after {previous}"
    if path != str(level):
        return f"path must be the decimal level {str(level)!r}, got {path!r}"
    return ""


def _dataset_entry(ctx: Context, i: int, entry: dict[str, Any], level: int | None) -> None:
    """bin_ratio, bin_shape, object_sparsity and coordinateTransformations of one entry."""
    ndim = ctx.facts.ndim
    if ndim is None:
        return
    where = _ms_path(0, "datasets", i)
    ctx.mark("L2.dataset_bin_ratio", "L2.dataset_sparsity")
    ratio = as_int_list(entry.get("bin_ratio"), ndim)
    if ratio is None or any(r < 1 for r in ratio):
        ctx.fail(
            "L2.dataset_bin_ratio",
            pointer(where, "bin_ratio"),
            f"bin_ratio must be {ndim} integers >= 1, got {entry.get('bin_ratio')!r}",
        )
        ratio = None
    elif level == 0 and any(r != 1 for r in ratio):
        ctx.fail(
            "L2.dataset_bin_ratio", pointer(where, "bin_ratio"), "bin_ratio must be 1 at level 0"
        )
    shape = _dataset_bin_shape(ctx, entry, ratio, where)
    sparsity = entry.get("object_sparsity")
    if not (is_number(sparsity) and 0 < sparsity <= 1):
        ctx.fail(
            "L2.dataset_sparsity",
            pointer(where, "object_sparsity"),
            f"object_sparsity must be a number in (0, 1], got {sparsity!r}",
        )
    elif (level == 0 or ctx.facts.kind == POINT_CLOUD) and sparsity != 1:
        ctx.fail(
            "L2.dataset_sparsity",
            pointer(where, "object_sparsity"),
            f"object_sparsity must be 1.0 at level 0 and for point clouds, got {sparsity!r}",
        )
    if ratio is not None and shape is not None:
        _transforms(ctx, entry.get("coordinateTransformations"), ratio, shape, where)


def _dataset_bin_shape(
    ctx: Context, entry: dict[str, Any], ratio: list[int] | None, where: str
) -> list[float] | None:
    base, ndim = ctx.facts.base_bin_shape, ctx.facts.ndim
    value = entry.get("bin_shape")
    shape = as_float_list(value, ndim)
    if base is None or ratio is None:
        return shape
    ctx.mark("L2.dataset_bin_shape")
    expected = [b * r for b, r in zip(base, ratio, strict=True)]
    if shape is None or not all(approx(s, e) for s, e in zip(shape, expected, strict=True)):
        ctx.fail(
            "L2.dataset_bin_shape",
            pointer(where, "bin_shape"),
            f"bin_shape must be base_bin_shape * bin_ratio = {expected}, got {value!r}",
        )
        return None
    return shape


def _transforms(ctx: Context, value: Any, ratio: list[int], shape: list[float], where: str) -> None:
    ctx.mark("L2.coordinate_transformations")
    path = pointer(where, "coordinateTransformations")
    expected = (("scale", [float(r) for r in ratio]), ("translation", [s / 2 for s in shape]))
    if not isinstance(value, list) or len(value) != len(expected):
        ctx.fail("L2.coordinate_transformations", path, "must be exactly [scale, translation]")
        return
    for item, (kind, numbers) in zip(value, expected, strict=True):
        got = item.get(kind) if isinstance(item, dict) else None
        vector = as_float_list(got, len(numbers))
        if (
            not isinstance(item, dict)
            or item.keys() != {"type", kind}
            or item.get("type") != kind
            or vector is None
            or not all(approx(a, b) for a, b in zip(vector, numbers, strict=True))
        ):
            ctx.fail(
                "L2.coordinate_transformations",
                path,
                f"expected {{'type': {kind!r}, {kind!r}: {numbers}}}, got {item!r}",
            )


# -- level metadata ------------------------------------------------------------------------


def _level(ctx: Context, level: int) -> None:
    group = ctx.node(str(level))
    if not group.is_group:
        return
    attrs = group.attributes()
    facts = LevelFacts(attrs=attrs)
    ctx.facts.level[level] = facts
    ctx.mark("L2.level_keys")
    _level_zattrs_equal(ctx, level, attrs)
    for key, problem in _level_key_problems(ctx, level, attrs):
        ctx.fail("L2.level_keys", _level_path(level, key), problem)
    ndim = ctx.facts.ndim
    shape = as_float_list(attrs.get("bin_shape"), ndim)
    if shape is not None and all(s > 0 for s in shape):
        facts.bin_shape = tuple(shape)
    for key in ("vertex_count", "chunk_count"):
        value = attrs.get(key)
        if is_int(value) and value >= 0:
            setattr(facts, key, value)
    _matches_dataset(ctx, level, attrs)


def _level_zattrs_equal(ctx: Context, level: int, attrs: dict[str, Any]) -> None:
    """``N/.zattrs`` mirrors the level attributes (formats 1.0 to 1.2, spec §2.3)."""
    if ctx.facts.plain:
        return
    ctx.mark("L2.level_zattrs_equal")
    zattrs = ctx.doc(f"{level}/.zattrs").obj()
    if zattrs is not None and not json_equal(zattrs, attrs):
        ctx.fail(
            "L2.level_zattrs_equal",
            f"{level}/.zattrs",
            f"{level}/.zattrs differs from the attributes of {level}/zarr.json",
        )


def _level_key_problems(ctx: Context, level: int, attrs: dict[str, Any]) -> list[tuple[str, str]]:
    ndim = ctx.facts.ndim
    out: list[tuple[str, str]] = []
    if attrs.get("level") != level or not is_int(attrs.get("level")):
        out.append(("level", f"level must be the integer {level}, got {attrs.get('level')!r}"))
    if ndim is not None and as_int_list(attrs.get("bin_ratio"), ndim) is None:
        out.append(("bin_ratio", f"bin_ratio must be {ndim} integers"))
    if ndim is not None and as_float_list(attrs.get("bin_shape"), ndim) is None:
        out.append(("bin_shape", f"bin_shape must be {ndim} finite numbers"))
    if not is_number(attrs.get("object_sparsity")):
        out.append(("object_sparsity", "object_sparsity must be a number"))
    for key in ("vertex_count", "chunk_count"):
        value = attrs.get(key)
        if not (is_int(value) and value >= 0):
            out.append((key, f"{key} must be an integer >= 0, got {value!r}"))
    out.extend(_object_count_problems(ctx, attrs))
    out.extend(_optional_level_problems(level, attrs))
    return out


def _object_count_problems(ctx: Context, attrs: dict[str, Any]) -> list[tuple[str, str]]:
    kind = ctx.facts.kind
    if kind is None:
        return []
    value = attrs.get("object_count")
    if kind in OBJECT_KINDS and not (is_int(value) and value >= 0):
        return [("object_count", f"object_count must be an integer >= 0, got {value!r}")]
    if kind == POINT_CLOUD and "object_count" in attrs:
        return [("object_count", "object_count must be absent for point clouds")]
    return []


def _optional_level_problems(level: int, attrs: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key in ("sparsity_strategy", "shared_fragments"):
        if key in attrs and level == 0:
            out.append((key, f"{key} is only defined for levels >= 1"))
    strategy = attrs.get("sparsity_strategy")
    if "sparsity_strategy" in attrs and strategy not in _SPARSITY_STRATEGIES:
        out.append(("sparsity_strategy", f"sparsity_strategy {strategy!r} is not one of the four"))
    if "shared_fragments" in attrs and not isinstance(attrs["shared_fragments"], bool):
        out.append(("shared_fragments", "shared_fragments must be a boolean"))
    return out


def _matches_dataset(ctx: Context, level: int, attrs: dict[str, Any]) -> None:
    if level not in ctx.facts.datasets:
        return
    ctx.mark("L2.level_matches_dataset")
    _, entry = ctx.facts.datasets[level]
    for key in ("level", "bin_ratio", "bin_shape", "object_sparsity"):
        if not json_equal(attrs.get(key), entry.get(key)):
            ctx.fail(
                "L2.level_matches_dataset",
                _level_path(level, key),
                f"{key} is {attrs.get(key)!r}, the datasets entry says {entry.get(key)!r}",
            )


def counts_plausible(ctx: Context) -> None:
    """``chunk_count`` against the grid size and ``vertex_count`` (spec §11.3)."""
    grid = ctx.facts.grid_shape
    for level, facts in sorted(ctx.facts.level.items()):
        chunks, vertices = facts.chunk_count, facts.vertex_count
        if chunks is None or vertices is None or grid is None:
            continue
        ctx.mark("L2.level_counts_plausible")
        cells = math.prod(grid)
        problem = ""
        if chunks > cells:
            problem = f"chunk_count {chunks} exceeds the {cells} chunks of the grid"
        elif chunks > vertices:
            problem = f"chunk_count {chunks} exceeds vertex_count {vertices}"
        elif (chunks == 0) != (vertices == 0):
            problem = f"chunk_count {chunks} and vertex_count {vertices} disagree on emptiness"
        if problem:
            ctx.fail("L2.level_counts_plausible", _level_path(level, "chunk_count"), problem)
