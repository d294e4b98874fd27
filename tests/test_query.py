"""Polygon and sphere queries on point clouds: equal to brute force, reading only what the
region can meet (chunks, and inside partly covered chunks the bins).

The references are plain numpy and shapely over every input point: a point is in a polygon
region when ``shapely.intersects_xy`` puts it in the closed polygon and it lies in every
half-open range, and in a ball when ``sum_d (p_d - c_d)**2 <= r*r`` in float64.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore, WrapperStore

import zarr_vectors as zv
from tests.helpers import sorted_rows
from tests.test_regions import polygons
from zarr_vectors.errors import CorruptChunkError, InvalidInputError
from zarr_vectors.read import point_reads
from zarr_vectors.read.reader import ChunkRows, LevelReader
from zarr_vectors.store import native_blocks

CHUNK = 40.0
BIN = 10.0
STEP = 2.5  # a third of the coordinates are multiples: on bin, chunk and region boundaries


@functools.cache
def _cloud(ndim: int, dtype: type = np.float32) -> tuple[MemoryStore, np.ndarray]:
    """A point cloud written once per module: (store, positions); attribute ``i`` is the row."""
    rng = np.random.default_rng(ndim)
    n = 6000 if ndim < 4 else 12_000
    positions = rng.uniform(-60, 60, (n, ndim))
    snap = rng.random(n) < 0.35
    positions[snap] = np.round(positions[snap] / STEP) * STEP
    positions = positions.astype(dtype)
    store = MemoryStore()
    zv.write_points(
        store,
        positions,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes={"i": np.arange(n, dtype=np.int64)},
        options=zv.WriteOptions(rows_per_block=32, shard_chunks=1),  # a shard per chunk
    )
    return store, positions


def _check_rows(got: zv.QueryResult, positions: np.ndarray, keep: np.ndarray) -> None:
    """``got`` holds exactly the input rows flagged in ``keep``, with their attributes."""
    rows = got.attributes["i"]
    np.testing.assert_array_equal(np.sort(rows), np.flatnonzero(keep))
    np.testing.assert_array_equal(got.positions, positions[rows])


def _in_polygon(
    positions: np.ndarray, polygon: Any, plane: tuple[int, int], ranges: dict[int, Any]
) -> np.ndarray:
    p = positions.astype(np.float64)
    keep = np.asarray(shapely.intersects_xy(polygon, p[:, plane[0]], p[:, plane[1]]))
    for d, (lo, hi) in ranges.items():
        keep &= (p[:, d] >= lo) & (p[:, d] < hi)
    return keep


def _in_ball(positions: np.ndarray, center: np.ndarray, radius: float) -> np.ndarray:
    p = positions.astype(np.float64)
    d2 = sum((p[:, d] - center[d]) ** 2 for d in range(p.shape[1]))
    return np.asarray(d2 <= radius * radius)


def _random_ranges(
    rng: np.random.Generator, ndim: int, plane: tuple[int, int]
) -> dict[int, tuple[float, float]]:
    ranges = {}
    for d in sorted(set(range(ndim)) - set(plane)):
        if rng.random() < 0.6:
            lo, hi = np.sort(rng.uniform(-70, 70, 2))
            if rng.random() < 0.5:  # on bin and chunk edges, and on snapped points
                lo, hi = np.floor(lo / STEP) * STEP, np.ceil(hi / STEP) * STEP
            ranges[d] = (float(lo), float(hi))
    return ranges


def _ball(rng: np.random.Generator, ndim: int) -> tuple[np.ndarray, float]:
    center = rng.uniform(-50, 50, ndim)
    radius = float(rng.uniform(0, 70))
    if rng.random() < 0.5:  # snapped points lie exactly on the sphere (e.g. 3-4-5 triangles)
        center = np.round(center / STEP) * STEP
        radius = float(np.round(radius / STEP) * STEP)
    return center, radius


# -- equal to brute force -----------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    polygon=polygons(),
    ndim=st.integers(2, 4),
    scale=st.sampled_from([1.0, 2.5]),
    seed=st.integers(0, 2**32 - 1),
)
def test_polygon_queries_equal_brute_force(
    polygon: Any, ndim: int, scale: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    polygon = shapely.affinity.scale(polygon, scale, scale, origin=(0, 0))
    store, positions = _cloud(ndim)
    plane = (0, 1) if ndim == 2 else tuple(int(a) for a in rng.choice(ndim, 2, replace=False))
    ranges = _random_ranges(rng, ndim, plane)
    names = zv.open(store).axis_names
    got = zv.open(store).query(
        zv.polygon(
            polygon,
            plane=(names[plane[0]], plane[1]),
            ranges={names[d] if d % 2 else d: r for d, r in ranges.items()},
        )
    )
    _check_rows(got, positions, _in_polygon(positions, polygon, plane, ranges))


@settings(max_examples=30, deadline=None)
@given(ndim=st.integers(2, 4), seed=st.integers(0, 2**32 - 1))
def test_sphere_queries_equal_brute_force(ndim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    store, positions = _cloud(ndim)
    center, radius = _ball(rng, ndim)
    got = zv.open(store).query(zv.ball(center, radius))
    _check_rows(got, positions, _in_ball(positions, center, radius))


def test_boundaries_in_float64_stores() -> None:
    store, positions = _cloud(3, np.float64)
    opened = zv.open(store)
    on_sphere = _in_ball(positions, np.array([5.0, -10.0, 0.0]), 25.0)
    _check_rows(opened.query(zv.ball([5, -10, 0], 25)), positions, on_sphere)
    square = shapely.box(-40, -40, 0, 0)  # edges on chunk boundaries: chunks covered whole
    expected = _in_polygon(positions, square, (0, 1), {2: (-40.0, 40.0)})
    _check_rows(opened.query(zv.polygon(square, ranges={"z": (-40, 40)})), positions, expected)
    on_edges = (positions[:, 0] == 0) | (positions[:, 1] == 0) | (positions[:, 0] == -40)
    assert np.any(expected & on_edges)  # the boundary is in: some of those points are found


def test_points_on_the_boundary_are_found() -> None:
    inside = np.array([[0, 0, 0], [10, 10, 10], [0, 0, 5]], dtype=np.float32)
    on_sphere = np.array([[15, 20, 0], [-25, 0, 0], [0, 7, -24]], dtype=np.float32)
    past = on_sphere * np.float32(1 + 2**-20)  # just outside the sphere
    corner = np.array([[40, 0, 0]], dtype=np.float32)  # on a chunk edge, a polygon corner
    store = MemoryStore()
    everything = np.concatenate([inside, on_sphere, past, corner])
    zv.write_points(store, everything, chunk_shape=CHUNK, bin_shape=BIN)
    opened = zv.open(store)
    got = opened.query(zv.ball([0, 0, 0], 25))
    np.testing.assert_array_equal(
        sorted_rows(got.positions), sorted_rows(np.concatenate([inside, on_sphere]))
    )
    triangle = [(0, 0), (40, 0), (0, 40)]
    got = opened.query(zv.polygon(triangle, ranges={"z": (0, 10)}))  # z = 10 is outside
    expected = np.concatenate([inside[[0, 2]], on_sphere[:1], past[:1], corner])
    np.testing.assert_array_equal(sorted_rows(got.positions), sorted_rows(expected))


def test_empty_and_far_regions() -> None:
    store, _ = _cloud(3)
    opened = zv.open(store)
    assert len(opened.query(zv.ball([1e6, 0, 0], 10))) == 0
    assert len(opened.query(zv.polygon(shapely.box(500, 500, 600, 600)))) == 0
    assert len(opened.query(zv.polygon(shapely.box(0, 0, 10, 10), ranges={"z": (3, 3)}))) == 0
    empty = opened.query(zv.ball([0, 0, 0], 0.001))
    assert empty.positions.shape == (0, 3)
    assert empty.attributes["i"].dtype == np.int64


# -- reads only what the region can meet ----------------------------------------------------


class RecordingStore(WrapperStore):
    """A zarr store that records the key of every read made through it."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.keys: list[str] = []

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        self.keys.append(key)
        return await self._store.get(key, prototype, byte_range)


