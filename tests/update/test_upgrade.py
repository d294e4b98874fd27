"""``zv.upgrade`` raises every golden store of formats 1.0 to 1.2 to 1.3 (spec §3.3.1).

Each upgraded copy is plain Zarr v3 (a zarr-python walk with warnings as errors, xarray
opens its level and attribute groups), validates at level 5 without a warning, gives the
answers of the original (full read, a box, objects by id), and holds the files a fresh
write of the same inputs gives (``tests/data/golden/1.3``): byte for byte but for the
root's commit, and, for a 1.2 source, the ``object_index`` arrays, which the writers now
compress (same values). A failed upgrade leaves the store as it was.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import shutil
import signal
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr
from zarr.core.buffer import default_buffer_prototype
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.helpers import write_layout_v_store
from tests.store.test_commit_kills import DURING, _die_at
from zarr_vectors.cli import main
from zarr_vectors.store import commit

UPGRADE = importlib.import_module("zarr_vectors.update.upgrade")  # the module, not the function
GOLDEN = Path(__file__).parent.parent / "data" / "golden"
OLD = sorted(p for v in ("1.0", "1.1", "1.2") for p in (GOLDEN / v).glob("*.zarrvectors"))
EARLIER = sorted((GOLDEN / "earlier").rglob("*.zarrvectors"))
"""Earlier writers' stores: 1.0 and 1.1 with other fragment blocks, 1.3 with mirrors."""


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _copy(source: Path, tmp_path: Path) -> Path:
    path = tmp_path / source.name
    shutil.copytree(source, path)
    return path


def _root(path: Path) -> dict[str, object]:
    attrs = json.loads((path / "zarr.json").read_bytes())["attributes"]
    assert isinstance(attrs, dict)
    return attrs


def _answers(store: zv.VectorStore) -> list[zv.QueryResult]:
    """A full read, a box around the middle of the bounds and, for objects, every object
    by id in reverse order."""
    lo, hi = (np.asarray(b, dtype=np.float64) for b in store.bounds)
    box = (lo + (hi - lo) / 4, hi - (hi - lo) / 4)
    answers = [store.read(), store.query(box)]
    if store.is_object_store:
        answers.append(store.read_objects(np.asarray(store.object_ids)[::-1]))
    return answers


def _same_result(got: zv.QueryResult, want: zv.QueryResult) -> None:
    np.testing.assert_array_equal(got.positions, want.positions)
    for name in ("offsets", "object_ids", "vertex_object_ids", "edges", "faces"):
        a, b = getattr(got, name), getattr(want, name)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=name)
    for name in ("attributes", "object_attributes", "link_attributes"):
        a, b = getattr(got, name), getattr(want, name)
        assert sorted(a) == sorted(b), name
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"{name}.{key}")
            assert a[key].dtype == b[key].dtype, key


def _walk_without_warning(path: Path) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nodes = zarr.open_group(path, mode="r").members(max_depth=None)
        return [name for name, node in nodes if isinstance(node, zarr.Array)]


def _open_in_xarray(path: Path, group: str) -> None:
    with xr.open_zarr(path, group=group, consolidated=False, chunks=None) as ds:
        assert ds.data_vars


def _version(path: Path) -> str:
    version = _root(path)["zarr_vectors_version"]
    assert isinstance(version, str)
    return version


@pytest.mark.parametrize(
    "source",
    [*OLD, *(pytest.param(p, marks=pytest.mark.slow) for p in EARLIER)],
    ids=lambda p: str(p.relative_to(GOLDEN)),
)
def test_upgrade_of_a_golden_store(source: Path, tmp_path: Path) -> None:
    path = _copy(source, tmp_path)
    before = _answers(zv.open(source))
    files = _files(source)
    report = zv.upgrade(path)
    assert (report.from_version, report.to_version) == (_version(source), "1.3")
    assert report.changed
    assert not report.dry_run
    assert zv.open(path).metadata["zarr_vectors_version"] == "1.3"
    arrays = _walk_without_warning(path)
    assert "0/vertices" in arrays
    _open_in_xarray(path, "0")
    if any(a.startswith("0/attributes/") for a in arrays):
        _open_in_xarray(path, "0/attributes")
    result = zv.validate(path, level=5)
    assert result.ok, result
    assert not result.warnings, result
    for got, want in zip(_answers(zv.open(path)), before, strict=True):
        _same_result(got, want)
    assert _files(source) == files  # the source is untouched
    if source in OLD:
        _check_fresh_files(source, path)


def _decoded(path: Path, key: str) -> np.ndarray:
    array = zarr.open_array(path, path=key.removesuffix("/zarr.json"), mode="r")
    return np.asarray(array[...])


