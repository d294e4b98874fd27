"""The sharded by-id index (``neuroglancer_uint64_sharded_v1``): shard files decoded by the
test's own decoder (written from the format's documentation) give every id the by-id file
the unsharded index gives it; the export and the server hand them out."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
import zarr_vectors.precomputed.annotations as annotations_module
import zarr_vectors.precomputed.sharding as sharding_module
from tests.precomputed.ng_decoder import sharded_lookup
from zarr_vectors.precomputed import (
    LineAnnotations,
    PointAnnotations,
    PrecomputedFileNotFoundError,
)
from zarr_vectors.precomputed.server import PrecomputedServer
from zarr_vectors.precomputed.sharding import ShardingSpec, encode_shard, sharding_for


@pytest.fixture(scope="module")
def leveled(tmp_path_factory: pytest.TempPathFactory) -> zv.VectorStore:
    """1,500 points with an attribute, object ids and two nested levels."""
    rng = np.random.default_rng(11)
    n = 1500
    path = tmp_path_factory.mktemp("sharded") / "cells.zarr"
    zv.write_points(
        path, rng.uniform(0, 40, (n, 3)), chunk_shape=10.0,
        attributes={"w": rng.normal(size=n).astype(np.float32)},
        object_ids=rng.integers(0, 7, n), levels=zv.Levels(count=2, per_bin=4),
    )  # fmt: skip
    return zv.open(path)


def _small_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shards of 2^8 ids, minishards of runs of 2^5: several of each for a small store."""
    monkeypatch.setattr(sharding_module, "PER_SHARD_BITS", 8)
    monkeypatch.setattr(sharding_module, "PRESHIFT_BITS", 5)


