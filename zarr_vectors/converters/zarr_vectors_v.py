"""Stores of zarr-vectors 0.9.x ("layout V", spec §14) -> stores of this format.

``zv.convert(v_store, new_store)`` reads level 0 of a store written by the other
implementation of the format (``zarr-vectors`` 0.9.x on PyPI) and writes it with this
library's writers, with the same chunk shape and bin shape: every object keeps its id, its
vertices in their order (a polyline's in traversal order), its vertex and object
attributes; links keep their endpoint order (a skeleton edge is ``[child, parent]``, a
face keeps its winding), a graph its edge attributes and direction, a mesh its face
attributes; groups and group attributes are kept. The converter is found by its root
attributes, not by a suffix (a layout-V store is a directory; ``format="zarr-vectors-0.9"``
names it).

What this format cannot hold is refused unless ``lossy=True`` drops it (and says so in the
error): object attributes and groups of a point cloud (this format's point clouds carry
only a per-vertex ``object_id``), edge attributes of a skeleton (0.9.2 itself keeps them
only for the edges it stores explicitly), and the coarse levels (``1``, ``2``, ...) of a
point cloud other than those that are this format's ``"aggregate"`` levels exactly
(:mod:`zarr_vectors.converters._v_levels`; rebuild the others with ``zv.build_levels``).
The coarse levels of the object kinds are imported as they are, method ``"imported"``
(:mod:`zarr_vectors.converters._v_object_levels`).

Options
-------
Import: ``lossy`` (bool, default False).

Export (``zv.convert(store, "out.zv", format="zarr-vectors-0.9")``): level 0 of a store of
any kind (and a point cloud's ``"aggregate"`` levels), written as 0.9.2 writes it, so that
0.9.2 opens it and reads the same vertices, objects, links and attributes (spec §14.4).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zarr_vectors.converters._common import flag_option
from zarr_vectors.converters._v_export import export_v
from zarr_vectors.converters._v_level import VLevel, read_v_level
from zarr_vectors.converters._v_levels import aggregate_levels, point_levels
from zarr_vectors.converters._v_object_levels import imported_levels
from zarr_vectors.converters.converter import FileConverter, ImportTarget
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.format.version import is_layout_v
from zarr_vectors.geometry import (
    write_graph,
    write_mesh,
    write_points,
    write_polylines,
    write_skeletons,
)
from zarr_vectors.store import commit
from zarr_vectors.store.layout_v import LayoutVStore, read_root_attributes

__all__ = ["IMPORT_OPTIONS", "ZARR_VECTORS_V"]

IMPORT_OPTIONS = ("lossy",)
"""The options of the import: ``lossy`` (drop what this format cannot hold)."""

KINDS = ("point_cloud", "polyline", "streamline", "graph", "skeleton", "mesh")
LINK_ATTRIBUTES = ("graph", "mesh")
"""The kinds whose links carry attributes here (graph edges, mesh faces)."""


def _unsupported(level: VLevel) -> list[str]:
    """What of the layout-V store this format cannot hold."""
    found = []
    if level.kind == "point_cloud" and level.object_attributes:
        found.append(f"object attributes {sorted(level.object_attributes)} of a point cloud")
    if level.kind == "point_cloud" and level.groups:
        found.append(f"{len(level.groups)} groups of a point cloud")
    if level.kind not in LINK_ATTRIBUTES and level.link_attributes:
        found.append(f"edge attributes {sorted(level.link_attributes)} of a {level.kind}")
    return found


def _groups(level: VLevel) -> dict[str, Any]:
    if not level.groups:
        return {}
    out: dict[str, Any] = {"groups": {g: m.tolist() for g, m in enumerate(level.groups)}}
    if level.group_attributes:
        out["group_attributes"] = level.group_attributes
    return out


def _object_columns(level: VLevel) -> dict[str, Any]:
    out: dict[str, Any] = {"attributes": level.attributes or None}
    out["object_ids"] = level.object_ids
    if level.object_attributes:
        out["object_attributes"] = level.object_attributes
    return {**out, **_groups(level)}


def _write(level: VLevel, target: ImportTarget, shapes: dict[str, Any], levels: Any) -> None:
    """Write ``level`` with the writer of its kind: a point cloud with ``levels`` levels of
    ``"aggregate"``, objects with ``levels`` (:class:`ImportedLevels` or None)."""
    keywords = {**target.write_keywords(), **shapes, "progress": False}
    if level.kind != "point_cloud":
        keywords["levels"] = levels
    if level.kind == "point_cloud":
        write_points(
            target.store, level.positions, attributes=level.attributes or None,
            object_ids=level.vertex_objects, **keywords,
            levels=aggregate_levels(levels, level) if levels else None,
        )  # fmt: skip
    elif level.kind in ("polyline", "streamline"):
        lines = (level.positions, level.object_offsets)
        write_polylines(target.store, lines, kind=level.kind, **_object_columns(level), **keywords)
    elif level.kind == "graph":
        write_graph(
            target.store, level.positions, level.links, vertex_objects=level.vertex_objects,
            edge_attributes=level.link_attributes or None, directed=level.directed,
            **_object_columns(level), **keywords,
        )  # fmt: skip
    elif level.kind == "skeleton":
        write_skeletons(
            target.store, level.positions, edges=level.links,
            vertex_objects=level.vertex_objects, **_object_columns(level), **keywords,
        )  # fmt: skip
    else:
        write_mesh(
            target.store, level.positions, level.links, vertex_objects=level.vertex_objects,
            face_attributes=level.link_attributes or None, **_object_columns(level), **keywords,
        )  # fmt: skip


def _shapes(source: LayoutVStore, target: ImportTarget) -> dict[str, Any]:
    """Chunk and bin shape: those given, else the layout-V store's."""
    chunk = target.chunk_shape or [float(c) for c in source.root["chunk_shape"]]
    bins = source.root.get("base_bin_shape") or source.root["chunk_shape"]
    return {"chunk_shape": chunk, "bin_shape": target.bin_shape or [float(b) for b in bins]}


