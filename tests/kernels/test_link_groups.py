""":func:`links_by_object` against its plain-numpy twin: a stable sort of the links by the
object of their first entry (``searchsorted`` of the offsets), the counts a ``bincount``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.kernels.link_groups import links_by_object


def _twin(links: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    owner = np.searchsorted(offsets, links[:, 0], side="right") - 1
    order = np.argsort(owner, kind="stable")
    return links[order], order, np.bincount(owner, minlength=offsets.shape[0] - 1)


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 5), min_size=1, max_size=9),
    k=st.integers(1, 3),
    data=st.data(),
)
def test_links_by_object_equals_a_stable_sort_by_owner(
    sizes: list[int], k: int, data: st.DataObject
) -> None:
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    if n == 0:
        return
    rows = data.draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), max_size=40))
    links = np.array(rows, dtype=np.int64).reshape(-1, k)
    found = links_by_object(links, offsets)
    want_links, want_order, want_counts = _twin(links, offsets)
    assert found.links is not None
    assert found.counts is not None
    np.testing.assert_array_equal(found.links, want_links)
    np.testing.assert_array_equal(found.counts, want_counts)
    grouped = bool(np.all(np.diff(want_order) > 0))
    assert (found.order is None) == grouped
    if found.order is not None:
        np.testing.assert_array_equal(found.order, want_order)


def test_a_first_entry_that_is_not_a_row_gives_nothing() -> None:
    offsets = np.array([0, 2, 4])
    for bad in ([[1, 0], [-1, 2]], [[4, 0]]):
        found = links_by_object(np.array(bad), offsets)
        assert found == (None, None, None)
    empty = links_by_object(np.empty((0, 2), np.int64), offsets)
    assert empty.order is None
    assert empty.counts is not None
    assert empty.counts.tolist() == [0, 0]
