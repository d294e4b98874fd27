"""Graph and mesh coarsening (method "cluster") against plain-Python twins, and promises."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.kernels.objects_strategies import Table, cells_of, graphs
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.coarse_tables import CoarseGrid
from zarr_vectors.kernels.coarsen_clusters import (
    _bad_link,
    cluster_vertices,
    coarsen_graphs,
    coarsen_meshes,
    component_labels,
    first_unique_rows,
    representatives,
)

Array = np.ndarray[Any, Any]


def naive_components(n: int, edges: Array) -> Array:
    """Smallest vertex of every vertex's component, by repeated relaxation."""
    label = np.arange(n)
    changed = True
    while changed:
        changed = False
        for a, b in edges.tolist():
            low = min(label[a], label[b])
            if label[a] != low or label[b] != low:
                label[a] = label[b] = low
                changed = True
    return label


def naive_clusters(label: Array, cell: Array) -> list[list[int]]:
    groups: dict[tuple[int, int], list[int]] = {}
    for v in range(label.shape[0]):
        groups.setdefault((int(label[v]), int(cell[v])), []).append(v)
    return sorted(groups.values())


def naive_representative(positions: Array, members: list[int]) -> int:
    pos = positions.astype(np.float64)
    mean = [sum(float(pos[v, d]) for v in members) / len(members) for d in range(pos.shape[1])]
    dist = [sum((float(pos[v, d]) - mean[d]) ** 2 for d in range(pos.shape[1])) for v in members]
    return members[int(np.argmin(dist))]


def check_clusters(out: Any, table: Table, clusters: list[list[int]]) -> Array:
    """Compare sources, members and offsets to the twin; return the vertex -> cluster map."""
    members = [
        out.members[a:b].tolist()
        for a, b in zip(out.member_offsets[:-1], out.member_offsets[1:], strict=True)
    ]
    assert members == clusters
    assert out.source.tolist() == [naive_representative(table.positions, c) for c in clusters]
    np.testing.assert_array_equal(out.positions, table.positions[out.source])
    owner = np.repeat(np.arange(table.offsets.shape[0] - 1), np.diff(table.offsets))
    counts = np.bincount(owner[out.source], minlength=table.offsets.shape[0] - 1)
    np.testing.assert_array_equal(np.diff(out.offsets), counts)
    mapping = np.full(table.positions.shape[0], -1)
    for i, c in enumerate(clusters):
        mapping[c] = i
    return mapping


@settings(max_examples=examples(50, 200), deadline=None)
@given(graphs(2), st.booleans())
def test_graph_clusters_match_the_twin(case: tuple[Table, Array], directed: bool) -> None:
    table, edges = case
    edges = edges[edges[:, 0] != edges[:, 1]]
    n = table.positions.shape[0]
    np.testing.assert_array_equal(component_labels(n, edges), naive_components(n, edges))
    _, cell = cells_of(table)
    out = coarsen_graphs(table.positions, edges, table.offsets, table.grid, directed=directed)
    mapping = check_clusters(out, table, naive_clusters(naive_components(n, edges), cell))
    expected: list[tuple[int, int]] = []
    sources: list[int] = []
    canonical = edges if directed else np.sort(edges, axis=1)
    for i in sorted(range(edges.shape[0]), key=lambda i: (tuple(canonical[i].tolist()), i)):
        a, b = mapping[edges[i]].tolist()
        pair = (a, b) if directed else (min(a, b), max(a, b))
        if a != b and pair not in expected:
            expected.append(pair)
            sources.append(i)
    assert [tuple(e) for e in out.links.tolist()] == expected
    assert out.link_source.tolist() == sources


