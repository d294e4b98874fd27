"""Input validation of object writers: the fast paths give what the general ones give."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.geometry.graphs import group_vertices, link_array


def _unique_grouping(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, offsets and dense object numbers by ``np.unique`` (the general path)."""
    unique, dense, counts = np.unique(labels, return_inverse=True, return_counts=True)
    return unique, np.concatenate([[0], np.cumsum(counts)]), dense.reshape(-1)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=40),
    st.sampled_from(["<i8", "<i4", ">i8", "<u4"]),
)
def test_sorted_labels_group_as_unique_does(values: list[int], dtype: str) -> None:
    """Ascending labels (the fast path) give the grouping ``np.unique`` gives."""
    kind = np.dtype(dtype)
    info = np.iinfo(kind)
    labels = np.sort(np.clip(values, info.min, info.max)).astype(kind)
    found = group_vertices(labels, labels.shape[0])
    unique, offsets, dense = _unique_grouping(labels)
    assert found.order is None
    assert found.labels is not None
    assert found.labels.tolist() == unique.tolist()
    assert found.offsets.dtype == np.int64
    assert found.offsets.tolist() == offsets.tolist()
    assert found.vertex_object.dtype == np.int64
    assert found.vertex_object.tolist() == dense.tolist()


def test_unsorted_labels_still_group_by_sorting() -> None:
    """Labels out of order keep the general path (an order that sorts the vertices)."""
    found = group_vertices(np.array([5, 2, 5, 2, 9]), 5)
    assert found.order is not None
    assert found.order.tolist() == [1, 3, 0, 2, 4]
    assert found.labels is not None
    assert found.labels.tolist() == [2, 5, 9]
    assert found.vertex_object.tolist() == [1, 0, 1, 0, 2]


@pytest.mark.parametrize("dtype", ["<i8", "<u2"])
def test_links_in_range_pass_as_int64_copies(dtype: str) -> None:
    links = np.array([[0, 1, 2], [3, 2, 1]], dtype=dtype)
    found = link_array(links, 4, 3, "face")
    assert found.dtype == np.int64
    assert found.tolist() == links.tolist()
    assert not np.shares_memory(found, links)


@pytest.mark.parametrize(
    ("links", "root_column", "message"),
    [
        ([[0, 1], [4, 2]], -1, "edge 1 refers to vertex 4, outside 0..3"),
        ([[0, 1], [2, -1]], -1, "edge 1 refers to vertex -1, outside 0..3"),
        ([[0, -1], [-1, 1]], 1, "edge 1 refers to vertex -1, outside 0..3 (-1 only"),
    ],
)
def test_links_out_of_range_name_the_first(
    links: list[list[int]], root_column: int, message: str
) -> None:
    """Only ``root_column`` allows -1 (a root's parent); the first bad entry is named."""
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        link_array(np.array(links), 4, 2, "edge", root_column=root_column)
