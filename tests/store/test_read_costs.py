"""What a read of a local store costs in file system calls, with every check kept (issue 35).

A store's files are opened without an ``lstat`` of each directory on the way where the
system can refuse a link in the open itself (Linux's ``openat2``); the check after every
data read compares the root ``zarr.json`` by one ``lstat`` when the file had settled before
the handle read it, and by its bytes otherwise. The link rule itself is
``tests/store/test_symlinks.py``; the version checks, ``tests/store/test_concurrency.py``.
"""

from __future__ import annotations

import enum
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.format import jsonutil, place
from zarr_vectors.read import read_checks
from zarr_vectors.store import io as io_module
from zarr_vectors.store import links, versions
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.links import LocalTree

POINTS = np.random.default_rng(3).uniform(0, 100, (600, 3))
BOX = ([0.0, 0.0, 0.0], [60.0, 60.0, 60.0])
CHUNK = "0/vertices/c/0/0/0/0/0"

needs_openat2 = pytest.mark.skipif(
    links._open_without_links.call is None, reason="Linux openat2 only"
)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("costs") / "source.zv"
    zv.write_points(path, POINTS, chunk_shape=(50, 50, 50), progress=False)
    return path


@pytest.fixture
def store(source: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "store.zv"
    shutil.copytree(source, copy)
    return copy


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every root ``zarr.json`` counts as settled when read (as one written long ago)."""
    monkeypatch.setattr(versions, "SETTLED_NS", -(10**18))


def _root_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every read of the root ``zarr.json`` through :class:`StoreIO`."""
    seen: list[str] = []
    real = StoreIO.get_many

    def counting(self: StoreIO, requests: list[tuple[str, object]]) -> list[bytes | None]:
        seen.extend(key for key, _ in requests if key == "zarr.json")
        return real(self, requests)  # type: ignore[arg-type]

    monkeypatch.setattr(StoreIO, "get_many", counting)
    return seen


# -- the link rule without an lstat per directory ---------------------------------------


@needs_openat2
def test_a_store_without_links_is_opened_without_checking_each_directory(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    real = LocalTree.check_directory

    def recording(self: LocalTree, rel: str) -> None:
        checked.append(rel)
        real(self, rel)

    monkeypatch.setattr(LocalTree, "check_directory", recording)
    tree = LocalTree(str(store))
    opened = tree.open(CHUNK)
    assert opened is not None
    os.close(opened[0])
    assert tree.open("0/vertices/c/9/9/9/0/0") is None
    assert checked == []


@needs_openat2
def test_a_store_path_through_a_link_is_opened_from_its_resolved_directory(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = tmp_path / "link.zv"
    os.symlink(store, link)
    monkeypatch.setattr(LocalTree, "check_directory", _refuse_directory_checks)
    tree = LocalTree(str(link))
    opened = tree.open(CHUNK)
    assert opened is not None
    os.close(opened[0])
    assert tree._prefix == os.path.realpath(store)


def _refuse_directory_checks(self: LocalTree, rel: str) -> None:
    raise AssertionError(f"directory {rel!r} checked one by one")


def test_a_directory_link_is_still_judged_when_the_open_meets_it(store: Path) -> None:
    (store / "elsewhere").mkdir()
    shutil.move(store / "0" / "vertices" / "c", store / "elsewhere" / "c")
    os.symlink(store.parent / "outside", store / "0" / "vertices" / "c")
    (store.parent / "outside").mkdir()
    with pytest.raises(zv.FormatError, match="symbolic link out of the store"):
        LocalTree(str(store)).open(CHUNK)


def test_a_file_of_a_checked_directory_is_still_judged_when_it_becomes_a_link(
    store: Path, tmp_path: Path
) -> None:
    tree = LocalTree(str(store))
    opened = tree.open(CHUNK)
    assert opened is not None
    os.close(opened[0])
    outside = tmp_path / "outside.bin"
    shutil.move(store / CHUNK, outside)
    os.symlink(outside, store / CHUNK)
    with pytest.raises(zv.FormatError, match="symbolic link out of the store"):
        tree.open(CHUNK)
    os.remove(store / CHUNK)
    os.mkfifo(store / CHUNK)
    with pytest.raises(zv.FormatError, match="FIFO"):
        tree.open(CHUNK)
    os.remove(store / CHUNK)
    assert tree.open(CHUNK) is None


def test_reads_are_the_same_without_openat2(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = zv.open(store).query(BOX).positions
    monkeypatch.setattr(links._open_without_links, "call", None)
    assert np.array_equal(zv.open(store).query(BOX).positions, expected)
    os.symlink("/dev/null", store / "0" / "vertices" / "zarr.json.link")
    os.replace(store / "0" / "vertices" / "zarr.json.link", store / CHUNK)
    with pytest.raises(zv.FormatError, match="symbolic link out of the store"):
        zv.open(store).read()


# -- the version check after a read -----------------------------------------------------


def test_a_settled_root_is_checked_by_lstat_not_read_again(
    store: Path, settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = zv.open(store)
    assert handle._version is not None
    assert handle._version.stamp is not None
    reads = _root_reads(monkeypatch)
    handle.query(BOX)
    handle.read()
    assert reads == []


def test_a_fresh_root_is_compared_by_its_bytes(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.utime(store / "zarr.json")  # changed just now: its ctime is too recent to vouch
    handle = zv.open(store)
    assert handle._version is not None
    assert handle._version.stamp is None
    reads = _root_reads(monkeypatch)
    handle.query(BOX)
    assert reads == ["zarr.json"]


def test_a_settled_root_edited_in_place_is_caught(store: Path, settled: None) -> None:
    handle = zv.open(store)
    root = store / "zarr.json"
    text = root.read_bytes()
    edited = text.replace(b"zarr_format", b"ZARR_FORMAT", 1)  # same size, other bytes
    assert edited != text
    assert len(edited) == len(text)
    with open(root, "r+b") as fh:
        fh.write(edited)
    before = os.stat(root)
    os.utime(root, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    with pytest.raises(zv.StoreChangedError):
        handle.query(BOX)


def test_a_settled_root_replaced_by_a_commit_is_caught(store: Path, settled: None) -> None:
    handle = zv.open(store)
    zv.append_points(store, POINTS[:10] + 1.0, progress=False)
    with pytest.raises(zv.StoreChangedError, match="open it again"):
        handle.query(BOX)


def test_a_root_replaced_by_a_link_is_judged_by_its_bytes(
    store: Path, settled: None, tmp_path: Path
) -> None:
    handle = zv.open(store)
    outside = tmp_path / "root.json"
    shutil.copy(store / "zarr.json", outside)
    os.remove(store / "zarr.json")
    os.symlink(outside, store / "zarr.json")
    with pytest.raises((zv.StoreChangedError, zv.FormatError)):
        handle.query(BOX)


def test_settled_stamp_needs_the_file_unchanged_for_the_settling_time() -> None:
    st = os.stat(__file__)
    assert versions.settled_stamp(st, st.st_ctime_ns + versions.SETTLED_NS) is None
    stamp = versions.settled_stamp(st, st.st_ctime_ns + versions.SETTLED_NS + 1)
    assert stamp == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def test_the_stamp_is_taken_from_the_file_read(store: Path, settled: None) -> None:
    raw, stamp = io_module._read_local_stamped(LocalTree(str(store)), "zarr.json")
    assert raw == (store / "zarr.json").read_bytes()
    assert stamp == versions.stamp_of(os.lstat(store / "zarr.json"))


# -- the cheaper forms of the checks give the same answers ----------------------------------


def test_data_type_name_is_the_dtypes_name() -> None:
    for name in ("float32", "float64", "int64", "uint8", "uint64"):
        assert place.data_type_name(np.dtype(name)) == name
    assert place.data_type_name(np.dtype("<f4")) == "float32"


def test_as_int_list_takes_integers_only() -> None:
    assert jsonutil.as_int_list([1, 2, 3]) == [1, 2, 3]
    assert jsonutil.as_int_list([1, True]) is None
    assert jsonutil.as_int_list([1, 2.0]) is None
    assert jsonutil.as_int_list((1, 2)) is None
    assert jsonutil.as_int_list([1, 2], length=3) is None
    assert jsonutil.as_int_list([], length=0) == []
    assert jsonutil.as_int_list([_Count.ONE, 2]) == [1, 2]  # an int subclass is an int
    assert jsonutil.as_int_list([2, np.int64(3)]) is None  # as before: not a Python int


class _Count(enum.IntEnum):
    ONE = 1


def test_stored_blocks_problem_names_the_first_block_too_many_in_either_form() -> None:
    missing = 2**64 - 1
    index = np.full((8, 2), missing, dtype=np.uint64)
    index[:3] = [[0, 8], [8, 8], [16, 8]]
    for entries in (index, index.tolist()):
        assert read_checks.stored_blocks_problem(entries, 12, 4) is None  # blocks 0-2
        assert read_checks.stored_blocks_problem(entries, 9, 4) is None
        problem = read_checks.stored_blocks_problem(entries, 8, 4)
        assert problem is not None
        assert problem.startswith("stores row block 2, but its 8 rows need only blocks 0 to 1")
    assert read_checks.stored_blocks_problem(index, 32, 4) is None  # every block needed


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_stored_blocks_problem_array_and_list_forms_agree_with_a_plain_loop(
    data: st.DataObject,
) -> None:
    """The array form (one bytes comparison) and the list form (no Python frame per
    entry) say a problem exactly when a plain loop finds an offset stored past the blocks
    the rows need, in any pattern of stored and missing blocks."""
    missing = 2**64 - 1
    n_blocks = data.draw(st.integers(1, 8))
    stored = data.draw(st.lists(st.booleans(), min_size=n_blocks, max_size=n_blocks))
    index = np.full((n_blocks, 2), missing, dtype=np.uint64)
    for b, here in enumerate(stored):
        if here:
            index[b] = [8 * b, 8]
    rows = data.draw(st.integers(0, 4 * n_blocks + 4))
    needed = -(-rows // 4)
    loop = [b for b in range(needed, n_blocks) if int(index[b, 0]) != missing]
    for entries in (index, index.tolist(), [tuple(e) for e in index]):
        problem = read_checks.stored_blocks_problem(entries, rows, 4)
        assert (problem is None) == (not loop)
        if loop:
            assert problem is not None
            assert problem.startswith(f"stores row block {loop[0]},")
