"""Issue 34, findings 1 and 5: a write replaces only a Zarr Vectors store or an empty directory.

Every public write path, with ``overwrite=True``, refuses a directory holding other files, a
file, a plain Zarr hierarchy, a symbolic link (to a directory, to a store, dangling), and
``.`` / ``..``, with :class:`StoreExistsError`, and leaves the thing exactly as it was.
``overwrite`` takes only a bool. A user's ``ZipStore`` object is written through and its
``close()`` works afterwards.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import LocalStore, MemoryStore, ZipStore

import zarr_vectors as zv
from zarr_vectors.store.destination import Occupant, store_occupant
from zarr_vectors.store.io import StoreIO

POINTS = np.random.default_rng(4).uniform(0, 10, (200, 3))
LINES = [np.cumsum(np.random.default_rng(k).normal(0, 1, (12, 3)), axis=0) for k in range(5)]
TRIANGLE = (np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))

Writer = Callable[..., Any]
"""A write to a destination; the parallel ones also take ``scheduler_address=``."""


def _stream(dest: Path | str) -> None:
    zv.write_points_stream(dest, [POINTS[:100], POINTS[100:]], chunk_shape=5.0, mode="w")


def _point_writer(dest: Path | str) -> None:
    with zv.PointWriter(dest, chunk_shape=5.0, mode="w") as writer:
        writer.append(POINTS)


def _object_writer(dest: Path | str) -> None:
    with zv.ObjectWriter(dest, kind="polyline", chunk_shape=5.0, mode="w") as writer:
        writer.append(LINES)


_SOURCES: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def csv_source(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A CSV file of points for the converter, outside the directories the tests compare."""
    source = tmp_path_factory.mktemp("source") / "cloud.csv"
    zv.write_points(source.with_suffix(".zv"), POINTS, chunk_shape=5.0)
    zv.convert(source.with_suffix(".zv"), source)
    _SOURCES[:] = [source]


def _convert(dest: Path | str) -> None:
    zv.convert(_SOURCES[0], dest, mode="w")


WRITERS: dict[str, Writer] = {
    "write_points": lambda d: zv.write_points(d, POINTS, chunk_shape=5.0, mode="w"),
    "write_polylines": lambda d: zv.write_polylines(d, LINES, chunk_shape=5.0, mode="w"),
    "write_mesh": lambda d: zv.write_mesh(d, *TRIANGLE, chunk_shape=5.0, mode="w"),
    "write_points_stream": _stream,
    "PointWriter": _point_writer,
    "ObjectWriter": _object_writer,
    "write_points_parallel": lambda d, **cluster: zv.write_points_parallel(
        d, [POINTS], chunk_shape=5.0, mode="w", **cluster
    ),
    "write_objects_parallel": lambda d, **cluster: zv.write_objects_parallel(
        d, "polyline", [LINES], chunk_shape=5.0, mode="w", **cluster
    ),
    "convert": _convert,
}


def _snapshot(root: Path) -> dict[str, Any]:
    """Every entry under ``root`` (a link's target, a file's bytes), to compare before/after."""
    seen: dict[str, Any] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory) / name
            rel = os.fspath(path.relative_to(root))
            if path.is_symlink():
                seen[rel] = ("link", os.readlink(path))
            elif path.is_file():
                seen[rel] = ("file", path.read_bytes())
            else:
                seen[rel] = ("dir", None)
    return seen


def _occupied_dir(tmp: Path) -> Path:
    (tmp / "mydata").mkdir()
    (tmp / "mydata" / "notes.txt").write_text("my notes")
    (tmp / "mydata" / "sub").mkdir()
    (tmp / "mydata" / "sub" / "a.bin").write_bytes(b"\x00\x01")
    return tmp / "mydata"


def _file(tmp: Path) -> Path:
    np.save(tmp / "cloud.npy", POINTS)
    return tmp / "cloud.npy"


def _plain_zarr(tmp: Path) -> Path:
    group = zarr.open_group(tmp / "plain.zarr", mode="w")
    group.create_array("x", shape=(4,), dtype="f4")[:] = 1.0
    return tmp / "plain.zarr"


def _link_to_dir(tmp: Path) -> Path:
    os.symlink(_occupied_dir(tmp), tmp / "link")
    return tmp / "link"


def _link_to_store(tmp: Path) -> Path:
    zv.write_points(tmp / "real.zv", POINTS, chunk_shape=5.0)
    os.symlink(tmp / "real.zv", tmp / "link")
    return tmp / "link"


def _link_to_empty_dir(tmp: Path) -> Path:
    (tmp / "empty").mkdir()
    os.symlink(tmp / "empty", tmp / "link")
    return tmp / "link"


def _dangling_link(tmp: Path) -> Path:
    os.symlink(tmp / "nowhere", tmp / "link")
    return tmp / "link"


