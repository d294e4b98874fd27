"""Where a write goes, and how it is committed or rolled back (spec §12, issue 34).

A write replaces only a Zarr Vectors store (complete, or an incomplete one a write left) or
an empty directory (:mod:`zarr_vectors.store.destination` decides; anything else is refused
with :class:`StoreExistsError`). A write into a local directory is built in a hidden
sibling and moved in by one rename, or swapped with the store it replaces by one exchange
(:mod:`zarr_vectors.store.commit`), so a failed or killed write leaves the old store or the
new one at the destination. A ``.zip`` path is likewise written as a hidden sibling file
moved over it at the end. A zarr ``ZipStore`` object given by the caller is written through
(it is that object the caller closes). Other stores (memory, object storage such as S3
through fsspec) cannot be swapped: they are cleared and written in place, with the root
metadata committed last so an interrupted write never opens as a complete store.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zarr.storage import LocalStore, ZipStore

from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.store import commit
from zarr_vectors.store.destination import (
    Found,
    Occupant,
    check_overwrite,
    check_replaceable,
    local_occupant,
    normalized_destination,
    store_occupant,
    zip_occupant,
)
from zarr_vectors.store.io import (
    SafeLocalStore,
    StoreIO,
    StoreLike,
    local_destination,
    resolve_store,
)
from zarr_vectors.store.links import link_refusal, scan
from zarr_vectors.store.writer_lock import begin_in_place_change, check_base, writer_lock

__all__ = ["check_destination", "interrupted_write_note", "modify_target", "write_target"]

_REPLACED = (Occupant.STORE, Occupant.INCOMPLETE)


@contextmanager
def write_target(store: StoreLike, *, overwrite: bool) -> Iterator[StoreIO]:
    """Yield a :class:`StoreIO` to write a new store into, committing on success.

    Parameters
    ----------
    store
        Destination (see :func:`~zarr_vectors.store.io.resolve_store`).
    overwrite
        Replace an existing Zarr Vectors store. Only a store (or nothing, or an empty
        directory) is ever replaced.

    Raises
    ------
    StoreExistsError
        When the destination holds a store and ``overwrite`` is false, or holds anything
        else (checked before anything is written; nothing is changed).
    InvalidInputError
        When ``overwrite`` is not a bool.
    """
    overwrite = check_overwrite(overwrite)
    path = local_destination(store)
    if path is not None:
        target = _local_target if path.suffix != ".zip" else _zip_target
        with target(normalized_destination(path), _named(store), overwrite=overwrite) as io:
            yield io
        return
    if isinstance(store, ZipStore):
        with _user_zip_target(store, overwrite=overwrite) as io:
            yield io
        return
    with _in_place_target(store, overwrite=overwrite) as io:
        yield io


def check_destination(store: StoreLike, *, overwrite: bool) -> None:
    """Refuse early a destination a write must not replace (see :func:`write_target`).

    :func:`write_target` checks again when the write starts; this lets a long write (a
    streaming one) fail before it consumes its input.

    Raises
    ------
    StoreExistsError
        When the destination holds a store and ``overwrite`` is false, or anything else.
    InvalidInputError
        When ``overwrite`` is not a bool.
    """
    overwrite = check_overwrite(overwrite)
    check_replaceable(_occupant(store), _named(store), overwrite=overwrite)


def interrupted_write_note(store: StoreLike) -> str | None:
    """What an interrupted write left beside a local store and how to clear it, or None."""
    path = local_destination(store)
    if path is None:
        return None
    return commit.describe_leftovers(normalized_destination(path))


def _occupant(store: StoreLike) -> Found:
    """What ``store`` holds, found without changing it (a write-mode zip is not opened)."""
    path = local_destination(store)
    if path is not None:
        path = normalized_destination(path)
        if path.suffix == ".zip":
            return zip_occupant(path)
        commit.recover(path)  # a commit cut short is finished before the path is judged
        return local_occupant(path)
    if isinstance(store, ZipStore) and not store._is_open:
        return zip_occupant(normalized_destination(Path(store.path)))
    return store_occupant(StoreIO(resolve_store(store, mode="w")))


def _named(store: StoreLike) -> str:
    """``store`` as the caller named it, for messages."""
    if isinstance(store, str | os.PathLike):
        return os.fspath(store)
    if isinstance(store, ZipStore):
        return str(store.path)
    return str(store)


@contextmanager
def _local_target(path: Path, where: str, *, overwrite: bool) -> Iterator[StoreIO]:
    """Write a directory store in a hidden sibling of ``path``, then move or swap it in."""
    commit.recover(path)
    found = local_occupant(path)
    check_replaceable(found, where, overwrite=overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    commit.remove_leftovers(path)
    staging = commit.sibling(path, "writing")
    staging.mkdir()
    commit.hold(staging)
    io = StoreIO(LocalStore(staging), staged=True)
    try:
        commit.step("staging")
        yield io
        io.wait_for_directories()  # no directory made in the staging one once moved
        with writer_lock(path, where=where):  # not in the middle of another's commit
            if found.occupant in _REPLACED:
                commit.commit_replacement(staging, path)
            else:
                _move_in(staging, path, where)
    finally:
        io.wait_for_directories()
        commit.release(staging)
        shutil.rmtree(staging, ignore_errors=True)  # a failed write's, or the old store


def _move_in(staging: Path, path: Path, where: str) -> None:
    """Move a fresh store in; refuse if something was put at ``path`` meanwhile."""
    try:
        commit.commit_fresh(staging, path)
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            raise
        raise StoreExistsError(
            f"{where} was filled by something else while the store was written, so it is not "
            "replaced and the new store was discarded: write again to a new path"
        ) from exc


@contextmanager
def _zip_target(path: Path, where: str, *, overwrite: bool) -> Iterator[StoreIO]:
    """Write a zip file beside ``path`` and move it over ``path`` when complete."""
    check_replaceable(zip_occupant(path), where, overwrite=overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    commit.remove_leftovers(path)
    staging = commit.sibling(path, "writing", ".zip")
    staging.touch()
    commit.hold(staging)
    io = StoreIO(ZipStore(staging, mode="w"))
    try:
        commit.step("staging")
        yield io
        io.close()
        commit.step("staged")
        os.replace(staging, path)
        commit.step("committed")
    finally:
        io.close()
        commit.release(staging)
        staging.unlink(missing_ok=True)


@contextmanager
def _user_zip_target(store: ZipStore, *, overwrite: bool) -> Iterator[StoreIO]:
    """Write through the caller's ``ZipStore`` object and close it when done.

    A closed write-mode one is judged by its file before it is opened (opening truncates
    the file); an open one by its keys, and cleared when it holds a store being replaced.
    The zip is written in place, so a failed write leaves it incomplete, not as it was:
    give a ``.zip`` path instead for a write that leaves the old file on failure.
    """
    found = _occupant(store)
    check_replaceable(found, _named(store), overwrite=overwrite)
    io = StoreIO(store)
    try:
        if found.occupant in _REPLACED and (store._is_open or store._zmode != "w"):
            io.clear()  # a write-mode zip not yet open is emptied by opening it
        yield io
    finally:
        io.close()


@contextmanager
def _in_place_target(store: StoreLike, *, overwrite: bool) -> Iterator[StoreIO]:
    io = StoreIO(resolve_store(store, mode="w"))
    with writer_lock(io.store, where=_named(store)):
        found = store_occupant(io)
        check_replaceable(found, _named(store), overwrite=overwrite)
        if found.occupant in _REPLACED:
            io.clear()
        try:
            yield io
        finally:
            io.close()


@contextmanager
def modify_target(
    store: StoreLike,
    *,
    rewritten: str | tuple[str, ...],
    base: bytes | None = None,
    on_zip: str = "append to a directory store, then zip it",
) -> Iterator[tuple[StoreIO, StoreIO]]:
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
        Key prefix the caller deletes and rewrites (e.g. ``"0/vertex_counts/c/"``), or a
        tuple of them.
    base
        The root ``zarr.json`` bytes of the version the change was prepared from: the
        change is committed only onto that version (checked under the writer lock, see
        :mod:`zarr_vectors.store.writer_lock`). None: not checked.
    on_zip
        What to do instead, for the error that refuses a zip store: the caller's change
        said as advice (default: the advice for appends).

    Raises
    ------
    ConcurrentWriteError
        When another writer committed since ``base`` was read; nothing was changed.
    InvalidInputError
        For a zip file, which cannot be changed in place.
    StoreExistsError
        For a local path that is not a Zarr Vectors store directory (a symbolic link, the
        current directory...): it is not changed.
    """
    path = local_destination(store)
    if path is not None and path.suffix != ".zip":
        path = normalized_destination(path)
        with (
            writer_lock(path, where=_named(store)),
            _local_modification(path, rewritten, base, _named(store)) as pair,
        ):
            yield pair
        return
    if path is not None or isinstance(store, ZipStore):
        raise InvalidInputError(f"a zip store cannot be changed in place: {on_zip}")
    io = StoreIO(resolve_store(store, mode="w"))
    with writer_lock(io.store, where=_named(store)):
        begin_in_place_change(io, base, _named(store))
        for prefix in (rewritten,) if isinstance(rewritten, str) else rewritten:
            io.delete_many(io.list_prefix(prefix))
        yield io, io


