"""The link-check kernels against their plain-numpy twins (the array operations they
replaced in the object writers' input checks)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.kernels.link_checks import first_mixed_link, parents_reach_roots


def naive_first_mixed_link(links: np.ndarray, vertex_object: np.ndarray) -> int:
    """Twin: every link's owners gathered at once, compared with its first vertex's."""
    owner = vertex_object[np.maximum(links, 0)]
    bad = np.flatnonzero(np.any((owner != owner[:, :1]) & (links >= 0), axis=1))
    return int(bad[0]) if bad.shape[0] else -1


@st.composite
def _links(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 8))
    vertex_object = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    width = draw(st.integers(2, 3))
    e = draw(st.integers(0, 6))
    first = st.integers(0, n - 1)
    rest = st.integers(-1, n - 1)  # -1: no vertex (a root's parent)
    rows = [[draw(first)] + [draw(rest) for _ in range(width - 1)] for _ in range(e)]
    return np.array(rows, dtype=np.int64).reshape(e, width), vertex_object


@settings(max_examples=60, deadline=None)
@given(_links())
def test_first_mixed_link_matches_its_twin(case: tuple[np.ndarray, np.ndarray]) -> None:
    assert first_mixed_link(*case) == naive_first_mixed_link(*case)


def test_first_mixed_link_skips_missing_parents_and_finds_the_first_mixed_face() -> None:
    vertex_object = np.array([0, 0, 0, 1, 1, 1])
    faces = np.array([[0, 1, 2], [3, 4, -1], [3, 4, 5], [2, 3, 4], [0, 5, 1]])
    assert first_mixed_link(faces, vertex_object) == 3
    assert naive_first_mixed_link(faces, vertex_object) == 3
    assert first_mixed_link(faces[:3], vertex_object) == -1


def naive_parents_reach_roots(parent: np.ndarray) -> bool:
    """Twin: pointer doubling; after ``2**k >= n`` jumps every vertex stands on its root
    or on the cycle it runs into."""
    n = parent.shape[0]
    root = parent < 0
    jump = np.where(root, np.arange(n), parent)
    for _ in range(max(1, n).bit_length()):
        jump = jump[jump]
    return bool(np.all(root[jump]))


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 12).flatmap(lambda n: st.lists(st.integers(-1, n - 1), min_size=n, max_size=n))
)
def test_parents_reach_roots_matches_pointer_doubling(parents: list[int]) -> None:
    parent = np.array(parents, dtype=np.int64)
    assert parents_reach_roots(parent) == naive_parents_reach_roots(parent)


def test_parents_reach_roots_on_a_long_chain_and_a_closed_one() -> None:
    chain = np.arange(1000, dtype=np.int64) - 1  # vertex i's parent is i - 1
    assert parents_reach_roots(chain)
    chain[0] = 999  # the chain closed into a ring
    assert not parents_reach_roots(chain)
    assert not parents_reach_roots(np.array([1, 0, -1]))
