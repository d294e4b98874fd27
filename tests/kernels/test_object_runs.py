"""The object-run kernels against plain-numpy twins (argsort, lexsort, unique, repeat)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.kernels import naive
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels import _threads
from zarr_vectors.kernels.bin_runs import move_runs
from zarr_vectors.kernels.face_links import anchor_faces
from zarr_vectors.kernels.object_runs import (
    chain_links,
    cut_runs,
    place_runs,
    rank_keys,
    stable_counting_sort,
    vertex_places,
)

Array = np.ndarray[Any, Any]


# -- numpy twins ------------------------------------------------------------------------------
def naive_cut_runs(chunk: Array, bins: Array, offsets: Array) -> tuple[Array, Array, Array]:
    n = chunk.shape[0]
    new = np.ones(n, dtype=bool)
    new[1:] = (chunk[1:] != chunk[:-1]) | (bins[1:] != bins[:-1])
    inner = offsets[1:-1]
    new[inner[inner < n]] = True
    starts = np.flatnonzero(new)
    return starts, np.searchsorted(offsets, starts, side="right") - 1, chunk[starts]


def naive_place_runs(starts: Array, rank: Array, owner: Array, n: int, k: int) -> tuple[Array, ...]:
    lengths = np.diff(np.append(starts, n))
    order = np.argsort(rank, kind="stable")
    run_offsets = np.concatenate([[0], np.cumsum(np.bincount(rank, minlength=k))])
    vertex_offsets = np.concatenate(
        [[0], np.cumsum(np.bincount(rank, weights=lengths, minlength=k).astype(np.int64))]
    )
    fragment = np.empty_like(rank)
    row = np.empty_like(rank)
    for c in range(k):
        runs = order[run_offsets[c] : run_offsets[c + 1]]
        fragment[runs] = np.arange(runs.shape[0])
        row[runs] = np.cumsum(lengths[runs]) - lengths[runs]
    destination = vertex_offsets[rank] + row
    stored = (row[order], lengths[order], owner[order])
    return destination, vertex_offsets, run_offsets, fragment, row, *stored


def naive_storage_order(starts: Array, rank: Array, n: int) -> Array:
    """Input vertex of every stored row: the runs chunk by chunk, in input order."""
    lengths = np.diff(np.append(starts, n))
    order = np.argsort(rank, kind="stable")
    pieces = [np.arange(s, s + size) for s, size in zip(starts[order], lengths[order], strict=True)]
    return np.concatenate([np.empty(0, np.int64), *pieces])


def naive_vertex_places(
    starts: Array, rank: Array, row: Array, fragment: Array, n: int
) -> tuple[Array, Array, Array]:
    lengths = np.diff(np.append(starts, n))
    run = np.repeat(np.arange(starts.shape[0]), lengths)
    within = np.arange(n) - starts[run]
    return rank[run], row[run] + within, fragment[run]


def naive_chain_links(
    offsets: Array, places: tuple[Array, Array, Array], run_offsets: Array, ids: Array, n_max: int
) -> tuple[Array, Array, Array]:
    """The general edge path: explicit chain edges, lexsort by (chunk, fragment, edge)."""
    chunk, row, fragment = places
    n = chunk.shape[0]
    a = np.asarray(
        [v for k in range(offsets.shape[0] - 1) for v in range(offsets[k], offsets[k + 1] - 1)],
        dtype=np.int64,
    )
    b = a + 1
    same = chunk[a] == chunk[b]
    inside = np.flatnonzero(same)
    order = np.lexsort((inside, fragment[a[inside]], chunk[a[inside]]))
    rows = np.stack([row[a[inside]], row[b[inside]]], axis=1)[order].reshape(-1, 2)
    global_fragment = run_offsets[chunk[a[inside]]] + fragment[a[inside]]
    counts = np.bincount(global_fragment, minlength=run_offsets[-1])
    gid = ids[chunk] * n_max + row if n else np.empty(0, np.int64)
    out = np.flatnonzero(~same)
    pairs = np.stack([gid[a[out]], gid[b[out]]], axis=1).reshape(-1, 2)
    cross = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    return rows, counts, cross


# -- strategies -------------------------------------------------------------------------------
@st.composite
def objects(draw: st.DrawFn) -> tuple[Array, Array, Array]:
    """Chunk and bin keys of vertices (in runs, as a walk gives) and object offsets."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(0, 80))
    m = draw(st.integers(0 if n == 0 else 1, 8))
    inner = np.sort(rng.integers(0, n + 1, max(m - 1, 0)))
    offsets = np.concatenate([[0], inner, [n]]).astype(np.int64) if m else np.zeros(1, np.int64)
    steps = rng.random(n) < draw(st.sampled_from([0.1, 0.5, 1.0]))
    chunk = np.cumsum(steps * rng.integers(1, 5, n)) % draw(st.integers(1, 6))
    bins = rng.integers(0, draw(st.integers(1, 3)), n)
    return chunk.astype(np.int64), bins.astype(np.int64), offsets


