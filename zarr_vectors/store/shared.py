"""Stores that several processes write at once: what a worker opens to reach the same store.

A parallel write's workers write chunk files straight into the destination the coordinator
opened (each worker its own keys). That needs a store every process reaches: a local
directory (on a file system the workers share) or a remote object store. A memory store
lives in one process and a zip file cannot take concurrent writers, so both are refused.
"""

from __future__ import annotations

import os

from zarr.abc.store import Store
from zarr.storage import LocalStore, MemoryStore, ZipStore

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.store.io import StoreIO, StoreLike, local_destination, local_root

__all__ = ["SharedLocation", "check_shareable", "open_shared", "shared_location"]

SharedLocation = str | Store
"""A local directory path, or a (picklable) store object every worker can open."""


def check_shareable(store: StoreLike) -> None:
    """Refuse, before any work, a destination other processes cannot write into.

    Raises
    ------
    InvalidInputError
        For a ``.zip`` path, a ``ZipStore`` or an in-memory store.
    """
    path = local_destination(store)
    if path is not None and path.suffix == ".zip":
        raise InvalidInputError(
            f"{path}: workers cannot write into one zip file at once; write a directory "
            "store in parallel, then zip it"
        )
    if isinstance(store, ZipStore):
        raise InvalidInputError(
            "workers cannot write into one ZipStore at once; write a directory store in "
            "parallel, then zip it"
        )
    if isinstance(store, MemoryStore):
        raise InvalidInputError(
            "an in-memory store lives in one process, so workers cannot write into it; "
            "give a directory path or a shared (object) store"
        )


def shared_location(io: StoreIO) -> SharedLocation:
    """What a worker opens to write into the store ``io`` writes (see :func:`open_shared`).

    Raises
    ------
    InvalidInputError
        For a store other processes cannot write into (:func:`check_shareable`).
    """
    check_shareable(io.store)
    root = local_root(io.store)
    return os.fspath(root) if root is not None else io.store


def open_shared(location: SharedLocation) -> StoreIO:
    """Open, in a worker, the store a coordinator described with :func:`shared_location`."""
    if isinstance(location, str):
        return StoreIO(LocalStore(location))
    return StoreIO(location)
