"""What a write may replace: a Zarr Vectors store, an empty directory, or nothing (issue 34).

Every write path (one-shot, streaming, parallel, converters, appends) asks
:func:`check_replaceable` before it writes, so there is one rule: a destination holding a
complete Zarr Vectors store, or an incomplete one a write of this library left (its root
metadata not yet committed, spec §2.4), is replaced only with ``overwrite=True``; a missing
path or an empty directory is written; anything else (a directory holding other files, a
plain Zarr hierarchy, a file, a symbolic link, the current directory or one of its parents)
is refused with :class:`StoreExistsError` and left untouched.
"""

from __future__ import annotations

import enum
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from zarr.storage import LocalStore, ZipStore

from zarr_vectors.errors import InvalidInputError, MetadataError, StoreExistsError
from zarr_vectors.format.names import LEVEL_NAME, VERTEX_COUNTS, VERTEX_FRAGMENTS, VERTICES
from zarr_vectors.store.io import StoreIO

__all__ = [
    "Occupant",
    "Found",
    "check_overwrite",
    "check_replaceable",
    "local_occupant",
    "normalized_destination",
    "store_occupant",
    "zip_occupant",
]

_WORKING_DIRECTORY = "the current working directory or one of its parents"
_ROOT_DOCUMENTS = frozenset({"zarr.json", ".zattrs", "metadata.json"})
_LEVEL_ARRAYS = frozenset({VERTICES, VERTEX_FRAGMENTS, VERTEX_COUNTS})


class Occupant(enum.Enum):
    """What a destination holds, as far as replacing it is concerned."""

    MISSING = "missing"
    EMPTY = "empty"
    STORE = "store"
    INCOMPLETE = "incomplete"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Found:
    """What is at a destination: its :class:`Occupant` and, for ``OTHER``, what it is."""

    occupant: Occupant
    what: str = ""


def check_overwrite(overwrite: object) -> bool:
    """Return ``overwrite`` when it is a bool.

    Raises
    ------
    InvalidInputError
        For anything else (``"no"``, ``0``, ``None``...): a truthy string must not replace
        a store.
    """
    if not isinstance(overwrite, bool):
        raise InvalidInputError(
            f"overwrite must be a bool, got {overwrite!r} ({type(overwrite).__name__}): pass "
            'mode="w" to replace an existing store, or leave it out'
        )
    return overwrite


def normalized_destination(path: Path) -> Path:
    """``path`` made absolute with ``.`` and ``..`` resolved lexically (symlinks are kept).

    A destination needs a name of its own, since a write is staged in a hidden sibling
    named after it; ``Path(".")`` has none.
    """
    return Path(os.path.abspath(path))


def local_occupant(path: Path) -> Found:
    """What the local path ``path`` (normalized, a directory destination) holds."""
    if os.path.islink(path):
        target = os.readlink(path)
        dangling = "" if path.exists() else ", which does not exist"
        return Found(Occupant.OTHER, f"a symbolic link (to {target}{dangling})")
    if _holds_working_directory(path):
        return Found(Occupant.OTHER, _WORKING_DIRECTORY)
    if not path.exists():
        return Found(Occupant.MISSING)
    if not path.is_dir():
        return Found(Occupant.OTHER, "a file")
    return store_occupant(StoreIO(LocalStore(path, read_only=True)))


def zip_occupant(path: Path) -> Found:
    """What the local ``.zip`` path ``path`` (normalized) holds."""
    if os.path.islink(path):
        return Found(Occupant.OTHER, f"a symbolic link (to {os.readlink(path)})")
    if not path.exists():
        return Found(Occupant.MISSING)
    if path.is_dir():
        return Found(Occupant.OTHER, "a directory")
    if path.stat().st_size == 0:
        return Found(Occupant.EMPTY)
    io = StoreIO(ZipStore(path, mode="r"))
    try:
        return store_occupant(io)
    except (OSError, zipfile.BadZipFile):
        return Found(Occupant.OTHER, "a file that is not a zip archive")
    finally:
        io.close()


def store_occupant(io: StoreIO) -> Found:
    """What the store behind ``io`` holds, judged by its keys and root metadata."""
    names = io.list_dir("")
    if not names:
        return Found(Occupant.EMPTY)
    try:
        root = io.read_json("zarr.json")
    except MetadataError:
        return Found(Occupant.OTHER, "a Zarr hierarchy whose root zarr.json is not JSON")
    attrs = root.get("attributes") if isinstance(root, dict) else None
    if isinstance(attrs, dict) and "zarr_vectors_version" in attrs:
        return Found(Occupant.STORE)
    if isinstance(attrs, dict) and {"geometry_type", "chunk_shape"} <= attrs.keys():
        return Found(Occupant.INCOMPLETE)  # an in-place change not yet committed (§2.4)
    if root is None and _uncommitted_tree(io, names):
        return Found(Occupant.INCOMPLETE)
    if root is not None:
        return Found(Occupant.OTHER, "a Zarr hierarchy that is not a Zarr Vectors store")
    shown = ", ".join(repr(n) for n in names[:3]) + (", ..." if len(names) > 3 else "")
    return Found(Occupant.OTHER, f"a directory holding other files ({shown})")


def _uncommitted_tree(io: StoreIO, names: list[str]) -> bool:
    """True for the keys of a first write stopped before its root ``zarr.json``: only root
    documents and level groups, level ``0`` holding one of the level arrays."""
    if not all(n in _ROOT_DOCUMENTS or LEVEL_NAME.fullmatch(n) for n in names):
        return False
    return "0" in names and bool(_LEVEL_ARRAYS & set(io.list_dir("0")))


def _holds_working_directory(path: Path) -> bool:
    """True when ``path`` is the current working directory or one of its parents."""
    try:
        here = Path(os.getcwd())
    except FileNotFoundError:  # the working directory was removed
        return False
    return path == here or path in here.parents


def check_replaceable(found: Found, where: str, *, overwrite: bool) -> None:
    """Refuse a destination a write must not replace.

    Parameters
    ----------
    found
        What the destination holds.
    where
        The destination as the caller named it (for the message).
    overwrite
        Whether replacing an existing store was asked for.

    Raises
    ------
    StoreExistsError
        When the destination holds something other than a Zarr Vectors store (always), or a
        store without ``overwrite``.
    """
    if found.occupant in (Occupant.MISSING, Occupant.EMPTY):
        return
    if found.what == _WORKING_DIRECTORY:
        raise StoreExistsError(
            f"{where} is {_WORKING_DIRECTORY}, which a write never replaces (with or without "
            'mode="w"), and nothing was written: write to a new directory inside it, '
            "such as ./mydata"
        )
    if found.occupant is Occupant.OTHER:
        raise StoreExistsError(
            f"{where} is {found.what}, not a Zarr Vectors store, so it is not replaced (with or "
            'without mode="w") and nothing was written: write to a new path or an '
            "empty directory, or remove it yourself if it should go"
        )
    if not overwrite:
        kind = (
            "a Zarr Vectors store"
            if found.occupant is Occupant.STORE
            else ("an incomplete Zarr Vectors store (an interrupted write)")
        )
        how = 'pass mode="w" to replace it'
        raise StoreExistsError(f"{where} already holds {kind}; {how}")
