"""Objects kept whole after their second read (:class:`Assembled`): a read they serve equals,
bit for bit, the read of a handle without caches; results never share the kept memory; the
links of every object read come grouped by object."""

from __future__ import annotations

from itertools import pairwise
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.object_stores import random_object_store
from zarr_vectors.query import _object_plan as object_plan
from zarr_vectors.query import object_queries
from zarr_vectors.query._assembled import Assembled, gathered
from zarr_vectors.query._object_plan import GROUPED_LINKS, grouped_links

KINDS = ("streamline", "graph", "skeleton", "mesh")


def _written(kind: str, seed: int, m: int = 10) -> MemoryStore:
    """``m`` random objects of ``kind`` crossing chunks, with vertex, object and (graphs)
    link attributes and external ids."""
    return random_object_store(kind, seed, m, max_len=14, id_step=7, edge_weights=True)


def _same(got: zv.QueryResult, want: zv.QueryResult) -> None:
    """Every field equal, of the same dtype and shape, bit for bit."""
    pairs: list[tuple[Any, Any]] = [
        (got.positions, want.positions),
        (got.vertex_object_ids, want.vertex_object_ids),
        (got.object_ids, want.object_ids),
        (got.offsets, want.offsets),
        (got.edges, want.edges),
        (got.faces, want.faces),
    ]
    for name in ("attributes", "object_attributes", "link_attributes"):
        mine, theirs = getattr(got, name), getattr(want, name)
        assert list(mine) == list(theirs)
        pairs += [(mine[k], theirs[k]) for k in theirs]
    for a, b in pairs:
        assert (a is None) == (b is None)
        if a is not None:
            assert a.dtype == b.dtype
            assert a.shape == b.shape
            assert a.tobytes() == b.tobytes()
    assert (got.kind, got.level, got.axis_names) == (want.kind, want.level, want.axis_names)


_BOXES = st.tuples(
    st.lists(st.floats(-5, 60, allow_nan=False), min_size=3, max_size=3),
    st.lists(st.floats(1, 40, allow_nan=False), min_size=3, max_size=3),
)
_REQUESTS = st.lists(
    st.one_of(
        st.tuples(st.just("box"), _BOXES),
        st.tuples(st.just("ids"), st.lists(st.integers(0, 9), min_size=1, max_size=6)),
    ),
    min_size=1,
    max_size=6,
)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=25, deadline=None)
@given(requests=_REQUESTS, seed=st.integers(0, 3))
def test_reads_served_by_kept_objects_equal_reads_without_caches(
    kind: str, requests: list[tuple[str, Any]], seed: int
) -> None:
    store = _written(kind, seed)
    cached, plain = zv.open(store), zv.open(store, cache_bytes=0)
    ids = plain.object_ids
    served = 0
    for what, arg in requests * 3:  # every request three times: kept from the second on
        if what == "box":
            lo = np.asarray(arg[0])
            box = (lo, lo + np.asarray(arg[1]))
            got, want = cached.query(box), plain.query(box)
        else:
            pick = ids[np.unique(np.asarray(arg) % ids.shape[0])]
            got, want = cached.read_objects(pick), plain.read_objects(pick)
        _same(got, want)
        served += int(got.object_ids is not None and got.object_ids.shape[0] > 0)
    kept = cached._objects_at(0)._kept
    assert (kept.nbytes > 0) == (served > 0)
    assert plain._objects_at(0)._kept.nbytes == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_result_does_not_share_the_kept_memory(kind: str) -> None:
    store = _written(kind, 1)
    cached, plain = zv.open(store), zv.open(store, cache_bytes=0)
    ids = plain.object_ids[[0, 2, 3]]
    first = cached.read_objects(ids)
    for _ in range(2):  # kept after the second read; the third and fourth are served by it
        served = cached.read_objects(ids)
        fields = [served.positions, served.edges, served.faces, *served.attributes.values()]
        for values in fields + list(served.link_attributes.values()):
            if values is not None:
                values[...] = 0
    assert cached._objects_at(0)._kept.nbytes > 0
    _same(cached.read_objects(ids), plain.read_objects(ids))
    _same(cached.read_objects(ids[::-1]), plain.read_objects(ids[::-1]))
    assert first.positions.any()


def _offered(
    kept: Assembled, dense: list[int], sizes: list[int], references: int = 1000
) -> np.ndarray:
    """Offer objects ``dense`` of ``sizes`` rows each (row ``r`` of object ``d`` holds
    ``100 * d + r``; each object a chain of links), read from ``references`` fragment
    references; returns the rows."""
    rows = np.concatenate([100.0 * d + np.arange(s) for d, s in zip(dense, sizes, strict=True)])
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    links = np.concatenate(
        [np.stack([np.arange(a + 1, b), np.arange(a, b - 1)], 1) for a, b in pairwise(offsets)]
    ).astype(np.int64)
    counts = np.maximum(np.asarray(sizes) - 1, 0)
    linked = (links, counts, {"k": links[:, 0] * 2})
    kept.offer(np.asarray(dense, np.int64), ([rows], offsets), linked, references)
    return rows


