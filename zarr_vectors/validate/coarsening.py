"""Level 2 checks of the ``coarsening`` key of the levels (spec §4.1, §4.3, §11.3).

``L2.level_coarsening``: a 1.3 store's levels above 0 say how they were computed and level 0
does not; the point methods' parameters are well formed and fit the level-0 attributes; all
levels use one method; bin ratios nest. ``L2.coarsening_method_unknown``: a method this
validator does not know for the kind (its L5 checks are skipped). ``L2.level_schedule``: the
root's optional ``level_schedule`` is well formed and only in a store with levels above 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError, MetadataError
from zarr_vectors.format.jsonutil import as_int_list, pointer
from zarr_vectors.format.levels import (
    AGGREGATE,
    CLUSTER,
    IMPORTED,
    LEVEL_SCHEDULE,
    POINT_METHODS,
    RUNS,
    THIN,
    aggregate_coarsening,
    check_coarsening,
    check_schedule,
)
from zarr_vectors.format.version import LEVELS_VERSION, parse_version
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.names import ATTRIBUTES, POINT_CLOUD

__all__ = ["KNOWN_METHODS", "run", "valid_methods"]

KNOWN_METHODS: dict[str, tuple[str, ...]] = {
    POINT_CLOUD: POINT_METHODS,
    "polyline": (RUNS, IMPORTED),
    "streamline": (RUNS, IMPORTED),
    "skeleton": (THIN, IMPORTED),
    "graph": (CLUSTER, IMPORTED),
    "mesh": (CLUSTER, IMPORTED),
}
"""Coarsening methods of each kind whose promises the validator checks (spec §4.3)."""

_FIRST = parse_version(LEVELS_VERSION)


def _path(level: int, *tokens: str | int) -> str:
    return pointer(f"{level}/zarr.json", "attributes", "coarsening", *tokens)


def run(ctx: Context) -> None:
    """Check ``coarsening`` at every level (after the level metadata has been read)."""
    if ctx.facts.version is None:
        return
    _schedule(ctx)
    if ctx.facts.version < _FIRST:
        _older_version(ctx)
        return
    ctx.mark("L2.level_coarsening")
    methods = set()
    for level, facts in sorted(ctx.facts.level.items()):
        present = "coarsening" in facts.attrs
        if level == 0 and present:
            ctx.fail("L2.level_coarsening", _path(0), "level 0 must not hold coarsening")
        elif level > 0 and not present:
            ctx.fail("L2.level_coarsening", _path(level), f"level {level} lacks coarsening")
        elif level > 0:
            method = _check(ctx, level, facts.attrs["coarsening"])
            if method is not None:
                methods.add(method)
    if len(methods) > 1:
        ctx.fail(
            "L2.level_coarsening",
            _path(max(ctx.facts.level)),
            f"levels use several methods ({', '.join(sorted(methods))}); all must use one",
        )
    _ratios_nest(ctx)


def _schedule(ctx: Context) -> None:
    """``L2.level_schedule``: the root's ``level_schedule`` (OPTIONAL, spec §3.1) has the
    members and types of §4.3.1 and is present only when levels above 0 are listed."""
    attrs = ctx.root_attrs()
    if LEVEL_SCHEDULE not in attrs:
        return
    ctx.mark("L2.level_schedule")
    path = pointer("zarr.json", "attributes", LEVEL_SCHEDULE)
    try:
        check_schedule(attrs[LEVEL_SCHEDULE])
    except MetadataError as exc:
        ctx.fail("L2.level_schedule", path, str(exc))
    if not any(n > 0 for n in ctx.facts.datasets):
        ctx.fail(
            "L2.level_schedule",
            path,
            "level_schedule is recorded but no level above 0 is listed; remove it, or "
            "build the levels (zv.build_levels)",
        )


def _older_version(ctx: Context) -> None:
    """``L2.levels_version``: a store of format 1.2 or older lists level 0 alone and has no
    level group that records a ``coarsening`` (levels above 0 are format 1.3, spec §3.3)."""
    ctx.mark("L2.levels_version")
    version = ".".join(str(v) for v in ctx.facts.version or ())
    path = pointer("zarr.json", "attributes", "zarr_vectors_version")
    listed = sorted(n for n in ctx.facts.datasets if n > 0)
    if listed:
        ctx.fail(
            "L2.levels_version",
            path,
            f"a store of format {version} lists levels {listed} above 0 in multiscales; "
            f"levels of detail are format {LEVELS_VERSION}: declare it, or remove the levels",
        )
    for level in _coarsened_groups(ctx):
        ctx.fail(
            "L2.levels_version",
            _path(level),
            f"level group {level} records a coarsening, which format {version} does not "
            f"have; declare format {LEVELS_VERSION}, or remove the level",
        )


def _coarsened_groups(ctx: Context) -> list[int]:
    """Decimal level groups of the root, listed or not, whose attributes hold coarsening."""
    found = []
    for name in ctx.children(""):
        if name.isdecimal() and name == str(int(name)):
            attrs = ctx.node(name).attributes()
            if "coarsening" in attrs:
                found.append(int(name))
    return sorted(found)


def _check(ctx: Context, level: int, value: Any) -> str | None:
    """The level's method if its coarsening is well formed (else a finding and None)."""
    try:
        check_coarsening(value)
    except MetadataError as exc:
        ctx.fail("L2.level_coarsening", _path(level), str(exc))
        return None
    method = value["method"]
    known = KNOWN_METHODS.get(ctx.facts.kind or "")
    ctx.mark("L2.coarsening_method_unknown")
    if known is not None and method not in known:
        ctx.fail(
            "L2.coarsening_method_unknown",
            _path(level, "method"),
            f"method {method!r} is not one of {', '.join(known)} for {ctx.facts.kind}",
        )
    elif method == AGGREGATE:
        _aggregate_fits(ctx, level, value)
    return str(method)