@contextmanager
def _local_modification(
    path: Path, rewritten: str | tuple[str, ...], base: bytes | None, where: str
) -> Iterator[tuple[StoreIO, StoreIO]]:
    found = local_occupant(path)
    if found.occupant not in _REPLACED:
        check_replaceable(found, os.fspath(path), overwrite=True)
        raise StoreExistsError(f"{path} holds no Zarr Vectors store to change")
    check_base(StoreIO(LocalStore(path, read_only=True)), base, where)
    commit.remove_leftovers(path)
    staging = commit.sibling(path, "writing")
    staging.mkdir()
    commit.hold(staging)
    try:
        commit.step("staging")
        _link_tree(path, staging, rewritten)
        yield (
            StoreIO(SafeLocalStore(path, read_only=True)),
            StoreIO(LocalStore(staging), new_files=True),
        )
        commit.commit_replacement(staging, path)
    finally:
        commit.release(staging)
        shutil.rmtree(staging, ignore_errors=True)  # a failed change's, or the old store


def _link_tree(source: Path, target: Path, skipped: str | tuple[str, ...]) -> None:
    """Mirror ``source`` into ``target`` with hard links, leaving out keys under ``skipped``.

    Links inside the store are followed: what they lead to is mirrored whole under the
    link's own name (spec §12.3), so the changed store holds every file of a linked array.

    Raises
    ------
    FormatError
        When an entry breaks the link rule (a link out of the store, a dangling link, a
        loop, a FIFO...); nothing is mirrored then and the store is not changed.
    """
    keys = []
    for key, problem in scan(os.fspath(source)):
        if problem is not None:
            raise link_refusal(key, problem)
        if not key.startswith(skipped):
            keys.append(key)
    made: set[Path] = set()
    for key in keys:
        destination = target / key
        if destination.parent not in made:
            destination.parent.mkdir(parents=True, exist_ok=True)
            made.add(destination.parent)
        try:
            os.link(source / key, destination)  # a link is followed: its file is linked
        except OSError:
            shutil.copy2(source / key, destination)
