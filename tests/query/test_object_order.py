"""The object-ordered copy of a point cloud with object ids (spec §9.15, format 1.7): reads by
id through it give exactly the answers of the object-to-chunks index; every write path
writes the same bytes; damaged copies are refused by readers and reported by the validator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.geometry.object_cases import files
from zarr_vectors.errors import CorruptChunkError, ObjectNotFoundError
from zarr_vectors.format.object_order import order_shard_rows
from zarr_vectors.store.io import StoreIO, resolve_store
from zarr_vectors.write import write_global

ORDER = zv.WriteOptions(object_order=True)


def _cloud(seed: int, n: int = 600, objects: int = 40) -> dict[str, Any]:
    """Points of ``objects`` ids scattered over a 4 x 4 x 4 grid of chunks, two attributes."""
    rng = np.random.default_rng(seed)
    return {
        "positions": (rng.random((n, 3)) * 40).astype(np.float32),
        "attributes": {
            "v": rng.random(n).astype(np.float32),
            "rgb": rng.integers(0, 255, (n, 3)).astype(np.uint8),
        },
        "object_ids": rng.integers(-5, objects - 5, n).astype(np.int32),
    }


def _write(path: Path, cloud: dict[str, Any], options: zv.WriteOptions | None = ORDER) -> None:
    zv.write_points(path, **cloud, chunk_shape=10.0, options=options, progress=False)


def _same(got: zv.QueryResult, want: zv.QueryResult) -> None:
    """The same rows in the same order, of the same dtypes, bit for bit."""
    for a, b in [
        (got.positions, want.positions),
        (got.vertex_object_ids, want.vertex_object_ids),
        *((got.attributes[k], want.attributes[k]) for k in want.attributes),
    ]:
        assert a is not None
        assert b is not None
        assert a.dtype == b.dtype
        assert a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    assert sorted(got.attributes) == sorted(want.attributes)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """The same cloud without and with the copy."""
    folder = tmp_path_factory.mktemp("order")
    cloud = _cloud(0)
    _write(folder / "plain", cloud, None)
    _write(folder / "ordered", cloud)
    return folder / "plain", folder / "ordered", cloud


def test_reads_by_id_are_those_of_the_index(pair: tuple[Path, Path, dict[str, Any]]) -> None:
    plain, ordered, cloud = pair
    a, b = zv.open(plain), zv.open(ordered)
    assert (ordered / "0" / "object_order").is_dir()
    assert not (plain / "0" / "object_order").exists()
    assert b.metadata["zarr_vectors_version"] == "1.7"
    assert a.metadata["zarr_vectors_version"] == "1.6"
    ids = np.unique(cloud["object_ids"])
    for wanted in ([int(ids[3])], ids[::3].tolist(), ids.tolist(), [int(ids[1])] * 3):
        _same(b.read_objects(wanted), a.read_objects(wanted))
    with pytest.raises(ObjectNotFoundError, match="object id 1000"):
        b.read_objects([int(ids[0]), 1000])
    assert zv.validate(ordered, level=5).ok


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 12))
def test_any_ids_read_as_a_whole_read_filtered(seed: int, k: int) -> None:
    """Property: the copy's answer is the whole read filtered by id, in storage order."""
    import tempfile

    rng = np.random.default_rng(seed)
    cloud = _cloud(seed, n=int(rng.integers(1, 120)), objects=int(rng.integers(1, 20)))
    with tempfile.TemporaryDirectory() as folder:
        _write(Path(folder) / "s", cloud)
        store = zv.open(Path(folder) / "s")
        whole = store.read()
        ids = np.unique(cloud["object_ids"])
        wanted = rng.choice(ids, min(k, ids.shape[0]), replace=False)
        keep = np.isin(np.asarray(whole.vertex_object_ids), wanted)
        got = store.read_objects(wanted)
        assert got.positions.tobytes() == whole.positions[keep].tobytes()
        assert got.attributes["rgb"].tobytes() == whole.attributes["rgb"][keep].tobytes()


def test_an_append_gives_the_one_shot_bytes(tmp_path: Path) -> None:
    cloud, more = _cloud(1), _cloud(2, n=150)
    _write(tmp_path / "a", cloud)
    zv.append_points(tmp_path / "a", **more, progress=False)
    joined = {
        "positions": np.concatenate([cloud["positions"], more["positions"]]),
        "attributes": {
            k: np.concatenate([cloud["attributes"][k], more["attributes"][k]])
            for k in cloud["attributes"]
        },
        "object_ids": np.concatenate([cloud["object_ids"], more["object_ids"]]),
    }
    _write(tmp_path / "b", joined)
    assert files(tmp_path / "a") == files(tmp_path / "b")


def test_the_streaming_writer_gives_the_one_shot_bytes(tmp_path: Path) -> None:
    cloud = _cloud(3)
    with zv.PointWriter(tmp_path / "s", chunk_shape=10.0, options=ORDER, progress=False) as w:
        for part in np.array_split(np.arange(600), 3):
            w.append(
                cloud["positions"][part],
                attributes={k: v[part] for k, v in cloud["attributes"].items()},
                object_ids=cloud["object_ids"][part],
            )
    _write(tmp_path / "o", cloud)
    assert files(tmp_path / "s") == files(tmp_path / "o")


