"""What identifies the version of a store a handle opened, and the error for a store
replaced under it (spec §12.4)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from zarr.abc.store import Store
from zarr.storage import MemoryStore

from zarr_vectors.errors import StoreChangedError

__all__ = ["StoreVersion", "changed_error", "place_of"]


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
    """

    place: tuple[int, ...] | None
    root: bytes | None


def place_of(path: Path) -> tuple[int, ...]:
    """``(device, inode, ctime in ns)`` of ``path``, ``()`` when it does not exist."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ()
    return (st.st_dev, st.st_ino, st.st_ctime_ns)


def changed_error(store: Store, where: str, *, gone: bool) -> StoreChangedError:
    """The error for a store replaced, changed or removed under an open handle."""
    reopen = "zv.open(store)" if isinstance(store, MemoryStore) else f"zv.open({where!r})"
    return StoreChangedError(
        f"the store at {where} was replaced or changed{' or removed' if gone else ''} by "
        f"another writer after this handle opened it (the store is not damaged); open it "
        f"again with {reopen} to read its current version (a handle opened with "
        "refresh=True does that itself)"
    )
