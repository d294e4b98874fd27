"""Temporary column files for writes larger than memory (streaming ingest, spec-free scratch).

A :class:`SpillColumns` holds one flat binary file per column under a scratch directory.
Batches of rows are appended at the end of every column at once, written by background
threads while the caller goes on (one append in flight at a time); any set of row ranges is
read back into a caller's array with positioned reads, so reading a chunk's pieces never
maps or loads the rest of a file. Rows the caller is done with are given back (their disk
space and page cache) as soon as a long stretch of an append is done with, where the file
system can punch holes (:meth:`SpillColumns.done_with`), so a write needs about the size of
the data on disk beside the store, not twice it.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import heapq
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.store.commit import hold, release
from zarr_vectors.store.destination import normalized_destination

__all__ = ["SpillColumns", "remove_scratch", "scratch_directory"]


def scratch_directory(near: Path | None, spill_dir: str | os.PathLike[str] | None) -> Path:
    """Create a fresh scratch directory for spill files.

    Parameters
    ----------
    near
        A local destination store: the directory is made beside it (same file system, which
        the user sized for the data). None for other stores.
    spill_dir
        Where to make it instead, when given; else ``near``'s parent, else the system
        temporary directory.

    Returns
    -------
    pathlib.Path
        The new, empty directory, held (:func:`~zarr_vectors.store.commit.hold`) so no
        other write takes it for a leftover; the caller removes it (:func:`remove_scratch`).
    """
    near = None if near is None else normalized_destination(near)
    if spill_dir is not None:
        parent = Path(spill_dir)
    elif near is not None:
        parent = near.parent
    else:
        parent = Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{near.name}.zv-spill-" if near is not None else "zv-spill-"
    directory = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    hold(directory)
    return directory


class SpillColumns:
    """Append-only column files of fixed row types, read back by row ranges.

    :meth:`append` hands the rows to background threads (one per column, up to
    :data:`_WRITE_THREADS`) and returns; the next :meth:`append`, :meth:`read`, :meth:`wait`
    or :meth:`close` first waits for them, so at most one batch is held for writing, and a
    write error is raised by the next of these calls.

    Parameters
    ----------
    directory
        Scratch directory (created by :func:`scratch_directory`).
    name
        File name prefix of this set of columns.
    columns
        ``(dtype, row shape)`` of every column, in order.
    """

    def __init__(
        self, directory: Path, name: str, columns: Sequence[tuple[np.dtype[Any], tuple[int, ...]]]
    ) -> None:
        self.columns = [(np.dtype(d), tuple(s)) for d, s in columns]
        self._row_sizes = [d.itemsize * math.prod(s) for d, s in self.columns]
        self.paths = [directory / f"{name}.{k}.bin" for k in range(len(self.columns))]
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC
        self._fds = [os.open(path, flags, 0o600) for path in self.paths]
        self._pool = ThreadPoolExecutor(
            min(_WRITE_THREADS, len(self.columns)) or 1, thread_name_prefix="zv-spill"
        )
        self._pending: list[Future[None]] = []
        self.rows = 0
        self._appends: list[_Append] = []
        self._releases: list[Future[None]] = []
        self._releasing = _punch_hole_function() is not None

    def _row_nbytes(self, k: int) -> int:
        return self._row_sizes[k]

    def append(self, values: Sequence[np.ndarray]) -> int:
        """Append the same number of rows to every column; return the first new row number.

        The arrays must not be changed until the next call on this object (they are written
        in the background).
        """
        self.wait()
        first = self.rows
        for k, ((dtype, shape), column) in enumerate(zip(self.columns, values, strict=True)):
            data = np.ascontiguousarray(column, dtype=dtype).reshape(-1, *shape)
            offset = first * self._row_nbytes(k)
            self._pending.append(self._pool.submit(_write_at, self._fds[k], data, offset))
        self.rows += int(values[0].shape[0]) if values else 0
        if self.rows > first:
            self._appends.append(_Append(first, self.rows))
        return first

    def wait(self) -> None:
        """Wait for the rows being written; raise the first write error."""
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def read(self, k: int, ranges: Sequence[tuple[int, int]]) -> np.ndarray:
        """Rows ``[a, b)`` of column ``k`` for each range, back to back, as a new array."""
        self.wait()
        dtype, shape = self.columns[k]
        total = sum(b - a for a, b in ranges)
        out = np.empty((total, *shape), dtype=dtype)
        view = out.reshape(-1).view(np.uint8).data
        size = self._row_nbytes(k)
        fd = self._fds[k]
        pos = 0
        for a, b in ranges:
            offset, end = a * size, pos + (b - a) * size
            while pos < end:
                got = os.preadv(fd, [view[pos:end]], offset)
                if got <= 0:
                    raise OSError(f"spill file {self.paths[k]} ends before byte {offset}")
                pos, offset = pos + got, offset + got
        return out

    def done_with(self, ranges: Sequence[tuple[int, int]]) -> None:
        """Rows ``[a, b)`` for each range will not be read again, in any column.

        Each row must be given once. Once the rows done with make a stretch of
        :data:`RELEASE_BYTES` (or the rest of an append) from the start of what an append
        still holds, that stretch is given back to the file system in a writer thread (a
        hole is punched: its disk blocks and cached pages are freed, and it would read as
        zeros). Where holes cannot be punched nothing is given back; reads are the same.
        """
        if not self._releasing:
            return
        self.wait()
        starts = [append.start for append in self._appends]
        step = self._release_rows()
        for a, b in ranges:
            while a < b:
                append = self._appends[bisect.bisect_right(starts, a) - 1]
                stop = min(b, append.end)
                stretch = append.done_with(a, stop, step)
                if stretch is not None:
                    self._releases.append(self._pool.submit(self._release, *stretch))
                a = stop

    def wait_for_releases(self) -> None:
        """Wait until the stretches given back so far are (they are punched in a writer
        thread, so reads do not wait for them)."""
        releases, self._releases = self._releases, []
        for future in releases:
            future.result()

    def _release_rows(self) -> int:
        row = sum(self._row_nbytes(k) for k in range(len(self.columns)))
        return max(1, RELEASE_BYTES // max(row, 1))

    def _release(self, a: int, b: int) -> None:
        """Punch the hole of rows ``[a, b)`` in every column (in a writer thread); after a
        failure, nothing more is given back."""
        punch = _punch_hole_function()
        for k, fd in enumerate(self._fds):
            size = self._row_nbytes(k)
            if not self._releasing or punch is None or not punch(fd, a * size, (b - a) * size):
                self._releasing = False
                return

    def close(self) -> None:
        """Stop the writer threads and close the files (removed with the scratch directory).

        A write error still pending is dropped: closing is also how an aborted write is
        cleaned up, and the files are discarded either way.
        """
        for future in [*self._pending, *self._releases]:
            future.cancel()
        self._pool.shutdown(wait=True)
        self._pending, self._releases = [], []
        for fd in self._fds:
            os.close(fd)
        self._fds = []


_WRITE_THREADS = 2
"""Threads writing one append's columns at once (the files are independent)."""