OCCUPANTS: dict[str, Callable[[Path], Path]] = {
    "directory_with_files": _occupied_dir,
    "file": _file,
    "plain_zarr_group": _plain_zarr,
    "symlink_to_directory": _link_to_dir,
    "symlink_to_store": _link_to_store,
    "symlink_to_empty_directory": _link_to_empty_dir,
    "dangling_symlink": _dangling_link,
}


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("occupant", list(OCCUPANTS))
def test_data_loss_overwrite_refuses_what_is_not_a_store(
    tmp_path: Path, occupant: str, writer: str
) -> None:
    (tmp_path / "area").mkdir()
    dest = OCCUPANTS[occupant](tmp_path / "area")
    before = _snapshot(tmp_path / "area")
    with pytest.raises(zv.StoreExistsError, match="not a Zarr Vectors store"):
        WRITERS[writer](dest)
    assert _snapshot(tmp_path / "area") == before


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("name", [".", ".."])
def test_data_loss_dot_and_dotdot_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str, name: str
) -> None:
    here = _occupied_dir(tmp_path) / "sub"
    monkeypatch.chdir(here)
    before = _snapshot(tmp_path)
    with pytest.raises(zv.StoreExistsError, match="current working directory"):
        WRITERS[writer](name)
    assert _snapshot(tmp_path) == before


def test_data_loss_dot_is_refused_even_when_it_is_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zv.write_points(tmp_path / "s", POINTS, chunk_shape=5.0)
    monkeypatch.chdir(tmp_path / "s")
    before = _snapshot(tmp_path)
    with pytest.raises(zv.StoreExistsError, match="new directory inside it"):
        zv.write_points(".", POINTS[:10], chunk_shape=5.0, mode="w")
    with pytest.raises(zv.StoreExistsError, match="current working directory"):
        zv.append_points(".", POINTS[:10], progress=False)
    assert _snapshot(tmp_path) == before


def test_data_loss_an_append_through_a_symlink_is_refused(tmp_path: Path) -> None:
    points = _link_to_store(tmp_path)
    zv.write_polylines(tmp_path / "lines.zv", LINES, chunk_shape=5.0)
    os.symlink(tmp_path / "lines.zv", tmp_path / "lines-link")
    before = _snapshot(tmp_path)
    with pytest.raises(zv.StoreExistsError, match="symbolic link"):
        zv.append_points(points, POINTS[:10], progress=False)
    with pytest.raises(zv.StoreExistsError, match="symbolic link"):
        zv.append_polylines(tmp_path / "lines-link", LINES[:2], progress=False)
    assert _snapshot(tmp_path) == before


def test_data_loss_without_overwrite_a_store_is_kept(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "s", POINTS, chunk_shape=5.0)
    before = _snapshot(tmp_path)
    with pytest.raises(zv.StoreExistsError, match='pass mode="w"'):
        zv.write_points(tmp_path / "s", POINTS[:5], chunk_shape=5.0)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("writer", list(WRITERS))
def test_data_loss_a_store_and_an_empty_directory_are_replaced(
    tmp_path: Path, writer: str, request: pytest.FixtureRequest
) -> None:
    """The parallel writers run on the module's cluster (one of their own is started by
    tests/parallel/test_points.py::test_a_scheduler_address_and_a_cluster_of_its_own)."""
    cluster = {}
    if writer.endswith("_parallel"):
        cluster["scheduler_address"] = request.getfixturevalue("client").scheduler.address
    zv.write_points(tmp_path / "s", POINTS[:7], chunk_shape=5.0)
    (tmp_path / "empty").mkdir()
    for dest in (tmp_path / "s", tmp_path / "empty", tmp_path / "new" / "deeper"):
        WRITERS[writer](dest, **cluster)
        assert zv.validate(dest, level=3).ok
    names = sorted(p.name for p in tmp_path.iterdir())
    assert not [n for n in names if ".zv-" in n]  # no staging or spill directory left


def test_data_loss_an_incomplete_store_of_ours_is_replaced(tmp_path: Path) -> None:
    """A first write stopped before its root zarr.json (an older in-place write)."""
    zv.write_points(tmp_path / "s", POINTS, chunk_shape=5.0)
    (tmp_path / "s" / "zarr.json").unlink()
    with pytest.raises(zv.StoreExistsError, match="incomplete"):
        zv.write_points(tmp_path / "s", POINTS[:9], chunk_shape=5.0)
    zv.write_points(tmp_path / "s", POINTS[:9], chunk_shape=5.0, mode="w")
    assert zv.open(tmp_path / "s").vertex_count == 9


def test_data_loss_a_memory_store_holding_other_keys_is_refused() -> None:
    store = MemoryStore()
    group = zarr.open_group(store, mode="w")
    group.create_array("x", shape=(3,), dtype="i4")
    keys = StoreIO(store).list_prefix("")
    with pytest.raises(zv.StoreExistsError, match="not a Zarr Vectors store"):
        zv.write_points(store, POINTS, chunk_shape=5.0, mode="w")
    assert StoreIO(store).list_prefix("") == keys
    assert store_occupant(StoreIO(store)).occupant is Occupant.OTHER