@settings(max_examples=examples(50, 200), deadline=None)
@given(graphs(2))
def test_graph_clusters_keep_connectivity(case: tuple[Table, Array]) -> None:
    table, edges = case
    n = table.positions.shape[0]
    out = coarsen_graphs(table.positions, edges, table.offsets, table.grid)
    fine = component_labels(n, edges)
    coarse = component_labels(out.source.shape[0], out.links)
    # two coarse vertices are connected iff their level-0 vertices were
    same_coarse = coarse[:, None] == coarse[None, :]
    same_fine = fine[out.source][:, None] == fine[out.source][None, :]
    np.testing.assert_array_equal(same_coarse, same_fine)
    assert np.all(out.links[:, 0] < out.links[:, 1])  # no self-loop, undirected as (min, max)
    assert np.unique(out.links, axis=0).shape[0] == out.links.shape[0]


def faces_without_repeats(faces: Array) -> Array:
    kept: Array = faces[
        (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    ]
    return kept


@settings(max_examples=examples(50, 200), deadline=None)
@given(graphs(3))
def test_mesh_clusters_match_the_twin(case: tuple[Table, Array]) -> None:
    table, faces = case
    faces = faces_without_repeats(faces)
    owner = np.repeat(np.arange(table.offsets.shape[0] - 1), np.diff(table.offsets))
    _, cell = cells_of(table)
    out = coarsen_meshes(table.positions, faces, table.offsets, table.grid)
    mapping = check_clusters(out, table, naive_clusters(owner, cell))
    expected: list[tuple[int, ...]] = []
    seen: list[frozenset[int]] = []
    for i in sorted(range(faces.shape[0]), key=lambda i: (tuple(faces[i].tolist()), i)):
        face = mapping[faces[i]].tolist()
        if len(set(face)) == 3 and frozenset(face) not in seen:
            seen.append(frozenset(face))
            expected.append(tuple(face))
    assert [tuple(f) for f in out.links.tolist()] == expected


@settings(max_examples=examples(50, 200), deadline=None)
@given(graphs(3))
def test_mesh_faces_are_images_of_fine_faces(case: tuple[Table, Array]) -> None:
    table, faces = case
    faces = faces_without_repeats(faces)
    out = coarsen_meshes(table.positions, faces, table.offsets, table.grid)
    cluster = np.empty(table.positions.shape[0], np.int64)
    group = np.repeat(np.arange(out.source.shape[0]), np.diff(out.member_offsets))
    cluster[out.members] = group
    assert out.links.shape[0] <= faces.shape[0]  # face count non-increasing
    # no degenerate face, no two faces on one vertex set
    links = out.links
    assert np.all(
        (links[:, 0] != links[:, 1]) & (links[:, 1] != links[:, 2]) & (links[:, 0] != links[:, 2])
    )
    assert np.unique(np.sort(links, axis=1), axis=0).shape[0] == links.shape[0]
    # each comes from its level-0 face with the same cyclic order (winding kept)
    np.testing.assert_array_equal(cluster[faces[out.link_source]], links)


@settings(max_examples=examples(25, 100), deadline=None)
@given(graphs(3))
def test_mesh_objects_left_out_have_nothing(case: tuple[Table, Array]) -> None:
    table, faces = case
    faces = faces_without_repeats(faces)
    m = table.offsets.shape[0] - 1
    keep = np.arange(m) % 2 == 1
    out = coarsen_meshes(table.positions, faces, table.offsets, table.grid, keep=keep)
    full = coarsen_meshes(table.positions, faces, table.offsets, table.grid)
    assert np.all(np.diff(out.offsets)[~keep] == 0)
    np.testing.assert_array_equal(np.diff(out.offsets)[keep], np.diff(full.offsets)[keep])
    assert out.links.shape[0] == np.isin(full.source[full.links[:, 0]], out.source).sum()


@settings(max_examples=100, deadline=None)
@given(graphs(3), st.randoms(use_true_random=False))
def test_cluster_levels_do_not_depend_on_link_input_order(
    case: tuple[Table, Array], rnd: Any
) -> None:
    table, faces = case
    faces = faces_without_repeats(faces)
    perm = np.asarray(rnd.sample(range(faces.shape[0]), faces.shape[0]), np.int64)
    one = coarsen_meshes(table.positions, faces, table.offsets, table.grid)
    two = coarsen_meshes(table.positions, faces[perm], table.offsets, table.grid)
    np.testing.assert_array_equal(one.links, two.links)
    np.testing.assert_array_equal(faces[one.link_source], faces[perm][two.link_source])
    edges = faces[:, :2][faces[:, 0] != faces[:, 1]]
    swapped = edges[perm[perm < edges.shape[0]]][:, ::-1]  # reordered, and reversed
    a = coarsen_graphs(table.positions, edges, table.offsets, table.grid)
    b = coarsen_graphs(table.positions, swapped, table.offsets, table.grid)
    np.testing.assert_array_equal(a.links, b.links)
    np.testing.assert_array_equal(a.source, b.source)


def test_representative_ties_go_to_the_smallest_vertex() -> None:
    pos = np.array([[0.0], [2.0], [1.0], [1.0]])
    assert representatives(pos, [0, 4], [0, 1, 2, 3]).tolist() == [2]


def test_directed_graph_keeps_both_directions() -> None:
    grid = CoarseGrid((8.0,), (2.0,), (0,))
    pos = np.array([[0.5], [2.5], [0.7], [2.7]])
    out = coarsen_graphs(pos, [[0, 1], [3, 2], [2, 3], [0, 2]], [0, 4], grid, directed=True)
    assert out.links.tolist() == [[0, 1], [1, 0]]
    assert out.link_source.tolist() == [0, 1]


def test_cluster_refuses_links_across_objects() -> None:
    grid = CoarseGrid((8.0,), (8.0,), (0,))
    with pytest.raises(InvalidInputError, match="one object"):
        coarsen_graphs(np.zeros((4, 1)), [[0, 3]], [0, 2, 4], grid)
    with pytest.raises(InvalidInputError, match="vertex indices"):
        coarsen_meshes(np.zeros((4, 1)), [[0, 1, 9]], [0, 4], grid)


@settings(deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), max_size=30),
    st.sampled_from([1, 2**40]),
)
def test_first_unique_rows_match_the_twin(rows: list[tuple[int, int, int]], scale: int) -> None:
    """Small rows take the one-key sort, scaled ones (beyond int64 as one key) the lexsort."""
    keys = np.asarray(rows, np.int64).reshape(-1, 3) * scale
    seen: set[tuple[int, ...]] = set()
    expected = []
    for i, row in enumerate(keys.tolist()):
        if tuple(row) not in seen:
            seen.add(tuple(row))
            expected.append(i)
    assert first_unique_rows(keys).tolist() == expected