def _check_fresh_files(source: Path, path: Path) -> None:
    """``path``, the upgrade of ``source``, holds the files of the 1.3 golden store of the
    same inputs (what the writer gives them today)."""
    serial = _root(source).get("commit", {"serial": 0})["serial"]  # type: ignore[index]
    got, fresh = _files(path), _files(GOLDEN / "1.3" / source.name)
    assert sorted(got) == sorted(fresh)
    got_root, fresh_root = _root(path), _root(GOLDEN / "1.3" / source.name)
    assert got_root.pop("commit")["serial"] == serial + 1  # type: ignore[index]
    fresh_root.pop("commit")
    assert got_root == fresh_root
    compressed_since = source.parent.name == "1.2"  # object_index: Blosc since (§9.8)
    for key, raw in fresh.items():
        if key == "zarr.json":
            continue
        if compressed_since and "/object_index/" in key and key != "0/object_index/zarr.json":
            if key.endswith("zarr.json"):
                np.testing.assert_array_equal(_decoded(path, key), _decoded(source, key))
                assert _decoded(path, key).dtype == _decoded(source, key).dtype
            continue
        assert got[key] == raw, key


def test_upgrade_is_idempotent_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    path = _copy(GOLDEN / "1.0" / "streamlines_3d_groups.zarrvectors", tmp_path)
    before = _files(path)
    planned = zv.upgrade(path, dry_run=True)
    assert planned.dry_run
    assert planned.to_version == "1.3"
    assert any("place records" in change for change in planned.changes)
    assert "would upgrade format 1.0 to 1.3" in str(planned)
    assert _files(path) == before
    done = zv.upgrade(path)
    assert done.changes == planned.changes
    after = _files(path)
    again = zv.upgrade(path)
    assert not again.changed
    assert again.from_version == again.to_version == "1.3"
    assert "nothing to upgrade" in str(again)
    assert _files(path) == after


def test_a_1_2_upgrade_changes_metadata_only(tmp_path: Path) -> None:
    source = GOLDEN / "1.2" / "points_3d_sharded.zarrvectors"
    path = _copy(source, tmp_path)
    report = zv.upgrade(path)
    assert not any("place records" in change for change in report.changes)
    old, new = _files(source), _files(path)
    assert sorted(k for k in old if not k.endswith((".zattrs", "metadata.json"))) == sorted(new)
    changed = [k for k in new if new[k] != old[k]]
    assert changed
    assert all(k.endswith("zarr.json") for k in changed)


def test_a_failed_upgrade_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _copy(GOLDEN / "1.1" / "streamlines_3d_sharded.zarrvectors", tmp_path)
    before = _files(path)

    def fail(step: str) -> None:
        if step == "staged":
            raise OSError("disk full")

    monkeypatch.setattr(commit, "step_hook", fail)
    with pytest.raises(OSError, match="disk full"):
        zv.upgrade(path)
    assert _files(path) == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no staging left behind
    monkeypatch.setattr(commit, "step_hook", None)

    def broken(*args: object) -> int:
        raise zv.CorruptChunkError("a shard fails its checksum")

    monkeypatch.setattr(UPGRADE, "add_place_records", broken)
    with pytest.raises(zv.CorruptChunkError):
        zv.upgrade(path)
    assert _files(path) == before
    assert zv.validate(path, level=3).ok


def _upgrade_child(path: str, step: str) -> None:
    _die_at(step)
    zv.upgrade(path)


@pytest.mark.parametrize(
    "step", [DURING, pytest.param("staged", marks=pytest.mark.slow), "exchanged"]
)
def test_a_killed_upgrade_leaves_the_old_store_or_the_new_one(tmp_path: Path, step: str) -> None:
    """SIGKILLed while it writes the sibling, before the swap or just after it: the store
    at the path is the old one (every file as it was) or the upgraded one, complete."""
    source = GOLDEN / "1.1" / "points_3d_sharded.zarrvectors"
    path = _copy(source, tmp_path)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.store.warm_writer"])
    child = context.Process(target=_upgrade_child, args=(os.fspath(path), step))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == -signal.SIGKILL
    if step == "exchanged":
        assert _version(path) == "1.3"
        assert zv.validate(path, level=3).ok
        _same_result(zv.open(path).read(), zv.open(source).read())
    else:
        assert _files(path) == _files(source)
    left = [p.name for p in tmp_path.iterdir() if not p.name.endswith(".zv-lock")]
    if step == "exchanged":  # the old store, left in the sibling, is named by validate
        checks = {p.check_id for p in zv.validate(path, level=1).warnings}
        assert checks == {"L1.interrupted_write"}
        assert not zv.upgrade(path).changed
    else:
        assert len(left) == 2
        assert zv.upgrade(path).changed  # and clears what the killed one left
        left = [p.name for p in tmp_path.iterdir() if not p.name.endswith(".zv-lock")]
        assert left == [path.name]
    assert _files(path).keys() == _files(GOLDEN / "1.3" / source.name).keys()


