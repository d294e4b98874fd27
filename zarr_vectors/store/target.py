"""Where a write goes, and how it is committed or rolled back (spec §12).

A write into a local directory that already holds a store (with ``overwrite=True``) is
written into a hidden sibling directory first and swapped in only when complete, so a
failed or killed write leaves the existing store as it was; a zip file is likewise written
as a hidden sibling file moved over it at the end. Other stores (memory, object storage
such as S3 through fsspec) cannot be swapped: they are cleared and written in place, with
the root metadata committed last so an interrupted write never opens as a complete store.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zarr.storage import LocalStore, ZipStore

from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.store.io import StoreIO, StoreLike, json_bytes, local_destination, resolve_store

__all__ = ["check_destination", "modify_target", "write_target"]


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
    path = local_destination(store)
    if path is not None and path.suffix != ".zip":
        with _local_target(path, overwrite=overwrite) as io:
            yield io
        return
    archive = _zip_file(store)
    if archive is not None:
        with _zip_target(archive, overwrite=overwrite) as io:
            yield io
        return
    with _in_place_target(store, overwrite=overwrite) as io:
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
    path = local_destination(store)
    if path is None:
        path = _zip_file(store)
    if path is not None:
        if _occupied(path):
            raise StoreExistsError(
                f"{path} already exists and is not empty; pass overwrite=True to replace it"
            )
        return
    if not StoreIO(resolve_store(store, mode="w")).is_empty():
        raise StoreExistsError(_holds_data(store))


def _holds_data(store: StoreLike) -> str:
    """The message refusing to write over ``store``, named as the caller gave it."""
    where = os.fspath(store) if isinstance(store, str | os.PathLike) else str(store)
    return f"{where} already holds data; pass overwrite=True to replace it"


def _zip_file(store: StoreLike) -> Path | None:
    """The file a zip destination names: a ``.zip`` path, or a closed write-mode ZipStore.

    Such a store is opened only to be rewritten whole (opening it truncates the file), so
    it is written as a new file swapped in at the end.
    """
    path = local_destination(store)
    if path is not None:
        return path if path.suffix == ".zip" else None
    if isinstance(store, ZipStore) and not store._is_open and store._zmode == "w":
        return Path(store.path)
    return None


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
def _zip_target(path: Path, *, overwrite: bool) -> Iterator[StoreIO]:
    """Write a zip file beside ``path`` and move it over ``path`` when complete."""
    if _occupied(path) and not overwrite:
        raise StoreExistsError(
            f"{path} already exists and is not empty; pass overwrite=True to replace it"
        )
    staging = path.with_name(f".{path.name}.zv-writing-{uuid.uuid4().hex[:8]}.zip")
    io = StoreIO(ZipStore(staging, mode="w"))
    completed = False
    try:
        yield io
        completed = True
    finally:
        io.close()
        if not completed:
            staging.unlink(missing_ok=True)
    os.replace(staging, path)


@contextmanager
def _in_place_target(store: StoreLike, *, overwrite: bool) -> Iterator[StoreIO]:
    io = StoreIO(resolve_store(store, mode="w"))
    if not io.is_empty():
        if not overwrite:
            raise StoreExistsError(_holds_data(store))
        io.clear()
    try:
        yield io
    finally:
        io.close()


@contextmanager
def modify_target(store: StoreLike, *, rewritten: str) -> Iterator[tuple[StoreIO, StoreIO]]:
    """Yield ``(source, destination)`` to change an existing store, committing on success.

    A local directory is changed in a hidden sibling that starts as hard links to every file
    of the store (copies where links are not possible) but those under the key prefix
    ``rewritten``, which the caller rewrites in full. Files are only ever replaced there,
    never written through, so the store is untouched until the sibling is swapped in: a
    failed or killed change leaves it as it was. Other stores (memory, fsspec) are changed
    in place: the root ``zarr.json`` first loses ``zarr_vectors_version`` (spec §2.4), so an
    interrupted change leaves a store that opens as incomplete, never a wrong one; the
    caller's last write restores it.

    Parameters
    ----------
    store
        An existing store (path or zarr Store).
    rewritten
        Key prefix the caller deletes and rewrites (e.g. ``"0/vertex_counts/c/"``).

    Raises
    ------
    InvalidInputError
        For a zip file, which cannot be changed in place.
    """
    path = local_destination(store)
    if path is not None and path.suffix != ".zip":
        with _local_modification(path, rewritten) as pair:
            yield pair
        return
    if path is not None or isinstance(store, ZipStore):
        raise InvalidInputError(
            "a zip store cannot be changed in place: append to a directory store, then zip it"
        )
    io = StoreIO(resolve_store(store, mode="w"))
    _uncommit(io)
    io.delete_many(io.list_prefix(rewritten))
    yield io, io


def _uncommit(io: StoreIO) -> None:
    """Rewrite the root ``zarr.json`` without ``zarr_vectors_version`` (spec §2.4)."""
    doc = io.read_json("zarr.json")
    if isinstance(doc, dict) and isinstance(doc.get("attributes"), dict):
        doc["attributes"].pop("zarr_vectors_version", None)
        io.set("zarr.json", json_bytes(doc))


@contextmanager
def _local_modification(path: Path, rewritten: str) -> Iterator[tuple[StoreIO, StoreIO]]:
    staging = path.with_name(f".{path.name}.zv-writing-{uuid.uuid4().hex[:8]}")
    completed = False
    try:
        _link_tree(path, staging, rewritten)
        yield (
            StoreIO(LocalStore(path, read_only=True)),
            StoreIO(LocalStore(staging), new_files=True),
        )
        completed = True
    finally:
        if not completed:
            shutil.rmtree(staging, ignore_errors=True)
    retired = path.with_name(f".{path.name}.zv-replaced-{uuid.uuid4().hex[:8]}")
    path.rename(retired)
    staging.rename(path)
    shutil.rmtree(retired, ignore_errors=True)


def _link_tree(source: Path, target: Path, skipped: str) -> None:
    """Mirror ``source`` into ``target`` with hard links, leaving out keys under ``skipped``."""
    for directory, _, files in os.walk(source):
        rel = Path(directory).relative_to(source)
        prefix = "" if rel == Path(".") else rel.as_posix() + "/"
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            if (prefix + name).startswith(skipped):
                continue
            try:
                os.link(Path(directory) / name, target / rel / name)
            except OSError:
                shutil.copy2(Path(directory) / name, target / rel / name)
