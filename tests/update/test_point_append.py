"""Appending points gives, byte for byte, the store of one write of old and new input."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.helpers import sample_sizes, without_commit
from zarr_vectors.store.io import StoreIO
from zarr_vectors.write import _level_writer

HYPOTHESIS = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
SMALL_BLOCKS = zv.WriteOptions(rows_per_block=16)
OPTIONS = [
    SMALL_BLOCKS,
    None,
    zv.WriteOptions(rows_per_block=16, shard_chunks=2),  # several chunks per shard
    zv.WriteOptions(shard_chunks=3),
]


def _files(root: Path) -> dict[str, bytes]:
    """Every file of a store but ``metadata.json`` (it holds the creation time)."""
    return {
        str(p.relative_to(root)): without_commit(str(p.relative_to(root)), p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "metadata.json"
    }


def _keys(store: MemoryStore) -> dict[str, bytes | None]:
    io = StoreIO(store)
    return {k: without_commit(k, io.get(k)) for k in io.list_prefix("") if k != "metadata.json"}


@st.composite
def appends(draw: st.DrawFn) -> dict[str, Any]:
    """A cloud, where to cut it into a first write and appends, and a row block size."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(0, 600))
    dim = draw(st.sampled_from([2, 3]))
    low = draw(st.sampled_from([0.0, -20.0]))  # appends below the origin move the grid
    positions = rng.uniform(low, 30.0, (n, dim)).round(1).astype(np.float32)
    positions[: n // 3] = np.abs(positions[: n // 3])  # the first write starts at 0
    cuts = np.sort(rng.integers(1 if n else 0, n + 1, draw(st.integers(1, 3))))
    return {
        "positions": positions,
        "value": rng.random(n),
        "ids": rng.integers(0, 1000, n).astype(np.int32),
        "cuts": cuts,
        "options": draw(st.sampled_from(OPTIONS)),
    }


def _write(store: Any, case: dict[str, Any], a: int, b: int, **kwargs: Any) -> None:
    zv.write_points(
        store,
        case["positions"][a:b],
        chunk_shape=10.0,
        bin_shape=5.0,
        attributes={"value": case["value"][a:b]},
        object_ids=case["ids"][a:b],
        options=case["options"],
        **kwargs,
    )


def _append(store: Any, case: dict[str, Any], a: int, b: int) -> None:
    zv.append_points(
        store,
        case["positions"][a:b],
        attributes={"value": case["value"][a:b]},
        object_ids=case["ids"][a:b],
        progress=False,
    )


def _run(store: Any, case: dict[str, Any]) -> None:
    bounds = [0, *case["cuts"].tolist(), len(case["positions"])]
    _write(store, case, bounds[0], bounds[1])
    for a, b in itertools.pairwise(bounds[1:]):
        _append(store, case, a, b)


@pytest.mark.parametrize("examples", sample_sizes(4, 20))
def test_appends_give_the_one_shot_store(tmp_path_factory: Any, examples: int) -> None:
    """On disk; the test in memory below runs the full sample."""

    @settings(HYPOTHESIS, max_examples=examples)
    @given(case=appends())
    def check(case: dict[str, Any]) -> None:
        tmp = tmp_path_factory.mktemp("a")
        _write(tmp / "one", case, 0, len(case["positions"]))
        _run(tmp / "appended", case)
        assert _files(tmp / "appended") == _files(tmp / "one")
        assert sorted(p.name for p in tmp.iterdir()) == ["appended", "one"]

    check()


@HYPOTHESIS
@given(case=appends())
def test_appends_in_place_give_the_one_shot_store(case: dict[str, Any]) -> None:
    one, appended = MemoryStore(), MemoryStore()
    _write(one, case, 0, len(case["positions"]))
    _run(appended, case)
    assert _keys(appended) == _keys(one)


def test_growth_of_n_max_and_of_the_grid(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    first = rng.uniform(0, 20, (100, 3))
    dense = rng.uniform(-15, 5, (2000, 3))  # below the origin and many rows per chunk
    case = {"positions": np.concatenate([first, dense]), "cuts": np.array([100])}
    case |= {"value": rng.random(2100), "ids": np.arange(2100), "options": SMALL_BLOCKS}
    _write(tmp_path / "one", case, 0, 2100)
    _run(tmp_path / "appended", case)
    assert _files(tmp_path / "appended") == _files(tmp_path / "one")
    before, after = zv.open(tmp_path / "one"), zv.open(tmp_path / "appended")
    assert after.metadata["chunk_grid_origin"] == before.metadata["chunk_grid_origin"] != [0, 0, 0]
    assert zv.validate(tmp_path / "appended", level=3).ok


def _n_max(path: Path) -> int:
    return int(json.loads((path / "0" / "vertices" / "zarr.json").read_text())["shape"][-2])


@pytest.mark.parametrize("shard", [2, (3, 2, 1)])
def test_growth_of_a_sharded_store(tmp_path: Path, shard: Any) -> None:
    """The origin moves by a number of chunks that is not a multiple of the shard, so every
    shard regroups its chunks, and ``N_max`` grows."""
    rng = np.random.default_rng(8)
    first = rng.uniform(0, 40, (300, 3))
    below = rng.uniform(-10, 5, (1500, 3))  # one chunk lower on every axis, dense
    case = {"positions": np.concatenate([first, below]), "cuts": np.array([300])}
    case |= {"value": rng.random(1800), "ids": np.arange(1800)}
    case["options"] = zv.WriteOptions(rows_per_block=16, shard_chunks=shard)
    _write(tmp_path / "one", case, 0, 1800)
    _run(tmp_path / "appended", case)
    assert _files(tmp_path / "appended") == _files(tmp_path / "one")
    _write(tmp_path / "first", case, 0, 300)
    before, after = zv.open(tmp_path / "first"), zv.open(tmp_path / "appended")
    moved = np.subtract(before.metadata["chunk_grid_origin"], after.metadata["chunk_grid_origin"])
    assert moved.tolist() == [1, 1, 1]
    assert _n_max(tmp_path / "appended") > _n_max(tmp_path / "first")
    assert zv.validate(tmp_path / "appended", level=3).ok


@pytest.mark.parametrize("n", [0, 5])
def test_appends_to_an_empty_sharded_store(n: int) -> None:
    rng = np.random.default_rng(n)
    case = {"positions": rng.uniform(0, 30, (n, 3)).astype(np.float32), "cuts": np.array([0])}
    case |= {"value": rng.random(n), "ids": np.arange(n, dtype=np.int32)}
    case["options"] = zv.WriteOptions(shard_chunks=2)
    one, appended = MemoryStore(), MemoryStore()
    _write(one, case, 0, n)
    _run(appended, case)
    assert _keys(appended) == _keys(one)


def test_sharded_shards_without_new_points_keep_their_files(tmp_path: Path) -> None:
    path = tmp_path / "s"
    options = zv.WriteOptions(shard_chunks=2)
    xyz = np.array([[1.0, 1, 1], [35, 35, 35], [15, 1, 1]])
    zv.write_points(path, xyz, chunk_shape=10.0, options=options)
    far = path / "0" / "vertices" / "c" / "1" / "1" / "1" / "0" / "0"  # chunk (3, 3, 3)
    near = path / "0" / "vertices" / "c" / "0" / "0" / "0" / "0" / "0"  # chunks (0|1, 0, 0)
    inode_far, inode_near = far.stat().st_ino, near.stat().st_ino
    zv.append_points(path, np.array([[2.0, 2, 2]]), progress=False)
    assert far.stat().st_ino == inode_far  # the same file, not a copy
    assert near.stat().st_ino != inode_near
    zv.write_points(
        tmp_path / "one", np.concatenate([xyz, [[2.0, 2, 2]]]), chunk_shape=10.0, options=options
    )
    assert _files(path) == _files(tmp_path / "one")


def test_chunks_without_new_points_keep_their_files(tmp_path: Path) -> None:
    path = tmp_path / "s"
    zv.write_points(
        path,
        np.array([[1.0, 1, 1], [25, 25, 25]]),
        chunk_shape=10.0,
        options=zv.WriteOptions(shard_chunks=1),  # one chunk per shard
    )
    far = path / "0" / "vertices" / "c" / "2" / "2" / "2" / "0" / "0"
    near = path / "0" / "vertices" / "c" / "0" / "0" / "0" / "0" / "0"
    inode_far, inode_near = far.stat().st_ino, near.stat().st_ino
    zv.append_points(path, np.array([[2.0, 2, 2]]), progress=False)
    assert far.stat().st_ino == inode_far  # the same file, not a copy
    assert near.stat().st_ino != inode_near
    assert zv.open(path).vertex_count == 3


def test_a_failed_append_leaves_a_local_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s"
    zv.write_points(path, np.random.default_rng(1).uniform(0, 50, (500, 3)), chunk_shape=10.0)
    before = _files(path)

    def explode(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(_level_writer.LevelWriter, "finish", explode)
    with pytest.raises(OSError, match="simulated"):
        zv.append_points(path, np.full((5, 3), -3.0), progress=False)
    assert _files(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_a_mismatch_names_the_store_not_a_first_batch(tmp_path: Path) -> None:
    path = tmp_path / "s"
    zv.write_points(path, np.ones((5, 3), np.float32), chunk_shape=10.0)
    with pytest.raises(zv.InvalidInputError, match=r"the store has, \[\]: .*not in the store"):
        zv.append_points(path, np.ones((2, 3), np.float32), attributes={"a": np.ones(2)})
    with pytest.raises(zv.InvalidInputError, match=r"positions is float64 but the store holds"):
        zv.append_points(path, np.ones((2, 3)), progress=False)


def test_a_failed_append_in_place_leaves_an_incomplete_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    zv.write_points(store, np.ones((5, 3)), chunk_shape=10.0)

    def explode(*args: Any, **kwargs: Any) -> None:
        raise OSError("simulated")

    monkeypatch.setattr(_level_writer.LevelWriter, "finish", explode)
    with pytest.raises(OSError, match="simulated"):
        zv.append_points(store, np.zeros((5, 3)), progress=False)
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="interrupted"):
        zv.open(store)
    assert not zv.validate(store, level=1).ok


def test_input_that_does_not_match_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s"
    zv.write_points(
        path, np.ones((5, 3), np.float32), chunk_shape=10.0, attributes={"a": np.ones(5)}
    )
    before = _files(path)
    bad: list[tuple[Any, dict[str, Any]]] = [
        (np.ones((2, 3), np.float32), {}),
        (np.ones((2, 3), np.float32), {"a": np.ones((2, 2))}),
        (np.ones((2, 3)), {"a": np.ones(2)}),
        (np.ones((2, 2), np.float32), {"a": np.ones(2)}),
        (np.full((2, 3), np.nan, np.float32), {"a": np.ones(2)}),
    ]
    for positions, attributes in bad:
        with pytest.raises(zv.InvalidInputError):
            zv.append_points(path, positions, attributes=attributes, progress=False)
    assert _files(path) == before

    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_refusals(tmp_path: Path) -> None:
    lines = [np.array([[0.0, 0, 0], [1, 1, 1]])]
    zv.write_polylines(tmp_path / "lines", lines, chunk_shape=10.0)
    with pytest.raises(zv.InvalidInputError, match="point_cloud"):
        zv.append_points(tmp_path / "lines", np.ones((1, 3)))
    zv.write_points(tmp_path / "s.zip", np.ones((2, 3)), chunk_shape=10.0)
    with pytest.raises(zv.InvalidInputError, match="zip"):
        zv.append_points(tmp_path / "s.zip", np.ones((1, 3)), progress=False)
    with pytest.raises(zv.StoreNotFoundError):
        zv.append_points(tmp_path / "missing", np.ones((1, 3)))
    with pytest.raises(zv.InvalidInputError, match="mode='a'"):
        zv.PointWriter(tmp_path / "lines", mode="a", chunk_shape=5.0)
    with pytest.raises(zv.InvalidInputError, match="mode"):
        zv.PointWriter(tmp_path / "x", mode="r")


APPENDER = """
import sys, numpy as np, zarr_vectors as zv
rng = np.random.default_rng(2)
n = int(sys.argv[2])
zv.append_points(sys.argv[1], rng.uniform(-500, 1000, (n, 3)).astype(np.float32),
                 attributes={"a": rng.random(n, dtype=np.float32)}, progress=False)
print("done", flush=True)
"""


@pytest.mark.parametrize("delay", [0.4, 0.9, 1.5])
def test_a_killed_append_leaves_the_old_or_the_new_store(tmp_path: Path, delay: float) -> None:
    path = tmp_path / "s.zarrvectors"
    old = np.random.default_rng(0).uniform(0, 1000, (5000, 3)).astype(np.float32)
    zv.write_points(path, old, chunk_shape=100.0, attributes={"a": np.ones(5000, np.float32)})
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(path), "2000000"], stdout=subprocess.DEVNULL
    )
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    opened = zv.open(path)
    assert opened.vertex_count in (5000, 2_005_000)
    assert zv.validate(path, level=3).ok


def test_appends_keep_custom_metadata(tmp_path: Path) -> None:
    kept = {"las": {"scale": [0.01, 0.01, 0.01], "offset": [0, 0, 0]}}
    xyz = np.random.default_rng(6).uniform(0, 100, (500, 3))
    options = zv.WriteOptions(custom_metadata=kept)
    zv.write_points(tmp_path / "s", xyz, chunk_shape=50.0, options=options)
    zv.append_points(tmp_path / "s", xyz + 150.0, progress=False)  # the grid grows
    with zv.PointWriter(tmp_path / "s", mode="a", progress=False) as writer:
        writer.append(xyz - 60.0)  # below the origin
    store = zv.open(tmp_path / "s")
    assert store.vertex_count == 1500
    assert store.metadata["custom_metadata"] == kept


def test_append_casts_safely_and_gives_the_astype_for_a_lossy_cast(tmp_path: Path) -> None:
    """Finding: ``append_points`` refused a float32 batch into a float64 store (a safe cast)
    with no ``.astype`` hint; with float64 positions a wrong attribute was reported as a
    positions error. Safe casts are done (the store is then the one write of the cast
    input gives); lossy ones are refused with the ``.astype(...)`` to use, naming the
    input at fault."""
    rng = np.random.default_rng(34)
    xyz, more = rng.uniform(0, 10, (50, 3)), rng.uniform(0, 10, (20, 3))
    ids = np.arange(50, dtype=np.int32)
    path = tmp_path / "s"
    zv.write_points(
        path, xyz, chunk_shape=5.0, attributes={"w": np.ones(50, np.float32)}, object_ids=ids
    )
    zv.append_points(
        path,
        more.astype(np.float32),
        attributes={"w": np.zeros(20, np.int8)},
        object_ids=np.arange(20, dtype=np.int16),
        progress=False,
    )
    whole = np.concatenate([xyz, more.astype(np.float32).astype(np.float64)])
    weights = np.concatenate([np.ones(50), np.zeros(20)]).astype(np.float32)
    all_ids = np.concatenate([ids, np.arange(20, dtype=np.int32)])
    zv.write_points(
        tmp_path / "one", whole, chunk_shape=5.0, attributes={"w": weights}, object_ids=all_ids
    )
    assert _files(path) == _files(tmp_path / "one")
    before = _files(path)
    cases: list[tuple[dict[str, Any], str]] = [
        (
            {"attributes": {"w": np.zeros(20)}, "object_ids": np.arange(20)},
            "attributes['w'] is float64 but the store holds float32; float64 to float32 can "
            "lose values, so it is not done implicitly: pass attributes['w'].astype(np.float32)",
        ),
        (
            {"attributes": {"w": np.zeros(20, np.float32)}, "object_ids": np.arange(20)},
            "object_ids is int64 but the store holds int32; int64 to int32 can lose values, "
            "so it is not done implicitly: pass object_ids.astype(np.int32)",
        ),
        ({"attributes": {"v": np.zeros(20)}, "object_ids": ids[:20]}, "missing ['w']"),
        ({"attributes": {"w": np.zeros(20, np.float32)}}, "the store has object ids"),
    ]
    for kwargs, message in cases:
        with pytest.raises(zv.InvalidInputError) as err:
            zv.append_points(path, more, progress=False, **kwargs)
        assert message in str(err.value)
        assert not str(err.value).startswith("positions")
    zv.write_points(tmp_path / "f32", xyz.astype(np.float32), chunk_shape=5.0)
    with pytest.raises(zv.InvalidInputError, match=re.escape("positions.astype(np.float32)")):
        zv.append_points(tmp_path / "f32", more, progress=False)
    assert _files(path) == before
