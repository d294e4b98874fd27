"""LevelReader over a store with request logging: reads cost a constant number of waves.

A *wave* is a set of requests issued together (see ``benchmarks/_latency.py``); on object
storage each wave costs one round trip. Opening a store and querying a box must cost the
same number of waves whatever the number of chunks the box meets and of attributes, and
the answers must equal a brute-force numpy filter.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

import zarr_vectors as zv
from benchmarks._latency import LatencyStore
from tests.helpers import sorted_rows
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import VERTICES
from zarr_vectors.kernels.box_rows import select_rows
from zarr_vectors.query.point_queries import _box_row_runs, query_box
from zarr_vectors.query.regions import BoxRegion
from zarr_vectors.read.point_reads import RowRuns
from zarr_vectors.read.reader import ChunkRows, LevelReader
from zarr_vectors.store.zarr_adapter import sync

EXTENT = 1000.0
BOX = (np.array([301.7, 288.2, 310.4]), np.array([517.1, 503.6, 525.8]))  # ~1% of the volume


def _points(n: int, n_attributes: int, seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(0, EXTENT, (n, 3)).astype(np.float32)
    attributes = {f"a{k}": rng.random(n, dtype=np.float32) for k in range(n_attributes)}
    return xyz, attributes


def _point_store(
    chunk: float, n_attributes: int, n: int = 20_000, shard_chunks: int | None = 1
) -> tuple[LatencyStore, np.ndarray, dict[str, np.ndarray]]:
    """A point store of one chunk per shard (``shard_chunks=None``: the default shards)."""
    xyz, attributes = _points(n, n_attributes)
    inner = MemoryStore()
    options = zv.WriteOptions(shard_chunks=shard_chunks)
    zv.write_points(inner, xyz, chunk_shape=chunk, attributes=attributes, options=options)
    return LatencyStore(inner), xyz, attributes


def _brute_force(
    xyz: np.ndarray, attributes: dict[str, np.ndarray], lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    inside = _in_box(xyz, lo, hi)
    return sorted_rows(xyz[inside], *(a[inside] for a in attributes.values()))


def _open_and_query(store: LatencyStore) -> tuple[zv.QueryResult, int]:
    store.log.reset()
    found = zv.open(store).query(BOX)
    return found, store.log.summary().waves


@pytest.mark.parametrize(("shard_chunks", "expected"), [(1, 7), (None, 8)])
@pytest.mark.parametrize(
    ("chunk", "n_attributes"), [(500.0, 1), (500.0, 4), (125.0, 1), (125.0, 4)]
)
def test_open_and_box_query_cost_the_same_waves_for_any_chunk_and_attribute_count(
    chunk: float, n_attributes: int, shard_chunks: int | None, expected: int
) -> None:
    store, xyz, attributes = _point_store(chunk, n_attributes, shard_chunks=shard_chunks)
    found, waves = _open_and_query(store)
    # root; level documents; attribute documents; vertex_counts; fragment and shard
    # indexes; rows of every column; the version check after the read (spec §12.4).
    # Shards of several chunks (the default): the fragment blobs' shard indexes first.
    assert waves == expected
    expected = _brute_force(xyz, attributes, *BOX)
    got = sorted_rows(found.positions, *(found.attributes[k] for k in attributes))
    np.testing.assert_array_equal(got, expected)


def test_the_box_meets_many_chunks_in_the_fine_store() -> None:
    """The wave counts above compare a box meeting 8 of 8 chunks with one meeting 27 of 512."""
    for chunk, expected in ((500.0, 8), (125.0, 27)):
        store, *_ = _point_store(chunk, 1)
        store.log.reset()
        zv.open(store).query(BOX)
        shards = {
            key.rsplit("/c/", 1)[1]
            for key in (r.key for r in store.log.requests)
            if key.startswith("0/vertices/c/")
        }
        assert len(shards) == expected


def test_a_repeated_query_costs_one_wave() -> None:
    store, xyz, attributes = _point_store(125.0, 3)
    opened = zv.open(store)
    opened.query(BOX)
    store.log.reset()
    again = opened.query(BOX)
    assert store.log.summary().waves == 2  # indexes are cached: rows, version check
    got = sorted_rows(again.positions, *(again.attributes[k] for k in attributes))
    np.testing.assert_array_equal(got, _brute_force(xyz, attributes, *BOX))


@pytest.mark.parametrize("chunk", [500.0, 250.0])
def test_reading_everything_fetches_whole_shards_in_one_wave(chunk: float) -> None:
    store, xyz, attributes = _point_store(chunk, 2)
    opened = zv.open(store)
    opened.query(([0, 0, 0], [1, 1, 1]))  # metadata and vertex_counts are read
    store.log.reset()
    everything = opened.read()
    summary = store.log.summary()
    assert summary.waves == 2  # the shards, then the version check (spec §12.4)
    n_chunks = int((EXTENT / chunk) ** 3)
    assert summary.requests == 3 * n_chunks + 1  # one whole shard per chunk and column
    got = sorted_rows(everything.positions, *(everything.attributes[k] for k in attributes))
    np.testing.assert_array_equal(got, sorted_rows(xyz, *attributes.values()))


def _in_box(points: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.all((points >= lo) & (points < hi), axis=1)


def _streamlines(n: int, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    starts = rng.uniform(100, 900, (n, 3))
    return [s + np.cumsum(rng.normal(0, 15, (40, 3)), axis=0) for s in starts]


@pytest.mark.parametrize(("shard_chunks", "extra"), [(1, 0), (None, 1)])
@pytest.mark.parametrize("chunk", [500.0, 125.0])
def test_objects_by_id_and_by_box_cost_the_same_waves_for_any_chunk_count(
    chunk: float, shard_chunks: int | None, extra: int
) -> None:
    """``extra``: shards of several chunks (the default) fetch the fragment blobs' shard
    indexes in a wave of their own (a box: also those of the rows it reads whole)."""
    lines = _streamlines(200)
    inner = MemoryStore()
    zv.write_polylines(
        inner,
        lines,
        kind="streamline",
        chunk_shape=chunk,
        object_attributes={"w": np.arange(200.0)},
        options=zv.WriteOptions(shard_chunks=shard_chunks),
    )
    store = LatencyStore(inner)
    ids = [150, 3, 77]
    found = zv.open(store).read_objects(ids)
    # root; level documents; attribute documents; global arrays; vertex_counts; fragment
    # and shard indexes; rows; the version check after the read (spec §12.4)
    assert store.log.summary().waves == 8 + extra
    for k, i in enumerate(ids):
        np.testing.assert_array_equal(
            found.positions[found.offsets[k] : found.offsets[k + 1]],
            lines[i].astype(found.positions.dtype),
        )
    np.testing.assert_array_equal(found.object_attributes["w"], np.asarray(ids, float))

    store.log.reset()
    hits = zv.open(store).query(BOX)
    # the read by id above, plus the fragment owners of the box's chunks with the
    # positions of those it cuts (one wave), before the objects' global arrays
    assert store.log.summary().waves <= 10 + 2 * extra  # and the shard indexes of the rows
    lo, hi = BOX
    meets = [i for i, line in enumerate(lines) if _in_box(line.astype(np.float32), lo, hi).any()]
    np.testing.assert_array_equal(np.sort(hits.object_ids), meets)


def _in_chunks(
    reader: LevelReader,
    picked: np.ndarray,
    xyz: np.ndarray,
    attributes: dict[str, np.ndarray],
    lo: np.ndarray,
    hi: np.ndarray,
) -> np.ndarray:
    """Brute-force rows in the box of the points lying in chunks ``picked`` (side 250)."""
    shape = tuple(int(g) for g in reader.grid.shape)
    cell = np.floor(xyz / 250.0).astype(np.int64) - reader.grid.origin
    mine = np.isin(
        np.ravel_multi_index(tuple(cell.T), shape), np.ravel_multi_index(tuple(picked.T), shape)
    )
    return _brute_force(xyz[mine], {k: v[mine] for k, v in attributes.items()}, lo, hi)


def test_a_restricted_reader_answers_for_its_chunks_only() -> None:
    store, xyz, attributes = _point_store(250.0, 1)
    opened = zv.open(store)
    reader = opened._reader
    lo, hi = np.array([100.0, 100, 100]), np.array([900.0, 900, 900])
    chunks, _ = reader.occupied_chunks(np.zeros(3, np.int64), reader.grid.shape)
    picked = chunks[::3]
    part = query_box(reader.restricted(picked), lo, hi)
    expected = _in_chunks(reader, picked, xyz, attributes, lo, hi)
    np.testing.assert_array_equal(sorted_rows(part.positions, part.attributes["a0"]), expected)
    # the full reader still sees every chunk
    whole = query_box(reader, lo, hi)
    np.testing.assert_array_equal(
        sorted_rows(whole.positions, whole.attributes["a0"]), _brute_force(xyz, attributes, lo, hi)
    )


def test_columns_with_their_own_requests_are_read_in_one_wave() -> None:
    store, xyz, _ = _point_store(250.0, 2)
    reader = zv.open(store)._reader
    chunks, counts = reader.occupied_chunks(np.zeros(3, np.int64), reader.grid.shape)
    everything = [
        ChunkRows(tuple(c), np.array([[0, n]])) for c, n in zip(chunks, counts, strict=True)
    ]
    some = [ChunkRows(tuple(chunks[1]), np.array([[3, 9], [40, 41]])), everything[0]]
    store.log.reset()
    positions, a1 = reader.read_many([(VERTICES, everything), ("a1", some)])
    assert store.log.summary().waves == 2  # the shard index of the partly read chunk, rows
    np.testing.assert_array_equal(sorted_rows(positions), sorted_rows(xyz))
    stored = reader.read_rows("a1", everything)  # chunk after chunk, rows in order
    second = stored[int(counts[0]) :]
    expected = np.concatenate([second[3:9], second[40:41], stored[: int(counts[0])]])
    np.testing.assert_array_equal(a1, expected)


@pytest.mark.parametrize("box", [BOX, ([0, 0, 0], [EXTENT, EXTENT, EXTENT])])
def test_a_missing_shard_is_reported_whether_read_whole_or_in_part(box: object) -> None:
    store, *_ = _point_store(250.0, 1)
    inner = store._store
    reader = zv.open(store)._reader
    lo, hi = (np.asarray(b, dtype=np.float64) for b in box)
    first, stop = reader.grid.box_chunk_range(lo, hi)
    chunk = reader.occupied_chunks(first, stop)[0][0]
    key = "0/attributes/a0/c/" + "/".join(str(int(c)) for c in chunk) + "/0"
    sync(inner.delete(key))
    with pytest.raises(CorruptChunkError, match="shard of an occupied chunk"):
        zv.open(store).query(box)


def test_a_restricted_view_of_a_queried_reader_and_back() -> None:
    """The view plans from its own chunks even after the full reader planned its queries."""
    store, xyz, attributes = _point_store(250.0, 1)
    reader = zv.open(store)._reader
    lo, hi = np.array([100.0, 100, 100]), np.array([900.0, 900, 900])
    whole = _brute_force(xyz, attributes, lo, hi)
    first = query_box(reader, lo, hi)
    chunks, _ = reader.occupied_chunks(np.zeros(3, np.int64), reader.grid.shape)
    picked = chunks[1::2]
    part = query_box(reader.restricted(picked), lo, hi)
    expected = _in_chunks(reader, picked, xyz, attributes, lo, hi)
    np.testing.assert_array_equal(sorted_rows(part.positions, part.attributes["a0"]), expected)
    again = query_box(reader, lo, hi)
    for found in (first, again):
        np.testing.assert_array_equal(sorted_rows(found.positions, found.attributes["a0"]), whole)


def test_answers_do_not_share_memory_with_later_reads() -> None:
    """Scratch buffers are reused from one query to the next, never the arrays returned."""
    store, xyz, attributes = _point_store(250.0, 1)
    reader = zv.open(store)._reader
    lo, hi = np.array([100.0, 120, 90]), np.array([700.0, 650, 800])
    first = query_box(reader, lo, hi)
    kept = (first.positions.copy(), first.attributes["a0"].copy())
    other = query_box(zv.open(store)._reader, hi - 500.0, hi)  # another reader, another box
    np.testing.assert_array_equal(first.positions, kept[0])
    np.testing.assert_array_equal(first.attributes["a0"], kept[1])
    first.positions[:] = -1.0
    again = query_box(reader, lo, hi)
    np.testing.assert_array_equal(again.positions, kept[0])
    np.testing.assert_array_equal(again.attributes["a0"], kept[1])
    np.testing.assert_array_equal(
        sorted_rows(other.positions, other.attributes["a0"]),
        _brute_force(xyz, attributes, hi - 500.0, hi),
    )


def test_one_reader_answers_box_queries_from_several_threads() -> None:
    store, xyz, attributes = _point_store(250.0, 1)
    reader = zv.open(store)._reader
    rng = np.random.default_rng(5)
    boxes = [(lo, lo + rng.uniform(50, 500, 3)) for lo in rng.uniform(0, 800, (16, 3))]

    def answer(box: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        found = query_box(reader, *box)
        return sorted_rows(found.positions, found.attributes["a0"])

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(answer, boxes))
    for box, got in zip(boxes, answers, strict=True):
        np.testing.assert_array_equal(got, _brute_force(xyz, attributes, *box))


def test_row_runs_without_chunk_positions_read_the_same_rows() -> None:
    store, *_ = _point_store(250.0, 1)
    reader = zv.open(store)._reader
    lo, hi = np.array([100.0, 120, 90]), np.array([700.0, 650, 800])
    runs, faces_lo, faces_hi, _ = _box_row_runs(reader, BoxRegion(lo, hi))
    bare = RowRuns(runs.chunks, runs.chunk, runs.start, runs.stop)
    names = [VERTICES, "a0"]

    def select(rows: np.ndarray, run_row: np.ndarray, out: np.ndarray) -> np.ndarray:
        lengths = runs.stop - runs.start
        return select_rows(rows, run_row, lengths, faces_lo, faces_hi, lo, hi, out)

    fresh = zv.open(store)._reader  # plans from the positions it finds itself
    got = fresh.points.read_selected(names, bare, select)
    want = reader.points.read_selected(names, runs, select)
    assert len(got) == len(want) == 2
    for column, expected in zip(got, want, strict=True):
        np.testing.assert_array_equal(column, expected)


def _skeleton_store() -> MemoryStore:
    rng = np.random.default_rng(5)
    store = MemoryStore()
    positions = rng.uniform(0, 100, (400, 3))
    parents = np.where(np.arange(400) % 40 == 0, -1, np.arange(400) - 1)
    zv.write_skeletons(
        store,
        positions,
        parents=parents,
        vertex_objects=np.arange(400) // 40,
        chunk_shape=30.0,
        object_attributes={
            "kind": np.arange(10, dtype=np.int32) + 1,
            "kept": np.arange(10) % 3 == 0,
        },
    )
    return store


GLOBALS = [
    "object_index/data",
    "object_index/offsets",
    "object_attributes/kind",
    "object_attributes/kept",
    "cross_chunk_links",
]


def test_global_arrays_read_directly_equal_zarr_python() -> None:
    store = _skeleton_store()
    reader = zv.open(store)._reader
    paths = [f"0/{p}" for p in GLOBALS]
    metas = [reader.document(f"{p}/zarr.json") for p in paths]
    direct = reader._plain_arrays(paths, metas)
    assert all(d is not None for d in direct)  # the usual layouts, raw bytes included
    for path, got in zip(paths, reader.read_globals(GLOBALS), strict=True):
        want = zarr.open_array(store, path=path, mode="r")[...]
        np.testing.assert_array_equal(got, want)
        assert (got.dtype.str, got.dtype.byteorder) == (want.dtype.str, want.dtype.byteorder)
        got[...] = 0  # a copy the caller may change
    kept = reader.read_globals(["object_attributes/kept"])[0]
    assert kept.dtype is np.dtype(bool)  # numpy's own object: trx-python tests `is`


def test_a_global_array_without_its_chunk_is_refused() -> None:
    """Format 1.2 stores every chunk of a global array (spec §9.8.1): a lost chunk is an
    error, not fill values (zeros for the objects' attribute, silently, before)."""
    store = _skeleton_store()
    del store._store_dict["0/object_attributes/kind/c/0"]
    with pytest.raises(zv.CorruptChunkError, match="kind/c/0 is missing"):
        zv.open(store)._reader.read_globals(["object_attributes/kind", "object_index/offsets"])


@pytest.mark.parametrize(
    ("path", "damage", "message"),
    [
        ("object_attributes/kind", "flip", "checksum mismatch"),
        ("object_index/offsets", "cut", "not the chunk written at this place"),  # its table
        # format 1.2: the object index carries its CRC32C (a flip was read silently before)
        ("object_index/offsets", "flip", "checksum mismatch"),
        ("object_index/data", "flip", "checksum mismatch"),
    ],
)
def test_a_damaged_global_array_is_reported(path: str, damage: str, message: str) -> None:
    store = _skeleton_store()
    key = f"0/{path}/c/0"
    raw = bytearray(store._store_dict[key].to_bytes())
    if damage == "flip":
        raw[len(raw) // 2] ^= 1
    else:
        del raw[-8:]
    store._store_dict[key] = type(store._store_dict[key]).from_bytes(bytes(raw))
    with pytest.raises(CorruptChunkError, match=message):
        zv.open(store)._reader.read_globals([path])


def _write_cloud(path: object, seed: int, n: int = 2000) -> None:
    xyz = np.random.default_rng(seed).uniform(0, 100, (n, 3))
    zv.write_points(path, xyz, chunk_shape=25.0, mode="w")


_READS = {
    "read": lambda s: s.read(progress=False),
    "query": lambda s: s.query(([0, 0, 0], [60, 60, 60])),
    "query_sphere": lambda s: s.query(zv.ball([50, 50, 50], 30)),
    "query_polygon": lambda s: s.query(zv.polygon([(0, 0), (90, 0), (0, 90)])),
}


@pytest.mark.parametrize("read", list(_READS))
def test_a_store_replaced_under_an_open_handle_raises_store_changed_not_corrupt(
    tmp_path: Path, read: str
) -> None:
    path = tmp_path / "cloud.zv"
    _write_cloud(path, 0)
    store = zv.open(path)
    store.query(([0, 0, 0], [100, 100, 100]))  # the handle has read the occupancy
    _write_cloud(path, 1, n=50)  # another writer replaces the store
    with pytest.raises(zv.StoreChangedError, match=r"replaced or changed .* zv\.open\(") as info:
        _READS[read](store)
    assert "not damaged" in str(info.value)
    assert zv.open(path).read(progress=False).positions.shape == (50, 3)


def test_a_store_removed_under_an_open_handle_raises_store_changed(tmp_path: Path) -> None:
    path = tmp_path / "cloud.zv"
    _write_cloud(path, 0)
    store = zv.open(path)
    store.query(([0, 0, 0], [10, 10, 10]))
    shutil.rmtree(path)
    with pytest.raises(zv.StoreChangedError, match="removed"):
        store.read(progress=False)


def test_a_memory_store_rewritten_under_an_open_handle_raises_store_changed() -> None:
    store = MemoryStore()
    _write_cloud(store, 0)
    opened = zv.open(store)
    opened.query(([0, 0, 0], [10, 10, 10]))
    _write_cloud(store, 1, n=50)
    with pytest.raises(zv.StoreChangedError) as info:
        opened.read(progress=False)
    assert isinstance(info.value.__cause__, zv.FormatError)  # found when the read failed


def test_a_shard_lost_from_an_unchanged_local_store_is_still_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "cloud.zv"
    _write_cloud(path, 0)
    store = zv.open(path)
    store.query(([0, 0, 0], [10, 10, 10]))
    shard = next((path / "0" / "vertices" / "c").rglob("*"))
    while shard.is_dir():
        shard = next(shard.iterdir())
    shard.unlink()
    with pytest.raises(CorruptChunkError, match="shard of an occupied chunk") as info:
        store.read(progress=False)
    assert not isinstance(info.value, zv.StoreChangedError)


def test_reads_that_succeed_make_no_extra_request_for_the_store_version() -> None:
    """The version is re-checked only when a read fails: a good query costs what it did."""
    store, *_ = _point_store(250.0, 1)
    opened = zv.open(store)
    opened.query(BOX)
    store.log.reset()
    opened.query(BOX)
    keys = [key for wave in store.log.keys_by_wave().values() for key in wave]
    assert keys
    assert "zarr.json" not in keys


def test_a_level_bin_shape_that_does_not_tile_the_chunks_is_a_metadata_error(
    tmp_path: Path,
) -> None:
    """The store's inconsistency, not the caller's input: MetadataError, not InvalidInputError."""
    path = tmp_path / "cloud.zv"
    _write_cloud(path, 0)
    doc_path = path / "0" / "zarr.json"
    doc = json.loads(doc_path.read_text())
    doc["attributes"]["bin_shape"] = [10.0, 10.0, 10.0]  # chunks are 25 wide
    doc_path.write_text(json.dumps(doc))
    with pytest.raises(zv.MetadataError, match="does not match the root metadata") as info:
        zv.open(path).read(progress=False)
    assert not isinstance(info.value, zv.InvalidInputError)


def test_a_replaced_local_store_is_never_read_through_the_old_handle(tmp_path: Path) -> None:
    """Same chunks, other points: the old handle's cached counts would pick wrong rows."""
    path = tmp_path / "cloud.zv"
    _write_cloud(path, 0, n=300)
    store = zv.open(path)
    before = store.read(progress=False).positions
    _write_cloud(path, 1, n=300)
    for read in _READS.values():
        with pytest.raises(zv.StoreChangedError):
            read(store)
    assert not np.array_equal(zv.open(path).read(progress=False).positions, before)


def test_a_store_directory_whose_mode_changed_still_reads(tmp_path: Path) -> None:
    """Only a replaced directory (another inode) stops reads; chmod or touch do not."""
    path = tmp_path / "cloud.zv"
    _write_cloud(path, 0, n=300)
    store = zv.open(path)
    expected = store.read(progress=False).positions
    path.chmod(0o755)
    os.utime(path)
    np.testing.assert_array_equal(store.read(progress=False).positions, expected)


def test_a_changed_memory_store_says_to_open_the_store_object_again() -> None:
    store = MemoryStore()
    _write_cloud(store, 0)
    opened = zv.open(store)
    opened.query(([0, 0, 0], [10, 10, 10]))
    _write_cloud(store, 1, n=50)
    with pytest.raises(zv.StoreChangedError, match=r"zv\.open\(store\)"):
        opened.read(progress=False)
