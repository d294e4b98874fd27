"""The object-ordered copy (spec §9.15) added to and dropped from stored point clouds, and built
out of core: the bytes of a one-shot write whatever the budget, valid at every level."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.object_cases import files, keys
from tests.query.test_object_order import _cloud
from zarr_vectors.cli import main
from zarr_vectors.errors import CorruptChunkError, InvalidInputError
from zarr_vectors.format import object_order as order_format
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.geometry import every_row, object_order_of
from zarr_vectors.geometry.order_passes import (
    ChunkBatches,
    count_ids,
    window_column,
    window_sources,
)
from zarr_vectors.read import LevelReader
from zarr_vectors.store.io import StoreIO, resolve_store

ORDER = zv.WriteOptions(object_order=True)


def _write(store: Any, cloud: dict[str, Any], options: zv.WriteOptions | None = None) -> None:
    zv.write_points(store, **cloud, chunk_shape=10.0, options=options, progress=False)


def _valid(store: Any) -> None:
    for level in range(1, 6):
        report = zv.validate(store, level=level)
        assert report.ok, report


@pytest.fixture
def small_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shards of the copy of 128 rows (R = 128): a few hundred points fill several, so a
    tiny budget builds the copy in several windows."""
    monkeypatch.setattr(order_format, "ORDER_SHARD_BYTES", 1024)


def test_a_copy_added_to_a_store_is_the_one_shot_copy(tmp_path: Path) -> None:
    cloud = _cloud(0)
    _write(tmp_path / "added", cloud)
    _write(tmp_path / "one_shot", cloud, ORDER)
    assert zv.open(tmp_path / "added").metadata["zarr_vectors_version"] == "1.6"
    zv.build_object_order(tmp_path / "added", progress=False)
    assert files(tmp_path / "added") == files(tmp_path / "one_shot")
    _valid(tmp_path / "added")


def test_a_dropped_copy_leaves_the_store_written_without_it(tmp_path: Path) -> None:
    cloud = _cloud(1)
    _write(tmp_path / "dropped", cloud, ORDER)
    _write(tmp_path / "plain", cloud)
    assert zv.drop_object_order(tmp_path / "dropped")
    assert files(tmp_path / "dropped") == files(tmp_path / "plain")
    assert not zv.drop_object_order(tmp_path / "dropped")  # nothing to drop: unchanged
    assert files(tmp_path / "dropped") == files(tmp_path / "plain")
    _valid(tmp_path / "dropped")


def test_a_copy_is_built_again_the_same_with_levels_and_without_the_index(
    tmp_path: Path,
) -> None:
    cloud = _cloud(2)
    options = zv.WriteOptions(object_chunk_index=False)
    levels = zv.Levels(count=1, per_bin=4)
    zv.write_points(tmp_path / "a", **cloud, chunk_shape=10.0, options=options, levels=levels)
    both = zv.WriteOptions(object_chunk_index=False, object_order=True)
    zv.write_points(tmp_path / "b", **cloud, chunk_shape=10.0, options=both, levels=levels)
    zv.build_object_order(tmp_path / "a", memory_budget=2**20, progress=False)
    zv.build_object_order(tmp_path / "b", progress=False)  # built again: the same bytes
    assert files(tmp_path / "a") == files(tmp_path / "b")
    _valid(tmp_path / "a")


def test_add_and_drop_in_place_on_a_memory_store() -> None:
    cloud = _cloud(3)
    added, one_shot = MemoryStore(), MemoryStore()
    _write(added, cloud)
    _write(one_shot, cloud, ORDER)
    zv.build_object_order(added, memory_budget=2**20, progress=False)
    assert keys(added) == keys(one_shot)
    _valid(added)
    assert zv.drop_object_order(added)
    assert zv.open(added).metadata["zarr_vectors_version"] == "1.6"
    _valid(added)


def test_a_copy_needs_object_ids(tmp_path: Path) -> None:
    cloud = _cloud(4)
    del cloud["object_ids"]
    _write(tmp_path / "s", cloud)
    before = files(tmp_path / "s")
    with pytest.raises(InvalidInputError, match="no object ids"):
        zv.build_object_order(tmp_path / "s", progress=False)
    assert files(tmp_path / "s") == before