def test_data_loss_a_local_store_object_over_other_files_is_refused(tmp_path: Path) -> None:
    dest = _occupied_dir(tmp_path)
    before = _snapshot(tmp_path)
    with pytest.raises(zv.StoreExistsError, match="not a Zarr Vectors store"):
        zv.write_points(LocalStore(dest), POINTS, chunk_shape=5.0, mode="w")
    assert _snapshot(tmp_path) == before


def test_data_loss_a_zip_path_holding_another_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cloud.zip").write_bytes(b"not a zip at all")
    with pytest.raises(zv.StoreExistsError, match="not a zip archive"):
        zv.write_points(tmp_path / "cloud.zip", POINTS, chunk_shape=5.0, mode="w")
    assert (tmp_path / "cloud.zip").read_bytes() == b"not a zip at all"


@pytest.mark.parametrize("value", ["no", "yes", 1, 0, None, np.bool_(True)])
def test_overwrite_no_is_refused(tmp_path: Path, value: Any) -> None:
    zv.write_points(tmp_path / "s", POINTS, chunk_shape=5.0)
    before = _snapshot(tmp_path)
    writers = [
        lambda: zv.write_points(tmp_path / "s", POINTS[:3], chunk_shape=5.0, overwrite=value),
        lambda: zv.write_points_stream(tmp_path / "s", [POINTS[:3]], overwrite=value),
        lambda: zv.write_polylines(tmp_path / "s", LINES, chunk_shape=5.0, overwrite=value),
        lambda: zv.convert(tmp_path / "s", tmp_path / "out.csv", overwrite=value),
    ]
    if value is None:  # the default (overwrite= is the deprecated mode="w")
        writers = []
    for write in writers:
        with pytest.raises(zv.InvalidInputError, match="overwrite must be a bool"):
            write()
    assert _snapshot(tmp_path) == before


def test_zipstore_object_is_written_through_and_closable(tmp_path: Path) -> None:
    zs = ZipStore(tmp_path / "cloud.zip", mode="w")
    zv.write_points(zs, POINTS, chunk_shape=5.0)
    zs.close()  # raised AttributeError ('_lock') when the library wrote around the object
    assert zv.open(tmp_path / "cloud.zip").vertex_count == len(POINTS)
    assert zv.validate(tmp_path / "cloud.zip", level=3).ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cloud.zip"]


def test_zipstore_object_opened_by_the_user_is_written_through(tmp_path: Path) -> None:
    zs = ZipStore(tmp_path / "cloud.zip", mode="w")
    zs._sync_open()
    zv.write_points(zs, POINTS, chunk_shape=5.0)
    zs.close()
    assert zv.open(tmp_path / "cloud.zip").vertex_count == len(POINTS)


def test_zipstore_object_over_a_store_needs_overwrite(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "cloud.zip", POINTS, chunk_shape=5.0)
    before = (tmp_path / "cloud.zip").read_bytes()
    with pytest.raises(zv.StoreExistsError, match='mode="w"'):
        zv.write_points(ZipStore(tmp_path / "cloud.zip", mode="w"), POINTS[:4], chunk_shape=5.0)
    assert (tmp_path / "cloud.zip").read_bytes() == before
    zs = ZipStore(tmp_path / "cloud.zip", mode="a")
    zv.write_points(zs, POINTS[:4], chunk_shape=5.0, mode="w")
    zs.close()
    assert zv.open(tmp_path / "cloud.zip").vertex_count == 4


_NAMES = st.text(alphabet="abcz019._-", min_size=1, max_size=8).filter(
    lambda n: n not in (".", "..")
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.dictionaries(
        st.lists(_NAMES, min_size=1, max_size=3).map(tuple), st.binary(max_size=16), min_size=1
    )
)
def test_data_loss_no_directory_of_other_files_is_ever_replaced(
    tmp_path: Path, files: dict[tuple[str, ...], bytes]
) -> None:
    """Any tree of files that is not a Zarr Vectors store survives ``overwrite=True``."""
    area = Path(tempfile.mkdtemp(dir=tmp_path))
    dest = area / "mydata"
    dest.mkdir()
    for parts, content in files.items():
        target = dest.joinpath(*parts)
        if any(p.is_file() for p in [target, *target.parents] if p != dest and dest in p.parents):
            continue  # a name already used by a file cannot also be a directory
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_dir():
            target.write_bytes(content)
    before = _snapshot(area)
    with pytest.raises(zv.StoreExistsError, match="not a Zarr Vectors store"):
        zv.write_points(dest, POINTS, chunk_shape=5.0, mode="w")
    assert _snapshot(area) == before
