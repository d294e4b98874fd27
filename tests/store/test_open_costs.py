"""What opening a local store and its first query cost in file opens (issue 39, item 2).

Inside a data read of a handle each data file of a local store is opened once, however
many times the read asks for it (a shard's index, then its blocks), and every descriptor is
closed when the read ends; the metadata of a level is not looked for under a group its
listing lacks. The link rule itself is ``tests/store/test_symlinks.py``.
"""

from __future__ import annotations

import collections
import json
import os
import pickle
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.errors import MetadataError
from zarr_vectors.store import io as io_module
from zarr_vectors.store.io import StoreIO, _absent, _parse_json
from zarr_vectors.store.links import LocalTree

RNG = np.random.default_rng(5)
PARENTS = np.concatenate([[-1], np.arange(399)])
POSITIONS = np.cumsum(RNG.normal(0.0, 1.5, (400, 3)), axis=0) + 50.0
BOX = ([40.0, 40.0, 40.0], [60.0, 60.0, 60.0])


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("open_costs") / "tree.zv"
    zv.write_skeletons(path, POSITIONS, parents=PARENTS, chunk_shape=20.0, progress=False)
    return path


@pytest.fixture
def store(source: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "store.zv"
    shutil.copytree(source, copy)
    return copy


def _opens(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """Count the files :class:`LocalTree` opens, by key."""
    seen: collections.Counter[str] = collections.Counter()
    real = LocalTree.open_now

    def counting(self: LocalTree, key: str) -> tuple[int, int] | None:
        seen[key] += 1
        return real(self, key)

    monkeypatch.setattr(LocalTree, "open_now", counting)
    return seen


def _descriptors(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int]]:
    """The descriptors :class:`LocalTree` opens, and those of them closed since."""
    opened: list[int] = []
    closed: list[int] = []
    live: set[int] = set()
    real_open, real_close = LocalTree.open_now, os.close

    def opening(self: LocalTree, key: str) -> tuple[int, int] | None:
        found = real_open(self, key)
        if found is not None:
            opened.append(found[0])
            live.add(found[0])
        return found

    def closing(fd: int) -> None:
        if fd in live:
            live.remove(fd)
            closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(LocalTree, "open_now", opening)
    monkeypatch.setattr(os, "close", closing)
    return opened, closed


def test_a_query_opens_each_data_file_once_and_closes_them_all(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = zv.open(store).query(BOX)
    handle = zv.open(store)
    opened, closed = _descriptors(monkeypatch)
    seen = _opens(monkeypatch)
    found = handle.query(BOX)
    monkeypatch.undo()
    assert np.array_equal(found.positions, expected.positions)
    assert opened
    assert sorted(closed) == sorted(opened)  # each descriptor closed once, none left open
    tree = handle._io._tree()
    assert tree is not None
    assert not tree._kept
    shards = {k: n for k, n in seen.items() if "/c/" in k}
    assert shards
    assert set(shards.values()) == {1}


def test_without_the_scope_every_read_opens_its_file(store: Path) -> None:
    io = StoreIO(zv.open(store)._io.store)
    key = "0/vertex_counts/c/0/0/0"
    assert io.get(key) == io.get(key) is not None
    tree = io._tree()
    assert tree is not None
    assert not tree._kept


def test_files_kept_are_this_threads_and_closed_at_the_outermost_end(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = LocalTree(str(store))
    key = "0/vertices/c/0/0/0/0/0"
    opened, closed = _descriptors(monkeypatch)
    with tree.keeping():
        first = tree.open(key)
        assert first is not None
        tree.release(key, first[0])
        with tree.keeping():  # nested: the same files
            assert tree.open(key) == first
        assert tree.open(key) == first
        other: list[tuple[int, int] | None] = []
        worker = threading.Thread(target=lambda: other.append(tree.open(key)))
        worker.start()
        worker.join()
        assert other[0] is not None
        assert other[0][0] != first[0]  # its own descriptor
        tree.release(key, other[0][0])  # not kept by that thread: closed
        assert closed == [other[0][0]]
    assert sorted(closed) == sorted(opened)
    assert not tree._kept


def test_json_documents_are_never_kept(store: Path) -> None:
    tree = LocalTree(str(store))
    with tree.keeping():
        opened = tree.open("0/zarr.json")
        assert opened is not None
        tree.release("0/zarr.json", opened[0])
        assert tree._kept[threading.get_ident()] == {}


def test_a_changed_root_is_still_caught_after_a_query(store: Path) -> None:
    handle = zv.open(store)
    handle.query(BOX)
    doc = json.loads((store / "zarr.json").read_bytes())
    doc["attributes"]["commit"] = "edited"
    (store / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(zv.StoreChangedError):
        handle.query(BOX)


def test_a_handle_pickled_inside_a_read_carries_no_descriptor(store: Path) -> None:
    io = zv.open(store)._io
    tree = io._tree()
    assert tree is not None
    with io.files_kept():
        io.get("0/vertex_counts/c/0/0/0")
        copy = pickle.loads(pickle.dumps(io))
    assert copy._tree()._kept == {}
    assert copy.get("0/vertex_counts/c/0/0/0") == io.get("0/vertex_counts/c/0/0/0")


# -- metadata under a group its listing lacks ---------------------------------------------


def test_metadata_under_an_unlisted_group_is_not_looked_for(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _opens(monkeypatch)
    io = StoreIO(zv.open(store)._io.store)
    keys = ["0/zarr.json", "0/groupings/zarr.json", "0/vertices/zarr.json"]
    docs, listings = io.read_metadata(keys, ["0", "0/link_attributes"])
    assert docs[1] is None
    assert None not in (docs[0], docs[2])
    assert listings[1] == []
    assert "vertices" in listings[0]
    assert "0/groupings/zarr.json" not in seen
    assert io.read_metadata(keys[1:2])[0] == [None]
    assert seen["0/groupings/zarr.json"] == 1  # without a listing: looked for


def test_absent_follows_every_listed_directory_on_the_way() -> None:
    listed = {"0": ["attributes", "vertices"], "0/attributes": ["radius"]}
    assert _absent("0/attributes/width/zarr.json", listed)
    assert not _absent("0/attributes/radius/zarr.json", listed)
    assert _absent("0/links/0/zarr.json", listed)
    assert not _absent("1/links/zarr.json", listed)
    assert not _absent("zarr.json", listed)
    assert _absent("0/zarr.json", listed)


# -- JSON documents ---------------------------------------------------------------------


def test_json_is_parsed_as_before_in_every_encoding_json_reads() -> None:
    doc = {"a": [1, 2.5, "é"], "b": None}
    for raw in (
        json.dumps(doc).encode(),
        json.dumps(doc, ensure_ascii=False).encode(),
        b"\xef\xbb\xbf" + json.dumps(doc).encode(),  # a UTF-8 byte order mark
        json.dumps(doc).encode("utf-16"),
        json.dumps(doc).encode("utf-32-le"),
    ):
        assert _parse_json("k", raw) == json.loads(raw) == doc
    for bad in (b"{", b"\xff\xfe{", b"\x00{}", b'{"a": NaN'):
        with pytest.raises(MetadataError, match="not valid JSON"):
            _parse_json("k", bad)
    assert _parse_json("k", None) is None
    assert io_module._parse_json is _parse_json


def test_a_listing_counts_its_directories_as_checked_but_not_its_links(
    store: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "zarr.json").write_text("{}")
    os.symlink(outside, store / "0" / "elsewhere")
    io = StoreIO(zv.open(store)._io.store)
    tree = io._tree()
    assert tree is not None
    names = io.list_dir("0")
    assert "elsewhere" in names
    assert "vertices" in names
    assert "0/vertices" in tree._checked
    assert "0/elsewhere" not in tree._checked
    with pytest.raises(zv.FormatError, match="symbolic link out of the store"):
        io.get("0/elsewhere/zarr.json")
    assert io.list_dir("0/missing") == []
    assert "0/missing" not in tree._checked
