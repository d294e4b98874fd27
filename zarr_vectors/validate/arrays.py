"""The array nodes of a level, with their role and parsed ``zarr.json`` (spec §9).

Arrays are grouped by *role* (``vertices``, ``attribute``, ``links``...). This module holds
the role tables shared by the L2 array checks and by L3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.format.jsonutil import as_int_list
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.names import (
    ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    FRAGMENT_RECORDS,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ATTRIBUTES,
    OBJECT_INDEX,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
)

__all__ = [
    "ATTRIBUTE_DTYPES",
    "BLOB_ROLES",
    "PER_CHUNK_ROLES",
    "ArrayDoc",
    "level_arrays",
    "link_attribute_arrays",
    "tag_problem",
]

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
_TAGS: dict[str, tuple[str, tuple[str, ...]]] = {
    VERTICES: ("vertices", ()),
    VERTEX_FRAGMENTS: ("vertex_fragments", ("encoding",)),
    VERTEX_COUNTS: ("vertex_counts", ()),
    "attribute": ("attribute", ("name",)),
    "fragment_attribute": ("fragment_attribute", ("name",)),
    LINKS: ("links", ("link_width", "level_delta")),
    LINK_FRAGMENTS: ("link_fragments", ("encoding",)),
    FRAGMENT_RECORDS: ("fragment_records", ("encoding",)),
    OBJECT_INDEX: ("object_index", ("num_objects", "sid_ndim")),
    "object_index_data": ("object_index_data", ()),
    "object_index_offsets": ("object_index_offsets", ()),
    "object_attribute": ("object_attribute", ("name",)),
    GROUPINGS: ("groupings", ("num_groups",)),
    "groupings_attribute": ("groupings_attribute", ("name",)),
    CROSS_CHUNK_LINKS: ("cross_chunk_links", ("num_links", "level_delta")),
}
"""Role → (``zv_array`` value, extra keys the attributes must carry) (spec §9)."""

PER_CHUNK_ROLES = frozenset(
    {
        VERTICES,
        VERTEX_FRAGMENTS,
        "attribute",
        "fragment_attribute",
        LINKS,
        LINK_FRAGMENTS,
        FRAGMENT_RECORDS,
    }
)
BLOB_ROLES = frozenset({VERTEX_FRAGMENTS, LINK_FRAGMENTS, FRAGMENT_RECORDS})
_ENCODINGS = {FRAGMENT_RECORDS: "fragment_record_v1"}


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
    shape = (
        tuple(shape_list) if shape_list is not None and min(shape_list, default=0) >= 0 else None
    )
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
        (f"{base}/{FRAGMENT_RECORDS}", FRAGMENT_RECORDS),
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
    return _arrays(ctx, wanted)


def link_attribute_arrays(ctx: Context, level: int) -> list[ArrayDoc]:
    """The ``link_attributes/<name>`` arrays of a level (role ``"link_attribute"``).

    Only L3 reads them (their rows must decode and exist for every chunk with links); they
    are not part of :func:`level_arrays`, whose roles the L2 checks cover.
    """
    family = f"{level}/{LINK_ATTRIBUTES}"
    names = [name for name in ctx.children(family) if name != "zarr.json"]
    return _arrays(ctx, [(f"{family}/{name}", "link_attribute") for name in names])


def _arrays(ctx: Context, wanted: list[tuple[str, str]]) -> list[ArrayDoc]:
    """The array nodes among ``(path, role)`` pairs, parsed."""
    ctx.prefetch([f"{path}/zarr.json" for path, _ in wanted])
    out = []
    for path, role in wanted:
        node = ctx.node(path)
        if node.is_array and node.doc is not None:
            out.append(_parse(path, role, node.doc))
    return out


def tag_problem(role: str, name: str, attrs: dict[str, Any]) -> str:
    """What is wrong with the ``zv_array`` attributes of a node of ``role`` ("" if nothing)."""
    value, extra = _TAGS[role]
    if attrs.get("zv_array") != value:
        return f"zv_array must be {value!r}, got {attrs.get('zv_array')!r}"
    missing = [k for k in extra if k not in attrs]
    if missing:
        return f"missing {', '.join(missing)}"
    if "name" in extra and attrs["name"] != name:
        return f"name must be the node name {name!r}, got {attrs['name']!r}"
    encoding = _ENCODINGS.get(role, "fragment_index_v1")
    if "encoding" in extra and attrs["encoding"] != encoding:
        return f"encoding must be {encoding!r}, got {attrs['encoding']!r}"
    return ""
