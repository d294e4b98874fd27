"""Issue 40, items 1, 2 and 5: readers and writers at the same time.

A handle reads the version it opened: after another writer's commit, a data read raises
``StoreChangedError`` (or, opened with ``refresh=True``, answers from the new version), on
local directories, memory stores and the loopback S3 server, and a read that overlaps a
commit never returns a blend. Concurrent appenders (separate processes, forked from a server
that imported the library once) all commit in some order, or the losers raise
``ConcurrentWriteError`` and the store holds exactly the winners' batches; a killed lock
holder does not block the next writer. The long run of one appender and several readers is
``benchmarks/concurrency.py``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import FsspecStore, LocalStore, MemoryStore

import zarr_vectors as zv
from tests.s3server import LoopbackS3
from zarr_vectors.format.commits import commit_problem
from zarr_vectors.handle import selection
from zarr_vectors.store import commit
from zarr_vectors.store import writer_lock as writer_lock_module
from zarr_vectors.store.commit import leftovers
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.writer_lock import lock_file, writer_lock

BASE = np.random.default_rng(0).uniform(0, 20, (400, 3))
BATCHES = [np.random.default_rng(k).uniform(0, 20, (150 + 10 * k, 3)) for k in range(1, 4)]
LINES = [np.cumsum(np.random.default_rng(k).normal(0, 1, (8, 3)), axis=0) for k in range(9)]
BOX = ([0.0, 0.0, 0.0], [12.0, 12.0, 12.0])

COMMITTED, REFUSED = 0, 3
"""Exit codes of an appender child: its batch committed, or ConcurrentWriteError."""


def _write_base(store: Any) -> None:
    zv.write_points(
        store,
        BASE,
        chunk_shape=10.0,
        attributes={"batch": np.zeros(len(BASE), np.int32)},
        progress=False,
    )


def _batch_attributes(k: int) -> dict[str, np.ndarray]:
    return {"batch": np.full(len(BATCHES[k - 1]), k, np.int32)}


def _rows_per_batch(store: Any) -> dict[int, int]:
    values = zv.open(store).read().attributes["batch"]
    found, counts = np.unique(values, return_counts=True)
    return dict(zip(found.tolist(), counts.tolist(), strict=True))


# -- a handle reads the version it opened ---------------------------------------------------


def _memory(tmp_path: Path, s3: LoopbackS3 | None) -> Any:
    return MemoryStore()


def _local(tmp_path: Path, s3: LoopbackS3 | None) -> Any:
    return tmp_path / "s.zv"


def _s3_url(tmp_path: Path, s3: LoopbackS3 | None) -> Any:
    assert s3 is not None
    return f"s3://{s3.fresh_prefix()}/s.zv"


KINDS: dict[str, Callable[[Path, LoopbackS3 | None], Any]] = {
    "local": _local,
    "memory": _memory,
    "s3": _s3_url,
}


@pytest.fixture(params=list(KINDS))
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    s3 = request.getfixturevalue("s3") if request.param == "s3" else None
    store = KINDS[request.param](tmp_path, s3)
    _write_base(store)
    return store


def test_a_long_lived_handle_raises_store_changed_after_an_append(target: Any) -> None:
    ds = zv.open(target)
    before = ds.query(BOX)
    zv.append_points(target, BATCHES[0], attributes=_batch_attributes(1), progress=False)
    with pytest.raises(zv.StoreChangedError, match="open it again"):
        ds.read()
    with pytest.raises(zv.StoreChangedError):
        ds.query(BOX)
    assert len(zv.open(target).query(BOX).positions) > len(before.positions)


def test_a_refresh_handle_reads_the_new_version_after_an_append(target: Any) -> None:
    ds = zv.open(target, refresh=True)
    assert len(ds.read().positions) == len(BASE)
    zv.append_points(target, BATCHES[0], attributes=_batch_attributes(1), progress=False)
    got = ds.read()
    assert len(got.positions) == len(BASE) + len(BATCHES[0])
    assert ds.vertex_count == len(BASE) + len(BATCHES[0])
    assert _rows_per_batch(target) == {0: len(BASE), 1: len(BATCHES[0])}


def test_a_read_overlapping_a_commit_is_never_returned(
    target: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit lands after the handle's cached counts were taken and before the shards
    are read: the answer would blend two versions, so it raises instead (or, with refresh,
    is read again from the new version)."""
    real = selection.read_all
    appended = []

    def read_during_a_commit(*args: Any, **kwargs: Any) -> Any:
        if not appended:
            appended.append(True)
            zv.append_points(target, BATCHES[0], attributes=_batch_attributes(1), progress=False)
        return real(*args, **kwargs)

    stale = zv.open(target)
    fresh = zv.open(target, refresh=True)
    assert stale.vertex_count == fresh.vertex_count == len(BASE)  # counts cached
    monkeypatch.setattr(selection, "read_all", read_during_a_commit)
    with pytest.raises(zv.StoreChangedError):
        stale.read()
    assert len(fresh.read().positions) == len(BASE) + len(BATCHES[0])


