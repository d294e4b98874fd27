"""Corruptions of point-cloud levels of detail: each edit of a coarse level is reported with
its check id (spec §4.3.2, §11.3 ``L2.level_coarsening``, §11.6 the L5 method checks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from zarr_vectors.validate import validate

LEVEL_IDS = {
    "L2.level_coarsening",
    "L2.coarsening_method_unknown",
    "L5.coarse_vertex_in_bin",
    "L5.sample_nested",
    "L5.sample_cap",
    "L5.sample_rule",
    "L5.aggregate_counts",
    "L5.aggregate_rule",
    "L2.levels_version",
    "L2.level_schedule",
}
"""The ids this file covers (the corpus of test_corruption.py counts them)."""


def level_store(method: str = "sample") -> MemoryStore:
    """2,000 points, chunks of 10 with bins of 2.5, two levels of ``method``."""
    store = MemoryStore()
    pts = s.points(n=2000)
    rng = np.random.default_rng(3)
    zv.write_points(
        store,
        pts,
        chunk_shape=s.CHUNK,
        bin_shape=2.5,
        attributes={"a": rng.random(pts.shape[0]).astype(np.float32)},
        levels=zv.Levels(count=2, per_bin=3, method=method),
        options=zv.WriteOptions(rows_per_block=s.ROWS_PER_BLOCK),
        progress=False,
    )
    return store


def coarsening(change: Callable[[dict[str, Any]], Any], level: int = 1) -> Callable[..., None]:
    return lambda st: s.edit_level(st, lambda a: change(a["coarsening"]), level)


def _chunk(store: MemoryStore, level: int) -> tuple[tuple[int, ...], int]:
    """The fullest chunk of a level."""
    return max(s.occupied(store, level), key=lambda item: item[1])


def edit_level_rows(path: str, change: Callable[[np.ndarray], Any]) -> Callable[..., None]:
    """Apply ``change`` to the rows of the fullest chunk of level 1 at ``1/<path>``."""

    def apply(st: MemoryStore) -> None:
        s.edit_rows(st, f"1/{path}", change, _chunk(st, 1))

    return apply


def move_first_row(rows: np.ndarray) -> None:
    """Give row 0 the position of the last row (another coarse bin of the same chunk)."""
    rows[0] = rows[-1]


def bump(rows: np.ndarray) -> None:
    rows[0] = rows[0] + 1


def drop_coarsening(attrs: dict[str, Any]) -> None:
    del attrs["coarsening"]


CASES = [
    ("L2.level_coarsening", "sample", lambda st: s.edit_level(st, drop_coarsening, 1), 2),
    ("L2.level_coarsening", "sample", coarsening(lambda c: c.__setitem__("per_bin", 0)), 2),
    ("L2.level_coarsening", "aggregate", coarsening(lambda c: c["reductions"].pop("a")), 2),
    (
        "L2.level_coarsening",
        "sample",
        lambda st: s.edit_level(st, lambda a: a.__setitem__("coarsening", {"method": "x"}), 0),
        2,
    ),
    (
        "L2.coarsening_method_unknown",
        "sample",
        coarsening(lambda c: c.__setitem__("method", "thin")),
        2,
    ),
    (
        "L2.levels_version",
        "sample",
        lambda st: s.declare_older_version(st, "1.2"),
        2,
    ),
    (
        "L2.level_schedule",
        "sample",
        lambda st: s.edit_root(st, lambda a: a["level_schedule"].__setitem__("per_bin", 0)),
        2,
    ),
    ("L5.coarse_vertex_in_bin", "sample", edit_level_rows("vertices", move_first_row), 5),
    ("L5.sample_nested", "sample", edit_level_rows("attributes/a", bump), 5),
    ("L5.sample_cap", "sample", coarsening(lambda c: c.__setitem__("per_bin", 1)), 5),
    ("L5.sample_rule", "sample", coarsening(lambda c: c.__setitem__("per_bin", 64)), 5),
    ("L5.aggregate_counts", "aggregate", edit_level_rows("attributes/count", bump), 5),
    (
        "L5.aggregate_rule",
        "aggregate",
        coarsening(lambda c: c["reductions"].__setitem__("a", "max")),
        5,
    ),
]


@pytest.mark.parametrize(
    ("check_id", "method", "damage", "level"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_level_corruption_is_reported(
    check_id: str, method: str, damage: Callable[..., None], level: int
) -> None:
    store = level_store(method)
    assert validate(store, level=5).ok
    damage(store)
    report = validate(store, level=level)
    assert check_id in {p.check_id for p in report.problems}
    assert not report.ok or check_id == "L2.coarsening_method_unknown"


def test_the_cases_cover_the_level_ids() -> None:
    assert {case[0] for case in CASES} == LEVEL_IDS


def test_a_1_2_store_listing_levels_is_flagged() -> None:
    store = s.pyramid_store((2,))
    s.declare_older_version(store, "1.2")
    report = validate(store, level=5)
    assert report.level == 2
    assert not report.ok
    found = [p for p in report.problems if p.check_id == "L2.levels_version"]
    assert [p.path for p in found] == [
        "zarr.json#/attributes/zarr_vectors_version",
        "1/zarr.json#/attributes/coarsening",
    ]
    assert "L2.level_coarsening" not in report.checks_run


def test_a_1_2_store_with_an_unlisted_coarsened_level_group_is_flagged() -> None:
    store = s.pyramid_store((2,))
    s.declare_older_version(store, "1.2")
    s.edit_root(store, lambda a: a["multiscales"][0]["datasets"].pop())
    report = validate(store, level=2)
    assert [p.path for p in report.problems if p.check_id == "L2.levels_version"] == [
        "1/zarr.json#/attributes/coarsening"
    ]
    assert "L1.unlisted_level_group" in report.ids()


def test_a_1_2_store_without_levels_passes_the_version_check() -> None:
    report = validate(s.legacy_point_store(), level=2)
    assert "L2.levels_version" in report.checks_run
    assert report.ok
    assert not report.problems
