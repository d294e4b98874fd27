"""Level 2 checks on array metadata: the ``zarr.json`` of every array of every level.

Spec §9 and §11.3 ("Array metadata"): checks common to all arrays live here, the shape and
dtype rules of each role in :mod:`zarr_vectors.validate.array_roles`.
"""

from __future__ import annotations

from typing import Any

from zarr_vectors.format import layout
from zarr_vectors.format.codecs import COMPRESSED_OBJECTS_VERSION, library_chains
from zarr_vectors.format.dimensions import named_array_document
from zarr_vectors.format.jsonutil import is_number, pointer
from zarr_vectors.format.names import RESERVED_DTYPE_KINDS
from zarr_vectors.format.version import FORMAT_VERSION, parse_version
from zarr_vectors.validate import array_roles
from zarr_vectors.validate.arrays import (
    BLOB_ROLES,
    PER_CHUNK_ROLES,
    ArrayDoc,
    level_arrays,
    tag_problem,
)
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.names import (
    ATTRIBUTE_FAMILIES,
    CROSS_CHUNK_LINKS,
    GROUPINGS,
    LINKS,
    VERTEX_COUNTS,
    VERTICES,
    is_valid_name,
)

__all__ = ["run"]

_FILL_MINUS_ONE = frozenset({LINKS, GROUPINGS, CROSS_CHUNK_LINKS})
_KIND_EXCLUSIVE = frozenset({"object_id"})
"""Reserved names that no other kind may use (the others are only typed in their kind)."""

_COMPRESSED = parse_version(COMPRESSED_OBJECTS_VERSION)
_NEWEST = parse_version(FORMAT_VERSION)


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
    array_roles.vertices_meta(ctx, vertices, ndim, level)
    for array in arrays:
        _tag(ctx, array)
        _fill_value(ctx, array)
        if array.role in PER_CHUNK_ROLES:
            _per_chunk(ctx, array, ndim)
        array_roles.role_meta(ctx, array, ndim, level)
    _grid_shape(ctx, arrays, ndim)
    _shard_chunks(ctx, [a for a in arrays if a.role in PER_CHUNK_ROLES], ndim)
    _names(ctx, level)
    if ctx.facts.plain:
        _dimension_names(ctx, arrays, _axis_names(ctx, ndim))
    _reserved(ctx, arrays)
    array_roles.object_index(ctx, level, ndim)
    array_roles.gid_capacity(ctx, level, vertices)


# -- common -------------------------------------------------------------------------------


def _tag(ctx: Context, array: ArrayDoc) -> None:
    ctx.mark("L2.zv_array_tag")
    problem = tag_problem(array.role, array.name, array.attributes())
    if problem:
        ctx.fail("L2.zv_array_tag", pointer(array.meta_path, "attributes"), problem)


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
    version = ctx.facts.version or _NEWEST
    text = f"{version[0]}.{version[1]}"
    if array.role in BLOB_ROLES:
        ctx.mark("L2.blob_codecs")
        compressed = version >= _COMPRESSED
        if not layout.is_blob_chain(codecs, compressed=compressed):
            allowed = (
                "[bytes, crc32c] or [bytes, blosc, crc32c]" if compressed else "[bytes, crc32c]"
            )
            ctx.fail(
                "L2.blob_codecs",
                where,
                f"blob arrays of format {text} use the codecs {allowed}, got {codecs!r}",
            )
    elif array.dtype is not None:
        ctx.mark("L2.inner_codecs_default")
        chains = library_chains(text, array.role)
        if not layout.is_default_chain(codecs, array.dtype.itemsize, chains):
            ctx.fail(
                "L2.inner_codecs_default",
                where,
                f"inner codecs differ from [bytes, blosc, crc32c] with the Blosc settings of "
                f"format {text}: one of {chains}",
            )


def _shard_chunks(ctx: Context, arrays: list[ArrayDoc], ndim: int) -> None:
    """One ``S`` for every per-chunk array of a level; ``S ≠ 1`` needs format 1.1 (§9.0.1)."""
    found = [(a, s) for a in arrays if (s := layout.shard_chunks(a.doc, ndim)) is not None]
    if not found:
        return
    first = found[0][1]
    for array, per_shard in found[1:]:
        if per_shard != first:
            ctx.fail(
                "L2.sharding_layout",
                pointer(array.meta_path, "chunk_grid"),
                f"{list(per_shard)} spatial chunks per shard, but {found[0][0].path} has "
                f"{list(first)}: every per-chunk array of a level uses the same S (§9.0.1)",
            )
    ctx.mark("L2.shard_version")
    version = ctx.facts.version
    sharded = next((a for a, s in found if any(v != 1 for v in s)), None)
    if sharded is not None and version is not None and version < (1, 1):
        ctx.fail(
            "L2.shard_version",
            pointer(sharded.meta_path, "chunk_grid"),
            f"several spatial chunks per shard need zarr_vectors_version 1.1 or later, "
            f"the store declares {version[0]}.{version[1]}",
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


def _axis_names(ctx: Context, ndim: int) -> list[str]:
    """The store's axis names (``multiscales[0].axes``), or the defaults when unreadable."""
    attrs: Any = (ctx.doc("zarr.json").obj() or {}).get("attributes")
    try:
        names = [str(axis["name"]) for axis in attrs["multiscales"][0]["axes"]]
    except (KeyError, IndexError, TypeError):
        names = []
    return names if len(names) == ndim else list("xyzw"[:ndim])


def _dimension_names(ctx: Context, arrays: list[ArrayDoc], axes: list[str]) -> None:
    """Every array of a 1.3 store names its dimensions as spec §9.0.3 says."""
    ctx.mark("L2.dimension_names")
    for array in arrays:
        if array.shape is None:
            continue
        want = named_array_document(array.path, array.doc, axes)["dimension_names"]
        got = array.doc.get("dimension_names")
        if got != want:
            ctx.fail(
                "L2.dimension_names",
                pointer(array.meta_path, "dimension_names"),
                f"dimension_names {got!r} should be {want!r} (format 1.3): xarray and other "
                "tools that need names cannot open the group; write the store again",
            )


def _reserved(ctx: Context, arrays: list[ArrayDoc]) -> None:
    kind = ctx.facts.kind
    if kind is None:
        return
    ctx.mark("L2.attribute_reserved")
    for array in arrays:
        family = array.path.split("/")[1]
        rule = RESERVED_DTYPE_KINDS.get((family, array.name))
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