RELEASE_BYTES = 8 * 2**20
"""Bytes of rows (all columns) done with that are given back at once (see
:meth:`SpillColumns.done_with`); fewer, larger holes cost fewer system calls."""


@dataclass(slots=True)
class _Append:
    """Rows ``[start, end)`` of one append: those before ``released`` are given back, those
    before ``frontier`` are done with, and ``later`` holds ranges done with beyond it."""

    start: int
    end: int
    frontier: int = -1
    released: int = -1
    later: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.frontier = self.released = self.start

    def done_with(self, a: int, b: int, step: int) -> tuple[int, int] | None:
        """Mark rows ``[a, b)`` done with; the stretch to give back now, if any."""
        heapq.heappush(self.later, (a, b))
        while self.later and self.later[0][0] == self.frontier:
            self.frontier = heapq.heappop(self.later)[1]
        if self.frontier - self.released >= step or (
            self.frontier == self.end and self.released < self.end
        ):
            stretch = (self.released, self.frontier)
            self.released = self.frontier
            return stretch
        return None


_FALLOC_FL_KEEP_SIZE = 0x01
_FALLOC_FL_PUNCH_HOLE = 0x02


@functools.cache
def _punch_hole_function() -> Callable[[int, int, int], bool] | None:
    """``punch(fd, offset, length) -> bool``, freeing a byte range of a file (Linux
    ``fallocate`` with ``FALLOC_FL_PUNCH_HOLE``), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fallocate = getattr(libc, "fallocate64", None) or libc.fallocate
    except (OSError, AttributeError):
        return None
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    fallocate.restype = ctypes.c_int
    mode = _FALLOC_FL_KEEP_SIZE | _FALLOC_FL_PUNCH_HOLE

    def punch(fd: int, offset: int, length: int) -> bool:
        return length <= 0 or fallocate(fd, mode, offset, length) == 0

    return punch


def _write_at(fd: int, data: np.ndarray, offset: int) -> None:
    """Write all of ``data`` to ``fd`` at byte ``offset``."""
    view = data.reshape(-1).view(np.uint8).data
    done = 0
    while done < len(view):
        wrote = os.pwrite(fd, view[done:], offset + done)
        if wrote <= 0:
            raise OSError(f"could not write to a spill file at byte {offset + done}")
        done += wrote


def remove_scratch(directory: Path) -> None:
    """Delete a scratch directory and everything in it."""
    release(directory)
    shutil.rmtree(directory, ignore_errors=True)
