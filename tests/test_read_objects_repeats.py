"""``read_objects`` with ids repeated in the request (issue 35, item 4).

The result of a request equals the single-id reads concatenated in request order: each
object's positions, attributes, ids and object attributes, and its links (edges or faces,
re-based onto its rows in the result) with their per-link attributes, for every kind.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.helpers import examples
from tests.object_stores import random_object_store

KINDS = ("polyline", "streamline", "graph", "skeleton", "mesh")


@functools.cache
def _store(kind: str, m: int = 8, seed: int = 5) -> zv.VectorStore:
    """A small in-memory store of ``m`` random objects of ``kind`` crossing chunks."""
    return zv.open(random_object_store(kind, seed, m, max_len=12))


def _links(result: zv.QueryResult) -> np.ndarray | None:
    return result.edges if result.edges is not None else result.faces


def _per_object(result: zv.QueryResult, i: int) -> dict[str, Any]:
    """Object ``i`` of ``result`` on its own: its rows, and its links re-based to them."""
    assert result.offsets is not None
    assert result.object_ids is not None
    lo, hi = int(result.offsets[i]), int(result.offsets[i + 1])
    found: dict[str, Any] = {
        "positions": result.positions[lo:hi],
        "attributes": {k: v[lo:hi] for k, v in result.attributes.items()},
        "vertex_object_ids": None
        if result.vertex_object_ids is None
        else result.vertex_object_ids[lo:hi],
        "object_id": result.object_ids[i],
        "object_attributes": {k: v[i] for k, v in result.object_attributes.items()},
    }
    links = _links(result)
    if links is not None:
        mine = (links[:, 0] >= lo) & (links[:, 0] < hi)
        found["links"] = links[mine] - lo
        found["link_attributes"] = {k: v[mine] for k, v in result.link_attributes.items()}
    return found


def _concatenated(store: zv.VectorStore, ids: list[int]) -> zv.QueryResult:
    """The single-id reads of ``ids``, concatenated in order, links re-based."""
    parts = [store.read_objects([i]) for i in ids]
    first = store.read_objects(ids[:1] or np.empty(0, np.int64))
    if not parts:
        return first
    sizes = [len(p) for p in parts]
    starts = (np.cumsum(sizes, dtype=np.int64) - np.asarray(sizes, np.int64)).astype(np.int64)
    links = [_links(p) for p in parts]
    joined = (
        None
        if links[0] is None
        else np.concatenate([lk + s for lk, s in zip(links, starts, strict=True)])  # type: ignore[operator]
    )
    return zv.QueryResult(
        positions=np.concatenate([p.positions for p in parts]),
        attributes={k: np.concatenate([p.attributes[k] for p in parts]) for k in first.attributes},
        vertex_object_ids=np.concatenate([p.vertex_object_ids for p in parts]),  # type: ignore[misc]
        object_ids=np.concatenate([p.object_ids for p in parts]),  # type: ignore[misc]
        offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        edges=joined if first.edges is not None else None,
        faces=joined if first.faces is not None else None,
        object_attributes={
            k: np.concatenate([p.object_attributes[k] for p in parts])
            for k in first.object_attributes
        },
        link_attributes={
            k: np.concatenate([p.link_attributes[k] for p in parts]) for k in first.link_attributes
        },
    )


def _assert_same_objects(got: zv.QueryResult, want: zv.QueryResult) -> None:
    """Same objects in the same order, each equal field by field (links re-based)."""
    assert got.object_ids is not None
    assert want.object_ids is not None
    np.testing.assert_array_equal(got.object_ids, want.object_ids)
    np.testing.assert_array_equal(got.offsets, want.offsets)
    assert (got.edges is None) == (want.edges is None)
    assert (got.faces is None) == (want.faces is None)
    got_links, want_links = _links(got), _links(want)
    if got_links is not None and want_links is not None:
        assert got_links.shape == want_links.shape
    for i in range(got.object_ids.shape[0]):
        a, b = _per_object(got, i), _per_object(want, i)
        assert a.keys() == b.keys()
        for key, value in a.items():
            if isinstance(value, dict):
                assert value.keys() == b[key].keys()
                for name, column in value.items():
                    np.testing.assert_array_equal(column, b[key][name], err_msg=f"{key} {name}")
            else:
                np.testing.assert_array_equal(value, b[key], err_msg=f"object {i}: {key}")


@pytest.mark.parametrize("kind", KINDS)
def test_repeated_id_reads_the_object_twice_with_its_own_links(kind: str) -> None:
    """The finding: ``read_objects([a, b, a])`` broke the link tables of object kinds."""
    store = _store(kind)
    ids = [int(i) for i in store.read().object_ids]  # type: ignore[union-attr]
    a, b = ids[1], ids[3]
    got = store.read_objects([a, b, a])
    _assert_same_objects(got, _concatenated(store, [a, b, a]))
    links = _links(got)
    if links is not None:
        assert links.min(initial=0) >= 0
        assert links.max(initial=0) < len(got)


@settings(max_examples=examples(20, 60), deadline=None)
@given(data=st.data(), kind=st.sampled_from(KINDS))
def test_any_request_equals_single_reads_concatenated(data: st.DataObject, kind: str) -> None:
    """Property: any id list (empty, repeats, every id repeated) equals the single-id
    reads concatenated in request order, links re-based."""
    store = _store(kind)
    ids = [int(i) for i in store.read().object_ids]  # type: ignore[union-attr]
    request = data.draw(st.lists(st.sampled_from(ids), max_size=20), label="request")
    if data.draw(st.booleans(), label="every id repeated"):
        request = request + ids + ids
    dtype = data.draw(st.sampled_from([None, np.int64, np.int32, np.uint64]), label="dtype")
    if dtype is not None and all(i >= 0 for i in request):
        given_ids: Any = np.asarray(request, dtype=dtype)
    else:
        given_ids = request
    got = store.read_objects(given_ids)
    want = _concatenated(store, request)
    _assert_same_objects(got, want)
    _assert_same_objects(got, _deduplicated_repeated(store, request))


def _deduplicated_repeated(store: zv.VectorStore, request: list[int]) -> zv.QueryResult:
    """The deduplicated request's objects, repeated in request order (no links re-order)."""
    unique = list(dict.fromkeys(request))
    read = store.read_objects(unique)
    return _concatenated_from(read, [unique.index(i) for i in request])


