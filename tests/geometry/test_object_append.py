"""Appending objects gives, byte for byte, the store of one write of old and new objects."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.geometry import object_merge
from zarr_vectors.store.io import StoreIO

HYPOTHESIS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
SMALL_BLOCKS = zv.WriteOptions(rows_per_block=16)
KINDS = ("polyline", "graph", "skeleton", "mesh")


def _files(root: Path) -> dict[str, bytes]:
    """Every file of a store but ``metadata.json`` (it holds the creation time)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "metadata.json"
    }


def _keys(store: MemoryStore) -> dict[str, bytes | None]:
    io = StoreIO(store)
    return {k: io.get(k) for k in io.list_prefix("") if k != "metadata.json"}


def _object_links(kind: str, k: int, rng: np.random.Generator) -> np.ndarray:
    """Links of one object of ``k`` vertices, in the object's vertex numbering."""
    if kind == "graph":
        pairs = [(i, i + 1) for i in range(k - 1)] + [(i, i + 2) for i in range(0, k - 2, 3)]
        return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if kind == "skeleton":
        parent = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, k)], dtype=np.int64)
        return np.stack([np.arange(k), parent], axis=1)
    if kind == "mesh":
        return np.asarray([(i, i + 1, i + 2) for i in range(k - 2)], dtype=np.int64).reshape(-1, 3)
    return np.empty((0, 2), np.int64)


