"""Symbolic links and special files in a local store (issue 40, item 3; spec §12.3, §12.4).

Before: a chunk symlinked to a FIFO made ``read()`` and ``validate(level=3)`` block forever,
a loop of links raised a raw ``OSError`` (ELOOP), a link to a directory
``IsADirectoryError``, and ``append_points`` on a store whose ``0/attributes/a`` was a link
to a directory replaced the link with a directory holding only the rewritten chunks. Every
read and validation here runs under an alarm, so a hang fails the test instead of the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import LocalStore

import zarr_vectors as zv
from zarr_vectors.store.io import StoreIO, resolve_store
from zarr_vectors.store.links import LocalTree, scan

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX file types")

CHUNK = "0/vertices/c/0/0/0/0/0"
"""A shard key of the test store (chunk (0, 0, 0) holds rows)."""

_ALARM_SECONDS = 10


def _points(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n, 3)) * 100


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A point store of 8 chunks with a vertex attribute ``a``."""
    path = tmp_path_factory.mktemp("symlinks") / "source.zv"
    a = np.arange(2000, dtype=np.float64)
    zv.write_points(
        path,
        _points(2000, 0),
        chunk_shape=(50, 50, 50),
        attributes={"a": a},
        options=zv.WriteOptions(shard_chunks=1),  # a file per chunk
    )
    return path


@pytest.fixture
def store(source: Path, tmp_path: Path) -> Path:
    """A fresh copy of the source store (under ``tmp_path/s``, beside ``tmp_path/outside``)."""
    copy = tmp_path / "s" / "store.zv"
    shutil.copytree(source, copy)
    (tmp_path / "outside").mkdir()
    return copy


def _on_alarm(signum: int, frame: Any) -> None:
    raise TimeoutError("a read or a validation blocked (the alarm fired)")


