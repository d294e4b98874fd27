"""The public handle on a store: :func:`open` and :class:`VectorStore`."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.handle import Queries, Reads, Views, load_store
from zarr_vectors.read import DEFAULT_CACHE_BYTES
from zarr_vectors.store.io import StoreLike

__all__ = ["VectorStore", "open"]


class VectorStore(Reads, Queries, Views):
    """An open Zarr Vectors store (read only).

    Use :func:`open` to create one. A handle reads the version of the store it opened: when
    another writer commits to the store, every later data read raises
    :class:`~zarr_vectors.errors.StoreChangedError` (each read is checked after it is done,
    so no answer mixes two versions); open the store again to read its new version, or open
    it with ``refresh=True`` to have reads do that. Properties read at open (``bounds``,
    ``vertex_count``...) describe the version the handle reads.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> xyz = np.array([[1, 1, 1], [12, 3, 4], [25, 25, 25], [30, 8, 2]], dtype=np.float32)
    >>> zv.write_points(path, xyz, chunk_shape=10.0, attributes={"volume": np.arange(4.0)})
    >>> store = zv.open(path)
    >>> store.kind, store.ndim, store.vertex_count, store.chunk_count
    ('point_cloud', 3, 4, 4)
    >>> store.chunk_shape, store.grid_shape, store.attribute_names
    ((10.0, 10.0, 10.0), (4, 3, 3), ['volume'])
    >>> store.bounds
    ((1.0, 1.0, 1.0), (30.0, 25.0, 25.0))
    """


def open(
    store: StoreLike,
    *,
    storage_options: Mapping[str, Any] | None = None,
    refresh: bool = False,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
) -> VectorStore:
    """Open a Zarr Vectors store for reading.

    The handle reads the version of the store it opened (spec §12.4). When another writer
    commits to the store, every later data read raises
    :class:`~zarr_vectors.errors.StoreChangedError` (each read is checked: one ``stat`` and
    a read of the root ``zarr.json``; on S3 one small GET), never an answer that mixes two
    versions; with ``refresh=True`` the handle instead reopens the store and reads its new
    version.

    Parameters
    ----------
    store
        A local path, a ``.zip`` path, a URL (``s3://bucket/key``: credentials from the
        usual environment or configuration files) or a zarr-python 3 store.
    storage_options
        URLs only: options of the fsspec filesystem, e.g. ``{"anon": True}`` or
        ``{"endpoint_url": ..., "key": ..., "secret": ...}`` for S3.
    refresh
        Reopen the store transparently when a read finds it changed by another writer,
        and answer from its new version (the metadata properties then describe the new
        version too). Default: raise :class:`~zarr_vectors.errors.StoreChangedError`.
    cache_bytes
        Bytes of decoded row blocks the handle keeps for its next queries (default
        128 MiB), the least recently used forgotten first: a box queried again, or one
        overlapping the last, takes the blocks it shares from memory instead of reading
        and decoding them again. One cache serves every level; it holds blocks of the
        version the handle reads only (``refresh=True`` starts a new one with the new
        version). An object store's level also keeps the objects read a second time whole,
        in up to a quarter of ``cache_bytes`` more, so reading them again (the same box, or
        its objects by id) is one copy per column. 0 keeps nothing.

    Returns
    -------
    VectorStore
        The open store.

    Raises
    ------
    StoreNotFoundError
        When a local path does not exist.
    NotAZarrVectorsStoreError
        When the store is not (or not completely written as) a Zarr Vectors store: the
        message says when it looks like an interrupted write (remove it, or write it again
        with ``overwrite=True``), or when the path is a node inside a store.
    UnsupportedVersionError
        When the store's format version is newer than this library, or the store was
        written by zarr-vectors 0.x (another layout, which this library cannot read yet).
    MetadataError
        When the root metadata is malformed.
    MissingDependencyError
        When a URL needs a package that is not installed (``s3fs``: the ``s3`` extra).
    InvalidInputError
        When ``refresh`` is not a bool, or ``cache_bytes`` not an integer of at least 0.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.zeros((5, 3), dtype=np.float32), chunk_shape=10.0)
    >>> store = zv.open(path)
    >>> store.kind, store.vertex_count
    ('point_cloud', 5)
    >>> zv.open(path.with_name("missing.zarr"))
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.StoreNotFoundError: ...
    """
    if not isinstance(refresh, bool):
        raise InvalidInputError(f"refresh must be True or False, got {refresh!r}")
    if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, int | np.integer):
        raise InvalidInputError(f"cache_bytes must be an integer, got {cache_bytes!r}")
    if cache_bytes < 0:
        raise InvalidInputError(f"cache_bytes must be at least 0 (0: no cache), got {cache_bytes}")
    where = os.fspath(store) if isinstance(store, str | Path) else str(store)
    io, root, version, paths = load_store(store, where, storage_options)
    reopen = functools.partial(load_store, store, where, storage_options) if refresh else None
    return VectorStore(
        io, root, where, version, reopen=reopen, paths=paths, cache_bytes=int(cache_bytes)
    )
