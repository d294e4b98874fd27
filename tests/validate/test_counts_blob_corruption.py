"""Counts-form fragment blobs (format 1.5, spec §6.8) under the validator: a 1.5 store
validates, and each damage to a counts-form blob is reported with its check id. (From
format 1.6 level 0 of object kinds keeps fragment records instead, spec §6.9, so the blobs
are damaged in a copy of a golden 1.5 store.)"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from zarr.storage import MemoryStore

from tests.validate import stores as s
from tests.validate.object_stores import golden_1_5_store
from zarr_vectors.validate import validate


def _blob(st: MemoryStore) -> tuple[tuple[int, ...], np.ndarray]:
    g = s.occupied(st)[0][0]
    return g, s.get_blob_bytes(st, "0/vertex_fragments", g).copy()


def _edit_blob(change: Callable[[np.ndarray], None]) -> Callable[[MemoryStore], None]:
    def apply(st: MemoryStore) -> None:
        g, blob = _blob(st)
        change(blob)
        s.put_rows(st, "0/vertex_fragments", g, blob)

    return apply


def _one_more_row(blob: np.ndarray) -> None:
    blob[16] += 1  # the first count (uint8): the fragments cover one row too many


def _unknown_flag(blob: np.ndarray) -> None:
    blob[6] |= 0x08


def _more_fragments(blob: np.ndarray) -> None:
    f = int(blob[8:12].view("<u4")[0])
    blob[8:16] = np.array([f + 4096, f + 4096], "<u4").view(np.uint8)


def _declare_1_4(st: MemoryStore) -> None:
    s.edit_root(st, lambda a: a.__setitem__("zarr_vectors_version", "1.4"))


@pytest.fixture(scope="module")
def skeletons() -> MemoryStore:
    return golden_1_5_store("skeletons_3d_swc")


def test_a_1_5_object_store_has_counts_blobs_and_validates(skeletons: MemoryStore) -> None:
    _, blob = _blob(skeletons)
    assert blob[6] & 1  # counts form (spec §6.8)
    report = validate(skeletons, level=3)
    assert report.ok, report.summary()


@pytest.mark.parametrize(
    ("damage", "check_id"),
    [
        (_edit_blob(_one_more_row), "L3.counts_match_fragments"),
        (_edit_blob(_unknown_flag), "L3.frag_flags"),
        (_edit_blob(_more_fragments), "L3.frag_truncated"),
        (_declare_1_4, "L3.frag_flags"),  # the counts form needs format 1.5
    ],
    ids=["count", "flag", "truncated", "version"],
)
def test_damaged_counts_blob_is_reported(
    skeletons: MemoryStore, damage: Callable[[MemoryStore], None], check_id: str
) -> None:
    st = MemoryStore(store_dict=dict(skeletons._store_dict))  # a copy per damage
    damage(st)
    report = validate(st, level=3)
    assert not report.ok
    assert check_id in {i.check_id for i in report.errors}, report.summary()
