"""Symbolic links and special files in a local store directory (spec §12.3, §12.4).

A local store holds regular files and directories. A symbolic link is allowed only where it
resolves to a regular file or a directory inside the store's own directory (the resolved
store root); anything else — a link out of the store, a dangling link, a loop of links, a
FIFO, a socket or a device — is refused with :class:`FormatError` naming the key, never
followed, never waited on. Files are opened with ``O_NONBLOCK`` (a FIFO cannot block the
open) and ``O_NOFOLLOW`` (a link is resolved and judged first), and read only once
``fstat`` says they are regular files.

On Linux a file is first opened in one call that refuses any symbolic link on its whole
path (``openat2`` with ``RESOLVE_NO_SYMLINKS``, from the store's resolved directory): a
path without links is what the rule allows without a look at its directories. Only when
that call meets a link (or the system lacks it) are the directories on the way checked and
the link judged, one by one, as everywhere else.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, cast

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

_KEPT_FILES = 128
"""Files one thread keeps open at most inside :meth:`LocalTree.keeping`; later ones are
closed when released, as outside it."""


class _OpenHow(ctypes.Structure):
    """``struct open_how`` of Linux's ``openat2``."""

    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


_SYS_OPENAT2 = 437
"""``openat2``'s system call number (one number on every architecture since Linux 5.1)."""
_RESOLVE_NO_SYMLINKS = 0x04
"""``openat2``: fail with ``ELOOP`` on a symbolic link anywhere on the path."""
_AT_FDCWD = -100
_NO_OPENAT2 = (errno.ENOSYS, errno.EPERM, errno.EINVAL, errno.E2BIG, errno.EOPNOTSUPP)
"""What ``openat2`` gives where the kernel (or a sandbox) does not offer it."""
_HOW = _OpenHow(_READ_FLAGS, 0, _RESOLVE_NO_SYMLINKS)
_HOW_SIZE = ctypes.sizeof(_HOW)
_FS_ENCODING = (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def _linux_syscall() -> Callable[..., int] | None:
    """libc's ``syscall`` on Linux (``openat2`` has no Python binding), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    call.restype = ctypes.c_long
    call.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t)
    return cast("Callable[..., int]", call)


class _LinklessOpen:
    """Opens a path with no symbolic link followed anywhere on it (Linux's ``openat2``);
    switched off for the process the first time the system refuses the call."""

    def __init__(self) -> None:
        self.call = _linux_syscall()
        self.how = ctypes.addressof(_HOW)

    def __call__(self, path: str) -> int:
        """A read-only descriptor of ``path``, else ``-errno`` (``-ELOOP``: a link is on
        the way; ``-ENOSYS``: no such call here)."""
        if self.call is None:
            return -errno.ENOSYS
        encoded = path.encode(*_FS_ENCODING)  # os.fsencode, without its call
        fd: int = self.call(_SYS_OPENAT2, _AT_FDCWD, encoded, self.how, _HOW_SIZE)
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code in _NO_OPENAT2:
            self.call = None
            return -errno.ENOSYS
        return -code


_open_without_links = _LinklessOpen()


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

    Directories on the way to a file are checked once each and remembered, so a read in a
    checked directory costs a look-up in a set, an ``open`` and an ``fstat``. Inside
    :meth:`keeping` a thread's data files stay open until it ends, so a shard read twice
    by one read (its index, then its blocks) is opened once. The first
    file of a directory is opened in one call refusing a link anywhere on its path where
    the system has one (Linux's ``openat2``): when it succeeds, the directory is checked.
    Where a link is met (or there is no such call), each directory on the way is checked
    (one ``lstat``; a link among them is resolved and judged).

    Parameters
    ----------
    root
        The store's directory.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self._real_root: str | None = None
        self._checked: set[str] = {""}
        self._prefix = root  # of the paths opened without links; real_root once one is met
        self._kept: dict[int, dict[str, tuple[int, int]]] = {}  # thread -> key -> opened

    def __getstate__(self) -> dict[str, Any]:
        """A copy without the descriptors kept open (they are this process's)."""
        return {**self.__dict__, "_kept": {}}

    def keeping(self) -> _Keeping:
        """A scope (``with``) in which the data files the calling thread opens stay open
        until the outermost scope of the thread ends (at most :data:`_KEPT_FILES`); JSON
        documents are never kept, so a version check always reads the file there now.

        Callers give back each descriptor of :meth:`open` by :meth:`release`, which
        closes it unless it is kept. Other threads open and close their own files.
        """
        return _Keeping(self._kept)

    def release(self, key: str, fd: int) -> None:
        """Close ``fd`` (of :meth:`open` of ``key``) unless :meth:`keeping` keeps it."""
        kept = self._kept.get(threading.get_ident()) if self._kept else None
        if kept is None or kept.get(key, (-1,))[0] != fd:
            os.close(fd)

    @property
    def real_root(self) -> str:
        """The store's directory with every link resolved."""
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)
        return self._real_root

    def open(self, key: str) -> tuple[int, int] | None:
        """A read-only descriptor of the regular file at ``key`` and the file's size (from
        the ``fstat`` that checked it), None when it does not exist.

        Give the descriptor back by :meth:`release` (inside :meth:`keeping` it may be one
        kept open since an earlier open of ``key``: read it with ``pread`` only).

        Raises
        ------
        FormatError
            When ``key``, or a directory on its way, is a link that breaks the rule, or the
            key is a directory, a FIFO, a socket or a device.
        """
        kept = self._kept.get(threading.get_ident()) if self._kept else None
        if kept is None:
            return self.open_now(key)
        found = kept.get(key)
        if found is None:
            found = self.open_now(key)
            if found is not None and len(kept) < _KEPT_FILES and not key.endswith(".json"):
                kept[key] = found
        return found

    def open_now(self, key: str) -> tuple[int, int] | None:
        """:meth:`open`, the file opened now, never kept (:meth:`keeping`): the caller
        closes the descriptor. Every file of the tree is opened here."""
        parent = key.rpartition("/")[0]
        if parent in self._checked:  # the usual case: a plain open (any failure: judged)
            try:
                fd = os.open(f"{self.root}/{key}", _READ_FLAGS)
            except OSError:
                return self._open_judged(key)
            return self._regular(key, fd)
        fd = self._open_without_links(key)
        if fd >= 0:
            self._checked.add(parent)  # no link on the way: its directories are fine
            return self._regular(key, fd)
        if -fd in _MISSING:
            return None  # nothing there, and no link on the way to it
        if -fd == errno.ENXIO:
            raise link_refusal(key, "a socket")
        return self._open_judged(key)

    def _open_without_links(self, key: str) -> int:
        """A descriptor of ``key`` opened with no link followed on its path, else ``-errno``.

        The path starts at the store's directory as given; when a link is met there, the
        directory is resolved (:attr:`real_root`, once: the links above a store are not the
        store's business) and the open tried again from it.
        """
        fd = _open_without_links(f"{self._prefix}/{key}")
        if fd != -errno.ELOOP or self._prefix == self.real_root:
            return fd
        self._prefix = self.real_root
        return _open_without_links(f"{self._prefix}/{key}")

    def _open_judged(self, key: str) -> tuple[int, int] | None:
        """:meth:`open` with every directory on the way checked and a link judged."""
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

    def checked_below(self, rel: str, name: str) -> None:
        """Count directory ``name`` of the checked directory ``rel`` as checked: a listing of
        ``rel`` found it a directory, not a link (nothing is done when ``rel`` is not
        checked)."""
        if rel in self._checked:
            self._checked.add(f"{rel}/{name}" if rel else name)

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


class _Keeping:
    """:meth:`LocalTree.keeping`: the calling thread's kept files, by key, in ``kept``."""

    __slots__ = ("kept", "outermost")

    def __init__(self, kept: dict[int, dict[str, tuple[int, int]]]) -> None:
        self.kept = kept
        self.outermost = False

    def __enter__(self) -> None:
        me = threading.get_ident()
        if me not in self.kept:
            self.kept[me] = {}
            self.outermost = True

    def __exit__(self, *exc: object) -> None:
        if self.outermost:
            for fd, _ in self.kept.pop(threading.get_ident()).values():
                os.close(fd)


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
