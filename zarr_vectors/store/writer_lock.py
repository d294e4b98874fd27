"""One writer at a time per store, and the check that a change extends the current version
(issue 40, spec §12.3).

A write that extends a store (an append) is prepared from the version it read (the *base*)
and commits only if the store is still that version: :func:`check_base` compares the root
``zarr.json`` (each commit writes a new ``commit`` id into it, spec §3.1) and refuses with
:class:`ConcurrentWriteError` otherwise, so a concurrent append is never lost silently.
The check and the commit run under :func:`writer_lock`:

- a local store (directory or ``.zip`` path, or a zarr ``LocalStore``): an advisory
  ``flock`` on the hidden sibling ``.NAME.zv-lock``, which is outside the store, so it
  survives the directory swap of a commit; the kernel drops it when its holder exits or is
  killed, so a killed writer never blocks the next one. The holder removes the file before
  it lets go (a writer that then finds its lock on a removed file takes it again on the
  new one); a killed holder's file stays until the next writer's turn, and is not a
  leftover of an interrupted write;
- any store: a lock per store within this process (threads), so two writers in one process
  take turns too;
- other processes writing to a memory or object store are not locked out: there the base
  check that starts the in-place change (:func:`begin_in_place_change`) refuses the second
  writer. On S3 it is one conditional write (``If-Match`` the ETag of the base root read in
  the same request), so two writers can never both start; elsewhere (and on S3-compatible
  servers that do not implement ``If-Match``) the root is compared, then rewritten (spec
  §12.3 describes this fallback).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zarr.abc.store import Store
from zarr.storage import FsspecStore, MemoryStore

from zarr_vectors.errors import ConcurrentWriteError
from zarr_vectors.store.destination import normalized_destination
from zarr_vectors.store.io import StoreIO, StoreLike, json_bytes, local_destination, local_root
from zarr_vectors.store.zarr_adapter import sync

__all__ = ["LOCK_TIMEOUT", "begin_in_place_change", "check_base", "lock_file", "writer_lock"]

LOCK_TIMEOUT = 3600.0
"""Seconds a writer waits for another one to finish before giving up."""

_POLL = 0.02
"""Seconds between two attempts to take a lock another process holds."""

_registry = threading.Lock()
_guards: dict[object, threading.RLock] = {}
_files: dict[Path, tuple[int, int]] = {}  # lock file -> (descriptor, depth), per process


def lock_file(path: Path) -> Path:
    """The lock file of the local store at ``path`` (normalized): ``.NAME.zv-lock``."""
    return path.with_name(f".{path.name}.zv-lock")


def _identity(store: StoreLike) -> tuple[object, Path | None]:
    """A key naming the store within this process, and its local lock file (or None)."""
    path = local_root(store) if isinstance(store, Store) else local_destination(store)
    if path is not None:
        path = normalized_destination(path)
        return ("path", path), lock_file(path)
    if isinstance(store, MemoryStore):
        return ("memory", id(store._store_dict)), None
    if isinstance(store, FsspecStore):
        return ("fsspec", type(store.fs).__name__, store.path), None
    if isinstance(store, Store):
        return ("store", id(store)), None
    return ("url", os.fspath(store)), None


def _guard(key: object) -> threading.RLock:
    with _registry:
        return _guards.setdefault(key, threading.RLock())


@contextmanager
def writer_lock(
    store: StoreLike, *, timeout: float = LOCK_TIMEOUT, where: str | None = None
) -> Iterator[None]:
    """Hold the writer lock of ``store`` (re-entrant within a thread).

    Raises
    ------
    ConcurrentWriteError
        When another writer still holds the lock after ``timeout`` seconds.
    """
    key, path = _identity(store)
    named = where or str(store)
    guard = _guard(key)
    if not guard.acquire(timeout=timeout):
        raise _busy(named, timeout, None)
    try:
        if path is None or not path.parent.is_dir():  # nothing there to write to
            yield
            return
        _take_file(path, time.monotonic() + timeout, named, timeout)
        try:
            yield
        finally:
            _drop_file(path)
    finally:
        guard.release()


def _take_file(path: Path, deadline: float, where: str, timeout: float) -> None:
    """Take (or re-enter) the ``flock`` on ``path``, waiting until ``deadline``.

    The holder removes the file before it lets go (:func:`_drop_file`), so a lock taken on a
    file no longer at ``path`` is let go and taken again on the new one.
    """
    held = _files.get(path)
    if held is not None:
        _files[path] = (held[0], held[1] + 1)
        return
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        if _try_flock(fd) and _still_at(fd, path):
            _files[path] = (fd, 1)
            return
        os.close(fd)
        if time.monotonic() >= deadline:
            raise _busy(where, timeout, path)
        time.sleep(_POLL)


def _try_flock(fd: int) -> bool:
    """Take an exclusive ``flock`` on ``fd`` without waiting; False when another holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            return False
        raise
    return True


