"""Appending objects gives, byte for byte, the store of one write of old and new objects."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry import object_cases
from tests.geometry.object_cases import KINDS, SMALL_BLOCKS
from tests.helpers import sample_sizes
from zarr_vectors.update import merge_globals

GOLDEN = Path(__file__).parents[1] / "data" / "golden"

HYPOTHESIS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _run(store: Any, case: dict[str, Any]) -> None:
    batches = object_cases.batches(case)
    object_cases.write(store, case, *batches[0])
    for a, b in batches[1:]:
        if case["kind"] == "polyline" or b > a:
            object_cases.append(store, case, a, b)


@pytest.mark.parametrize("examples", sample_sizes(3, 15))
@pytest.mark.parametrize("kind", KINDS)
def test_appends_give_the_one_shot_store(tmp_path_factory: Any, kind: str, examples: int) -> None:
    @settings(HYPOTHESIS, max_examples=examples)
    @given(case=object_cases.cases(kind, sharded=True))
    def check(case: dict[str, Any]) -> None:
        tmp = tmp_path_factory.mktemp("a")
        object_cases.write(tmp / "one", case, 0, len(case["objects"]))
        _run(tmp / "appended", case)
        assert object_cases.files(tmp / "appended") == object_cases.files(tmp / "one")
        assert sorted(p.name for p in tmp.iterdir()) == ["appended", "one"]

    check()


@pytest.mark.parametrize("examples", sample_sizes(5, 15))
@pytest.mark.parametrize("kind", KINDS)
def test_appends_in_place_give_the_one_shot_store(kind: str, examples: int) -> None:
    """In memory: more examples than the test on disk above for the same time."""

    @settings(HYPOTHESIS, max_examples=examples)
    @given(case=object_cases.cases(kind, sharded=True))
    def check(case: dict[str, Any]) -> None:
        one, appended = MemoryStore(), MemoryStore()
        object_cases.write(one, case, 0, len(case["objects"]))
        _run(appended, case)
        assert object_cases.keys(appended) == object_cases.keys(one)

    check()


def _lines(rng: np.random.Generator, m: int, low: float = 0.0) -> list[np.ndarray]:
    return [
        np.cumsum(rng.normal(0, 2.0, (20, 3)), axis=0) + rng.uniform(low, 40, 3) for _ in range(m)
    ]


SHARDED_BLOCKS = zv.WriteOptions(rows_per_block=16, shard_chunks=(2, 3, 1))


@pytest.mark.parametrize(
    "options",
    [pytest.param(SMALL_BLOCKS, marks=pytest.mark.slow), SHARDED_BLOCKS],
    ids=["plain", "sharded"],
)
def test_growth_of_n_max_and_of_the_grid_validates(tmp_path: Path, options: Any) -> None:
    """Sharded by default, plain blocks with ``-m slow`` (the mesh test below runs them)."""
    rng = np.random.default_rng(3)
    old, new = _lines(rng, 10), _lines(rng, 60, low=-30.0)
    radius = [rng.random(20) for _ in range(70)]
    for name, batches in (("one", [old + new]), ("appended", [old, new])):
        zv.write_skeletons(
            tmp_path / name,
            np.concatenate(batches[0]),
            parents=_chains(len(batches[0])),
            vertex_objects=np.repeat(np.arange(len(batches[0])), 20),
            radius=np.concatenate(radius[: len(batches[0])]),
            swc_type=np.full(20 * len(batches[0]), 3),
            chunk_shape=10.0,
            options=options,
        )
    zv.append_skeletons(
        tmp_path / "appended",
        np.concatenate(new),
        parents=_chains(60),
        vertex_objects=np.repeat(np.arange(60), 20),
        radius=np.concatenate(radius[10:]),
        swc_type=np.full(20 * 60, 3),
    )
    assert object_cases.files(tmp_path / "appended") == object_cases.files(tmp_path / "one")
    store = zv.open(tmp_path / "appended")
    assert store.metadata["chunk_grid_origin"] != [0, 0, 0]
    assert zv.validate(tmp_path / "appended", level=4).ok


def _chains(m: int) -> np.ndarray:
    parents = np.arange(-1, 20 * m - 1)
    parents[::20] = -1
    return parents


@pytest.mark.parametrize(
    "options",
    [SMALL_BLOCKS, pytest.param(SHARDED_BLOCKS, marks=pytest.mark.slow)],
    ids=["plain", "sharded"],
)
def test_mesh_sentinels_follow_moved_vertices(tmp_path: Path, options: Any) -> None:
    """Plain blocks by default, sharded with ``-m slow`` (the test above runs them)."""
    rng = np.random.default_rng(5)
    old, new = _lines(rng, 5), _lines(rng, 40, low=-40.0)
    faces = np.concatenate(
        [np.stack([i, i + 1, i + 2], 1) + 20 * k for k in range(45) for i in [np.arange(18)]]
    )
    zv.write_mesh(
        tmp_path / "one",
        np.concatenate(old + new),
        faces,
        vertex_objects=np.repeat(np.arange(45), 20),
        chunk_shape=8.0,
        options=options,
    )
    zv.write_mesh(
        tmp_path / "appended",
        np.concatenate(old),
        faces[: 18 * 5],
        vertex_objects=np.repeat(np.arange(5), 20),
        chunk_shape=8.0,
        options=options,
    )
    zv.append_mesh(
        tmp_path / "appended",
        np.concatenate(new),
        faces[: 18 * 40],
        vertex_objects=np.repeat(np.arange(5, 45), 20),
    )
    assert object_cases.files(tmp_path / "appended") == object_cases.files(tmp_path / "one")
    assert zv.validate(tmp_path / "appended", level=4).ok


def test_chunks_without_new_objects_keep_their_files(tmp_path: Path) -> None:
    path = tmp_path / "s"
    lines = [np.array([[1.0, 1, 1], [2, 2, 2]]), np.array([[25.0, 25, 25], [26, 26, 26]])]
    zv.write_polylines(path, lines, chunk_shape=10.0, options=zv.WriteOptions(shard_chunks=1))
    far = path / "0" / "vertices" / "c" / "2" / "2" / "2" / "0" / "0"
    near = path / "0" / "vertices" / "c" / "0" / "0" / "0" / "0" / "0"
    inode_far, inode_near = far.stat().st_ino, near.stat().st_ino
    zv.append_polylines(path, [np.array([[3.0, 3, 3], [4, 4, 4]])])
    assert far.stat().st_ino == inode_far  # the same file, not a copy
    assert near.stat().st_ino != inode_near
    assert zv.open(path).vertex_count == 6
    assert zv.validate(path, level=4).ok


def test_sharded_shards_without_new_objects_keep_their_files(tmp_path: Path) -> None:
    path, options = tmp_path / "s", zv.WriteOptions(shard_chunks=2)
    lines = [np.array([[1.0, 1, 1], [2, 2, 2]]), np.array([[35.0, 35, 35], [36, 36, 36]])]
    lines.append(np.array([[15.0, 1, 1], [16, 1, 1]]))
    zv.write_polylines(path, lines, chunk_shape=10.0, options=options)
    far = path / "0" / "vertices" / "c" / "1" / "1" / "1" / "0" / "0"  # chunk (3, 3, 3)
    near = path / "0" / "vertices" / "c" / "0" / "0" / "0" / "0" / "0"  # chunks (0|1, 0, 0)
    inode_far, inode_near = far.stat().st_ino, near.stat().st_ino
    added = [np.array([[3.0, 3, 3], [4, 4, 4]])]
    zv.append_polylines(path, added)
    assert far.stat().st_ino == inode_far  # the same file, not a copy
    assert near.stat().st_ino != inode_near
    zv.write_polylines(tmp_path / "one", lines + added, chunk_shape=10.0, options=options)
    assert object_cases.files(path) == object_cases.files(tmp_path / "one")
    assert zv.validate(path, level=4).ok


def _graph(path: Any, **kwargs: Any) -> None:
    zv.write_graph(
        path,
        np.array([[1.0, 1, 1], [15, 1, 1], [2, 2, 2]], np.float32),
        [[0, 1], [1, 2]],
        chunk_shape=10.0,
        attributes={"a": np.ones(3)},
        object_attributes={"k": np.array([7])},
        edge_attributes={"w": np.ones(2, np.float32)},
        groups={"all": [0]},
        **kwargs,
    )


def test_a_failed_append_leaves_a_local_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s"
    _graph(path)
    before = object_cases.files(path)

    def explode(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(merge_globals, "write_object_index", explode)
    points = np.array([[-3.0, 1, 1], [30, 1, 1]], np.float32)
    args = {
        "attributes": {"a": np.ones(2)},
        "object_attributes": {"k": np.array([1])},
        "edge_attributes": {"w": np.ones(1, np.float32)},
    }
    with pytest.raises(OSError, match="simulated"):
        zv.append_graph(path, points, [[0, 1]], **args)
    assert object_cases.files(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_a_failed_append_in_place_leaves_an_incomplete_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    zv.write_polylines(store, [np.ones((2, 3))], chunk_shape=10.0)

    def explode(*args: Any, **kwargs: Any) -> None:
        raise OSError("simulated")

    monkeypatch.setattr(merge_globals, "write_object_index", explode)
    with pytest.raises(OSError, match="simulated"):
        zv.append_polylines(store, [np.zeros((2, 3))])
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="interrupted"):
        zv.open(store)


def test_input_that_does_not_match_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _graph(path)
    before = object_cases.files(path)
    good: dict[str, Any] = {
        "positions": np.array([[3.0, 3, 3], [4, 4, 4]], np.float32),
        "edges": [[0, 1]],
        "attributes": {"a": np.ones(2)},
        "object_attributes": {"k": np.array([1])},
        "edge_attributes": {"w": np.ones(1, np.float32)},
    }
    bad = [
        {"positions": np.ones((2, 3))},  # float64 positions
        {"positions": np.ones((2, 2), np.float32)},  # dimension
        {"object_attributes": {"k": np.array([1.5])}},  # a cast that loses values
        {"attributes": {"b": np.ones(2)}},  # name
        {"object_attributes": {}},
        {"edge_attributes": {}},
        {"edge_attributes": {"w": np.ones(1)}},
        {"object_ids": [0]},  # an id of the store
        {"groups": {"all": [1]}},  # a group name of the store
    ]
    for change in bad:
        args = good | change
        with pytest.raises(zv.InvalidInputError):
            zv.append_graph(path, args.pop("positions"), args.pop("edges"), **args)
    with pytest.raises(zv.InvalidInputError, match="graph"):
        zv.append_polylines(path, [np.ones((2, 3), np.float32)])
    assert object_cases.files(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]
    args = dict(good)
    zv.append_graph(path, args.pop("positions"), args.pop("edges"), **args)
    assert zv.open(path).metadata["is_directed"] is False
    assert zv.validate(path, level=4).ok


def test_refusals(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "points", np.ones((2, 3)), chunk_shape=10.0)
    with pytest.raises(zv.InvalidInputError, match="object store"):
        zv.append_polylines(tmp_path / "points", [np.ones((2, 3))])
    zv.write_polylines(tmp_path / "s.zip", [np.ones((2, 3))], chunk_shape=10.0)
    with pytest.raises(zv.InvalidInputError, match="zip"):
        zv.append_polylines(tmp_path / "s.zip", [np.ones((2, 3))])
    with pytest.raises(zv.StoreNotFoundError):
        zv.append_polylines(tmp_path / "missing", [np.ones((2, 3))])


def test_appends_keep_custom_metadata(tmp_path: Path) -> None:
    kept = {"tractogram": {"voxel_sizes": [1.25, 1.25, 1.25]}}
    rng = np.random.default_rng(9)
    lines = [rng.uniform(0, 80, (6, 3)) for _ in range(12)]
    options = zv.WriteOptions(custom_metadata=kept)
    zv.write_polylines(tmp_path / "s", lines, kind="streamline", chunk_shape=40.0, options=options)
    zv.append_polylines(tmp_path / "s", [line + 100.0 for line in lines], progress=False)
    store = zv.open(tmp_path / "s")
    assert store.object_count == 24
    assert store.metadata["custom_metadata"] == kept


def _fragment_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for name in ("vertex_fragments", "link_fragments")
        for p in sorted((root / "0" / name).rglob("*"))
        if p.is_file()
    }


def test_an_earlier_writers_store_keeps_its_blob_blocks(tmp_path: Path) -> None:
    """A store written with one fragment-blob block per chunk (``golden/earlier``) takes an
    append: its blocks stay, chunks without new objects keep their blob bytes, and the old
    objects read back as before."""
    earlier = GOLDEN / "earlier" / "streamlines_3d_groups.zarrvectors"
    path = tmp_path / "s"
    shutil.copytree(earlier, path)
    before = _fragment_files(path)
    zv.append_polylines(
        path,
        [np.array([[1.0, 1, 1], [2, 2, 2]], np.float32)],  # chunk (0, 0, 0) only
        attributes={"fa": np.array([0.5, 0.25], np.float32)},
        object_attributes={"weight": np.array([0.5]), "n_points": np.array([2], np.int32)},
        object_ids=[5000],
        progress=False,
    )
    for name in ("vertex_fragments", "link_fragments"):
        assert zarr.open_array(path / "0" / name).chunks == (1, 1, 1, 512)
    after = _fragment_files(path)
    changed = sorted(k for k in before if after[k] != before[k])
    assert changed == ["0/link_fragments/c/0/0/0/0", "0/vertex_fragments/c/0/0/0/0"]
    assert zv.validate(path, level=4).ok
    old, new = zv.open(earlier), zv.open(path)
    np.testing.assert_array_equal(new.object_ids, [*old.object_ids, 5000])
    want, got = old.read_objects(old.object_ids), new.read_objects(old.object_ids)
    np.testing.assert_array_equal(got.positions, want.positions)
    np.testing.assert_array_equal(got.offsets, want.offsets)
    for name, values in want.attributes.items():
        np.testing.assert_array_equal(got.attributes[name], values)
    for name, values in want.object_attributes.items():
        np.testing.assert_array_equal(got.object_attributes[name], values)
    np.testing.assert_array_equal(new.read_objects([5000]).positions, [[1, 1, 1], [2, 2, 2]])


def test_object_appends_cast_safely_and_give_the_astype_for_a_lossy_cast(tmp_path: Path) -> None:
    """Finding (object appends): a float32 batch into a float64 store is a safe cast and
    is done; a cast that loses values is refused with the ``.astype(...)`` to use."""
    rng = np.random.default_rng(34)
    lines = [rng.uniform(0, 50, (5, 3)) for _ in range(4)]
    new = [rng.uniform(0, 50, (4, 3)) for _ in range(2)]
    path = tmp_path / "s"
    vertex = {"a": np.ones(20, np.float32)}
    zv.write_polylines(
        path,
        lines,
        chunk_shape=20.0,
        attributes=vertex,
        object_attributes={"k": np.arange(4, dtype=np.int32)},
    )
    zv.append_polylines(
        path,
        [p.astype(np.float32) for p in new],
        attributes={"a": np.zeros(8, np.int8)},
        object_attributes={"k": np.array([7, 8], np.int16)},
        progress=False,
    )
    store = zv.open(path)
    assert store.object_count == 6
    np.testing.assert_array_equal(store.read_objects([4]).positions, new[0].astype(np.float32))
    before = object_cases.files(path)
    with pytest.raises(zv.InvalidInputError) as err:
        zv.append_polylines(
            path,
            new,
            attributes={"a": np.zeros(8)},
            object_attributes={"k": np.array([7, 8], np.int32)},
        )
    assert "attributes['a'].astype(np.float32)" in str(err.value)
    with pytest.raises(zv.InvalidInputError) as err:
        zv.append_polylines(
            path,
            new,
            attributes={"a": np.zeros(8, np.float32)},
            object_attributes={"k": np.array([7, 8])},
        )
    assert "object_attributes['k'].astype(np.int32)" in str(err.value)
    assert object_cases.files(path) == before