def test_every_id_in_its_shard_is_its_by_id_file(
    leveled: zv.VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_shards(monkeypatch)
    plain = PointAnnotations(leveled, sharded=False)
    source = PointAnnotations(leveled, sharded=True)
    total = source.plan.total
    assert total == len(leveled.read())
    assert len(source.plan.levels) == 3
    sharding = json.loads(source.read("info"))["by_id"]["sharding"]
    assert sharding["shard_bits"] == (total - 1).bit_length() - 8
    shards = [p for p in source.paths() if p.startswith("by_id/")]
    assert shards == [f"by_id/{s:x}.shard" for s in range(-(-total // 256))]
    assert not any(p.startswith("by_id/") for p in source.paths() if not p.endswith(".shard"))
    files = {p.removeprefix("by_id/"): source.read(p) for p in shards}
    for annotation in range(total):
        found = sharded_lookup(files.__getitem__, sharding, annotation)
        assert found == plain.read(f"by_id/{annotation}"), annotation
    assert sharded_lookup(files.__getitem__, sharding, total) is None
    with pytest.raises(PrecomputedFileNotFoundError):
        source.read(f"by_id/{1 << sharding['shard_bits']:x}.shard")
    with pytest.raises(PrecomputedFileNotFoundError):
        plain.read("by_id/0.shard")


def test_the_export_writes_shards_and_a_server_answers_their_ranges(
    leveled: zv.VectorStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above ``UNSHARDED_MAX`` points the export holds a few shard files, not one per id."""
    _small_shards(monkeypatch)
    monkeypatch.setattr(annotations_module, "UNSHARDED_MAX", 1000)
    root = zv.convert(leveled, tmp_path / "cells.precomputed")
    assert isinstance(root, Path)
    out = root / "annotations"
    info = json.loads((out / "info").read_text())
    written = sorted(p.name for p in (out / "by_id").iterdir())
    plain = PointAnnotations(leveled, sharded=False)
    assert written == [f"{s:x}.shard" for s in range(-(-plain.plan.total // 256))]

    def read(name: str) -> bytes:
        return (out / "by_id" / name).read_bytes()

    for annotation in range(0, plain.plan.total, 7):
        found = sharded_lookup(read, info["by_id"]["sharding"], annotation)
        assert found == plain.read(f"by_id/{annotation}")
    served = PointAnnotations(leveled)
    computed = []
    block = served._by_id_block

    def counted(first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        computed.append(first)
        return block(first, stop)

    served._by_id_block = counted  # type: ignore[method-assign]
    with PrecomputedServer({"annotations": served}) as server:
        for span in ((0, 15), (16, 99), (100, 140)):  # as Neuroglancer reads a shard
            request = urllib.request.Request(
                server.url + "/annotations/by_id/1.shard",
                headers={"Range": f"bytes={span[0]}-{span[1]}"},
            )
            with urllib.request.urlopen(request) as answer:
                assert answer.status == 206
                assert answer.read() == read("1.shard")[span[0] : span[1] + 1]
    assert computed == [256]  # the shard was computed once


@settings(max_examples=25, deadline=None)
@given(
    bits=st.tuples(*(st.integers(0, 4) for _ in range(3))),
    picked=st.lists(st.booleans(), min_size=1, max_size=200),
    size=st.integers(1, 9),
    variable=st.booleans(),
)
def test_a_shard_holds_its_ids_and_nothing_else(
    bits: tuple[int, int, int], picked: list[bool], size: int, variable: bool
) -> None:
    spec = ShardingSpec(*bits)
    shard = (1 << spec.shard_bits) - 1  # the last shard: its ids are the largest
    first, stop = spec.id_range(shard)
    ids = np.array([first + i for i, keep in enumerate(picked[: stop - first]) if keep])
    rng = np.random.default_rng(len(picked))
    data = rng.integers(0, 256, (ids.size, size), dtype=np.uint8)
    rows = [r[: rng.integers(0, size + 1)].tobytes() for r in data]  # 0 to size bytes
    blob = encode_shard(spec, ids, rows if variable else data)
    files = {spec.shard_name(shard): blob}
    for i in range(first, stop):
        found = sharded_lookup(files.__getitem__, spec.info(), i)
        at = int(np.searchsorted(ids, i))
        expected = (rows[at] if variable else data[at].tobytes()) if i in ids else None
        assert found == expected


def test_sharding_for_bounds_a_shard_and_covers_every_id() -> None:
    for total in (1, 2, 3, 1000, 65_536, 65_537, 10**6, 10**8):
        spec = sharding_for(total)
        assert spec.per_shard <= 1 << sharding_module.PER_SHARD_BITS
        last = spec.shard_count(total) - 1
        assert spec.id_range(last)[0] < total <= spec.id_range(last)[1]  # each id: one shard
        assert spec.shard_count(total) <= 1 << spec.shard_bits
        assert spec.shard_count(total) > 1 << spec.shard_bits - 1 if spec.shard_bits else True


@pytest.mark.parametrize("kind", ["streamline", "graph"])
def test_every_line_and_object_in_its_shard_is_its_file(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line ids ``(n << 32) | j``: a shard holds the lines of whole objects; the
    relationship index: a shard holds a range of object ids."""
    monkeypatch.setattr(sharding_module, "PER_SHARD_BITS", 5)  # about 32 lines a shard
    rng = np.random.default_rng(5)
    path = tmp_path / "lines.zarr"
    if kind == "streamline":
        lines = [rng.uniform(0, 30, (int(rng.integers(2, 12)), 3)) for _ in range(40)]
        zv.write_polylines(
            path, lines, kind=kind, chunk_shape=10.0, object_ids=rng.permutation(1000)[:40]
        )
    else:
        edges = np.array([[i, i + 1] for i in range(59) if i % 10 != 9] + [[0, 5], [40, 47]])
        zv.write_graph(
            path, rng.uniform(0, 30, (60, 3)), edges, vertex_objects=np.arange(60) // 10,
            chunk_shape=10.0,
        )  # fmt: skip
    store = zv.open(path)
    plain = LineAnnotations(store, sharded=False)
    source = LineAnnotations(store, sharded=True)
    sharding = json.loads(source.read("info"))["by_id"]["sharding"]
    shards = [p for p in source.paths() if p.startswith("by_id/")]
    assert len(shards) > 1
    assert all(p.endswith(".shard") for p in shards)
    files = {p.removeprefix("by_id/"): source.read(p) for p in shards}
    ids = [int(p.split("/")[1]) for p in plain.paths() if p.startswith("by_id/")]
    for annotation in ids:
        found = sharded_lookup(files.__getitem__, sharding, annotation)
        assert found == plain.read(f"by_id/{annotation}"), annotation
    assert sharded_lookup(files.__getitem__, sharding, max(ids) + 1) is None
    relationship = json.loads(source.read("info"))["relationships"][0]["sharding"]
    names = [p for p in source.paths() if p.startswith("by_object/")]
    assert all(p.endswith(".shard") for p in names)
    objects = {p.removeprefix("by_object/"): source.read(p) for p in names}
    for obj in np.asarray(store.object_ids).tolist():
        found = sharded_lookup(objects.__getitem__, relationship, obj)
        assert found == plain.read(f"by_object/{obj}"), obj


def test_every_point_object_in_its_shard_is_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Points with object ids: above ``UNSHARDED_MAX`` objects the relationship index is
    shards of object id ranges, read from the store's object-to-chunks index (no point
    read); every object's file in them is the unsharded one."""
    rng = np.random.default_rng(8)
    n = 800
    owners = rng.permutation(10_000)[:100][rng.integers(0, 100, n)]
    path = tmp_path / "cells.zarr"
    zv.write_points(
        path, rng.uniform(0, 40, (n, 3)), chunk_shape=10.0, object_ids=owners,
        attributes={"w": rng.normal(size=n).astype(np.float32)},
        levels=zv.Levels(count=2, per_bin=4),
    )  # fmt: skip
    store = zv.open(path)
    monkeypatch.setattr(sharding_module, "PER_SHARD_BITS", 7)  # about 128 points a shard
    monkeypatch.setattr(annotations_module, "UNSHARDED_MAX", 50)
    plain = PointAnnotations(store, sharded=False)
    monkeypatch.setattr(zv.VectorStore, "read", None)  # listing and shards read no whole level
    source = PointAnnotations(store)
    assert source.object_sharding is not None
    relationship = json.loads(source.read("info"))["relationships"][0]
    assert relationship["key"] == "by_object"
    names = [p for p in source.paths() if p.startswith("by_object/")]
    assert 1 < len(names) < 50
    assert all(p.endswith(".shard") for p in names)
    shards = {p.removeprefix("by_object/"): source.read(p) for p in names}
    objects = sorted({int(p.split("/")[1]) for p in plain.paths() if p.startswith("by_object/")})
    assert objects == np.unique(owners).tolist()
    for obj in objects:
        found = sharded_lookup(shards.__getitem__, relationship["sharding"], obj)
        assert found == plain.read(f"by_object/{obj}"), obj
    assert sharded_lookup(shards.__getitem__, relationship["sharding"], objects[0] + 1) is None
    assert (
        "sharding"
        not in json.loads(PointAnnotations(store, sharded=False).read("info"))["relationships"][0]
    )


@pytest.mark.slow  # about 8 s: a million points written, exported and read back
def test_a_million_points_export_to_a_few_hundred_files_that_read_back(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 1_000_000
    positions = rng.uniform(0, 1000, (n, 3))
    path = tmp_path / "million.zarr"
    zv.write_points(path, positions, chunk_shape=100.0, levels=zv.Levels(count=2, per_bin=4))
    store = zv.open(path)
    root = zv.convert(store, tmp_path / "million.precomputed")
    assert isinstance(root, Path)
    out = root / "annotations"
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) < 500
    info = json.loads((out / "info").read_text())
    cells = [p for p in files if p.parent.name.startswith("spatial")]
    counts = [int(np.frombuffer(p.read_bytes()[:8], "<u8")[0]) for p in cells]
    assert sum(counts) == n  # every point in exactly one cell of one level
    plain = PointAnnotations(store, sharded=False)

    def read(name: str) -> bytes:
        return (out / "by_id" / name).read_bytes()

    shards = {name: read(name) for name in sorted(p.name for p in (out / "by_id").iterdir())}
    for annotation in range(0, n, 997):
        found = sharded_lookup(shards.__getitem__, info["by_id"]["sharding"], annotation)
        assert found == plain.read(f"by_id/{annotation}")
