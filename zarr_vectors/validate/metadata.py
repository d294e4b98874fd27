"""Level 2 checks on the root metadata, and the L2 entry point (spec §11.3).

L2 reads JSON documents and array ``zarr.json`` files only, never chunk data. The
multiscales block and the level metadata are checked by
:mod:`zarr_vectors.validate.multiscales`, array metadata by
:mod:`zarr_vectors.validate.array_meta`.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from zarr_vectors.errors import MetadataError, UnsupportedVersionError
from zarr_vectors.format.commits import COMMIT_KEY, commit_problem
from zarr_vectors.format.jsonutil import (
    as_int_list,
    is_finite_number,
    is_int,
    is_number,
    json_equal,
    pointer,
)
from zarr_vectors.format.kinds import KINDS, geometry_kind
from zarr_vectors.format.metadata import CORE_ROOT_KEYS
from zarr_vectors.format.version import check_readable_version, parse_version
from zarr_vectors.validate import array_meta, coarsening, multiscales, object_chunks, object_order
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.grid import chunk_index
from zarr_vectors.validate.names import GEOMETRY_TYPES, SPATIAL_DIMS

__all__ = ["run", "root_path"]

_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?(Z|\+00:00)")
_STRING_KEYS = ("coordinate_system", "software", "source_description", "notes")
_CORE_KEYS = CORE_ROOT_KEYS | {"creation_timestamp", "custom_metadata", COMMIT_KEY, *_STRING_KEYS}
TYPE_KEYS: dict[str, frozenset[str]] = {k.name: k.root_keys for k in KINDS.values() if k.root_keys}
"""Type-specific root keys (spec §3.4)."""


def root_path(*tokens: str | int) -> str:
    """Path of a finding in the root metadata: ``zarr.json#/attributes/...``."""
    return pointer("zarr.json", "attributes", *tokens)


def run(ctx: Context) -> None:
    """Run every L2 check that applies to the store (spec §11.3)."""
    attrs = ctx.root_attrs()
    _zattrs_equal(ctx, attrs)
    _version(ctx, attrs)
    _geometry_type(ctx, attrs)
    _spatial_dims(ctx, attrs)
    _shape(ctx, attrs, "chunk_shape")
    _shape(ctx, attrs, "base_bin_shape")
    _origin(ctx, attrs)
    _axis_units(ctx, attrs)
    _bounding_box(ctx, attrs)
    multiscales.run(ctx, attrs)
    object_chunks.check_metadata(ctx)
    object_order.check_metadata(ctx)
    coarsening.run(ctx)
    _divisibility(ctx)
    _bbox_present(ctx)
    _grid(ctx)
    _optional_keys(ctx, attrs)
    _kind_keys(ctx, attrs)
    _unknown_keys(ctx, attrs)
    multiscales.counts_plausible(ctx)
    array_meta.run(ctx)


def _zattrs_equal(ctx: Context, attrs: dict[str, Any]) -> None:
    if ctx.facts.plain:  # format 1.3 mirrors nothing (spec §2.3)
        return
    ctx.mark("L2.root_zattrs_equal")
    zattrs = ctx.doc(".zattrs").obj()
    if zattrs is not None and not json_equal(zattrs, attrs):
        ctx.fail("L2.root_zattrs_equal", ".zattrs", ".zattrs differs from the root attributes")


def _version(ctx: Context, attrs: dict[str, Any]) -> None:
    ctx.mark("L2.version_format")
    value = attrs.get("zarr_vectors_version")
    try:
        ctx.facts.version = parse_version(value)
    except MetadataError as exc:
        ctx.fail("L2.version_format", root_path("zarr_vectors_version"), str(exc))
        return
    ctx.mark("L2.version_supported")
    try:
        check_readable_version(value)
    except UnsupportedVersionError as exc:
        ctx.fail("L2.version_supported", root_path("zarr_vectors_version"), str(exc))