def test_a_refresh_handle_of_a_replaced_object_store_reads_the_new_objects(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lines.zv"
    zv.write_polylines(path, LINES[:3], chunk_shape=5.0)
    stale, fresh = zv.open(path), zv.open(path, refresh=True)
    assert len(fresh.read_objects([0, 1, 2]).object_ids) == 3
    zv.append_polylines(path, LINES[3:5], progress=False)
    with pytest.raises(zv.StoreChangedError):
        stale.read_objects([0])
    assert fresh.read().object_ids.tolist() == [0, 1, 2, 3, 4]
    assert fresh.object_count == 5


def test_refresh_must_be_a_bool(tmp_path: Path) -> None:
    _write_base(tmp_path / "s.zv")
    with pytest.raises(zv.InvalidInputError, match="refresh"):
        zv.open(tmp_path / "s.zv", refresh="yes")  # type: ignore[arg-type]


# -- every commit records a new version ------------------------------------------------------


def _commit_of(path: Path) -> dict[str, Any]:
    doc = json.loads((path / "zarr.json").read_text())
    assert not (path / ".zattrs").exists()  # format 1.3: zarr.json alone (spec §2.3)
    record: dict[str, Any] = doc["attributes"]["commit"]
    return record


def test_every_commit_records_a_new_version(tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    _write_base(path)
    first = _commit_of(path)
    zv.append_points(path, BATCHES[0], attributes=_batch_attributes(1), progress=False)
    second = _commit_of(path)
    with zv.PointWriter(path, chunk_shape=5.0, mode="w", progress=False) as writer:
        writer.append(BASE)
    third = _commit_of(path)
    lines = tmp_path / "lines.zv"
    zv.write_polylines(lines, LINES[:3], chunk_shape=5.0)
    zv.append_polylines(lines, LINES[3:], progress=False)
    for record in (first, second, third, _commit_of(lines)):
        assert commit_problem(record) is None
    assert (first["serial"], second["serial"], third["serial"]) == (1, 2, 1)
    assert _commit_of(lines)["serial"] == 2
    assert len({first["id"], second["id"], third["id"]}) == 3
    assert zv.validate(path, level=3).ok
    assert not [p for p in zv.validate(path, level=2).warnings if "commit" in p.path]


def test_a_malformed_commit_record_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    _write_base(path)
    doc = json.loads((path / "zarr.json").read_text())
    doc["attributes"]["commit"] = {"serial": 0, "id": "x"}
    (path / "zarr.json").write_text(json.dumps(doc))
    found = zv.validate(path, level=2)
    assert any(
        p.check_id == "L2.optional_keys_types" and p.path.endswith("/commit")
        for p in [*found.errors, *found.warnings]
    )
    assert zv.open(path).vertex_count == len(BASE)  # readers ignore it


# -- one writer at a time --------------------------------------------------------------------


def _append_child(path: str, k: int, barrier: Any) -> None:
    barrier.wait(timeout=60)
    zv.append_points(path, BATCHES[k - 1], attributes=_batch_attributes(k), progress=False)


def _point_writer_child(path: str, k: int, barrier: Any) -> None:
    """An append prepared from the version it read, committed after the others started."""
    writer = zv.PointWriter(path, mode="a", progress=False)
    writer.append(BATCHES[k - 1], attributes=_batch_attributes(k))
    barrier.wait(timeout=60)
    try:
        writer.close()
    except zv.ConcurrentWriteError:
        os._exit(REFUSED)


def _polyline_child(path: str, k: int, barrier: Any) -> None:
    barrier.wait(timeout=60)
    zv.append_polylines(path, LINES[3 * k : 3 * k + 3], progress=False)


def _held_lock_child(path: str, k: int, barrier: Any) -> None:
    """Take the writer lock inside an append, then die holding it."""

    def die(step: str) -> None:
        if step == "staged":
            barrier.wait(timeout=60)
            os.kill(os.getpid(), signal.SIGKILL)

    commit.step_hook = die
    zv.append_points(path, BATCHES[k - 1], attributes=_batch_attributes(k), progress=False)


@pytest.fixture(scope="module")
def spawner() -> Any:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.store.warm_writer", "tests.store.test_concurrency"])
    return context


def _run_children(spawner: Any, child: Callable[..., None], path: Path, n: int) -> list[int]:
    barrier = spawner.Barrier(n)
    children = [
        spawner.Process(target=child, args=(os.fspath(path), k, barrier)) for k in range(1, n + 1)
    ]
    for c in children:
        c.start()
    for c in children:
        c.join(timeout=120)
    return [c.exitcode for c in children]


@pytest.mark.parametrize("n", [2, 3])
def test_concurrent_appends_all_commit_in_some_order(spawner: Any, tmp_path: Path, n: int) -> None:
    path = tmp_path / "s.zv"
    _write_base(path)
    assert _run_children(spawner, _append_child, path, n) == [COMMITTED] * n
    expected = {0: len(BASE)} | {k: len(BATCHES[k - 1]) for k in range(1, n + 1)}
    assert _rows_per_batch(path) == expected
    assert zv.validate(path, level=3).ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zv"]


def test_concurrent_prepared_appends_commit_or_are_refused_never_lost(
    spawner: Any, tmp_path: Path
) -> None:
    path = tmp_path / "s.zv"
    _write_base(path)
    codes = _run_children(spawner, _point_writer_child, path, 3)
    assert set(codes) <= {COMMITTED, REFUSED}
    assert codes.count(COMMITTED) == 1  # all three read the same base
    winner = codes.index(COMMITTED) + 1
    assert _rows_per_batch(path) == {0: len(BASE), winner: len(BATCHES[winner - 1])}
    assert zv.validate(path, level=3).ok


def test_concurrent_polyline_appends_all_commit(spawner: Any, tmp_path: Path) -> None:
    path = tmp_path / "lines.zv"
    zv.write_polylines(path, LINES[:3], chunk_shape=5.0)
    assert _run_children(spawner, _polyline_child, path, 2) == [COMMITTED] * 2
    ds = zv.open(path)
    assert ds.object_count == 9
    assert ds.vertex_count == sum(len(line) for line in LINES)
    stored = sorted(np.round(ds.read_objects(k).positions, 6).tobytes() for k in range(9))
    assert stored == sorted(np.round(line, 6).astype(np.float64).tobytes() for line in LINES)


def test_a_killed_lock_holder_does_not_block_the_next_writer(spawner: Any, tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    _write_base(path)
    barrier = spawner.Barrier(2)
    child = spawner.Process(target=_held_lock_child, args=(os.fspath(path), 1, barrier))
    child.start()
    barrier.wait(timeout=60)  # the child holds the lock now, then dies
    child.join(timeout=60)
    assert child.exitcode == -signal.SIGKILL
    start = time.monotonic()
    with writer_lock(path, timeout=10):
        pass
    assert time.monotonic() - start < 10
    zv.append_points(path, BATCHES[1], attributes=_batch_attributes(2), progress=False)
    assert _rows_per_batch(path) == {0: len(BASE), 2: len(BATCHES[1])}


def test_a_lock_file_is_not_a_leftover_of_an_interrupted_write(tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    _write_base(path)
    lock_file(path).touch()  # what a killed lock holder leaves
    assert leftovers(path) == []
    assert not [p for p in zv.validate(path, level=1).warnings if "interrupted" in p.check_id]
    zv.append_points(path, BATCHES[0], attributes=_batch_attributes(1), progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zv"]  # the next writer's turn


def test_a_second_writer_waits_for_the_lock_holder(tmp_path: Path) -> None:
    """Another thread of this process waits as another process would, then gives up."""
    path = tmp_path / "s.zv"
    _write_base(path)
    outcome: list[object] = []

    def other() -> None:
        try:
            with writer_lock(path, timeout=0.2):
                outcome.append("taken")
        except zv.ConcurrentWriteError as exc:
            outcome.append(exc)

    with writer_lock(path):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    other()  # free again once released
    assert isinstance(outcome[0], zv.ConcurrentWriteError)
    assert "another writer" in str(outcome[0])
    assert outcome[1] == "taken"


def test_a_zarr_local_store_object_takes_the_lock_of_its_directory(tmp_path: Path) -> None:
    path = tmp_path / "s.zv"
    _write_base(path)
    with writer_lock(LocalStore(path)):
        assert lock_file(path).exists()  # the lock another process appending to path takes
    assert not lock_file(path).exists()


def test_appends_from_threads_to_a_memory_store_all_commit() -> None:
    store = MemoryStore()
    _write_base(store)
    threads = [
        threading.Thread(
            target=zv.append_points,
            args=(store, BATCHES[k - 1]),
            kwargs={"attributes": _batch_attributes(k), "progress": False},
        )
        for k in (1, 2, 3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _rows_per_batch(store) == {0: len(BASE)} | {k: len(BATCHES[k - 1]) for k in (1, 2, 3)}


def test_an_append_prepared_from_an_old_version_is_refused_whole(target: Any) -> None:
    """Memory, local and S3: the loser raises and none of its rows are committed."""
    writer = zv.PointWriter(target, mode="a", progress=False)
    writer.append(BATCHES[0], attributes=_batch_attributes(1))
    zv.append_points(target, BATCHES[1], attributes=_batch_attributes(2), progress=False)
    with pytest.raises(zv.ConcurrentWriteError, match="append again"):
        writer.close()
    assert _rows_per_batch(target) == {0: len(BASE), 2: len(BATCHES[1])}
    assert zv.validate(target, level=3).ok


def test_an_s3_change_starts_with_one_conditional_write(
    s3: LoopbackS3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer's commit between the base check's GET and the PUT that starts the
    change (``If-Match`` the ETag read) is caught by S3: nothing of this append is written."""
    store = FsspecStore.from_url(
        f"s3://{s3.fresh_prefix()}/s.zv", storage_options=s3.storage_options()
    )
    _write_base(store)
    fs = store.fs
    real, conditional = fs._call_s3, writer_lock_module._s3_conditional_uncommit
    theirs = b""
    armed = []

    def arm(*args: Any) -> bool:
        armed.append(True)  # the GET and PUT that start the change come now
        return conditional(*args)

    async def commit_in_between(method: str, *args: Any, **kwargs: Any) -> Any:
        nonlocal theirs
        if method == "put_object" and armed and not theirs:  # after the GET, before the PUT
            key = {"Bucket": kwargs["Bucket"], "Key": kwargs["Key"]}
            found = await real("get_object", **key)
            doc = json.loads(await found["Body"].read())
            doc["attributes"]["commit"]["id"] = "f" * 32  # another writer's commit
            theirs = json.dumps(doc).encode()
            await real("put_object", **key, Body=theirs)
        return await real(method, *args, **kwargs)

    before = _keys_of(store)
    monkeypatch.setattr(fs, "_call_s3", commit_in_between)
    monkeypatch.setattr(writer_lock_module, "_s3_conditional_uncommit", arm)
    with pytest.raises(zv.ConcurrentWriteError, match="append again"):
        zv.append_points(store, BATCHES[0], attributes=_batch_attributes(1), progress=False)
    monkeypatch.undo()
    after = _keys_of(store)
    assert after.pop("zarr.json") == theirs  # the other writer's root, not uncommitted
    before.pop("zarr.json")
    assert after == before  # no byte of the refused append


def _keys_of(store: Any) -> dict[str, bytes | None]:
    io = StoreIO(store)
    return {k: io.get(k) for k in io.list_prefix("")}
