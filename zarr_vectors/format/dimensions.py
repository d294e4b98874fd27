"""The ``dimension_names`` of every array of a format 1.3 store (spec §9.0.3).

Zarr v3 lets an array name its dimensions; xarray needs the names to open a group, and
needs equal names to mean equal sizes within a group. Every array of a 1.3 store carries
them, built from the store's axis names and the array's path alone:

- the D spatial chunk axes of a per-chunk array and of ``vertex_counts``:
  ``chunk.<axis>`` (``chunk.x``, ``chunk.y``, ``chunk.z``), shared by every such array of a
  level, whose sizes are the level's grid shape ``G``;
- the row axis: ``row.<array>``, one per array (arrays hold different numbers of rows);
- the row-shape axes: ``component.<array>``, then ``component.<array>.1``, ...

``<array>`` is the array's node name, or its group's for ``links/0``. Node names are
identifiers without a dot (spec §9.4) and every name here holds one, so no dimension is
ever named like an array of the same group (which xarray would take as its coordinate).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from zarr_vectors.format.json_text import indented_json
from zarr_vectors.format.layout import is_sharded
from zarr_vectors.format.names import LEVEL_NAME, OBJECT_ORDER, VERTEX_COUNTS

__all__ = [
    "array_dimension_names",
    "chunk_dimension_names",
    "named_array_document",
    "named_array_json",
]


def chunk_dimension_names(axes: Sequence[str]) -> tuple[str, ...]:
    """Names of the spatial chunk axes of a store with axes ``axes``.

    Examples
    --------
    >>> chunk_dimension_names(["x", "y", "z"])
    ('chunk.x', 'chunk.y', 'chunk.z')
    """
    return tuple(f"chunk.{axis}" for axis in axes)


def array_dimension_names(
    path: str, ndim: int, axes: Sequence[str], *, per_chunk: bool
) -> tuple[str, ...]:
    """The ``dimension_names`` of the array at ``path`` (spec §9.0.3).

    Parameters
    ----------
    path
        The array's key relative to the store root, e.g. ``"0/attributes/rgb"``.
    ndim
        Its number of dimensions.
    axes
        The store's axis names (``multiscales[0].axes``), D of them.
    per_chunk
        Whether its leading D dimensions are the chunk grid (a per-chunk array of §9.0, or
        ``vertex_counts``); global arrays (§9.8 to §9.11) are not.

    Returns
    -------
    tuple of str
        ``ndim`` distinct names.

    Examples
    --------
    >>> array_dimension_names("0/vertices", 5, "xyz", per_chunk=True)
    ('chunk.x', 'chunk.y', 'chunk.z', 'row.vertices', 'component.vertices')
    >>> array_dimension_names("1/vertex_counts", 3, "xyz", per_chunk=True)
    ('chunk.x', 'chunk.y', 'chunk.z')
    >>> array_dimension_names("0/links/0", 4, "xy", per_chunk=True)
    ('chunk.x', 'chunk.y', 'row.links', 'component.links')
    >>> array_dimension_names("0/object_index/offsets", 1, "xyz", per_chunk=False)
    ('row.offsets',)
    """
    parts = path.strip("/").split("/")
    name = parts[-1]
    if LEVEL_NAME.fullmatch(name) and len(parts) > 2:  # links/0: named after its group
        name = parts[-2]
    lead = chunk_dimension_names(axes) if per_chunk else ()
    if name == VERTEX_COUNTS:
        return lead
    rest = ndim - len(lead) - 1
    components = [f"component.{name}"] + [f"component.{name}.{i}" for i in range(1, rest)]
    return (*lead, f"row.{name}", *components[: max(rest, 0)])


def named_array_document(path: str, doc: dict[str, Any], axes: Sequence[str]) -> dict[str, Any]:
    """``doc``, the ``zarr.json`` of the array at ``path``, with its 1.3 ``dimension_names``.

    Per-chunk arrays are the sharded ones (spec §9.0) and ``vertex_counts``.

    Examples
    --------
    >>> doc = {"shape": [2, 2, 16, 3], "codecs": [{"name": "sharding_indexed"}]}
    >>> named_array_document("0/vertices", doc, "xy")["dimension_names"]
    ['chunk.x', 'chunk.y', 'row.vertices', 'component.vertices']
    >>> doc = {"shape": [300, 3], "codecs": [{"name": "sharding_indexed"}]}
    >>> named_array_document("0/object_order/vertices", doc, "xy")["dimension_names"]
    ['row.vertices', 'component.vertices']
    """
    ordered = path.split("/")[1:2] == [OBJECT_ORDER]  # row sequences, not per chunk (§9.15)
    per_chunk = (is_sharded(doc) and not ordered) or path.rsplit("/", 1)[-1] == VERTEX_COUNTS
    names = array_dimension_names(path, len(doc["shape"]), axes, per_chunk=per_chunk)
    return {**doc, "dimension_names": list(names)}


def named_array_json(key: str, raw: bytes, axes: Sequence[str]) -> bytes:
    """The ``zarr.json`` document ``raw`` stored at ``key``, with the 1.3 dimension names
    when it is an array's that lacks them (serialised as zarr-python serialises it: two
    spaces of indent); any other document as it is.

    Examples
    --------
    >>> raw = b'{"node_type": "array", "shape": [4], "codecs": []}'
    >>> json.loads(named_array_json("0/object_index/data/zarr.json", raw, "xyz"))
    {'node_type': 'array', 'shape': [4], 'codecs': [], 'dimension_names': ['row.data']}
    >>> named_array_json("0/zarr.json", b'{"node_type": "group"}', "xyz")
    b'{"node_type": "group"}'
    """
    if not key.endswith("zarr.json") or b'"array"' not in raw:
        return raw
    doc = json.loads(raw)
    if doc.get("node_type") != "array" or not isinstance(doc.get("shape"), list):
        return raw
    named = named_array_document(key.removesuffix("zarr.json").rstrip("/"), doc, axes)
    if named == doc:
        return raw
    return indented_json(named).encode()
