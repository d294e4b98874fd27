"""Parallel point writes give, byte for byte, the store of one serial write of all the rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import LocalStore, MemoryStore

import zarr_vectors as zv
from tests.geometry.object_cases import files, keys
from tests.helpers import sorted_rows

pytest.importorskip("distributed")


def _cloud(seed: int, n: int, dim: int, dtype: Any) -> dict[str, Any]:
    """Points on and around chunk and bin edges, negative too, with attributes and ids."""
    rng = np.random.default_rng(seed)
    grid = rng.integers(-3, 4, (n, dim)) * 2.5
    jitter = rng.choice([0.0, 0.0, 1e-3, -1e-3, 1.1], (n, dim))
    return {
        "positions": (grid + jitter).astype(dtype),
        "attributes": {
            "a": rng.random(n).astype(np.float32),
            "rgb": rng.integers(0, 9, (n, 3)).astype(np.uint8),
        },
        "object_ids": rng.integers(0, 2**40, n).astype(np.uint64),
    }


def _partitions(cloud: dict[str, Any], cuts: list[int]) -> list[dict[str, Any]]:
    def split(values: np.ndarray) -> list[np.ndarray]:
        return np.split(values, cuts)

    attrs = {k: split(v) for k, v in cloud["attributes"].items()}
    return [
        {"positions": p, "attributes": {k: attrs[k][i] for k in attrs}, "object_ids": ids}
        for i, (p, ids) in enumerate(
            zip(split(cloud["positions"]), split(cloud["object_ids"]), strict=True)
        )
    ]


def _serial(path: Any, cloud: dict[str, Any], **settings: Any) -> None:
    zv.write_points(
        path,
        cloud["positions"],
        attributes=cloud["attributes"],
        object_ids=cloud["object_ids"],
        **settings,
    )


def _assert_reads_alike(one: Path, parallel: Path, cloud: dict[str, Any]) -> None:
    """Whole reads and box queries agree with each other and with a brute-force filter."""
    a, b = zv.open(one), zv.open(parallel)
    pos = cloud["positions"]
    whole = b.read()
    np.testing.assert_array_equal(
        sorted_rows(whole.positions, whole.attributes["a"]),
        sorted_rows(pos, cloud["attributes"]["a"]),
    )
    for lo, hi in [(-4.0, 3.0), (0.0, 2.5), (-9.0, 9.0)]:
        box = (np.full(pos.shape[1], lo), np.full(pos.shape[1], hi))
        got, want = b.query(box), a.query(box)
        np.testing.assert_array_equal(got.positions, want.positions)
        for name in cloud["attributes"]:
            np.testing.assert_array_equal(got.attributes[name], want.attributes[name])
        inside = np.all((pos >= lo) & (pos < hi), axis=1)
        np.testing.assert_array_equal(
            sorted_rows(got.positions, got.vertex_object_ids),
            sorted_rows(pos[inside], cloud["object_ids"][inside]),
        )


CASES = [
    # (seed, n, dim, dtype, cuts, chunk_shape, bin_shape)
    (1, 1500, 3, np.float32, [300, 300, 1100], 5.0, None),
    (2, 1200, 2, np.float64, [1, 700], None, None),
    (3, 900, 4, np.float32, [400], 5.0, 2.5),
    (4, 500, 3, np.float64, [], 2.5, None),
]


@pytest.mark.parametrize(("seed", "n", "dim", "dtype", "cuts", "chunk", "bins"), CASES)
def test_parallel_gives_the_serial_store(
    client: Any,
    tmp_path: Path,
    seed: int,
    n: int,
    dim: int,
    dtype: Any,
    cuts: list[int],
    chunk: float | None,
    bins: float | None,
) -> None:
    cloud = _cloud(seed, n, dim, dtype)
    settings = {"chunk_shape": chunk, "bin_shape": bins}
    _serial(tmp_path / "one", cloud, **settings)
    zv.write_points_parallel(tmp_path / "par", _partitions(cloud, cuts), client=client, **settings)
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one", "par"]
    _assert_reads_alike(tmp_path / "one", tmp_path / "par", cloud)


def test_more_chunks_than_writers_and_small_row_blocks(client: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    xyz = rng.uniform(-50, 50, (6000, 3))
    options = zv.WriteOptions(rows_per_block=16, compression=None)
    # chunks of 18: 216 chunks of ~28 rows (chunks of 10 made 1000, seconds more)
    zv.write_points(tmp_path / "one", xyz, chunk_shape=18.0, options=options)
    zv.write_points_parallel(
        tmp_path / "par", np.array_split(xyz, 7), chunk_shape=18.0, options=options, client=client
    )
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert zv.open(tmp_path / "par").chunk_count > 100


def test_a_dask_array_is_cut_into_its_blocks(client: Any, tmp_path: Path) -> None:
    da = pytest.importorskip("dask.array")
    xyz = np.random.default_rng(6).normal(0, 20, (2500, 3)).astype(np.float32)
    zv.write_points(tmp_path / "one", xyz, chunk_shape=16.0)
    blocks = da.from_array(xyz, chunks=(600, 2))  # cut along axis 1 too: rechunked whole
    zv.write_points_parallel(tmp_path / "par", blocks, chunk_shape=16.0, client=client)
    assert files(tmp_path / "par") == files(tmp_path / "one")


def test_a_dask_dataframe_gives_positions_ids_and_attributes(client: Any, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(7)
    n = 2000
    frame = pd.DataFrame(
        {
            "x": rng.uniform(-10, 10, n),
            "y": rng.uniform(-10, 10, n),
            "z": rng.uniform(0, 5, n),
            "intensity": rng.random(n).astype(np.float32),
            "object_id": rng.integers(0, 50, n),
            "label": rng.integers(0, 3, n).astype(np.int16),
        }
    )
    xyz = frame[["x", "y", "z"]].to_numpy()
    zv.write_points(
        tmp_path / "one",
        xyz,
        chunk_shape=4.0,
        attributes={"intensity": frame["intensity"].to_numpy()},
        object_ids=frame["object_id"].to_numpy(),
    )
    zv.write_points_parallel(
        tmp_path / "par",
        dd.from_pandas(frame, npartitions=3),
        chunk_shape=4.0,
        attribute_names=["intensity"],
        client=client,
    )
    assert files(tmp_path / "par") == files(tmp_path / "one")


def test_npy_and_npz_files_are_read_by_the_workers(client: Any, tmp_path: Path) -> None:
    cloud = _cloud(8, 1000, 3, np.float32)
    parts = _partitions(cloud, [250, 600])
    paths = []
    for k, part in enumerate(parts):
        path = tmp_path / f"part{k}.npz"
        np.savez(
            path, positions=part["positions"], object_ids=part["object_ids"], **part["attributes"]
        )
        paths.append(str(path))
    _serial(tmp_path / "one", cloud, chunk_shape=5.0)
    zv.write_points_parallel(tmp_path / "npz", paths, chunk_shape=5.0, client=client)
    assert files(tmp_path / "npz") == files(tmp_path / "one")

    npys = []
    for k, part in enumerate(parts):
        np.save(tmp_path / f"part{k}.npy", part["positions"])
        npys.append(tmp_path / f"part{k}.npy")
    zv.write_points(tmp_path / "plain", cloud["positions"], chunk_shape=5.0)
    zv.write_points_parallel(tmp_path / "npy", npys, chunk_shape=5.0, client=client)
    assert files(tmp_path / "npy") == files(tmp_path / "plain")


def test_empty_partitions_give_the_empty_store(client: Any, tmp_path: Path) -> None:
    empty = np.empty((0, 3), np.float32)
    zv.write_points(tmp_path / "one", empty, chunk_shape=5.0, attributes={"a": np.empty(0)})
    parts = [{"positions": empty, "attributes": {"a": np.empty(0)}}] * 2
    zv.write_points_parallel(tmp_path / "par", parts, chunk_shape=5.0, client=client)
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert zv.open(tmp_path / "par").read().positions.shape == (0, 3)


def test_a_store_object_and_overwriting(client: Any, tmp_path: Path) -> None:
    cloud = _cloud(10, 800, 3, np.float64)
    one, par = LocalStore(tmp_path / "one"), LocalStore(tmp_path / "par")
    _serial(one, cloud, chunk_shape=5.0)
    zv.write_points(par, np.zeros((3, 3)), chunk_shape=1.0)
    with pytest.raises(zv.StoreExistsError):
        zv.write_points_parallel(par, _partitions(cloud, [400]), chunk_shape=5.0, client=client)
    zv.write_points_parallel(
        par, _partitions(cloud, [400]), chunk_shape=5.0, mode="w", client=client
    )
    assert keys(par) == keys(one)

    path = tmp_path / "path"
    zv.write_points(path, np.zeros((3, 3)), chunk_shape=1.0)
    zv.write_points_parallel(
        path, _partitions(cloud, [10, 20]), chunk_shape=5.0, mode="w", client=client
    )
    assert files(path) == files(tmp_path / "one")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one", "par", "path"]


def test_a_scheduler_address_and_a_cluster_of_its_own(client: Any, tmp_path: Path) -> None:
    xyz = np.random.default_rng(11).uniform(0, 10, (300, 2))
    zv.write_points(tmp_path / "one", xyz, chunk_shape=2.0)
    address = client.scheduler.address
    zv.write_points_parallel(
        tmp_path / "address", [xyz[:100], xyz[100:]], chunk_shape=2.0, scheduler_address=address
    )
    assert files(tmp_path / "address") == files(tmp_path / "one")
    zv.write_points_parallel(tmp_path / "own", [xyz[:100], xyz[100:]], chunk_shape=2.0, n_workers=1)
    assert files(tmp_path / "own") == files(tmp_path / "one")


def test_bad_input_is_refused_before_the_destination_is_touched(
    client: Any, tmp_path: Path
) -> None:
    xyz = np.random.default_rng(12).uniform(0, 10, (100, 3)).astype(np.float32)
    dest = tmp_path / "s"
    run = {"chunk_shape": 5.0, "client": client}
    with pytest.raises(zv.InvalidInputError, match="partition 1 has positions"):
        zv.write_points_parallel(dest, [xyz, xyz.astype(np.float64)], **run)
    with pytest.raises(zv.InvalidInputError, match="columns"):
        zv.write_points_parallel(
            dest, [xyz, {"positions": xyz, "attributes": {"a": np.ones(100)}}], **run
        )
    with pytest.raises(zv.InvalidInputError, match="NaN or infinite"):
        zv.write_points_parallel(dest, [xyz, np.full((2, 3), np.nan)], **run)
    with pytest.raises(zv.InvalidInputError, match="lacks the attributes"):
        zv.write_points_parallel(dest, [xyz], attribute_names=["a"], **run)
    with pytest.raises(zv.InvalidInputError, match="attribute_names="):
        zv.write_points_parallel(dest, [xyz], attributes={"a": np.ones(100)}, **run)  # type: ignore[arg-type]
    with (
        pytest.warns(DeprecationWarning, match=r"use attribute_names=\[names\] instead"),
        pytest.raises(zv.InvalidInputError, match="lacks the attributes"),
    ):
        zv.write_points_parallel(dest, [xyz], attributes=["a"], **run)
    with pytest.raises(zv.InvalidInputError, match="must be a list"):
        zv.write_points_parallel(dest, xyz, **run)
    with pytest.raises(zv.InvalidInputError, match="at least one partition"):
        zv.write_points_parallel(dest, [], **run)
    with pytest.raises(zv.InvalidInputError, match="not both"):
        zv.write_points_parallel(dest, [xyz], scheduler_address="tcp://x:1", **run)
    with pytest.raises(zv.InvalidInputError, match="in-memory store"):
        zv.write_points_parallel(MemoryStore(), [xyz], **run)
    with pytest.raises(zv.InvalidInputError, match="zip"):
        zv.write_points_parallel(tmp_path / "s.zip", [xyz], **run)
    assert list(tmp_path.iterdir()) == []


def test_progress_reports_the_tasks_of_each_stage(client: Any, tmp_path: Path) -> None:
    cloud = _cloud(3, 3000, 3, np.float32)
    seen: list[tuple[Any, int, int]] = []
    zv.write_points_parallel(
        tmp_path / "par",
        _partitions(cloud, [1000, 2000]),
        client=client,
        chunk_shape=20.0,
        progress=lambda *update: seen.append(update),
    )
    stages = {"loading partitions", "binning partitions", "writing chunks"}
    assert {s for s, _, _ in seen} == stages
    for stage in stages:
        done = [(d, t) for s, d, t in seen if s == stage]
        assert [d for d, _ in done] == sorted(d for d, _ in done)
        assert done[-1][0] == done[-1][1] > 0
    assert ("loading partitions", 3, 3) in seen


def test_parallel_writers_take_units(client: Any, tmp_path: Path) -> None:
    """Finding: units could be set only through ``WriteOptions(axis_units=...)``; the
    parallel writers take ``units=`` like the others."""
    xyz = np.random.default_rng(34).uniform(0, 20, (300, 3))
    zv.write_points_parallel(
        tmp_path / "p",
        np.array_split(xyz, 3),
        chunk_shape=10.0,
        units="micrometer",
        client=client,
    )
    assert zv.open(tmp_path / "p").axis_units == ("micrometer",) * 3
    parts = [{"polylines": [xyz[:10]]}, {"polylines": [xyz[10:30]]}]
    units = ("nanometer", "nanometer", "micrometer")
    zv.write_objects_parallel(
        tmp_path / "o", "polyline", parts, chunk_shape=10.0, units=units, client=client
    )
    assert zv.open(tmp_path / "o").axis_units == units


@pytest.mark.parametrize(
    "levels",
    [zv.Levels(count=2, per_bin=4), zv.Levels(count=1, method="aggregate")],
    ids=["sample", "aggregate"],
)
def test_parallel_levels_are_those_of_the_serial_write(
    client: Any, tmp_path: Path, levels: zv.Levels
) -> None:
    cloud = _cloud(6, 800, 3, np.float32)
    settings: dict[str, Any] = {"chunk_shape": 5.0, "levels": levels}
    _serial(tmp_path / "one", cloud, progress=False, **settings)
    zv.write_points_parallel(tmp_path / "par", _partitions(cloud, [300]), client=client, **settings)
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert len(zv.open(tmp_path / "par").metadata["multiscales"][0]["datasets"]) > 1


def _levels_case(client: Any, tmp_path: Path, levels: zv.Levels) -> set[str]:
    """Write a 2-D cloud with ``levels`` serially and in parallel, assert the same files;
    the stages the parallel write reported."""
    cloud = _cloud(7, 1500, 2, np.float32)
    settings: dict[str, Any] = {"chunk_shape": 5.0, "bin_shape": 0.625, "levels": levels}
    _serial(tmp_path / "one", cloud, progress=False, **settings)
    stages: set[str] = set()
    zv.write_points_parallel(
        tmp_path / "par",
        _partitions(cloud, [400, 1100]),
        client=client,
        progress=lambda stage, done, total: stages.add(stage),
        **settings,
    )
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert len(zv.open(tmp_path / "par").metadata["multiscales"][0]["datasets"]) > 2
    return stages


def test_the_workers_write_the_levels_a_target_chooses(client: Any, tmp_path: Path) -> None:
    """``"auto"`` with a target: the coordinator chooses from the workers' candidate
    counts (the first two candidates reduce nothing and are skipped: level 1 is computed
    from level 0 again) and the workers write the levels; the store is the serial one."""
    stages = _levels_case(client, tmp_path, zv.Levels(target=40, per_bin=64))
    assert "writing levels" in stages


@pytest.mark.slow
def test_levels_over_the_candidate_budget_are_built_by_the_coordinator(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer whose candidates pass the budget keeps only their counts; the coordinator
    then builds the levels from the written chunks: the same store."""
    monkeypatch.setattr("zarr_vectors.parallel.points._CANDIDATE_BYTES", 0)
    stages = _levels_case(client, tmp_path, zv.Levels(target=40, per_bin=64))
    assert "writing levels" not in stages