def _prepared(chunk: Array, bins: Array, offsets: Array) -> tuple[Any, ...]:
    starts, owner, keys = cut_runs(chunk, bins, offsets)
    rank, occupied = rank_keys(keys, int(chunk.max(initial=0)) + 1)
    placed = place_runs(starts, rank, owner, chunk.shape[0], occupied.shape[0])
    return starts, owner, rank, occupied, placed


# -- tests ------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(objects())
def test_cut_runs_matches_numpy(case: tuple[Array, Array, Array]) -> None:
    chunk, bins, offsets = case
    for got, want in zip(
        cut_runs(chunk, bins, offsets), naive_cut_runs(chunk, bins, offsets), strict=True
    ):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=40), st.booleans())
def test_rank_keys_matches_unique(keys: list[int], sparse: bool) -> None:
    values = np.asarray(keys, dtype=np.int64) * (10**9 if sparse else 1)
    ranks, occupied = rank_keys(values, int(values.max(initial=0)) + 1)
    expected_occupied, expected_ranks = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(occupied, expected_occupied)
    np.testing.assert_array_equal(ranks, expected_ranks.reshape(-1))


@settings(max_examples=150, deadline=None)
@given(objects())
def test_place_runs_matches_a_stable_sort(case: tuple[Array, Array, Array]) -> None:
    chunk, bins, offsets = case
    starts, owner, rank, occupied, placed = _prepared(chunk, bins, offsets)
    expected = naive_place_runs(starts, rank, owner, chunk.shape[0], occupied.shape[0])
    for got, want in zip(placed, expected, strict=True):
        np.testing.assert_array_equal(got, want)
    # moving each run to its destination stores the vertices chunk by chunk, stably
    values = np.arange(chunk.shape[0], dtype=np.int64) * 3 + 1
    lengths = np.diff(np.append(starts, chunk.shape[0]))
    stored = move_runs(values, lengths, placed.run_destination) if chunk.shape[0] else values
    np.testing.assert_array_equal(stored, values[naive_storage_order(starts, rank, chunk.shape[0])])


@settings(max_examples=150, deadline=None)
@given(objects())
def test_vertex_places_match_repeat(case: tuple[Array, Array, Array]) -> None:
    chunk, bins, offsets = case
    starts, _, rank, _, placed = _prepared(chunk, bins, offsets)
    fragment, row = placed.run_fragment, placed.run_row
    got = vertex_places(starts, rank, row, fragment, chunk.shape[0])
    want = naive_vertex_places(starts, rank, row, fragment, chunk.shape[0])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@settings(max_examples=examples(50, 200), deadline=None)
@given(objects(), st.sampled_from([np.int32, np.int64]), st.integers(1, 3), st.booleans())
def test_chain_links_match_explicit_edges(
    case: tuple[Array, Array, Array], dtype: type, scale: int, sliced: bool
) -> None:
    """Also with the runs cut into slices of a few runs filled in threads."""
    with pytest.MonkeyPatch.context() as patch:
        if sliced:
            patch.setattr(_threads, "_MIN_ROWS", 2)
            patch.setattr(_threads, "THREADS", 3)
        _check_chain_links(case, dtype, scale)


def _check_chain_links(case: tuple[Array, Array, Array], dtype: type, scale: int) -> None:
    chunk, bins, offsets = case
    n = chunk.shape[0]
    starts, owner, rank, occupied, placed = _prepared(chunk, bins, offsets)
    vertex_offsets, run_offsets = placed.vertex_offsets, placed.run_offsets
    fragment, row = placed.run_fragment, placed.run_row
    ids = occupied * 7 + 3
    n_max = int(np.diff(vertex_offsets).max(initial=0)) * scale
    parts = (starts, owner, rank, row, fragment)
    rows, counts, cross = chain_links(parts, run_offsets, n, (ids, n_max), dtype)
    places = naive_vertex_places(starts, rank, row, fragment, n)
    want_rows, want_counts, want_cross = naive_chain_links(offsets, places, run_offsets, ids, n_max)
    assert rows.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_array_equal(cross, want_cross)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=60))
def test_stable_counting_sort_matches_argsort(keys: list[int]) -> None:
    values = np.asarray(keys, dtype=np.int64)
    order, offsets = stable_counting_sort(values, 10)
    np.testing.assert_array_equal(order, np.argsort(values, kind="stable"))
    expected = np.concatenate([[0], np.cumsum(np.bincount(values, minlength=10))])
    np.testing.assert_array_equal(offsets, expected)