def test_the_cli_adds_and_drops_the_copy(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _write(tmp_path / "s", _cloud(5))
    assert main(["build-object-order", str(tmp_path / "s"), "--memory-budget", "1048576"]) == 0
    assert (tmp_path / "s" / "0" / "object_order").is_dir()
    assert main(["build-object-order", str(tmp_path / "s"), "--drop"]) == 0
    assert not (tmp_path / "s" / "0" / "object_order").exists()
    assert main(["build-object-order", str(tmp_path / "s"), "--drop"]) == 0
    out = capsys.readouterr().out
    assert "copy built" in out
    assert "copy removed" in out
    assert "no copy to remove" in out


@pytest.mark.usefixtures("small_shards")
@pytest.mark.parametrize("budget", [1, 2**20, 2**30])
def test_any_budget_builds_the_bytes_of_the_in_memory_build(tmp_path: Path, budget: int) -> None:
    """1 byte: a batch per chunk and a window per shard (5 of them); 1 MiB: one batch, a
    window per shard; 1 GiB: one window."""
    cloud = _cloud(6, n=600, objects=7)  # objects of ~90 points: windows cut objects
    _write(tmp_path / "whole", cloud, ORDER)
    _write(tmp_path / "passes", cloud)
    zv.build_object_order(tmp_path / "passes", memory_budget=budget, progress=False)
    assert files(tmp_path / "passes") == files(tmp_path / "whole")
    assert len(list((tmp_path / "passes" / "0" / "object_order" / "rows" / "c").iterdir())) == 5
    _valid(tmp_path / "passes")


@pytest.mark.usefixtures("small_shards")
def test_the_streaming_writer_builds_the_copy_past_its_budget(tmp_path: Path) -> None:
    """It used to refuse a copy needing more than its budget; now it builds it in passes."""
    cloud = _cloud(7, n=3000, objects=30)
    with zv.PointWriter(
        tmp_path / "s", chunk_shape=10.0, options=ORDER, memory_budget=2**16, progress=False
    ) as writer:
        for part in np.array_split(np.arange(3000), 4):
            writer.append(
                cloud["positions"][part],
                attributes={k: v[part] for k, v in cloud["attributes"].items()},
                object_ids=cloud["object_ids"][part],
            )
    _write(tmp_path / "o", cloud, ORDER)
    assert files(tmp_path / "s") == files(tmp_path / "o")
    _valid(tmp_path / "s")


def _reader(path: Path) -> LevelReader:
    io = StoreIO(resolve_store(path, mode="r"))
    return LevelReader(io, RootMetadata.from_json(io.read_root()[0]["attributes"]), 0)


@settings(max_examples=12, deadline=None)
@given(
    st.integers(0, 2**32),
    st.integers(1, 300),
    st.integers(1, 30),
    st.integers(1, 200),
    st.integers(1, 400),
    st.sampled_from([1, 1000]),
)
def test_windows_of_the_passes_are_slices_of_the_sort(
    seed: int, n: int, objects: int, batch: int, window: int, spread: int
) -> None:
    """Property (the passes against their plain twin, one stable sort of every id): any
    batches of chunks and windows give the distinct ids, offsets, storage rows and columns
    of :func:`object_order_of`; dense ids (looked up in a table) or sparse ones
    (``spread``: searched)."""
    cloud = _cloud(seed, n=n, objects=objects)
    cloud["object_ids"] = cloud["object_ids"] * spread
    with tempfile.TemporaryDirectory() as folder:
        _write(Path(folder) / "s", cloud)
        reader = _reader(Path(folder) / "s")
        counts = reader.occupied_chunks(None, None)[1]
        batches = ChunkBatches.of(every_row(reader), counts, batch)
        ids = reader.read_rows("object_id", batches.wanted)
        order, _, distinct, offsets = object_order_of(ids)
        found, found_offsets = count_ids(reader, batches)
        assert found.tolist() == distinct.tolist()
        assert found_offsets.tolist() == offsets.tolist()
        vertices = reader.read_rows("vertices", batches.wanted)
        for a in range(0, n, window):
            b = min(n, a + window)
            sources, places = window_sources(reader, batches, distinct, offsets, (a, b))
            assert np.all(np.diff(sources) > 0)
            assert sorted(places.tolist()) == list(range(b - a))
            rows = np.empty(b - a, np.int64)
            rows[places] = sources
            assert rows.tolist() == order[a:b].tolist()
            got = window_column(reader, batches, "vertices", sources, places)
            assert got.tobytes() == vertices[order[a:b]].tobytes()


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_open_handles_are_not_misled_by_an_added_or_dropped_copy(tmp_path: Path, kind: str) -> None:
    """A handle opened before the change refuses to read the new version (it says so); a
    refreshing handle reads it, the same objects through the copy and without it."""
    cloud = _cloud(8)
    store: Any = tmp_path / "s" if kind == "local" else MemoryStore()
    _write(store, cloud)
    wanted = np.unique(cloud["object_ids"])[::4]
    old, refreshing = zv.open(store), zv.open(store, refresh=True)
    want = old.read_objects(wanted)
    for change in (zv.build_object_order, zv.drop_object_order):
        change(store)
        with pytest.raises(zv.StoreChangedError, match="open it again"):
            old.read_objects(wanted)
        got = refreshing.read_objects(wanted)
        assert got.positions.tobytes() == want.positions.tobytes()
        assert got.attributes["rgb"].tobytes() == want.attributes["rgb"].tobytes()


def test_ids_that_disagree_with_their_counts_are_refused(tmp_path: Path) -> None:
    """Offsets counting more rows of an id than level 0 holds: an error, not a copy with
    rows of garbage."""
    zv.write_points(
        tmp_path / "s", [[1.0, 1.0], [7.0, 7.0], [2.0, 2.0]], object_ids=[9, 4, 9], chunk_shape=5.0
    )
    reader = _reader(tmp_path / "s")
    batches = ChunkBatches.of(every_row(reader), reader.occupied_chunks(None, None)[1], 1)
    with pytest.raises(CorruptChunkError, match="object ids changed"):
        window_sources(reader, batches, np.array([4, 9]), np.array([0, 1, 4]), (0, 4))


@pytest.mark.slow
def test_add_and_drop_over_s3(s3: Any) -> None:
    """Over object storage (loopback S3, changed in place): the bytes of a one-shot write,
    and answers by id unchanged (14 s; the memory store covers the in-place change)."""
    cloud = _cloud(9)
    added, one_shot = (f"s3://{s3.fresh_prefix()}/{name}.zv" for name in ("a", "b"))
    _write(added, cloud)
    _write(one_shot, cloud, ORDER)
    wanted = np.unique(cloud["object_ids"])[::3]
    want = zv.open(added).read_objects(wanted)
    zv.build_object_order(added, progress=False)
    a, b = zv.open(added), zv.open(one_shot)
    assert a.metadata["zarr_vectors_version"] == "1.7"
    assert a.read_objects(wanted).positions.tobytes() == want.positions.tobytes()
    assert zv.validate(added, level=3).ok
    ours, theirs = (
        StoreIO(resolve_store(added, mode="r")),
        StoreIO(resolve_store(one_shot, mode="r")),
    )
    copy = sorted(ours.list_prefix("0/object_order/"))
    assert copy == sorted(theirs.list_prefix("0/object_order/"))
    assert all(ours.get(k) == theirs.get(k) for k in copy)
    assert b.read_objects(wanted).positions.tobytes() == want.positions.tobytes()
    assert zv.drop_object_order(added)
    assert not list(ours.list_prefix("0/object_order/"))
    assert zv.validate(added, level=3).ok


@pytest.mark.parametrize("version", ["1.0", "1.2"])
def test_an_old_store_is_upgraded_then_gets_the_copy(tmp_path: Path, version: str) -> None:
    golden = Path(__file__).parents[1] / "data" / "golden" / version
    path = tmp_path / "s.zarrvectors"
    shutil.copytree(golden / "points_2d_negative_ids.zarrvectors", path)
    want = zv.open(path).read()
    before = files(path)
    assert not zv.drop_object_order(path)  # nothing to drop: not even upgraded
    assert files(path) == before
    zv.build_object_order(path, progress=False)
    store = zv.open(path)
    assert store.metadata["zarr_vectors_version"] == "1.7"
    ids = np.unique(np.asarray(want.vertex_object_ids))
    keep = np.isin(np.asarray(want.vertex_object_ids), ids[::2])
    assert store.read_objects(ids[::2]).positions.tobytes() == want.positions[keep].tobytes()
    _valid(path)
