"""Neuroglancer precomputed sources computed from a store: served live or exported as files.

:class:`PrecomputedSource` is the shape every source has (``name``, ``paths()``,
``read(path)``); the server and the static export use nothing else.
"""

from __future__ import annotations

from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError, PrecomputedSource

__all__ = ["PrecomputedFileNotFoundError", "PrecomputedSource"]
