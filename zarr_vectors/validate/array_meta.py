"""Level 2 checks on array metadata: the ``zarr.json`` of every array of every level.

Spec §9 and §11.3 ("Array metadata"). Arrays are grouped by *role* (``vertices``,
``attribute``, ``links``...); each role names the check that reports a bad shape or dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.validate import layout
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.jsonutil import as_int_list, is_int, is_number, pointer
from zarr_vectors.validate.names import (
    ATTRIBUTE_FAMILIES,
    ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ATTRIBUTES,
    OBJECT_INDEX,
    OBJECT_KINDS,
    POINT_CLOUD,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
    is_valid_name,
)

__all__ = ["ArrayDoc", "level_arrays", "run"]

ATTRIBUTE_DTYPES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    }
)
_I63 = 2**63 - 1

_TAGS: dict[str, tuple[str, tuple[str, ...]]] = {
    VERTICES: ("vertices", ()),
    VERTEX_FRAGMENTS: ("vertex_fragments", ("encoding",)),
    VERTEX_COUNTS: ("vertex_counts", ()),
    "attribute": ("attribute", ("name",)),
    "fragment_attribute": ("fragment_attribute", ("name",)),
    LINKS: ("links", ("link_width", "level_delta")),
    LINK_FRAGMENTS: ("link_fragments", ("encoding",)),
    OBJECT_INDEX: ("object_index", ("num_objects", "sid_ndim")),
    "object_index_data": ("object_index_data", ()),
    "object_index_offsets": ("object_index_offsets", ()),
    "object_attribute": ("object_attribute", ("name",)),
    GROUPINGS: ("groupings", ("num_groups",)),
    "groupings_attribute": ("groupings_attribute", ("name",)),
    CROSS_CHUNK_LINKS: ("cross_chunk_links", ("num_links", "level_delta")),
}
"""Role → (``zv_array`` value, extra keys the attributes must carry) (spec §9)."""

_META_CHECK = {
    VERTEX_FRAGMENTS: "L2.blob_array_meta",
    LINK_FRAGMENTS: "L2.blob_array_meta",
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
PER_CHUNK_ROLES = frozenset(
    {VERTICES, VERTEX_FRAGMENTS, "attribute", "fragment_attribute", LINKS, LINK_FRAGMENTS}
)
BLOB_ROLES = frozenset({VERTEX_FRAGMENTS, LINK_FRAGMENTS})
_FILL_MINUS_ONE = frozenset({LINKS, GROUPINGS, CROSS_CHUNK_LINKS})
_RESERVED: dict[tuple[str, str], tuple[frozenset[str], str]] = {
    (ATTRIBUTES, "object_id"): (frozenset({POINT_CLOUD}), "iu"),
    (ATTRIBUTES, "swc_type"): (frozenset({"skeleton"}), "iu"),
    (ATTRIBUTES, "radius"): (frozenset({"skeleton"}), "f"),
    (ATTRIBUTES, "swc_id"): (frozenset({"skeleton"}), "iu"),
    (FRAGMENT_ATTRIBUTES, "object_id"): (frozenset(OBJECT_KINDS), "iu"),
    (OBJECT_ATTRIBUTES, "step_size"): (frozenset({"streamline"}), "f"),
}
"""Reserved names (spec §9.4) → (kinds that use them, required dtype kinds)."""
_KIND_EXCLUSIVE = frozenset({"object_id"})
"""Reserved names that no other kind may use (the others are only typed in their kind)."""


@dataclass(frozen=True, slots=True)
class ArrayDoc:
    """One array node of a level, with its parsed ``zarr.json``.

    Attributes
    ----------
    path
        Node path, e.g. ``"0/attributes/intensity"``.
    role
        What the array is (a key of the role tables of this module).
    doc
        The parsed ``zarr.json``.
    shape
        The shape when it is a list of integers >= 0, else None.
    dtype
        The ``data_type`` when it is a known numeric type, else None.
    """

    path: str
    role: str
    doc: dict[str, Any]
    shape: tuple[int, ...] | None
    dtype: np.dtype[Any] | None

    @property
    def name(self) -> str:
        """The node name (last path component)."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def meta_path(self) -> str:
        """Key of the array's ``zarr.json``."""
        return f"{self.path}/zarr.json"

    def attributes(self) -> dict[str, Any]:
        """The ``attributes`` member when it is an object, else an empty dict."""
        attrs = self.doc.get("attributes")
        return attrs if isinstance(attrs, dict) else {}


def _parse(path: str, role: str, doc: dict[str, Any]) -> ArrayDoc:
    shape_list = as_int_list(doc.get("shape"))
    shape = tuple(shape_list) if shape_list is not None and min(shape_list, default=0) >= 0 else None
    name = doc.get("data_type")
    dtype = np.dtype(name) if isinstance(name, str) and name in ATTRIBUTE_DTYPES else None
    return ArrayDoc(path, role, doc, shape, dtype)


