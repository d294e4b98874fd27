"""What makes a ``zarr.json`` document a Zarr v3 group or array node (Zarr v3 core spec).

Shared by the reader, which refuses a node whose metadata is not valid, and the validator,
which reports it (spec §11.2), so that both judge a node alike.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zarr_vectors.format.names import RESERVED_DTYPE_KINDS

__all__ = [
    "GID_LIMIT",
    "VERTEX_DTYPES",
    "ZARR_FORMAT",
    "node_problem",
    "reserved_dtype_problem",
    "vertices_shape_problem",
]

ZARR_FORMAT = 3
"""The only ``zarr_format`` a Zarr Vectors store holds."""

VERTEX_DTYPES = ("float32", "float64")
"""The ``data_type`` values the spec allows for ``vertices`` (spec §11.3, L2.vertices_meta)."""

GID_LIMIT = 2**63 - 1
"""Largest global vertex id, ``flat chunk * N_max + row`` (spec §9.11, L2.gid_capacity)."""


def node_problem(doc: Any, node_type: str | None = None) -> str | None:
    """Why ``doc`` is not the ``zarr.json`` of a Zarr v3 node, or None when it is.

    Parameters
    ----------
    doc
        The parsed ``zarr.json`` (None when the document is missing).
    node_type
        ``"group"`` or ``"array"`` to require that node type; None accepts either.

    Returns
    -------
    str or None
        A phrase such as ``"has zarr_format None, not 3"``; None for a valid node.
    """
    if doc is None:
        return "is missing"
    if not isinstance(doc, dict):
        return f"is not a JSON object (got {type(doc).__name__})"
    if doc.get("zarr_format") != ZARR_FORMAT:
        return f"has zarr_format {doc.get('zarr_format')!r}, not {ZARR_FORMAT}"
    found = doc.get("node_type")
    allowed = ("group", "array") if node_type is None else (node_type,)
    if found not in allowed:
        wanted = " or ".join(repr(t) for t in allowed)
        return f"has node_type {found!r}, not {wanted}"
    return None


def vertices_shape_problem(meta: dict[str, Any], ndim: int) -> str | None:
    """Why the ``vertices`` array metadata ``meta`` cannot be read as positions, or None.

    The dtype must be one of :data:`VERTEX_DTYPES`, the shape ``G_0 .. G_{D-1}, N_max, D``
    of positive integers, and global ids ``(prod G) * N_max`` must fit in int64
    (spec §11.3, L2.vertices_meta and L2.gid_capacity).
    """
    dtype = meta.get("data_type")
    if dtype not in VERTEX_DTYPES:
        return f"has data_type {dtype!r}; vertices must be one of {', '.join(VERTEX_DTYPES)}"
    shape = meta.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) != ndim + 2
        or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape)
        or shape[-1] != ndim
    ):
        return (
            f"has shape {shape!r}; vertices must have {ndim + 2} positive lengths ending in {ndim}"
        )
    if math.prod(shape[: ndim + 1]) > GID_LIMIT:
        return f"has shape {shape!r}, whose grid and N_max exceed global vertex ids (2^63 - 1)"
    return None


def reserved_dtype_problem(family: str, name: str, kind: str, data_type: Any) -> str | None:
    """Why array ``family/name`` of a ``kind`` store may not have ``data_type``, or None.

    A reserved name (spec §9.4, L2.attribute_reserved) used by its kind must have its dtype
    kind: a skeleton's ``radius`` edited to int32 was read as garbage integers.
    """
    rule = RESERVED_DTYPE_KINDS.get((family, name))
    if rule is None or kind not in rule[0]:
        return None
    try:
        dtype = np.dtype(data_type if isinstance(data_type, str) else "")
    except (TypeError, ValueError):
        return f"has data_type {data_type!r}, which is not a numeric type"
    if dtype.kind not in rule[1]:
        wanted = "an integer" if "i" in rule[1] else "a floating-point"
        return f"has data_type {data_type!r}; the reserved {family}/{name} must be {wanted} type"
    return None
