"""Corruption of the fragment records of format 1.6 (spec §6.9, §9.7.1): every damage to a
record, and every record where the format has none (or none where it needs one), is
reported."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

from tests.validate import stores as s
from tests.validate.object_stores import golden_1_5_store, object_kind_store
from zarr_vectors.validate import validate

RECORD_IDS = {"L1.fragment_records", "L3.frag_record"}
"""The ids this corpus covers (used by the corpus-coverage test)."""


def _first(st: MemoryStore) -> tuple[int, ...]:
    return s.first_chunk(st)[0]


def _bytes(change: Callable[[np.ndarray], Any]) -> Callable[[MemoryStore], None]:
    def apply(st: MemoryStore) -> None:
        g = _first(st)
        raw = s.get_blob_bytes(st, "0/fragment_records", g).copy()
        change(raw)
        s.put_rows(st, "0/fragment_records", g, raw)

    return apply


def _bad_magic(raw: np.ndarray) -> None:
    raw[0] ^= 0xFF


def _no_runs(raw: np.ndarray) -> None:
    raw[12:16] = 0  # P = 0


def _tail(raw: np.ndarray) -> None:
    raw[-1] = 7  # a byte after the record (its row is padded with zeros)


def _fewer_rows(st: MemoryStore) -> None:
    g = _first(st)
    record = s.get_record(st, g)
    counts = record.vertex_counts.copy()
    counts[-1] += 1  # the fragments cover one row more than vertex_counts says
    s.put_record(st, g, counts, record.link_counts, record.fragment_objects())


def _stray_blob_array(st: MemoryStore) -> None:
    s.put(st, "0/vertex_fragments/zarr.json", s.get(st, "0/fragment_records/zarr.json"))


def _missing_records(st: MemoryStore) -> None:
    s.delete(st, "0/fragment_records/zarr.json")


@pytest.mark.parametrize(
    ("damage", "check_id"),
    [
        (_bytes(_bad_magic), "L3.frag_record"),
        (_bytes(_no_runs), "L3.frag_record"),
        (_bytes(_tail), "L3.frag_record"),
        (_fewer_rows, "L3.counts_match_fragments"),
        (_stray_blob_array, "L1.fragment_records"),
        (_missing_records, "L1.fragment_records"),
    ],
    ids=["magic", "no-runs", "tail", "counts", "stray-array", "missing"],
)
def test_damaged_record_is_reported(damage: Callable[[MemoryStore], None], check_id: str) -> None:
    store = object_kind_store("skeleton")
    assert s.has_records(store)
    assert validate(store, level=3).ok
    damage(store)
    report = validate(store, level=3)
    assert check_id in report.ids(), report.summary()
    assert not report.ok


def test_a_record_array_in_a_1_5_store_is_reported() -> None:
    store = golden_1_5_store("skeletons_3d_swc")
    assert validate(store, level=3).ok
    s.put(store, "0/fragment_records/zarr.json", s.get(store, "0/vertex_fragments/zarr.json"))
    report = validate(store, level=1)
    assert "L1.fragment_records" in report.ids(), report.summary()


def test_every_write_path_stores_records_only() -> None:
    """A fresh object store of format 1.6 holds ``fragment_records`` at level 0 and none of
    the three arrays it replaces; its records give the owners the object index names."""
    store = object_kind_store("polyline")
    for name in ("vertex_fragments", "link_fragments", "fragment_attributes/object_id"):
        assert s.io(store).get(f"0/{name}/zarr.json") is None, name
    for g, n in s.occupied(store):
        record = s.get_record(store, g)
        assert int(record.vertex_counts.sum()) == n
