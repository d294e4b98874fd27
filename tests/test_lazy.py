"""VectorStore.to_dask: lazy dask arrays whose blocks compute to exactly store.query(bbox)."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError, MissingDependencyError
from zarr_vectors.query import lazy
from zarr_vectors.query.regions import BoxRegion

N = 6000
CHUNK = 250.0


def _write(store: object, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(-500, 500, (N, 3)).astype(np.float32)
    xyz[:50] = np.round(xyz[:50] / 125.0) * 125.0  # some points exactly on chunk/bin planes
    zv.write_points(
        store,
        xyz,
        chunk_shape=CHUNK,
        attributes={"v": rng.random(N, dtype=np.float32), "k": rng.integers(0, 9, (N, 2))},
        object_ids=np.arange(N) % 17,
    )
    return xyz


@pytest.fixture(scope="module")
def memory_store() -> tuple[MemoryStore, np.ndarray]:
    store = MemoryStore()
    return store, _write(store)


def _assert_same(got: zv.QueryResult, expected: zv.QueryResult) -> None:
    np.testing.assert_array_equal(got.positions, expected.positions)
    assert got.attributes.keys() == expected.attributes.keys()
    for name, values in expected.attributes.items():
        np.testing.assert_array_equal(got.attributes[name], values)
        assert got.attributes[name].dtype == values.dtype
    assert got.vertex_object_ids is not None
    assert expected.vertex_object_ids is not None
    np.testing.assert_array_equal(got.vertex_object_ids, expected.vertex_object_ids)
    assert got.axis_names == expected.axis_names


coordinate = st.one_of(  # chunk and bin planes included
    st.floats(-600, 600, allow_nan=False), st.sampled_from([-500.0, -250.0, -62.5, 0.0, 125.0])
)


@settings(max_examples=15, deadline=None)
@given(
    corner=st.tuples(coordinate, coordinate, coordinate),
    size=st.tuples(*(st.floats(0, 900, allow_nan=False),) * 3),
    per_block=st.integers(1, 5),
)
def test_computed_blocks_equal_the_query_row_for_row(
    memory_store: tuple[MemoryStore, np.ndarray],
    corner: tuple[float, float, float],
    size: tuple[float, float, float],
    per_block: int,
) -> None:
    store, _ = memory_store
    opened = zv.open(store)
    box = (np.asarray(corner), np.asarray(corner) + np.asarray(size))
    lazy_result = opened.to_dask(box, chunks_per_block=per_block)
    _assert_same(lazy_result.compute(scheduler="threads"), opened.query(box))
    assert all(len(b) <= per_block for b in lazy_result.block_chunks)


def test_block_lengths_are_known_where_the_box_covers_the_chunks(
    memory_store: tuple[MemoryStore, np.ndarray],
) -> None:
    store, xyz = memory_store
    opened = zv.open(store)
    lo, hi = np.array([-250.0, -500, -500]), np.array([250.0, 500, 120])  # cuts chunks on z
    result = opened.to_dask((lo, hi), chunks_per_block=1)
    lengths = result.positions.chunks[0]
    assert len(lengths) == len(result.block_chunks)
    cell = np.floor(xyz.astype(np.float64) / CHUNK).astype(np.int64) - opened._reader.grid.origin
    for (chunk,), n in zip(result.block_chunks, lengths, strict=True):
        rows = np.all(cell == chunk, axis=1)
        covered = opened._reader.grid.chunk_upper(chunk[None])[0][2] <= hi[2]
        if covered:
            assert n == int(rows.sum())
        else:
            assert np.isnan(n)
    assert any(np.isnan(n) for n in lengths)
    assert not all(np.isnan(n) for n in lengths)


def test_the_whole_store_has_known_lengths_and_equals_read(
    memory_store: tuple[MemoryStore, np.ndarray],
) -> None:
    store, _xyz = memory_store
    opened = zv.open(store)
    result = opened.to_dask(chunks_per_block=3)
    assert result.positions.shape == (N, 3)
    assert result.attributes["k"].shape == (N, 2)
    assert len(result.positions.chunks[0]) == -(-opened.chunk_count // 3)
    _assert_same(result.compute(), opened.read())


def test_tasks_reopen_the_store_when_the_process_has_not_opened_it(
    memory_store: tuple[MemoryStore, np.ndarray],
) -> None:
    store, _ = memory_store
    opened = zv.open(store)
    box = ([-100, -300, -400], [300, 200, 100])
    result = opened.to_dask(box)
    lazy._readers.clear()  # as in a fresh worker process
    _assert_same(result.compute(scheduler="sync"), opened.query(box))


def test_an_empty_box_gives_empty_arrays(memory_store: tuple[MemoryStore, np.ndarray]) -> None:
    store, _ = memory_store
    opened = zv.open(store)
    for box in (([0, 0, 0], [0, 10, 10]), ([2000, 0, 0], [3000, 10, 10])):
        result = opened.to_dask(box)
        assert result.positions.shape == (0, 3)
        _assert_same(result.compute(), opened.query(box))


def test_bad_arguments_are_refused(memory_store: tuple[MemoryStore, np.ndarray]) -> None:
    store, _ = memory_store
    opened = zv.open(store)
    with pytest.raises(InvalidInputError, match="chunks_per_block"):
        opened.to_dask(chunks_per_block=0)
    with pytest.raises(InvalidInputError, match="chunks_per_block"):
        opened.to_dask(chunks_per_block=1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="a box region must be"):
        opened.to_dask(([0, 0], [1, 1]))
    lines = MemoryStore()
    zv.write_polylines(lines, [np.zeros((2, 3)), np.ones((3, 3))], chunk_shape=10.0)
    with pytest.raises(InvalidInputError, match="point clouds"):
        zv.open(lines).to_dask()


def test_without_dask_the_error_names_the_extra(
    memory_store: tuple[MemoryStore, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(MissingDependencyError, match=r"zarr-vectors\[distributed\]"):
        zv.open(memory_store[0]).to_dask()


def test_distributed_workers_in_other_processes_compute_the_blocks(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    path = tmp_path / "points.zarrvectors"
    _write(str(path))
    opened = zv.open(path)
    box = ([-400, -250, -300], [250, 400, 300])
    result = opened.to_dask(box, chunks_per_block=2)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        got = result.compute()  # the client is the default scheduler
        opened_in_workers = client.run(lambda: len(lazy._readers))
    _assert_same(got, opened.query(box))
    assert sum(opened_in_workers.values()) >= 1  # the workers reopened the store themselves


def test_a_store_replaced_before_compute_raises_store_changed(tmp_path: Path) -> None:
    path = tmp_path / "cloud.zv"
    _write(path, seed=3)
    lazy_arrays = zv.open(path).to_dask()
    zv.write_points(path, np.ones((5, 3)) * 900, chunk_shape=CHUNK, mode="w")
    with pytest.raises(zv.StoreChangedError, match=r"zv\.open"):
        lazy_arrays.compute(scheduler="sync")


def test_a_memory_store_appended_before_compute_raises_store_changed() -> None:
    """An in-place store keeps its identity: the tasks compare its root after reading."""
    store = MemoryStore()
    _write(store, seed=3)
    lazy_arrays = zv.open(store).to_dask()
    rng = np.random.default_rng(9)
    zv.append_points(
        store,
        rng.uniform(-500, 500, (100, 3)).astype(np.float32),
        attributes={"v": rng.random(100, dtype=np.float32), "k": rng.integers(0, 9, (100, 2))},
        object_ids=np.arange(N, N + 100),
        progress=False,
    )
    with pytest.raises(zv.StoreChangedError):
        lazy_arrays.compute(scheduler="sync")


def test_tasks_in_another_process_check_the_root_document_not_the_directory_identity(
    tmp_path: Path,
) -> None:
    """A worker on another machine may see the same directory as another device and inode."""
    path = tmp_path / "cloud.zv"
    _write(path, seed=3)
    store = zv.open(path)
    reader = store._reader
    assert store._version is not None
    elsewhere = dataclasses.replace(store._version, place=(0, 0, 0))  # as another host sees it
    box = BoxRegion(np.full(3, -np.inf), np.full(3, np.inf))
    chunks = reader.occupied_chunks(np.zeros(3, np.int64), reader.grid.shape)[0]
    source = lazy._Source(store._io, store._root.to_json(), 0, "t", elsewhere, str(path))
    with pytest.raises(zv.StoreChangedError):
        lazy._query_block(source, chunks, box)  # the opener's process: the directory differs
    remote = dataclasses.replace(source, pid=os.getpid() + 1)
    got = lazy._query_block(remote, chunks, box)
    assert got.positions.shape[0] == N
