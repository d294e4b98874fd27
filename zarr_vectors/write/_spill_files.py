"""The spill files of a coarse object level (:class:`~zarr_vectors.write._level_spill.
LevelSpill`): append-only files of rows, chains of them, where a batch's rows are, and
per-chunk rows computed when asked.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FileChain", "LazyChunks", "SpillFile", "SpillPiece"]


class SpillFile:
    """An append-only file of rows of one dtype and row shape."""

    def __init__(self, path: Path, dtype: np.dtype[Any], row_shape: tuple[int, ...]) -> None:
        self.path, self.dtype, self.row_shape = path, np.dtype(dtype), row_shape
        self.width = int(np.prod(row_shape, dtype=np.int64))
        self.rows = 0
        self.fd: int | None = None
        path.touch()

    def append(self, values: np.ndarray) -> None:
        with self.path.open("ab") as handle:
            np.ascontiguousarray(values, dtype=self.dtype).tofile(handle)
        self.rows += int(values.shape[0])

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` (read-only); the file stays open until :meth:`close`."""
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY)
        row = self.width * self.dtype.itemsize
        raw = os.pread(self.fd, (stop - start) * row, start * row)
        return np.frombuffer(raw, self.dtype).reshape(stop - start, *self.row_shape)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class FileChain:
    """The rows of spill files one after another, each file's values moved by its shift
    (the object index of a joined spill: each part's offsets by the data before it).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> a, b = (SpillFile(folder / name, np.dtype(np.int64), ()) for name in "ab")
    >>> a.append(np.array([0, 2]))
    >>> b.append(np.array([0, 1, 3]))
    >>> FileChain([(a, 0), (b, 5)]).read(1, 4).tolist()
    [2, 5, 6]
    """

    def __init__(self, files: list[tuple[SpillFile, int]]) -> None:
        self.files = files
        self.dtype, self.row_shape = files[0][0].dtype, files[0][0].row_shape
        self.bounds = np.cumsum([0, *(file.rows for file, _ in files)]).tolist()
        self.rows = int(self.bounds[-1])

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` of the chain."""
        parts = [np.empty((0, *self.row_shape), self.dtype)]
        for (file, shift), low, high in zip(self.files, self.bounds, self.bounds[1:], strict=False):
            a, b = max(start, low), min(stop, high)
            if a < b:
                rows = file.read(a - low, b - low)
                parts.append(rows + np.asarray(shift, self.dtype) if shift else rows)
        return np.concatenate(parts)


@dataclasses.dataclass(slots=True)
class SpillPiece:
    """Where one batch's part of its chunks is in the spill files (absolute rows)."""

    vertices: np.ndarray  # (k + 1,)
    fragments: np.ndarray  # (k + 1,)
    links: np.ndarray  # (k + 1,)
    cross: np.ndarray  # (k + 1,) cross-chunk links by the chunk of their first vertex
    files: dict[str, SpillFile]  # the files of the spill that wrote the batch

    def offsets(self, family: int) -> np.ndarray:
        """The row offsets of a family: 0 vertices, 1 fragments, 2 links, 3 cross-chunk
        links."""
        return (self.vertices, self.fragments, self.links, self.cross)[family]


class LazyChunks(Sequence[np.ndarray]):
    """``per_chunk[j]`` computed when asked (one chunk in memory at a time)."""

    def __init__(self, n: int, get: Callable[[int], np.ndarray]) -> None:
        self.n, self.get = n, get

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, j: Any) -> Any:
        return self.get(int(j))