def test_objects_are_kept_on_their_second_read_and_served_in_any_order() -> None:
    kept = Assembled(2**20, 10)
    _offered(kept, [1, 4, 7], [3, 2, 4])
    assert kept.take(np.array([1]))[0] is None  # read once: not kept
    _offered(kept, [4, 7, 9], [2, 4, 1])
    assert kept.take(np.array([1]))[0] is None
    some, which = kept.take(np.array([4, 9]))  # 9 read once
    assert which.tolist() == [True, False]
    assert some is not None
    assert gathered(some).columns[0].tolist() == [400, 401]
    taken, which = kept.take(np.array([7, 4]))
    assert which.all()
    assert taken is not None
    found = gathered(taken)
    assert found is not None
    assert found.columns[0].tolist() == [700, 701, 702, 703, 400, 401]
    assert found.offsets.tolist() == [0, 4, 6]
    assert found.links is not None
    assert found.links.tolist() == [[1, 0], [2, 1], [3, 2], [5, 4]]
    assert (found.link_columns["k"] // 2).tolist() == [3, 4, 5, 1]  # as offered: not re-based


def test_nothing_is_kept_without_a_budget_or_beyond_its_share_for_one_read() -> None:
    none = Assembled(0, 10)
    for _ in range(3):
        _offered(none, [1, 2], [5, 5])
    assert none.take(np.array([1]))[0] is None
    assert none.nbytes == 0
    # 10 rows of 8 bytes, 8 links of 8 (int32 pairs) and 8 bytes: 208, over an eighth of 1,600
    small = Assembled(1_600, 10)
    for _ in range(3):
        _offered(small, [1, 2], [5, 5])
    assert small.take(np.array([1]))[0] is None
    assert small.nbytes == 0


def test_objects_of_large_fragments_are_not_kept() -> None:
    kept = Assembled(2**20, 10)
    for _ in range(3):  # 100 rows of 8 bytes and 98 links of 24: over 512 bytes a reference
        _offered(kept, [1, 2], [50, 50], references=5)
    assert kept.take(np.array([1]))[0] is None
    for _ in range(2):
        _offered(kept, [1, 2], [50, 50], references=7)
    assert kept.take(np.array([1]))[0] is not None


def test_keeping_past_the_budget_lets_every_kept_object_go_first() -> None:
    kept = Assembled(600_000, 40)
    for d in range(40):  # 2,000 rows and 1,999 links an object: ~64 KB
        for _ in range(2):
            _offered(kept, [d], [2000])
        assert kept.take(np.array([d]))[0] is not None
        assert kept.nbytes <= 600_000
    assert kept.take(np.array([0]))[0] is None  # let go to keep the later ones


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 6), min_size=1, max_size=8),
    data=st.data(),
)
def test_grouped_links_is_a_stable_sort_by_the_object_of_the_first_entry(
    sizes: list[int], data: st.DataObject
) -> None:
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    if n == 0:
        return
    links = np.array(
        data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30)),
        dtype=np.int64,
    ).reshape(-1, 2)
    column = np.arange(links.shape[0], dtype=np.float32)
    got, columns, counts = grouped_links(links, {"c": column}, offsets)
    owner = np.searchsorted(offsets, links[:, 0], side="right") - 1
    order = np.argsort(owner, kind="stable")
    np.testing.assert_array_equal(got, links[order])
    np.testing.assert_array_equal(columns["c"], column[order])
    assert counts is not None
    np.testing.assert_array_equal(counts, np.bincount(owner, minlength=len(sizes)))


def test_grouped_links_leaves_links_whose_first_entry_is_not_a_row() -> None:
    links = np.array([[3, 0], [-1, 2], [0, 1]])
    for bad in (links, links + np.array([9, 0])):
        got, _, counts = grouped_links(bad, {}, np.array([0, 2, 4]))
        assert got is bad
        assert counts is None


@pytest.mark.parametrize("kind", ["graph", "skeleton", "mesh"])
def test_the_links_of_a_read_come_object_by_object(kind: str) -> None:
    handle = zv.open(_written(kind, 2), cache_bytes=0)
    for found in (handle.read_objects(handle.object_ids), handle.query(([0, 0, 0], [30, 30, 30]))):
        links = found.edges if found.edges is not None else found.faces
        assert links is not None
        assert found.offsets is not None
        owner = np.searchsorted(found.offsets, links[:, 0], side="right") - 1
        assert links.shape[0] > 0
        assert np.all(np.diff(owner) >= 0)


def test_links_beyond_the_grouped_count_are_left_in_storage_order() -> None:
    offsets = np.array([0, 2, 4])
    links = np.tile(np.array([[3, 2], [1, 0]]), (GROUPED_LINKS // 2 + 1, 1))
    got, _, counts = grouped_links(links, {}, offsets)
    assert got is links
    assert counts is None
    fewer, _, counts = grouped_links(links[:4], {}, offsets)
    assert fewer.tolist() == [[1, 0], [1, 0], [3, 2], [3, 2]]
    assert counts is not None


@pytest.mark.parametrize("kind", ["graph", "skeleton", "mesh"])
def test_reads_past_the_grouped_count_equal_reads_without_caches(kind: str) -> None:
    store = _written(kind, 3)
    cached, plain = zv.open(store), zv.open(store, cache_bytes=0)
    ids = plain.object_ids
    small, large = ids[:2], ids
    found = plain.read_objects(small)
    limit = len(found.edges if found.edges is not None else found.faces)  # type: ignore[arg-type]
    with (
        mock.patch.object(object_plan, "GROUPED_LINKS", limit),
        mock.patch.object(object_queries, "GROUPED_LINKS", limit),
    ):
        for pick in [small, small, small]:
            _same(cached.read_objects(pick), plain.read_objects(pick))
        assert cached._objects_at(0)._kept.nbytes > 0  # kept: the reads below meet them
        for pick in [large, large, ids[:1], ids[::-1], ids[:3], ids[:3], small]:
            _same(cached.read_objects(pick), plain.read_objects(pick))
        box = (np.zeros(3), np.full(3, 25.0))
        for _ in range(3):
            _same(cached.query(box), plain.query(box))