def _still_at(fd: int, path: Path) -> bool:
    """Whether the file open as ``fd`` is still the one at ``path`` (not removed by the
    holder that let go of it)."""
    try:
        at = os.stat(path)
    except FileNotFoundError:
        return False
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (at.st_dev, at.st_ino)


def _drop_file(path: Path) -> None:
    fd, depth = _files[path]
    if depth > 1:
        _files[path] = (fd, depth - 1)
        return
    del _files[path]
    path.unlink(missing_ok=True)  # while still held: a waiting writer sees it gone
    os.close(fd)  # closing the last descriptor releases the flock


def _busy(where: str, timeout: float, path: Path | None) -> ConcurrentWriteError:
    held = f" (it holds {path})" if path is not None else ""
    return ConcurrentWriteError(
        f"another writer has been writing to {where} for over {timeout:g} s{held}, so this "
        "write was not started and the store is unchanged: wait for it to finish, then "
        "write again"
    )


def check_base(io: StoreIO, base: bytes | None, where: str) -> None:
    """Refuse a change prepared from version ``base`` (root ``zarr.json`` bytes) when the
    store now holds another version.

    Raises
    ------
    ConcurrentWriteError
        When the root ``zarr.json`` is no longer ``base``: another writer committed (or is
        committing in place) since the change read the store. Nothing was written.
    """
    if base is None or io.get("zarr.json") == base:
        return
    raise _changed(where)


def _changed(where: str) -> ConcurrentWriteError:
    return ConcurrentWriteError(
        f"another writer changed {where} after this append read it, so this append was not "
        "committed (the store holds the other writer's version, none of this append's data): "
        "append again to extend the new version"
    )


def uncommitted(raw: bytes | None) -> bytes | None:
    """The root ``zarr.json`` ``raw`` without ``zarr_vectors_version`` (spec §2.4), or None
    when it has no attributes to take it from."""
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:  # not JSON (a damaged root): left as it is
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("attributes"), dict):
        return None
    doc["attributes"].pop("zarr_vectors_version", None)
    return json_bytes(doc)


def begin_in_place_change(io: StoreIO, base: bytes | None, where: str) -> None:
    """Check that the store is still version ``base``, and rewrite its root ``zarr.json``
    without ``zarr_vectors_version`` (spec §2.4): the first write of an in-place change.

    On S3 both are one conditional ``PUT`` (``If-Match`` the ETag of the root read just
    before), so no other writer's commit can come in between; elsewhere the root is
    compared, then rewritten.

    Raises
    ------
    ConcurrentWriteError
        When the store is no longer ``base``; nothing was written.
    """
    if _s3_conditional_uncommit(io, base, where):
        return
    check_base(io, base, where)
    raw = uncommitted(io.get("zarr.json"))
    if raw is not None:
        io.set("zarr.json", raw)


def _s3_conditional_uncommit(io: StoreIO, base: bytes | None, where: str) -> bool:
    """:func:`begin_in_place_change` as one conditional write on S3; False when the store
    is not on S3 or the server does not implement conditional writes."""
    store = io.store
    if not isinstance(store, FsspecStore) or not hasattr(store.fs, "_call_s3"):
        return False
    fs = store.fs
    bucket, key, _ = fs.split_path(f"{store.path.rstrip('/')}/zarr.json")

    async def change() -> bool:
        try:
            found = await fs._call_s3("get_object", Bucket=bucket, Key=key)
        except FileNotFoundError:
            raw, etag = None, None
        else:
            raw, etag = await found["Body"].read(), found["ETag"]
            found["Body"].close()
        if base is not None and raw != base:
            raise _changed(where)
        new = uncommitted(raw)
        if new is None:
            return True
        try:
            await fs._call_s3("put_object", Bucket=bucket, Key=key, Body=new, IfMatch=etag)
        except OSError as exc:
            code = _s3_error_code(exc)
            if code == "PreconditionFailed":
                raise _changed(where) from exc
            if code in ("NotImplemented", "InvalidArgument"):
                return False  # a server without conditional writes: compare, then write
            raise
        fs.invalidate_cache(f"{bucket}/{key}")
        return True

    result: bool = sync(change())
    return result


def _s3_error_code(exc: OSError) -> str | None:
    """The S3 error code behind an error s3fs translated (``PreconditionFailed``...)."""
    response = getattr(exc.__cause__, "response", None)
    error = response.get("Error") if isinstance(response, dict) else None
    return error.get("Code") if isinstance(error, dict) else None
