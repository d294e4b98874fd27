"""Fragment references of an object read, in one pass each (spec §7.6).

The steps of :class:`~zarr_vectors.query._object_plan.ObjectPlan` that work on every
reference: the chunk slot of each reference, its fragment's rows, and the order of the
references by (chunk slot, first row). Each is a gather or a counting sort over dense keys
where the keys are few enough, and a comparison sort otherwise; both give the same arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels.radix_order import radix_order

__all__ = [
    "FragmentTable",
    "dense_enough",
    "joined_runs",
    "slot_order",
]

_DENSE = (8, 65_536)
"""A table of ``k`` dense keys is used for ``n`` items when ``k <= a * n + b``."""


def dense_enough(n_keys: int, n_items: int) -> bool:
    """Whether ``n_keys`` dense keys are few enough for a table over ``n_items`` items.

    Examples
    --------
    >>> dense_enough(100, 10), dense_enough(10**9, 10)
    (True, False)
    """
    per_item, slack = _DENSE
    return n_keys <= per_item * n_items + slack


class FragmentTable(NamedTuple):
    """Every fragment of the chunks read, chunk after chunk (spec §6).

    Attributes
    ----------
    starts, sizes
        ``(f,)`` first row and row count of every fragment.
    base
        ``(k + 1,)`` first fragment of each chunk slot (and the total).
    rows
        ``(k,)`` row count of each chunk slot.
    """

    starts: np.ndarray
    sizes: np.ndarray
    base: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, ranges: list[tuple[np.ndarray, np.ndarray]], rows: np.ndarray) -> FragmentTable:
        """The table of per-chunk ``(starts, sizes)`` and the chunks' row counts.

        Examples
        --------
        >>> ranges = [(np.array([0, 2]), np.array([2, 1])), (np.array([0]), np.array([4]))]
        >>> FragmentTable.of(ranges, np.array([3, 4])).base.tolist()
        [0, 2, 3]
        """
        counts = np.array([len(starts) for starts, _ in ranges], dtype=np.int64)
        base = np.zeros(counts.shape[0] + 1, np.int64)
        np.cumsum(counts, out=base[1:])
        if not ranges:
            return cls(np.empty(0, np.int64), np.empty(0, np.int64), base, rows)
        starts = np.concatenate([s for s, _ in ranges]).astype(np.int64, copy=False)
        sizes = np.concatenate([c for _, c in ranges]).astype(np.int64, copy=False)
        return cls(starts, sizes, base, np.asarray(rows, np.int64))

    def rows_of(
        self, slot: np.ndarray, fragment: np.ndarray, chunks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """First row and row count of each reference ``(slot, fragment)``.

        Raises
        ------
        CorruptChunkError
            When a reference names a fragment its chunk does not have (``chunks``: the
            chunk index of each slot, for the message).

        Examples
        --------
        >>> ranges = [(np.array([0, 2]), np.array([2, 1])), (np.array([0]), np.array([4]))]
        >>> table = FragmentTable.of(ranges, np.array([3, 4]))
        >>> starts, sizes = table.rows_of(np.array([1, 0]), np.array([0, 1]), np.zeros((2, 1)))
        >>> starts.tolist(), sizes.tolist()
        ([0, 2], [4, 1])
        """
        have = np.diff(self.base)
        bad = fragment >= have[slot]
        if bad.any():
            first = int(slot[bad].min())
            worst = int(fragment[slot == first].max())
            raise CorruptChunkError(
                f"chunk {tuple(chunks[first])}: a manifest names fragment {worst} of "
                f"{int(have[first])}"
            )
        at = self.base[slot] + fragment
        return self.starts[at], self.sizes[at]


_RADIX_KEYS = 2**32
""":func:`slot_order` sorts by bytes when the keys are below this (four passes at most)."""


def slot_order(slot: np.ndarray, starts: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The stable order of references by (chunk slot, first row).

    Equal to ``np.lexsort((starts, slot))``. One key per reference, ``first row of the
    slot's key range + start``, each slot's range one longer than its rows (a start may
    equal the row count: an empty last fragment); a radix sort of the keys by bytes when
    they need at most four (:func:`~zarr_vectors.kernels.radix_order.radix_order`: a
    counting sort's table over the ~50,000 keys of a box's chunks cost more than sorting
    its ~3,000 references), a stable sort of the one key otherwise.

    Parameters
    ----------
    slot
        ``(n,)`` int64 chunk slot of each reference.
    starts
        ``(n,)`` int64 first row of each reference's fragment, in ``[0, rows[slot]]``.
    rows
        ``(k,)`` row count of each slot.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 permutation.

    Examples
    --------
    >>> slot_order(np.array([1, 0, 1, 0]), np.array([3, 2, 0, 2]), np.array([5, 4])).tolist()
    [1, 3, 2, 0]
    """
    if not slot.shape[0]:
        return np.empty(0, np.int64)
    key_base = np.zeros(rows.shape[0] + 1, np.int64)
    np.cumsum(rows + 1, out=key_base[1:])
    if int(starts.min()) < 0 or np.any(starts > rows[slot]):  # not a key of its slot
        return np.lexsort((starts, slot))
    keys = key_base[slot] + starts
    total = int(key_base[-1])
    if total <= _RADIX_KEYS:
        return radix_order(keys, total)
    return np.argsort(keys, kind="stable")


def joined_runs(
    slot: np.ndarray, start: np.ndarray, stop: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row runs with each run that starts where the one before it in the same slot stops
    joined to it: the same rows in the same order, in fewer runs (fewer pieces to plan and
    copy when they are read).

    Parameters
    ----------
    slot, start, stop
        ``(m,)`` int64 chunk slot, first row and stop row of every run, in order.

    Returns
    -------
    slot, start, stop : numpy.ndarray
        The joined runs.

    Examples
    --------
    >>> slot, start, stop = np.array([0, 0, 0, 1]), np.array([0, 4, 9, 9]), np.array([4, 7, 12, 10])
    >>> s, a, b = joined_runs(slot, start, stop)
    >>> s.tolist(), a.tolist(), b.tolist()
    ([0, 0, 1], [0, 9, 9], [7, 12, 10])
    """
    n = start.shape[0]
    if n < 2:
        return slot, start, stop
    head = np.empty(n, dtype=bool)
    head[0] = True
    np.not_equal(slot[1:], slot[:-1], out=head[1:])
    head[1:] |= start[1:] != stop[:-1]
    first = np.flatnonzero(head)
    if first.shape[0] == n:
        return slot, start, stop
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = n - 1
    return slot[first], start[first], stop[last]
