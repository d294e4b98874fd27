"""Make a store plain Zarr v3 at its commit (format 1.3, spec §2.3, §9.0.3).

A 1.3 store names the dimensions of every array and holds no document that is not a Zarr v3
node (no ``.zattrs`` mirror, no ``metadata.json``), so xarray opens its groups and a
zarr-python walk raises no warning. :func:`make_plain_zarr` brings the store there just
before its root ``zarr.json`` is written: it names the arrays written without names (the
writers make their ``zarr.json`` documents without them) and removes the documents of an
older store that a change raised to 1.3. Arrays already named are not rewritten.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from zarr_vectors.format.dimensions import named_array_document, named_array_json
from zarr_vectors.store.io import StoreIO

__all__ = ["MIRROR_DOCUMENTS", "array_nodes", "make_plain_zarr"]

MIRROR_DOCUMENTS = (".zattrs", "metadata.json")
"""Root documents of stores of format 1.0 to 1.2 that are not Zarr v3 nodes (spec §2.3);
a level group of those formats has a ``.zattrs`` too."""


def array_nodes(io: StoreIO, groups: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """Every array node under the groups ``groups`` (keys such as ``"0"``), with its
    ``zarr.json``, found by listing group nodes only (never an array's chunks).

    Examples
    --------
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> memory = MemoryStore()
    >>> zv.write_points(memory, np.zeros((3, 2)), chunk_shape=4.0)
    >>> sorted(path for path, _ in array_nodes(StoreIO(memory), ["0"]))
    ['0/vertex_counts', '0/vertex_fragments', '0/vertices']
    """
    found = []
    frontier = list(groups)
    while frontier:
        _, listings = io.read_metadata([], frontier)
        children = [
            f"{group}/{name}"
            for group, names in zip(frontier, listings, strict=True)
            for name in names
            if name not in ("zarr.json", *MIRROR_DOCUMENTS)
        ]
        docs, _ = io.read_metadata([f"{child}/zarr.json" for child in children])
        frontier = []
        for child, doc in zip(children, docs, strict=True):
            kind = doc.get("node_type") if isinstance(doc, dict) else None
            if kind == "array":
                found.append((child, doc))
            elif kind == "group":
                frontier.append(child)
    return found


def make_plain_zarr(io: StoreIO, levels: Sequence[int], axes: Sequence[str]) -> None:
    """Name the dimensions of every array of ``levels`` and delete the mirror documents.

    Call it before the root ``zarr.json`` of a 1.3 store is written (spec §2.4).

    Examples
    --------
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> memory = MemoryStore()
    >>> zv.write_points(memory, np.zeros((3, 2)), chunk_shape=4.0)
    >>> make_plain_zarr(StoreIO(memory), [0], "xy")  # already plain: nothing to change
    >>> StoreIO(memory).read_json("0/vertices/zarr.json")["dimension_names"]
    ['chunk.x', 'chunk.y', 'row.vertices', 'component.vertices']
    """
    groups = [str(level) for level in levels]
    _, listings = io.read_metadata([], ["", *groups])
    mirrors = [name for name in listings[0] if name in MIRROR_DOCUMENTS]
    for group, names in zip(groups, listings[1:], strict=True):
        mirrors += [f"{group}/{name}" for name in names if name in MIRROR_DOCUMENTS]
    io.delete_many(mirrors)
    changed = []
    for path, doc in array_nodes(io, groups):
        if named_array_document(path, doc, axes) != doc:
            key = f"{path}/zarr.json"
            changed.append((key, named_array_json(key, json.dumps(doc).encode(), axes)))
    io.set_many(changed)
