"""Level 1 checks: store, node existence and node types, JSON parsing (spec §11.2)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from zarr_vectors.errors import MetadataError
from zarr_vectors.format.codecs import FRAGMENT_RECORDS_VERSION
from zarr_vectors.format.jsonutil import is_int, is_number, pointer
from zarr_vectors.format.kinds import KINDS, GeometryKind, geometry_kind
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE
from zarr_vectors.format.version import (
    FOREIGN_ROOT_KEY,
    foreign_layout,
    is_plain_zarr,
    parse_version,
)
from zarr_vectors.store.commit import leftovers
from zarr_vectors.store.destination import normalized_destination
from zarr_vectors.store.io import StoreLike, local_destination, local_root
from zarr_vectors.store.links import walk_store
from zarr_vectors.validate import object_chunks, object_order
from zarr_vectors.validate.checks import severity_of
from zarr_vectors.validate.context import STORE_ERRORS, Context
from zarr_vectors.validate.names import (
    ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    FRAGMENT_RECORDS,
    GEOMETRY_TYPES,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    LEVEL_CHILDREN,
    LEVEL_NAME,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ATTRIBUTES,
    OBJECT_INDEX,
    OBJECT_KINDS,
    OBJECT_ONLY_NODES,
    SPATIAL_DIMS,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.validate.report import ValidationReport

__all__ = ["interrupted_writes", "run"]

REQUIRED_ROOT_KEYS = (
    "zarr_vectors_version",
    "geometry_type",
    "spatial_dims",
    "chunk_shape",
    "base_bin_shape",
    "chunk_grid_origin",
    "multiscales",
)
_RECORDS_VERSION = parse_version(FRAGMENT_RECORDS_VERSION)
_ROOT_FILES = frozenset({"zarr.json", ".zattrs", "metadata.json"})
_REQUIRED_ARRAYS = (
    (VERTICES, "L1.vertices_array"),
    (VERTEX_FRAGMENTS, "L1.vertex_fragments_array"),
    (VERTEX_COUNTS, "L1.vertex_counts_array"),
)
_OBJECT_NODES = (
    (LINKS, "group"),
    (f"{LINKS}/0", "array"),
    (LINK_FRAGMENTS, "array"),
    (OBJECT_INDEX, "group"),
    (f"{OBJECT_INDEX}/data", "array"),
    (f"{OBJECT_INDEX}/offsets", "array"),
)


def run(ctx: Context) -> None:
    """Run every L1 check that applies to the store (spec §11.2)."""
    if not _store_exists(ctx) or _foreign_layout(ctx):
        return
    _interrupted_writes(ctx)
    _file_types(ctx)
    attrs = _root_documents(ctx)
    if attrs is not None:
        _root_keys(ctx, attrs)
    _read_levels(ctx, attrs or {})
    for level in ctx.facts.levels:
        _level(ctx, str(level))
    object_chunks.check_structure(ctx)
    object_order.check_structure(ctx)
    _root_children(ctx)


def interrupted_writes(report: ValidationReport, store: StoreLike) -> None:
    """Warn of the hidden siblings an interrupted write left beside a missing local store.

    (For a store that exists, :func:`run` checks them with the other L1 checks.)
    """
    path = local_destination(store)
    if path is None or path.suffix == ".zip":
        return
    found = leftovers(normalized_destination(path))
    if found:
        report.checks_run.append("L1.interrupted_write")
    for leftover in found:
        report.add(
            "L1.interrupted_write",
            severity_of("L1.interrupted_write"),
            f"../{leftover.name}",
            _leftover_message(leftover),
        )


def _interrupted_writes(ctx: Context) -> None:
    """Warn of the hidden siblings an interrupted write left beside a local store.

    They are not part of the store, but take disk space (up to a store's worth) until the
    next write or append to it removes them (or the user does).
    """
    root = local_root(ctx.io.store)
    if root is None:
        return
    ctx.mark("L1.interrupted_write")
    for leftover in leftovers(normalized_destination(root)):
        ctx.fail("L1.interrupted_write", f"../{leftover.name}", _leftover_message(leftover))


def _file_types(ctx: Context) -> None:
    """Report every entry of a local store that breaks the link rule (spec §12.4): a link
    out of the store, a dangling link or a loop (``L1.symlink``), a FIFO, socket or device
    (``L1.special_file``). Readers refuse them; none is opened here, so nothing can block."""
    root = local_root(ctx.io.store)
    if root is None:
        return
    ctx.mark("L1.symlink")
    ctx.mark("L1.special_file")
    for key, problem in walk_store(os.fspath(root)):
        check = "L1.symlink" if os.path.islink(os.path.join(root, key)) else "L1.special_file"
        ctx.fail(check, key, f"{key} is {problem}; {_FILE_RULE}")


_FILE_RULE = (
    "a store holds regular files and directories, and symbolic links only to those inside "
    "the store: readers refuse it; put the file or directory itself there (a copy of what "
    "the link leads to), or remove the store and write it again"
)


def _leftover_message(leftover: Path) -> str:
    return (
        f"an interrupted write left {leftover.name} beside the store; the next write or "
        'append to the store removes it (e.g. zv.write_points(..., mode="w")), or '
        f"remove it by hand: rm -rf {shlex.quote(os.fspath(leftover))}"
    )


_INTERRUPTED = (
    ", but level 0 holds data: it looks like an interrupted write (the root metadata is "
    'written last); remove it, or write the store again with mode="w"'
)


def _store_exists(ctx: Context) -> bool:
    ctx.mark("L1.store_exists")
    try:
        empty = ctx.io.is_empty()
    except STORE_ERRORS as exc:
        ctx.fail(
            "L1.store_exists", ".", f"the store cannot be opened ({type(exc).__name__}: {exc})"
        )
        return False
    if empty:
        ctx.fail("L1.store_exists", ".", "the store holds no key")
        return False
    return True


def _foreign_layout(ctx: Context) -> bool:
    """Report a store written by zarr-vectors 0.x (another layout) once; True if it is one.

    Such a store is complete but laid out differently: every other check would only
    report its differences, so none runs.
    """
    ctx.mark("L1.foreign_layout")
    ctx.prefetch(["zarr.json", ".zattrs", "metadata.json"])
    body = ctx.doc("zarr.json").obj()
    reason = foreign_layout(body.get("attributes")) if body is not None else None
    if reason is None:
        return False
    ctx.fail(
        "L1.foreign_layout",
        pointer("zarr.json", "attributes", FOREIGN_ROOT_KEY),
        f"the store was {reason}",
    )
    return True


def _root_documents(ctx: Context) -> dict[str, Any] | None:
    """Check the root documents; return the root attributes when they can be read."""
    ctx.mark("L1.root_zarr_json")
    ctx.prefetch(["zarr.json", ".zattrs", "metadata.json"])
    attrs = _root_attributes(ctx)
    ctx.facts.plain = _plain(attrs)
    if ctx.facts.plain is False:  # formats 1.0-1.2 mirror their metadata (spec §2.3)
        _mirror_documents(ctx)
    return attrs


def _plain(attrs: dict[str, Any] | None) -> bool | None:
    """Whether the root declares format 1.3 or later (spec §2.3); None when unreadable."""
    version = (attrs or {}).get("zarr_vectors_version")
    try:
        return is_plain_zarr(version) if isinstance(version, str) else None
    except MetadataError:
        return None


def _mirror_documents(ctx: Context) -> None:
    """``.zattrs`` and ``metadata.json`` of a store of format 1.0 to 1.2 (spec §2.3, §2.5)."""
    ctx.mark("L1.root_zattrs", "L1.metadata_json")
    zattrs = ctx.doc(".zattrs")
    if zattrs.obj() is None:
        ctx.fail("L1.root_zattrs", ".zattrs", f".zattrs {zattrs.describe()}")
    summary = ctx.doc("metadata.json")
    if summary.present and summary.obj() is None:
        ctx.fail("L1.metadata_json", "metadata.json", f"metadata.json {summary.describe()}")


def _root_attributes(ctx: Context) -> dict[str, Any] | None:
    """The attributes of the root ``zarr.json`` when it is a group (L1.root_zarr_json)."""
    doc = ctx.doc("zarr.json")
    body = doc.obj()
    if body is None:
        hint = _INTERRUPTED if not doc.present and ctx.node("0").exists else ""
        ctx.fail("L1.root_zarr_json", "zarr.json", f"zarr.json {doc.describe()}{hint}")
        return None
    if body.get("zarr_format") != 3 or body.get("node_type") != "group":
        ctx.fail(
            "L1.root_zarr_json",
            "zarr.json",
            f"expected zarr_format 3 and node_type 'group', got {body.get('zarr_format')!r} "
            f"and {body.get('node_type')!r}",
        )
        return None
    ctx.mark("L1.root_complete")
    attrs = body.get("attributes")
    if not isinstance(attrs, dict) or "zarr_vectors_version" not in attrs:
        ctx.fail(
            "L1.root_complete",
            pointer("zarr.json", "attributes"),
            "root attributes lack 'zarr_vectors_version': the store is incomplete (spec §2.4), "
            'as an interrupted write leaves it; remove it, or write it again with mode="w"',
        )
    return attrs if isinstance(attrs, dict) else None


def _root_keys(ctx: Context, attrs: dict[str, Any]) -> None:
    ctx.mark("L1.root_required_keys", "L1.chunk_shape", "L1.base_bin_shape")
    for key in REQUIRED_ROOT_KEYS:
        if key not in attrs:
            ctx.fail(
                "L1.root_required_keys",
                pointer("zarr.json", "attributes", key),
                f"required root key {key!r} is missing",
            )
    dims = attrs.get("spatial_dims")
    for key, check_id in (
        ("chunk_shape", "L1.chunk_shape"),
        ("base_bin_shape", "L1.base_bin_shape"),
    ):
        if key not in attrs:
            continue  # reported once, as a missing required key
        value = attrs[key]
        # An invalid spatial_dims is L2's one finding: here the list is held to its own length.
        valid = is_int(dims) and dims in SPATIAL_DIMS
        ndim = dims if valid else len(value) if isinstance(value, list) else None
        if (
            not isinstance(value, list)
            or len(value) != ndim
            or not all(is_number(v) and v > 0 for v in value)
        ):
            ctx.fail(
                check_id, pointer("zarr.json", "attributes", key), _shape_message(key, ndim, value)
            )
    kind = attrs.get("geometry_type")
    ctx.facts.kind = kind if isinstance(kind, str) and kind in GEOMETRY_TYPES else None


def _shape_message(key: str, ndim: object, value: object) -> str:
    """What is wrong with a root ``chunk_shape`` / ``base_bin_shape`` and what it must be."""
    count = f"{ndim} numbers" if is_int(ndim) else "numbers, one per spatial axis,"
    return f"{key} must be a list of {count} > 0, got {value!r}"


def _read_levels(ctx: Context, attrs: dict[str, Any]) -> None:
    """Levels to check: 0 plus every well-formed ``datasets`` path (when readable)."""
    multiscales = attrs.get("multiscales")
    first = multiscales[0] if isinstance(multiscales, list) and multiscales else None
    datasets = first.get("datasets") if isinstance(first, dict) else None
    levels = {0}
    if isinstance(datasets, list):
        ctx.facts.datasets_read = True
        for entry in datasets:
            path = entry.get("path") if isinstance(entry, dict) else None
            if isinstance(path, str) and LEVEL_NAME.fullmatch(path):
                levels.add(int(path))
    ctx.facts.levels = sorted(levels)


def _level(ctx: Context, base: str) -> None:
    ctx.mark("L1.level_group")
    group = ctx.node(base)
    if not group.is_group:
        ctx.fail("L1.level_group", f"{base}/zarr.json", f"level group {base}: {group.why}")
        if not group.exists:
            return
    if ctx.facts.plain is False:
        ctx.mark("L1.level_zattrs")
        zattrs = ctx.doc(f"{base}/.zattrs")
        if zattrs.obj() is None:
            ctx.fail("L1.level_zattrs", f"{base}/.zattrs", f"{base}/.zattrs {zattrs.describe()}")
    records = _records_level(ctx, base)
    for name, check_id in _REQUIRED_ARRAYS:
        if not (records and name == VERTEX_FRAGMENTS):
            _require_array(ctx, f"{base}/{name}", check_id)
    _fragment_records(ctx, base, records)
    _family(ctx, f"{base}/{ATTRIBUTES}", "L1.attributes_group")
    _family(ctx, f"{base}/{FRAGMENT_ATTRIBUTES}", "L1.fragment_attributes_group")
    kind = ctx.facts.kind
    if kind in OBJECT_KINDS:
        _object_nodes(ctx, base, kind)
    row = KINDS.get(kind) if isinstance(kind, str) else None
    if row is not None and not row.cross_chunk_links:
        _forbidden(ctx, base, row)
    _unknown_children(ctx, base)


def _require_array(ctx: Context, path: str, check_id: str) -> None:
    ctx.mark(check_id)
    node = ctx.node(path)
    if not node.is_array:
        ctx.fail(check_id, f"{path}/zarr.json", f"{path} must be an array node: {node.why}")


def _family(ctx: Context, path: str, check_id: str) -> None:
    """An optional group whose children must all be arrays."""
    ctx.mark(check_id)
    group = ctx.node(path)
    if not group.exists:
        return
    if not group.is_group:
        ctx.fail(check_id, path, f"{path} must be a group node: {group.why}")
    for name in ctx.children(path):
        if name == "zarr.json":
            continue
        child = ctx.node(f"{path}/{name}")
        if not child.is_array:
            ctx.fail(check_id, f"{path}/{name}", f"{path}/{name} must be an array: {child.why}")


def _records_level(ctx: Context, base: str) -> bool:
    """Whether level ``base`` keeps its fragments in ``fragment_records`` (level 0 of an
    object kind from format 1.6, spec §6.9; by the node itself when the version is unknown)."""
    if base != "0" or ctx.facts.kind not in OBJECT_KINDS:
        return False
    version = ctx.facts.version
    if version is None:
        return ctx.node(f"{base}/{FRAGMENT_RECORDS}").exists
    return version >= _RECORDS_VERSION


def _fragment_records(ctx: Context, base: str, records: bool) -> None:
    """L1.fragment_records: the record array where it belongs, and never beside the arrays
    it replaces (spec §6.9, §9.7.1)."""
    ctx.mark("L1.fragment_records")
    path = f"{base}/{FRAGMENT_RECORDS}"
    if not records:
        if ctx.node(path).exists:
            ctx.fail(
                "L1.fragment_records",
                path,
                f"{path} exists, but only level 0 of an object kind of format 1.6 or later "
                "keeps its fragments in fragment_records",
            )
        return
    _require_array(ctx, path, "L1.fragment_records")
    for name in (VERTEX_FRAGMENTS, LINK_FRAGMENTS, f"{FRAGMENT_ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}"):
        if ctx.node(f"{base}/{name}").exists:
            ctx.fail(
                "L1.fragment_records",
                f"{base}/{name}",
                f"{base}/{name} exists beside {path}, which replaces it (format 1.6)",
            )


def _object_nodes(ctx: Context, base: str, kind: str) -> None:
    ctx.mark("L1.object_nodes_required", "L1.links_children")
    records = _records_level(ctx, base)
    for name, node_type in _OBJECT_NODES:
        if records and name == LINK_FRAGMENTS:
            continue
        node = ctx.node(f"{base}/{name}")
        if node.node_type != node_type:
            why = node.why or f"it is a {node.node_type}"
            ctx.fail(
                "L1.object_nodes_required",
                f"{base}/{name}",
                f"{kind} stores need the {node_type} {base}/{name}: {why}",
            )
    for name in ctx.children(f"{base}/{LINKS}"):
        if name not in ("zarr.json", "0"):
            ctx.fail(
                "L1.links_children",
                f"{base}/{LINKS}/{name}",
                f"{base}/{LINKS} may only hold the child '0' in format 1.0, found {name!r}",
            )
    if geometry_kind(kind).cross_chunk_links:
        ctx.mark("L1.cross_chunk_links_required")
        node = ctx.node(f"{base}/{CROSS_CHUNK_LINKS}")
        if not node.is_array:
            ctx.fail(
                "L1.cross_chunk_links_required",
                f"{base}/{CROSS_CHUNK_LINKS}",
                f"{kind} stores need the array {base}/{CROSS_CHUNK_LINKS}: {node.why}",
            )
    _family(ctx, f"{base}/{OBJECT_ATTRIBUTES}", "L1.object_attributes_group")
    _groupings(ctx, base)


def _groupings(ctx: Context, base: str) -> None:
    ctx.mark("L1.groupings_nodes")
    groupings = ctx.node(f"{base}/{GROUPINGS}")
    if groupings.exists and not groupings.is_array:
        ctx.fail(
            "L1.groupings_nodes",
            f"{base}/{GROUPINGS}",
            f"{base}/{GROUPINGS} must be an array: {groupings.why}",
        )
    path = f"{base}/{GROUPINGS_ATTRIBUTES}"
    if not ctx.node(path).exists:
        return
    if not groupings.exists:
        ctx.fail("L1.groupings_nodes", path, f"{path} exists without {base}/{GROUPINGS}")
    _family(ctx, path, "L1.groupings_nodes")


def _forbidden(ctx: Context, base: str, row: GeometryKind) -> None:
    ctx.mark("L1.forbidden_nodes")
    kind = row.name
    names = (CROSS_CHUNK_LINKS,) if row.has_objects else OBJECT_ONLY_NODES
    for name in names:
        if ctx.node(f"{base}/{name}").exists:
            ctx.fail(
                "L1.forbidden_nodes",
                f"{base}/{name}",
                f"{kind} stores must not have {base}/{name}",
            )


def _unknown_children(ctx: Context, base: str) -> None:
    ctx.mark("L1.level_unknown_node")
    known = LEVEL_CHILDREN - {".zattrs"} if ctx.facts.plain else LEVEL_CHILDREN
    for name in ctx.children(base):
        if name not in known:
            ctx.fail(
                "L1.level_unknown_node",
                f"{base}/{name}",
                f"{base}/{name} is not a node of spec §2.1",
            )


def _root_children(ctx: Context) -> None:
    ctx.mark("L1.root_unknown_node")
    if ctx.facts.datasets_read:
        ctx.mark("L1.unlisted_level_group")
    listed = set(ctx.facts.levels)
    files = {"zarr.json"} if ctx.facts.plain else _ROOT_FILES
    for name in ctx.children(""):
        if name in files:
            continue
        if not LEVEL_NAME.fullmatch(name):
            ctx.fail("L1.root_unknown_node", name, f"{name!r} is not a node of spec §2.1")
        elif ctx.facts.datasets_read and int(name) not in listed:
            ctx.fail(
                "L1.unlisted_level_group",
                name,
                f"level group {name} is not listed in multiscales datasets",
            )