def level_arrays(ctx: Context, level: int) -> list[ArrayDoc]:
    """Every array node of a level that L1 accepted, with its role."""
    base = str(level)
    wanted: list[tuple[str, str]] = [
        (f"{base}/{VERTICES}", VERTICES),
        (f"{base}/{VERTEX_FRAGMENTS}", VERTEX_FRAGMENTS),
        (f"{base}/{VERTEX_COUNTS}", VERTEX_COUNTS),
        (f"{base}/{LINKS}/0", LINKS),
        (f"{base}/{LINK_FRAGMENTS}", LINK_FRAGMENTS),
        (f"{base}/{OBJECT_INDEX}/data", "object_index_data"),
        (f"{base}/{OBJECT_INDEX}/offsets", "object_index_offsets"),
        (f"{base}/{GROUPINGS}", GROUPINGS),
        (f"{base}/{CROSS_CHUNK_LINKS}", CROSS_CHUNK_LINKS),
    ]
    families = {
        ATTRIBUTES: "attribute",
        FRAGMENT_ATTRIBUTES: "fragment_attribute",
        OBJECT_ATTRIBUTES: "object_attribute",
        GROUPINGS_ATTRIBUTES: "groupings_attribute",
    }
    for family, role in families.items():
        for name in ctx.children(f"{base}/{family}"):
            if name != "zarr.json":
                wanted.append((f"{base}/{family}/{name}", role))
    ctx.prefetch([f"{path}/zarr.json" for path, _ in wanted])
    out = []
    for path, role in wanted:
        node = ctx.node(path)
        if node.is_array and node.doc is not None:
            out.append(_parse(path, role, node.doc))
    return out


def run(ctx: Context) -> None:
    """Array metadata checks of every level (spec §11.3, "Array metadata")."""
    if ctx.facts.ndim is None:
        return
    for level in ctx.facts.levels:
        if ctx.node(str(level)).is_group:
            _level(ctx, level, level_arrays(ctx, level))


def _level(ctx: Context, level: int, arrays: list[ArrayDoc]) -> None:
    ndim = ctx.facts.ndim
    assert ndim is not None
    vertices = next((a for a in arrays if a.role == VERTICES), None)
    _vertices_meta(ctx, vertices, ndim, level)
    for array in arrays:
        _tag(ctx, array)
        _fill_value(ctx, array)
        if array.role in PER_CHUNK_ROLES:
            _per_chunk(ctx, array, ndim)
        _role_meta(ctx, array, ndim, level)
    _grid_shape(ctx, arrays, ndim)
    _names(ctx, level)
    _reserved(ctx, arrays)
    _object_index(ctx, level, ndim)
    _gid_capacity(ctx, level, vertices)


# -- common -------------------------------------------------------------------------------


def _tag(ctx: Context, array: ArrayDoc) -> None:
    ctx.mark("L2.zv_array_tag")
    problem = _tag_problem(array.role, array.name, array.attributes())
    if problem:
        ctx.fail("L2.zv_array_tag", pointer(array.meta_path, "attributes"), problem)


def _tag_problem(role: str, name: str, attrs: dict[str, Any]) -> str:
    value, extra = _TAGS[role]
    if attrs.get("zv_array") != value:
        return f"zv_array must be {value!r}, got {attrs.get('zv_array')!r}"
    missing = [k for k in extra if k not in attrs]
    if missing:
        return f"missing {', '.join(missing)}"
    if "name" in extra and attrs["name"] != name:
        return f"name must be the node name {name!r}, got {attrs['name']!r}"
    if "encoding" in extra and attrs["encoding"] != "fragment_index_v1":
        return f"encoding must be 'fragment_index_v1', got {attrs['encoding']!r}"
    return ""


def _fill_value(ctx: Context, array: ArrayDoc) -> None:
    ctx.mark("L2.fill_value")
    value = array.doc.get("fill_value")
    if array.role in _FILL_MINUS_ONE:
        ok, want = is_number(value) and value == -1, "-1"
    elif array.dtype is not None and array.dtype.kind == "b":
        ok, want = value is False, "false"
    else:
        ok, want = is_number(value) and value == 0, "0"
    if not ok:
        ctx.fail(
            "L2.fill_value",
            pointer(array.meta_path, "fill_value"),
            f"fill_value must be {want}, got {value!r}",
        )


def _per_chunk(ctx: Context, array: ArrayDoc, ndim: int) -> None:
    """Sharding layout and inner codecs of a per-chunk array (spec §9.0)."""
    ctx.mark("L2.sharding_layout")
    for problem in layout.sharding_problems(array.doc, array.shape, ndim):
        ctx.fail("L2.sharding_layout", pointer(array.meta_path, "codecs"), problem)
    codecs = layout.inner_codecs(array.doc)
    if codecs is None:
        return
    where = pointer(array.meta_path, "codecs", 0, "configuration", "codecs")
    if array.role in BLOB_ROLES:
        ctx.mark("L2.blob_codecs")
        if not layout.is_blob_chain(codecs):
            ctx.fail("L2.blob_codecs", where, f"blob arrays use the codecs [bytes], got {codecs!r}")
    elif array.dtype is not None:
        ctx.mark("L2.inner_codecs_default")
        if not layout.is_default_chain(codecs, array.dtype.itemsize):
            ctx.fail(
                "L2.inner_codecs_default",
                where,
                "inner codecs differ from the default [bytes, blosc lz4 level 5 bitshuffle]",
            )