def _geometry_type(ctx: Context, attrs: dict[str, Any]) -> None:
    ctx.mark("L2.geometry_type_valid")
    value = attrs.get("geometry_type")
    if not isinstance(value, str) or value not in GEOMETRY_TYPES:
        ctx.fail(
            "L2.geometry_type_valid",
            root_path("geometry_type"),
            f"geometry_type must be one of {', '.join(GEOMETRY_TYPES)}, got {value!r}",
        )
        ctx.facts.kind = None
    else:
        ctx.facts.kind = value


def _spatial_dims(ctx: Context, attrs: dict[str, Any]) -> None:
    ctx.mark("L2.spatial_dims_valid")
    value = attrs.get("spatial_dims")
    if is_int(value) and value in SPATIAL_DIMS:
        ctx.facts.ndim = value
        return
    ctx.fail(
        "L2.spatial_dims_valid",
        root_path("spatial_dims"),
        f"spatial_dims must be the integer 2, 3 or 4, got {value!r}",
    )


def _shape(ctx: Context, attrs: dict[str, Any], key: str) -> None:
    """``chunk_shape`` / ``base_bin_shape``: D finite numbers > 0.

    The length is compared with ``spatial_dims`` whenever that is a number, even an
    invalid one such as ``3.0`` (then L1 took the list length as D and passed).
    """
    length_id, positive_id = f"L2.{key}_length", f"L2.{key}_positive"
    value, ndim, dims = attrs.get(key), ctx.facts.ndim, attrs.get("spatial_dims")
    if not isinstance(value, list):
        return
    ok = True
    if is_number(dims):
        ctx.mark(length_id)
        if len(value) != dims:
            ok = False
            ctx.fail(length_id, root_path(key), f"{key} has {len(value)} entries, expected {dims}")
    ctx.mark(positive_id)
    for d, v in enumerate(value):
        if not (is_finite_number(v) and v > 0):
            ok = False
            ctx.fail(
                positive_id, root_path(key, d), f"{key}[{d}] = {v!r} is not a finite number > 0"
            )
    if ok and ndim is not None:
        shape = tuple(float(v) for v in value)
        if key == "chunk_shape":
            ctx.facts.chunk_shape = shape
        else:
            ctx.facts.base_bin_shape = shape


def _origin(ctx: Context, attrs: dict[str, Any]) -> None:
    ndim = ctx.facts.ndim
    if ndim is None:
        return
    ctx.mark("L2.chunk_grid_origin_valid")
    value = attrs.get("chunk_grid_origin")
    origin = as_int_list(value, ndim)
    if origin is None or any(o > 0 for o in origin):
        ctx.fail(
            "L2.chunk_grid_origin_valid",
            root_path("chunk_grid_origin"),
            f"chunk_grid_origin must be a list of {ndim} integers <= 0, got {value!r}",
        )
        return
    ctx.facts.origin = tuple(origin)


def _axis_units(ctx: Context, attrs: dict[str, Any]) -> None:
    ndim = ctx.facts.ndim
    if ndim is None or "axis_units" not in attrs:
        return
    ctx.mark("L2.axis_units_valid")
    value = attrs["axis_units"]
    if isinstance(value, str):
        return
    if isinstance(value, list) and len(value) == ndim and all(isinstance(u, str) for u in value):
        return
    ctx.fail(
        "L2.axis_units_valid",
        root_path("axis_units"),
        f"axis_units must be a string or a list of {ndim} strings, got {value!r}",
    )


def _bounding_box(ctx: Context, attrs: dict[str, Any]) -> None:
    ndim = ctx.facts.ndim
    if ndim is None:
        return
    ctx.mark("L2.bounding_box_valid")
    value = attrs.get("bounding_box")
    if value is None:
        ctx.facts.bbox, ctx.facts.bbox_valid = None, True
        return
    problem = _bbox_problem(value, ndim)
    if problem:
        ctx.fail("L2.bounding_box_valid", root_path("bounding_box"), problem)
        return
    lo = tuple(float(v) for v in value["min"])
    hi = tuple(float(v) for v in value["max"])
    ctx.facts.bbox, ctx.facts.bbox_valid = (lo, hi), True


