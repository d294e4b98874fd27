"""Temporary column files for writes larger than memory (streaming ingest, spec-free scratch).

A :class:`SpillColumns` holds one flat binary file per column under a scratch directory.
Batches of rows are appended at the end of every column at once; any set of row ranges is
read back into a caller's array with positioned reads, so reading a chunk's pieces never
maps or loads the rest of a file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
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
        self._files = [path.open("wb+") for path in self.paths]
        self.rows = 0

    def _row_nbytes(self, k: int) -> int:
        dtype, shape = self.columns[k]
        return int(dtype.itemsize * int(np.prod(shape, dtype=np.int64)))

    def append(self, values: Sequence[np.ndarray]) -> int:
        """Append the same number of rows to every column; return the first new row number."""
        first = self.rows
        for fh, (dtype, shape), column in zip(self._files, self.columns, values, strict=True):
            data = np.ascontiguousarray(column, dtype=dtype).reshape(-1, *shape)
            fh.seek(0, os.SEEK_END)
            fh.write(data.data.cast("B"))
        self.rows += int(values[0].shape[0]) if values else 0
        return first

    def read(self, k: int, ranges: Sequence[tuple[int, int]]) -> np.ndarray:
        """Rows ``[a, b)`` of column ``k`` for each range, back to back, as a new array."""
        dtype, shape = self.columns[k]
        total = sum(b - a for a, b in ranges)
        out = np.empty((total, *shape), dtype=dtype)
        view = out.reshape(-1).view(np.uint8).data
        size = self._row_nbytes(k)
        fd = self._files[k].fileno()
        self._files[k].flush()
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
        """Close the files (they are removed with the scratch directory)."""
        for fh in self._files:
            fh.close()


def remove_scratch(directory: Path) -> None:
    """Delete a scratch directory and everything in it."""
    shutil.rmtree(directory, ignore_errors=True)