def _grid_shape(ctx: Context, arrays: list[ArrayDoc], ndim: int) -> None:
    grid = ctx.facts.grid_shape
    if grid is None:
        return
    ctx.mark("L2.grid_shape_consistent")
    for array in arrays:
        if array.role not in PER_CHUNK_ROLES and array.role != VERTEX_COUNTS:
            continue
        if array.shape is not None and array.shape[:ndim] != grid:
            ctx.fail(
                "L2.grid_shape_consistent",
                pointer(array.meta_path, "shape"),
                f"leading dimensions {list(array.shape[:ndim])} differ from the grid shape "
                f"{list(grid)} computed from the bounding box",
            )


def _names(ctx: Context, level: int) -> None:
    ctx.mark("L2.attribute_name")
    for family in ATTRIBUTE_FAMILIES:
        for name in ctx.children(f"{level}/{family}"):
            if name != "zarr.json" and not is_valid_name(name):
                ctx.fail(
                    "L2.attribute_name",
                    f"{level}/{family}/{name}",
                    f"{name!r} breaks the name rule of spec §9.4",
                )


def _reserved(ctx: Context, arrays: list[ArrayDoc]) -> None:
    kind = ctx.facts.kind
    if kind is None:
        return
    ctx.mark("L2.attribute_reserved")
    for array in arrays:
        family = array.path.split("/")[1]
        rule = _RESERVED.get((family, array.name))
        if rule is None:
            continue
        kinds, dtype_kinds = rule
        if kind not in kinds:
            if array.name in _KIND_EXCLUSIVE:
                ctx.fail(
                    "L2.attribute_reserved",
                    array.meta_path,
                    f"{family}/{array.name} is reserved for {', '.join(sorted(kinds))} stores",
                )
        elif array.dtype is not None and array.dtype.kind not in dtype_kinds:
            ctx.fail(
                "L2.attribute_reserved",
                array.meta_path,
                f"{family}/{array.name} must have an "
                f"{'integer' if 'i' in dtype_kinds else 'float'} dtype, got {array.dtype}",
            )


# -- per role -----------------------------------------------------------------------------


def _role_meta(ctx: Context, array: ArrayDoc, ndim: int, level: int) -> None:
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
        return _groupings_problem(array)
    if role == CROSS_CHUNK_LINKS:
        attrs = array.attributes()
        if dtype != np.int64 or len(shape) != 2 or shape[1] != 2:
            return f"must be int64 of shape (n_links, 2), got {dtype} {list(shape)}"
        if attrs.get("num_links") != shape[0] or attrs.get("level_delta") != 0:
            return f"num_links must be {shape[0]} and level_delta 0"
        return ""
    count = _object_count(ctx, level) if role == "object_attribute" else _groups(ctx, level)
    return _global_attribute_problem(array, count)


def _vertices_meta(ctx: Context, vertices: ArrayDoc | None, ndim: int, level: int) -> None:
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
    assert array.shape is not None and array.dtype is not None
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
    assert array.shape is not None and array.dtype is not None
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
        k is None or not isinstance(names, list) or len(names) != k
        or not all(isinstance(n, str) for n in names)
    ):
        return f"channel_names must be a list of K = {k} strings"
    return ""


def _links_problem(ctx: Context, array: ArrayDoc, ndim: int) -> str:
    assert array.shape is not None and array.dtype is not None
    width = 3 if ctx.facts.kind == "mesh" else 2
    attrs = array.attributes()
    if array.dtype not in (np.int32, np.int64) or len(array.shape) != ndim + 2:
        return f"links/0 must be int32 or int64 with {ndim + 2} dimensions"
    if array.shape[-1] != width or attrs.get("link_width") != width:
        return f"last dimension and link_width must be {width}"
    if attrs.get("level_delta") != 0:
        return "level_delta must be 0"
    return ""


def _groupings_problem(array: ArrayDoc) -> str:
    assert array.shape is not None and array.dtype is not None
    shape, attrs = array.shape, array.attributes()
    if array.dtype != np.int64 or len(shape) != 2 or shape[0] < 1 or shape[1] < 1:
        return f"groupings must be int64 of shape (n_groups >= 1, M >= 1), got {list(shape)}"
    if attrs.get("num_groups") != shape[0]:
        return f"num_groups must be {shape[0]}"
    names = attrs.get("group_names")
    if names is not None and (
        not isinstance(names, list) or len(names) != shape[0]
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


def _object_index(ctx: Context, level: int, ndim: int) -> None:
    if ctx.facts.kind not in OBJECT_KINDS:
        return
    group = ctx.node(f"{level}/{OBJECT_INDEX}")
    if not group.is_group:
        return
    ctx.mark("L2.zv_array_tag", "L2.object_index_meta")
    attrs = group.attributes()
    problem = _tag_problem(OBJECT_INDEX, OBJECT_INDEX, attrs)
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
    return ""


def _gid_capacity(ctx: Context, level: int, vertices: ArrayDoc | None) -> None:
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
