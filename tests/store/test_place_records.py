"""Place records (spec §9.0.2, format 1.2): a shard file moved to another key is an error.

Finding (issue 35): moving one chunk's file to another chunk's key (a bad copy or sync, a
repair by hand) of ``vertices`` or of an attribute returned wrong values silently from
``read()`` and box queries, and validation missed some: each row block's CRC32C proves the
bytes are intact, not that they belong where they lie. Each case below swaps, duplicates or
moves shard files of a written store and asserts that every read path raises one of our
errors or returns exactly the right answer, and that ``validate(level=3)`` reports
``L3.chunk_place``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.helpers import sorted_rows
from zarr_vectors.errors import MisplacedChunkError
from zarr_vectors.format.place import PLACE_MAGIC, PLACE_NBYTES, place_problem, place_record
from zarr_vectors.store.shards import RowLayout

GOLDEN = Path(__file__).parents[1] / "format" / "golden"
BOX = ([-1.0, -1.0, -1.0], [41.0, 41.0, 41.0])  # everything
PART = ([5.0, 5.0, 5.0], [25.0, 25.0, 25.0])


# -- the record itself ----------------------------------------------------------------------


def test_place_record_bytes_are_the_golden_ones() -> None:
    """The record of ``0/vertices/c/1/2/3/0/0`` (``tests/format/golden/README.md``)."""
    golden = (GOLDEN / "place_record_example.bin").read_bytes()
    assert place_record("0/vertices/c/1/2/3/0/0", "float32") == golden
    assert len(golden) == PLACE_NBYTES
    assert golden[:4] == PLACE_MAGIC


def test_place_problem_says_what_is_wrong() -> None:
    key = "0/vertices/c/0/0/0/0/0"
    record = place_record(key, "float32")
    assert place_problem(record, key, "float32") is None
    assert "another place" in str(place_problem(record, "0/vertices/c/0/0/1/0/0", "float32"))
    assert "another place" in str(place_problem(record, "0/attributes/a/c/0/0/0/0", "float32"))
    assert "another data type" in str(place_problem(record, key, "int32"))
    damaged = record[:5] + bytes([record[5] ^ 1]) + record[6:]
    assert "damaged" in str(place_problem(damaged, key, "float32"))
    assert "no place record" in str(place_problem(b"\0" * PLACE_NBYTES, "k", "float32"))


def test_a_shard_read_from_another_key_is_misplaced() -> None:
    layout = RowLayout(np.dtype("<f4"), (3,), 8, 32, None)
    rows = np.arange(30, dtype="<f4").reshape(10, 3)
    shard = layout.encode_shard(rows, "0/vertices/c/0/0/0/0/0")
    assert layout.decode_index(shard, "0/vertices/c/0/0/0/0/0").shape == (4, 2)
    with pytest.raises(MisplacedChunkError, match="0/vertices/c/0/0/1/0/0: the file was"):
        layout.decode_index(shard, "0/vertices/c/0/0/1/0/0")
    moved = layout.reindex_shard(shard, layout, "0/vertices/c/0/0/0/0/0", "0/vertices/c/0/0/1/0/0")
    assert moved == layout.encode_shard(rows, "0/vertices/c/0/0/1/0/0")
    old = replace(layout, placed=False)  # a 1.0 / 1.1 shard: the bytes before the index are data
    record = place_record("0/vertices/c/0/0/0/0/0", "float32")
    assert old.encode_shard(rows, "k") == shard.replace(record, b"")
    assert old.decode_index(shard, "anything").shape == (4, 2)


def test_the_place_record_compared_in_place_finds_every_wrong_record() -> None:
    """The record is compared in place (``startswith`` at its offset): a record of another
    key, another data type, or no record is refused; the right one is accepted."""
    layout = RowLayout(np.dtype("<f4"), (3,), 8, 32, None)
    key = "0/vertices/c/0/0/0/0/0"
    shard = layout.encode_shard(np.zeros((10, 3), "<f4"), key)
    at = len(shard) - layout.tail_nbytes
    assert layout.type_name == "float32"
    assert layout.decode_index(shard, key).shape == (4, 2)
    with pytest.raises(MisplacedChunkError, match="another place"):
        layout.decode_index(shard, "0/vertices/c/0/0/1/0/0")
    with pytest.raises(MisplacedChunkError, match="another data type"):
        replace(layout, dtype=np.dtype("<i4")).decode_index(shard, key)
    blank = shard[:at] + bytes(PLACE_NBYTES) + shard[at + PLACE_NBYTES :]
    with pytest.raises(MisplacedChunkError, match="no place record"):
        layout.decode_index(blank, key)


_KEYS = st.lists(st.integers(0, 40), min_size=1, max_size=5).map(
    lambda g: "0/vertices/c/" + "/".join(map(str, g))
)


@settings(max_examples=60, deadline=None)
@given(a=_KEYS, b=_KEYS, n=st.integers(1, 40), placed=st.booleans())
def test_a_shard_decodes_at_its_own_key_only(a: str, b: str, n: int, placed: bool) -> None:
    """Property: a shard encoded for key ``a`` decodes at ``a`` to its rows, with or without
    a place record, and its record refuses any other key."""
    layout = RowLayout(np.dtype("<f4"), (3,), 8, 48, None, placed=placed)
    rows = np.arange(3 * n, dtype="<f4").reshape(n, 3)
    shard = layout.encode_shard(rows, a)
    index = layout.decode_index(shard, a)
    out = np.empty_like(rows)
    layout.decode_rows_into(shard, index, 0, (0, n), out, a)
    np.testing.assert_array_equal(out, rows)
    if placed and a != b:
        with pytest.raises(MisplacedChunkError, match="another place"):
            layout.decode_index(shard, b)
    else:
        np.testing.assert_array_equal(layout.decode_index(shard, b), index)


def test_zarr_python_reads_a_shard_with_its_place_record(tmp_path: Path) -> None:
    """The sharding codec follows the index, so the record is bytes it never reads."""
    rng = np.random.default_rng(0)
    xyz = rng.uniform(0, 40, (2000, 3)).astype(np.float32)
    path = tmp_path / "p.zarrvectors"
    zv.write_points(path, xyz, chunk_shape=20.0, options=zv.WriteOptions(rows_per_block=64))
    counts = zarr.open_array(path / "0" / "vertex_counts", mode="r")[...]
    vertices = zarr.open_array(path / "0" / "vertices", mode="r")
    raw = (path / "0" / "vertices" / "c" / "0" / "0" / "0" / "0" / "0").read_bytes()
    assert PLACE_MAGIC in raw
    got = np.concatenate(
        [vertices[(*g, slice(0, int(counts[tuple(g)])))] for g in np.argwhere(counts > 0)]
    )
    np.testing.assert_array_equal(sorted_rows(got), sorted_rows(xyz))


# -- damaged stores -------------------------------------------------------------------------


def _points(path: Path, shard_chunks: int = 1) -> zv.VectorStore:
    rng = np.random.default_rng(1)
    xyz = rng.uniform(0, 40, (3000, 3)).astype(np.float32)
    values = rng.random(3000).astype(np.float32)
    options = zv.WriteOptions(rows_per_block=64, shard_chunks=shard_chunks)
    zv.write_points(
        path, xyz, chunk_shape=10.0, bin_shape=5.0, attributes={"a": values}, options=options
    )
    return zv.open(path)


def _streamlines(path: Path, shard_chunks: int = 1) -> zv.VectorStore:
    rng = np.random.default_rng(2)
    lines = [
        np.cumsum(rng.normal(0, 2, (int(rng.integers(5, 40)), 3)), axis=0).astype(np.float32) + 20
        for _ in range(60)
    ]
    fa = [rng.random(len(line)).astype(np.float32) for line in lines]
    options = zv.WriteOptions(rows_per_block=16, shard_chunks=shard_chunks)
    zv.write_polylines(
        path,
        lines,
        chunk_shape=10.0,
        attributes={"fa": np.concatenate(fa)},
        kind="streamline",
        options=options,
    )
    return zv.open(path)


def _graph(path: Path) -> zv.VectorStore:
    rng = np.random.default_rng(3)
    xyz = rng.uniform(0, 40, (400, 3)).astype(np.float32)
    edges = np.stack([np.arange(399), np.arange(1, 400)], axis=1)
    edges = np.concatenate([edges, rng.integers(0, 400, (200, 2))])
    edges = edges[edges[:, 0] != edges[:, 1]]
    edges = np.unique(np.sort(edges, axis=1), axis=0)
    zv.write_graph(
        path,
        xyz,
        edges,
        chunk_shape=10.0,
        options=zv.WriteOptions(rows_per_block=16, shard_chunks=1),
        progress=False,
    )
    return zv.open(path)


WRITERS: dict[str, Callable[..., zv.VectorStore]] = {
    "points": _points,
    "streamlines": _streamlines,
    "graph": _graph,
}


def _shards(path: Path, array: str) -> list[str]:
    """Keys of the stored shards of ``array`` (e.g. ``0/vertices``), sorted."""
    root = path / array / "c"
    return sorted(str(p.relative_to(path)) for p in root.rglob("*") if p.is_file())


def _swap(path: Path, a: str, b: str) -> None:
    raw_a, raw_b = (path / a).read_bytes(), (path / b).read_bytes()
    (path / a).write_bytes(raw_b)
    (path / b).write_bytes(raw_a)


def _duplicate(path: Path, a: str, b: str) -> None:
    (path / b).write_bytes((path / a).read_bytes())


def _move_to_empty(path: Path, a: str, array: str) -> str:
    """Copy shard ``a`` to the key of a chunk that stores nothing; that key."""
    stored = set(_shards(path, array))
    suffix = a.split("/c/")[1].split("/")
    for i in range(100):
        g = [str(int(c) + i) for c in suffix[:3]]
        key = f"{array}/c/" + "/".join(g + suffix[3:])
        if key not in stored:
            (path / key).parent.mkdir(parents=True, exist_ok=True)
            (path / key).write_bytes((path / a).read_bytes())
            return key
    raise AssertionError("no empty key found")


def _answers(store: zv.VectorStore) -> dict[str, Any]:
    """Every read path's answer, or the error class it raised."""
    out: dict[str, Any] = {}
    calls: dict[str, Callable[[], Any]] = {
        "read": store.read,
        "box": lambda: store.query(PART),
        "all": lambda: store.query(BOX),
    }
    if store.is_object_store:
        calls["by_id"] = lambda: store.read_objects(store.object_ids[::-1])
    else:  # to_dask reads point clouds only
        calls["dask"] = lambda: store.to_dask(PART).compute()
    for name, call in calls.items():
        try:
            out[name] = call()
        except zv.ZarrVectorsError as exc:
            out[name] = type(exc)
    return out


