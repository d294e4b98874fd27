"""Temporary column files for writes larger than memory (streaming ingest, spec-free scratch).

A :class:`SpillColumns` holds one flat binary file per column under a scratch directory.
Batches of rows are appended at the end of every column at once, written by background
threads while the caller goes on (one append in flight at a time); any set of row ranges is
read back into a caller's array with positioned reads, so reading a chunk's pieces never
maps or loads the rest of a file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

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
        The new, empty directory; the caller removes it.
    """
    if spill_dir is not None:
        parent = Path(spill_dir)
    elif near is not None:
        parent = near.absolute().parent
    else:
        parent = Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{near.name}.zv-spill-" if near is not None else "zv-spill-"
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


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
        self.paths = [directory / f"{name}.{k}.bin" for k in range(len(self.columns))]
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC
        self._fds = [os.open(path, flags, 0o600) for path in self.paths]
        self._pool = ThreadPoolExecutor(
            min(_WRITE_THREADS, len(self.columns)) or 1, thread_name_prefix="zv-spill"
        )
        self._pending: list[Future[None]] = []
        self.rows = 0

    def _row_nbytes(self, k: int) -> int:
        dtype, shape = self.columns[k]
        return int(dtype.itemsize * int(np.prod(shape, dtype=np.int64)))

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

    def close(self) -> None:
        """Stop the writer threads and close the files (removed with the scratch directory).

        A write error still pending is dropped: closing is also how an aborted write is
        cleaned up, and the files are discarded either way.
        """
        for future in self._pending:
            future.cancel()
        self._pool.shutdown(wait=True)
        self._pending = []
        for fd in self._fds:
            os.close(fd)
        self._fds = []


_WRITE_THREADS = 2
"""Threads writing one append's columns at once (the files are independent)."""


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
    shutil.rmtree(directory, ignore_errors=True)
