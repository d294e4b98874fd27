"""Reading a store of layout V (zarr-vectors 0.9.x, spec §14) with zarr-python.

Layout V keeps each per-chunk array of a level as ONE Zarr v3 ``variable_length_bytes``
array whose shape is the chunk grid (one opaque byte blob per chunk, keyed by the chunk's
coordinates minus the array's ``chunk_grid_origin``), and the per-object and per-group
arrays as plain Zarr arrays. This module only fetches nodes, attributes and cells; what the
bytes mean is decoded by :mod:`zarr_vectors.format.layout_v` and the importer in
:mod:`zarr_vectors.converters.zarr_vectors_v`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from zarr_vectors.errors import NotAZarrVectorsStoreError

__all__ = ["LayoutVStore", "read_root_attributes"]

Cells = dict[tuple[int, ...], bytes]
"""Non-empty cells of a per-chunk array, by absolute chunk coordinates."""


def read_root_attributes(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The root attributes of the local Zarr v3 group at ``path``, or None if it is none.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from zarr_vectors.store.layout_v import read_root_attributes
    >>> read_root_attributes(pathlib.Path(tempfile.mkdtemp())) is None
    True
    """
    doc = Path(os.fspath(path)) / "zarr.json"
    try:
        body = json.loads(doc.read_bytes())
    except (OSError, ValueError):
        return None
    attrs = body.get("attributes") if isinstance(body, dict) else None
    return attrs if isinstance(attrs, dict) else None


class LayoutVStore:
    """A layout-V store on the local file system, opened read-only.

    Parameters
    ----------
    path
        The store's root directory.

    Raises
    ------
    NotAZarrVectorsStoreError
        When ``path`` holds no Zarr v3 group with a ``zarr_vectors`` root attribute.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from zarr_vectors.store.layout_v import LayoutVStore
    >>> LayoutVStore(pathlib.Path(tempfile.mkdtemp()))
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.NotAZarrVectorsStoreError: ... is not a zarr-vectors 0.9 store ...
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(os.fspath(path))
        attrs = read_root_attributes(self.path)
        block = None if attrs is None else attrs.get("zarr_vectors")
        if not isinstance(block, dict):
            raise NotAZarrVectorsStoreError(
                f"{self.path} is not a zarr-vectors 0.9 store (layout V): its root zarr.json "
                "has no 'zarr_vectors' attribute; give the store's root directory"
            )
        self.root: dict[str, Any] = block
        self.multiscales: list[Any] = list(attrs.get("multiscales") or []) if attrs else []

    def exists(self, node: str) -> bool:
        """Whether the node ``node`` (a path inside the store, ``"0/vertices"``) exists."""
        return (self.path / node / "zarr.json").is_file()

    def attributes(self, node: str) -> dict[str, Any]:
        """The attributes of the node ``node`` ({} when it does not exist)."""
        return read_root_attributes(self.path / node) or {}

    def members(self, node: str) -> list[str]:
        """The names of the child nodes of the group ``node``, sorted ([] when absent)."""
        where = self.path / node
        if not where.is_dir():
            return []
        return sorted(p.name for p in where.iterdir() if (p / "zarr.json").is_file())

    def cells(self, node: str) -> Cells:
        """The non-empty cells of the per-chunk (vlen-bytes grid) array ``node``."""
        if not self.exists(node):
            return {}
        array = zarr.open_array(store=str(self.path / node), mode="r")
        origin = np.asarray(array.attrs.get("chunk_grid_origin", [0] * array.ndim))
        values = np.asarray(array[...], dtype=object)
        out: Cells = {}
        for index in np.ndindex(values.shape):
            blob = values[index]
            if blob is not None and len(blob):
                out[tuple(int(i) for i in np.asarray(index) + origin)] = bytes(blob)
        return out

    def array(self, node: str) -> np.ndarray:
        """The whole of the plain (or 1-D vlen-bytes) array ``node``."""
        array = zarr.open_array(store=str(self.path / node), mode="r")
        return np.asarray(array[...])
