"""The files of a local store, read and written directly (no event loop): whole or in byte
ranges, several ranges of one file in one pass, atomic writes, and directory listings.
:class:`~zarr_vectors.store.io.StoreIO` uses them for a store with a local directory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from zarr_vectors.store.links import LocalTree, link_refusal, scan

__all__ = [
    "ByteRange",
    "list_local",
    "list_local_dir",
    "read_fd",
    "read_local",
    "read_local_files",
    "read_local_ranges",
    "read_local_spans",
    "write_local",
]


ByteRange = tuple[int, int] | int | None
"""``(start, stop)`` for a range, a negative int ``-n`` for the last ``n`` bytes, None for all."""


_NEW_FILE = (
    os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)


def _write_file(path: str, value: bytes) -> None:
    """Write ``value`` as the whole file ``path``: one open, the writes, one close (no file
    object, whose size query, terminal check and seek cost three more calls per file)."""
    fd = os.open(path, _NEW_FILE, 0o666)
    try:
        view = memoryview(value)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def write_local(path: Path | str, value: bytes, *, atomic: bool) -> None:
    if not atomic:
        _write_file(os.fspath(path), value)
        return
    partial = f"{os.fspath(path)}.{os.getpid()}.partial"
    _write_file(partial, value)
    os.replace(partial, path)


def read_local(tree: LocalTree, key: str, byte_range: ByteRange) -> bytes | None:
    opened = tree.open(key)  # a raw descriptor: no file object per chunk
    if opened is None:
        return None
    fd, size = opened
    try:
        return read_fd(fd, size, byte_range)
    finally:
        tree.release(key, fd)


def read_local_files(tree: LocalTree, keys: Sequence[str]) -> list[bytes | None]:
    """:func:`read_local` of every whole file at ``keys`` (None where one does not exist),
    for files never kept open (JSON documents: :meth:`LocalTree.open_now`, no look-up of
    the files kept and no call per read step)."""
    out: list[bytes | None] = []
    for key in keys:
        opened = tree.open_now(key)
        if opened is None:
            out.append(None)
            continue
        try:
            out.append(_read_all(*opened))
        finally:
            os.close(opened[0])
    return out


def read_local_ranges(
    tree: LocalTree, requests: Sequence[tuple[str, Sequence[ByteRange]]]
) -> list[list[bytes] | None]:
    """:meth:`StoreIO.get_ranges` on a local directory: each file opened once however many
    requests name it (the chunks of a shard of several chunks, spec §9.0.1), up to
    :data:`_OPEN_SPAN_FILES` files open at once."""
    files: dict[str, tuple[int, int] | None] = {}
    out: list[list[bytes] | None] = []
    try:
        for key, ranges in requests:
            if key not in files:
                if len(files) >= _OPEN_SPAN_FILES:
                    oldest = next(iter(files))
                    _release(tree, oldest, files.pop(oldest))
                files[key] = tree.open(key)
            opened = files[key]
            out.append(None if opened is None else [read_fd(*opened, r) for r in ranges])
    finally:
        for key, opened in files.items():
            _release(tree, key, opened)
    return out


def _release(tree: LocalTree, key: str, opened: tuple[int, int] | None) -> None:
    if opened is not None:
        tree.release(key, opened[0])


def read_local_spans(
    tree: LocalTree,
    keys: Sequence[str],
    spans: tuple[np.ndarray, np.ndarray, np.ndarray],
    into: memoryview,
) -> int:
    """:meth:`StoreIO.read_spans_into` on a local directory: -1, or the failing key.

    A run of spans of one file, each starting where the one before ends or at most
    :data:`_BRIDGED_GAP` bytes after it, is read by one ``preadv`` (the gaps into a scratch
    buffer, spans that follow each other into one place: :func:`_bridged_runs`). Files
    stay open while they are read (up to :data:`_OPEN_SPAN_FILES` at once), also when
    several owners name one key (the chunks of a shard of several chunks, spec §9.0.1)."""
    owners: list[int]
    starts: list[int]
    stops: list[int]
    owners, starts, stops = (a.tolist() for a in spans)
    files: dict[str, int] = {}
    try:
        for a, z, buffers in _bridged_runs(keys, owners, starts, stops, into):
            key = keys[owners[a]]
            fd = files.get(key, -1)
            if fd < 0:
                if len(files) >= _OPEN_SPAN_FILES:
                    oldest = next(iter(files))
                    tree.release(oldest, files.pop(oldest))
                opened = tree.open(key)
                if opened is None:
                    return owners[a]
                fd = files[key] = opened[0]
            if os.preadv(fd, buffers, starts[a]) != stops[z - 1] - starts[a]:
                short = _short_span(fd, (owners, starts, stops), a, z, into)
                if short >= 0:
                    return short
        return -1
    finally:
        for key, fd in files.items():
            tree.release(key, fd)


def _short_span(
    fd: int, spans: tuple[list[int], list[int], list[int]], a: int, z: int, into: memoryview
) -> int:
    """The owner of the first of spans ``a .. z - 1`` (owners, starts, stops; landing back
    to back in ``into``) that the file ``fd`` does not hold whole, each read again alone;
    -1 when none is short."""
    owners, starts, stops = spans
    pos = sum(stop - start for start, stop in zip(starts[:a], stops[:a], strict=True))
    for i in range(a, z):
        size = stops[i] - starts[i]
        if os.preadv(fd, [into[pos : pos + size]], starts[i]) != size:
            return owners[i]
        pos += size
    return -1


_OPEN_SPAN_FILES = 64
"""Files :func:`read_local_spans` keeps open at once, at most."""

_BRIDGED_GAP = 16384
"""Bytes between two spans of one file that :func:`read_local_spans` reads through (into
a scratch buffer) rather than ending one ``preadv`` and starting another: copying 16 KiB
from the page cache costs about what one more system call and its Python cost."""

_BRIDGED_SPANS = 500
"""Spans one ``preadv`` reads at most (two buffers each at most, a gap's and a place's;
Linux refuses more than 1,024)."""

_GAP_BUFFER = memoryview(bytearray(_BRIDGED_GAP))
"""Where the bytes between bridged spans are read to (and never looked at)."""


def _bridged_runs(
    keys: Sequence[str], owners: list[int], starts: list[int], stops: list[int], into: memoryview
) -> list[tuple[int, int, list[memoryview]]]:
    """Runs ``(a, z, buffers)``: spans ``a .. z-1`` of one key (``keys[owner]``, whichever
    owners name it), each starting at most :data:`_BRIDGED_GAP` bytes after the one before
    ends (never before it), at most :data:`_BRIDGED_SPANS` of them, and the buffers one
    ``preadv`` reads them into: the places in ``into`` of spans that follow each other
    (landing back to back, one buffer for all), and between them the bytes a run skips."""
    runs: list[tuple[int, int, list[memoryview]]] = []
    buffers: list[memoryview] = []
    first, pos, end, piece = 0, 0, -1, 0  # piece: where the run's last place in into starts
    before: str | None = None
    for i, (owner, start, stop) in enumerate(zip(owners, starts, stops, strict=True)):
        key, gap = keys[owner], start - end
        if key != before or not 0 <= gap <= _BRIDGED_GAP or i - first == _BRIDGED_SPANS:
            if i:
                buffers.append(into[piece:pos])
                runs.append((first, i, buffers))
            first, before, piece, buffers = i, key, pos, []
        elif gap:
            buffers += (into[piece:pos], _GAP_BUFFER[:gap])
            piece = pos
        pos += stop - start
        end = stop
    if owners:
        buffers.append(into[piece:pos])
        runs.append((first, len(owners), buffers))
    return runs


def read_fd(fd: int, size: int, byte_range: ByteRange) -> bytes:
    """Bytes ``byte_range`` of the open file ``fd`` of ``size`` bytes."""
    if byte_range is None:
        return _read_all(fd, size)
    if isinstance(byte_range, int):
        start = max(0, size + byte_range)
        return os.pread(fd, size - start, start)
    start, stop = byte_range
    if stop > size:  # at most to the file's end: a damaged index may name any range
        stop = size
    if not 0 <= start < stop:
        return b""
    return os.pread(fd, stop - start, start)


def list_local_dir(tree: LocalTree, prefix: str) -> list[str]:
    """Names of the entries of directory ``prefix`` of a store (none if it is missing).

    The entries that are directories, not links (as the listing itself says), count as
    checked (:meth:`LocalTree.check_directory`): a file in one is then opened by a plain
    ``open``, not by the call that refuses a link on its whole path.
    """
    rel = prefix.strip("/")
    tree.check_directory(rel)
    names = []
    try:
        with os.scandir(f"{tree.root}/{rel}" if rel else tree.root) as entries:
            for entry in entries:
                names.append(entry.name)
                if entry.is_dir(follow_symlinks=False):
                    tree.checked_below(rel, entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(names)


def _read_all(fd: int, size: int) -> bytes:
    data = os.pread(fd, size, 0)
    if len(data) < size:  # a short read: keep reading until the end
        parts = [data]
        while chunk := os.pread(fd, 1 << 20, sum(len(p) for p in parts)):
            parts.append(chunk)
        data = b"".join(parts)
    return data


def list_local(root: str, prefix: str) -> list[str]:
    """Keys of the files under ``root`` that start with ``prefix``, sorted.

    Links to directories inside the store are followed (spec §12.4).

    Raises
    ------
    FormatError
        When an entry under the prefix breaks the link rule (a link out of the store, a
        dangling link, a loop, a FIFO...).
    """
    head = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
    keys: list[str] = []
    for key, problem in scan(root, head):
        if not key.startswith(prefix):
            continue
        if problem is not None:
            raise link_refusal(key, problem)
        keys.append(key)
    return sorted(keys)
