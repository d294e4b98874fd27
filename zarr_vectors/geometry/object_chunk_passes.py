"""Build the object-to-chunks index of a stored level 0 (spec §9.14) within a memory budget.

Level 0's ids are read in batches of whole chunks
(:class:`~zarr_vectors.geometry.order_passes.ChunkBatches`). A batch's own index is final but
for its place: its entries' rows count from their chunk's first row, and they are sorted by
object, then chunk. Each batch's entries and its ids with their entry counts are spilled, and
the distinct ids and their entry counts merged as the batches go. The index's entries are
then made a window of rows at a time (:class:`EntryWindows`): every batch, in chunk order,
gives the entries of the objects meeting the window, one contiguous run of its spilled
entries. Memory holds a batch, a window and the distinct ids with their offsets, never every
entry; one window of every entry gives the same index as
:func:`~zarr_vectors.kernels.object_chunks.index_object_chunks` of every id.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE
from zarr_vectors.geometry.order_passes import ChunkBatches, IdCounts
from zarr_vectors.kernels.object_chunks import index_object_chunks
from zarr_vectors.read import ChunkRows, LevelReader
from zarr_vectors.store.spill import SpillColumns

__all__ = ["EntryWindows", "index_passes", "spill_batch_indexes"]

_SCAN_BYTES_PER_ROW = 96
"""Bytes a row of a batch takes while its index is made: the id read and its shard bytes,
the kernel's keys, sort order, slots and flags (about 12 arrays of 8 bytes)."""

_ENTRY_BYTES = 24 + 24
"""Bytes an entry of a window takes: its row of the index and its row read back from the
spill (with its destination)."""


