"""Symbolic links and special files in a local store directory (spec §12.3, §12.4).

A local store holds regular files and directories. A symbolic link is allowed only where it
resolves to a regular file or a directory inside the store's own directory (the resolved
store root); anything else — a link out of the store, a dangling link, a loop of links, a
FIFO, a socket or a device — is refused with :class:`FormatError` naming the key, never
followed, never waited on. Files are opened with ``O_NONBLOCK`` (a FIFO cannot block the
open) and ``O_NOFOLLOW`` (a link is resolved and judged first), and read only once
``fstat`` says they are regular files.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

from zarr_vectors.errors import FormatError

__all__ = [
    "LocalTree",
    "kind_of_mode",
    "link_problem",
    "link_refusal",
    "scan",
    "walk_store",
]

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
"""How a store file is opened: no waiting on a FIFO, no following a final link."""

_MISSING = (errno.ENOENT, errno.ENOTDIR)


def kind_of_mode(mode: int) -> str:
    """What a file of ``st_mode`` is, in words (``"a regular file"``, ``"a FIFO"``...)."""
    kinds = (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


def link_problem(real_root: str, path: str) -> tuple[str, str | None]:
    """Resolve the symbolic link at ``path`` and judge it against the link rule.

    Parameters
    ----------
    real_root
        The store's directory with every link resolved (``os.path.realpath``).
    path
        The link.

    Returns
    -------
    tuple
        The resolved path, and None when the link resolves to a regular file or a
        directory inside ``real_root``, else what is wrong, in words.
    """
    try:
        target = os.path.realpath(path, strict=True)
    except FileNotFoundError:
        return os.path.realpath(
            path
        ), f"a symbolic link to {os.readlink(path)!r}, which does not exist"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return path, "a loop of symbolic links"
        return path, f"a symbolic link that cannot be resolved ({exc.strerror})"
    if os.path.commonpath([real_root, target]) != real_root:
        return target, f"a symbolic link out of the store, to {target}"
    mode = os.stat(target).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return target, f"a symbolic link to {kind_of_mode(mode)} ({target})"
    return target, None


def link_refusal(key: str, problem: str) -> FormatError:
    """The error for a key of a store that is not a regular file or directory as it must be."""
    return FormatError(
        f"{key} is {problem}: a store holds regular files and directories, and symbolic "
        "links only to those inside the store (spec §12.4), so it is not read or written "
        "through; put the file or directory itself there (a copy of what the link leads "
        "to), or remove the store and write it again"
    )


class LocalTree:
    """Opens the files of one local store directory under the link rule.

    Directories on the way to a file are checked once each (one ``lstat``; a link among
    them is resolved and judged) and remembered, so a read costs a look-up in a set, an
    ``open`` and an ``fstat``.

    Parameters
    ----------
    root
        The store's directory.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self._real_root: str | None = None
        self._checked: set[str] = {""}

    @property
    def real_root(self) -> str:
        """The store's directory with every link resolved."""
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)
        return self._real_root

    def open(self, key: str) -> tuple[int, int] | None:
        """A read-only descriptor of the regular file at ``key`` and the file's size (from
        the ``fstat`` that checked it), None when it does not exist.

        Raises
        ------
        FormatError
            When ``key``, or a directory on its way, is a link that breaks the rule, or the
            key is a directory, a FIFO, a socket or a device.
        """
        self.check_directory(key.rpartition("/")[0])
        path = os.path.join(self.root, key)
        try:
            fd = os.open(path, _READ_FLAGS)
        except OSError as exc:
            if exc.errno in _MISSING:
                return None
            if exc.errno == errno.ENXIO:  # what opening a socket gives
                raise link_refusal(key, "a socket") from exc
            if exc.errno != errno.ELOOP:
                raise
            fd = self._open_link(key, path)
        return self._regular(key, fd)

    def _open_link(self, key: str, path: str) -> int:
        target, problem = link_problem(self.real_root, path)
        if problem is not None:
            raise link_refusal(key, problem)
        try:
            return os.open(target, _READ_FLAGS)
        except OSError as exc:  # replaced meanwhile: judged as found
            raise link_refusal(
                key, f"a symbolic link that cannot be opened ({exc.strerror})"
            ) from exc

    @staticmethod
    def _regular(key: str, fd: int) -> tuple[int, int]:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            return fd, st.st_size
        os.close(fd)
        raise link_refusal(key, kind_of_mode(st.st_mode))

    def check_directory(self, rel: str) -> None:
        """Check directory ``rel`` and those above it, top down (a missing one is not an
        error: the open or listing below it finds nothing).

        Raises
        ------
        FormatError
            When one of them is a link that breaks the rule.
        """
        if rel in self._checked:
            return
        parent = rel.rpartition("/")[0]
        self.check_directory(parent)
        path = os.path.join(self.root, rel)
        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            if exc.errno in _MISSING:
                return
            raise
        if stat.S_ISLNK(mode):
            _, problem = link_problem(self.real_root, path)
            if problem is not None:
                raise link_refusal(rel, problem)
        elif not stat.S_ISDIR(mode):
            return  # a file where a directory belongs: the open finds nothing below it
        self._checked.add(rel)


def walk_store(root: str) -> Iterator[tuple[str, str]]:
    """Every entry of a store directory that breaks the link rule: ``(key, problem)``."""
    return ((key, problem) for key, problem in scan(root) if problem is not None)


def scan(root: str, top: str = "") -> Iterator[tuple[str, str | None]]:
    """Every entry below directory ``top`` of a store that is not a directory, in key order.

    Yields ``(key, problem)``: problem is None for a regular file (or a link to one inside
    the store), else what breaks the link rule (a link out of the store, a dangling link, a
    FIFO...). Links to directories inside the store are followed, unless they lead back to
    a directory on their own path (a loop, reported as a problem), so the walk always ends.
    """
    real_root = os.path.realpath(root)
    top_path = os.path.join(root, top)
    if not os.path.isdir(top_path):
        return
    yield from _scan(real_root, top_path, top.rstrip("/"), (os.path.realpath(top_path),))


def _scan(
    real_root: str, path: str, rel: str, chain: tuple[str, ...]
) -> Iterator[tuple[str, str | None]]:
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        key = f"{rel}/{entry.name}" if rel else entry.name
        if entry.is_symlink():
            target, problem = link_problem(real_root, entry.path)
            if problem is None and os.path.isdir(target):
                if target in chain:
                    yield key, "a symbolic link to a directory that holds it (a loop)"
                else:
                    yield from _scan(real_root, entry.path, key, (*chain, target))
                continue
            yield key, problem
        elif entry.is_dir(follow_symlinks=False):
            real = os.path.join(chain[-1], entry.name)
            yield from _scan(real_root, entry.path, key, (*chain, real))
        elif entry.is_file(follow_symlinks=False):
            yield key, None
        else:
            yield key, kind_of_mode(entry.stat(follow_symlinks=False).st_mode)
