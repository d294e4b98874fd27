"""Object stores queried by polygon and by sphere: the objects with a vertex in the region,
whole or clipped, equal the brute-force reference; only the chunks the region meets are read.

The reference model and comparison (:func:`check_objects`) are those of the graph tests: a
store is checked against its input arrays alone.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.test_graphs import BIN, CHUNK, Model, check_objects, random_edges, scatter
from tests.geometry.test_meshes import random_faces
from tests.test_query import chunks_read, open_recorded
from tests.test_regions import polygons
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.query import object_queries as objects
from zarr_vectors.query._object_links import Runs, translate
from zarr_vectors.query.regions import ball_region, polygon_region
from zarr_vectors.read import RowRuns

STEP = BIN / 2


@functools.cache
def _store(kind: str, ndim: int) -> tuple[MemoryStore, Model]:
    """A graph or mesh store of random walks (a third of coordinates on bin edges)."""
    rng = np.random.default_rng(11 * ndim)
    positions, labels = scatter(rng, 40, ndim=ndim)
    positions -= 2 * CHUNK  # around the origin, negative coordinates included
    store = MemoryStore()
    options = zv.WriteOptions(rows_per_block=16, shard_chunks=1)  # keys read are chunks
    attributes = {"w": rng.random(len(positions)).astype(np.float32)}
    if kind == "graph":
        links = random_edges(rng, labels, directed=False)
        write: Any = zv.write_graph
    else:
        links = random_faces(rng, labels)
        write = zv.write_mesh
    write(
        store,
        positions,
        links,
        vertex_objects=labels,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes=attributes,
        options=options,
    )
    return store, Model(positions, labels, links, kind == "mesh", attributes)


@settings(max_examples=15, deadline=None)
@given(
    kind=st.sampled_from(["graph", "mesh"]),
    ndim=st.integers(2, 3),
    polygon=polygons(),
    seed=st.integers(0, 2**32 - 1),
)
def test_polygon_queries_on_objects_equal_brute_force(
    kind: str, ndim: int, polygon: Any, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    store, model = _store(kind, ndim)
    opened = zv.open(store)
    plane = (0, 1) if ndim == 2 else tuple(int(a) for a in rng.choice(3, 2, replace=False))
    ranges = {}
    if ndim == 3 and rng.random() < 0.7:
        lo = float(np.round(rng.uniform(-20, 10) / STEP) * STEP)
        ranges = {3 - sum(plane): (lo, lo + float(rng.integers(1, 8)) * STEP)}
    p = model.positions.astype(np.float64)
    keep = np.asarray(shapely.intersects_xy(polygon, p[:, plane[0]], p[:, plane[1]]))
    for d, (lo, hi) in ranges.items():
        keep &= (p[:, d] >= lo) & (p[:, d] < hi)
    dense = model.owners(keep)
    check_objects(opened.query(zv.polygon(polygon, plane=plane, ranges=ranges)), model, dense)
    clipped = opened.query(zv.polygon(polygon, plane=plane, ranges=ranges), clip=True)
    check_objects(clipped, model, dense, keep)


@settings(max_examples=15, deadline=None)
@given(
    kind=st.sampled_from(["graph", "mesh"]),
    ndim=st.integers(2, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_sphere_queries_on_objects_equal_brute_force(kind: str, ndim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    store, model = _store(kind, ndim)
    opened = zv.open(store)
    center = model.positions[rng.integers(len(model.positions))].copy()
    radius = float(rng.choice([0.0, STEP, 3 * STEP, rng.uniform(0, 2 * CHUNK)]))
    if rng.random() < 0.5:
        center += rng.uniform(-CHUNK, CHUNK, ndim)
    p = model.positions.astype(np.float64)
    keep = sum((p[:, d] - center[d]) ** 2 for d in range(ndim)) <= radius * radius
    dense = model.owners(np.asarray(keep))
    check_objects(opened.query(zv.ball(center, radius)), model, dense)
    check_objects(opened.query(zv.ball(center, radius), clip=True), model, dense, np.asarray(keep))


def test_groups_restrict_region_queries() -> None:
    rng = np.random.default_rng(4)
    positions, labels = scatter(rng, 30)
    edges = random_edges(rng, labels, directed=False)
    store = MemoryStore()
    ids = np.unique(labels)
    zv.write_graph(
        store,
        positions,
        edges,
        vertex_objects=labels,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        groups={"half": ids[::2].tolist()},
    )
    opened, model = zv.open(store), Model(positions, labels, edges, False)
    center, radius = positions[0], 2 * CHUNK
    keep = np.sum((positions - center) ** 2, axis=1) <= radius * radius
    dense = np.intersect1d(model.owners(keep), np.arange(0, len(ids), 2))
    check_objects(opened.query(zv.ball(center, radius), group="half"), model, dense)


def test_owners_read_only_the_chunks_the_region_meets() -> None:
    store, model = _store("graph", 3)
    opened, recording = open_recorded(store)
    objects = opened._objects
    origin = objects.reader.grid.origin
    occupied = np.unique(np.floor(model.positions / CHUNK).astype(np.int64) - origin, axis=0)
    lower, upper = (occupied + origin) * CHUNK, (occupied + origin + 1) * CHUNK
    last = np.nextafter(upper, -np.inf)  # the half-open chunks' largest coordinates

    center, radius = np.array([-0.5, 0.2, 1.0]) * CHUNK, 1.2 * CHUNK
    recording.keys.clear()
    owners = objects.owners_in_region(ball_region(center, radius, 3))
    keep = np.sum((model.positions - center) ** 2, axis=1) <= radius * radius
    np.testing.assert_array_equal(owners, model.owners(keep))
    gap = np.maximum(np.maximum(lower - center, center - last), 0)
    meeting = np.sum(gap**2, axis=1) <= radius * radius
    assert 0 < meeting.sum() < len(occupied)
    assert chunks_read(recording.keys, 3) == {tuple(c) for c in occupied[meeting].tolist()}

    # a closed rectangle in x-y with edges on chunk boundaries, z in a half-open range
    x0, y0, x1, y1, z0, z1 = -CHUNK, -1.5 * CHUNK, 0.0, 0.5 * CHUNK, -CHUNK, 0.5 * CHUNK
    rectangle = polygon_region(shapely.box(x0, y0, x1, y1), 3, ranges={2: (z0, z1)})
    opened, recording = open_recorded(store)  # a fresh reader: no cached fragment index
    objects = opened._objects
    recording.keys.clear()
    objects.owners_in_region(rectangle)
    meeting = (
        (lower[:, 0] <= x1)
        & (last[:, 0] >= x0)
        & (lower[:, 1] <= y1)
        & (last[:, 1] >= y0)
        & (lower[:, 2] < z1)
        & (last[:, 2] >= z0)
    )
    assert 0 < meeting.sum() < len(occupied)
    assert chunks_read(recording.keys, 3) == {tuple(c) for c in occupied[meeting].tolist()}


def _translate_naively(
    rows: np.ndarray,
    slot_of_row: np.ndarray,
    index: dict[int, tuple[np.ndarray, np.ndarray]],
    gids: tuple[np.ndarray, np.ndarray],
    sentinels: bool,
) -> np.ndarray:
    """``_object_links.translate`` one entry at a time with dictionaries (its plain twin)."""
    result_of = {
        (slot, int(v)): int(r)
        for slot, (local, result) in index.items()
        for v, r in zip(local, result, strict=True)
    }
    row_of_gid = {int(g): int(r) for g, r in zip(*gids, strict=True)}
    out = np.full(rows.shape, -1, dtype=np.int64)
    for i in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            value = int(rows[i, j])
            if value >= 0:
                out[i, j] = result_of[(int(slot_of_row[i]), value)]
            elif sentinels:
                out[i, j] = row_of_gid[-value - 1]
    return out


def _returned(index: dict[int, tuple[np.ndarray, np.ndarray]]) -> Runs:
    """The per-slot (ascending local rows, result rows) of ``index`` as ``translate`` takes
    them: runs slot by slot, touching rows of consecutive result rows joined."""
    starts, lengths, results, per_slot = [], [], [], []
    for slot in range(max(index, default=-1) + 1):
        local, result = index.get(slot, (np.empty(0, np.int64), np.empty(0, np.int64)))
        new = np.ones(local.shape[0], dtype=bool)
        new[1:] = (np.diff(local) != 1) | (np.diff(result) != 1)
        first = np.flatnonzero(new)
        starts.append(local[first])
        results.append(result[first])
        lengths.append(np.diff(np.append(first, local.shape[0])))
        per_slot.append(first.shape[0])
    return Runs(
        np.concatenate([[0], np.cumsum(per_slot)]).astype(np.int64),
        *(np.concatenate(a).astype(np.int64) for a in (starts, lengths, results)),
    )


def _by_gid(gids: tuple[np.ndarray, np.ndarray]) -> Runs:
    """Sorted global ids and their result rows as runs of one id each, in one group."""
    keys, rows = gids
    return Runs(np.array([0, keys.shape[0]]), keys, np.ones_like(keys), rows)


@st.composite
def link_tables(draw: st.DrawFn) -> tuple[Any, ...]:
    """Returned vertices per chunk slot, global ids, and links naming only those."""
    n_slots = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sizes = [draw(st.integers(0, 12)) for _ in range(n_slots)]
    next_row = sum(sizes)
    result_rows = rng.permutation(next_row).astype(np.int64)  # objects order the rows anew
    index, first = {}, 0
    for slot, size in enumerate(sizes):
        local = np.sort(rng.choice(40, size=size, replace=False)).astype(np.int64)
        index[slot] = (local, result_rows[first : first + size])
        first += size
    gid_keys = np.sort(rng.choice(10_000, size=next_row, replace=False)).astype(np.int64)
    gids = (gid_keys, rng.permutation(next_row).astype(np.int64))
    width = draw(st.sampled_from([2, 3]))
    sentinels = draw(st.booleans())
    rows, slots = [], []
    for slot, (local, _) in index.items():
        for _ in range(draw(st.integers(0, 6)) if local.size else 0):
            entry = rng.choice(local, size=width).astype(np.int64)
            if sentinels and next_row and rng.random() < 0.3:
                entry[rng.integers(width)] = -int(rng.choice(gid_keys)) - 1
            elif not sentinels and rng.random() < 0.2:
                entry[-1] = -1  # a skeleton root's parent
            rows.append(entry)
            slots.append(slot)
    table = np.array(rows, dtype=np.int64).reshape(-1, width)
    return table, np.array(slots, dtype=np.int64), index, gids, sentinels


@given(link_tables())
@settings(max_examples=60, deadline=None)
def test_link_entries_translate_to_result_rows_as_one_entry_at_a_time(
    case: tuple[Any, ...],
) -> None:
    rows, slots, index, gids, sentinels = case
    got, kept = translate(rows, _row_runs(slots), _returned(index), _by_gid(gids), sentinels, False)
    want = _translate_naively(*case)
    assert kept is None
    np.testing.assert_array_equal(got, want)
    got, kept = translate(rows, _row_runs(slots), _returned(index), _by_gid(gids), sentinels, True)
    root = want[:, 1] < 0  # a tree drops its root's link [root, -1]
    np.testing.assert_array_equal(got, want[~root])
    assert (kept is None) == (not root.any())
    if kept is not None:
        np.testing.assert_array_equal(kept, np.flatnonzero(~root))


def _row_runs(slots: np.ndarray) -> RowRuns:
    """Link rows of chunk slots ``slots`` as runs of one row each (the rows read in order)."""
    ones = np.ones(slots.shape[0], dtype=np.int64)
    return RowRuns([], slots, ones - 1, ones)


@pytest.mark.parametrize("bad", [0, 4, 1000])
def test_a_link_to_a_row_that_was_not_returned_is_a_corrupt_chunk(bad: int) -> None:
    index = {0: (np.array([1, 2, 3]), np.array([0, 1, 2])), 1: (np.array([5]), np.array([3]))}
    rows = np.array([[1, 2], [bad, 3]], dtype=np.int64)
    empty = _by_gid((np.empty(0, np.int64), np.empty(0, np.int64)))
    with pytest.raises(CorruptChunkError, match="not a vertex of its object"):
        translate(rows, _row_runs(np.array([0, 0])), _returned(index), empty, False, False)


def test_an_object_store_replaced_under_an_open_handle_raises_store_changed(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(5)
    path = tmp_path / "lines.zv"
    zv.write_polylines(path, [rng.uniform(0, 100, (6, 3)) for _ in range(40)], chunk_shape=25.0)
    store = zv.open(path)
    assert store.object_count == 40
    zv.write_polylines(
        path, [rng.uniform(0, 100, (6, 3)) for _ in range(4)], chunk_shape=25.0, mode="w"
    )
    for read in (
        lambda: store.read_objects([3]),
        lambda: store.query(([0, 0, 0], [50, 50, 50])),
        lambda: store.read(progress=False),
    ):
        with pytest.raises(zv.StoreChangedError, match="replaced or changed"):
            read()


@functools.cache
def _grouped_lines() -> MemoryStore:
    rng = np.random.default_rng(8)
    store = MemoryStore()
    lines = [rng.uniform(0, 100, (4, 3)) for _ in range(6)]
    zv.write_polylines(store, lines, chunk_shape=25.0, groups={"cst": [1, 2], "af": [3]})
    return store


def _generator() -> Any:
    return (i for i in [1])


@pytest.mark.parametrize(
    ("ids", "shown"),
    [
        ([1.5], "got 1.5"),
        ([3.0], "whole floats are refused too"),
        (np.array([2.0, 1.5]), "got 2.0"),
        (["3"], "got '3'"),
        ("3", "got '3'"),
        ([True], "got True"),
        ([None], "got None"),
        ([np.nan], "got nan"),
        ([[1, 2]], "shape \\(1, 2\\)"),
        ([[1], [2, 3]], "1-d sequence"),
        ({1, 2}, "got a set"),
        (_generator(), "got a generator"),
        ([2**70], "out of range"),
        (np.array([2**63], np.uint64), "out of range"),
    ],
)
def test_read_objects_with_non_integer_ids_is_invalid_input(ids: Any, shown: str) -> None:
    store = zv.open(_grouped_lines())
    with pytest.raises(zv.InvalidInputError, match=shown) as info:
        store.read_objects(ids)
    assert not isinstance(info.value, zv.ObjectNotFoundError)


@pytest.mark.parametrize(
    "ids", [3, np.int32(3), [3], np.array([3], np.uint64), np.array([3], np.int16), (3,)]
)
def test_read_objects_takes_integers_of_any_integer_type(ids: Any) -> None:
    store = zv.open(_grouped_lines())
    np.testing.assert_array_equal(
        store.read_objects(ids).positions, store.read_objects([3]).positions
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=8))
def test_requested_ids_keep_every_int64_exactly(ids: list[int]) -> None:
    got = objects.requested_ids(ids)
    assert got.dtype == np.int64
    assert got.tolist() == ids


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-(2**40), 2**40), max_size=5),
    st.floats(allow_nan=True),
    st.integers(0, 5),
)
def test_requested_ids_refuse_any_float_among_ints(ids: list[int], bad: float, at: int) -> None:
    mixed: list[Any] = list(ids)
    mixed.insert(min(at, len(mixed)), bad)
    with pytest.raises(zv.InvalidInputError, match="must be integers") as info:
        objects.requested_ids(mixed)
    assert f"got {bad!r}" in str(info.value)  # the float itself, not an int numpy made float


@pytest.mark.parametrize("group", [1.5, 1.0, True, ["cst"], None])
def test_a_group_given_as_a_float_bool_or_list_is_invalid_input(group: Any) -> None:
    store = zv.open(_grouped_lines())
    with pytest.raises(zv.InvalidInputError, match="group name \\(str\\) or a group number"):
        store.query(([0, 0, 0], [100, 100, 100]), group=group if group is not None else [])


def test_groups_by_name_and_number_still_read() -> None:
    store = zv.open(_grouped_lines())
    by_name = store.query(group="cst")
    by_number = store.query(group=np.int64(0))
    np.testing.assert_array_equal(by_name.positions, by_number.positions)
    assert by_name.positions.shape == (8, 3)


def test_a_group_gone_with_a_replaced_store_raises_store_changed_not_not_found() -> None:
    # A memory store: no directory to stat, so the failed read itself is re-checked.
    rng = np.random.default_rng(6)
    memory = MemoryStore()
    lines = [rng.uniform(0, 100, (4, 3)) for _ in range(6)]
    zv.write_polylines(memory, lines, chunk_shape=25.0, groups={"cst": [1, 2]})
    store = zv.open(memory)
    store.query(([0, 0, 0], [100, 100, 100]))
    zv.write_polylines(memory, lines[:2], chunk_shape=25.0, mode="w")  # no groups now
    with pytest.raises(zv.StoreChangedError) as info:
        store.query(group="cst")
    assert isinstance(info.value.__cause__, zv.ObjectNotFoundError)
    with pytest.raises(zv.ObjectNotFoundError, match="no groups"):
        zv.open(memory).query(group="cst")  # a fresh handle: the group is really not there
