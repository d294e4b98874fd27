"""Skeletons: rooted trees read back exactly (parents, SWC attributes), boxes, bad input."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.test_graphs import (
    BIN,
    BOX_COUNTS,
    CHUNK,
    Model,
    check_boxes,
    check_link_layout,
    check_objects,
    members_by_label,
    random_boxes,
    scatter,
)
from tests.helpers import examples
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.geometry.graphs import check_forest, group_vertices


def random_parents(rng: np.random.Generator, labels: np.ndarray) -> np.ndarray:
    """A random rooted tree per object (the root anywhere in the object), SWC style."""
    parents = np.full(len(labels), -1, dtype=np.int64)
    for idx in members_by_label(labels):
        order = idx[rng.permutation(len(idx))]
        for j in range(1, len(order)):
            parents[order[j]] = order[rng.integers(0, j)]
    return parents


def skeleton_model(
    positions: np.ndarray, labels: np.ndarray, parents: np.ndarray, **kw: Any
) -> Model:
    child = np.flatnonzero(parents >= 0)
    return Model(positions, labels, np.stack([child, parents[child]], axis=1), True, **kw)


def _skeletons(
    rng: np.random.Generator, m: int, *, edges_form: bool = False
) -> tuple[zv.VectorStore, Model, MemoryStore]:
    positions, labels = scatter(rng, m)
    parents = random_parents(rng, labels)
    n = len(positions)
    radius = rng.uniform(0.1, 3.0, n).astype(np.float32)
    swc_type = rng.integers(0, 8, n).astype(np.int8)
    extra = {"swc_id": np.arange(1, n + 1, dtype=np.int64), "t": rng.random((n, 2))}
    object_attributes = {"soma": rng.random((m, 3))}
    if edges_form:
        pairs = np.stack([np.arange(n), parents], axis=1)
        pairs = pairs[(parents >= 0) | (np.arange(n) % 2 == 0)]  # some explicit root rows
        tree: dict[str, Any] = {"edges": pairs[rng.permutation(len(pairs))]}
    else:
        tree = {"parents": parents}
    store = MemoryStore()
    zv.write_skeletons(
        store,
        positions,
        **tree,
        vertex_objects=labels,
        radius=radius,
        swc_type=swc_type,
        attributes=extra,
        object_attributes=object_attributes,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        options=zv.WriteOptions(rows_per_block=16),
    )
    attributes = {"radius": radius, "swc_type": swc_type, **extra}
    model = skeleton_model(
        positions, labels, parents, attributes=attributes, object_attributes=object_attributes
    )
    return zv.open(store), model, store


def parents_of(got: zv.QueryResult, m: int) -> np.ndarray:
    """Parent of each vertex of returned object m, as positions inside the object."""
    assert got.offsets is not None
    assert got.edges is not None
    a, b = int(got.offsets[m]), int(got.offsets[m + 1])
    mine = (got.edges[:, 0] >= a) & (got.edges[:, 0] < b)
    parents = np.full(b - a, -1, dtype=np.int64)
    parents[got.edges[mine, 0] - a] = got.edges[mine, 1] - a
    return parents


@pytest.mark.parametrize("edges_form", [False, True])
def test_every_skeleton_reads_back_exactly_by_id(
    rng: np.random.Generator, edges_form: bool
) -> None:
    opened, model, store = _skeletons(rng, 50, edges_form=edges_form)
    check_link_layout(store)
    assert opened.kind == "skeleton"
    assert opened.object_count == 50
    assert opened.metadata["is_tree"] is True
    assert opened.metadata["swc_compatible"] is True
    order = rng.permutation(50)
    assert model.ids is not None
    got = opened.read_objects(model.ids[order])
    check_objects(got, model, order)
    for m, k in enumerate(order):  # the parent array itself, one root per object
        idx = model.members(int(k))
        position = np.full(len(model.positions), -1)
        position[idx] = np.arange(len(idx))
        expected = model_parents(model)[idx]
        expected = np.where(expected >= 0, position[np.maximum(expected, 0)], -1)
        np.testing.assert_array_equal(parents_of(got, m), expected)
        assert np.count_nonzero(expected < 0) == 1
    assert zv.validate(store, level=2).ok
    assert zv.validate(store, level=3).ok


def model_parents(model: Model) -> np.ndarray:
    parents = np.full(len(model.positions), -1, dtype=np.int64)
    parents[model.links[:, 0]] = model.links[:, 1]
    return parents


@pytest.mark.parametrize("boxes", BOX_COUNTS)
def test_skeleton_boxes_equal_brute_force(rng: np.random.Generator, boxes: int) -> None:
    opened, model, _ = _skeletons(rng, 70)
    check_boxes(opened, model, random_boxes(rng, model.positions, boxes))


def test_swc_style_single_skeleton_and_groups() -> None:
    positions = np.array([[0.0, 0, 0], [10, 0, 0], [20, 0, 0], [10, 10, 0], [5, 5, 5]])
    parents = np.array([-1, 0, 1, 1, 3])
    store = MemoryStore()
    zv.write_skeletons(
        store,
        positions,
        parents=parents,
        chunk_shape=CHUNK,
        object_ids=[42],
        groups={"neurons": [42]},
    )
    check_link_layout(store)
    opened = zv.open(store)
    assert opened.metadata["swc_compatible"] is False  # no radius / swc_type
    assert "radius" not in opened.attribute_names
    got = opened.query(group="neurons")
    np.testing.assert_array_equal(got.object_ids, [42])
    np.testing.assert_array_equal(parents_of(got, 0), parents)
    clipped = opened.query(([0, 0, 0], [10.5, 10, 10]), clip=True)
    np.testing.assert_array_equal(clipped.positions, positions[[0, 1, 4]])
    assert clipped.edges is not None
    np.testing.assert_array_equal(clipped.edges, [[1, 0]])


@pytest.mark.parametrize(
    ("radius", "swc_type", "compatible"),
    [
        (np.ones(3), np.array([0, 1, 7]), True),
        (np.array([1, 2, 3]), np.array([1, 1, 1], np.uint8), True),  # integer radii -> float
        (np.array([1.0, -1.0, 1.0]), np.ones(3, int), False),
        (np.array([1.0, np.nan, 1.0]), np.ones(3, int), False),
        (np.ones(3), np.array([1, 8, 1]), False),
        (np.ones(3), None, False),
        (None, np.ones(3, int), False),
    ],
)
def test_swc_compatible_iff_both_given_and_valid(
    radius: Any, swc_type: Any, compatible: bool
) -> None:
    store = MemoryStore()
    positions = np.array([[0.0, 0, 0], [1, 1, 1], [2, 2, 2]])
    zv.write_skeletons(
        store, positions, parents=[-1, 0, 1], radius=radius, swc_type=swc_type, chunk_shape=CHUNK
    )
    opened = zv.open(store)
    assert opened.metadata["swc_compatible"] is compatible
    got = opened.read()
    if radius is not None:
        assert got.attributes["radius"].dtype.kind == "f"
        np.testing.assert_array_equal(got.attributes["radius"], radius)
    assert zv.validate(store, level=2).ok


P = np.array([[0.0, 0, 0], [1, 1, 1], [12, 2, 2], [3, 13, 3], [4, 4, 4], [5, 5, 25]])
BAD: list[tuple[str, dict[str, Any], str]] = [
    ("neither", {}, "exactly one of parents= or edges="),
    ("both", {"parents": [-1, 0, 1, 2, 3, 4], "edges": [[1, 0]]}, "exactly one"),
    ("two_roots", {"parents": [-1, 0, 1, -1, 3, 4]}, "2 roots"),
    ("own_parent", {"parents": [-1, 0, 2, 2, 3, 4]}, "vertex 2 is its own parent"),
    ("cycle", {"parents": [-1, 0, 4, 2, 3, 2]}, "cycle through vertex"),
    ("no_root", {"parents": [5, 0, 1, 2, 3, 4]}, "cycle"),
    ("range", {"parents": [-1, 0, 1, 2, 3, 6]}, "outside 0..5"),
    ("below_minus_one", {"parents": [-2, 0, 1, 2, 3, 4]}, "outside 0..5"),
    ("float_parents", {"parents": [-1.0, 0, 1, 2, 3, 4]}, "integers"),
    ("parents_len", {"parents": [-1, 0, 1]}, "6 integers"),
    ("two_parents", {"edges": [[1, 0], [2, 1], [1, 2]]}, "vertex 1 has two parents"),
    ("edge_range", {"edges": [[1, 0], [6, 1]]}, "outside 0..5"),
    ("edge_root_column", {"edges": [[-1, 0]]}, "outside 0..5"),
    (
        "other_object",
        {"parents": [-1, 0, 1, -1, 3, 0], "vertex_objects": [1, 1, 1, 2, 2, 2]},
        "different objects",
    ),
    ("radius_len", {"parents": [-1, 0, 1, 2, 3, 4], "radius": np.ones(5)}, "shape"),
    (
        "swc_type_float",
        {"parents": [-1, 0, 1, 2, 3, 4], "swc_type": np.ones(6)},
        "'swc_type' must be 6 integers",
    ),
    (
        "swc_id_float",
        {"parents": [-1, 0, 1, 2, 3, 4], "attributes": {"swc_id": np.ones(6)}},
        "'swc_id' must be 6 integers",
    ),
    (
        "radius_twice",
        {
            "parents": [-1, 0, 1, 2, 3, 4],
            "radius": np.ones(6),
            "attributes": {"radius": np.ones(6)},
        },
        "both",
    ),
    ("radius_vector", {"parents": [-1, 0, 1, 2, 3, 4], "radius": np.ones((6, 2))}, "6 floats"),
]


@pytest.mark.parametrize(("kwargs", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(kwargs: dict[str, Any], message: str) -> None:
    store = MemoryStore()
    with pytest.raises(InvalidInputError, match=message):
        zv.write_skeletons(store, P, chunk_shape=CHUNK, **kwargs)
    assert not store._store_dict


def test_cycle_report_names_a_vertex_on_the_cycle() -> None:
    n = 1000
    parents = np.arange(-1, n - 1)  # a chain rooted at 0 ...
    parents[700] = 900  # ... 700..900 now cycle, 901.. hang off it, 1..699 still rooted
    with pytest.raises(InvalidInputError, match="cycle") as caught:
        check_forest(parents, group_vertices(None, n))
    found = re.search(r"through vertex (\d+)", str(caught.value))
    assert found is not None
    assert 700 <= int(found.group(1)) <= 900


def test_forest_check_is_fast_on_long_chains() -> None:
    n = 2_000_000
    labels = np.repeat(np.arange(4), n // 4)
    parents = np.arange(-1, n - 1)
    parents[:: n // 4] = -1  # four chains of 500,000 vertices
    check_forest(parents, group_vertices(labels, n))


@settings(
    max_examples=examples(10, 25), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 12), ndim=st.integers(2, 4))
def test_skeleton_property(seed: int, m: int, ndim: int) -> None:
    rng = np.random.default_rng(seed)
    positions, labels = scatter(rng, m, ndim=ndim, max_len=15)
    if seed % 2:  # stored as float32: boxes compare the stored values
        positions = positions.astype(np.float32)
    parents = random_parents(rng, labels)
    store = MemoryStore()
    zv.write_skeletons(
        store,
        positions,
        parents=parents,
        vertex_objects=labels,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        options=zv.WriteOptions(rows_per_block=4),
    )
    check_link_layout(store)
    opened = zv.open(store)
    model = skeleton_model(positions, labels, parents)
    check_objects(opened.read_objects(model.unique[::-1]), model, np.arange(m)[::-1])
    check_boxes(opened, model, random_boxes(rng, positions, 2))


@pytest.mark.parametrize(
    "parents",
    [[-1, 1, 2, 3], [-1, 1, 1, 2], [-1, 1, 4, 2]],
    ids=["chain", "branch", "out_of_range"],
)
def test_one_based_swc_parents_get_a_zero_based_hint(parents: list[int]) -> None:
    """Finding: SWC-style 1-based ``parents`` gave "vertex 1 is its own parent" with no hint
    that parents are 0-based row indices."""
    positions = np.arange(12, dtype=np.float64).reshape(4, 3)
    with pytest.raises(InvalidInputError, match=r"0-based row indices.*look 1-based") as err:
        zv.write_skeletons(MemoryStore(), positions, parents=np.asarray(parents))
    assert "np.where(parents > 0, parents - 1, -1)" in str(err.value)
    fixed = np.asarray(parents)
    fixed = np.where(fixed > 0, fixed - 1, -1)
    zv.write_skeletons(MemoryStore(), positions, parents=fixed)  # the hint works


def test_zero_based_parents_errors_have_no_one_based_hint() -> None:
    positions = np.arange(12, dtype=np.float64).reshape(4, 3)
    with pytest.raises(InvalidInputError) as err:
        zv.write_skeletons(MemoryStore(), positions, parents=np.array([-1, 0, 2, 0]))
    assert "1-based" not in str(err.value)
