"""Object storage: s3:// URLs, storage options, the s3 extra, and S3's key listing.

Everything runs against the loopback S3 server of ``tests/conftest.py``; the round trips,
queries and validation of every geometry kind on S3 are in ``tests/test_backends.py``.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from zarr.storage import FsspecStore, MemoryStore

import zarr_vectors as zv
from tests.s3server import LoopbackS3
from zarr_vectors.cli import main
from zarr_vectors.errors import InvalidInputError, MissingDependencyError, StoreExistsError
from zarr_vectors.store.io import StoreIO, resolve_store

POINTS = np.random.default_rng(0).uniform(0, 40, (200, 3))

KEYS = ["a/c/0", "a/c/1", "a/c/10", "a/zarr.json", "ab/c/0", "b/x/y/z", "zarr.json"]


@pytest.fixture
def listed(s3: LoopbackS3) -> tuple[StoreIO, StoreIO]:
    """The same keys in a store on S3 and in a MemoryStore."""
    remote = StoreIO(resolve_store(f"s3://{s3.fresh_prefix()}/keys", mode="w"))
    memory = StoreIO(MemoryStore())
    for io in (remote, memory):
        io.set_many([(key, key.encode()) for key in KEYS])
    return remote, memory


@pytest.mark.parametrize("prefix", ["", "a/", "a/c/", "b/", "b/x/y/", "zz/"])
def test_listing_keys_on_s3_matches_a_memory_store(
    listed: tuple[StoreIO, StoreIO], prefix: str
) -> None:
    remote, memory = listed
    assert remote.list_prefix(prefix) == memory.list_prefix(prefix)
    assert remote.list_prefix(prefix) == sorted(k for k in KEYS if k.startswith(prefix))


@pytest.mark.parametrize("prefix", ["", "a", "a/c", "b", "b/x", "zz"])
def test_listing_children_on_s3_matches_a_memory_store(
    listed: tuple[StoreIO, StoreIO], prefix: str
) -> None:
    """S3 has no directories: a "directory" is a common key prefix, listed the same way."""
    remote, memory = listed
    assert remote.list_dir(prefix) == memory.list_dir(prefix)


def test_reading_deleting_and_clearing_on_s3(listed: tuple[StoreIO, StoreIO]) -> None:
    remote, _ = listed
    assert remote.get_many([("a/c/1", None), ("a/c/10", (1, 3)), ("zarr.json", -4)]) == [
        b"a/c/1",
        b"/c",
        b"json",
    ]
    assert remote.get("missing") is None
    remote.delete_many(["a/c/0", "a/c/1", "not-there"])
    assert remote.list_prefix("a/") == ["a/c/10", "a/zarr.json"]
    assert not remote.is_empty()
    remote.clear()
    assert remote.is_empty()
    assert remote.list_prefix("") == []


def test_a_fresh_prefix_is_empty(s3: LoopbackS3) -> None:
    io = StoreIO(resolve_store(f"s3://{s3.fresh_prefix()}/nothing", mode="r"))
    assert io.is_empty()
    assert io.list_dir("") == []
    assert io.get("zarr.json") is None


def test_urls_open_as_fsspec_stores(s3: LoopbackS3) -> None:
    url = f"s3://{s3.fresh_prefix()}/cloud"
    writable, readable = resolve_store(url, mode="w"), resolve_store(url, mode="r")
    assert isinstance(writable, FsspecStore)
    assert isinstance(readable, FsspecStore)
    assert not writable.read_only
    assert readable.read_only


def test_explicit_storage_options_need_no_environment(
    s3: LoopbackS3, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID"):
        monkeypatch.delenv(name)
    url = f"s3://{s3.fresh_prefix()}/explicit"
    options = s3.storage_options()
    zv.write_points(FsspecStore.from_url(url, storage_options=options), POINTS, chunk_shape=20.0)
    store = zv.open(url, storage_options=options)
    assert store.vertex_count == len(POINTS)
    np.testing.assert_array_equal(np.sort(store.read().positions, axis=0), np.sort(POINTS, axis=0))


def test_an_occupied_url_needs_overwrite(s3: LoopbackS3) -> None:
    url = f"s3://{s3.fresh_prefix()}/occupied"
    zv.write_points(url, POINTS, chunk_shape=20.0)
    with pytest.raises(StoreExistsError, match='mode="w"'):
        zv.PointWriter(url, chunk_shape=20.0)  # refused before any batch is taken
    with pytest.raises(StoreExistsError, match='mode="w"'):
        zv.write_points(url, POINTS[:10], chunk_shape=20.0)
    assert zv.open(url).vertex_count == len(POINTS)


def test_an_overwrite_removes_every_old_key(s3: LoopbackS3) -> None:
    url = f"s3://{s3.fresh_prefix()}/replaced"
    zv.write_points(url, POINTS, chunk_shape=5.0, attributes={"old": POINTS[:, 0]})
    zv.write_points(url, POINTS, chunk_shape=20.0, mode="w")
    reference = MemoryStore()
    zv.write_points(reference, POINTS, chunk_shape=20.0)
    keys = StoreIO(resolve_store(url, mode="r")).list_prefix("")
    assert keys == StoreIO(reference).list_prefix("")


def test_an_overwrite_refuses_keys_that_are_not_a_store(s3: LoopbackS3) -> None:
    url = f"s3://{s3.fresh_prefix()}/other"
    StoreIO(resolve_store(url, mode="w")).set_many([(key, b"old") for key in KEYS])
    with pytest.raises(StoreExistsError, match="not a Zarr Vectors store"):
        zv.write_points(url, POINTS, chunk_shape=20.0, mode="w")
    assert StoreIO(resolve_store(url, mode="r")).list_prefix("") == KEYS


def test_storage_options_are_for_urls_only(tmp_path: object) -> None:
    with pytest.raises(InvalidInputError, match="storage_options"):
        zv.open(str(tmp_path), storage_options={"anon": True})
    with pytest.raises(InvalidInputError, match="storage_options"):
        resolve_store(MemoryStore(), mode="r", storage_options={})


def test_an_unknown_protocol_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="nosuchprotocol"):
        zv.open("nosuchprotocol://bucket/key")


def test_without_s3fs_urls_name_the_s3_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "s3fs", None)  # import s3fs now raises ImportError
    with pytest.raises(MissingDependencyError, match=r"zarr-vectors\[s3\]"):
        zv.open("s3://bucket/cells.zarrvectors")
    with pytest.raises(MissingDependencyError, match=r"zarr-vectors\[s3\]"):
        zv.write_points("s3://bucket/cells.zarrvectors", POINTS)
    with pytest.raises(MissingDependencyError, match=r"zarr-vectors\[s3\]"):
        zv.validate("s3://bucket/cells.zarrvectors")


def test_cli_without_s3fs_fails_cleanly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "s3fs", None)
    for command in ("info", "validate"):
        assert main([command, "s3://bucket/cells.zarrvectors"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("zarr-vectors: error:")
        assert "zarr-vectors[s3]" in err
        assert "Traceback" not in err


def test_cli_info_and_validate_on_s3(s3: LoopbackS3, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"s3://{s3.fresh_prefix()}/cli"
    zv.write_points(url, POINTS, chunk_shape=20.0)
    assert main(["info", url, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["vertex_count"] == len(POINTS)
    assert info["geometry_type"] == "point_cloud"
    assert main(["validate", url, "--level", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_cli_on_an_empty_prefix_reports_an_unreadable_store(
    s3: LoopbackS3, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"s3://{s3.fresh_prefix()}/absent"
    assert main(["info", url]) == 2
    assert "not a Zarr store" in capsys.readouterr().err
    assert main(["validate", url]) == 2
    assert "not a readable store" in capsys.readouterr().err
