"""Clipped object results carry exactly the input's links among the returned vertices (§8.2).

Every link of a clipped result (for polylines and streamlines: its ``edges``, the consecutive
input vertices both in the region; for graphs and skeletons: edges; for meshes: faces) is a link
of the input between the same input vertices, and every input link whose vertices are all in the
box is returned. Returned vertices are matched with input vertices by a vertex attribute ``idx``
holding the input vertex's index.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.test_meshes import random_faces
from zarr_vectors.result.shapes import polyline_links

CHUNK = 4.0
BIN = 2.0


def _walks(rng: np.random.Generator, m: int, ndim: int, dtype: Any) -> list[np.ndarray]:
    """Random walks in ``[-8, 8)``, about half of the coordinates on bin and chunk faces."""
    lines = []
    for _ in range(m):
        n = int(rng.integers(1, 12))
        walk = np.cumsum(rng.normal(0.0, 2.0, (n, ndim)), axis=0) + rng.uniform(-6, 6, ndim)
        on_face = rng.random((n, ndim)) < 0.5
        lines.append(np.where(on_face, np.round(walk / BIN) * BIN, walk).astype(dtype))
    return lines


def _polyline_links(lines: list[np.ndarray]) -> np.ndarray:
    """``(E, 2)`` input vertex indices of consecutive vertices of one polyline."""
    starts = np.cumsum([0] + [len(line) for line in lines])
    pairs = [
        np.stack([np.arange(a, b - 1), np.arange(a + 1, b)], axis=1)
        for a, b in itertools.pairwise(starts)
    ]
    return np.concatenate(pairs).astype(np.int64).reshape(-1, 2)


def _inside(positions: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    p = positions.astype(np.float64)
    return np.all((p >= lo) & (p < hi), axis=1)


def _returned_links(result: zv.QueryResult) -> np.ndarray:
    """The clipped result's links as rows of ``positions`` (a polyline without ``edges``:
    the consecutive rows of each object's run of ``offsets``)."""
    links = result.faces if result.faces is not None else result.edges
    if links is None:
        return polyline_links(result.offsets)
    return np.asarray(links, dtype=np.int64)


def check_clipped_links(
    result: zv.QueryResult,
    positions: np.ndarray,
    links: np.ndarray,
    lo: Any,
    hi: Any,
    *,
    undirected: bool = False,
) -> None:
    """Returned links ⊆ input links restricted to the returned vertices, and none missing.

    ``undirected``: an edge ``[u, v]`` is the edge ``[v, u]`` (undirected graphs).
    """
    idx = np.asarray(result.attributes["idx"], dtype=np.int64)
    inside = _inside(positions, np.asarray(lo, np.float64), np.asarray(hi, np.float64))
    np.testing.assert_array_equal(np.sort(idx), np.flatnonzero(inside))
    returned = idx[_returned_links(result)]
    kept = links[np.all(inside[links], axis=1)]
    if undirected:
        returned, kept = np.sort(returned, axis=1), np.sort(kept, axis=1)
    got = {tuple(row) for row in returned.tolist()}
    expected = {tuple(row) for row in kept.tolist()}
    assert got <= expected, f"spurious links: {sorted(got - expected)[:5]}"
    assert expected <= got, f"missing links: {sorted(expected - got)[:5]}"


def _polyline_store(lines: list[np.ndarray], kind: str = "polyline") -> zv.VectorStore:
    store = MemoryStore()
    n = sum(len(line) for line in lines)
    zv.write_polylines(
        store,
        lines,
        kind=kind,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes={"idx": np.arange(n, dtype=np.int64)},
    )
    return zv.open(store)


def test_clipped_polyline_that_leaves_and_reenters_the_box_is_not_joined_across_the_gap() -> None:
    line = np.array([[1.0, 1.0], [9.0, 1.0], [1.0, 2.0]])  # out of [0, 5)^2 and back
    store = _polyline_store([line])
    clipped = store.query(([0, 0], [5, 5]), clip=True)
    np.testing.assert_array_equal(clipped.positions, line[[0, 2]])
    check_clipped_links(clipped, line, _polyline_links([line]), [0, 0], [5, 5])


