"""Several spatial chunks per shard (spec §9.0.1): every writer, reader and the validator.

A store written with ``shard_chunks`` must read back, query and validate exactly like the
store of the same input written with one shard per chunk (the reference), while holding
fewer storage objects.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.object_cases import KINDS, arguments, batches, cases, files, write
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.store.io import StoreIO
from zarr_vectors.update.object_merge import merge_stores
from zarr_vectors.update.object_sources import open_source
from zarr_vectors.write._shard_writes import shard_major_order, shards_of

SHARDINGS = [2, (2, 3, 1), 4, (1, 1, 1)]


def _with_shards(options: zv.WriteOptions | None, shard: Any) -> zv.WriteOptions:
    return dataclasses.replace(options or zv.WriteOptions(), shard_chunks=shard)


def _axes(shard: Any, ndim: int) -> Any:
    """``shard`` for a store of ``ndim`` axes (tuples are cut or padded with ones)."""
    if isinstance(shard, int):
        return shard
    return (tuple(shard) + (1,) * ndim)[:ndim]


def _same(a: zv.QueryResult, b: zv.QueryResult) -> None:
    """Two results hold the same arrays (positions, attributes, ids, offsets, links)."""
    for name in ("positions", "vertex_object_ids", "object_ids", "offsets", "edges", "faces"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=name)
    for name in ("attributes", "object_attributes", "link_attributes"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.keys() == y.keys(), name
        for key in x:
            np.testing.assert_array_equal(x[key], y[key], err_msg=f"{name}/{key}")


def _object_count(store: MemoryStore) -> int:
    return sum(1 for _ in StoreIO(store).list_prefix(""))


def _version(store: Any) -> str:
    return str(zarr.open_group(store, mode="r").attrs["zarr_vectors_version"])


def _boxes(rng: np.random.Generator, lo: np.ndarray, hi: np.ndarray, k: int) -> list[Any]:
    out = []
    for _ in range(k):
        a, b = rng.uniform(lo, hi), rng.uniform(lo, hi)
        out.append((np.minimum(a, b), np.maximum(a, b) + 1.0))
    return out


def _check_like(sharded: Any, plain: Any, rng: np.random.Generator) -> None:
    """Reads, box and polygon queries and validation agree between the two stores."""
    s, p = zv.open(sharded), zv.open(plain)
    ndim = p.ndim
    if p.is_object_store:
        _same(s.read_objects(p.object_ids), p.read_objects(p.object_ids))
        everything = None
    else:
        _same(s.read(), p.read())
        everything = p.read().positions
    bounds = p.bounds
    lo = np.asarray(bounds[0]) - 1 if bounds else np.zeros(ndim)
    hi = np.asarray(bounds[1]) + 1 if bounds else np.ones(ndim)
    for box in _boxes(rng, lo, hi, 3):
        _same(s.query(box), p.query(box))
        if everything is not None:  # the reference itself against brute force
            inside = np.all((everything >= box[0]) & (everything < box[1]), axis=1)
            assert len(p.query(box)) == int(inside.sum())
    triangle = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [lo[0], hi[1]]])
    _same(s.query(zv.polygon(triangle)), p.query(zv.polygon(triangle)))
    if p.is_object_store:
        ids = p.object_ids
        pick = ids[rng.permutation(len(ids))[: max(1, len(ids) // 2)]]
        _same(s.read_objects(pick), p.read_objects(pick))
    report = zv.validate(sharded, level=4)
    assert report.ok, report.problems


# -- options -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, (2, 0, 1), (2.0, 2, 2), True, "2"])
def test_shard_chunks_must_be_positive_ints(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="shard_chunks"):
        zv.WriteOptions(shard_chunks=bad)


def test_shard_chunks_needs_one_entry_per_axis() -> None:
    xyz = np.zeros((3, 3), np.float32)
    with pytest.raises(InvalidInputError, match="3 entries"):
        zv.write_points(MemoryStore(), xyz, chunk_shape=1.0, options=_with_shards(None, (2, 2)))


def test_shard_major_order_groups_shards() -> None:
    chunks = np.array([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [3, 3]])
    order = shard_major_order(chunks, (2, 2))
    shards = [tuple(c) for c in chunks[order] // 2]
    assert shards == [(0, 0)] * 4 + [(0, 1), (1, 1)]
    np.testing.assert_array_equal(shard_major_order(chunks, ()), np.arange(6))
    down = shard_major_order(chunks, (2, 2), descending=True)
    assert [tuple(c) for c in chunks[down] // 2] == [(1, 1), (0, 1)] + [(0, 0)] * 4
    assert chunks[down][2:].tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]  # C order inside


def test_shards_of_divides_by_the_shard_shape() -> None:
    chunks = np.array([[0, 0, 0], [1, 2, 3], [5, 0, 2], [4, 4, 4]])
    assert shards_of(chunks, (2, 3, 1)) == [(0, 0, 0), (0, 0, 3), (2, 0, 2), (2, 1, 4)]
    assert shards_of(np.empty(0, np.int64), (2, 3, 1)) == []


# -- points --------------------------------------------------------------------------------


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 400),
    shard=st.sampled_from(SHARDINGS),
    dim=st.sampled_from([2, 3]),
)
def test_points_read_query_validate_like_unsharded(seed: int, n: int, shard: Any, dim: int) -> None:
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(-30, 70, (n, dim)).astype(np.float32)
    attrs = {"a": rng.random(n).astype(np.float32), "c": rng.integers(0, 9, (n, 2))}
    common = {"chunk_shape": 10.0, "bin_shape": 5.0, "attributes": attrs}
    small = zv.WriteOptions(rows_per_block=8)
    plain, sharded = MemoryStore(), MemoryStore()
    zv.write_points(plain, xyz, **common, options=_with_shards(small, 1))
    zv.write_points(sharded, xyz, **common, options=_with_shards(small, _axes(shard, dim)))
    expect_sharded = shard != (1, 1, 1)
    assert _version(sharded) == "1.6"  # every new store (§3.3)
    if not expect_sharded:
        assert StoreIO(sharded).list_prefix("") == StoreIO(plain).list_prefix("")
    _check_like(sharded, plain, rng)


def test_points_file_count_drops(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    xyz = rng.uniform(0, 80, (20_000, 3)).astype(np.float32)  # 8 x 8 x 8 chunks, all occupied
    counts = {}
    for s in (1, 2, 4):
        path = tmp_path / f"s{s}.zarrvectors"
        zv.write_points(path, xyz, chunk_shape=10.0, options=zv.WriteOptions(shard_chunks=s))
        counts[s] = sum(1 for p in path.rglob("*") if p.is_file() and "/c/" in p.as_posix())
    per_array = {s: counts[s] // 2 for s in counts}  # vertices and vertex_fragments
    assert per_array == {1: 512, 2: 64, 4: 8}


def test_plain_zarr_reads_sharded_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    xyz = rng.uniform(0, 40, (3000, 3)).astype(np.float32)
    path = tmp_path / "s.zarrvectors"
    zv.write_points(path, xyz, chunk_shape=10.0, options=zv.WriteOptions(shard_chunks=(2, 3, 2)))
    group = zarr.open_group(path, mode="r")
    counts = group["0/vertex_counts"][...]
    store = zv.open(path)
    for g in np.argwhere(counts > 0)[:10]:
        i, j, k = (int(v) for v in g)
        n = int(counts[i, j, k])
        rows = group["0/vertices"][i, j, k, :n]
        lo = np.asarray(store.chunk_shape) * g
        ours = store.query((lo, lo + store.chunk_shape)).positions
        np.testing.assert_array_equal(np.sort(rows, axis=0), np.sort(ours, axis=0))


# -- objects -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["polyline", "graph", "skeleton", "mesh"])
@settings(max_examples=4, deadline=None)
@given(data=st.data(), shard=st.sampled_from(SHARDINGS[:3]))
def test_objects_read_query_validate_like_unsharded(kind: str, data: Any, shard: Any) -> None:
    case = data.draw(cases(kind))
    plain, sharded = MemoryStore(), MemoryStore()
    write(plain, case | {"options": _with_shards(case["options"], 1)}, 0, len(case["objects"]))
    dim = case["objects"][0].shape[1]
    sharded_case = case | {"options": _with_shards(case["options"], _axes(shard, dim))}
    write(sharded, sharded_case, 0, len(case["objects"]))
    assert _version(sharded) == "1.6"
    assert _object_count(sharded) <= _object_count(plain)
    _check_like(sharded, plain, np.random.default_rng(len(case["objects"])))


# -- appends ------------------------------------------------------------------------------


def test_streaming_appends_to_a_sharded_store() -> None:
    """(Byte equality with one write is checked in tests/geometry/test_point_append.py.)"""
    store = MemoryStore()
    xyz = np.random.default_rng(0).uniform(0, 10, (50, 3))
    zv.write_points(store, xyz, chunk_shape=2.0, options=zv.WriteOptions(shard_chunks=2))
    zv.append_points(store, xyz + 1, progress=False)
    with zv.PointWriter(store, mode="a", progress=False) as w:
        w.append(xyz - 1)
    opened = zv.open(store)
    assert opened.vertex_count == 150
    assert _version(store) == "1.6"
    assert zv.validate(store, level=3).ok


def test_appending_objects_to_a_sharded_store_keeps_its_shards() -> None:
    """(Byte equality with one write is checked in tests/geometry/test_object_append.py.)"""
    xyz = np.random.default_rng(0).uniform(0, 10, (50, 3))
    lines = MemoryStore()
    zv.write_polylines(
        lines, [xyz[:10], xyz[10:30]], chunk_shape=2.0, options=zv.WriteOptions(shard_chunks=3)
    )
    zv.append_polylines(lines, [xyz[30:] - 1])
    assert zv.open(lines).vertex_count == 50
    assert _version(lines) == "1.6"
    assert zv.validate(lines, level=4).ok
    with pytest.raises(InvalidInputError, match="keeps the store's shards"):
        merge_stores(lines, [open_source(lines)] * 2, has_base=True, shard_chunks=2)


def test_index_is_fetched_once_per_shard() -> None:
    """Every chunk of a shard is served by one index fetch (spec §9.0.1)."""
    store = MemoryStore()
    xyz = np.random.default_rng(1).uniform(0, 40, (4000, 3)).astype(np.float32)
    zv.write_points(store, xyz, chunk_shape=10.0, options=zv.WriteOptions(shard_chunks=4))
    opened = zv.open(store)
    hits = opened.query(([0, 0, 0], [40, 40, 40]))
    assert len(hits) == 4000
    reader = opened._reader
    shards = reader.indexes.shards("0/vertices")
    assert shards == {(0, 0, 0)}
    assert math.prod(reader.layouts["vertices"].shard_chunks) == 64


# -- streaming ----------------------------------------------------------------------------


@pytest.mark.parametrize("shard", [2, (1, 3, 2)])
def test_streaming_points_give_the_one_shot_sharded_store(tmp_path: Path, shard: Any) -> None:
    rng = np.random.default_rng(9)
    xyz = rng.uniform(-20, 60, (5000, 3)).astype(np.float32)
    attrs = {"a": rng.random(5000).astype(np.float32)}
    options = zv.WriteOptions(rows_per_block=32, shard_chunks=shard)
    zv.write_points(tmp_path / "one", xyz, chunk_shape=10.0, attributes=attrs, options=options)
    batches = [
        {"positions": p, "attributes": {"a": a}}
        for p, a in zip(np.array_split(xyz, 4), np.array_split(attrs["a"], 4), strict=True)
    ]
    zv.write_points_stream(
        tmp_path / "stream", batches, chunk_shape=10.0, options=options, progress=False
    )
    assert files(tmp_path / "stream") == files(tmp_path / "one")


def _stream_objects(store: Path, case: dict[str, Any]) -> None:
    extra = {"directed": case["directed"]} if case["kind"] == "graph" else {}
    with zv.ObjectWriter(
        store, kind=case["kind"], chunk_shape=10.0, options=case["options"], **extra
    ) as writer:
        for a, b in batches(case):
            if b > a:
                writer.append(**arguments(case, a, b))


@pytest.mark.parametrize("kind", KINDS)
def test_object_writer_gives_the_one_shot_sharded_store(
    tmp_path_factory: pytest.TempPathFactory, kind: str
) -> None:
    @settings(
        max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(case=cases(kind), shard=st.sampled_from([2, (2, 1, 3)]))
    def check(case: dict[str, Any], shard: Any) -> None:
        tmp = tmp_path_factory.mktemp("w")
        dim = case["objects"][0].shape[1]
        case = case | {"options": _with_shards(case["options"], _axes(shard, dim))}
        write(tmp / "one", case, 0, len(case["objects"]))
        _stream_objects(tmp / "streamed", case)
        assert files(tmp / "streamed") == files(tmp / "one")
        assert _version(tmp / "streamed") == "1.6"
        report = zv.validate(tmp / "streamed", level=4)
        assert report.ok, report.problems

    check()


def test_object_writer_checks_shard_chunks_against_the_axes(tmp_path: Path) -> None:
    writer = zv.ObjectWriter(
        tmp_path / "s", kind="streamline", chunk_shape=1.0, options=_with_shards(None, (2, 2))
    )
    writer.append([np.ones((2, 3)), np.zeros((3, 3))])
    with pytest.raises(InvalidInputError, match="3 entries"):
        writer.close()
    assert list(tmp_path.iterdir()) == []


# -- request waves ------------------------------------------------------------------------


@pytest.mark.parametrize(("chunk", "shard"), [(125.0, 2), (125.0, 4), (62.5, 4), (62.5, (2, 4, 1))])
def test_open_and_box_query_cost_a_constant_number_of_waves(chunk: float, shard: Any) -> None:
    """One wave more than one shard per chunk: the blob shards' indexes come first."""
    from benchmarks._latency import LatencyStore

    rng = np.random.default_rng(0)
    xyz = rng.uniform(0, 1000, (20_000, 3)).astype(np.float32)
    attrs = {"a": rng.random(20_000, dtype=np.float32)}
    inner = MemoryStore()
    options = zv.WriteOptions(shard_chunks=shard)
    zv.write_points(inner, xyz, chunk_shape=chunk, attributes=attrs, options=options)
    store = LatencyStore(inner)
    box = (np.array([301.7, 288.2, 310.4]), np.array([517.1, 503.6, 525.8]))
    store.log.reset()
    found = zv.open(store).query(box)
    # root; level documents; attribute documents; vertex_counts; blob and column shard
    # indexes; blob byte ranges; rows of every column; the version check (spec §12.4)
    assert store.log.summary().waves == 8
    inside = np.all((xyz >= box[0]) & (xyz < box[1]), axis=1)
    assert len(found) == int(inside.sum())
    np.testing.assert_array_equal(np.sort(found.attributes["a"]), np.sort(attrs["a"][inside]))
