"""Skeleton coarsening (method "thin") against a plain-Python twin, and its promises."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from tests.helpers import examples
from tests.kernels.objects_strategies import Table, cells_of, forests
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.coarse_tables import CoarseGrid, coarse_cells
from zarr_vectors.kernels.coarsen_skeletons import (
    coarsen_skeletons,
    nearest_kept_ancestors,
    thin_keep,
)

Array = np.ndarray[Any, Any]


def naive_keep(parents: Array, chunk: Array, cell: Array) -> Array:
    n = parents.shape[0]
    children = [[c for c in range(n) if parents[c] == v] for v in range(n)]
    kept = np.zeros(n, bool)
    for v in range(n):
        p = parents[v]
        crossing = (p >= 0 and chunk[p] != chunk[v]) or any(
            chunk[c] != chunk[v] for c in children[v]
        )
        kept[v] = p < 0 or len(children[v]) != 1 or crossing or cell[v] != cell[p]
    return kept


def naive_ancestors(parents: Array, kept: Array) -> Array:
    out = np.empty(parents.shape[0], np.int64)
    for v in range(parents.shape[0]):
        u = v
        while not kept[u]:
            u = parents[u]
        out[v] = u
    return out


def fine_ancestors(parents: Array, v: int) -> list[int]:
    """Strict ancestors of v, nearest first."""
    out = []
    while parents[v] >= 0:
        v = int(parents[v])
        out.append(v)
    return out


@settings(max_examples=examples(50, 200), deadline=None)
@given(forests())
def test_thin_matches_the_twin(case: tuple[Table, Array]) -> None:
    table, parents = case
    chunk, cell = cells_of(table)
    kept = thin_keep(parents, chunk, cell, table.offsets)
    np.testing.assert_array_equal(kept, naive_keep(parents, chunk, cell))
    alive = np.ones(parents.shape[0], bool)
    np.testing.assert_array_equal(
        nearest_kept_ancestors(parents, kept, alive), naive_ancestors(parents, kept)
    )
    out = coarsen_skeletons(table.positions, parents, table.offsets, table.grid)
    np.testing.assert_array_equal(out.source, np.flatnonzero(kept))
    np.testing.assert_array_equal(out.positions, table.positions[kept])


@settings(max_examples=examples(50, 200), deadline=None)
@given(forests())
def test_thin_keeps_trees(case: tuple[Table, Array]) -> None:
    table, parents = case
    out = coarsen_skeletons(table.positions, parents, table.offsets, table.grid)
    chunk, _ = coarse_cells(table.positions, table.grid)
    source, coarse_parent = out.source, out.links
    n_children = np.bincount(parents[parents >= 0], minlength=parents.shape[0])
    coarse_children = np.bincount(coarse_parent[coarse_parent >= 0], minlength=source.shape[0])
    # same roots; leaves and branch points kept, and still leaves and branch points
    roots = np.flatnonzero(parents < 0)
    assert source[coarse_parent < 0].tolist() == roots.tolist()
    special = np.flatnonzero(n_children != 1)
    assert np.isin(special, source).all()
    np.testing.assert_array_equal(coarse_children == 0, n_children[source] == 0)
    np.testing.assert_array_equal(coarse_children >= 2, n_children[source] >= 2)
    for i, v in enumerate(source):
        if coarse_parent[i] < 0:
            continue
        # the coarse parent is the nearest kept fine ancestor; the skipped ones were dropped
        ancestors = fine_ancestors(parents, int(v))
        target = int(source[coarse_parent[i]])
        skipped = ancestors[: ancestors.index(target)]
        assert not np.isin(skipped, source).any()
        # a coarse edge crosses chunks iff it is a level-0 edge that does
        if chunk[target] != chunk[v]:
            assert parents[v] == target
    # fine edges that cross chunks are all coarse edges
    crossing = np.flatnonzero((parents >= 0) & (chunk != chunk[np.maximum(parents, 0)]))
    assert np.isin(crossing, source).all()
    pairs = set(
        zip(
            source[coarse_parent >= 0].tolist(),
            source[coarse_parent[coarse_parent >= 0]].tolist(),
            strict=True,
        )
    )
    assert {(int(v), int(parents[v])) for v in crossing} <= pairs
    # objects keep their vertices, and every vertex is a member of its nearest kept ancestor
    owner = np.repeat(np.arange(table.offsets.shape[0] - 1), np.diff(table.offsets))
    np.testing.assert_array_equal(
        np.diff(out.offsets), np.bincount(owner[source], minlength=table.offsets.shape[0] - 1)
    )
    np.testing.assert_array_equal(np.sort(out.members), np.arange(parents.shape[0]))


@settings(max_examples=100, deadline=None)
@given(forests())
def test_thin_drops_objects_left_out(case: tuple[Table, Array]) -> None:
    table, parents = case
    m = table.offsets.shape[0] - 1
    keep = np.arange(m) % 2 == 0
    out = coarsen_skeletons(table.positions, parents, table.offsets, table.grid, keep)
    full = coarsen_skeletons(table.positions, parents, table.offsets, table.grid)
    counts = np.diff(out.offsets)
    assert np.all(counts[~keep] == 0)
    np.testing.assert_array_equal(counts[keep], np.diff(full.offsets)[keep])


def test_thin_example_chain_through_bins() -> None:
    grid = CoarseGrid((8.0,), (2.0,), (0,))
    pos = np.array([[0.5], [1.0], [2.5], [3.0], [3.5], [4.5], [5.0]])
    out = coarsen_skeletons(pos, [-1, 0, 1, 2, 3, 4, 5], [0, 7], grid)
    assert out.source.tolist() == [0, 2, 5, 6]  # root, entries into bins 1 and 2, leaf
    assert out.links.tolist() == [-1, 0, 1, 2]
    assert out.member_offsets.tolist() == [0, 2, 5, 6, 7]


def test_thin_refuses_a_parent_in_another_object() -> None:
    with pytest.raises(InvalidInputError, match="same object"):
        coarsen_skeletons(np.zeros((3, 1)), [-1, 0, 1], [0, 2, 3], CoarseGrid((8.0,), (8.0,), (0,)))


def test_thin_refuses_a_cycle() -> None:
    parents = np.array([-1, 3, 1, 2, 0])  # 1 -> 3 -> 2 -> 1, one bin, one child each
    with pytest.raises(InvalidInputError, match="cycle"):
        coarsen_skeletons(np.zeros((5, 1)), parents, [0, 5], CoarseGrid((8.0,), (8.0,), (0,)))