def _boxes(rng: np.random.Generator, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    lo = rng.uniform(-9, 6, ndim)
    lo = np.where(rng.random(ndim) < 0.5, np.round(lo / BIN) * BIN, lo)
    return lo, lo + rng.integers(1, 6, ndim) * BIN / 2


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    ndim=st.integers(2, 3),
    dtype=st.sampled_from([np.float32, np.float64]),
    kind=st.sampled_from(["polyline", "streamline"]),
)
def test_clipped_polylines_carry_exactly_the_input_links(
    seed: int, ndim: int, dtype: Any, kind: str
) -> None:
    rng = np.random.default_rng(seed)
    lines = _walks(rng, int(rng.integers(1, 8)), ndim, dtype)
    store = _polyline_store(lines, kind)
    positions, links = np.concatenate(lines), _polyline_links(lines)
    for _ in range(4):
        lo, hi = _boxes(rng, ndim)
        check_clipped_links(store.query((lo, hi), clip=True), positions, links, lo, hi)


def _objects_of(
    rng: np.random.Generator, n: int, ndim: int, dtype: Any
) -> tuple[np.ndarray, np.ndarray]:
    positions = rng.uniform(-8, 8, (n, ndim))
    on_face = rng.random((n, ndim)) < 0.5
    positions = np.where(on_face, np.round(positions / BIN) * BIN, positions).astype(dtype)
    labels = np.sort(rng.integers(0, 4, n))
    return positions, labels


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    ndim=st.integers(2, 3),
    dtype=st.sampled_from([np.float32, np.float64]),
    kind=st.sampled_from(["graph", "skeleton", "mesh"]),
)
def test_clipped_graphs_skeletons_and_meshes_carry_exactly_the_input_links(
    seed: int, ndim: int, dtype: Any, kind: str
) -> None:
    rng = np.random.default_rng(seed)
    positions, labels = _objects_of(rng, int(rng.integers(3, 30)), ndim, dtype)
    store = MemoryStore()
    common: dict[str, Any] = {
        "vertex_objects": labels,
        "chunk_shape": CHUNK,
        "bin_shape": BIN,
        "attributes": {"idx": np.arange(len(positions), dtype=np.int64)},
    }
    if kind == "mesh":
        links = np.asarray(random_faces(rng, labels), dtype=np.int64)
        zv.write_mesh(store, positions, links, allow_degenerate=True, **common)
    elif kind == "graph":
        links = _random_edges(rng, labels)
        zv.write_graph(store, positions, links, **common)
    else:
        parents = _random_parents(rng, labels)
        child = np.flatnonzero(parents >= 0)
        links = np.stack([child, parents[child]], axis=1)
        zv.write_skeletons(store, positions, parents=parents, **common)
    opened = zv.open(store)
    for _ in range(4):
        lo, hi = _boxes(rng, ndim)
        clipped = opened.query((lo, hi), clip=True)
        check_clipped_links(clipped, positions, links, lo, hi, undirected=kind == "graph")


def _random_edges(rng: np.random.Generator, labels: np.ndarray) -> np.ndarray:
    """Distinct edges ``u < v`` between vertices of the same object."""
    pairs = [
        (u, v)
        for u in range(len(labels))
        for v in range(u + 1, len(labels))
        if labels[u] == labels[v] and rng.random() < 0.3
    ]
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def _random_parents(rng: np.random.Generator, labels: np.ndarray) -> np.ndarray:
    """A forest per object: each vertex's parent is an earlier vertex of its object, or -1."""
    parents = np.full(len(labels), -1, dtype=np.int64)
    for v in range(len(labels)):
        earlier = np.flatnonzero(labels[:v] == labels[v])
        if earlier.size:
            parents[v] = int(rng.choice(earlier))
    return parents