def _same(got: Any, want: Any) -> bool:
    """Whether two query results hold the same rows (in any order for point results)."""
    if isinstance(got, type) or isinstance(want, type):
        return False
    if got.offsets is None:
        columns = [got.positions, *(got.attributes[k] for k in sorted(got.attributes))]
        expected = [want.positions, *(want.attributes[k] for k in sorted(want.attributes))]
        if len(columns) != len(expected) or got.positions.shape != want.positions.shape:
            return False
        return bool(np.array_equal(sorted_rows(*columns), sorted_rows(*expected)))
    fields = ("positions", "offsets", "object_ids", "edges", "faces")
    for name in fields:
        a, b = getattr(got, name), getattr(want, name)
        if (a is None) != (b is None) or (a is not None and not np.array_equal(a, b)):
            return False
    return all(
        np.array_equal(got.attributes[k], want.attributes[k]) for k in want.attributes
    ) and sorted(got.attributes) == sorted(want.attributes)


def _check(path: Path, clean: dict[str, Any]) -> None:
    """Every read path raises our error or answers as the clean store; L3 reports it."""
    answers = _answers(zv.open(path))
    for name, got in answers.items():
        assert isinstance(got, type) or _same(got, clean[name]), name
        if isinstance(got, type):
            assert issubclass(got, zv.ZarrVectorsError), name
    report = zv.validate(path, level=3)
    assert "L3.chunk_place" in {p.check_id for p in report.errors}, report