def _import_v(name: str, path: Path, target: ImportTarget, options: Mapping[str, Any]) -> None:
    """Write level 0 of the layout-V store ``path`` into ``target.store``.

    Raises
    ------
    InvalidInputError
        When the store holds what this format cannot hold and ``lossy`` is not set.
    """
    lossy = flag_option(options, "lossy", False)
    source = LayoutVStore(path)
    level = read_v_level(source, 0)
    shapes = _shapes(source, target)
    levels, refused = point_levels(source, level, shapes)
    dropped = _unsupported(level) + refused
    if dropped and not lossy:
        raise InvalidInputError(
            f"{path} holds {'; '.join(dropped)}, which a store of this format cannot hold; "
            "pass lossy=True (--option lossy=true) to import the rest without them"
        )
    if level.kind == "point_cloud":
        level.object_attributes, level.groups = {}, None
    if level.kind not in LINK_ATTRIBUTES:
        level.link_attributes = {}
    if level.kind != "point_cloud":
        _write(level, target, shapes, imported_levels(source, shapes))
    else:
        _write(level, target, shapes, levels)


def _export_v(
    name: str, store: VectorStore, path: Path, overwrite: bool, options: Mapping[str, Any]
) -> None:
    """Write level 0 of ``store`` as a layout-V store at ``path`` (every kind; see
    :mod:`zarr_vectors.converters._v_export`).

    The store is written in a hidden sibling and moved in (or swapped with the layout-V
    store it replaces) at the end, as every write of this library: a failed export leaves
    ``path`` as it was."""
    replaced = overwrite and path.is_dir() and is_layout_v(read_root_attributes(path))
    if path.exists() and not replaced:
        raise StoreExistsError(f'{path} exists; pass mode="w" to replace a layout-V store there')
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = commit.sibling(path, "writing")
    try:
        export_v(store, staging)
        (commit.commit_replacement if replaced else commit.commit_fresh)(staging, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # a failed export's, or the old store


ZARR_VECTORS_V = FileConverter(
    "zarr-vectors-0.9", (), None, KINDS, _import_v, _export_v, IMPORT_OPTIONS
)
"""Stores of zarr-vectors 0.9.x (layout V, spec §14): import every kind, export
:data:`EXPORT_KINDS`."""