def _bbox_problem(value: Any, ndim: int) -> str:
    if not isinstance(value, dict) or set(value) != {"min", "max"}:
        return f"bounding_box must be null or an object with exactly min and max, got {value!r}"
    for key in ("min", "max"):
        v = value[key]
        if not isinstance(v, list) or len(v) != ndim or not all(is_finite_number(x) for x in v):
            return f"bounding_box.{key} must be a list of {ndim} finite numbers, got {v!r}"
    bad = [d for d in range(ndim) if value["min"][d] > value["max"][d]]
    if bad:
        return f"bounding_box.min exceeds bounding_box.max on axis {bad[0]}"
    return ""


def _divisibility(ctx: Context) -> None:
    """Bins tile chunks: the validator rule of spec §5.4, for level 0 and every level."""
    chunk = ctx.facts.chunk_shape
    if chunk is None:
        return
    ctx.mark("L2.bin_divides_chunk", "L2.bin_le_chunk")
    shapes: list[tuple[tuple[float, ...] | None, Any]] = [
        (ctx.facts.base_bin_shape, lambda d: root_path("base_bin_shape", d))
    ]
    for level, facts in sorted(ctx.facts.level.items()):
        shapes.append(
            (
                facts.bin_shape,
                lambda d, n=level: pointer(f"{n}/zarr.json", "attributes", "bin_shape", d),
            )
        )
    for bins, where in shapes:
        if bins is None:
            continue
        for d, (c, b) in enumerate(zip(chunk, bins, strict=True)):
            r = math.fmod(c, b)
            if not (r <= 1e-6 * c or b - r <= 1e-6 * c):
                ctx.fail("L2.bin_divides_chunk", where(d), f"bin {b} does not divide chunk {c}")
            if b > c * (1 + 1e-6):
                ctx.fail("L2.bin_le_chunk", where(d), f"bin {b} is larger than chunk {c}")


def _bbox_present(ctx: Context) -> None:
    level0 = ctx.facts.level.get(0)
    count = level0.vertex_count if level0 is not None else None
    if count is None or not ctx.facts.bbox_valid:
        return
    ctx.mark("L2.bounding_box_present")
    has_box = ctx.facts.bbox is not None
    if has_box != (count > 0):
        ctx.fail(
            "L2.bounding_box_present",
            root_path("bounding_box"),
            f"bounding_box is {'set' if has_box else 'null or absent'} but level 0 holds "
            f"{count} vertices",
        )


def _grid(ctx: Context) -> None:
    """``chunk_grid_origin`` and the grid shape G computed from the bounding box (spec §5.2)."""
    f = ctx.facts
    if f.chunk_shape is None or f.origin is None or not f.bbox_valid:
        return
    if ctx.failed("L2.bounding_box_present"):
        return  # the bounding box cannot be trusted to derive the grid
    ctx.mark("L2.grid_origin_consistent")
    if f.bbox is None:
        expected_origin, top = [0] * len(f.origin), [0] * len(f.origin)
    else:
        low = [chunk_index(p, c) for p, c in zip(f.bbox[0], f.chunk_shape, strict=True)]
        high = [chunk_index(p, c) for p, c in zip(f.bbox[1], f.chunk_shape, strict=True)]
        if None in low or None in high:
            ctx.fail(
                "L2.grid_origin_consistent",
                root_path("bounding_box"),
                "bounding_box is too large for chunk_shape (|p / C| must stay below 2**52)",
            )
            return
        expected_origin = [min(0, c) for c in low if c is not None]
        top = [c for c in high if c is not None]
    if list(f.origin) != expected_origin:
        ctx.fail(
            "L2.grid_origin_consistent",
            root_path("chunk_grid_origin"),
            f"chunk_grid_origin is {list(f.origin)}, the bounding box gives {expected_origin}",
        )
        return  # no grid shape: the checks that need it are skipped
    shape = tuple(t - o + 1 for t, o in zip(top, f.origin, strict=True))
    f.grid_shape = shape if all(g >= 1 for g in shape) else None