def index_passes(memory_budget: int, n_ids: int) -> tuple[int, int]:
    """Rows of a batch of chunks read and entries of a window, within ``memory_budget``
    bytes besides 32 bytes per distinct id (``n_ids``: the ids, their offsets, a cursor).

    A quarter of the budget goes to a batch, the rest to a window.

    Examples
    --------
    >>> index_passes(128 * 2**20, 10**5)   # 10^7 scattered entries: 4 windows
    (349525, 2030485)
    >>> index_passes(2**16, 10)            # a tiny budget: at least a row, an entry
    (170, 1017)
    """
    batch = max(1, memory_budget // 4 // _SCAN_BYTES_PER_ROW)
    free = memory_budget - memory_budget // 4 - 32 * n_ids
    return batch, max(1, free // _ENTRY_BYTES)


@dataclass(slots=True)
class _Spilled:
    """Every batch's entries (``entries``) and its distinct ids with their entry counts
    (``objects``), batch after batch; batch ``j`` holds rows
    ``[entry_starts[j], entry_starts[j + 1])`` and ``[object_starts[j], ...)``."""

    entries: SpillColumns
    objects: SpillColumns
    entry_starts: list[int]
    object_starts: list[int]

    def batch(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Batch ``j``'s distinct ids (ascending) and the offsets of their entries."""
        rows = [(self.object_starts[j], self.object_starts[j + 1])]
        counts = self.objects.read(1, rows)
        offsets = np.zeros(counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return self.objects.read(0, rows), offsets

    def close(self) -> None:
        self.entries.close()
        self.objects.close()


def spill_batch_indexes(
    reader: LevelReader, scratch: Path, batch_rows: int
) -> tuple[_Spilled, np.ndarray, np.ndarray]:
    """Index level 0 batch by batch into spill files under ``scratch``: the spill, the
    distinct ids (ascending) and the offsets of their entries in the index."""
    chunks, counts = reader.occupied_chunks(None, None)
    wanted = [
        ChunkRows(tuple(int(c) for c in chunk), np.array([[0, n]], dtype=np.int64))
        for chunk, n in zip(chunks, counts, strict=True)
    ]
    batches = ChunkBatches.of(wanted, counts, batch_rows)
    shape = tuple(int(s) for s in reader.grid.shape)
    flat = (
        np.ravel_multi_index(tuple(chunks.T), shape).astype(np.int64)
        if chunks.shape[0]
        else np.empty(0, np.int64)
    )
    dtype = reader.column_spec(OBJECT_ID_ATTRIBUTE)[0]
    spilled = _Spilled(
        SpillColumns(scratch, "entries", [(np.dtype(np.int64), (3,))]),
        SpillColumns(scratch, "objects", [(dtype, ()), (np.dtype(np.int64), ())]),
        [0],
        [0],
    )
    totals = IdCounts(np.zeros(0, dtype=dtype))
    read_all = False
    try:
        for j in range(batches.cuts.shape[0] - 1):
            first, stop = int(batches.cuts[j]), int(batches.cuts[j + 1])
            ids = reader.read_rows(OBJECT_ID_ATTRIBUTE, wanted[first:stop])
            offsets = batches.starts[first : stop + 1] - batches.starts[first]
            index = index_object_chunks(ids, offsets, flat[first:stop])
            del ids
            many = np.diff(index.offsets)
            spilled.entries.append([index.entries])
            spilled.objects.append([index.ids, many])
            spilled.entry_starts.append(spilled.entries.rows)
            spilled.object_starts.append(spilled.objects.rows)
            totals.add(index.ids, many)
        read_all = True
    finally:
        if not read_all:
            spilled.close()  # no writer thread or open file outlives a failed read
    distinct, offsets = totals.result()
    return spilled, distinct, offsets


class EntryWindows:
    """The index's ``(E, 3)`` entries from a spill, made a window of rows at a time: a
    row source (``rows``, ``dtype``, ``row_shape``, ``read``) for
    :func:`~zarr_vectors.write.write_global`, read in ascending ranges.

    Parameters
    ----------
    spilled
        Every batch's index (:func:`spill_batch_indexes`).
    distinct, offsets
        The distinct ids (ascending) and the offsets of their entries in the index.
    window_rows
        Entries of a window (a read wider than that is one window).
    """

    def __init__(
        self, spilled: _Spilled, distinct: np.ndarray, offsets: np.ndarray, window_rows: int
    ) -> None:
        self.rows = int(offsets[-1])
        self.dtype: np.dtype[Any] = np.dtype(np.int64)
        self.row_shape: tuple[int, ...] = (3,)
        self._spilled, self._distinct, self._offsets = spilled, distinct, offsets
        self._window_rows = window_rows
        self._at = 0
        self._values = np.empty((0, 3), dtype=np.int64)

    def read(self, start: int, stop: int) -> np.ndarray:
        """Entries ``[start, stop)``."""
        at = self._at
        if start < at or stop > at + self._values.shape[0]:
            at = start
            end = min(self.rows, start + max(self._window_rows, stop - start))
            self._values = np.empty((0, 3), dtype=np.int64)  # the old window is let go first
            self._values = self._window((start, end))
            self._at = at
        return self._values[start - at : stop - at]

    def _window(self, window: tuple[int, int]) -> np.ndarray:
        """Entries ``window = (a, b)``: each batch's entries of the objects meeting it."""
        a, b = window
        offsets, distinct = self._offsets, self._distinct
        first = int(np.searchsorted(offsets, a, side="right")) - 1  # the object of entry a
        last = int(np.searchsorted(offsets, b, side="left"))  # objects [first, last) meet it
        cursor = offsets[first:last].copy()  # where each object's next entry goes
        out = np.empty((b - a, 3), dtype=np.int64)
        done = 0
        spilled = self._spilled
        for j in range(len(spilled.entry_starts) - 1):
            ids, held = spilled.batch(j)
            lo = int(np.searchsorted(ids, distinct[first], side="left"))
            hi = int(np.searchsorted(ids, distinct[last - 1], side="right"))
            if lo >= hi:
                continue
            k = np.searchsorted(distinct[first:last], ids[lo:hi])
            many = np.diff(held[lo : hi + 1])
            begin = cursor[k]
            cursor[k] += many
            # ascending: an object's entries come before the next object's
            place = np.repeat(begin - held[lo:hi] - a, many)
            place += np.arange(held[lo], held[hi])
            inside = np.searchsorted(place, [0, b - a])  # the entries inside the window
            i, stop = int(inside[0]), int(inside[1])
            start = spilled.entry_starts[j] + int(held[lo])
            out[place[i:stop]] = spilled.entries.read(0, [(start + i, start + stop)])
            done += stop - i
        if done != b - a:
            raise CorruptChunkError(
                f"the batches of level 0's object ids gave {done} of the object-to-chunks "
                f"index's entries [{a}, {b}) back; they changed while the index was built, "
                "or its spill files did: write it again"
            )
        return out
