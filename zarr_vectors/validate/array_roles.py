"""Level 2 shape and dtype rules of each array role (spec §9.1 to §9.11, §11.3)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zarr_vectors.format import layout
from zarr_vectors.format.jsonutil import as_int_list, is_int, pointer
from zarr_vectors.format.kinds import link_width_of
from zarr_vectors.validate.arrays import BLOB_ROLES, PER_CHUNK_ROLES, ArrayDoc, tag_problem
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.names import (
    CROSS_CHUNK_LINKS,
    FRAGMENT_RECORDS,
    GROUPINGS,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_INDEX,
    OBJECT_KINDS,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
)

__all__ = ["gid_capacity", "object_index", "role_meta", "vertices_meta"]

_I63 = 2**63 - 1

_META_CHECK = {
    VERTEX_FRAGMENTS: "L2.blob_array_meta",
    LINK_FRAGMENTS: "L2.blob_array_meta",
    FRAGMENT_RECORDS: "L2.blob_array_meta",
    VERTEX_COUNTS: "L2.vertex_counts_meta",
    "attribute": "L2.attribute_meta",
    "fragment_attribute": "L2.fragment_attribute_meta",
    LINKS: "L2.links_meta",
    "object_index_data": "L2.object_index_meta",
    "object_index_offsets": "L2.object_index_meta",
    "object_attribute": "L2.object_attribute_meta",
    GROUPINGS: "L2.groupings_meta",
    "groupings_attribute": "L2.groupings_attribute_meta",
    CROSS_CHUNK_LINKS: "L2.cross_chunk_links_meta",
}


def role_meta(ctx: Context, array: ArrayDoc, ndim: int, level: int) -> None:
    """Shape and dtype of an array, reported under the metadata check of its role."""
    check_id = _META_CHECK.get(array.role)
    if check_id is None:
        return
    ctx.mark(check_id)
    problem = _shape_dtype_problem(ctx, array, ndim, level)
    if problem:
        ctx.fail(check_id, array.meta_path, problem)


def _shape_dtype_problem(ctx: Context, array: ArrayDoc, ndim: int, level: int) -> str:
    if array.shape is None:
        return f"shape must be a list of integers >= 0, got {array.doc.get('shape')!r}"
    if array.dtype is None:
        return f"data_type {array.doc.get('data_type')!r} is not allowed here"
    role, shape, dtype = array.role, array.shape, array.dtype
    grid = layout.grid_problem(array.doc)
    if grid is not None and role not in PER_CHUNK_ROLES:  # L2.sharding_layout reports those
        return grid
    if role in BLOB_ROLES:
        return _blob_problem(array, ndim)
    if role == VERTEX_COUNTS:
        return _counts_problem(ctx, array, ndim)
    if role in ("attribute", "fragment_attribute"):
        return _row_attribute_problem(ctx, array, ndim, level)
    if role == LINKS:
        return _links_problem(ctx, array, ndim)
    if role in ("object_index_data", "object_index_offsets"):
        return ""  # checked with the group by _object_index
    if role == GROUPINGS:
        return _groupings_problem(array, _object_count(ctx, level))
    if role == CROSS_CHUNK_LINKS:
        attrs = array.attributes()
        if dtype != np.int64 or len(shape) != 2 or shape[1] != 2:
            return f"must be int64 of shape (n_links, 2), got {dtype} {list(shape)}"
        if attrs.get("num_links") != shape[0] or attrs.get("level_delta") != 0:
            return f"num_links must be {shape[0]} and level_delta 0"
        return ""
    count = _object_count(ctx, level) if role == "object_attribute" else _groups(ctx, level)
    return _global_attribute_problem(array, count)


def vertices_meta(ctx: Context, vertices: ArrayDoc | None, ndim: int, level: int) -> None:
    """L2.vertices_meta; records ``N_max`` of the level when the array is well formed."""
    if vertices is None:
        return
    ctx.mark("L2.vertices_meta")
    shape, name = vertices.shape, vertices.doc.get("data_type")
    if name not in ("float32", "float64") or shape is None or len(shape) != ndim + 2:
        ctx.fail(
            "L2.vertices_meta",
            vertices.meta_path,
            f"vertices must be float32/float64 with {ndim + 2} dimensions, got {name!r} "
            f"{vertices.doc.get('shape')!r}",
        )
    elif shape[-1] != ndim:
        ctx.fail("L2.vertices_meta", vertices.meta_path, f"last dimension must be {ndim}")
    elif level in ctx.facts.level:
        ctx.facts.level[level].n_max = shape[ndim]


def _blob_problem(array: ArrayDoc, ndim: int) -> str:
    assert array.shape is not None
    assert array.dtype is not None
    if array.dtype != np.uint8 or len(array.shape) != ndim + 1:
        return f"must be uint8 with {ndim + 1} dimensions"
    inner = layout.inner_chunk_shape(array.doc)
    if inner is None or len(inner) != ndim + 1:
        return ""  # reported by L2.sharding_layout
    b = inner[ndim]
    if b < 256 or b > 65536 or b & (b - 1):
        return f"inner length {b} must be a power of two in [256, 65536]"
    if array.shape[ndim] % b:
        return f"L_max {array.shape[ndim]} is not a multiple of the inner length {b}"
    return ""


def _counts_problem(ctx: Context, array: ArrayDoc, ndim: int) -> str:
    assert array.shape is not None
    assert array.dtype is not None
    grid = ctx.facts.grid_shape
    if array.dtype != np.int64 or len(array.shape) != ndim:
        return f"must be int64 with {ndim} dimensions"
    if grid is not None and array.shape != grid:
        return f"shape {list(array.shape)} must be the grid shape {list(grid)}"
    if layout.is_sharded(array.doc):
        return "vertex_counts must not be sharded"
    chunks = layout.regular_chunk_shape(array.doc)
    if chunks is None or len(chunks) != ndim or not all(1 <= c <= 32 for c in chunks):
        return f"chunk shape must be regular with lengths in [1, 32], got {chunks!r}"
    return ""


def _row_attribute_problem(ctx: Context, array: ArrayDoc, ndim: int, level: int) -> str:
    assert array.shape is not None
    shape, grid = array.shape, ctx.facts.grid_shape
    if len(shape) not in (ndim + 1, ndim + 2) or (len(shape) == ndim + 2 and shape[-1] < 1):
        return f"must have {ndim + 1} or {ndim + 2} dimensions (K >= 1), got {list(shape)}"
    if grid is not None and shape[:ndim] != grid:
        return f"leading dimensions {list(shape[:ndim])} must be the grid shape {list(grid)}"
    if array.role == "fragment_attribute":
        return ""
    facts = ctx.facts.level.get(level)
    n_max = facts.n_max if facts is not None else None
    if n_max is not None and shape[ndim] != n_max:
        return f"dimension {ndim} must be N_max = {n_max} of vertices, got {shape[ndim]}"
    names = array.attributes().get("channel_names")
    k = shape[-1] if len(shape) == ndim + 2 else None
    if names is not None and (
        k is None
        or not isinstance(names, list)
        or len(names) != k
        or not all(isinstance(n, str) for n in names)
    ):
        return f"channel_names must be a list of K = {k} strings"
    return ""


def _links_problem(ctx: Context, array: ArrayDoc, ndim: int) -> str:
    assert array.shape is not None
    assert array.dtype is not None
    width = link_width_of(ctx.facts.kind)
    attrs = array.attributes()
    if array.dtype not in (np.int32, np.int64) or len(array.shape) != ndim + 2:
        return f"links/0 must be int32 or int64 with {ndim + 2} dimensions"
    if array.shape[-1] != width or attrs.get("link_width") != width:
        return f"last dimension and link_width must be {width}"
    if attrs.get("level_delta") != 0:
        return "level_delta must be 0"
    return ""


def _groupings_problem(array: ArrayDoc, count: int | None) -> str:
    assert array.shape is not None
    assert array.dtype is not None
    shape, attrs = array.shape, array.attributes()
    if array.dtype != np.int64 or len(shape) != 2 or shape[0] < 1 or shape[1] < 1:
        return f"groupings must be int64 of shape (n_groups >= 1, M >= 1), got {list(shape)}"
    if count is not None and shape[1] > count:
        return (
            f"groupings has rows of {shape[1]} members but the level has {count} objects "
            "(a group lists distinct objects)"
        )
    if attrs.get("num_groups") != shape[0]:
        return f"num_groups must be {shape[0]}"
    names = attrs.get("group_names")
    if names is not None and (
        not isinstance(names, list)
        or len(names) != shape[0]
        or not all(isinstance(n, str) for n in names)
    ):
        return f"group_names must be a list of {shape[0]} strings"
    return ""


def _global_attribute_problem(array: ArrayDoc, count: int | None) -> str:
    assert array.shape is not None
    shape = array.shape
    if len(shape) not in (1, 2) or (len(shape) == 2 and shape[1] < 1):
        return f"shape must be (n,) or (n, K) with K >= 1, got {list(shape)}"
    if count is not None and shape[0] != count:
        return f"first dimension must be {count}, got {shape[0]}"
    return ""


def _object_count(ctx: Context, level: int) -> int | None:
    value = ctx.node(f"{level}/{OBJECT_INDEX}").attributes().get("num_objects")
    return value if is_int(value) else None


def _groups(ctx: Context, level: int) -> int | None:
    node = ctx.node(f"{level}/{GROUPINGS}")
    shape = as_int_list(node.doc.get("shape")) if node.doc is not None else None
    return shape[0] if shape else None


def object_index(ctx: Context, level: int, ndim: int) -> None:
    """The ``object_index`` group tag and L2.object_index_meta (object kinds)."""
    if ctx.facts.kind not in OBJECT_KINDS:
        return
    group = ctx.node(f"{level}/{OBJECT_INDEX}")
    if not group.is_group:
        return
    ctx.mark("L2.zv_array_tag", "L2.object_index_meta")
    attrs = group.attributes()
    problem = tag_problem(OBJECT_INDEX, OBJECT_INDEX, attrs)
    where = f"{level}/{OBJECT_INDEX}/zarr.json"
    if problem:
        ctx.fail("L2.zv_array_tag", pointer(where, "attributes"), problem)
    problem = _object_index_problem(ctx, level, ndim, attrs)
    if problem:
        ctx.fail("L2.object_index_meta", where, problem)


def _object_index_problem(ctx: Context, level: int, ndim: int, attrs: dict[str, Any]) -> str:
    n = attrs.get("num_objects")
    count = ctx.facts.level[level].attrs.get("object_count") if level in ctx.facts.level else None
    if not is_int(n) or n < 0 or n != count:
        return f"num_objects must be an integer >= 0 equal to object_count {count!r}, got {n!r}"
    if attrs.get("sid_ndim") != ndim:
        return f"sid_ndim must be {ndim}, got {attrs.get('sid_ndim')!r}"
    data = ctx.node(f"{level}/{OBJECT_INDEX}/data").doc or {}
    offsets = ctx.node(f"{level}/{OBJECT_INDEX}/offsets").doc or {}
    if data.get("data_type") != "uint8" or len(as_int_list(data.get("shape")) or []) != 1:
        return "object_index/data must be a 1-D uint8 array"
    if offsets.get("data_type") != "int64" or as_int_list(offsets.get("shape")) != [n]:
        return f"object_index/offsets must be int64 of shape ({n},)"
    problem = layout.grid_problem(data) or layout.grid_problem(offsets)
    return f"object_index arrays: {problem}" if problem else ""


def gid_capacity(ctx: Context, level: int, vertices: ArrayDoc | None) -> None:
    """L2.gid_capacity: global vertex ids fit in int64 (object kinds, spec §9.11)."""
    grid, facts = ctx.facts.grid_shape, ctx.facts.level.get(level)
    if ctx.facts.kind not in OBJECT_KINDS or grid is None or facts is None or facts.n_max is None:
        return
    ctx.mark("L2.gid_capacity")
    if math.prod(grid) * facts.n_max > _I63 and vertices is not None:
        ctx.fail(
            "L2.gid_capacity",
            pointer(vertices.meta_path, "shape"),
            f"{math.prod(grid)} chunks x N_max {facts.n_max} global ids exceed 2**63 - 1",
        )
