"""Cross-chunk links of a run of objects, read block by block (spec §9.11, §9.13).

A bounded object read (:class:`~zarr_vectors.query.ObjectReader` ``bounded``, what
``zv.build_levels`` reads level 0 with) never holds ``cross_chunk_links`` and its per-link
attribute columns whole: :class:`LinkBlocks` reads them one block (a zarr chunk of the
table) at a time. The first read scans every block, checks its entries, and records each
block's smallest and largest first-column global id and whether the whole table is sorted
by its first column. Readers must not rely on the row order (§9.11), so only a table found
sorted is read selectively: later reads take only the blocks whose id span meets a
returned vertex; an unsorted table is scanned whole at every read, a block at a time.
Either way the links come in table row order, as a whole-table read gives them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import CROSS_CHUNK_LINK_ATTRIBUTES, CROSS_CHUNK_LINKS
from zarr_vectors.kernels.link_entries import rows_in_runs
from zarr_vectors.read import LevelReader, check_global_shapes
from zarr_vectors.store.arrays import chunk_table_problem

__all__ = ["LinkBlocks", "LinkRows", "blocks_meeting"]

LinkRows = tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]
"""Links found: the result row of each first entry, the global id of each second entry,
and each per-link attribute's values."""


def blocks_meeting(spans: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The blocks whose first-column span meets a run of global ids, ascending.

    Parameters
    ----------
    spans
        ``(blocks, 2)``: each block's smallest and largest first-column id.
    start, length
        ``(m,)`` first id and id count (at least 1) of each run; the runs ascend and do
        not overlap.

    Examples
    --------
    >>> spans = np.array([[0, 4], [5, 9], [10, 14]])
    >>> blocks_meeting(spans, np.array([3, 12]), np.array([1, 1])).tolist()
    [0, 2]
    """
    if not start.shape[0]:
        return np.empty(0, np.int64)
    after = np.searchsorted(start + length, spans[:, 0], side="right")  # first run ending after
    meets = after < start.shape[0]
    meets[meets] = start[after[meets]] <= spans[meets, 1]
    return np.flatnonzero(meets)


class LinkBlocks:
    """Block-wise reads of one level's ``cross_chunk_links`` and its attribute columns.

    Parameters
    ----------
    reader
        The level's :class:`~zarr_vectors.read.LevelReader`.
    attribute_names
        The names of the per-link attribute columns (``cross_chunk_link_attributes/*``).
    n_objects
        The level's checked object count (for the shape checks of the arrays).
    check
        Called with every block of the table (``(rows, 2)`` global ids) at the first read;
        raises :class:`~zarr_vectors.errors.CorruptChunkError` for a bad entry.
    """

    def __init__(
        self,
        reader: LevelReader,
        attribute_names: Sequence[str],
        n_objects: int,
        check: Callable[[np.ndarray], None],
    ) -> None:
        self.reader = reader
        self.attribute_names = list(attribute_names)
        self.n_objects = n_objects
        self.check = check
        self.spans: np.ndarray | None = None  # (blocks, 2) first-column min and max, once read
        self.ordered = False  # the table is sorted by its first column
        self.rows = 0
        self.block = 1
        self.empty: dict[str, np.ndarray] = {}  # no rows of each attribute column

    def _open(self) -> None:
        """Check the arrays' shapes (and, from format 1.2, their chunk tables) and read the
        table's length and block length from its metadata."""
        paths = [CROSS_CHUNK_LINKS] + [
            f"{CROSS_CHUNK_LINK_ATTRIBUTES}/{name}" for name in self.attribute_names
        ]
        check_global_shapes(self.reader, paths, self.n_objects)
        for path in paths if self.reader.placed else []:
            full = f"{self.reader.base}/{path}"
            problem = chunk_table_problem(self.reader.io, full, self.reader.array_metadata(full))
            if problem is not None:
                raise CorruptChunkError(f"{full}: {problem}")
        meta = self.reader.array_metadata(f"{self.reader.base}/{CROSS_CHUNK_LINKS}")
        self.rows = int(meta["shape"][0])
        self.block = max(1, int(meta["chunk_grid"]["configuration"]["chunk_shape"][0]))
        self.empty = {p: self.reader.global_rows(p, 0, 0) for p in paths[1:]}
        self.ordered = True  # until a block shows otherwise

    def links_of(self, gids: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> LinkRows:
        """The links whose first entry is a returned vertex, in table row order.

        Parameters
        ----------
        gids
            The returned vertices as runs of global ids in one group: ``(bounds, start,
            length, result)``, the arguments of
            :func:`~zarr_vectors.kernels.link_entries.rows_in_runs`.

        Raises
        ------
        CorruptChunkError
            When a block holds an entry that ``check`` refuses (first read only), or a
            chunk of an array cannot be decoded.
        """
        first_read = self.spans is None
        if first_read:
            self._open()
        n_blocks = -(-self.rows // self.block)
        spans = np.empty((n_blocks, 2), np.int64) if self.spans is None else self.spans
        selective = not first_read and self.ordered
        wanted = blocks_meeting(spans, gids[1], gids[2]) if selective else range(n_blocks)
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for j in wanted:
            start = j * self.block
            stop = min(self.rows, start + self.block)
            table = self.reader.global_rows(CROSS_CHUNK_LINKS, start, stop)
            if first_read:
                self.check(table)
                spans[j] = table[:, 0].min(), table[:, 0].max()
                self.ordered &= bool(np.all(table[1:, 0] >= table[:-1, 0]))
                self.ordered &= j == 0 or bool(spans[j, 0] >= spans[j - 1, 1])
            if gids[1].shape[0]:
                rows, _ = rows_in_runs(table[:, 0], np.zeros(table.shape[0], np.int64), *gids)
                mine = np.flatnonzero(rows >= 0)
                if mine.shape[0]:
                    found.append((rows[mine], table[mine, 1], start + mine))
        self.spans = spans
        return self._assembled(found)

    def _assembled(self, found: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> LinkRows:
        """The links found in each block, joined, with their attribute values (read by
        the row range of each block's links)."""
        rows = [f[0] for f in found]
        second = [f[1] for f in found]
        columns: dict[str, np.ndarray] = {}
        for name in self.attribute_names:
            path = f"{CROSS_CHUNK_LINK_ATTRIBUTES}/{name}"
            parts = [self.empty[path]]  # the dtype and row shape when no link is found
            for _, _, at in found:
                values = self.reader.global_rows(path, int(at[0]), int(at[-1]) + 1)
                parts.append(values[at - at[0]])
            columns[name] = np.concatenate(parts)
        empty = np.empty(0, np.int64)
        return np.concatenate([empty, *rows]), np.concatenate([empty, *second]), columns