def _concatenated_from(result: zv.QueryResult, take: list[int]) -> zv.QueryResult:
    parts = [_per_object(result, i) for i in take]
    sizes = [len(p["positions"]) for p in parts]
    starts = (np.cumsum(sizes, dtype=np.int64) - np.asarray(sizes, np.int64)).astype(np.int64)
    has_links = _links(result) is not None
    joined = (
        np.concatenate(
            [p["links"] + s for p, s in zip(parts, starts, strict=True)]
            or [np.empty((0, _links(result).shape[1]), np.int64)]  # type: ignore[union-attr]
        )
        if has_links
        else None
    )
    return zv.QueryResult(
        positions=np.concatenate([p["positions"] for p in parts] or [result.positions[:0]]),
        attributes={
            k: np.concatenate([p["attributes"][k] for p in parts] or [v[:0]])
            for k, v in result.attributes.items()
        },
        object_ids=np.asarray([p["object_id"] for p in parts], dtype=np.int64),
        offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        edges=joined if result.edges is not None else None,
        faces=joined if result.faces is not None else None,
        object_attributes={
            k: np.asarray([p["object_attributes"][k] for p in parts], dtype=v.dtype)
            for k, v in result.object_attributes.items()
        },
        link_attributes={
            k: np.concatenate([p["link_attributes"][k] for p in parts] or [v[:0]])
            for k, v in result.link_attributes.items()
        },
        vertex_object_ids=np.concatenate(
            [p["vertex_object_ids"] for p in parts] or [np.empty(0, np.int64)]
        ),
    )


@pytest.mark.parametrize("kind", KINDS)
def test_ten_thousand_repeated_ids(kind: str) -> None:
    """10,000 ids with repeats: every copy with its own rows and links (speed: benchmarks)."""
    store = _store(kind)
    ids = store.read().object_ids
    assert ids is not None
    request = np.random.default_rng(0).choice(ids, 10_000)
    got = store.read_objects(request)
    np.testing.assert_array_equal(got.object_ids, request)
    one = store.read_objects(ids)
    index = {int(i): k for k, i in enumerate(ids)}
    per_object = np.diff(one.offsets)  # type: ignore[arg-type]
    expected = per_object[[index[int(i)] for i in request]]
    np.testing.assert_array_equal(np.diff(got.offsets), expected)  # type: ignore[arg-type]
    links, one_links = _links(got), _links(one)
    if links is not None and one_links is not None:
        owner = np.searchsorted(one.offsets, one_links[:, 0], side="right") - 1  # type: ignore[arg-type]
        per_object_links = np.bincount(owner, minlength=len(ids))
        assert links.shape[0] == int(per_object_links[[index[int(i)] for i in request]].sum())
        assert links.min(initial=0) >= 0
        assert links.max(initial=0) < len(got)


def test_point_clouds_refuse_read_objects() -> None:
    """Point clouds have no objects to read: the refusal says what to do."""
    store = MemoryStore()
    zv.write_points(store, np.zeros((3, 3)), chunk_shape=1.0)
    with pytest.raises(zv.InvalidInputError):
        zv.open(store).read_objects([0, 0])
