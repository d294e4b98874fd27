"""Objects a read returned, kept assembled for the next read of them (:class:`Assembled`).

A notebook user asks the same box again, pans over the same cells, or reads the objects a
box found by id: the objects are those of the last reads. A read of an object rebuilds it
from its fragments (:class:`~zarr_vectors.query._object_plan.ObjectPlan`: a skeleton of
1,000 nodes is ~190 fragment references over its chunks and bins); :class:`Assembled`
keeps the objects read at least twice whole, their rows back to back in one buffer per
column and their links as rows of those, so a read of objects all kept is one copy per
column (one slice when they are the objects of one earlier read). Results never share its
memory.

Like the cache of decoded blocks it belongs to one handle's version of a level: the handle
checks the version after every data read and, on a change, raises or reopens the store
with new readers (and so a new, empty :class:`Assembled`).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from zarr_vectors.kernels import concat_ranges
from zarr_vectors.kernels.bin_runs import copy_row_runs

__all__ = ["Assembled", "Gathered"]


class Gathered(NamedTuple):
    """Kept objects gathered in the order asked: their vertex columns, ``offsets``, links
    (rows of the gathered vertices; None for a kind without links) and link columns."""

    columns: list[np.ndarray]
    offsets: np.ndarray
    links: np.ndarray | None
    link_columns: dict[str, np.ndarray]


class _Grown:
    """Rows appended to one array whose capacity doubles (so appends cost their rows)."""

    def __init__(self, like: np.ndarray) -> None:
        self.values = np.empty((max(like.shape[0], 1024), *like.shape[1:]), like.dtype)
        self.used = 0

    def append(self, rows: np.ndarray) -> None:
        stop = self.used + rows.shape[0]
        if stop > self.values.shape[0]:
            grown = np.empty((max(stop, 2 * self.values.shape[0]), *rows.shape[1:]), rows.dtype)
            grown[: self.used] = self.values[: self.used]
            self.values = grown
        self.values[self.used : stop] = rows
        self.used = stop

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)


class Assembled:
    """Whole objects of one level, kept after a read within a byte budget.

    An object is kept on its second read (one read of many objects, e.g. of all of them,
    keeps none); when keeping more would pass ``budget`` bytes, every object is let go
    first. A read is served only when every object it asks is kept.

    Parameters
    ----------
    budget
        Bytes of kept rows and links at most; 0 keeps nothing.
    n_objects
        The level's objects (dense ids ``0 ... n_objects - 1``).

    Examples
    --------
    >>> import numpy as np
    >>> kept = Assembled(2**20, 3)
    >>> rows = [np.arange(5.0)]
    >>> offsets, links = np.array([0, 2, 5]), np.array([[1, 0], [3, 2], [4, 3]])
    >>> for _ in range(2):
    ...     kept.offer(np.array([0, 2]), rows, offsets, links, {})
    >>> found = kept.take(np.array([2]))
    >>> found.columns[0].tolist(), found.offsets.tolist(), found.links.tolist()
    ([2.0, 3.0, 4.0], [0, 3], [[1, 0], [2, 1]])
    """

    def __init__(self, budget: int, n_objects: int) -> None:
        self.budget = int(budget)
        self._lock = threading.Lock()
        self._seen = np.zeros(n_objects if budget > 0 else 0, dtype=bool)
        self._clear()

    def _clear(self) -> None:
        self._slot: dict[int, int] = {}
        self._spans = _Grown(np.empty((0, 4), np.int64))  # row start, rows, link start, links
        self._columns: list[_Grown] = []
        self._links: _Grown | None = None
        self._link_columns: dict[str, _Grown] = {}

    @property
    def nbytes(self) -> int:
        """Bytes the kept objects hold (their buffers' capacity)."""
        grown = [self._spans, *self._columns, *self._link_columns.values()]
        grown += [] if self._links is None else [self._links]
        return sum(g.nbytes for g in grown) if self._slot else 0

    def take(self, dense: np.ndarray) -> Gathered | None:
        """The objects ``dense`` (distinct dense ids), when every one is kept; else None."""
        if not self._slot or not dense.shape[0]:
            return None
        with self._lock:
            get = self._slot.get
            slots = [get(d, -1) for d in dense.tolist()]
            if -1 in slots:
                return None
            return self._gathered(self._spans.values[slots])

    def _gathered(self, spans: np.ndarray) -> Gathered:
        """The kept objects of ``spans`` (their rows of :attr:`_spans`) gathered: one slice
        a column when they lie back to back in the order asked (the objects of one read,
        asked again), else one copy of runs."""
        offsets = np.zeros(spans.shape[0] + 1, np.int64)
        np.cumsum(spans[:, 1], out=offsets[1:])
        at = np.zeros(spans.shape[0] + 1, np.int64)
        np.cumsum(spans[:, 3], out=at[1:])
        shift = offsets[:-1] - spans[:, 0]  # a kept link's entry is a row of the kept rows
        if _back_to_back(spans[:, 0], spans[:, 1]) and _back_to_back(spans[:, 2], spans[:, 3]):
            rows = slice(spans[0, 0], spans[0, 0] + offsets[-1])
            links = slice(spans[0, 2], spans[0, 2] + at[-1])
            columns = [c.values[rows].copy() for c in self._columns]
            if self._links is None:
                return Gathered(columns, offsets, None, {})
            found = self._links.values[links] + shift[0]
            link_columns = {k: v.values[links].copy() for k, v in self._link_columns.items()}
            return Gathered(columns, offsets, found, link_columns)
        columns = [_runs(c.values, spans[:, 0], offsets, spans[:, 1]) for c in self._columns]
        if self._links is None:
            return Gathered(columns, offsets, None, {})
        found = _runs(self._links.values, spans[:, 2], at, spans[:, 3])
        found += np.repeat(shift, spans[:, 3])[:, None]
        link_columns = {
            k: _runs(v.values, spans[:, 2], at, spans[:, 3]) for k, v in self._link_columns.items()
        }
        return Gathered(columns, offsets, found, link_columns)

    def offer(
        self,
        dense: np.ndarray,
        columns: list[np.ndarray],
        offsets: np.ndarray,
        links: np.ndarray | None,
        link_columns: dict[str, np.ndarray],
    ) -> None:
        """Keep the objects of a read (``dense``: distinct dense ids; ``columns``: their
        vertex columns, object ``i`` at rows ``offsets[i]:offsets[i + 1]``; ``links``:
        rows of those, grouped by object in object order, with their ``link_columns``)
        that were read before and are not kept."""
        if self.budget <= 0 or not dense.shape[0]:
            return
        with self._lock:
            again = self._seen[dense]
            self._seen[dense] = True
            if not again.any():
                return
            owner = None
            if links is not None:
                owner = np.searchsorted(offsets, links[:, 0], side="right") - 1
                if links.shape[0] and (int(links.min()) < 0 or np.any(owner[1:] < owner[:-1])):
                    return  # not grouped by object, or an entry not a row: not kept
            pick = np.flatnonzero(again & np.array([d not in self._slot for d in dense.tolist()]))
            if pick.shape[0]:
                self._keep(dense, pick, columns, offsets, (links, owner, link_columns))

    def _keep(
        self,
        dense: np.ndarray,
        pick: np.ndarray,
        columns: list[np.ndarray],
        offsets: np.ndarray,
        linked: tuple[np.ndarray | None, np.ndarray | None, dict[str, np.ndarray]],
    ) -> None:
        """Append the objects ``dense[pick]`` (see :meth:`offer`), letting every kept
        object go first when the budget would be passed."""
        links, owner, link_columns = linked
        sizes = (offsets[1:] - offsets[:-1])[pick]
        rows = concat_ranges(offsets[:-1][pick], sizes)
        span = np.zeros((pick.shape[0], 4), np.int64)
        span[:, 1] = sizes
        wanted = rows.shape[0] * _row_bytes(columns)
        if links is not None and owner is not None:
            bounds = np.searchsorted(owner, np.arange(offsets.shape[0]))
            span[:, 3] = (bounds[1:] - bounds[:-1])[pick]
            at = concat_ranges(bounds[:-1][pick], span[:, 3])
            wanted += at.shape[0] * _row_bytes([links, *link_columns.values()])
        if wanted > self.budget:
            return
        if self.nbytes + 2 * wanted > self.budget:
            self._clear()
        if not self._columns:
            self._columns = [_Grown(c[:0]) for c in columns]
            if links is not None:
                self._links = _Grown(links[:0])
                self._link_columns = {k: _Grown(v[:0]) for k, v in link_columns.items()}
        span[:, 0] = self._columns[0].used + np.cumsum(sizes) - sizes
        for grown, values in zip(self._columns, columns, strict=True):
            grown.append(values[rows])
        if self._links is not None and links is not None and owner is not None:
            span[:, 2] = self._links.used + np.cumsum(span[:, 3]) - span[:, 3]
            moved = np.repeat(span[:, 0] - offsets[:-1][pick], span[:, 3])
            self._links.append(links[at] + moved[:, None])  # rows of the kept rows
            for name, grown in self._link_columns.items():
                grown.append(link_columns[name][at])
        first = len(self._slot)
        self._spans.append(span)
        self._slot.update(zip(dense[pick].tolist(), range(first, self._spans.used), strict=True))


def _back_to_back(first: np.ndarray, sizes: np.ndarray) -> bool:
    """Whether the runs ``first[i]:first[i] + sizes[i]`` follow one another."""
    return bool(np.array_equal(first[1:], first[:-1] + sizes[:-1]))


def _runs(
    kept: np.ndarray, first: np.ndarray, offsets: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    """Rows ``first[i]:first[i] + sizes[i]`` of ``kept`` for every ``i``, one after another
    (at ``offsets[i]``), copied run by run."""
    out = np.empty((int(offsets[-1]), *kept.shape[1:]), kept.dtype)
    copy_row_runs(kept, first, out, offsets[:-1], sizes)
    return out


def _row_bytes(arrays: list[np.ndarray]) -> int:
    """Bytes of one row of each of ``arrays`` together."""
    return sum(a.itemsize * (a.size // a.shape[0] if a.shape[0] else 1) for a in arrays)
