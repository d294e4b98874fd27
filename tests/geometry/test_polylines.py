"""Polylines and streamlines: exact round trips by id, box queries against brute force."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.helpers import examples, raw_fragments, sample_sizes
from zarr_vectors.errors import InvalidInputError, ObjectNotFoundError


def _walks(
    rng: np.random.Generator, m: int, extent: float = 100.0, step: float = 3.0, max_len: int = 60
) -> list[np.ndarray]:
    lines = []
    for _ in range(m):
        n = int(rng.integers(1, max_len))
        start = rng.uniform(0, extent, 3)
        lines.append(np.cumsum(rng.normal(0, step, (n, 3)), axis=0) + start)
    return lines


def _write(lines: list[np.ndarray], **kwargs: Any) -> tuple[zv.VectorStore, dict[str, Any]]:
    store = MemoryStore()
    n = sum(len(line) for line in lines)
    rng = np.random.default_rng(len(lines))
    extra = {
        "attributes": {
            "fa": rng.random(n).astype(np.float32),
            "dir": rng.integers(0, 9, (n, 3)).astype(np.int8),
        },
        "object_attributes": {
            "length": np.array([len(line) for line in lines]),
            "weight": rng.random(len(lines)),
        },
    }
    zv.write_polylines(store, lines, **extra, **kwargs)
    return zv.open(store), extra


def _brute_objects(lines: list[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.array(
        [k for k, line in enumerate(lines) if np.any(np.all((line >= lo) & (line < hi), axis=1))],
        dtype=np.int64,
    )


def test_every_polyline_reads_back_exactly_by_id(rng: np.random.Generator) -> None:
    lines = _walks(rng, 200)
    store, extra = _write(lines, chunk_shape=10.0, bin_shape=2.5)
    assert store.kind == "polyline"
    assert store.object_count == 200
    ids = rng.permutation(200)[:50]
    got = store.read_objects(ids)
    np.testing.assert_array_equal(got.object_ids, ids)
    starts = np.concatenate([[0], np.cumsum([len(line) for line in lines])])
    for m, k in enumerate(ids):
        part = slice(got.offsets[m], got.offsets[m + 1])
        np.testing.assert_array_equal(got.positions[part], lines[k])
        for name, values in extra["attributes"].items():
            np.testing.assert_array_equal(
                got.attributes[name][part], values[starts[k] : starts[k + 1]]
            )
        assert np.all(got.vertex_object_ids[part] == k)
    for name, values in extra["object_attributes"].items():
        np.testing.assert_array_equal(got.object_attributes[name], values[ids])
    everything = store.read()
    np.testing.assert_array_equal(everything.positions, np.concatenate(lines))


@pytest.mark.parametrize("boxes", sample_sizes(30, 200))
@pytest.mark.parametrize("clip", [False, True])
def test_boxes_equal_brute_force(rng: np.random.Generator, clip: bool, boxes: int) -> None:
    """Random boxes, a quarter with a face on the bin grid; the first 30 by default."""
    lines = _walks(rng, 150)
    lines[0] = np.array([[10.0, 10.0, 10.0], [20.0, 10.0, 10.0], [10.0, 10.0, 10.0]])  # returns
    lines[1] = np.array([[5.0, 5.0, 5.0]])  # a single vertex, on chunk and bin edges
    store, _ = _write(lines, chunk_shape=10.0, bin_shape=5.0, kind="streamline")
    for i in range(boxes):
        lo = rng.uniform(-10, 110, 3)
        hi = lo + rng.uniform(1, 60, 3)
        if i % 4 == 0:
            lo = np.round(lo / 5.0) * 5.0
        got = store.query((lo, hi), clip=clip)
        expected = _brute_objects(lines, lo, hi)
        np.testing.assert_array_equal(got.object_ids, expected)
        for m, k in enumerate(expected):
            part = got.positions[got.offsets[m] : got.offsets[m + 1]]
            line = lines[k]
            if clip:
                line = line[np.all((line >= lo) & (line < hi), axis=1)]
            np.testing.assert_array_equal(part, line)


def test_groups_object_ids_and_object_attributes(rng: np.random.Generator) -> None:
    lines = _walks(rng, 30)
    ids = np.arange(30, dtype=np.uint64) * 1_000_003 + 2**40
    store = MemoryStore()
    zv.write_polylines(
        store,
        lines,
        chunk_shape=25.0,
        object_ids=ids,
        groups={"cst": ids[[3, 1, 2]], "af": [], 7: ids[[29]]},
        group_attributes={"colour": np.array([1, 2, 3], np.uint8)},
    )
    opened = zv.open(store)
    np.testing.assert_array_equal(opened.object_ids, ids)
    got = opened.query(group="cst")
    np.testing.assert_array_equal(got.object_ids, ids[[1, 2, 3]])
    assert len(opened.query(group="af").object_ids) == 0
    np.testing.assert_array_equal(opened.query(group="7").object_ids, ids[[29]])
    np.testing.assert_array_equal(opened.read_objects([ids[5]]).positions, lines[5])
    with pytest.raises(ObjectNotFoundError):
        opened.read_objects([5])
    with pytest.raises(KeyError):
        opened.query(group="missing")
    assert zv.validate(store, level=2).ok


def test_vertices_offsets_input_and_empty_objects() -> None:
    vertices = np.array([[0.0, 0, 0], [1, 1, 1], [2, 2, 2], [30, 30, 30], [31, 30, 30]])
    offsets = np.array([0, 3, 3, 5])
    store = MemoryStore()
    zv.write_polylines(store, (vertices, offsets), chunk_shape=10.0)
    got = zv.open(store).read_objects([0, 1, 2])
    np.testing.assert_array_equal(got.offsets, offsets)
    np.testing.assert_array_equal(got.positions, vertices)


BAD: list[tuple[str, Any, dict[str, Any]]] = [
    ("offsets_decrease", (np.zeros((4, 3)), np.array([0, 3, 2, 4])), {}),
    ("offsets_end", (np.zeros((4, 3)), np.array([0, 2, 3])), {}),
    ("offsets_start", (np.zeros((4, 3)), np.array([1, 4])), {}),
    ("mixed_dims", [np.zeros((3, 3)), np.zeros((3, 2))], {}),
    ("nan", [np.array([[0.0, 0, np.nan]])], {}),
    ("attr_len", [np.zeros((3, 3))], {"attributes": {"a": np.zeros(4)}}),
    ("obj_attr_len", [np.zeros((3, 3))], {"object_attributes": {"a": np.zeros(3)}}),
    ("group_member", [np.zeros((3, 3))], {"groups": {"g": [4]}}),
    ("duplicate_ids", [np.zeros((1, 3)), np.ones((1, 3))], {"object_ids": [5, 5]}),
    ("kind", [np.zeros((1, 3))], {"kind": "mesh"}),
    ("reserved", [np.zeros((1, 3))], {"attributes": {"object_id": np.zeros(1)}}),
]


@pytest.mark.parametrize(("polylines", "kwargs"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(polylines: Any, kwargs: dict[str, Any]) -> None:
    store = MemoryStore()
    with pytest.raises(InvalidInputError):
        zv.write_polylines(store, polylines, chunk_shape=10.0, **kwargs)
    assert not store._store_dict


@settings(
    max_examples=examples(15, 30), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 25),
    chunk=st.sampled_from([0.7, 2.0, 5.0]),
    bins=st.integers(1, 3),
)
def test_polylines_property(seed: int, m: int, chunk: float, bins: int) -> None:
    rng = np.random.default_rng(seed)
    lines = _walks(rng, m, extent=10.0, step=1.5, max_len=30)
    for line in lines[: m // 3]:
        line[:] = np.round(line / chunk) * chunk  # on chunk edges, repeated vertices
    store = MemoryStore()
    zv.write_polylines(
        store,
        lines,
        chunk_shape=chunk,
        bin_shape=chunk / bins,
        options=zv.WriteOptions(rows_per_block=8),
    )
    opened = zv.open(store)
    got = opened.read()
    np.testing.assert_array_equal(got.positions, np.concatenate(lines))
    lo = rng.uniform(-5, 10, 3)
    hi = lo + rng.uniform(0, 8, 3)
    np.testing.assert_array_equal(opened.query((lo, hi)).object_ids, _brute_objects(lines, lo, hi))


def test_fragment_blobs_longer_than_one_block_validate(rng: np.random.Generator) -> None:
    """A chunk with 5000 fragments needs a 2-block blob; a sparse chunk's blob needs one."""
    dense = [p[None, :] for p in rng.uniform(0, 10, (5000, 3))]
    sparse = [p[None, :] for p in rng.uniform(20, 30, (10, 3))]
    store = MemoryStore()
    zv.write_polylines(store, dense + sparse, chunk_shape=10.0, bin_shape=10.0)
    report = zv.validate(store, level=3)
    assert report.ok, report.summary()
    got = zv.open(store).read_objects([4999, 5009])
    np.testing.assert_array_equal(got.positions, np.concatenate([dense[-1], sparse[-1]]))


def test_opt_in_fragment_attributes_copy_object_values(rng: np.random.Generator) -> None:
    import zarr

    lines = _walks(rng, 40)
    bundle = rng.integers(0, 5, 40).astype(np.uint8)
    store = MemoryStore()
    zv.write_polylines(
        store,
        lines,
        chunk_shape=20.0,
        object_attributes={"bundle": bundle},
        options=zv.WriteOptions(fragment_attributes=("bundle",)),
    )
    group = zarr.open_group(store, mode="r")
    values = group["0/fragment_attributes/bundle"]
    counts = group["0/vertex_counts"][...]
    checked = 0
    for g in np.argwhere(counts > 0):
        _, _, own = raw_fragments(group, tuple(g))
        n_frag = own.shape[0]
        np.testing.assert_array_equal(values[tuple(g)][:n_frag], bundle[own])
        checked += n_frag
    assert checked > 40
    with pytest.raises(InvalidInputError, match="not an object attribute"):
        zv.write_polylines(
            MemoryStore(),
            lines,
            chunk_shape=20.0,
            options=zv.WriteOptions(fragment_attributes=("nope",)),
        )
    assert zv.validate(store, level=3).ok