@contextlib.contextmanager
def _alarm(fifos: list[Path]) -> Iterator[None]:
    """Fail instead of hanging; then release any reader blocked on one of ``fifos``."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(_ALARM_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        for fifo in fifos:  # a thread still blocked in open() gets a writer and returns
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def _replace(store: Path, key: str, make: Callable[[Path], None]) -> None:
    path = store / key
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    make(path)


def _link(target: str | Path) -> Callable[[Path], None]:
    return lambda path: os.symlink(target, path)


def _files(store: Path) -> dict[str, Any]:
    """Every entry of ``store``: link targets, file bytes, else its file type (to compare)."""
    out: dict[str, Any] = {}
    for directory, dirs, files in os.walk(store):
        for name in dirs + files:
            path = os.path.join(directory, name)
            key = os.path.relpath(path, store)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                out[key] = ("link", os.readlink(path))
            elif stat.S_ISREG(mode):
                out[key] = Path(path).read_bytes()
            else:
                out[key] = stat.S_IFMT(mode)
    return out


def _assert_refused(store: Path, key: str, match: str, check: str) -> None:
    """Reads raise FormatError naming ``key``; validation reports ``check`` at ``key``."""
    with pytest.raises(zv.FormatError, match=match) as raised:
        zv.open(store).read()
    assert key in str(raised.value)
    report = zv.validate(store, level=3)
    assert not report.ok
    assert (check, key) in {(p.check_id, p.path) for p in report.problems}


# -- readers and validation: each case -------------------------------------------------


def test_chunk_that_is_a_fifo_is_refused_not_waited_on(store: Path) -> None:
    fifo = store / CHUNK
    with _alarm([fifo]):
        _replace(store, CHUNK, os.mkfifo)
        _assert_refused(store, CHUNK, "FIFO", "L1.special_file")


def test_chunk_symlinked_to_a_fifo_is_refused_not_waited_on(store: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "outside" / "fifo"
    os.mkfifo(fifo)
    with _alarm([fifo]):
        _replace(store, CHUNK, _link(fifo))
        _assert_refused(store, CHUNK, "out of the store", "L1.symlink")


def test_chunk_symlinked_to_a_fifo_inside_the_store_is_refused(store: Path) -> None:
    fifo = store / "0" / "fifo"
    os.mkfifo(fifo)
    with _alarm([fifo]):
        _replace(store, CHUNK, _link(fifo))
        _assert_refused(store, CHUNK, "FIFO", "L1.symlink")


def test_zarr_json_that_is_a_fifo_is_refused_not_waited_on(store: Path) -> None:
    key = "0/vertices/zarr.json"
    with _alarm([store / key]):
        _replace(store, key, os.mkfifo)
        with pytest.raises(zv.FormatError, match="FIFO"):
            zv.open(store).read()
        report = zv.validate(store, level=3)
        assert ("L1.special_file", key) in {(p.check_id, p.path) for p in report.problems}


def test_chunk_that_is_a_socket_is_refused(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir((store / CHUNK).parent)  # a short name: socket paths have a length limit
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with _alarm([]):
            _replace(store, CHUNK, lambda path: sock.bind(path.name))
            _assert_refused(store, CHUNK, "socket", "L1.special_file")
    finally:
        sock.close()


def test_chunk_symlinked_to_a_device_is_refused(store: Path) -> None:
    """``/dev/zero`` is only linked to (never written): a link out of the store."""
    with _alarm([]):
        _replace(store, CHUNK, _link("/dev/zero"))
        _assert_refused(store, CHUNK, "out of the store", "L1.symlink")


def test_symlink_loop_is_a_format_error_not_eloop(store: Path) -> None:
    with _alarm([]):
        _replace(store, CHUNK, _link(CHUNK.rsplit("/", 1)[1]))
        _assert_refused(store, CHUNK, "loop", "L1.symlink")


def test_symlink_to_a_directory_where_a_file_belongs_is_a_format_error(
    store: Path, tmp_path: Path
) -> None:
    with _alarm([]):
        _replace(store, CHUNK, _link(tmp_path / "outside"))
        _assert_refused(store, CHUNK, "out of the store", "L1.symlink")


def test_directory_where_a_file_belongs_is_a_format_error(store: Path) -> None:
    with _alarm([]):
        _replace(store, CHUNK, os.mkdir)
        with pytest.raises(zv.FormatError, match="a directory"):
            zv.open(store).read()
        assert not zv.validate(store, level=3).ok


def test_symlink_to_a_directory_of_the_store_where_a_file_belongs_is_refused(store: Path) -> None:
    with _alarm([]):
        _replace(store, CHUNK, _link(store / "0"))
        with pytest.raises(zv.FormatError, match="a directory"):
            zv.open(store).read()
        assert not zv.validate(store, level=3).ok


def test_symlink_to_a_file_out_of_the_store_is_refused(store: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "chunk"
    shutil.copy(store / CHUNK, outside)
    with _alarm([]):
        _replace(store, CHUNK, _link(outside))
        _assert_refused(store, CHUNK, "out of the store", "L1.symlink")


def test_dangling_symlink_is_refused(store: Path) -> None:
    with _alarm([]):
        _replace(store, CHUNK, _link("nothing-here"))
        _assert_refused(store, CHUNK, "does not exist", "L1.symlink")


def test_array_directory_symlinked_out_of_the_store_is_refused(store: Path, tmp_path: Path) -> None:
    moved = tmp_path / "outside" / "a"
    shutil.move(store / "0/attributes/a", moved)
    os.symlink(moved, store / "0/attributes/a")
    with _alarm([]):
        _assert_refused(store, "0/attributes/a", "out of the store", "L1.symlink")


def test_directory_symlink_loop_ends_listing_and_validation(store: Path) -> None:
    os.symlink("..", store / "0/attributes/a/c/loop")
    with _alarm([]):
        report = zv.validate(store, level=3)
        assert ("L1.symlink", "0/attributes/a/c/loop") in {
            (p.check_id, p.path) for p in report.problems
        }
        with pytest.raises(zv.FormatError, match="loop"):
            StoreIO(resolve_store(store, mode="r")).list_prefix("0/attributes/")


COUNTS = "0/vertex_counts/c/0/0/0"
"""The chunk of ``vertex_counts``, a global array read through zarr-python."""


@pytest.mark.parametrize("as_store", [False, True], ids=["path", "LocalStore"])
def test_vertex_counts_chunk_that_is_a_fifo_is_refused_not_waited_on(
    store: Path, as_store: bool
) -> None:
    """zarr-python's LocalStore read the FIFO: global arrays are read through SafeLocalStore."""
    with _alarm([store / COUNTS]):
        _replace(store, COUNTS, os.mkfifo)
        with pytest.raises(zv.FormatError, match="FIFO"):
            zv.open(LocalStore(store) if as_store else store).read()
        report = zv.validate(LocalStore(store) if as_store else store, level=3)
        assert ("L1.special_file", COUNTS) in {(p.check_id, p.path) for p in report.problems}


def test_vertex_counts_chunk_that_is_a_directory_is_refused_not_read_as_fill(store: Path) -> None:
    """zarr-python took a directory for a missing chunk (fill values: no rows)."""
    with _alarm([]):
        _replace(store, COUNTS, os.mkdir)
        with pytest.raises(zv.FormatError, match="a directory"):
            zv.open(store).read()
        assert not zv.validate(store, level=3).ok


def test_object_index_chunk_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    mesh = tmp_path / "mesh.zv"
    zv.write_mesh(mesh, _points(30, 2), np.array([[0, 1, 2], [3, 4, 5]]))
    key = "0/object_index/data/c/0"
    with _alarm([mesh / key]):
        _replace(mesh, key, os.mkfifo)
        with pytest.raises(zv.FormatError, match="FIFO"):
            zv.open(mesh).read_objects([0])
        assert not zv.validate(mesh, level=3).ok


# -- links the rule allows -------------------------------------------------------------


