"""Atomic commit of a local write, and the leftovers of an interrupted one (issue 34).

A local write is built in a hidden sibling of its destination (``.NAME.zv-writing-*``) and
moved in by one system call, so a write killed at any moment leaves the old store or the
new one at the destination, never neither:

- a fresh write (nothing, or an empty directory, at the destination) is moved in by one
  ``rename``;
- a write replacing a store swaps the two directories with Linux's
  ``renameat2(RENAME_EXCHANGE)``, then removes the old store from the sibling's name.
  Where that call is missing (other systems, old kernels, file systems without it), a
  commit record (``.NAME.zv-commit``) names the two directories before the old one is
  moved aside (``.NAME.zv-replaced-*``) and the new one moved in; :func:`recover` (called
  when a reader finds no store at a path) finishes or undoes a commit that was cut short.

What an interrupted write leaves (staging and retired directories, spill directories,
commit records) is listed by :func:`leftovers` and removed by the next write to the same
destination (:func:`remove_leftovers`). A directory still in use by a running write holds
an advisory lock (:func:`hold`) and is never taken for a leftover.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import shlex
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard

__all__ = [
    "LEFTOVER_KINDS",
    "commit_fresh",
    "commit_replacement",
    "describe_leftovers",
    "exchange_supported",
    "hold",
    "is_held",
    "leftovers",
    "recover",
    "release",
    "remove_leftovers",
    "sibling",
]

LEFTOVER_KINDS = ("writing-", "replaced-", "spill-", "commit")
"""What follows ``.NAME.zv-`` in the name of a sibling an interrupted write can leave."""

step_hook: Callable[[str], None] | None = None
"""Called with the name of each commit step as it is reached (tests kill a writer there).

Steps: ``"cleaned"`` (leftovers removed, nothing staged), ``"staging"`` (the staging
directory exists, empty), ``"staged"`` (the new store is complete in it), then for a fresh
write ``"moved"``; for a replacement ``"exchanged"`` (the swap is done), or on the fallback
``"recorded"``, ``"retired"`` (old store moved aside), ``"moved"``; and ``"committed"``
last (the old store removed).
"""

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _load_renameat2() -> Callable[..., int] | None:
    """libc's ``renameat2``, or None where the C library lacks it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.renameat2
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


_renameat2 = _load_renameat2()


def step(name: str) -> None:
    """Report that commit step ``name`` is reached (see :data:`step_hook`)."""
    if step_hook is not None:
        step_hook(name)


def sibling(path: Path, kind: str, suffix: str = "") -> Path:
    """A fresh hidden sibling of ``path`` of the given kind (``"writing"``, ``"replaced"``)."""
    return path.with_name(f".{path.name}.zv-{kind}-{uuid.uuid4().hex[:8]}{suffix}")


def _record_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.zv-commit")


def exchange_supported() -> bool:
    """True when ``renameat2(RENAME_EXCHANGE)`` is available from the C library."""
    return _renameat2 is not None


def _exchange(a: Path, b: Path) -> bool:
    """Swap directories ``a`` and ``b`` atomically; False when the system cannot."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # not on this kernel or file system: the commit record is used
    raise OSError(code, os.strerror(code), os.fspath(a), None, os.fspath(b))


def commit_fresh(staging: Path, path: Path) -> None:
    """Move a complete new store from ``staging`` to ``path`` (missing or an empty directory).

    Raises
    ------
    OSError
        When ``path`` has been filled meanwhile (``ENOTEMPTY``, ``EEXIST``); ``staging`` is
        left for the caller to remove.
    """
    step("staged")
    os.rename(staging, path)
    step("moved")
    step("committed")


def commit_replacement(staging: Path, path: Path) -> None:
    """Swap a complete new store from ``staging`` with the store at ``path``, then remove
    the old one; at every moment one of the two stores is at ``path``."""
    step("staged")
    if _exchange(staging, path):
        step("exchanged")
        shutil.rmtree(staging, ignore_errors=True)
        step("committed")
        return
    retired = sibling(path, "replaced")
    record = _record_path(path)
    _write_record(record, {"new": staging.name, "old": retired.name})
    step("recorded")
    os.rename(path, retired)
    step("retired")
    os.rename(staging, path)
    step("moved")
    record.unlink(missing_ok=True)
    shutil.rmtree(retired, ignore_errors=True)
    step("committed")


def _write_record(record: Path, doc: dict[str, str]) -> None:
    """Write the commit record durably (its content then its name)."""
    partial = record.with_name(record.name + ".tmp")
    with partial.open("w", encoding="utf-8") as fh:
        json.dump(doc, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(partial, record)


def recover(path: Path) -> bool:
    """Finish or undo a fallback commit cut short at ``path``; True when a store was put back.

    A commit record is written only once the new store is complete, so with the destination
    missing the new store is moved in (rolled forward), or, if it is gone, the old one moved
    back. With the destination present the record is stale and removed.
    """
    record = _record_path(path)
    try:
        doc = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    moved = False
    if not os.path.lexists(path) and isinstance(doc, dict):
        for name in (doc.get("new"), doc.get("old")):
            if _is_sibling_name(name, path) and path.with_name(name).is_dir():
                os.rename(path.with_name(name), path)
                moved = True
                break
    record.unlink(missing_ok=True)
    return moved


def _is_sibling_name(name: object, path: Path) -> TypeGuard[str]:
    """Whether a commit record's ``name`` is a staging or retired sibling of ``path`` (a
    damaged record must not move any other directory)."""
    head = f".{path.name}.zv-"
    return (
        isinstance(name, str)
        and "/" not in name
        and name.startswith(head)
        and name[len(head) :].startswith(("writing-", "replaced-"))
    )


def leftovers(path: Path) -> list[Path]:
    """Siblings of ``path`` left by interrupted writes (not those of a running write)."""
    parent = path.parent
    head = f".{path.name}.zv-"
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    found = [
        parent / n
        for n in sorted(names)
        if n.startswith(head) and n[len(head) :].startswith(LEFTOVER_KINDS)
    ]
    return [p for p in found if not is_held(p)]


def describe_leftovers(path: Path) -> str | None:
    """A sentence naming the leftovers beside ``path`` and how to clear them, or None."""
    found = leftovers(path)
    if not found:
        return None
    names = ", ".join(p.name for p in found[:3]) + (", ..." if len(found) > 3 else "")
    command = " ".join(shlex.quote(os.fspath(p)) for p in found)
    return (
        f"an interrupted write left {len(found)} hidden sibling(s) beside {path.name} in "
        f"{path.parent} ({names}); the next write or append to {path.name} removes them, "
        f"or remove them with: rm -rf {command}"
    )


def remove_leftovers(path: Path) -> None:
    """Finish an interrupted fallback commit, then delete every leftover beside ``path``."""
    recover(path)
    for leftover in leftovers(path):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
    step("cleaned")


_held: dict[Path, int] = {}


def hold(directory: Path) -> None:
    """Take an advisory lock on ``directory`` for as long as this process uses it, so no
    other write takes it for a leftover."""
    fd = os.open(directory, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _held[directory] = fd


def release(directory: Path) -> None:
    """Drop the lock :func:`hold` took on ``directory`` (nothing if none)."""
    fd = _held.pop(directory, None)
    if fd is not None:
        os.close(fd)


def is_held(directory: Path) -> bool:
    """True when a running write (of any process) holds ``directory``."""
    if directory in _held:
        return True
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    return False