def _damaged(kind: str, tmp_path: Path, shard_chunks: int | None = None) -> tuple[Path, dict]:
    clean_path = tmp_path / "clean.zarrvectors"
    store = (
        WRITERS[kind](clean_path)
        if shard_chunks is None
        else WRITERS[kind](clean_path, shard_chunks)
    )
    clean = _answers(store)
    assert not any(isinstance(v, type) for v in clean.values())
    path = tmp_path / "damaged.zarrvectors"
    shutil.copytree(clean_path, path)
    return path, clean


def _arrays(kind: str) -> list[str]:
    if kind == "points":
        return ["0/vertices", "0/attributes/a", "0/vertex_fragments"]
    arrays = ["0/vertices", "0/fragment_records", "0/links/0"]  # format 1.6 (spec §6.9)
    return arrays + (["0/attributes/fa"] if kind == "streamlines" else [])


CASES = [(kind, array) for kind in WRITERS for array in _arrays(kind)]


@pytest.mark.parametrize(("kind", "array"), CASES)
def test_swapped_shards_are_an_error_on_every_read_path(
    kind: str, array: str, tmp_path: Path
) -> None:
    path, clean = _damaged(kind, tmp_path)
    keys = _shards(path, array)
    assert len(keys) >= 2
    _swap(path, keys[0], keys[len(keys) // 2])
    _check(path, clean)


@pytest.mark.parametrize(("kind", "array"), CASES)
def test_a_shard_duplicated_over_another_is_an_error(kind: str, array: str, tmp_path: Path) -> None:
    path, clean = _damaged(kind, tmp_path)
    keys = _shards(path, array)
    _duplicate(path, keys[-1], keys[0])
    _check(path, clean)


@pytest.mark.parametrize("kind", list(WRITERS))
def test_a_shard_copied_to_an_empty_chunk_is_reported(kind: str, tmp_path: Path) -> None:
    """Readers never read an empty chunk's key (its count is 0), so every answer stays
    right; the validator reports the stray file with its place."""
    path, clean = _damaged(kind, tmp_path)
    _move_to_empty(path, _shards(path, "0/vertices")[0], "0/vertices")
    for name, got in _answers(zv.open(path)).items():
        assert _same(got, clean[name]), name
    report = zv.validate(path, level=3)
    assert "L3.chunk_place" in {p.check_id for p in report.errors}, report


@pytest.mark.parametrize("kind", ["points", "streamlines"])
def test_shards_of_another_array_are_an_error(kind: str, tmp_path: Path) -> None:
    """An attribute's shard copied over the vertices' of the same chunk (same row bytes
    would decode if the layouts agreed): the record names another array."""
    path, clean = _damaged(kind, tmp_path)
    attribute = "0/attributes/a" if kind == "points" else "0/attributes/fa"
    source = _shards(path, attribute)[0]
    target = source.replace(attribute, "0/vertices").rsplit("/", 1)[0] + "/0/0"
    assert (path / target).exists()
    _duplicate(path, source, target)
    _check(path, clean)


@pytest.mark.parametrize("kind", ["points", "streamlines"])
def test_swapped_shards_of_several_chunks_are_an_error(kind: str, tmp_path: Path) -> None:
    """Several spatial chunks per shard (spec §9.0.1): whole shards swapped."""
    path, clean = _damaged(kind, tmp_path, shard_chunks=2)
    keys = _shards(path, "0/vertices")
    assert len(keys) >= 2
    _swap(path, keys[0], keys[-1])
    _check(path, clean)


def test_an_untouched_store_validates_with_its_place_records(tmp_path: Path) -> None:
    path, _ = _damaged("streamlines", tmp_path)
    report = zv.validate(path, level=3)
    assert report.ok, report
    assert "L3.chunk_place" in report.checks_run


def test_a_store_of_format_1_1_is_read_without_records(tmp_path: Path) -> None:
    """Golden 1.1 stores (no records) read and validate; nothing checks their places."""
    golden = Path(__file__).parents[1] / "data" / "golden" / "1.1"
    store = zv.open(golden / "points_3d_sharded.zarrvectors")
    assert store.metadata["zarr_vectors_version"] == "1.1"
    assert store.read().positions.shape[0] > 0
    report = zv.validate(golden / "points_3d_sharded.zarrvectors", level=3)
    assert report.ok
    assert "L3.chunk_place" not in report.checks_run
    assert any("predates format 1.2" in note for note in report.notes)


def _append_below_origin(path: Path) -> None:
    """Append two points, one below the grid origin (every kept chunk moves to a new key)."""
    zv.append_points(
        path,
        np.array([[-5.0, -5.0, -5.0], [1.0, 1.0, 1.0]], np.float32),
        attributes={
            "intensity": np.array([0.5, 0.25], np.float32),
            "rgb": np.array([[1, 2, 3], [4, 5, 6]], np.uint8),
        },
    )


@pytest.mark.parametrize("version", ["1.0", "1.2"])
def test_an_append_that_moves_chunks_keeps_the_format_and_its_places(
    version: str, tmp_path: Path
) -> None:
    """Moved shards get the record of their new key (1.2); a 1.0 store stays 1.0, its
    shards without records (spec §3.3)."""
    golden = Path(__file__).parents[1] / "data" / "golden" / version
    path = tmp_path / "p.zarrvectors"
    shutil.copytree(golden / "points_3d_attributes.zarrvectors", path)
    before = zv.open(path).read()
    _append_below_origin(path)
    store = zv.open(path)
    assert store.metadata["zarr_vectors_version"] == version
    assert store.vertex_count == before.positions.shape[0] + 2
    report = zv.validate(path, level=3)
    assert report.ok, report
    keys = _shards(path, "0/vertices")
    data_type = json.loads((path / "0/vertices/zarr.json").read_bytes())["data_type"]
    holds = [place_record(key, data_type) in (path / key).read_bytes() for key in keys]
    assert all(holds) if version == "1.2" else not any(holds)