@pytest.mark.slow
def test_the_workers_write_aggregate_levels_a_target_chooses(client: Any, tmp_path: Path) -> None:
    levels = zv.Levels(target=40, method="aggregate", reductions={"a": "max"})
    assert "writing levels" in _levels_case(client, tmp_path, levels)


@pytest.mark.slow
def test_auto_levels_of_a_cloud_under_the_target_are_none(client: Any, tmp_path: Path) -> None:
    cloud = _cloud(8, 500, 3, np.float32)
    _serial(tmp_path / "one", cloud, chunk_shape=5.0, levels="auto", progress=False)
    parts = _partitions(cloud, [200])
    zv.write_points_parallel(tmp_path / "par", parts, chunk_shape=5.0, levels="auto", client=client)
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert zv.open(tmp_path / "par").metadata["zarr_vectors_version"] == "1.6"


def test_parallel_writes_the_serial_object_ordered_copy(client: Any, tmp_path: Path) -> None:
    """``WriteOptions(object_order=True)``: the copy (spec §9.15) is the serial write's."""
    cloud = _cloud(5, 600, 3, np.float32)
    options = zv.WriteOptions(object_order=True)
    _serial(tmp_path / "one", cloud, chunk_shape=5.0, options=options)
    zv.write_points_parallel(
        tmp_path / "par", _partitions(cloud, [200]), client=client, chunk_shape=5.0, options=options
    )
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert any(k.startswith("0/object_order/") for k in files(tmp_path / "one"))