_PER_CHUNK = re.compile(
    r"^0/(vertices|vertex_fragments|links/0|link_fragments|fragment_records"
    r"|(fragment_|link_)?attributes/[^/]+)/c/"
)


def chunks_read(keys: list[str], ndim: int) -> set[tuple[int, ...]]:
    """The spatial chunks of which a per-chunk array (spec §9) was read, from the keys."""
    found = set()
    for key in keys:
        match = _PER_CHUNK.match(key)
        if match:
            found.add(tuple(int(x) for x in key[match.end() :].split("/")[:ndim]))
    return found


def open_recorded(store: Any) -> tuple[zv.VectorStore, RecordingStore]:
    """``store`` opened through a :class:`RecordingStore`, its level metadata already read."""
    recording = RecordingStore(store)
    opened = zv.open(recording)
    assert opened._reader.grid.ndim > 0
    recording.keys.clear()
    return opened, recording


def _spy_rows(reader: LevelReader, monkeypatch: pytest.MonkeyPatch) -> list[ChunkRows]:
    """Record the row requests made of ``reader``."""
    seen: list[ChunkRows] = []
    read_columns = reader.read_columns

    def rows(names: list[str], wanted: list[ChunkRows]) -> list[np.ndarray]:
        seen.extend(wanted)
        return read_columns(names, wanted)

    monkeypatch.setattr(reader, "read_columns", rows)
    return seen