def test_symlink_to_a_file_inside_the_store_is_read(store: Path, source: Path) -> None:
    shutil.move(store / CHUNK, store / "0" / "kept")
    os.symlink(os.path.relpath(store / "0" / "kept", (store / CHUNK).parent), store / CHUNK)
    with _alarm([]):
        got = zv.open(store).read()
        want = zv.open(source).read()
        np.testing.assert_array_equal(got.positions, want.positions)
        report = zv.validate(store, level=3)
        assert report.ok, report.problems


def test_store_path_that_is_a_symlink_is_read(store: Path, tmp_path: Path, source: Path) -> None:
    alias = tmp_path / "alias.zv"
    os.symlink(store, alias)
    with _alarm([]):
        np.testing.assert_array_equal(
            zv.open(alias).read().positions, zv.open(source).read().positions
        )
        assert zv.validate(alias, level=3).ok


# -- writers ---------------------------------------------------------------------------


def _link_array_inside(store: Path) -> None:
    """Move ``0/attributes/a`` to ``shared_a`` at the root and link it back."""
    shutil.move(store / "0/attributes/a", store / "shared_a")
    os.symlink("../../shared_a", store / "0/attributes/a")


def test_append_through_a_linked_array_writes_the_whole_array(store: Path, source: Path) -> None:
    """Before: the link became a directory holding only the rewritten chunks."""
    _link_array_inside(store)
    more = _points(100, 1) / 10  # all in chunk (0, 0, 0): the other chunks are not rewritten
    a = np.arange(2000, 2100, dtype=np.float64)
    with _alarm([]):
        zv.append_points(store, more, attributes={"a": a})
        got = zv.open(store).read()
    assert len(got) == 2100
    assert sorted(got.attributes["a"].tolist()) == list(range(2100))
    assert not (store / "0/attributes/a").is_symlink()
    assert zv.validate(store, level=3).ok


def test_append_to_a_store_linked_out_of_itself_is_refused_and_changes_nothing(
    store: Path, tmp_path: Path
) -> None:
    moved = tmp_path / "outside" / "a"
    shutil.move(store / "0/attributes/a", moved)
    os.symlink(moved, store / "0/attributes/a")
    before, outside = _files(store), _files(moved)
    with _alarm([]), pytest.raises(zv.FormatError, match="out of the store"):
        zv.append_points(store, _points(100, 1), attributes={"a": np.zeros(100)})
    assert _files(store) == before
    assert _files(moved) == outside
    assert sorted(os.listdir(store.parent)) == ["store.zv"]


def test_append_to_a_store_holding_a_fifo_is_refused_not_waited_on(store: Path) -> None:
    fifo = store / "0/attributes/a/c/0/0/1/0"
    with _alarm([fifo]):
        _replace(store, "0/attributes/a/c/0/0/1/0", os.mkfifo)
        before = _files(store)
        with pytest.raises(zv.FormatError, match="FIFO"):
            zv.append_points(store, _points(100, 1) / 10, attributes={"a": np.zeros(100)})
        assert _files(store) == before


# -- property: the validator's walk and the reader agree on every entry -------------------

_NAMES = ["a", "b", "c"]


@st.composite
def _trees(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """Entries ``(kind, path, target)`` of a small tree: dirs, files, links anywhere."""
    drawn = draw(st.lists(st.sampled_from(["a", "b", "a/c", "b/c"]), unique=True))
    dirs = sorted(d for d in ["", *drawn] if d.rpartition("/")[0] in ["", *drawn])
    entries = [("dir", d, "") for d in dirs if d]
    spots = draw(st.lists(st.tuples(st.sampled_from(dirs), st.sampled_from(_NAMES)), max_size=8))
    targets = [*dirs, "../outside", "missing", *(f"{d}/{n}".lstrip("/") for d, n in spots)]
    for directory, name in spots:
        path = f"{directory}/{name}".lstrip("/") + "_"
        if draw(st.booleans()):
            entries.append(("file", path, ""))
        else:
            entries.append(("link", path, draw(st.sampled_from(targets))))
    return entries


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(entries=_trees())
def test_reader_and_walk_agree_on_every_entry(tmp_path: Path, entries: list[Any]) -> None:
    """Every file the walk accepts reads; every entry it refuses, the reader refuses.

    Links point anywhere (inside, out of the store, nowhere, at their own directory), and
    the walk always ends.
    """
    root = Path(tempfile.mkdtemp(dir=tmp_path)) / "store"
    (root.parent / "outside").mkdir()
    root.mkdir()
    for kind, path, target in entries:
        if kind == "dir":
            (root / path).mkdir(exist_ok=True)
        elif not os.path.lexists(root / path):
            if kind == "file":
                (root / path).write_bytes(path.encode())
            else:
                os.symlink(os.path.relpath(root / target, (root / path).parent), root / path)
    tree = LocalTree(os.fspath(root))
    with _alarm([]):
        for key, problem in scan(os.fspath(root)):
            if problem is None:
                opened = tree.open(key)
                assert opened is not None, key
                os.close(opened[0])
            else:
                with pytest.raises(zv.FormatError):
                    LocalTree(os.fspath(root)).open(key)
