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
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from zarr.codecs import ZstdCodec
from zarr.errors import UnstableSpecificationWarning

from zarr_vectors.errors import NotAZarrVectorsStoreError

__all__ = ["LayoutVStore", "LayoutVWriter", "read_root_attributes"]

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


class LayoutVWriter:
    """Writes the nodes of a new layout-V store on the local file system (spec §14).

    Parameters
    ----------
    path
        The store's root directory (created; it must not hold a store already).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from zarr_vectors.store.layout_v import LayoutVStore, LayoutVWriter
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "v.zv"
    >>> out = LayoutVWriter(path)
    >>> out.group("", {"zarr_vectors": {"zv_version": "0.9.2"}})
    >>> out.cells("0/vertices", {(0, 0): b"abcd"}, (0, 0), (1, 2), {"zv_array": "vertices"})
    >>> LayoutVStore(path).cells("0/vertices")
    {(0, 0): b'abcd'}
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(os.fspath(path))

    def group(self, node: str, attributes: dict[str, Any]) -> None:
        """Write (or rewrite) the group ``node`` with ``attributes``; its children stay."""
        where = self.path / node
        where.mkdir(parents=True, exist_ok=True)
        doc = {"attributes": attributes, "zarr_format": 3, "node_type": "group"}
        (where / "zarr.json").write_text(json.dumps(doc, indent=2))

    def _create(self, node: str, **kwargs: Any) -> Any:
        with warnings.catch_warnings():  # vlen bytes: zarr's "no Zarr v3 specification"
            warnings.simplefilter("ignore", UnstableSpecificationWarning)
            return zarr.create_array(store=str(self.path / node), overwrite=True, **kwargs)

    def cells(
        self,
        node: str,
        cells: dict[tuple[int, ...], bytes],
        origin: Sequence[int],
        shape: Sequence[int],
        attributes: dict[str, Any],
        *,
        compress: bool = False,
    ) -> None:
        """Write the per-chunk array ``node``: one cell per chunk of a grid of ``shape``
        whose first chunk is ``origin`` (absolute chunk coordinates)."""
        values = np.full(tuple(shape), b"", dtype=object)
        for chunk, blob in cells.items():
            values[tuple(np.asarray(chunk) - np.asarray(origin))] = blob
        array = self._create(
            node, shape=tuple(shape), chunks=(1,) * len(shape), dtype="variable_length_bytes",
            fill_value=b"", compressors=ZstdCodec(level=0) if compress else None,
            attributes=attributes,
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnstableSpecificationWarning)
            array[...] = values

    def blobs(self, node: str, blobs: list[bytes], attributes: dict[str, Any]) -> None:
        """Write the 1-D vlen-bytes array ``node`` (one blob per row, zstd)."""
        rows = max(len(blobs), 1)
        array = self._create(
            node, shape=(len(blobs),), chunks=(min(16384, rows),),
            dtype="variable_length_bytes", fill_value=b"", compressors=ZstdCodec(level=0),
            attributes=attributes,
        )  # fmt: skip
        if blobs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UnstableSpecificationWarning)
                array[...] = np.asarray([*blobs, b""], dtype=object)[:-1]

    def plain(self, node: str, values: np.ndarray, chunk: int, attributes: dict[str, Any]) -> None:
        """Write the plain array ``node`` (first axis chunked by ``chunk`` rows, zstd)."""
        fill: Any = np.nan if values.dtype.kind == "f" else 0
        array = self._create(
            node, shape=values.shape, chunks=(chunk, *values.shape[1:]), dtype=values.dtype,
            fill_value=fill, compressors=ZstdCodec(level=0), attributes=attributes,
        )  # fmt: skip
        if values.size:
            array[...] = values
