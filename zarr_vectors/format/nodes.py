"""What makes a ``zarr.json`` document a Zarr v3 group or array node (Zarr v3 core spec).

Shared by the reader, which refuses a node whose metadata is not valid, and the validator,
which reports it (spec §11.2), so that both judge a node alike.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ZARR_FORMAT", "node_problem"]

ZARR_FORMAT = 3
"""The only ``zarr_format`` a Zarr Vectors store holds."""


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
