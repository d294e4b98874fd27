"""The skeleton link kernel against its plain-numpy twin (masks, gathers, lexsort)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from zarr_vectors.kernels.tree_links import anchor_tree_links

Array = np.ndarray[Any, Any]
Places = tuple[Array, Array, Array]


def naive_tree_links(links: Array, places: Places, run_offsets: Array) -> tuple[Array, ...]:
    """Local links (a root's, or both ends in one chunk) by (anchor fragment, child row,
    link order); the others apart."""
    chunk, row, fragment = places
    child, parent = links[:, 0], links[:, 1]
    root = parent < 0
    safe = np.where(root, child, parent)
    local = root | (chunk[child] == chunk[safe])
    kept = np.flatnonzero(local)
    rows = np.stack([row[child[kept]], np.where(root[kept], -1, row[safe[kept]])], axis=1)
    anchor = run_offsets[chunk[child[kept]]] + fragment[child[kept]]
    order = np.lexsort((kept, rows[:, 0], anchor))
    per_fragment = np.bincount(anchor, minlength=int(run_offsets[-1]))
    offsets = np.concatenate([[0], np.cumsum(per_fragment)]).astype(np.int64)
    return rows[order].reshape(-1, 2), kept[order], offsets, np.flatnonzero(~local)


@st.composite
def trees(draw: st.DrawFn) -> tuple[Array, Places, Array]:
    """Vertices placed in chunks and fragments (rows unique per chunk), and links between
    them: ``[i, parent]`` in input order, shuffled, or with repeated children."""
    k = draw(st.integers(1, 4))
    runs = np.asarray(draw(st.lists(st.integers(1, 3), min_size=k, max_size=k)), np.int64)
    run_offsets = np.concatenate([[0], np.cumsum(runs)]).astype(np.int64)
    n = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    chunk = rng.integers(0, k, n)
    fragment = (rng.random(n) * runs[chunk]).astype(np.int64)
    row = np.empty(n, np.int64)
    for c in range(k):
        mine = np.flatnonzero(chunk == c)
        row[mine] = rng.permutation(mine.shape[0]) if draw(st.booleans()) else np.arange(len(mine))
    parent = rng.integers(-1, n, n)
    form = draw(st.sampled_from(["input", "shuffled", "repeated"]))
    child = np.arange(n, dtype=np.int64)
    if form == "shuffled":
        order = rng.permutation(n)
        child, parent = child[order], parent[order]
    elif form == "repeated":
        child = rng.integers(0, n, n)
    links = np.stack([child, parent], axis=1).astype(np.int64)
    return links, (chunk, row, fragment), run_offsets


@settings(max_examples=examples(60, 300), deadline=None)
@given(trees())
def test_anchor_tree_links_matches_numpy(case: tuple[Array, Places, Array]) -> None:
    links, places, run_offsets = case
    found = anchor_tree_links(links, places, run_offsets)
    rows, source, offsets, outside = naive_tree_links(links, places, run_offsets)
    np.testing.assert_array_equal(found.rows, rows)
    np.testing.assert_array_equal(found.source, source)
    np.testing.assert_array_equal(found.offsets, offsets)
    np.testing.assert_array_equal(found.outside, outside)


def test_anchor_tree_links_both_orders() -> None:
    """A chain in one chunk and one fragment, rows reversed: links in input order come by
    descending child row (the row sort runs first), reversed links by ascending row (one
    sort); both give the rows by child row."""
    n = 6
    places = (np.zeros(n, np.int64), np.arange(n)[::-1].copy(), np.zeros(n, np.int64))
    run_offsets = np.array([0, 1], np.int64)
    links = np.stack([np.arange(n), np.arange(n) - 1], axis=1).astype(np.int64)
    for given_links in (links, links[::-1].copy()):
        found = anchor_tree_links(given_links, places, run_offsets)
        assert found.rows[:, 0].tolist() == list(range(n))
        assert found.rows[:, 1].tolist() == [1, 2, 3, 4, 5, -1]
        assert found.offsets.tolist() == [0, n]
        assert found.outside.shape == (0,)
    empty = anchor_tree_links(np.empty((0, 2), np.int64), places, run_offsets)
    assert empty.rows.shape == (0, 2)
    assert empty.offsets.tolist() == [0, 0]
