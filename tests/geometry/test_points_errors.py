"""Bad input gets a clear error before anything is written; existing stores stay untouched."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.helpers import write_layout_v_store
from zarr_vectors.errors import InvalidInputError, InvalidNameError
from zarr_vectors.write import _level_writer

GOOD = np.random.default_rng(3).uniform(0, 100, (500, 3)).astype(np.float32)


def _snapshot(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    (
        "nan",
        {"positions": np.where(np.arange(1500).reshape(500, 3) == 700, np.nan, GOOD)},
        "NaN or infinite",
    ),
    ("inf", {"positions": np.where(np.arange(1500).reshape(500, 3) == 3, np.inf, GOOD)}, "row 1"),
    ("rank", {"positions": GOOD.ravel()}, "shape (n, D)"),
    ("dims", {"positions": np.zeros((5, 5))}, "D = 2, 3 or 4"),
    ("dtype", {"positions": GOOD.astype(object)}, "numbers"),
    ("complex", {"positions": GOOD.astype(np.complex64)}, "numbers"),
    ("big_ints", {"positions": np.full((3, 3), 2**30, dtype=np.int64)}, "float64"),
    ("attr_len", {"attributes": {"a": np.zeros(499)}}, "shape (500,)"),
    ("attr_dtype", {"attributes": {"a": np.array(["x"] * 500)}}, "numeric"),
    ("attr_rank", {"attributes": {"a": np.zeros((500, 2, 2))}}, "shape (500,)"),
    ("ids_float", {"object_ids": np.zeros(500)}, "integers"),
    ("ids_len", {"object_ids": np.zeros(3, np.int64)}, "shape (500,)"),
    ("chunk_zero", {"chunk_shape": 0.0}, "positive"),
    ("chunk_neg", {"chunk_shape": [10.0, -1.0, 10.0]}, "positive"),
    ("chunk_nan", {"chunk_shape": np.nan}, "positive finite"),
    ("chunk_len", {"chunk_shape": [10.0, 10.0]}, "3 positive"),
    ("bin_zero", {"bin_shape": 0.0}, "positive"),
    ("bin_divides", {"chunk_shape": 10.0, "bin_shape": 3.0}, "does not divide"),
    ("bin_bigger", {"chunk_shape": 10.0, "bin_shape": 20.0}, "does not divide"),
    ("rows_per_block", {"options": zv.WriteOptions(rows_per_block=0)}, "rows_per_block"),
    ("axis_names", {"options": zv.WriteOptions(axis_names=("x", "y"))}, "3 entries"),
]


@pytest.mark.parametrize(
    ("kwargs", "match"), [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS]
)
def test_bad_input_is_rejected_before_writing(
    kwargs: dict[str, Any], match: str, tmp_path: Path
) -> None:
    args: dict[str, Any] = {"positions": GOOD, "chunk_shape": 25.0} | kwargs
    target = tmp_path / "new.zarrvectors"
    with pytest.raises(InvalidInputError, match=re.escape(match)):
        zv.write_points(target, **args)
    assert not target.exists()


@pytest.mark.parametrize(
    "name",
    [
        "bad name",
        "../escape",
        "/abs",
        "a/b",
        "1abc",
        "class",
        "zv_reserved",
        "x" * 256,
        "",
        "naïve",
        "object_id",
    ],
)
def test_unsafe_or_reserved_attribute_names(name: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        zv.write_points(tmp_path / "s", GOOD, attributes={name: np.zeros(500)})
    assert not (tmp_path / "s").exists()


def test_name_error_is_specific() -> None:
    with pytest.raises(InvalidNameError, match="not allowed"):
        zv.write_points(MemoryStore(), GOOD, attributes={"a-b": np.zeros(500)})


def test_errors_are_builtin_subclasses() -> None:
    with pytest.raises(ValueError):  # noqa: PT011  (the point is the builtin base class)
        zv.write_points(MemoryStore(), GOOD[:, :1])
    with pytest.raises(FileNotFoundError):
        zv.open("/nonexistent/zarr-vectors/store")


def test_existing_store_needs_overwrite_and_stays_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.zarrvectors"
    zv.write_points(path, GOOD, chunk_shape=25.0)
    before = _snapshot(path)
    with pytest.raises(zv.StoreExistsError, match='mode="w"'):
        zv.write_points(path, GOOD * 2, chunk_shape=25.0)
    with pytest.raises(FileExistsError):
        zv.write_points(path, GOOD * 2, chunk_shape=25.0)
    assert _snapshot(path) == before
    zv.write_points(path, GOOD[:10], chunk_shape=25.0, mode="w")
    assert zv.open(path).vertex_count == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarrvectors"]


def test_memory_store_needs_overwrite() -> None:
    store = MemoryStore()
    zv.write_points(store, GOOD, chunk_shape=25.0)
    with pytest.raises(zv.StoreExistsError):
        zv.write_points(store, GOOD, chunk_shape=25.0)
    zv.write_points(store, GOOD[:7], chunk_shape=25.0, mode="w")
    assert zv.open(store).vertex_count == 7


def test_failed_overwrite_leaves_existing_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.zarrvectors"
    zv.write_points(path, GOOD, chunk_shape=25.0, attributes={"a": np.arange(500)})
    before = _snapshot(path)
    original: Callable[..., Any] = _level_writer.LevelWriter.finish

    def explode(*args: Any, **kwargs: Any) -> None:
        original(*args, **kwargs)
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(_level_writer.LevelWriter, "finish", explode)
    with pytest.raises(OSError, match="simulated"):
        zv.write_points(path, GOOD[:50], chunk_shape=25.0, mode="w")
    assert _snapshot(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarrvectors"]
    assert zv.open(path).vertex_count == 500


def test_failed_first_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: Any, **kwargs: Any) -> None:
        raise OSError("simulated")

    for name in ("add_chunk", "add_chunks"):  # one chunk at a time, or a batch of them
        monkeypatch.setattr(_level_writer.LevelWriter, name, explode)
    with pytest.raises(OSError, match="simulated"):
        zv.write_points(tmp_path / "s", GOOD, chunk_shape=25.0)
    assert not (tmp_path / "s").exists()


def test_open_rejects_non_zvf_incomplete_and_newer_stores(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "zarr.json").write_text(
        json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}})
    )
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="zarr_vectors_version"):
        zv.open(plain)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="not a Zarr store"):
        zv.open(empty)
    path = tmp_path / "s"
    zv.write_points(path, GOOD, chunk_shape=25.0)
    doc = json.loads((path / "zarr.json").read_text())
    del doc["attributes"]["zarr_vectors_version"]
    (path / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="interrupted write"):
        zv.open(path)
    for version in ("2.0", "1.8"):
        doc["attributes"]["zarr_vectors_version"] = version
        (path / "zarr.json").write_text(json.dumps(doc))
        with pytest.raises(zv.UnsupportedVersionError, match=version):
            zv.open(path)
    doc["attributes"]["zarr_vectors_version"] = "one"
    (path / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(zv.FormatError, match=r"MAJOR\.MINOR"):
        zv.open(path)


@pytest.mark.parametrize(
    "bbox",
    [([0, 0], [1, 1]), ([0, 0, 0], [1, 1, np.nan]), ([5, 0, 0], [1, 1, 1]), "box", [[0, 0, 0]]],
)
def test_bad_boxes(bbox: Any) -> None:
    store = MemoryStore()
    zv.write_points(store, GOOD, chunk_shape=25.0)
    with pytest.raises(InvalidInputError):
        zv.open(store).query(bbox)


def test_box_edge_cases() -> None:
    store_ = MemoryStore()
    zv.write_points(store_, GOOD, chunk_shape=25.0)
    store = zv.open(store_)
    assert len(store.query(([10, 10, 10], [10, 50, 50]))) == 0  # lo == hi: empty
    assert len(store.query(([-np.inf] * 3, [np.inf] * 3))) == 500
    assert len(store.query(([1e300] * 3, [np.inf] * 3))) == 0
    assert len(store.query(([-1e300] * 3, [-1e299] * 3))) == 0


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[1, 2]", b'"text"'])
def test_open_with_damaged_root_document_raises_our_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "s"
    zv.write_points(path, GOOD, chunk_shape=25.0)
    (path / "zarr.json").write_bytes(content)
    with pytest.raises(zv.ZarrVectorsError):
        zv.open(path)


def test_a_zarr_vectors_09_store_is_unsupported_not_an_interrupted_write(tmp_path: Path) -> None:
    path = write_layout_v_store(tmp_path / "v09.zv")
    with pytest.raises(zv.UnsupportedVersionError) as info:
        zv.open(path)
    message = str(info.value)
    assert "zarr-vectors 0.9.x" in message
    assert "layout V" in message
    assert "zv.convert(src, dst)" in message
    assert "interrupted" not in message


def test_a_killed_fresh_write_says_interrupted_write_and_how_to_clear_it(tmp_path: Path) -> None:
    path = tmp_path / "s"
    zv.write_points(path, GOOD, chunk_shape=25.0)
    (path / "zarr.json").unlink()  # a fresh write killed before its root metadata
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="interrupted write") as info:
        zv.open(path)
    assert 'mode="w"' in str(info.value)
    assert "remove it" in str(info.value)
    zv.write_points(path, GOOD, chunk_shape=25.0, mode="w")
    assert zv.open(path).vertex_count == len(GOOD)


def test_a_root_without_version_over_level_data_says_how_to_clear_it(tmp_path: Path) -> None:
    path = tmp_path / "s"
    zv.write_points(path, GOOD, chunk_shape=25.0)
    doc = json.loads((path / "zarr.json").read_text())
    del doc["attributes"]["zarr_vectors_version"]
    (path / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(zv.NotAZarrVectorsStoreError, match=r'interrupted write.*mode="w"'):
        zv.open(path)


@pytest.mark.parametrize("inner", ["0", "0/vertices", "0/vertex_counts"])
def test_opening_a_node_inside_a_store_names_the_store_not_an_interrupted_write(
    tmp_path: Path, inner: str
) -> None:
    path = tmp_path / "cells.zv"
    zv.write_points(path, GOOD, chunk_shape=25.0)
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="inside the Zarr Vectors store") as info:
        zv.open(path / inner)
    assert "interrupted" not in str(info.value)
    assert f"zv.open({str(path)!r})" in str(info.value)


def test_a_broken_zarr_json_above_the_path_does_not_hide_why_it_does_not_open(
    tmp_path: Path,
) -> None:
    (tmp_path / "zarr.json").write_text("{not json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="not a Zarr store"):
        zv.open(empty)
