"""Vertex rows an owners lookup decoded, reused by the object read of the same query.

A box query first finds the objects with a vertex in the box, decoding every ``vertices``
row of the chunks the box cuts (object fragments carry no bins, spec §8.3 step 5). The
objects found mostly lie in those same chunks, so the read of their rows takes the
positions of those chunks from the rows already decoded and reads only the others' (and the
attributes). The rows are handed from one step of a query to the next and then dropped:
nothing is kept between queries.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from zarr_vectors.format.names import VERTICES
from zarr_vectors.kernels.bin_runs import copy_row_runs
from zarr_vectors.read import LevelReader, RowRuns

__all__ = ["HeldRows", "copy_held_rows", "read_vertex_columns"]


class HeldRows(NamedTuple):
    """Every ``vertices`` row of some chunks, chunk after chunk.

    ``chunk_flat`` ascending flat chunk indices (at least one), ``counts`` each chunk's
    rows, ``rows`` the rows themselves (``counts.sum()`` of them); ``cached`` whether they
    were read through the open store's cache of decoded blocks (their blocks then lie
    there, decoded, for the object read to find). ``rows`` is None when they were only
    tested where they lie in that cache (:func:`copy_held_rows` then reads the runs it
    takes from there).
    """

    chunk_flat: np.ndarray
    counts: np.ndarray
    rows: np.ndarray | None
    cached: bool = False

    def first_rows(self, chunk_flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per chunk of ``chunk_flat``: where its rows start in :attr:`rows` (-1 when the
        chunk is not held) and how many there are (0 when not held)."""
        starts = np.cumsum(self.counts) - self.counts
        at = np.minimum(np.searchsorted(self.chunk_flat, chunk_flat), self.counts.shape[0] - 1)
        held = self.chunk_flat[at] == chunk_flat
        return np.where(held, starts[at], -1), np.where(held, self.counts[at], 0)


def copy_held_rows(
    reader: LevelReader, runs: RowRuns, chunk_flat: np.ndarray, held: HeldRows
) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``vertices`` rows of ``runs`` (run after run) with those of the runs ``held``
    holds copied in, and which runs those are; None when it holds none of them.

    ``chunk_flat``: the flat index of each chunk of ``runs.chunks``. A run is taken from
    ``held`` only when it lies within the chunk's held rows. On object storage nothing is
    taken: every row is then read in one request wave (a split read would cost a second
    round trip, more than the decoding it saves).
    """
    if not runs.chunk.shape[0] or not reader.io.is_local:
        return None
    base, count = held.first_rows(chunk_flat)
    taken = (base[runs.chunk] >= 0) & (runs.stop <= count[runs.chunk])
    if not taken.any():
        return None
    lengths = runs.stop - runs.start
    dest = np.cumsum(lengths) - lengths
    if held.rows is None:  # they lie in the cache of decoded blocks: the runs taken read there
        mine = RowRuns(
            runs.chunks, runs.chunk[taken], runs.start[taken], runs.stop[taken], runs.where
        )
        rows = reader.read_runs([VERTICES], mine)[0]
        start = np.cumsum(lengths[taken]) - lengths[taken]
    else:
        rows, start = held.rows, base[runs.chunk[taken]] + runs.start[taken]
    positions = np.empty((int(lengths.sum()), *rows.shape[1:]), dtype=rows.dtype)
    copy_row_runs(rows, start, positions, dest[taken], lengths[taken])
    return positions, taken


def read_vertex_columns(
    reader: LevelReader,
    names: list[str],
    runs: RowRuns,
    copied: tuple[np.ndarray, np.ndarray] | None,
    turns: bool,
) -> list[np.ndarray]:
    """Rows of the vertex columns ``names`` (``vertices`` first) for ``runs``, as
    :meth:`LevelReader.read_runs` returns them; ``copied``: what :func:`copy_held_rows`
    returned, whose runs of ``vertices`` rows are not read again.
    """
    if copied is None:
        return reader.read_runs(names, runs, turns=turns)
    positions, taken = copied
    rest = RowRuns(
        runs.chunks, runs.chunk[~taken], runs.start[~taken], runs.stop[~taken], runs.where
    )
    if rest.chunk.shape[0]:
        read = reader.read_runs([VERTICES], rest, turns=turns)[0]
        lengths = runs.stop - runs.start
        n = lengths[~taken]
        dest = (np.cumsum(lengths) - lengths)[~taken]
        copy_row_runs(read, np.cumsum(n) - n, positions, dest, n)
    attributes = reader.read_runs(names[1:], runs, turns=turns) if len(names) > 1 else []
    return [positions, *attributes]
