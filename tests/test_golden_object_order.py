"""The golden store of format 1.7 (``tests/data/golden/1.7/``): a point cloud with the
object-ordered copy (spec §9.15), written byte for byte by the writer, valid, read by id as
its level 0 filtered, its row sequences readable by plain zarr-python."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import zarr

import zarr_vectors as zv
from tests.data.golden import make_golden
from tests.geometry.object_cases import files

NAME = "points_2d_object_order"
GOLDEN = Path(__file__).parent / "data" / "golden" / "1.7" / f"{NAME}.zarrvectors"


def test_the_writer_reproduces_the_golden_store(tmp_path: Path) -> None:
    path = tmp_path / f"{NAME}.zarrvectors"
    make_golden.write(path, make_golden.order_inputs()[NAME])
    assert files(path) == files(GOLDEN)


def test_the_golden_store_reads_by_id_as_level_0_filtered() -> None:
    store = zv.open(GOLDEN)
    assert store.metadata["zarr_vectors_version"] == "1.7"
    assert zv.validate(GOLDEN, level=5).ok
    expected = np.load(GOLDEN.parent / f"{NAME}.expected.npz")
    whole = store.read()
    ids = np.asarray(whole.vertex_object_ids)
    assert sorted(ids.tolist()) == sorted(expected["object_ids"].tolist())
    for wanted in ([3], [0, 5, 11], np.unique(ids).tolist()):
        keep = np.isin(ids, wanted)
        found = store.read_objects(wanted)
        assert found.positions.tobytes() == whole.positions[keep].tobytes()
        assert found.attributes["w"].tobytes() == whole.attributes["w"][keep].tobytes()


def test_plain_zarr_reads_the_copy_in_object_order() -> None:
    """zarr-python reads the row sequences: level 0's rows sorted by object id (stable)."""
    group = zarr.open_group(GOLDEN, mode="r")
    whole = zv.open(GOLDEN).read()
    ids = np.asarray(whole.vertex_object_ids)
    order = np.argsort(ids, kind="stable")
    copy = group["0/object_order"]
    assert np.array_equal(copy["rows"][:], order)
    assert np.array_equal(copy["vertices"][:], whole.positions[order])
    assert np.array_equal(copy["attributes/object_id"][:], ids[order])
    assert np.array_equal(copy["attributes/w"][:], whole.attributes["w"][order])
    assert copy["vertices"].metadata.dimension_names == ("row.vertices", "component.vertices")
    assert copy["ids"].metadata.dimension_names == ("row.ids",)


def test_the_golden_store_needs_no_upgrade() -> None:
    """Plain Zarr v3 of format 1.7: ``upgrade`` leaves it (never lowers its version)."""
    report = zv.upgrade(GOLDEN, dry_run=True)
    assert not report.changed
    assert "1.7 is current" in str(report)