def test_runs_break_at_objects_chunks_and_bins() -> None:
    chunk = np.array([0, 0, 0, 1, 1, 1, 1], np.int64)
    bins = np.array([0, 0, 1, 1, 1, 1, 1], np.int64)
    offsets = np.array([0, 5, 5, 7], np.int64)  # object 1 is empty
    starts, owner, keys = cut_runs(chunk, bins, offsets)
    assert starts.tolist() == [0, 2, 3, 5]
    assert owner.tolist() == [0, 0, 0, 2]
    assert keys.tolist() == [0, 0, 1, 1]


@pytest.mark.parametrize("n_range", [5, 10**12])
def test_rank_keys_dense_and_sparse_ranges(n_range: int) -> None:
    keys = np.array([4, 0, 4, 2], np.int64)
    ranks, occupied = rank_keys(keys, n_range)
    assert occupied.tolist() == [0, 2, 4]
    assert ranks.tolist() == [2, 0, 2, 1]


@st.composite
def meshes(draw: st.DrawFn) -> tuple[Any, ...]:
    """Triangles over vertices on and near chunk edges (side 0.3), their chunks as ranks."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dim = draw(st.integers(2, 4))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    n = draw(st.integers(3, 40))
    size = np.full(dim, 0.3)
    edges = rng.integers(-3, 4, (n, dim)) * size
    jitter = rng.choice([0.0, 1e-7, -1e-7, 0.1, 0.15], (n, dim))
    positions = (edges + jitter).astype(dtype)
    chunks = naive.chunk_coords(positions, size)
    origin = chunks.min(axis=0) - draw(st.integers(0, 2))
    grids, ranks = np.unique(chunks - origin, axis=0, return_inverse=True)
    faces = rng.integers(0, n, (draw(st.integers(0, 30)), 3))
    rows = rng.integers(0, 100, n)
    gid = rng.integers(0, 10**6, n)
    return positions, faces, (ranks.reshape(-1), rows), gid, grids, (size, origin)


def _with_fragments(case: tuple[Any, ...], rng: np.random.Generator) -> tuple[Any, ...]:
    """A mesh case with 1-3 fragments per chunk and a fragment number for each vertex."""
    positions, faces, (ranks, rows), gid, grids, grid = case
    per_chunk = rng.integers(1, 4, len(grids))
    run_offsets = np.concatenate([[0], np.cumsum(per_chunk)]).astype(np.int64)
    fragment = rng.integers(0, per_chunk[ranks]) if len(ranks) else ranks
    return positions, faces, (ranks, rows, fragment), run_offsets, gid, grids, grid


@settings(max_examples=150, deadline=None)
@given(meshes(), st.integers(0, 2**32 - 1))
def test_anchor_faces_match_numpy(case: tuple[Any, ...], seed: int) -> None:
    full = _with_fragments(case, np.random.default_rng(seed))
    got = anchor_faces(*full)
    want = naive.anchor_faces(*full)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    rows, order, offsets = got
    assert rows.dtype == np.int32  # small ids: the dtype links/0 stores
    assert sorted(order.tolist()) == list(range(len(case[1])))
    assert offsets[-1] == len(case[1])
    assert np.all(np.diff(offsets) >= 0)


def test_face_rows_are_int64_when_a_global_id_does_not_fit_int32() -> None:
    positions = np.array([[0.5, 0.5], [1.5, 0.5], [0.6, 0.6]])
    chunk, row = np.array([0, 1, 0]), np.array([0, 0, 1])
    gid = np.array([0, 2**31, 1])
    rows, _, _ = anchor_faces(
        positions,
        np.array([[0, 1, 2]]),
        (chunk, row, np.zeros(3, np.int64)),
        np.array([0, 1, 2]),
        gid,
        np.array([[0, 0], [1, 0]]),
        (np.ones(2), np.zeros(2, np.int64)),
    )
    assert rows.dtype == np.int64
    assert rows.tolist() == [[0, -(2**31) - 1, 1]]


def test_a_face_whose_centroid_is_too_large_is_refused() -> None:
    positions = np.array([[1e300, 0.0], [1e300, 0.0], [1e300, 0.0]])
    ranks = np.zeros(3, np.int64)
    with pytest.raises(InvalidInputError, match="face 0"):
        anchor_faces(
            positions,
            np.array([[0, 1, 2]]),
            (ranks, ranks, ranks),
            np.array([0, 1]),
            ranks,
            np.zeros((1, 2), np.int64),
            (np.full(2, 1e-3), np.zeros(2, np.int64)),
        )
