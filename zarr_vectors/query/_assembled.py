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

from zarr_vectors.kernels.bin_runs import copy_row_runs

__all__ = ["Assembled", "Gathered", "Kept", "gathered", "interleaved"]


class Gathered(NamedTuple):
    """Whole objects one after another: their vertex columns (object ``i`` at rows
    ``offsets[i]:offsets[i + 1]``), links (rows of those, object ``i``'s at rows
    ``link_offsets[i]:link_offsets[i + 1]``; both None for a kind without links) and
    link columns."""

    columns: list[np.ndarray]
    offsets: np.ndarray
    links: np.ndarray | None
    link_offsets: np.ndarray | None
    link_columns: dict[str, np.ndarray]


class Kept(NamedTuple):
    """Kept objects found for a read: the buffers they lie in (vertex columns, links and
    link columns: only ever added to, so a read copies from them outside the lock) and
    their rows of :attr:`Assembled._spans`, in the order asked."""

    columns: list[np.ndarray]
    links: np.ndarray | None
    link_columns: dict[str, np.ndarray]
    spans: np.ndarray


class _Grown:
    """Rows added to one array whose capacity doubles (so additions cost their rows)."""

    def __init__(self, like: np.ndarray) -> None:
        self.values = np.empty((64, *like.shape[1:]), like.dtype)
        self.used = 0

    def extend(self, rows: int) -> int:
        """Make room for ``rows`` more rows after the used ones; returns the first."""
        first, stop = self.used, self.used + rows
        if stop > self.values.shape[0]:
            size = max(stop, 2 * self.values.shape[0])
            grown = np.empty((size, *self.values.shape[1:]), self.values.dtype)
            grown[:first] = self.values[:first]
            self.values = grown
        self.used = stop
        return first

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)

    @property
    def used_bytes(self) -> int:
        return self.used * int(self.values.nbytes // self.values.shape[0])


class Assembled:
    """Whole objects of one level, kept after a read within a byte budget.

    An object is kept on its second read (one read of many objects, e.g. of all of them,
    keeps none), when the read takes at most an eighth of ``budget`` (:data:`READ_SHARE`;
    larger reads would push out everything else) and at most :data:`REFERENCE_BYTES` a
    fragment reference; when keeping them would pass ``budget`` bytes, every object is let
    go first. :meth:`take` finds the kept objects of a read when they are at least half
    of it (the read then rebuilds only the others).

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
    ...     kept.offer(np.array([0, 2]), (rows, offsets), (links, np.array([1, 2]), {}), 5)
    >>> found = gathered(kept.take(np.array([2]))[0])
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
        # each kept object: its first kept row, rows, first kept link, links, and the
        # result row its first row had in the read that kept it (its links' entries are
        # rows of that read)
        self._spans = _Grown(np.empty((0, 5), np.int64))
        self._columns: list[_Grown] = []
        self._links: _Grown | None = None
        self._link_columns: dict[str, _Grown] = {}

    @property
    def nbytes(self) -> int:
        """Bytes the kept objects hold (their buffers' capacity)."""
        return sum(g.nbytes for g in self._buffers()) if self._slot else 0

    def _used_bytes(self) -> int:
        return sum(g.used_bytes for g in self._buffers())

    def _buffers(self) -> list[_Grown]:
        """Every buffer of the kept objects."""
        grown = [self._spans, *self._columns, *self._link_columns.values()]
        return grown if self._links is None else [*grown, self._links]

    def take(self, dense: np.ndarray) -> tuple[Kept | None, np.ndarray]:
        """The kept objects among ``dense`` (distinct dense ids), in the order asked, and
        which of ``dense`` they are; none when fewer than half are kept (placing the others
        among them would then cost more than it saves)."""
        if 2 * len(self._slot) < dense.shape[0] or not dense.shape[0]:  # not half kept
            return None, np.zeros(dense.shape[0], dtype=bool)
        with self._lock:
            get = self._slot.get
            slots = np.array([get(d, -1) for d in dense.tolist()], dtype=np.int64)
            kept = slots >= 0
            if 2 * int(kept.sum()) < kept.shape[0]:  # fewer than half: not worth placing
                return None, np.zeros(dense.shape[0], dtype=bool)
            links = None if self._links is None else self._links.values
            found = Kept(
                [c.values for c in self._columns],
                links,
                {k: v.values for k, v in self._link_columns.items()},
                self._spans.values[slots[kept]],
            )
            return found, kept

    def offer(
        self,
        dense: np.ndarray,
        rows: tuple[list[np.ndarray], np.ndarray],
        linked: tuple[np.ndarray | None, np.ndarray | None, dict[str, np.ndarray]],
        references: int,
    ) -> None:
        """Keep the objects of a read that were read before and are not kept.

        ``dense``: their dense ids (distinct); ``rows``: their vertex columns and offsets
        (object ``i`` at rows ``offsets[i]:offsets[i + 1]``); ``linked``: their links
        (rows of those, object by object in object order; None for a kind without
        links), each object's link count (None: the links are not so ordered, and
        nothing is kept) and the links' columns; ``references``: the fragment references
        the read rebuilt them from. Objects of more than :data:`REFERENCE_BYTES` a
        reference are not kept.
        """
        if self.budget <= 0 or not dense.shape[0]:
            return
        columns, offsets = rows
        links, _, link_columns = linked
        size = int(offsets[-1]) * _row_bytes(columns)
        if links is not None:
            size += links.shape[0] * _row_bytes([links, *link_columns.values()])
        if size > REFERENCE_BYTES * references or size * READ_SHARE > self.budget:
            return  # nothing to keep: no pass over its ids
        with self._lock:
            again = self._seen[dense]
            self._seen[dense] = True
            if not again.any() or (linked[0] is not None and linked[1] is None):
                return
            pick = np.flatnonzero(again & np.array([d not in self._slot for d in dense.tolist()]))
            if pick.shape[0]:
                self._keep(dense, pick, rows, linked)

    def _keep(
        self,
        dense: np.ndarray,
        pick: np.ndarray,
        rows: tuple[list[np.ndarray], np.ndarray],
        linked: tuple[np.ndarray | None, np.ndarray | None, dict[str, np.ndarray]],
    ) -> None:
        """Add the objects ``dense[pick]`` (see :meth:`offer`: ``rows`` are its columns and
        offsets, ``linked`` its links, their count by object and their columns), letting
        every kept object go first when the budget would be passed."""
        columns, offsets = rows
        links, link_counts, link_columns = linked
        span = np.zeros((pick.shape[0], 5), np.int64)
        span[:, 1] = (offsets[1:] - offsets[:-1])[pick]
        span[:, 4] = offsets[:-1][pick]
        wanted = int(span[:, 1].sum()) * _row_bytes(columns)
        if links is not None and link_counts is not None:
            link_starts = np.cumsum(link_counts) - link_counts  # grouped by object
            span[:, 3] = link_counts[pick]
            wanted += int(span[:, 3].sum()) * _row_bytes([links, *link_columns.values()])
        if 2 * (self._used_bytes() + wanted) > self.budget:  # capacity: at most twice used
            self._clear()
        if not self._columns:
            self._columns = [_Grown(c) for c in columns]
            if links is not None:
                self._links = _Grown(links)
                self._link_columns = {k: _Grown(v) for k, v in link_columns.items()}
        for grown, values in zip(self._columns, columns, strict=True):
            span[:, 0] = _added(grown, values, span[:, 4], span[:, 1])
        if self._links is not None and links is not None:
            first = link_starts[pick]
            span[:, 2] = _added(self._links, links, first, span[:, 3])
            for name, grown in self._link_columns.items():
                _added(grown, link_columns[name], first, span[:, 3])
        slot = self._spans.extend(pick.shape[0])
        self._spans.values[slot : slot + pick.shape[0]] = span
        self._slot.update(zip(dense[pick].tolist(), range(slot, self._spans.used), strict=True))


def gathered(kept: Kept) -> Gathered:
    """The objects of ``kept`` one after another: one slice a column when they lie back
    to back in the order asked (the objects of one read, asked again), else one copy of
    runs."""
    spans = kept.spans
    offsets = np.zeros(spans.shape[0] + 1, np.int64)
    np.cumsum(spans[:, 1], out=offsets[1:])
    together = _back_to_back(spans[:, 0], spans[:, 1])
    columns = [_copied(c, spans[:, 0], offsets, spans[:, 1], together) for c in kept.columns]
    if kept.links is None:
        return Gathered(columns, offsets, None, None, {})
    at = np.zeros(spans.shape[0] + 1, np.int64)
    np.cumsum(spans[:, 3], out=at[1:])
    together = _back_to_back(spans[:, 2], spans[:, 3])
    links = _copied(kept.links, spans[:, 2], at, spans[:, 3], together)
    shift = offsets[:-1] - spans[:, 4]  # entries: rows of the read that kept them
    if shift.any():
        links += np.repeat(shift, spans[:, 3])[:, None]
    link_columns = {
        k: _copied(v, spans[:, 2], at, spans[:, 3], together) for k, v in kept.link_columns.items()
    }
    return Gathered(columns, offsets, links, at, link_columns)


def interleaved(first: np.ndarray, kept: Kept, other: Gathered) -> Gathered:
    """The objects of ``kept`` where ``first`` is True and those of ``other`` elsewhere,
    in that order (each object's links re-based onto its rows), copied once.

    Examples
    --------
    >>> kept = Kept([np.array([5.0, 6.0])], None, {}, np.array([[0, 2, 0, 0, 0]]))
    >>> other = Gathered([np.array([1.0])], np.array([0, 1]), None, None, {})
    >>> interleaved(np.array([False, True]), kept, other).columns[0].tolist()
    [1.0, 5.0, 6.0]
    """
    spans = kept.spans
    offsets = _places(first, spans[:, 1], other.offsets)
    rows = (spans[:, 0], spans[:, 1], offsets[:-1][first], other.offsets, offsets[:-1][~first])
    columns = [_pair(a, b, rows) for a, b in zip(kept.columns, other.columns, strict=True)]
    if kept.links is None or other.links is None:
        return Gathered(columns, offsets, None, None, {})
    assert other.link_offsets is not None
    at = _places(first, spans[:, 3], other.link_offsets)
    link_rows = (spans[:, 2], spans[:, 3], at[:-1][first], other.link_offsets, at[:-1][~first])
    links = _pair(kept.links, other.links, link_rows)
    shift = np.empty(first.shape[0], np.int64)  # each object's rows: from its source to here
    shift[first] = offsets[:-1][first] - spans[:, 4]
    shift[~first] = offsets[:-1][~first] - other.offsets[:-1]
    links += np.repeat(shift, at[1:] - at[:-1])[:, None]
    link_columns = {
        k: _pair(v, other.link_columns[k], link_rows) for k, v in kept.link_columns.items()
    }
    return Gathered(columns, offsets, links, at, link_columns)


Runs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""Two sources' runs placed: the first source's run starts, sizes and destinations, the
other's offsets and destinations."""


def _places(first: np.ndarray, sizes: np.ndarray, other: np.ndarray) -> np.ndarray:
    """The offsets of runs of ``sizes`` (where ``first``) and of the runs ``other``
    delimits (elsewhere) placed in that order."""
    placed = np.empty(first.shape[0], np.int64)
    placed[first] = sizes
    placed[~first] = other[1:] - other[:-1]
    offsets = np.zeros(first.shape[0] + 1, np.int64)
    np.cumsum(placed, out=offsets[1:])
    return offsets


def _pair(one: np.ndarray, other: np.ndarray, runs: Runs) -> np.ndarray:
    """The runs of ``one`` and ``other`` (of one dtype and row shape) copied to their
    places (``runs``: :data:`Runs`)."""
    starts, sizes, to, other_offsets, other_to = runs
    other_sizes = other_offsets[1:] - other_offsets[:-1]
    out = np.empty((int(sizes.sum() + other_sizes.sum()), *one.shape[1:]), one.dtype)
    copy_row_runs(one, starts, out, to, sizes)
    copy_row_runs(other, other_offsets[:-1], out, other_to, other_sizes)
    return out


READ_SHARE = 8
""":class:`Assembled` keeps the objects of a read when they take at most ``budget //
READ_SHARE`` bytes."""


REFERENCE_BYTES = 512
""":class:`Assembled` keeps the objects of a read that take at most this many bytes (rows,
links and their columns) a fragment reference it was rebuilt from: a read of kept objects
saves work a reference and costs a copy a byte. Measured (``benchmarks --objects``, moving
boxes, 2 cores): skeletons (~170 bytes a reference) and streamlines (~130) read as fast
with the objects kept as without; the mesh (~960: objects of few, large fragments) 35%
slower, its copies costing more than the rebuilds they save."""


def _added(grown: _Grown, values: np.ndarray, first: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Add rows ``first[i]:first[i] + sizes[i]`` of ``values`` for every ``i`` to
    ``grown``, one run after another; returns where each run starts there."""
    n = int(sizes.sum())
    at = grown.extend(n)
    starts: np.ndarray = at + np.cumsum(sizes) - sizes
    if _back_to_back(first, sizes):  # every object of the read, or a run of them
        grown.values[at : at + n] = values[first[0] : first[0] + n]
    else:
        values = np.ascontiguousarray(values, dtype=grown.values.dtype)
        copy_row_runs(values, first, grown.values, starts, sizes)
    return starts


def _back_to_back(first: np.ndarray, sizes: np.ndarray) -> bool:
    """Whether the runs ``first[i]:first[i] + sizes[i]`` follow one another."""
    return bool(np.array_equal(first[1:], first[:-1] + sizes[:-1]))


def _copied(
    kept: np.ndarray, first: np.ndarray, offsets: np.ndarray, sizes: np.ndarray, together: bool
) -> np.ndarray:
    """Rows ``first[i]:first[i] + sizes[i]`` of ``kept`` for every ``i``, one after another
    (at ``offsets[i]``): copied as one slice when the runs follow one another
    (``together``), else run by run."""
    out = np.empty((int(offsets[-1]), *kept.shape[1:]), kept.dtype)
    if together:
        out[...] = kept[first[0] : first[0] + offsets[-1]]
    else:
        copy_row_runs(kept, first, out, offsets[:-1], sizes)
    return out


def _row_bytes(arrays: list[np.ndarray]) -> int:
    """Bytes of one row of each of ``arrays`` together."""
    return sum(a.itemsize * (a.size // a.shape[0] if a.shape[0] else 1) for a in arrays)
