"""Warm reads of objects gather their references from the manifests decoded once per
reader (:class:`~zarr_vectors.query._decoded_index.DecodedIndex`): the same references as
decoding the asked manifests each time, a damaged manifest refused when first asked."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import ManifestError
from zarr_vectors.format.manifest import decode_object_index_bulk, encode_object_index_bulk
from zarr_vectors.query import _decoded_index
from zarr_vectors.query._decoded_index import DecodedIndex


def _index(seed: int, n_objects: int) -> tuple[np.ndarray, np.ndarray]:
    """An ``object_index`` of ``n_objects`` objects (some empty) of 3-d chunk references."""
    rng = np.random.default_rng(seed)
    run_object = np.sort(rng.integers(0, n_objects, rng.integers(0, 60)))
    run_chunk = rng.integers(0, 3, (run_object.shape[0], 3))
    run_fragment = rng.integers(0, 9, run_object.shape[0])
    return encode_object_index_bulk(run_object, run_chunk, run_fragment, n_objects)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_objects=st.integers(1, 12),
    asks=st.lists(st.lists(st.integers(0, 11), max_size=15), min_size=1, max_size=4),
    budget=st.sampled_from([0, 200, 2**20]),
)
def test_references_equal_a_decode_of_the_asked_manifests(
    seed: int, n_objects: int, asks: list[list[int]], budget: int
) -> None:
    """Asks in any order, repeats included, over several calls; within or past the budget."""
    data, offsets = _index(seed, n_objects)
    index = DecodedIndex(n_objects, 3)
    previous = _decoded_index.DECODED_INDEX_BYTES
    _decoded_index.DECODED_INDEX_BYTES = budget
    try:
        for ask in asks:
            dense = np.array([k % n_objects for k in ask], dtype=np.int64)
            got = index.references(data, offsets, dense)
            want = decode_object_index_bulk(data, offsets, dense, 3)
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.dtype
                np.testing.assert_array_equal(g, w)
    finally:
        _decoded_index.DECODED_INDEX_BYTES = previous
    assert index.used * 32 <= max(budget, 0) or index.used == 0


def test_a_damaged_manifest_is_refused_when_asked_and_keeps_nothing() -> None:
    data, offsets = _index(5, 4)
    data = data.copy()
    data[offsets[2] + 4 + 24] = 7  # object 2's first block: an unknown mode
    index = DecodedIndex(4, 3)
    with pytest.raises(ManifestError, match=r"object 2.*unknown mode 7"):
        index.references(data, offsets, np.array([0, 2]))
    assert (index.first < 0).all()
    got = index.references(data, offsets, np.array([3, 0]))
    want = decode_object_index_bulk(data, offsets, np.array([3, 0]), 3)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(ManifestError, match="object id outside"):
        index.references(data, offsets, np.array([0, 4]))


def test_references_kept_by_the_caller_are_gathered_as_decoded() -> None:
    """What a read of few manifests keeps (:meth:`DecodedIndex.keep`) gathers as the
    whole-index decode gives it; an id kept already is refused, nothing is kept then."""
    data, offsets = _index(8, 6)
    index = DecodedIndex(6, 3)
    np.testing.assert_array_equal(index.unknown(np.array([4, 1, 4])), [1, 4])
    assert index.gather(np.array([1])) is None
    new = np.array([1, 4])
    assert index.keep(new, decode_object_index_bulk(data, offsets, new, 3))
    np.testing.assert_array_equal(index.unknown(np.array([4, 1, 0, 5, 0])), [0, 5])
    dense = np.array([4, 1, 4])
    got = index.gather(dense)
    assert got is not None
    for g, w in zip(got, decode_object_index_bulk(data, offsets, dense, 3), strict=True):
        np.testing.assert_array_equal(g, w)
    used = index.used
    again = np.array([0, 4])
    assert not index.keep(again, decode_object_index_bulk(data, offsets, again, 3))
    assert index.used == used
    assert index.gather(np.array([0])) is None
