"""Neuroglancer precomputed sources computed from a store: served live or exported as files.

:class:`PrecomputedSource` is the shape every source has (``name``, ``paths()``,
``read(path)``); the server and the static export use nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zarr_vectors.precomputed.meshes import MeshSource, mesh_sources
from zarr_vectors.precomputed.skeletons import SkeletonSource, skeleton_sources
from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError, PrecomputedSource

if TYPE_CHECKING:
    from zarr_vectors.dataset import VectorStore

__all__ = [
    "MeshSource",
    "PrecomputedFileNotFoundError",
    "PrecomputedSource",
    "SkeletonSource",
    "mesh_sources",
    "skeleton_sources",
    "sources",
]


def sources(store: VectorStore) -> list[PrecomputedSource]:
    """Every precomputed source ``store`` is shown as: skeletons of a line store, meshes.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed import sources
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> zv.write_polylines(path, [np.array([[0, 0], [5, 5.0]])], chunk_shape=10.0)
    >>> [source.name for source in sources(zv.open(path))]
    ['skeletons']
    """
    return [*skeleton_sources(store), *mesh_sources(store)]