@settings(deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(-2, 3), st.booleans()), max_size=30),
    st.sampled_from([1, 2**40]),
)
def test_cluster_vertices_match_the_twin(rows: list[tuple[int, int, bool]], scale: int) -> None:
    label = np.asarray([r[0] for r in rows], np.int64) * scale
    cell = np.asarray([r[1] for r in rows], np.int64) * scale
    alive = np.asarray([r[2] for r in rows], bool)
    cluster, count = cluster_vertices(label, cell, alive)
    groups: dict[tuple[int, int], list[int]] = {}
    for v in np.flatnonzero(alive).tolist():
        groups.setdefault((int(label[v]), int(cell[v])), []).append(v)
    expected = np.full(len(rows), -1)
    for i, members in enumerate(sorted(groups.values())):
        expected[members] = i
    assert count == len(groups)
    np.testing.assert_array_equal(cluster, expected)


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 6), st.integers(-1, 6)), max_size=20))
def test_link_check_matches_the_twin(rows: list[tuple[int, int]]) -> None:
    owner = np.array([0, 0, 0, 1, 1, 2])
    links = np.asarray(rows, np.int64).reshape(-1, 2)
    outside = (links < 0) | (links >= owner.shape[0])
    joined = ~outside.any(axis=1) & (
        owner[np.clip(links[:, 0], 0, 5)] != owner[np.clip(links[:, 1], 0, 5)]
    )
    bad = outside.any(axis=1) | joined
    if not bad.any():
        assert _bad_link(links, owner) == (-1, False)
    else:
        row = int(np.argmax(bad))
        assert _bad_link(links, owner) == (row, bool(outside[row].any()))
