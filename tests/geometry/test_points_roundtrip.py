"""Point clouds: write, read back and query boxes on every store kind."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.conftest import StoreFactory
from tests.helpers import sorted_rows


def _brute(positions: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.all((positions >= lo) & (positions < hi), axis=1)


def _brute_columns(columns: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """:func:`_brute` of the ``(D, n)`` float64 columns of the positions (float32 values
    convert to float64 exactly, so the comparisons are the same), axis by axis."""
    keep = np.ones(columns.shape[1], dtype=bool)
    for column, a, b in zip(columns, lo, hi, strict=True):
        keep &= column >= a
        keep &= column < b
    return keep


def _boxes(
    rng: np.random.Generator, positions: np.ndarray, chunk: float, bin_: float, count: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random boxes; a third have faces on vertex coordinates, a third on chunk/bin edges."""
    boxes = []
    for i in range(count):
        lo = rng.uniform(-50, 1000, 3)
        hi = lo + rng.uniform(0, 400, 3)
        if i % 3 == 1:
            a, b = positions[rng.integers(0, len(positions), 2)]
            lo, hi = np.minimum(a, b).astype(np.float64), np.maximum(a, b).astype(np.float64)
        elif i % 3 == 2:
            step = chunk if i % 2 else bin_
            lo = np.floor(lo / step) * step
            hi = lo + step * rng.integers(1, 4, 3)
        boxes.append((lo, hi))
    return boxes


@pytest.mark.parametrize(
    ("store_factory", "n"),
    [
        ("memory", 200_000),
        ("zip", 50_000),
        pytest.param("memory", 1_000_000, marks=pytest.mark.slow),
        pytest.param("zip", 1_000_000, marks=pytest.mark.slow),
        pytest.param("local", 1_000_000, marks=pytest.mark.slow),
        pytest.param("path", 1_000_000, marks=pytest.mark.slow),
    ],
    indirect=["store_factory"],
)
def test_million_points_round_trip_and_200_boxes(
    store_factory: StoreFactory, n: int, rng: np.random.Generator
) -> None:
    """A million points in memory, in a zip file and in directory stores (``local``,
    ``path``) run with ``-m slow``; the default run has 200,000 in memory and 50,000 in a
    zip file, the same structure (tests/test_backends.py round-trips every kind on smaller
    stores)."""
    positions = (rng.random((n, 3)) * 1000).astype(np.float32)
    positions[:1000] = np.round(positions[:1000] / 25.0) * 25.0  # on chunk and bin edges
    intensity = rng.random(n).astype(np.float32)
    label = rng.integers(-5, 5, (n, 2)).astype(np.int16)
    write_store, read_store = store_factory("million")
    zv.write_points(
        write_store,
        positions,
        chunk_shape=100.0,
        bin_shape=25.0,
        attributes={"intensity": intensity, "label": label},
    )
    store = zv.open(read_store())
    assert store.vertex_count == n
    everything = store.read()
    np.testing.assert_array_equal(
        sorted_rows(
            everything.positions, everything.attributes["intensity"], everything.attributes["label"]
        ),
        sorted_rows(positions, intensity, label),
    )
    assert everything.vertex_object_ids is None
    columns = np.ascontiguousarray(positions.T, dtype=np.float64)  # converted once
    for lo, hi in _boxes(rng, positions, 100.0, 25.0, 200):
        got = store.query((lo, hi))
        keep = _brute_columns(columns, lo, hi)
        assert len(got) == int(keep.sum())
        np.testing.assert_array_equal(
            sorted_rows(got.positions, got.attributes["intensity"], got.attributes["label"]),
            sorted_rows(positions[keep], intensity[keep], label[keep]),
        )


def test_boxes_that_tile_space_return_every_vertex_once(rng: np.random.Generator) -> None:
    positions = np.round(rng.random((20_000, 3)) * 40) * 2.5  # many on tile faces
    store_ = MemoryStore()
    zv.write_points(store_, positions, chunk_shape=20.0, bin_shape=5.0)
    store = zv.open(store_)
    edges = [0.0, 7.5, 20.0, 33.3, 55.0, 100.0, 101.0]
    total = []
    for x0, x1 in itertools.pairwise(edges):
        for y0, y1 in itertools.pairwise(edges):
            total.append(store.query(([x0, y0, -np.inf], [x1, y1, np.inf])).positions)
    np.testing.assert_array_equal(sorted_rows(np.concatenate(total)), sorted_rows(positions))


