"""Neuroglancer precomputed sources computed from a store: served live or exported as files.

:class:`PrecomputedSource` is the shape every source has (``name``, ``paths()``,
``read(path)``); the server and the static export use nothing else. :func:`sources` gives
the sources a store has.
"""

from __future__ import annotations

from zarr_vectors.dataset import VectorStore
from zarr_vectors.precomputed.annotations import PointAnnotations
from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError, PrecomputedSource

__all__ = ["PointAnnotations", "PrecomputedFileNotFoundError", "PrecomputedSource", "sources"]


def sources(store: VectorStore) -> dict[str, PrecomputedSource]:
    """The precomputed sources of a store, by name (their folder under the root).

    A point cloud with vertices has ``annotations`` (points); an empty store has none.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed import sources
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1, 1], [7, 7, 7]], chunk_shape=5.0)
    >>> list(sources(zv.open(path)))
    ['annotations']
    """
    found: dict[str, PrecomputedSource] = {}
    if store.kind == "point_cloud" and store.vertex_count > 0:
        found["annotations"] = PointAnnotations(store)
    return found
