"""Golden stores of format 1.0 are read forever and rewritten byte for byte (spec §13)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from tests.data.golden import make_golden
from tests.helpers import sorted_rows

GOLDEN = Path(__file__).parent / "data" / "golden" / "1.0"
NAMES = sorted(make_golden.inputs())


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _without_software(raw: bytes) -> object:
    doc = json.loads(raw)
    attrs = doc.get("attributes", doc)
    attrs.pop("software", None)
    return doc


@pytest.mark.parametrize("name", NAMES)
def test_golden_store_reads_back_its_input(name: str) -> None:
    expected = np.load(GOLDEN / f"{name}.expected.npz")
    store = zv.open(GOLDEN / f"{name}.zarrvectors")
    got = store.read()
    columns_got = [got.positions]
    columns_exp = [expected["positions"]]
    for key in sorted(k for k in expected.files if k.startswith("attr_")):
        columns_got.append(got.attributes[key[5:]])
        columns_exp.append(expected[key])
    if "object_ids" in expected.files:
        assert got.vertex_object_ids is not None
        columns_got.append(got.vertex_object_ids)
        columns_exp.append(expected["object_ids"])
    np.testing.assert_array_equal(sorted_rows(*columns_got), sorted_rows(*columns_exp))
    assert zv.validate(GOLDEN / f"{name}.zarrvectors", level=2).ok


@pytest.mark.parametrize("name", NAMES)
def test_writer_reproduces_golden_bytes(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.zarrvectors"
    make_golden.write(path, make_golden.inputs()[name])
    written, golden = _files(path), _files(GOLDEN / f"{name}.zarrvectors")
    assert sorted(written) == sorted(golden)
    for key, raw in golden.items():
        if key in ("zarr.json", ".zattrs"):
            assert _without_software(written[key]) == _without_software(raw), key
        else:
            assert written[key] == raw, key
