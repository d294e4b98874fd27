"""Where a write goes, and how it is committed or rolled back (spec §12).

A write into a local directory that already holds a store (with ``overwrite=True``) is
written into a hidden sibling directory first and swapped in only when complete, so a
failed or killed write leaves the existing store as it was. Other stores (memory, zip,
fsspec) cannot be swapped: they are cleared and written in place, with the root metadata
committed last so an interrupted write never opens as a complete store.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zarr.abc.store import Store
from zarr.storage import LocalStore

from zarr_vectors.errors import StoreExistsError
from zarr_vectors.store.io import StoreIO, StoreLike, local_path_of, resolve_store

__all__ = ["check_destination", "write_target"]


def _occupied(path: Path) -> bool:
    return path.exists() and (not path.is_dir() or any(path.iterdir()))


@contextmanager
def write_target(store: StoreLike, *, overwrite: bool) -> Iterator[StoreIO]:
    """Yield a :class:`StoreIO` to write a new store into, committing on success.

    Parameters
    ----------
    store
        Destination (see :func:`~zarr_vectors.store.io.resolve_store`).
    overwrite
        Replace an existing store. Without it, a destination holding any data raises
        :class:`StoreExistsError` before anything is written.

    Raises
    ------
    StoreExistsError
        When the destination holds data and ``overwrite`` is false.
    """
    if isinstance(store, str | os.PathLike) and "://" not in local_path_of(os.fspath(store)):
        path = Path(local_path_of(os.fspath(store)))
        if path.suffix != ".zip":
            with _local_target(path, overwrite=overwrite) as io:
                yield io
            return
    with _in_place_target(resolve_store(store, mode="w"), overwrite=overwrite) as io:
        yield io


def check_destination(store: StoreLike, *, overwrite: bool) -> None:
    """Refuse early a destination that holds data when ``overwrite`` is false.

    :func:`write_target` checks again when the write starts; this lets a long write (a
    streaming one) fail before it consumes its input.

    Raises
    ------
    StoreExistsError
        When the destination holds data and ``overwrite`` is false.
    """
    if overwrite:
        return
    if isinstance(store, str | os.PathLike) and "://" not in local_path_of(os.fspath(store)):
        path = Path(local_path_of(os.fspath(store)))
        if _occupied(path):
            raise StoreExistsError(
                f"{path} already exists and is not empty; pass overwrite=True to replace it"
            )
        return
    if isinstance(store, Store) and not StoreIO(store).is_empty():
        raise StoreExistsError(f"{store} already holds data; pass overwrite=True to replace it")


def _discard(path: Path, *, keep_directory: bool) -> None:
    """Remove what a failed write left at ``path`` (its contents only, if asked)."""
    if not keep_directory:
        shutil.rmtree(path, ignore_errors=True)
        return
    for child in path.iterdir() if path.is_dir() else []:
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


@contextmanager
def _local_target(path: Path, *, overwrite: bool) -> Iterator[StoreIO]:
    if _occupied(path) and not overwrite:
        raise StoreExistsError(
            f"{path} already exists and is not empty; pass overwrite=True to replace it"
        )
    replacing = _occupied(path)
    staging = path.with_name(f".{path.name}.zv-writing-{uuid.uuid4().hex[:8]}")
    destination = staging if replacing else path
    created = not path.exists()
    io = StoreIO(LocalStore(destination))
    completed = False
    try:
        yield io
        completed = True
    finally:
        if not completed:
            _discard(destination, keep_directory=not (replacing or created))
    if replacing:
        retired = path.with_name(f".{path.name}.zv-replaced-{uuid.uuid4().hex[:8]}")
        path.rename(retired)
        staging.rename(path)
        shutil.rmtree(retired, ignore_errors=True)


@contextmanager
def _in_place_target(store: Store, *, overwrite: bool) -> Iterator[StoreIO]:
    io = StoreIO(store)
    if not io.is_empty():
        if not overwrite:
            raise StoreExistsError(f"{store} already holds data; pass overwrite=True to replace it")
        io.clear()
    try:
        yield io
    finally:
        io.close()