def _optional_keys(ctx: Context, attrs: dict[str, Any]) -> None:
    ctx.mark("L2.optional_keys_types")
    for key in _STRING_KEYS:
        if key in attrs and not isinstance(attrs[key], str):
            ctx.fail("L2.optional_keys_types", root_path(key), f"{key} must be a string")
    if "custom_metadata" in attrs and not isinstance(attrs["custom_metadata"], dict):
        ctx.fail(
            "L2.optional_keys_types",
            root_path("custom_metadata"),
            "custom_metadata must be an object",
        )
    if "creation_timestamp" in attrs and not _is_timestamp(attrs["creation_timestamp"]):
        ctx.fail(
            "L2.optional_keys_types",
            root_path("creation_timestamp"),
            "creation_timestamp must be ISO-8601 UTC 'YYYY-MM-DDTHH:MM:SS[.ffffff]' with Z or "
            f"+00:00, got {attrs['creation_timestamp']!r}",
        )
    problem = commit_problem(attrs[COMMIT_KEY]) if COMMIT_KEY in attrs else None
    if problem is not None:
        ctx.fail("L2.optional_keys_types", root_path(COMMIT_KEY), problem)


def _is_timestamp(value: Any) -> bool:
    if not isinstance(value, str) or not _TIMESTAMP.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _kind_keys(ctx: Context, attrs: dict[str, Any]) -> None:
    kind = ctx.facts.kind
    if kind is None or kind not in TYPE_KEYS:
        return
    check_id = f"L2.{kind}_keys"
    ctx.mark(check_id)
    for key in sorted(TYPE_KEYS[kind] & attrs.keys()):
        problem = _kind_key_problem(kind, key, attrs[key], attrs)
        if problem:
            ctx.fail(check_id, root_path(key), f"{key}: {problem}")


def _kind_key_problem(kind: str, key: str, value: Any, attrs: dict[str, Any]) -> str:
    if key == "winding_order":
        return "" if value in ("ccw", "cw") else f"must be 'ccw' or 'cw', got {value!r}"
    if key == "is_tree" and geometry_kind(kind).tree:
        return "" if value is True else f"must be true for skeletons, got {value!r}"
    if key in ("closed_surface", "is_directed", "is_tree", "swc_compatible"):
        return "" if isinstance(value, bool) else f"must be a boolean, got {value!r}"
    if key == "step_size":
        return "" if is_number(value) and value > 0 else f"must be a number > 0, got {value!r}"
    if key in ("min_length", "max_length"):
        if not (is_number(value) and value >= 0):
            return f"must be a number >= 0, got {value!r}"
        low, high = attrs.get("min_length"), attrs.get("max_length")
        if key == "max_length" and is_number(low) and is_number(high) and low > high:
            return f"min_length {low} exceeds max_length {high}"
        return ""
    return "" if isinstance(value, str) else f"must be a string, got {value!r}"


def _unknown_keys(ctx: Context, attrs: dict[str, Any]) -> None:
    ctx.mark("L2.type_keys_foreign", "L2.root_unknown_key")
    kind = ctx.facts.kind
    own = TYPE_KEYS.get(kind or "", frozenset())
    every_type_key = frozenset().union(*TYPE_KEYS.values())
    for key in attrs:
        if key in _CORE_KEYS or key in own:
            continue
        if key in every_type_key:
            if kind is None:
                continue
            ctx.fail(
                "L2.type_keys_foreign",
                root_path(key),
                f"{key!r} is a key of another geometry type than {kind!r}",
            )
        else:
            ctx.fail("L2.root_unknown_key", root_path(key), f"unknown root key {key!r}")