def test_upgrade_in_place_of_a_memory_store() -> None:
    """Stores that cannot be swapped (memory, object storage) are changed in place."""
    source = GOLDEN / "1.0" / "skeletons_3d_swc.zarrvectors"
    memory = MemoryStore()
    prototype = default_buffer_prototype()
    for key, raw in _files(source).items():
        zarr.core.sync.sync(memory.set(key, prototype.buffer.from_bytes(raw)))
    before = _answers(zv.open(source))
    assert zv.upgrade(memory).changed
    result = zv.validate(memory, level=5)
    assert result.ok, result
    assert not result.warnings, result
    for got, want in zip(_answers(zv.open(memory)), before, strict=True):
        _same_result(got, want)


def test_upgrade_refuses_another_target_version_and_what_is_no_store(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("not a store")
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="nothing to upgrade"):
        zv.upgrade(tmp_path / "other")
    with pytest.raises(zv.UnsupportedVersionError, match=r"zv\.convert"):
        zv.upgrade(write_layout_v_store(tmp_path / "v"))
    path = _copy(GOLDEN / "1.0" / "points_3d_attributes.zarrvectors", tmp_path)
    with pytest.raises(zv.InvalidInputError, match=r"1\.3 only"):
        zv.upgrade(path, to="1.2")
    assert zv.upgrade(path, to="1.3").changed


def test_cli_upgrade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``info`` and a handle's summary of an old store name the upgrade, in one line."""
    path = _copy(GOLDEN / "1.2" / "points_3d_attributes.zarrvectors", tmp_path)
    assert main(["info", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "1.2"
    assert "zarr-vectors upgrade STORE" in doc["upgrade"]
    hints = [line for line in repr(zv.open(path)).splitlines() if "zv.upgrade" in line]
    assert len(hints) == 1
    assert main(["upgrade", str(path), "--dry-run"]) == 0
    assert "would upgrade format 1.2 to 1.3" in capsys.readouterr().out
    assert zv.open(path).metadata["zarr_vectors_version"] == "1.2"
    assert main(["upgrade", str(path)]) == 0
    assert "upgraded format 1.2 to 1.3" in capsys.readouterr().out
    assert zv.open(path).metadata["zarr_vectors_version"] == "1.3"
    assert "zv.upgrade" not in repr(zv.open(path))
    assert main(["info", str(path), "--json"]) == 0
    assert "upgrade" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("source", "levels"),
    [
        ("1.0/points_3d_attributes", zv.Levels(count=1, per_bin=2)),
        ("1.1/streamlines_3d_sharded", zv.Levels(count=1)),
    ],
)
def test_levels_built_on_a_1_0_or_1_1_store_upgrade_it_first(
    source: str, levels: zv.Levels, tmp_path: Path
) -> None:
    """Levels make a store 1.3, whose shards carry place records: ``build_levels`` used to
    declare 1.3 over level-0 shards without them, which no reader then opened."""
    original = GOLDEN / f"{source}.zarrvectors"
    path = _copy(original, tmp_path)
    assert zv.build_levels(path, levels, progress=False) == 1
    store = zv.open(path)
    assert store.metadata["zarr_vectors_version"] == "1.3"
    result = zv.validate(path, level=3)
    assert result.ok, result
    _same_result(store.read(), zv.open(original).read())


def test_a_zip_store_is_reported_on_but_not_upgraded(tmp_path: Path) -> None:
    """A zip file is never changed in place: a dry run reads it, an upgrade (or a build of
    levels, which upgrades a 1.0 store first) is refused saying what to do instead."""
    source = GOLDEN / "1.0" / "points_3d_attributes.zarrvectors"
    path = tmp_path / "old.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for key, raw in sorted(_files(source).items()):
            archive.writestr(key, raw)
    before = path.read_bytes()
    assert zv.upgrade(path, dry_run=True).to_version == "1.3"
    advice = r"cannot be changed in place: to upgrade it, extract it into a directory"
    with pytest.raises(zv.InvalidInputError, match=advice):
        zv.upgrade(path)
    with pytest.raises(zv.InvalidInputError, match=advice):
        zv.build_levels(path, 1, progress=False)
    assert path.read_bytes() == before