def _chunk_of(positions: np.ndarray) -> np.ndarray:
    """Absolute chunk index (spec §5.1) of every point, independently of the library."""
    p = positions.astype(np.float64)
    c = np.floor(p / CHUNK)
    c -= c * CHUNK > p
    c += (c + 1) * CHUNK <= p
    return c.astype(np.int64)


def _brute_meets(kind: str, region: Any, lower: np.ndarray, upper: np.ndarray) -> bool:
    """Can a point of the half-open box ``[lower, upper)`` be in the region? One box at a
    time, in plain code: its points are the float64 values of ``[lower, last]``."""
    if kind == "box":  # half-open boxes: their interiors must overlap
        lo, hi = region
        return bool(np.all((lower < hi) & (lo < upper)))
    upper = np.nextafter(upper, -np.inf)
    if kind == "ball":
        center, radius = region
        gap = np.maximum(np.maximum(lower - center, center - upper), 0.0)
        return bool(np.sum(gap**2) <= radius * radius)
    polygon, plane, ranges = region
    rect = shapely.box(lower[plane[0]], lower[plane[1]], upper[plane[0]], upper[plane[1]])
    in_ranges = all(lower[d] < hi and lo <= upper[d] for d, (lo, hi) in ranges.items())
    return in_ranges and bool(shapely.intersects(polygon, rect))


def _expected_rows(
    kind: str, region: Any, reader: LevelReader, chunk: tuple[int, ...]
) -> np.ndarray:
    """Rows of the bins of ``chunk`` whose boxes meet the region, by brute force."""
    grid = reader.grid
    corner = (np.asarray(chunk) + grid.origin) * CHUNK
    index = np.asarray(chunk)[None]
    starts, sizes = reader.fragment_ranges(
        index, reader.occupied_chunks(index[0], index[0] + 1)[1]
    )[0]
    rows = []
    for flat in range(grid.bins_per_chunk_total):
        b = np.array(np.unravel_index(flat, grid.bins.tolist()))
        if _brute_meets(kind, region, corner + b * BIN, corner + (b + 1) * BIN):
            rows.append(np.arange(starts[flat], starts[flat] + sizes[flat]))
    return np.sort(np.concatenate(rows)) if rows else np.empty(0, np.int64)


