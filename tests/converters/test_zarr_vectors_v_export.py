"""Writing stores of this format as layout V (zarr-vectors 0.9.x): ours -> V -> ours keeps
every object, vertex and attribute; V -> ours -> V reads the same in the real 0.9.2.

The 0.9.2 read-back runs in the reference virtualenv (``benchmarks/_reference_venv``, made
by ``python benchmarks/reference_env.py``; 0.9.2 shares our import name, so it runs in a
process of its own); without that virtualenv those tests are skipped, saying so. ``.ci/run``
can run them by creating the virtualenv first (``python benchmarks/reference_env.py``) and
then ``pytest -m reference``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "layout_v"
REFERENCE_PYTHON = ROOT / "benchmarks" / "_reference_venv" / "bin" / "python"
EXPORTED = ["points", "polylines", "streamlines"]
"""The golden V stores exported back (after their import)."""
V = "zarr-vectors-0.9"

reference = pytest.mark.skipif(
    not REFERENCE_PYTHON.exists(),
    reason="no zarr-vectors 0.9.2 virtualenv: run `python benchmarks/reference_env.py` first",
)


@pytest.fixture(scope="module")
def round_trip(
    tmp_path_factory: pytest.TempPathFactory, imported_v_stores: dict[str, Path]
) -> dict[str, tuple[Path, Path, Path]]:
    """Per golden store: ours (imported), the export as V, and that export imported again."""
    folder = tmp_path_factory.mktemp("to-v")
    out = {}
    for name in EXPORTED:
        ours, v, again = imported_v_stores[name], folder / f"{name}.zv", folder / f"{name}-2.zarr"
        assert zv.convert(ours, v, format=V) == v
        zv.convert(v, again)
        out[name] = (ours, v, again)
    return out


@pytest.mark.parametrize("name", EXPORTED)
def test_ours_to_v_to_ours_keeps_everything(
    name: str, round_trip: dict[str, tuple[Path, Path, Path]]
) -> None:
    ours, again = zv.open(round_trip[name][0]), zv.open(round_trip[name][2])
    assert (again.kind, again.vertex_count) == (ours.kind, ours.vertex_count)
    assert (again.chunk_shape, again.bin_shape) == (ours.chunk_shape, ours.bin_shape)
    if ours.is_object_store:
        ids = sorted(ours.object_ids.tolist())
        first, second = ours.read_objects(ids), again.read_objects(ids)
        assert second.object_ids.tolist() == first.object_ids.tolist()
        np.testing.assert_array_equal(second.offsets, first.offsets)
        for name_ in first.object_attributes:
            np.testing.assert_array_equal(
                second.object_attributes[name_], first.object_attributes[name_]
            )
        assert {k: v.tolist() for k, v in again.groups.items()} == {
            k: v.tolist() for k, v in ours.groups.items()
        }
        for name_, values in ours.group_attributes.items():
            np.testing.assert_array_equal(again.group_attributes[name_], values)
    else:
        first, second = ours.read(), again.read()
    np.testing.assert_array_equal(second.positions, first.positions)
    for name_, values in first.attributes.items():
        np.testing.assert_array_equal(second.attributes[name_], values)


def test_a_kind_not_exported_yet_is_refused(tmp_path: Path) -> None:
    mesh = zv.convert(DATA / "mesh.zv", tmp_path / "mesh.zarr")
    with pytest.raises(zv.InvalidInputError, match="cannot be written as layout V yet"):
        zv.convert(mesh, tmp_path / "mesh.zv", format=V)
    assert not (tmp_path / "mesh.zv").exists()


def test_an_existing_destination_is_replaced_only_when_asked(
    tmp_path: Path, round_trip: dict[str, tuple[Path, Path, Path]]
) -> None:
    ours, _, _ = round_trip["points"]
    zv.convert(ours, tmp_path / "p.zv", format=V)
    with pytest.raises(zv.StoreExistsError, match='mode="w"'):
        zv.convert(ours, tmp_path / "p.zv", format=V)
    zv.convert(ours, tmp_path / "p.zv", format=V, mode="w")
    assert zv.convert(tmp_path / "p.zv", tmp_path / "p.zarr").vertex_count == 80


def test_a_failed_export_leaves_the_destination_as_it_was(
    tmp_path: Path, round_trip: dict[str, tuple[Path, Path, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, _, _ = round_trip["points"]
    old = zv.convert(ours, tmp_path / "p.zv", format=V)
    before = sorted(p.relative_to(old) for p in old.rglob("*"))

    def fail(*args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("zarr_vectors.converters._v_export._level_attrs", fail)
    for mode, target in (("w", old), ("w-", tmp_path / "fresh.zv")):
        with pytest.raises(OSError, match="disk full"):
            zv.convert(ours, target, format=V, mode=mode)
    assert sorted(p.relative_to(old) for p in old.rglob("*")) == before  # the old store
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.zv"]  # nothing else left


@pytest.mark.reference
@reference
def test_092_reads_our_export_as_it_read_its_own_store(
    tmp_path: Path, round_trip: dict[str, tuple[Path, Path, Path]]
) -> None:
    pairs = []
    for name, (_, v, _) in round_trip.items():
        pairs += [str(v), str(tmp_path / f"{name}.npz")]
    subprocess.run(
        [str(REFERENCE_PYTHON), "-I", str(DATA / "make_v_stores.py"), "read", *pairs],
        check=True,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
        timeout=300,
    )
    for name in round_trip:
        with (
            np.load(tmp_path / f"{name}.npz") as got,
            np.load(DATA / f"{name}.answers.npz") as want,
        ):
            assert got["validate_errors"].tolist() == []
            level0 = [k for k in want if k.startswith("0_")]
            assert sorted(k for k in got if k.startswith("0_")) == sorted(level0)
            for key in level0:
                np.testing.assert_array_equal(got[key], want[key], err_msg=f"{name}: {key}")


def test_a_grid_that_starts_below_zero_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(38)
    lines = [rng.uniform(-30, 20, (n, 3)).astype(np.float32) for n in (4, 9, 2)]
    zv.write_polylines(tmp_path / "a.zarr", lines, chunk_shape=10.0, object_ids=[0, 1, 2])
    zv.convert(tmp_path / "a.zarr", tmp_path / "a.zv", format=V)
    origin = json.loads((tmp_path / "a.zv" / "0" / "vertices" / "zarr.json").read_text())
    assert min(origin["attributes"]["chunk_grid_origin"]) < 0
    again = zv.convert(tmp_path / "a.zv", tmp_path / "b.zarr").read_objects([0, 1, 2])
    np.testing.assert_array_equal(again.positions, np.concatenate(lines))


_LINE = st.integers(1, 12).flatmap(
    lambda n: st.lists(st.tuples(*[st.floats(-40, 40, width=32)] * 3), min_size=n, max_size=n)
)


@pytest.mark.slow  # the golden round trips and the grid below zero cover it by default
@settings(max_examples=5, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=4))
def test_any_polylines_come_back_from_layout_v_in_order(
    tmp_path_factory: pytest.TempPathFactory, lines: list[list[Any]]
) -> None:
    arrays = [np.asarray(line, dtype=np.float32) for line in lines]
    where = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp()))
    zv.write_polylines(where / "a.zarr", arrays, chunk_shape=16.0, progress=False)
    zv.convert(where / "a.zarr", where / "a.zv", format=V)
    back = zv.convert(where / "a.zv", where / "b.zarr")
    got = back.read_objects(list(range(len(arrays))))
    np.testing.assert_array_equal(got.positions, np.concatenate(arrays))
    np.testing.assert_array_equal(np.diff(got.offsets), [len(a) for a in arrays])
