"""Reads by object id of point clouds with object ids (spec §9.14, issue 39 item 3): the
object-to-chunks index against brute force, reads against a whole read filtered by id,
cold reads in a constant number of request waves, and the stores without an index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from benchmarks._latency import LatencyStore
from tests.data.golden import make_golden
from tests.geometry.object_cases import files
from zarr_vectors.errors import InvalidInputError, ObjectNotFoundError
from zarr_vectors.kernels.object_chunks import index_object_chunks, object_row_runs

GOLDEN_1_6 = Path(__file__).parents[1] / "data" / "golden" / "1.6"


def _naive_index(ids: np.ndarray, offsets: np.ndarray, flat: np.ndarray) -> list[tuple[int, ...]]:
    """(id, chunk, first, end) of every object and chunk, by looping over the rows."""
    seen: dict[tuple[int, int], list[int]] = {}
    for slot, chunk in enumerate(flat.tolist()):
        for row in range(int(offsets[slot]), int(offsets[slot + 1])):
            key = (int(ids[row]), chunk)
            local = row - int(offsets[slot])
            span = seen.setdefault(key, [local, local + 1])
            span[1] = local + 1
    return sorted((i, c, a, b) for (i, c), (a, b) in seen.items())


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=6),
    st.integers(0, 2**32),
    st.sampled_from([np.int16, np.int64, np.uint64]),
    st.booleans(),
)
def test_the_index_kernel_matches_a_loop_over_rows(
    sizes: list[int], seed: int, dtype: Any, wide: bool
) -> None:
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    flat = np.sort(rng.choice(1000, len(sizes), replace=False)).astype(np.int64)
    high = 2**62 if wide and dtype is not np.int16 else 5
    ids = rng.integers(0, high, int(offsets[-1]), dtype=np.int64).astype(dtype)
    index = index_object_chunks(ids, offsets, flat)
    got = [
        (int(index.ids[k]), *map(int, index.entries[e]))
        for k in range(index.ids.shape[0])
        for e in range(int(index.offsets[k]), int(index.offsets[k + 1]))
    ]
    assert index.ids.dtype == ids.dtype
    assert got == _naive_index(ids, offsets, flat)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20), st.integers(1, 6)), max_size=12),
    st.integers(0, 4),
)
def test_row_runs_cover_the_rows_of_the_entries(
    spans: list[tuple[int, int, int]], gap: int
) -> None:
    """Every row of an entry, and (with ``gap`` 0) no other; runs of a chunk ascend and
    leave more than ``gap`` rows between them."""
    entries = np.array([(c, a, a + n) for c, a, n in spans], dtype=np.int64).reshape(-1, 3)
    chunks, bounds, runs = object_row_runs(entries, gap)
    want = {(c, r) for c, a, n in spans for r in range(a, a + n)}
    got = {
        (int(c), r)
        for j, c in enumerate(chunks)
        for a, b in runs[bounds[j] : bounds[j + 1]].tolist()
        for r in range(a, b)
    }
    assert got >= want
    if gap == 0:
        assert got == want
    for j in range(chunks.shape[0]):  # ascending, disjoint, more than gap rows apart
        mine = runs[bounds[j] : bounds[j + 1]]
        assert np.all(mine[1:, 0] > mine[:-1, 1] + gap)
        assert {(int(chunks[j]), int(a)) for a in mine[:, 0]} <= want  # runs start at rows
        assert {(int(chunks[j]), int(b) - 1) for b in mine[:, 1]} <= want  # and end at rows
    assert np.all(np.diff(chunks) > 0)


def _cloud(seed: int, n: int, objects: int) -> tuple[np.ndarray, np.ndarray]:
    """Objects as small clusters, so that each lies in a few chunks."""
    rng = np.random.default_rng(seed)
    owner = rng.integers(0, objects, n)
    centres = rng.uniform(0, 40, (objects, 3))
    positions = centres[owner] + rng.normal(0, 1.5, (n, 3))
    ids = (owner * 7 - 50).astype(np.int64)  # negative and sparse ids
    return positions.astype(np.float32), ids


def _filtered(store: zv.VectorStore, wanted: list[int]) -> zv.QueryResult:
    everything = store.read()
    keep = np.isin(everything.vertex_object_ids, wanted)
    return everything, keep


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 8), st.booleans(), st.integers(1, 40))
def test_read_objects_is_the_whole_read_filtered_by_id(
    seed: int, count: int, indexed: bool, shard: int
) -> None:
    positions, ids = _cloud(seed, 400, 40)
    options = zv.WriteOptions(
        rows_per_block=16, object_chunk_index=indexed, shard_chunks=2 if shard > 20 else None
    )
    memory = MemoryStore()
    zv.write_points(
        memory,
        positions,
        object_ids=ids,
        attributes={"w": np.arange(400, dtype=np.float32)},
        chunk_shape=10.0,
        options=options,
        progress=False,
    )
    store = zv.open(memory)
    assert store.metadata["zarr_vectors_version"] == "1.6"
    wanted = np.random.default_rng(seed).choice(np.unique(ids), count).tolist()
    got = store.read_objects(wanted)
    everything, keep = _filtered(store, wanted)
    assert np.array_equal(got.positions, everything.positions[keep])
    assert np.array_equal(got.vertex_object_ids, everything.vertex_object_ids[keep])
    assert np.array_equal(got.attributes["w"], everything.attributes["w"][keep])
    listed = store.point_object_ids()
    assert np.array_equal(listed, np.unique(everything.vertex_object_ids))
    assert listed.dtype == everything.vertex_object_ids.dtype


def _latency_store(n: int, objects: int) -> tuple[LatencyStore, np.ndarray]:
    positions, ids = _cloud(1, n, objects)
    inner = MemoryStore()
    zv.write_points(inner, positions, object_ids=ids, chunk_shape=12.0, progress=False)
    return LatencyStore(inner), ids


def _cold_waves(store: LatencyStore, wanted: np.ndarray) -> tuple[int, int]:
    store.log.reset()
    found = zv.open(store).read_objects(wanted)
    return store.log.summary().waves, len(found)


def test_cold_reads_by_id_cost_the_same_waves_for_one_object_or_a_hundred() -> None:
    """Open + read by id: the index, then the shard indexes and row blocks of every chunk
    the objects lie in, each in one batch, however many chunks that is (up to the 256
    requests a batch keeps in flight)."""
    store, ids = _latency_store(6000, 300)
    distinct = np.unique(ids)
    one, n_one = _cold_waves(store, distinct[:1])
    hundred, n_hundred = _cold_waves(store, distinct[::3][:100])
    assert n_hundred > n_one > 0
    assert len(store.log.requests) > 50  # many chunks
    assert hundred == one
    assert hundred <= 9  # open (5), the index (2), shard indexes and row blocks (2)


def test_only_the_chunks_holding_the_objects_are_read() -> None:
    store, ids = _latency_store(6000, 300)
    reader = zv.open(store)
    reader.read_objects(ids[:1])  # the index is read once per handle
    store.log.reset()
    reader.read_objects(ids[:1])
    keys = {r.key for r in store.log.requests if "/vertices/c/" in r.key}
    assert 0 < len(keys) <= reader.chunk_count / 4


def test_unknown_ids_and_point_clouds_without_ids_are_refused(tmp_path: Path) -> None:
    positions, ids = _cloud(2, 100, 10)
    zv.write_points(tmp_path / "ids", positions, object_ids=ids, chunk_shape=10.0)
    zv.write_points(tmp_path / "plain", positions, chunk_shape=10.0)
    with pytest.raises(ObjectNotFoundError, match="no point has object id 3 "):
        zv.open(tmp_path / "ids").read_objects([int(ids[0]), 3])
    with pytest.raises(InvalidInputError, match="carry no object ids"):
        zv.open(tmp_path / "plain").read_objects([1])
    with pytest.raises(InvalidInputError, match="float"):
        zv.open(tmp_path / "ids").read_objects([1.0])
    with pytest.raises(InvalidInputError, match="carry no object ids"):
        zv.open(tmp_path / "plain").point_object_ids()
    zv.write_polylines(tmp_path / "lines", [positions[:3]], chunk_shape=10.0)
    with pytest.raises(InvalidInputError, match="listed by object_ids"):
        zv.open(tmp_path / "lines").point_object_ids()


def test_big_unsigned_ids_and_coarse_levels(tmp_path: Path) -> None:
    """uint64 ids above 2**53 are matched exactly; a coarse level (no index) is read whole
    and filtered."""
    positions, owner = _cloud(3, 500, 20)
    ids = (owner.astype(np.uint64) + np.uint64(50)) * np.uint64(2**56)
    path = tmp_path / "big"
    zv.write_points(path, positions, object_ids=ids, chunk_shape=10.0, levels=1)
    store = zv.open(path)
    wanted = [int(ids[0]), int(ids[1])]
    for level in (0, 1):
        everything = store.read(level=level)
        keep = np.isin(everything.vertex_object_ids, np.array(wanted, np.uint64))
        got = store.read_objects(wanted if level == 0 else wanted[:1], level=level)
        if level == 1:
            keep = everything.vertex_object_ids == np.uint64(wanted[0])
        assert np.array_equal(got.positions, everything.positions[keep])
        assert got.level == level
        listed = store.point_object_ids(level=level)
        assert np.array_equal(listed, np.unique(everything.vertex_object_ids))


def test_appends_keep_the_index_or_its_absence(tmp_path: Path) -> None:
    positions, ids = _cloud(4, 300, 30)
    for indexed in (True, False):
        path = tmp_path / f"s{indexed}"
        options = zv.WriteOptions(object_chunk_index=indexed)
        zv.write_points(
            path, positions[:200], object_ids=ids[:200], chunk_shape=10.0, options=options
        )
        zv.append_points(path, positions[200:], object_ids=ids[200:])
        once = tmp_path / f"once{indexed}"
        zv.write_points(once, positions, object_ids=ids, chunk_shape=10.0, options=options)
        assert files(path) == files(once)
        assert (path / "0" / "object_chunks").exists() == indexed


def test_the_golden_store_with_an_index(tmp_path: Path) -> None:
    """The writer writes ``1.6/points_2d_object_chunks`` byte for byte; it validates and
    reads by id as the 1.2 store of the same input (without the index) filtered."""
    name = "points_2d_object_chunks"
    path = tmp_path / f"{name}.zarrvectors"
    make_golden.write(path, make_golden.index_inputs()[name])
    golden = GOLDEN_1_6 / f"{name}.zarrvectors"
    assert files(path) == files(golden)
    assert zv.validate(golden, level=3).ok
    store = zv.open(golden)
    assert store.metadata["zarr_vectors_version"] == "1.6"
    twin = zv.open(GOLDEN_1_6.parent / "1.2" / "points_2d_negative_ids.zarrvectors")
    ids = np.asarray(make_golden.index_inputs()[name]["object_ids"])
    wanted = ids[::10].tolist()
    everything, keep = _filtered(twin, wanted)
    assert np.array_equal(store.read_objects(wanted).positions, everything.positions[keep])