def test_build_levels_keeps_the_copy(tmp_path: Path) -> None:
    cloud = _cloud(4)
    _write(tmp_path / "a", cloud)
    before = files(tmp_path / "a")
    zv.build_levels(tmp_path / "a", levels=zv.Levels(count=1, per_bin=4), progress=False)
    after = files(tmp_path / "a")
    copy = [k for k in before if k.startswith("0/object_order/")]
    assert copy
    assert all(after[k] == before[k] for k in copy)
    assert zv.validate(tmp_path / "a", level=5).ok


def test_the_shard_rows_follow_the_rows_and_the_widest_column() -> None:
    assert order_shard_rows(10**7, 128, 12) == 2**20  # 12 MiB: at most 16 MiB
    assert order_shard_rows(10**7, 128, 24) == 2**19
    assert order_shard_rows(1000, 128, 12) == 1024  # the rows in whole blocks
    assert order_shard_rows(10**7, 2**24, 12) == 2**24  # never below one block


# -- damage -----------------------------------------------------------------------------


def _damaged(tmp_path: Path, change: Any) -> Path:
    path = tmp_path / "d"
    _write(path, _cloud(5))
    change(path)
    return path


def _rewrite_global(name: str, values: Any) -> Any:
    def change(path: Path) -> None:
        io = StoreIO(resolve_store(path, mode="r+"))
        tag = {"zv_array": f"object_order_{name}"}
        write_global(io, f"0/object_order/{name}", np.asarray(values), 0, tag)

    return change


def _shift_offsets(path: Path) -> None:
    offsets = np.asarray(zv.open(path)._reader.read_globals(["object_order/offsets"])[0])
    offsets[1] += 1
    _rewrite_global("offsets", offsets)(path)


def _drop_shard(path: Path) -> None:
    (path / "0" / "object_order" / "vertices" / "c" / "0" / "0").unlink()


def _set_version(version: str) -> Any:
    def change(path: Path) -> None:
        doc = json.loads((path / "zarr.json").read_text())
        doc["attributes"]["zarr_vectors_version"] = version
        (path / "zarr.json").write_text(json.dumps(doc))

    return change


def _remove(name: str) -> Any:
    def change(path: Path) -> None:
        import shutil

        shutil.rmtree(path / "0" / "object_order" / name)

    return change


DAMAGE = [
    (_shift_offsets, "L3.object_order_exact", "object id is not its object"),
    (_drop_shard, "L3.object_order_exact", "missing"),
    (_remove("rows"), "L1.object_order_nodes", "rows is missing"),
    (_set_version("1.6"), "L2.object_order_meta", None),
]
OBJECT_ORDER_IDS = frozenset(check for _, check, _ in DAMAGE)
"""Check ids whose corruption cases are here (the corruption corpus counts them)."""


@pytest.mark.parametrize(("change", "check", "read_error"), DAMAGE)
def test_damage_is_refused_and_reported(
    tmp_path: Path, change: Any, check: str, read_error: str | None
) -> None:
    path = _damaged(tmp_path, change)
    report = zv.validate(path, level=3)
    assert check in {p.check_id for p in report.errors}
    if read_error is not None:
        ids = np.unique(_cloud(5)["object_ids"])
        with pytest.raises(CorruptChunkError, match=read_error):
            zv.open(path).read_objects(ids[:5])


def test_a_copy_of_other_values_is_found_by_the_validator(tmp_path: Path) -> None:
    """Ids that do not match level 0 (each block intact): L3 reports the copy."""
    ids = np.unique(_cloud(5)["object_ids"]) + 1
    path = _damaged(tmp_path, _rewrite_global("ids", ids))
    assert "L3.object_order_exact" in {p.check_id for p in zv.validate(path, level=3).errors}


def test_an_empty_cloud_with_ids_has_an_empty_copy(tmp_path: Path) -> None:
    """No points: the copy holds no rows, validates (the index check too), and an append
    fills it."""
    path = tmp_path / "e"
    zv.write_points(
        path,
        np.zeros((0, 3), np.float32),
        object_ids=np.zeros(0, np.int64),
        chunk_shape=4.0,
        options=ORDER,
    )
    assert zv.validate(path, level=3).ok
    with pytest.raises(ObjectNotFoundError):
        zv.open(path).read_objects([1])
    zv.append_points(path, np.ones((3, 3), np.float32), object_ids=[1, 2, 1], progress=False)
    assert len(zv.open(path).read_objects([1])) == 2
    assert zv.validate(path, level=3).ok


def test_cold_reads_through_the_copy_cost_the_same_waves_for_one_object_or_many() -> None:
    """Open + read by id through the copy: its metadata, ``ids`` and ``offsets``, the shard
    indexes, the row blocks, each in one batch, however many objects (9 waves with the
    open); a warm read of shards read before: the row blocks and the root's commit check."""
    from zarr.storage import MemoryStore

    from benchmarks._latency import LatencyStore

    inner = MemoryStore()
    cloud = _cloud(6, n=3000, objects=200)
    zv.write_points(inner, **cloud, chunk_shape=10.0, options=ORDER, progress=False)
    store = LatencyStore(inner)
    distinct = np.unique(cloud["object_ids"])
    waves = []
    for wanted in (distinct[:1], distinct[::2]):
        store.log.reset()
        zv.open(store).read_objects(wanted)
        waves.append(store.log.summary().waves)
    assert waves[0] == waves[1] <= 9
    reader = zv.open(store)
    reader.read_objects(distinct[:1])
    store.log.reset()
    reader.read_objects(distinct[1:3])
    assert store.log.summary().waves <= 2