@st.composite
def cases(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    """Objects of one kind, where to cut them into a first write and appends, and options."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.integers(1, 25))
    dim = draw(st.sampled_from([2, 3]))
    low = draw(st.sampled_from([0.0, -25.0]))  # appends below the origin move the grid
    objects = []
    for j in range(m):
        k = int(rng.integers(3, 40))
        start = rng.uniform(0.0 if j < m // 3 else low, 30.0, dim)
        steps = rng.normal(0.0, draw(st.sampled_from([1.0, 4.0])) if j == 0 else 3.0, (k, dim))
        objects.append((np.cumsum(steps, axis=0) + start).round(2))
    links = [_object_links(kind, len(o), rng) for o in objects]
    cut_count = draw(st.integers(1, 3))
    cuts = np.sort(rng.integers(1, m + 1, cut_count)) if m > 1 else np.array([1])
    return {
        "kind": kind,
        "objects": objects,
        "links": links,
        "value": [rng.random(len(o)) for o in objects],
        "link_values": [rng.random(len(lk)) for lk in links],
        "ids": rng.choice(10_000, m, replace=False) if draw(st.booleans()) else None,
        "groups": draw(st.booleans()),
        "cuts": cuts,
        "directed": draw(st.booleans()),
        "options": draw(
            st.sampled_from(
                [SMALL_BLOCKS, None, zv.WriteOptions(rows_per_block=16, fragment_attributes=("k",))]
            )
        ),
    }


def _batches(case: dict[str, Any]) -> list[tuple[int, int]]:
    bounds = [0, *case["cuts"].tolist(), len(case["objects"])]
    return list(itertools.pairwise(bounds))


def _groups(case: dict[str, Any], a: int, b: int) -> dict[str, Any]:
    """Groups of every batch inside ``a:b`` (two groups per batch, as its append gives)."""
    ids = np.arange(len(case["objects"])) if case["ids"] is None else case["ids"]
    groups, weights = {}, []
    for s, e in _batches(case):
        if a <= s < e <= b:
            groups |= {f"g{s}": ids[s : min(s + 2, e)].tolist(), f"h{s}": [int(ids[e - 1])]}
            weights += [s, -s]
    if not groups:
        return {}
    return {"groups": groups, "group_attributes": {"w": np.asarray(weights, np.float32)}}


def _arguments(case: dict[str, Any], a: int, b: int) -> dict[str, Any]:
    """Keyword arguments of a write or append of objects ``a:b``."""
    objects = case["objects"][a:b]
    sizes = [len(o) for o in objects]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    dim = case["objects"][0].shape[1]
    vertices = np.concatenate([np.empty((0, dim)), *objects])
    ids = None if case["ids"] is None else case["ids"][a:b]
    args: dict[str, Any] = {
        "attributes": {"v": np.concatenate([np.empty(0), *case["value"][a:b]])},
        "object_attributes": {"k": np.arange(a, b, dtype=np.int64)},
        "object_ids": ids,
    }
    if case["groups"]:
        args |= _groups(case, a, b)
    if case["kind"] == "polyline":
        return args | {"polylines": (vertices, offsets)}
    labels = np.repeat(np.arange(a, b), sizes)
    links = [lk + off for lk, off in zip(case["links"][a:b], offsets[:-1], strict=True)]
    if case["kind"] == "skeleton":
        parents = np.concatenate(
            [np.empty(0, np.int64)]
            + [
                np.where(lk[:, 1] < 0, -1, lk[:, 1] + off)
                for lk, off in zip(case["links"][a:b], offsets[:-1], strict=True)
            ]
        )
        return args | {"positions": vertices, "parents": parents, "vertex_objects": labels}
    width = 3 if case["kind"] == "mesh" else 2
    joined = np.concatenate([np.empty((0, width), np.int64), *links])
    link_values = {"e": np.concatenate([np.empty(0), *case["link_values"][a:b]])}
    if case["kind"] == "mesh":
        return args | {
            "vertices": vertices,
            "faces": joined,
            "vertex_objects": labels,
            "face_attributes": link_values,
        }
    return args | {
        "positions": vertices,
        "edges": joined,
        "vertex_objects": labels,
        "edge_attributes": link_values,
    }


def _write(store: Any, case: dict[str, Any], a: int, b: int) -> None:
    args = _arguments(case, a, b) | {"chunk_shape": 10.0, "options": case["options"]}
    kind = case["kind"]
    if kind == "polyline":
        zv.write_polylines(store, args.pop("polylines"), **args)
    elif kind == "graph":
        zv.write_graph(
            store, args.pop("positions"), args.pop("edges"), directed=case["directed"], **args
        )
    elif kind == "skeleton":
        zv.write_skeletons(store, args.pop("positions"), **args)
    else:
        zv.write_mesh(store, args.pop("vertices"), args.pop("faces"), **args)


def _append(store: Any, case: dict[str, Any], a: int, b: int) -> None:
    args = _arguments(case, a, b)
    kind = case["kind"]
    if kind == "polyline":
        zv.append_polylines(store, args.pop("polylines"), **args)
    elif kind == "graph":
        zv.append_graph(store, args.pop("positions"), args.pop("edges"), **args)
    elif kind == "skeleton":
        zv.append_skeletons(store, args.pop("positions"), **args)
    else:
        zv.append_mesh(store, args.pop("vertices"), args.pop("faces"), **args)


def _run(store: Any, case: dict[str, Any]) -> None:
    batches = _batches(case)
    _write(store, case, *batches[0])
    for a, b in batches[1:]:
        if case["kind"] == "polyline" or b > a:
            _append(store, case, a, b)


@pytest.mark.parametrize("kind", KINDS)
def test_appends_give_the_one_shot_store(tmp_path_factory: Any, kind: str) -> None:
    @HYPOTHESIS
    @given(case=cases(kind))
    def check(case: dict[str, Any]) -> None:
        tmp = tmp_path_factory.mktemp("a")
        _write(tmp / "one", case, 0, len(case["objects"]))
        _run(tmp / "appended", case)
        assert _files(tmp / "appended") == _files(tmp / "one")
        assert sorted(p.name for p in tmp.iterdir()) == ["appended", "one"]

    check()


@pytest.mark.parametrize("kind", KINDS)
def test_appends_in_place_give_the_one_shot_store(kind: str) -> None:
    @HYPOTHESIS
    @given(case=cases(kind))
    def check(case: dict[str, Any]) -> None:
        one, appended = MemoryStore(), MemoryStore()
        _write(one, case, 0, len(case["objects"]))
        _run(appended, case)
        assert _keys(appended) == _keys(one)

    check()


def _lines(rng: np.random.Generator, m: int, low: float = 0.0) -> list[np.ndarray]:
    return [
        np.cumsum(rng.normal(0, 2.0, (20, 3)), axis=0) + rng.uniform(low, 40, 3) for _ in range(m)
    ]


def test_growth_of_n_max_and_of_the_grid_validates(tmp_path: Path) -> None:
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
            options=SMALL_BLOCKS,
        )
    zv.append_skeletons(
        tmp_path / "appended",
        np.concatenate(new),
        parents=_chains(60),
        vertex_objects=np.repeat(np.arange(60), 20),
        radius=np.concatenate(radius[10:]),
        swc_type=np.full(20 * 60, 3),
    )
    assert _files(tmp_path / "appended") == _files(tmp_path / "one")
    store = zv.open(tmp_path / "appended")
    assert store.metadata["chunk_grid_origin"] != [0, 0, 0]
    assert zv.validate(tmp_path / "appended", level=4).ok


def _chains(m: int) -> np.ndarray:
    parents = np.arange(-1, 20 * m - 1)
    parents[::20] = -1
    return parents


def test_mesh_sentinels_follow_moved_vertices(tmp_path: Path) -> None:
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
        options=SMALL_BLOCKS,
    )
    zv.write_mesh(
        tmp_path / "appended",
        np.concatenate(old),
        faces[: 18 * 5],
        vertex_objects=np.repeat(np.arange(5), 20),
        chunk_shape=8.0,
        options=SMALL_BLOCKS,
    )
    zv.append_mesh(
        tmp_path / "appended",
        np.concatenate(new),
        faces[: 18 * 40],
        vertex_objects=np.repeat(np.arange(5, 45), 20),
    )
    assert _files(tmp_path / "appended") == _files(tmp_path / "one")
    assert zv.validate(tmp_path / "appended", level=4).ok


def test_chunks_without_new_objects_keep_their_files(tmp_path: Path) -> None:
    path = tmp_path / "s"
    lines = [np.array([[1.0, 1, 1], [2, 2, 2]]), np.array([[25.0, 25, 25], [26, 26, 26]])]
    zv.write_polylines(path, lines, chunk_shape=10.0)
    far = path / "0" / "vertices" / "c" / "2" / "2" / "2" / "0" / "0"
    near = path / "0" / "vertices" / "c" / "0" / "0" / "0" / "0" / "0"
    inode_far, inode_near = far.stat().st_ino, near.stat().st_ino
    zv.append_polylines(path, [np.array([[3.0, 3, 3], [4, 4, 4]])])
    assert far.stat().st_ino == inode_far  # the same file, not a copy
    assert near.stat().st_ino != inode_near
    assert zv.open(path).vertex_count == 6
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
    before = _files(path)

    def explode(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(object_merge, "write_object_index", explode)
    points = np.array([[-3.0, 1, 1], [30, 1, 1]], np.float32)
    args = {
        "attributes": {"a": np.ones(2)},
        "object_attributes": {"k": np.array([1])},
        "edge_attributes": {"w": np.ones(1, np.float32)},
    }
    with pytest.raises(OSError, match="simulated"):
        zv.append_graph(path, points, [[0, 1]], **args)
    assert _files(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_a_failed_append_in_place_leaves_an_incomplete_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    zv.write_polylines(store, [np.ones((2, 3))], chunk_shape=10.0)

    def explode(*args: Any, **kwargs: Any) -> None:
        raise OSError("simulated")

    monkeypatch.setattr(object_merge, "write_object_index", explode)
    with pytest.raises(OSError, match="simulated"):
        zv.append_polylines(store, [np.zeros((2, 3))])
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="interrupted"):
        zv.open(store)


def test_input_that_does_not_match_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _graph(path)
    before = _files(path)
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
        {"attributes": {"a": np.ones(2, np.float32)}},  # dtype
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
    assert _files(path) == before
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