@pytest.mark.parametrize("ndim", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dims_dtypes_negative_coordinates_and_object_ids(
    ndim: int, dtype: type, rng: np.random.Generator
) -> None:
    n = 5000
    positions = (rng.normal(0, 300, (n, ndim))).astype(dtype)
    ids = rng.integers(0, 2**63, n, dtype=np.uint64)
    flags = rng.random(n) > 0.5
    store_ = MemoryStore()
    chunk = 150.0 if ndim < 4 else 400.0  # 4-D chunks of 150 made ~2000 tiny chunks (slow)
    zv.write_points(
        store_, positions, chunk_shape=chunk, object_ids=ids, attributes={"flag": flags}
    )
    store = zv.open(store_)
    assert store.ndim == ndim
    got = store.read()
    assert got.positions.dtype == dtype
    assert got.vertex_object_ids is not None
    assert got.vertex_object_ids.dtype == np.uint64
    assert got.attributes["flag"].dtype == np.bool_
    order_in, order_out = np.lexsort(positions.T), np.lexsort(got.positions.T)
    np.testing.assert_array_equal(got.positions[order_out], positions[order_in])
    np.testing.assert_array_equal(got.vertex_object_ids[order_out], ids[order_in])
    np.testing.assert_array_equal(got.attributes["flag"][order_out], flags[order_in])
    lo, hi = np.full(ndim, -100.0), np.full(ndim, 250.0)
    box = store.query((lo, hi))
    keep = _brute(positions, lo, hi)
    np.testing.assert_array_equal(
        sorted_rows(box.positions, box.vertex_object_ids), sorted_rows(positions[keep], ids[keep])
    )
    assert store.bounds is not None
    np.testing.assert_array_equal(store.bounds[0], positions.min(axis=0).astype(np.float64))


def test_empty_point_cloud() -> None:
    store_ = MemoryStore()
    zv.write_points(
        store_,
        np.empty((0, 3), np.float32),
        chunk_shape=10.0,
        attributes={"a": np.empty(0, np.int32)},
    )
    store = zv.open(store_)
    assert store.vertex_count == 0
    assert store.bounds is None
    got = store.read()
    assert got.positions.shape == (0, 3)
    assert got.attributes["a"].dtype == np.int32
    assert len(store.query(([0, 0, 0], [5, 5, 5]))) == 0


def test_plain_zarr_reads_the_layout(tmp_path: object, rng: np.random.Generator) -> None:
    positions = (rng.random((3000, 3)) * 100).astype(np.float32)
    store_ = MemoryStore()
    zv.write_points(
        store_,
        positions,
        chunk_shape=50.0,
        bin_shape=25.0,
        attributes={"v": np.arange(3000, dtype=np.int32)},
    )
    group = zarr.open_group(store_, mode="r")
    attrs = group.attrs.asdict()
    assert attrs["zarr_vectors_version"] == "1.6"  # every new store (spec §3.3)
    assert attrs["geometry_type"] == "point_cloud"
    assert attrs["spatial_dims"] == 3
    counts = group["0/vertex_counts"][...]
    vertices, values = group["0/vertices"], group["0/attributes/v"]
    assert vertices.shape[:3] == counts.shape == (2, 2, 2)
    seen = []
    for chunk in np.argwhere(counts > 0):
        i, j, k = chunk
        n = counts[i, j, k]
        rows = vertices[i, j, k, :n]
        lower = chunk * 50.0
        assert np.all((rows >= lower) & (rows < lower + 50.0))
        seen.append(positions[values[i, j, k, :n]])
        np.testing.assert_array_equal(rows, positions[values[i, j, k, :n]])
    assert sum(len(s) for s in seen) == 3000


def test_small_chunk_costs_one_row_block_whatever_n_max() -> None:
    dense = np.random.default_rng(1).random((200_000, 3)).astype(np.float32)  # chunk (0,0,0)
    sparse = np.full((10, 3), 15.5, dtype=np.float32)  # chunk (1,1,1)
    store_ = MemoryStore()
    zv.write_points(
        store_,
        np.concatenate([dense, sparse]),
        chunk_shape=10.0,
        options=zv.WriteOptions(rows_per_block=1024, compression=None, shard_chunks=1),
    )
    small = store_._store_dict["0/vertices/c/1/1/1/0/0"].to_bytes()
    n_max = zarr.open_array(store_, path="0/vertices").shape[3]
    assert n_max >= 200_000
    n_blocks = n_max // 1024
    # one row block, the place record, the index, CRCs
    assert len(small) == 1024 * 3 * 4 + 4 + 12 + 16 * n_blocks + 4
    got = zv.open(store_).query(([15, 15, 15], [16, 16, 16]))
    np.testing.assert_array_equal(got.positions, sparse)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(0, 300),
    ndim=st.sampled_from([2, 3, 4]),
    chunk=st.sampled_from([0.3, 1.0, 2.5, 7.0]),
    bins=st.integers(1, 3),
    scale=st.sampled_from([1.0, 10.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_write_then_read_returns_the_input(
    n: int, ndim: int, chunk: float, bins: int, scale: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    positions = rng.normal(0, scale, (n, ndim))
    positions[: n // 3] = np.round(positions[: n // 3] / chunk) * chunk
    weight = rng.integers(0, 1000, (n, 2)).astype(np.uint16)
    store_ = MemoryStore()
    zv.write_points(
        store_,
        positions,
        chunk_shape=chunk,
        bin_shape=chunk / bins,
        attributes={"w": weight},
        options=zv.WriteOptions(rows_per_block=16),
    )
    store = zv.open(store_)
    got = store.read()
    np.testing.assert_array_equal(
        sorted_rows(got.positions, got.attributes["w"]), sorted_rows(positions, weight)
    )
    lo = rng.normal(0, scale, ndim)
    hi = lo + rng.uniform(0, 2 * scale, ndim)
    box = store.query((lo, hi))
    keep = _brute(positions, lo, hi)
    np.testing.assert_array_equal(
        sorted_rows(box.positions, box.attributes["w"]), sorted_rows(positions[keep], weight[keep])
    )


def test_fsspec_store_and_file_urls(tmp_path: object, rng: np.random.Generator) -> None:
    from zarr.storage import FsspecStore

    positions = rng.random((4000, 3)) * 100
    url = f"memory://zv-{rng.integers(1 << 30)}/a.zarrvectors"
    zv.write_points(
        FsspecStore.from_url(url), positions, chunk_shape=25.0, attributes={"a": positions[:, 0]}
    )
    store = zv.open(FsspecStore.from_url(url, read_only=True))
    lo, hi = np.array([10.0, 0, 0]), np.array([60.0, 70, 100])
    got = store.query((lo, hi))
    keep = _brute(positions, lo, hi)
    np.testing.assert_array_equal(
        sorted_rows(got.positions, got.attributes["a"]),
        sorted_rows(positions[keep], positions[keep, 0]),
    )
    file_url = f"file://{tmp_path}/b.zarrvectors"
    zv.write_points(file_url, positions, chunk_shape=25.0)
    assert zv.open(file_url).vertex_count == 4000


def test_sparse_grid_far_apart_clusters(rng: np.random.Generator) -> None:
    """LiDAR-like: two small clusters 100 km apart in 0.5 m chunks (a grid of ~10^13 cells)."""
    near = rng.random((2000, 3))
    far = rng.random((2000, 3)) + np.array([1e5, 2e5, 50.0])
    positions = np.concatenate([near, far])
    store_ = MemoryStore()
    zv.write_points(store_, positions, chunk_shape=0.5, bin_shape=0.25)
    store = zv.open(store_)
    assert np.prod(np.asarray(store.grid_shape, dtype=float)) > 1e12
    assert store.chunk_count <= 16
    got = store.read()
    np.testing.assert_array_equal(sorted_rows(got.positions), sorted_rows(positions))
    lo, hi = np.array([1e5 + 0.2, 2e5, 50.5]), np.array([1e5 + 0.9, 2e5 + 0.5, 52.0])
    box = store.query((lo, hi))
    np.testing.assert_array_equal(
        sorted_rows(box.positions), sorted_rows(positions[_brute(positions, lo, hi)])
    )
