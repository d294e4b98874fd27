"""What identifies the version of a store a handle opened, and the error for a store
replaced under it (spec §12.4)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from zarr.abc.store import Store
from zarr.storage import MemoryStore

from zarr_vectors.errors import StoreChangedError

__all__ = ["StoreVersion", "changed_error", "place_of", "settled_stamp", "stamp_of"]

SETTLED_NS = 3_000_000_000
"""How long a file must have been unchanged (by its ``st_ctime``) before its ``stat``
vouches for its bytes: longer than the step of any file system's clock (ext4's is a
kernel tick, FAT's 2 s), so a later change cannot leave the same ``st_ctime``."""


@dataclass(frozen=True)
class StoreVersion:
    """What identifies the version of a store that a handle opened.

    Two versions differ when another writer replaced or changed the store in between:
    its root ``zarr.json`` (every commit rewrites it) or, for a local directory or a
    ``.zip`` file, the file system object at the path (a replaced store is a new directory
    or file under the same name).

    Attributes
    ----------
    place
        Local directory or zip file: ``(device, inode, ctime in ns)`` of the path, ``()``
        when nothing is there any more; None for other stores.
    root
        The bytes of the root ``zarr.json``, None when it is missing.
    stamp
        Local directory only: :func:`stamp_of` the root ``zarr.json`` that was read, when
        it had been unchanged for :data:`SETTLED_NS` before the read; a later ``lstat``
        equal to it proves the file still holds :attr:`root` (every change of a file
        gives it a new ``st_ctime``, a replaced file is a new inode). None: compare bytes.
    """

    place: tuple[int, ...] | None
    root: bytes | None
    stamp: tuple[int, ...] | None = None


def place_of(path: str | Path) -> tuple[int, ...]:
    """``(device, inode, ctime in ns)`` of ``path``, ``()`` when it does not exist."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ()
    return (st.st_dev, st.st_ino, st.st_ctime_ns)


def stamp_of(st: os.stat_result) -> tuple[int, ...]:
    """``(device, inode, size, mtime in ns, ctime in ns)`` of a file's ``stat``."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def settled_stamp(st: os.stat_result, read_from_ns: int) -> tuple[int, ...] | None:
    """:func:`stamp_of` a file read from time ``read_from_ns`` on (``time.time_ns``), when
    it was last changed :data:`SETTLED_NS` before then; else None (a change in the same
    clock step as the last one could leave its ``stat`` as it was)."""
    if st.st_ctime_ns + SETTLED_NS >= read_from_ns:
        return None
    return stamp_of(st)


def changed_error(store: Store, where: str, *, gone: bool) -> StoreChangedError:
    """The error for a store replaced, changed or removed under an open handle."""
    reopen = "zv.open(store)" if isinstance(store, MemoryStore) else f"zv.open({where!r})"
    return StoreChangedError(
        f"the store at {where} was replaced or changed{' or removed' if gone else ''} by "
        f"another writer after this handle opened it (the store is not damaged); open it "
        f"again with {reopen} to read its current version (a handle opened with "
        "refresh=True does that itself)"
    )
