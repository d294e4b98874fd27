"""Streaming object writes give, byte for byte, the store of one write of all objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry import object_cases
from tests.geometry.object_cases import KINDS
from tests.helpers import sample_sizes

HYPOTHESIS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _stream(store: Any, case: dict[str, Any], **extra: Any) -> None:
    settings_ = {"chunk_shape": 10.0, "options": case["options"]}
    if case["kind"] == "graph":
        settings_["directed"] = case["directed"]
    with zv.ObjectWriter(store, kind=case["kind"], **settings_, **extra) as writer:
        for a, b in object_cases.batches(case):
            if b > a:
                writer.append(**object_cases.arguments(case, a, b))


def test_streaming_into_a_memory_store(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    lines = [np.cumsum(rng.normal(0, 2, (20, 3)), axis=0) for _ in range(30)]
    one, streamed = MemoryStore(), MemoryStore()
    zv.write_polylines(one, lines, kind="streamline", chunk_shape=5.0)
    with zv.ObjectWriter(
        streamed, kind="streamline", chunk_shape=5.0, spill_dir=tmp_path
    ) as writer:
        for k in range(0, 30, 7):
            writer.append(lines[k : k + 7])
    assert object_cases.keys(streamed) == object_cases.keys(one)
    assert list(tmp_path.iterdir()) == []


def test_a_bad_batch_is_refused_and_the_others_kept(tmp_path: Path) -> None:
    lines = [np.array([[0.0, 0, 0], [1, 1, 1]]), np.array([[5.0, 5, 5], [6, 6, 6]])]
    with zv.ObjectWriter(tmp_path / "s", kind="polyline", chunk_shape=4.0) as writer:
        writer.append(lines[:1])
        with pytest.raises(zv.InvalidInputError):
            writer.append([np.array([[np.nan, 0, 0], [1, 1, 1]])])
        with pytest.raises(zv.InvalidInputError, match="set once"):
            writer.append(lines[1:], chunk_shape=3.0)
        with pytest.raises(zv.InvalidInputError, match="bad batch"):
            writer.append(lines[1:], colour="red")
        writer.append(lines[1:])
    got = zv.open(tmp_path / "s").read_objects([0, 1])
    np.testing.assert_array_equal(got.positions, np.concatenate(lines))


def test_an_error_in_the_block_leaves_the_destination_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "s"
    zv.write_polylines(path, [np.ones((2, 3))], chunk_shape=4.0)
    before = object_cases.files(path)

    def interrupted() -> None:
        with zv.ObjectWriter(path, kind="polyline", chunk_shape=4.0, mode="w") as writer:
            writer.append([np.zeros((3, 3))])
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        interrupted()
    assert object_cases.files(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_refusals(tmp_path: Path) -> None:
    zv.write_polylines(tmp_path / "s", [np.ones((2, 3))], chunk_shape=4.0)
    with pytest.raises(zv.StoreExistsError):
        zv.ObjectWriter(tmp_path / "s", kind="polyline", chunk_shape=4.0)
    with pytest.raises(zv.InvalidInputError, match="kind"):
        zv.ObjectWriter(tmp_path / "t", kind="points", chunk_shape=4.0)
    with pytest.raises(zv.InvalidInputError, match="chunk_shape"):
        zv.ObjectWriter(tmp_path / "t", kind="mesh", chunk_shape=None)
    with pytest.raises(zv.InvalidInputError, match="settings"):
        zv.ObjectWriter(tmp_path / "t", kind="mesh", chunk_shape=4.0, directed=True)
    writer = zv.ObjectWriter(tmp_path / "t", kind="mesh", chunk_shape=4.0)
    with pytest.raises(zv.InvalidInputError, match="nothing to write"):
        writer.close()
    with pytest.raises(zv.InvalidInputError, match="closed"):
        writer.append(np.zeros((3, 3)), np.array([[0, 1, 2]]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_later_batches_are_cast_safely_to_the_first(tmp_path: Path) -> None:
    """Finding (streaming object writes): a later batch is cast to the first batch's
    dtypes when that is safe, and refused with the ``.astype(...)`` to use otherwise."""
    rng = np.random.default_rng(34)
    first = [rng.uniform(0, 50, (5, 3)) for _ in range(3)]
    later = [rng.uniform(0, 50, (4, 3)).astype(np.float32) for _ in range(2)]
    with zv.ObjectWriter(tmp_path / "s", kind="polyline", chunk_shape=20.0) as writer:
        writer.append(first, attributes={"a": np.ones(15, np.float32)})
        with pytest.raises(zv.InvalidInputError, match=r"attributes\['a'\]\.astype\(np\.float32\)"):
            writer.append(later, attributes={"a": np.zeros(8)})
        writer.append(later, attributes={"a": np.zeros(8, np.int8)})
    store = zv.open(tmp_path / "s")
    assert store.object_count == 5
    assert store.read().positions.dtype == np.float64


ONE_SHOT = {
    "polyline": zv.write_polylines,
    "graph": zv.write_graph,
    "skeleton": zv.write_skeletons,
    "mesh": zv.write_mesh,
}


def _stream_onto(store: Any, case: dict[str, Any], later: list[tuple[int, int]]) -> None:
    """``ObjectWriter(mode="a")``: the ``later`` batches added to the store, one by one."""
    with zv.ObjectWriter(store, kind=case["kind"], mode="a", progress=False) as writer:
        for a, b in later:
            writer.append(**object_cases.arguments(case, a, b))


def _check_appending_stream(one: Any, streamed: Any, case: dict[str, Any]) -> None:
    """Write the first batch into both stores, then the others: in one ``write_*(mode="a")``
    into ``one``, batch by batch through ``ObjectWriter(mode="a")`` into ``streamed``."""
    first, *rest = object_cases.batches(case)
    later = [(a, b) for a, b in rest if b > a]
    assume(later)
    for store in (one, streamed):
        object_cases.write(store, case, *first)
    everything = object_cases.arguments(case, later[0][0], later[-1][1])
    ONE_SHOT[case["kind"]](one, mode="a", progress=False, **everything)
    _stream_onto(streamed, case, later)


def _stream_new(one: Any, streamed: Any, case: dict[str, Any]) -> None:
    """All objects in one write into ``one``, batch by batch through ``ObjectWriter``
    into ``streamed``."""
    object_cases.write(one, case, 0, len(case["objects"]))
    _stream(streamed, case)


WAYS = {"new": _stream_new, "onto": _check_appending_stream}
"""Streaming writes, and what they must give byte for byte: a new store, or one onto a store."""


def _pair(tmp_path_factory: Any, where: str) -> tuple[Any, Any]:
    if where == "memory":
        return MemoryStore(), MemoryStore()
    tmp = tmp_path_factory.mktemp("s")
    return tmp / "one", tmp / "streamed"


def _contents(store: Any) -> dict[str, bytes | None]:
    if isinstance(store, MemoryStore):
        return object_cases.keys(store)
    assert sorted(p.name for p in store.parent.iterdir()) == ["one", "streamed"]
    return dict(object_cases.files(store))


DEFAULT_WHERE = {
    ("polyline", "new"): "disk",
    ("polyline", "onto"): "memory",
    ("graph", "new"): "memory",
    ("graph", "onto"): "disk",
    ("skeleton", "new"): "disk",
    ("skeleton", "onto"): "memory",
    ("mesh", "new"): "memory",
    ("mesh", "onto"): "disk",
}
"""The store kind of each (kind, way) in the default run: each kind and each way on disk
and in memory; the other combinations run with ``-m slow`` (their full samples too)."""


def _stream_params() -> list[Any]:
    """(kind, way, where, examples): the ``few`` sample of :data:`DEFAULT_WHERE` by
    default, everything else ``slow``; the ids as ``pytest.mark.parametrize`` made them."""
    params = []
    for kind in KINDS:
        for way in sorted(WAYS):
            for where in ("disk", "memory"):
                for size in sample_sizes(2, 12):
                    (examples,) = size.values
                    slow = bool(size.marks) or DEFAULT_WHERE[kind, way] != where
                    params.append(
                        pytest.param(
                            kind,
                            way,
                            where,
                            examples,
                            id=f"{kind}-{way}-{where}-{size.id}",
                            marks=pytest.mark.slow if slow else (),
                        )
                    )
    return params


@pytest.mark.parametrize(("kind", "way", "where", "examples"), _stream_params())
def test_streaming_gives_the_one_shot_store(
    tmp_path_factory: Any, kind: str, way: str, where: str, examples: int
) -> None:
    @settings(HYPOTHESIS, max_examples=examples)
    @given(case=object_cases.cases(kind, sharded=way == "onto"))
    def check(case: dict[str, Any]) -> None:
        one, streamed = _pair(tmp_path_factory, where)
        WAYS[way](one, streamed, case)
        assert _contents(streamed) == _contents(one)

    check()


def test_streaming_onto_a_store_refuses_a_concurrent_change(tmp_path: Path) -> None:
    line = np.array([[0.0, 0, 0], [1, 1, 1]])
    zv.write_polylines(tmp_path / "s", [line], chunk_shape=4.0)
    writer = zv.ObjectWriter(tmp_path / "s", kind="polyline", mode="a", progress=False)
    writer.append([line + 1])
    zv.append_polylines(tmp_path / "s", [line + 2], progress=False)
    before = object_cases.files(tmp_path / "s")
    with pytest.raises(zv.ConcurrentWriteError):
        writer.close()
    assert object_cases.files(tmp_path / "s") == before
    assert zv.open(tmp_path / "s").object_count == 2


def test_batches_bind_by_the_data_names_of_the_kind(tmp_path: Path) -> None:
    square = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=np.float32)
    faces = np.array([[0, 1, 2]])
    with zv.ObjectWriter(tmp_path / "m", kind="mesh", chunk_shape=4.0) as writer:
        with pytest.raises(zv.InvalidInputError, match="takes 2 data arguments"):
            writer.append(square, faces, faces)
        with pytest.raises(zv.InvalidInputError, match="faces is given twice"):
            writer.append(square, faces, faces=faces)
        with pytest.raises(zv.InvalidInputError, match="missing faces"):
            writer.append(square)
        with pytest.warns(DeprecationWarning, match="vertices= is deprecated; use positions="):
            writer.append(vertices=square, faces=faces)
        writer.append(square + 2, faces)
    assert zv.open(tmp_path / "m").object_count == 2
