"""Objects are coarsened independently: any split of the objects into batches gives the
same coarse level, back to back (what streaming and parallel writers rely on)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.kernels.objects_strategies import Table, forests, graphs, tables
from zarr_vectors.kernels.coarse_tables import CoarseObjects
from zarr_vectors.kernels.coarsen_clusters import coarsen_graphs, coarsen_meshes
from zarr_vectors.kernels.coarsen_polylines import coarsen_polylines
from zarr_vectors.kernels.coarsen_skeletons import coarsen_skeletons

Array = np.ndarray[Any, Any]
NO_LINKS = np.zeros((0, 2), np.int64)
Coarsen = Callable[[Array, Array, Array], CoarseObjects]


def in_batches(table: Table, links: Array, cut: int, coarsen: Coarsen) -> list[Array]:
    """Coarsen objects [0, cut) and [cut, m) apart and join the results in global indices."""
    off = table.offsets
    parts = []
    for lo, hi in ((0, cut), (cut, off.shape[0] - 1)):
        v0, v1 = int(off[lo]), int(off[hi])
        sub = Table(table.positions[v0:v1], off[lo : hi + 1] - v0, table.grid)
        if links.ndim == 1:  # parents: rows are vertices
            sub_links = np.where(links[v0:v1] >= 0, links[v0:v1] - v0, -1)
        else:
            sub_links = links[((links >= v0) & (links < v1)).all(axis=1)] - v0
        parts.append((coarsen(sub.positions, sub_links, sub.offsets), v0))
    (a, a0), (b, b0) = parts
    n_a = a.source.shape[0]
    shifted = np.where(b.links >= 0, b.links + n_a, b.links)  # roots stay -1
    return [
        np.concatenate([a.positions, b.positions]),
        np.concatenate([a.offsets, b.offsets[1:] + a.offsets[-1]]),
        np.concatenate([a.source + a0, b.source + b0]),
        np.concatenate([a.members + a0, b.members + b0]),
        np.concatenate([a.links, shifted]),
    ]


def whole(out: CoarseObjects) -> list[Array]:
    return [out.positions, out.offsets, out.source, out.members, out.links]


def assert_same(one: list[Array], two: list[Array]) -> None:
    for x, y in zip(one, two, strict=True):
        np.testing.assert_array_equal(x, y)


@settings(max_examples=100, deadline=None)
@given(tables(), st.data())
def test_polylines_by_batches(table: Table, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, table.offsets.shape[0] - 1))

    def run(pos: Array, _: Array, off: Array) -> CoarseObjects:
        return coarsen_polylines(pos, off, table.grid)

    assert_same(
        whole(run(table.positions, NO_LINKS, table.offsets)), in_batches(table, NO_LINKS, cut, run)
    )


@settings(max_examples=examples(25, 100), deadline=None)
@given(forests(), st.data())
def test_skeletons_by_batches(case: tuple[Table, Array], data: st.DataObject) -> None:
    table, parents = case
    cut = data.draw(st.integers(0, table.offsets.shape[0] - 1))

    def run(pos: Array, par: Array, off: Array) -> CoarseObjects:
        return coarsen_skeletons(pos, par, off, table.grid)

    assert_same(
        whole(run(table.positions, parents, table.offsets)), in_batches(table, parents, cut, run)
    )


@settings(max_examples=examples(25, 100), deadline=None)
@given(graphs(2), st.data())
def test_graphs_by_batches(case: tuple[Table, Array], data: st.DataObject) -> None:
    table, edges = case
    cut = data.draw(st.integers(0, table.offsets.shape[0] - 1))

    def run(pos: Array, links: Array, off: Array) -> CoarseObjects:
        return coarsen_graphs(pos, links, off, table.grid, directed=True)

    assert_same(
        whole(run(table.positions, edges, table.offsets)), in_batches(table, edges, cut, run)
    )


@settings(max_examples=examples(25, 100), deadline=None)
@given(graphs(3), st.data())
def test_meshes_by_batches(case: tuple[Table, Array], data: st.DataObject) -> None:
    table, faces = case
    cut = data.draw(st.integers(0, table.offsets.shape[0] - 1))

    def run(pos: Array, links: Array, off: Array) -> CoarseObjects:
        return coarsen_meshes(pos, links, off, table.grid)

    assert_same(
        whole(run(table.positions, faces, table.offsets)), in_batches(table, faces, cut, run)
    )
