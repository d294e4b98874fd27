"""Hypothesis strategies of small object tables on a coarse grid (coarsening kernel tests).

Coordinates are multiples of 0.5 in [-8, 16), chunks are 8 wide and coarse bins 8, 4 or
2, so vertices often share a coarse bin or a chunk and sometimes lie on an edge.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from hypothesis import strategies as st

from zarr_vectors.kernels.coarse_tables import CoarseGrid

Array = np.ndarray[Any, Any]


class Table(NamedTuple):
    positions: Array
    offsets: Array
    grid: CoarseGrid


@st.composite
def grids(draw: st.DrawFn, dim: int) -> CoarseGrid:
    bins = [draw(st.sampled_from([8.0, 4.0, 2.0])) for _ in range(dim)]
    return CoarseGrid((8.0,) * dim, tuple(bins), (-1,) * dim)


@st.composite
def tables(draw: st.DrawFn, max_objects: int = 6, max_size: int = 14) -> Table:
    dim = draw(st.sampled_from([2, 3]))
    sizes = draw(st.lists(st.integers(0, max_size), max_size=max_objects))
    n = sum(sizes)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    steps = draw(st.lists(st.integers(-16, 31), min_size=n * dim, max_size=n * dim))
    positions = (np.asarray(steps, np.float64).reshape(n, dim) / 2).astype(dtype)
    offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
    return Table(positions, offsets, draw(grids(dim)))


def cells_of(table: Table) -> tuple[Array, Array]:
    """Chunk and cell keys by the spec's arithmetic, without the kernels (floor works for
    these coordinates: every value is exact in binary)."""
    pos = table.positions.astype(np.float64)
    chunk = np.floor(pos / 8.0).astype(np.int64)
    cell = np.floor(pos / np.asarray(table.grid.bin_shape)).astype(np.int64)
    return _keys(chunk), _keys(cell)


def _keys(coords: Array) -> Array:
    if coords.shape[0] == 0:
        return np.zeros(0, np.int64)
    _, inverse = np.unique(coords, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


@st.composite
def forests(draw: st.DrawFn) -> tuple[Table, Array]:
    """A table and the parents of a rooted tree per non-empty object, vertices of an object
    in a shuffled order (parents may come after their children)."""
    table = draw(tables())
    offsets = table.offsets
    parents = np.full(table.positions.shape[0], -1, np.int64)
    for k in range(offsets.shape[0] - 1):
        s, e = int(offsets[k]), int(offsets[k + 1])
        if e == s:
            continue
        tree = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, e - s)]
        perm = np.asarray(draw(st.permutations(range(e - s))), np.int64)
        # vertex i of the tree is stored at s + perm[i]
        for i, p in enumerate(tree):
            parents[s + perm[i]] = -1 if p < 0 else s + perm[p]
    return table, parents


@st.composite
def graphs(draw: st.DrawFn, width: int) -> tuple[Table, Array]:
    """A table and up to 40 links of ``width`` vertices, each inside one object."""
    table = draw(tables())
    offsets = table.offsets
    filled = [k for k in range(offsets.shape[0] - 1) if offsets[k + 1] > offsets[k]]
    rows = []
    if filled:
        for _ in range(draw(st.integers(0, 40))):
            k = draw(st.sampled_from(filled))
            s, e = int(offsets[k]), int(offsets[k + 1])
            rows.append([draw(st.integers(s, e - 1)) for _ in range(width)])
    return table, np.asarray(rows, np.int64).reshape(-1, width)
