"""The mixed-link kernel against its plain-numpy twin (the array operations it replaced in
the object writers' input checks)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.kernels.link_checks import first_mixed_link


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