def _check_reads(
    kind: str,
    region: Any,
    reader: LevelReader,
    positions: np.ndarray,
    rows: list[ChunkRows],
    keys: list[str],
) -> None:
    """Exactly the occupied chunks the region can meet were read (their fragment index or
    their rows), and in each chunk whose rows were read exactly the rows of the bins the
    region can meet."""
    origin = reader.grid.origin
    occupied = {tuple(c) for c in (_chunk_of(positions) - origin).tolist()}
    meeting = {
        c
        for c in occupied
        if _brute_meets(
            kind, region, (np.asarray(c) + origin) * CHUNK, (np.asarray(c) + origin + 1) * CHUNK
        )
    }
    assert chunks_read(keys, reader.grid.ndim) == meeting
    read = {w.chunk: w.runs for w in rows}
    assert len(read) == len(rows)  # one request per chunk
    for chunk, runs in read.items():
        got = np.concatenate([np.arange(a, b) for a, b in runs])
        np.testing.assert_array_equal(got, _expected_rows(kind, region, reader, chunk))


def _query_recorded(store: Any, query: Any) -> tuple[zv.QueryResult, Any, list[Any], list[str]]:
    """``query(opened store)``, with the row requests and the store keys it read."""
    opened, recording = open_recorded(store)
    with pytest.MonkeyPatch.context() as patch:
        rows = _spy_rows(opened._reader, patch)
        got = query(opened)
    return got, opened._reader, rows, recording.keys