def _aggregate_fits(ctx: Context, level: int, value: dict[str, Any]) -> None:
    """An aggregate level's reductions cover the level-0 attributes, allowed by dtype."""
    dtypes = _level0_dtypes(ctx)
    if dtypes is None:
        return
    missing = sorted(set(dtypes) - set(value["reductions"]))
    try:
        aggregate_coarsening(dtypes, value["reductions"], value["count"])
    except InvalidInputError as exc:
        ctx.fail("L2.level_coarsening", _path(level), str(exc))
        return
    if missing:
        ctx.fail(
            "L2.level_coarsening",
            _path(level, "reductions"),
            f"reductions lack the level-0 attributes {', '.join(missing)}",
        )


def _level0_dtypes(ctx: Context) -> dict[str, np.dtype[Any]] | None:
    """dtype of every level-0 attribute, or None when one cannot be read."""
    out = {}
    for name in ctx.children(f"0/{ATTRIBUTES}"):
        if name == "zarr.json":
            continue
        doc = ctx.doc(f"0/{ATTRIBUTES}/{name}/zarr.json").obj()
        try:
            out[name] = np.dtype(str((doc or {}).get("data_type")))
        except TypeError:
            return None
    return out


def _ratios_nest(ctx: Context) -> None:
    """``bin_ratio[N]`` is a multiple of ``bin_ratio[N-1]`` on every axis (spec §4.3.1)."""
    previous: list[int] | None = None
    for level, facts in sorted(ctx.facts.level.items()):
        ratio = as_int_list(facts.attrs.get("bin_ratio"), ctx.facts.ndim)
        if ratio is None or min(ratio, default=1) < 1:
            previous = None
            continue
        if previous is not None and any(r % p for r, p in zip(ratio, previous, strict=True)):
            ctx.fail(
                "L2.level_coarsening",
                pointer(f"{level}/zarr.json", "attributes", "bin_ratio"),
                f"bin_ratio {ratio} is not a multiple of {previous} of the level below",
            )
        previous = ratio


def valid_methods(ctx: Context) -> dict[int, dict[str, Any]] | None:
    """The ``coarsening`` of every level above 0 when L2 found them all well formed and of
    a method the validator knows, else None (the L5 method checks are then skipped)."""
    if ctx.failed("L2.level_coarsening") or ctx.failed("L2.coarsening_method_unknown"):
        return None
    out = {}
    for level, facts in sorted(ctx.facts.level.items()):
        value = facts.attrs.get("coarsening")
        if level > 0:
            if not isinstance(value, dict):
                return None
            out[level] = value
    return out
