"""The parts :class:`zarr_vectors.dataset.VectorStore` is assembled from, one concern each.

Other packages import from this face only; the public handle is
:class:`zarr_vectors.VectorStore`, opened by :func:`zarr_vectors.open`.

Modules
-------
opening
    :func:`load_store`: a store's root checked and read, or a clear error.
base
    :class:`HandleBase`: the handle's state, version checks and readers, and the decorators
    that keep an answer to one version of the store.
properties
    :class:`Properties`: metadata properties, object ids, attributes and groups.
selection
    :class:`Selection`: the level (given or within a vertex budget) and region of a request.
reads
    :class:`Reads`: ``read`` and ``read_objects``.
queries
    :class:`Queries`: ``query`` and its deprecated spellings.
views
    :class:`Views`: levels, chunk counts, size, dask view, plot and summaries.
"""

from __future__ import annotations

from zarr_vectors.handle.base import HandleBase
from zarr_vectors.handle.opening import Loaded, load_store
from zarr_vectors.handle.properties import Properties
from zarr_vectors.handle.queries import Queries
from zarr_vectors.handle.reads import Reads
from zarr_vectors.handle.selection import Selection
from zarr_vectors.handle.views import Views

__all__ = [
    "load_store",
    "Loaded",
    "HandleBase",
    "Properties",
    "Selection",
    "Reads",
    "Queries",
    "Views",
]