@settings(max_examples=12, deadline=None)
@given(polygon=polygons(), ndim=st.integers(2, 3), seed=st.integers(0, 2**32 - 1))
def test_polygon_reads_only_the_chunks_and_bins_it_meets(
    polygon: Any, ndim: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    store, positions = _cloud(ndim)
    plane = (0, 1) if ndim == 2 else tuple(int(a) for a in rng.choice(3, 2, replace=False))
    ranges = _random_ranges(rng, ndim, plane)
    got, reader, rows, keys = _query_recorded(
        store, lambda s: s.query(zv.polygon(polygon, plane=plane, ranges=ranges))
    )
    _check_rows(got, positions, _in_polygon(positions, polygon, plane, ranges))
    _check_reads("polygon", (polygon, plane, ranges), reader, positions, rows, keys)


@settings(max_examples=12, deadline=None)
@given(ndim=st.integers(2, 3), seed=st.integers(0, 2**32 - 1))
def test_sphere_reads_only_the_chunks_and_bins_it_meets(ndim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    store, positions = _cloud(ndim)
    center, radius = _ball(rng, ndim)
    got, reader, rows, keys = _query_recorded(store, lambda s: s.query(zv.ball(center, radius)))
    _check_rows(got, positions, _in_ball(positions, center, radius))
    _check_reads("ball", (center, radius), reader, positions, rows, keys)


def test_box_queries_read_only_the_chunks_and_bins_they_meet() -> None:
    """A box is a region too: it reads exactly the chunks and bins it meets (spec §8.3)."""
    store, positions = _cloud(3)
    rng = np.random.default_rng(7)
    for _ in range(6):
        lo = np.round(rng.uniform(-70, 40, 3) / STEP) * STEP
        hi = lo + np.round(rng.uniform(0, 60, 3) / STEP) * STEP
        got, reader, rows, keys = _query_recorded(store, lambda s: s.query((lo, hi)))  # noqa: B023
        _check_rows(got, positions, np.all((positions >= lo) & (positions < hi), axis=1))
        _check_reads("box", (lo, hi), reader, positions, rows, keys)


# -- input checks on the store API ------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.query(zv.ball([0, 0], 1)), "3 numbers"),
        (lambda s: s.query(zv.ball([0, 0, 0], -1)), ">= 0"),
        (lambda s: s.query(zv.ball([0, np.nan, 0], 1)), "finite"),
        (lambda s: s.query(zv.polygon(shapely.Polygon())), "empty"),
        (lambda s: s.query(zv.polygon([(0, 0), (1, 1), (1, 0), (0, 1)])), "not valid"),
        (lambda s: s.query(zv.polygon(shapely.box(0, 0, 1, 1), ranges={"t": (0, 1)})), "'t'"),
        (lambda s: s.query(zv.polygon(shapely.box(0, 0, 1, 1), plane=("x", "q"))), "'q'"),
        (lambda s: s.query(zv.ball([0, 0, 0], 1), clip=True), "object stores only"),
        (lambda s: s.query(zv.polygon(shapely.box(0, 0, 1, 1)), group="a"), "has no groups"),
    ],
)
def test_bad_input(call: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        call(zv.open(_cloud(3)[0]))


# -- the box fast path (point clouds) -----------------------------------------------------


def _general(store: Any) -> zv.VectorStore:
    """``store`` opened so that box queries take the general region path."""
    opened = zv.open(store)
    opened._reader.points.can_select = lambda names: False  # type: ignore[method-assign]
    return opened


def _same_result(got: zv.QueryResult, want: zv.QueryResult) -> None:
    """The same rows in the same order, with the same dtypes, in every column."""
    np.testing.assert_array_equal(got.positions, want.positions)
    assert got.positions.dtype == want.positions.dtype
    assert got.attributes.keys() == want.attributes.keys()
    for name, column in want.attributes.items():
        np.testing.assert_array_equal(got.attributes[name], column)
        assert got.attributes[name].shape == column.shape
        assert got.attributes[name].dtype == column.dtype
    if want.vertex_object_ids is None:
        assert got.vertex_object_ids is None
    else:
        assert got.vertex_object_ids is not None
        np.testing.assert_array_equal(got.vertex_object_ids, want.vertex_object_ids)


@functools.cache
def _fast_path_store(ndim: int, dtype: str, variant: str) -> tuple[MemoryStore, np.ndarray]:
    """A point cloud on the STEP grid with varied columns, written with a layout variant."""
    rng = np.random.default_rng(100 + ndim)
    n = 3000
    positions = (np.round(rng.uniform(-60, 60, (n, ndim)) / STEP) * STEP).astype(dtype)
    options = {
        "plain": zv.WriteOptions(rows_per_block=64),
        "raw": zv.WriteOptions(rows_per_block=16, compression=None),
        "sharded": zv.WriteOptions(rows_per_block=32, shard_chunks=2),
    }[variant]
    store = MemoryStore()
    zv.write_points(
        store,
        positions,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes={
            "i": np.arange(n, dtype=np.int64),
            "pair": rng.integers(-9, 9, (n, 2)).astype(np.int16),
        },
        object_ids=np.arange(n) % 7 if variant == "plain" else None,
        options=options,
    )
    return store, positions


def _random_box(rng: np.random.Generator, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    lo = rng.uniform(-80, 60, ndim)
    hi = lo + rng.uniform(0, 90, ndim)
    if rng.random() < 0.5:  # faces on bin and chunk edges and on points
        lo, hi = np.floor(lo / STEP) * STEP, np.ceil(hi / STEP) * STEP
    if rng.random() < 0.2:
        lo[rng.integers(ndim)] = -np.inf
    return lo, hi


@pytest.mark.parametrize("variant", ["plain", "raw", "sharded"])
@pytest.mark.parametrize(("ndim", "dtype"), [(2, "float32"), (3, "float64"), (4, "float32")])
def test_box_queries_equal_the_general_path(ndim: int, dtype: str, variant: str) -> None:
    store, positions = _fast_path_store(ndim, dtype, variant)
    fast, general = zv.open(store), _general(store)
    rng = np.random.default_rng(ndim)
    boxes = [_random_box(rng, ndim) for _ in range(12)]
    boxes += [
        (np.full(ndim, -40.0), np.full(ndim, 40.0)),  # chunks covered whole
        (np.full(ndim, -np.inf), np.full(ndim, np.inf)),  # everything
        (np.full(ndim, 500.0), np.full(ndim, 600.0)),  # beyond the grid
        (np.zeros(ndim), np.zeros(ndim)),  # empty
    ]
    for lo, hi in boxes:
        got = fast.query((lo, hi))
        _same_result(got, general.query((lo, hi)))
        inside = np.all((positions >= lo) & (positions < hi), axis=1)
        _check_rows(got, positions, inside)


def test_box_queries_decode_the_same_without_native_functions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, _ = _fast_path_store(3, "float64", "plain")
    lo, hi = np.array([-35.0, -20.0, -50.0]), np.array([25.0, 31.5, 12.5])
    native = zv.open(store).query((lo, hi))
    monkeypatch.setattr(native_blocks, "native_block_functions", lambda: None)
    _same_result(zv.open(store).query((lo, hi)), native)


def test_box_queries_decode_the_same_with_the_helper_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("the helper thread needs two CPUs")
    store, _ = _fast_path_store(3, "float64", "plain")
    lo, hi = np.array([-35.0, -20.0, -50.0]), np.array([25.0, 31.5, 12.5])
    alone = zv.open(store).query((lo, hi))
    monkeypatch.setattr(native_blocks, "_SPLIT_BLOCKS", 2)  # every batch of 2+ blocks is shared
    monkeypatch.setattr(native_blocks, "_SPLIT_PART", 1)
    monkeypatch.setattr(native_blocks, "_SPLIT_BYTES", 0)
    monkeypatch.setattr(native_blocks, "_idle_cpu", lambda: True)  # an idle machine
    used: list[bool] = []
    helper = native_blocks._decode_helper

    def spy(blocks: int) -> Any:
        found = helper(blocks)
        used.append(found is not None)
        return found

    monkeypatch.setattr(native_blocks, "_decode_helper", spy)
    _same_result(zv.open(store).query((lo, hi)), alone)
    assert any(used)


def test_a_part_the_helper_thread_fails_is_decoded_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("the helper thread needs two CPUs")
    store, _ = _fast_path_store(3, "float64", "plain")
    everything = (np.full(3, -np.inf), np.full(3, np.inf))
    alone = zv.open(store).query(everything)
    monkeypatch.setattr(native_blocks, "_SPLIT_BLOCKS", 2)
    monkeypatch.setattr(native_blocks, "_SPLIT_PART", 1)
    monkeypatch.setattr(native_blocks, "_SPLIT_BYTES", 0)
    monkeypatch.setattr(native_blocks, "_idle_cpu", lambda: True)
    kernel = native_blocks.decode_blocks

    def flaky(*args: Any) -> int:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("a helper part fails")
        return kernel(*args)

    monkeypatch.setattr(native_blocks, "decode_blocks", flaky)
    _same_result(zv.open(store).query(everything), alone)


def _local_copy(store: MemoryStore, root: Path) -> Path:
    """The keys of ``store`` written as files under ``root`` (a local directory store)."""
    for key, value in store._store_dict.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value.to_bytes())
    return root


def _reads_in_turns(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make every local box read go in turns of two blocks, shared with the helper thread
    (as on an idle machine); returns the list a spy appends to per read in turns."""
    monkeypatch.setattr(point_reads, "_TURNS_MIN_BYTES", 0)
    monkeypatch.setattr(point_reads, "_TURN_BLOCKS", 2)
    monkeypatch.setattr(native_blocks, "_SPLIT_BLOCKS", 2)
    monkeypatch.setattr(native_blocks, "_idle_cpu", lambda: True)
    calls: list[int] = []
    read = point_reads.PointReads._read_in_turns

    def spy(self: Any, *args: Any) -> Any:
        calls.append(1)
        return read(self, *args)

    monkeypatch.setattr(point_reads.PointReads, "_read_in_turns", spy)
    return calls


@pytest.mark.parametrize("variant", ["plain", "raw", "sharded"])
@pytest.mark.parametrize(("ndim", "dtype"), [(2, "float32"), (3, "float64"), (4, "float32")])
def test_local_box_reads_in_turns_equal_the_general_path(
    ndim: int, dtype: str, variant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, positions = _fast_path_store(ndim, dtype, variant)
    local = zv.open(_local_copy(store, tmp_path / "s.zv"))
    general = _general(store)
    calls = _reads_in_turns(monkeypatch)
    rng = np.random.default_rng(10 + ndim)
    boxes = [_random_box(rng, ndim) for _ in range(8)]
    boxes += [
        (np.full(ndim, -40.0), np.full(ndim, 40.0)),
        (np.full(ndim, -1e9), np.full(ndim, 1e9)),
    ]
    for lo, hi in boxes:
        got = local.query((lo, hi))
        _same_result(got, general.query((lo, hi)))
        _check_rows(got, positions, np.all((positions >= lo) & (positions < hi), axis=1))
    assert calls


@pytest.mark.parametrize("in_turns", [False, True])
def test_a_damaged_row_block_of_a_local_store_is_reported(
    in_turns: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = _fast_path_store(3, "float64", "plain")
    root = _local_copy(store, tmp_path / "s.zv")
    shard = min(p for p in (root / "0" / "vertices" / "c").rglob("*") if p.is_file())
    data = bytearray(shard.read_bytes())
    data[10] ^= 0xFF  # inside the first row block
    shard.write_bytes(bytes(data))
    calls = _reads_in_turns(monkeypatch) if in_turns else []
    with pytest.raises(CorruptChunkError, match="row block 0: checksum mismatch"):
        zv.open(root).query((np.full(3, -np.inf), np.full(3, np.inf)))
    assert bool(calls) == in_turns


@pytest.mark.parametrize("in_turns", [False, True])
def test_a_shard_removed_after_open_is_reported(
    in_turns: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = _fast_path_store(3, "float64", "plain")
    root = _local_copy(store, tmp_path / "s.zv")
    opened = zv.open(root)
    everything = (np.full(3, -np.inf), np.full(3, np.inf))
    opened.query(everything)  # the shard indexes are known now
    calls = _reads_in_turns(monkeypatch) if in_turns else []
    shard = next(p for p in (root / "0" / "attributes" / "i" / "c").rglob("*") if p.is_file())
    shard.unlink()
    with pytest.raises(CorruptChunkError, match="disappeared"):
        opened.query(everything)
    assert bool(calls) == in_turns


@pytest.mark.parametrize("native", [True, False, "shared"])
def test_a_damaged_row_block_is_reported(
    native: bool | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, _ = _fast_path_store(3, "float64", "plain")
    store = MemoryStore(store_dict=dict(source._store_dict))
    key = min(k for k in store._store_dict if k.startswith("0/vertices/c/"))
    shard = bytearray(store._store_dict[key].to_bytes())
    shard[10] ^= 0xFF  # inside the first row block
    store._store_dict[key] = type(store._store_dict[key]).from_bytes(bytes(shard))
    if not native:
        monkeypatch.setattr(native_blocks, "native_block_functions", lambda: None)
    if native == "shared":  # decoded in parts shared with the helper thread
        monkeypatch.setattr(native_blocks, "_SPLIT_BLOCKS", 2)
        monkeypatch.setattr(native_blocks, "_SPLIT_PART", 1)
        monkeypatch.setattr(native_blocks, "_SPLIT_BYTES", 0)
        monkeypatch.setattr(native_blocks, "_idle_cpu", lambda: True)
    with pytest.raises(CorruptChunkError, match="row block 0: checksum mismatch"):
        zv.open(store).query((np.full(3, -np.inf), np.full(3, np.inf)))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_box_fast_path_reads_exactly_the_rows_of_the_bins_it_meets(seed: int) -> None:
    store, positions = _cloud(3)
    rng = np.random.default_rng(seed)
    lo, hi = _random_box(rng, 3)
    opened, recording = open_recorded(store)
    reader = opened._reader
    seen: list[Any] = []
    read_selected = reader.points.read_selected

    def spy(names: Any, runs: Any, select: Any) -> Any:
        seen.append(runs)
        return read_selected(names, runs, select)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reader.points, "read_selected", spy)
        got = opened.query((lo, hi))
    _check_rows(got, positions, np.all((positions >= lo) & (positions < hi), axis=1))
    (runs,) = seen
    rows = [
        ChunkRows(chunk, np.stack([runs.start[runs.chunk == i], runs.stop[runs.chunk == i]], 1))
        for i, chunk in enumerate(runs.chunks)
        if np.any(runs.chunk == i)
    ]
    _check_reads("box", (lo, hi), reader, positions, rows, recording.keys)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.query(group="cst"),
        lambda s: s.query(([0, 0, 0], [1, 1, 1]), group="cst"),
        lambda s: s.query(zv.ball([0, 0, 0], 1), group=0),
    ],
)
def test_query_group_on_a_point_cloud_says_it_has_no_groups(call: Any) -> None:
    with pytest.raises(InvalidInputError, match="point_cloud store has no groups") as info:
        call(zv.open(_cloud(3)[0]))
    assert "bbox" not in str(info.value)


def test_query_without_a_bbox_on_a_point_cloud_points_to_read() -> None:
    with pytest.raises(InvalidInputError, match=r"read\(\) returns every point"):
        zv.open(_cloud(3)[0]).query()


@pytest.mark.parametrize(
    ("bbox", "message"),
    [
        ((["0", "0", "0"], ["9", "9", "9"]), "3 numbers each"),  # was read as floats
        (([False] * 3, [True] * 3), "3 numbers each"),  # was read as 0 and 1
        ((None, [1, 1, 1]), "3 numbers each"),
        (([5, 0, 0], [1, 1, 1]), "lo <= hi on every axis"),
        (([0, 0, np.nan], [1, 1, 1]), "-inf or inf"),
    ],
)
def test_bbox_strings_bools_and_wrong_bounds_are_refused_saying_what_to_give(
    bbox: Any, message: str
) -> None:
    store = zv.open(_cloud(3)[0])
    with pytest.raises(InvalidInputError, match=message):
        store.query(bbox)
    with pytest.raises(InvalidInputError, match=message):
        store.to_dask(bbox)


def test_clip_must_be_a_bool() -> None:
    with pytest.raises(InvalidInputError, match="clip must be True or False, got 'yes'"):
        zv.open(_cloud(3)[0]).query(([0, 0, 0], [1, 1, 1]), clip="yes")


def test_every_read_and_query_carries_the_store_labels_and_level(tmp_path: Path) -> None:
    """Results are built with the store's axis names, units, kind and level (no longer
    stamped by copies afterwards): region, group, clipped, budget and id reads of objects,
    and region queries and reads of points."""
    lines = [np.array([[0, 0, 0], [5, 5, 5.0]]), np.array([[20, 0, 0], [20, 9, 0.0]])]
    path = tmp_path / "lines.zv"
    zv.write_polylines(
        path, lines, chunk_shape=10.0, units="micrometer", groups={"a": [0], "b": [1]}
    )
    objects = zv.open(path)
    box = (np.array([-1.0, -1, -1]), np.array([6.0, 6, 6]))
    found = [
        objects.query(box),
        objects.query(([-1, -1, -1], [6, 6, 6])),
        objects.query(box, clip=True),
        objects.query(group="b"),
        objects.query(box, max_vertices=10),
        objects.read(),
        objects.read_objects([1]),
    ]
    assert [len(f.object_ids) for f in found] == [1, 1, 1, 1, 1, 2, 1]
    for result in found:
        assert (result.axis_names, result.axis_units) == (("x", "y", "z"), ("micrometer",) * 3)
        assert (result.kind, result.level) == ("polyline", 0)
    points = tmp_path / "points.zv"
    zv.write_points(points, [[1.0, 1.0], [7.0, 2.0]], chunk_shape=5.0, units="meter")
    store = zv.open(points)
    for result in (store.query((np.zeros(2), np.full(2, 5.0))), store.read()):
        assert (result.axis_names, result.axis_units) == (("x", "y"), ("meter", "meter"))
        assert (result.kind, result.level) == ("point_cloud", 0)
