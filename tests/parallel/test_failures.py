"""A worker dying mid-write: the write recovers, or fails loudly and commits nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import LocalStore

import zarr_vectors as zv
from tests.geometry.object_cases import files, keys
from tests.parallel import faults

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")
cloudpickle.register_pickle_by_value(faults)  # workers need not import the tests

XYZ = np.random.default_rng(0).normal(0, 10, (3000, 3)).astype(np.float32)
SETTINGS = {"chunk_shape": 8.0}  # 280 chunks (chunks of 4 made 1091: seconds per write)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """2 worker processes; a task may kill 2 workers before the scheduler gives it up."""
    dask = pytest.importorskip("dask")
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 1}),
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as connected,
    ):
        yield connected


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("serial") / "one"
    zv.write_points(path, XYZ, **SETTINGS)
    return path


def _last_chunk(store: Path) -> str:
    """The key of the last vertex shard: its writer runs after others have written theirs."""
    return sorted(k for k in files(store) if k.startswith("0/vertices/c/"))[-1]


def _parts(first: Any) -> list[Any]:
    return [XYZ[:1000], first, XYZ[2000:]]


def test_a_worker_killed_while_loading_is_replaced(
    client: Any, tmp_path: Path, serial: Path
) -> None:
    dying = faults.KillingPositions(XYZ[1000:2000], tmp_path / "died")
    zv.write_points_parallel(tmp_path / "s", _parts(dying), client=client, **SETTINGS)
    assert (tmp_path / "died").exists()  # the worker did die
    assert files(tmp_path / "s") == files(serial)


def test_a_worker_killed_while_writing_chunks_is_replaced(
    client: Any, tmp_path: Path, serial: Path
) -> None:
    victim = _last_chunk(serial)
    store = faults.KillingStore(LocalStore(tmp_path / "s"), tmp_path / "died", victim=victim)
    zv.write_points_parallel(store, _parts(XYZ[1000:2000]), client=client, **SETTINGS)
    assert (tmp_path / "died").exists()
    # zarr's LocalStore writes a key through a temporary ``.partial`` file, and the killed
    # writer left some: they are not keys of the format (and plain local paths, written by
    # zarr_vectors directly, never leave them).
    written = {k: v for k, v in keys(LocalStore(tmp_path / "s")).items() if ".partial" not in k}
    assert written == keys(LocalStore(serial))
    assert zv.validate(tmp_path / "s", level=2).ok


def test_workers_that_keep_dying_fail_the_write_and_commit_nothing(
    client: Any, tmp_path: Path, serial: Path
) -> None:
    victim = _last_chunk(serial)
    store = faults.KillingStore(
        LocalStore(tmp_path / "s"), tmp_path / "died", victim=victim, always=True
    )
    with pytest.raises(zv.errors.ParallelWriteError, match="workers died") as caught:
        zv.write_points_parallel(store, _parts(XYZ[1000:2000]), client=client, **SETTINGS)
    assert isinstance(caught.value.__cause__, distributed.KilledWorker)
    assert any((tmp_path / "s" / "0").rglob("c/*"))  # chunk files were written ...
    with pytest.raises(zv.NotAZarrVectorsStoreError):  # ... but nothing was committed
        zv.open(tmp_path / "s")
    assert not zv.validate(tmp_path / "s").ok


def test_a_task_error_is_raised_chained_and_nothing_is_left(client: Any, tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", XYZ[:10])
    parts = [tmp_path / "a.npy", tmp_path / "missing.npy"]
    with pytest.raises(zv.errors.ParallelWriteError, match="FileNotFoundError") as caught:
        zv.write_points_parallel(tmp_path / "new", parts, client=client)
    assert isinstance(caught.value.__cause__, FileNotFoundError)

    path = tmp_path / "old"
    zv.write_points(path, XYZ[:10], chunk_shape=1.0)
    before = files(path)
    with pytest.raises(zv.errors.ParallelWriteError, match="loading partitions"):
        zv.write_points_parallel(path, parts, client=client, mode="w")
    assert files(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "old"]
