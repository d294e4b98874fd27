"""The ``segment_properties`` of a skeleton or mesh source: ids, object attributes, groups.

Neuroglancer lists a source's segments from its ``segment_properties/info``
(``neuroglancer_segment_properties``, inline): every id (as decimal text), each scalar
per-object attribute as a ``number`` property (finite, of a type from :func:`shown_dtype`),
and the store's groups as ``tags`` (an object is tagged with the names of the groups it
belongs to; spaces become ``_``). A store with neither gets a ``label`` of each id, so the
list always has a property to show.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from zarr_vectors.precomputed._model_space import shown_dtype

if TYPE_CHECKING:
    from zarr_vectors.dataset import VectorStore

__all__ = ["PROPERTIES_FOLDER", "PROPERTIES_INFO", "Segments", "segment_properties"]

PROPERTIES_FOLDER = "segment_properties"
"""The folder of the properties inside a source (``info`` names it)."""

PROPERTIES_INFO = f"{PROPERTIES_FOLDER}/info"
"""The path of the properties' ``info`` inside a source."""

_SPACES = re.compile(r"\s+")


def _property(name: str, values: np.ndarray) -> dict[str, Any] | None:
    """One per-object attribute as a ``number`` property, None if it cannot be shown."""
    if values.ndim != 1:
        return None
    dtype = shown_dtype(values.dtype)
    if dtype is None:
        return None
    shown = values.astype(dtype)
    if dtype.kind == "f" and not np.all(np.isfinite(shown)):
        return None
    return {"id": name, "type": "number", "data_type": dtype.name, "values": shown.tolist()}


def _object_properties(store: VectorStore, order: np.ndarray) -> list[dict[str, Any]]:
    """Each per-object attribute Neuroglancer can show, rows in ``order``."""
    found = []
    for name in store.object_attribute_names:
        shown = _property(name, np.asarray(store.object_attribute(name))[order])
        if shown is not None:
            found.append(shown)
    return found


def _tags(store: VectorStore, ids: np.ndarray) -> dict[str, Any] | None:
    """The groups as a ``tags`` property of the sorted ``ids``, None without groups."""
    groups = store.groups
    if not groups:
        return None
    names = [_SPACES.sub("_", str(name)).lstrip("#") for name in groups]
    tagged: list[list[int]] = [[] for _ in ids]
    for tag, members in enumerate(groups.values()):
        rows = np.searchsorted(ids, members)
        for row, member in zip(rows, members, strict=True):
            if row < len(ids) and ids[row] == member:
                tagged[row].append(tag)
    return {"id": "tags", "type": "tags", "tags": names, "values": tagged}


def segment_properties(store: VectorStore) -> tuple[np.ndarray, dict[str, Any]]:
    """The sorted non-negative object ids of ``store`` and its ``segment_properties/info``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed._segment_properties import segment_properties
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> lines = [np.array([[0, 0], [5, 5.0]]), np.array([[9, 9], [1, 1.0]])]
    >>> zv.write_polylines(path, lines, chunk_shape=10.0, object_ids=[12, 3],
    ...                    object_attributes={"length": [7.0, 11.5]})
    >>> ids, info = segment_properties(zv.open(path))
    >>> info["inline"]["ids"], info["inline"]["properties"][0]["values"]
    (['3', '12'], [11.5, 7.0])
    """
    all_ids = np.asarray(store.object_ids, dtype=np.int64)
    kept = np.flatnonzero(all_ids >= 0)
    order = kept[np.argsort(all_ids[kept], kind="stable")]
    ids = all_ids[order]
    properties = _object_properties(store, order)
    tags = _tags(store, ids)
    if tags is not None:
        properties.append(tags)
    if not properties:
        labels = [str(int(i)) for i in ids]
        properties.append({"id": "label", "type": "label", "values": labels})
    inline = {"ids": [str(int(i)) for i in ids], "properties": properties}
    return ids, {"@type": "neuroglancer_segment_properties", "inline": inline}


class Segments:
    """The segment ids of a store (its non-negative object ids, sorted) and their properties.

    Both are computed at first use and kept: the ids from one read of the object ids, the
    properties from one read of each per-object attribute.
    """

    def __init__(self, store: VectorStore) -> None:
        self._store = store
        self._ids: np.ndarray | None = None
        self._info: dict[str, Any] | None = None

    def ids(self) -> np.ndarray:
        """The segment ids, ascending."""
        if self._ids is None:
            ids = np.asarray(self._store.object_ids, dtype=np.int64)
            self._ids = np.sort(ids[ids >= 0])
        return self._ids

    def has(self, segment: int) -> bool:
        """Whether ``segment`` is one of the ids."""
        ids = self.ids()
        where = int(np.searchsorted(ids, segment)) if segment < 2**63 else len(ids)
        return where < len(ids) and int(ids[where]) == segment

    def info(self) -> dict[str, Any]:
        """The ``segment_properties/info`` document."""
        if self._info is None:
            self._info = segment_properties(self._store)[1]
        return self._info
