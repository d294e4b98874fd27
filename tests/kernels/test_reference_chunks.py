"""The chunks of fragment references, checked, numbered and located in one kernel call,
equal a reference-by-reference twin (and the plan's fallback for large grids)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.reference_chunks import reference_chunks
from zarr_vectors.query._object_plan import _sparse_chunks


@st.composite
def references(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A small grid, references to chunks in it (now and then one outside), and some of
    its chunks occupied."""
    dim = draw(st.integers(1, 3))
    shape = np.array(draw(st.lists(st.integers(1, 4), min_size=dim, max_size=dim)), np.int64)
    n = draw(st.integers(0, 12))
    coord = st.lists(st.integers(-1, 4), min_size=dim, max_size=dim)
    inside = st.tuples(*[st.integers(0, int(g) - 1) for g in shape]).map(list)
    refs = draw(st.lists(st.one_of(inside, inside, inside, coord), min_size=n, max_size=n))
    cells = int(np.prod(shape))
    occupied = np.array(sorted(draw(st.sets(st.integers(0, cells - 1)))), np.int64)
    counts = np.arange(1, occupied.shape[0] + 1, dtype=np.int64) * 10
    return np.array(refs, np.int64).reshape(n, dim), shape, occupied, counts


def _same(got: tuple[Any, ...], want: tuple[Any, ...]) -> None:
    """Equal answers: ``where`` and ``rows`` only matter when every chunk is occupied."""
    assert got[0] == want[0]
    if want[0] >= 0:
        return
    assert got[6] == want[6]
    for i in (1, 2, 3) if want[6] >= 0 else (1, 2, 3, 4, 5):
        np.testing.assert_array_equal(got[i], want[i])


@settings(max_examples=300, deadline=None)
@given(references())
def test_reference_chunks_equal_the_twin(case: tuple[np.ndarray, ...]) -> None:
    refs, shape, occupied, counts = case
    got = reference_chunks(refs, shape, occupied, counts)
    _same(tuple(got), naive.reference_chunks(refs, shape, occupied, counts))


@settings(max_examples=200, deadline=None)
@given(references())
def test_the_fallback_for_large_grids_agrees(case: tuple[np.ndarray, ...]) -> None:
    refs, shape, occupied, counts = case
    got = reference_chunks(refs, shape, occupied, counts)
    other = _sparse_chunks(refs, tuple(int(g) for g in shape), occupied, counts)
    _same(tuple(other), tuple(got))


@settings(max_examples=100, deadline=None)
@given(references())
def test_every_reference_lands_on_its_chunk(case: tuple[np.ndarray, ...]) -> None:
    refs, shape, occupied, counts = case
    got = reference_chunks(refs, shape, occupied, counts)
    assume(got.outside < 0)
    np.testing.assert_array_equal(got.chunks[got.ref_slot], refs)
    assert np.all(np.diff(got.chunk_flat) > 0)
