"""Corruptions of the coarse levels of polyline and streamline stores: each edit of one stored
value of a level is reported with its check id (spec §4.3.3, §11.6 the object L5 checks), and
nothing fires on the clean stores.

The stores are written by ``write_polylines(..., levels=zv.Levels(count=2))`` (method
``runs``, every object kept); a store with object sparsity is made by editing the recorded
rule, as the library's writers do not write one yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from zarr_vectors.kernels import CoarseGrid, coarse_cells
from zarr_vectors.store.io import StoreIO
from zarr_vectors.validate import object_compare, object_levels, validate
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.object_rules import coarsening_problem, kept_objects
from zarr_vectors.validate.object_vertices import Level0Rows, check_objects
from zarr_vectors.validate.report import ValidationReport
from zarr_vectors.write import write_global

OBJECT_LEVEL_IDS = {
    "L5.object_coarsening_method",
    "L5.object_ids_same",
    "L5.object_vertex_counts",
    "L5.object_sparsity_rule",
    "L5.coarse_vertices_of_level0",
    "L5.runs_ends_kept",
    "L5.object_coarsening_reproduced",
}
"""The ids this file covers (the corpus of test_corruption.py counts them)."""

KINDS = ("polyline", "streamline")
CHUNK = 4.0
BIN = 1.0
Damage = Callable[[MemoryStore], None]


def _lines(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        (np.cumsum(rng.normal(0, 0.5, (int(rng.integers(2, 30)), 3)), axis=0) + 6).astype(
            np.float32
        )
        for _ in range(12)
    ]


def _write(kind: str) -> MemoryStore:
    store = MemoryStore()
    lines = _lines(5)
    n = sum(len(line) for line in lines)
    rng = np.random.default_rng(2)
    zv.write_polylines(
        store,
        lines,
        kind=kind,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes={"w": rng.random(n).astype(np.float32)},
        object_attributes={"score": rng.random(len(lines))},
        groups={"first": [0, 1], "rest": [2]},
        levels=zv.Levels(count=2),
        progress=False,
    )
    return store


_PRISTINE: dict[str, MemoryStore] = {}


def fresh(kind: str) -> MemoryStore:
    """A copy of the clean store of ``kind`` (written once per test session)."""
    if kind not in _PRISTINE:
        _PRISTINE[kind] = _write(kind)
    return MemoryStore(dict(_PRISTINE[kind]._store_dict))


def _objects(store: MemoryStore, level: int) -> zv.QueryResult:
    handle = zv.open(store)
    return handle.read_objects(np.arange(handle.object_count), level=level)


def _find_row(store: MemoryStore, point: np.ndarray) -> tuple[tuple[tuple[int, ...], int], int]:
    """The chunk (and its row count) and row of level 1 whose vertex is ``point``, bit for bit."""
    for chunk, n in s.occupied(store, 1):
        rows = s.get_rows(store, "1/vertices", chunk, n)
        hit = np.flatnonzero(np.all(rows.view(np.uint32) == point.view(np.uint32), axis=1))
        if hit.shape[0]:
            return (chunk, n), int(hit[0])
    raise LookupError("no such row")


def _set_vertex(store: MemoryStore, old: np.ndarray, new: np.ndarray) -> None:
    where, row = _find_row(store, old)

    def change(rows: np.ndarray) -> None:
        rows[row] = new

    s.edit_rows(store, "1/vertices", change, where)


def nudge_a_vertex(store: MemoryStore) -> None:
    """Move the second vertex of the longest level-1 object by one ulp toward its chunk's
    middle: it stays in its chunk, but is no level-0 vertex."""
    coarse = _objects(store, 1)
    k = int(np.argmax(np.diff(coarse.offsets)))
    old = coarse.positions[coarse.offsets[k] + 1].copy()
    middle = (np.floor(old / CHUNK) + 0.5) * CHUNK
    _set_vertex(store, old, np.nextafter(old, middle.astype(np.float32)))


def move_a_first_vertex(store: MemoryStore) -> None:
    """Replace an object's first vertex at level 1 by its second level-0 vertex, from the same
    coarse bin: still a level-0 vertex in traversal order, but the end point is lost."""
    fine, coarse = _objects(store, 0), _objects(store, 1)
    grid = CoarseGrid((CHUNK,) * 3, (2 * BIN,) * 3, (0, 0, 0))
    cells = coarse_cells(fine.positions, grid)[1]
    for k in range(len(coarse.offsets) - 1):
        a, c = fine.offsets[k], coarse.offsets[k]
        if coarse.offsets[k + 1] - c >= 3 and cells[a] == cells[a + 1]:
            _set_vertex(store, coarse.positions[c].copy(), fine.positions[a + 1].copy())
            return
    raise LookupError("no object starts with two vertices in one coarse bin")


def rewrite_global(path: str, change: Callable[[np.ndarray], Any], tag: dict[str, Any]) -> Damage:
    """Write the global array ``path`` again (a valid array with its checksums) with
    ``change`` applied to its values."""

    def apply(store: MemoryStore) -> None:
        values = np.asarray(zarr.open_array(store, path=path, mode="r")[:])
        change(values)
        write_global(s.io(store), path, values, 0, tag)

    return apply


def swap_two(values: np.ndarray) -> None:
    values[[0, 1]] = values[[1, 0]] + np.array([1, -1])


def coarsening(change: Callable[[dict[str, Any]], Any]) -> Damage:
    return lambda st: s.edit_level(st, lambda a: change(a), 1)


def keep_three_longest(attrs: dict[str, Any]) -> None:
    attrs["coarsening"]["objects"] = {"rule": "length", "count": 3}
    attrs["sparsity_strategy"] = "length"


def bump(rows: np.ndarray) -> None:
    rows[0] = rows[0] + 1


CASES: list[tuple[str, Damage]] = [
    (
        "L5.object_coarsening_method",
        coarsening(lambda a: a["coarsening"].__setitem__("representative", "closest_to_mean")),
    ),
    (
        "L5.object_ids_same",
        lambda st: s.edit_array(
            st, "1/groupings", lambda d: d["attributes"].__setitem__("group_names", ["a", "b"])
        ),
    ),
    (
        "L5.object_vertex_counts",
        rewrite_global("1/object_vertex_counts", swap_two, {"zv_array": "object_vertex_counts"}),
    ),
    ("L5.object_sparsity_rule", coarsening(keep_three_longest)),
    ("L5.coarse_vertices_of_level0", nudge_a_vertex),
    ("L5.runs_ends_kept", move_a_first_vertex),
    (
        "L5.object_coarsening_reproduced",
        lambda st: s.edit_rows(st, "1/attributes/w", bump, s.occupied(st, 1)[0]),
    ),
]


@pytest.mark.parametrize("kind", KINDS)
def test_clean_stores_raise_nothing(kind: str) -> None:
    report = validate(fresh(kind), level=5)
    assert report.ok, report.summary()
    assert not report.problems, report.summary()
    assert set(report.checks_run) >= OBJECT_LEVEL_IDS
    assert not report.notes


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("check_id", "damage"), CASES, ids=[c[0] for c in CASES])
def test_object_level_corruption_is_reported(kind: str, check_id: str, damage: Damage) -> None:
    store = fresh(kind)
    damage(store)
    report = validate(store, level=5)
    assert check_id in report.ids(), report.summary()
    assert not report.ok
    assert report.level == 5


def test_the_cases_cover_the_object_level_ids() -> None:
    assert {case[0] for case in CASES} == OBJECT_LEVEL_IDS


def test_the_reproduced_check_alone_fires_on_a_carried_attribute() -> None:
    store = fresh("streamline")
    s.edit_rows(store, "1/attributes/w", bump, s.occupied(store, 1)[0])
    report = validate(store, level=5)
    assert report.ids() == {"L5.object_coarsening_reproduced"}, report.summary()


def test_batches_above_the_limit_skip_the_recomputation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(object_levels, "REPRODUCE_LIMIT", 40)
    clean = validate(fresh("polyline"), level=5)
    assert clean.ok, clean.summary()
    assert not clean.problems
    assert any("L5.object_coarsening_reproduced skipped" in n for n in clean.notes)
    store = fresh("polyline")
    nudge_a_vertex(store)
    assert "L5.coarse_vertices_of_level0" in validate(store, level=5).ids()


def test_a_method_without_a_recomputation_is_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(object_compare, "REPRODUCERS", {})
    report = validate(fresh("streamline"), level=5)
    assert report.ok, report.summary()
    assert not report.problems
    assert "L5.object_coarsening_reproduced" not in report.checks_run
    assert any("cannot recompute method 'runs'" in n for n in report.notes)


@pytest.mark.parametrize(
    ("kind", "coarsening", "strategy", "fits"),
    [
        (
            "graph",
            {"method": "cluster", "within": "component", "representative": "closest_to_mean"},
            None,
            True,
        ),
        (
            "mesh",
            {"method": "cluster", "within": "component", "representative": "closest_to_mean"},
            None,
            False,
        ),
        ("skeleton", {"method": "thin"}, None, True),
        ("skeleton", {"method": "thin", "representative": "ends_and_middle"}, None, False),
        ("polyline", {"method": "thin"}, None, False),
        (
            "streamline",
            {
                "method": "runs",
                "representative": "ends_and_middle",
                "objects": {"rule": "spatial_coverage", "per_cell": 2, "priority": "length"},
            },
            "spatial_coverage",
            True,
        ),
        (
            "mesh",
            {
                "method": "cluster",
                "within": "object",
                "representative": "closest_to_mean",
                "objects": {"rule": "spatial_coverage", "per_cell": 2, "priority": "length"},
            },
            "spatial_coverage",
            False,
        ),
        (
            "polyline",
            {
                "method": "runs",
                "representative": "ends_and_middle",
                "objects": {"rule": "length", "count": 0},
            },
            None,
            False,
        ),
        (
            "polyline",
            {
                "method": "runs",
                "representative": "ends_and_middle",
                "objects": {"rule": "length", "count": True},
            },
            "length",
            False,
        ),
    ],
)
def test_coarsening_parameters_of_each_kind(
    kind: str, coarsening: dict[str, Any], strategy: str | None, fits: bool
) -> None:
    assert (coarsening_problem(kind, coarsening, strategy) is None) == fits


def _kept_by_hand(
    rule: dict[str, Any], sizes: np.ndarray, cells: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    """The rules of spec §4.3.3, object by object."""
    m = sizes.shape[0]
    if rule["rule"] == "length":
        order = sorted(range(m), key=lambda k: (-lengths[k], k))[: rule["count"]]
        return np.isin(np.arange(m), order) & (sizes > 0)
    kept = np.zeros(m, bool)
    for cell in set(cells[sizes > 0].tolist()):
        members = [k for k in range(m) if sizes[k] > 0 and cells[k] == cell]
        members.sort(key=lambda k: (-lengths[k], k))
        kept[members[: rule["per_cell"]]] = True
    return kept


@pytest.mark.parametrize(
    "rule",
    [
        {"rule": "length", "count": 4},
        {"rule": "spatial_coverage", "per_cell": 1, "priority": "length"},
        {"rule": "spatial_coverage", "per_cell": 2, "priority": "length"},
    ],
)
def test_kept_objects_follow_the_rule(rule: dict[str, Any]) -> None:
    rng = np.random.default_rng(4)
    m = 30
    sizes = rng.integers(0, 3, m)
    firsts = rng.uniform(0, 8, (m, 2))
    lengths = rng.permutation(m).astype(np.float64)
    grid = CoarseGrid((4.0, 4.0), (2.0, 2.0), (0, 0))
    cells = coarse_cells(firsts, grid)[1]
    found = kept_objects(rule, sizes, firsts, lengths, grid)
    np.testing.assert_array_equal(found, _kept_by_hand(rule, sizes, cells, lengths))


def _result(lines: list[list[list[float]]]) -> zv.QueryResult:
    sizes = [len(line) for line in lines]
    points = [p for line in lines for p in line]
    return zv.QueryResult(
        positions=np.asarray(points, np.float32).reshape(-1, 2),
        offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
    )


@pytest.mark.parametrize(
    ("coarse", "wrong"),
    [
        ([[[0, 0], [1, 1], [0, 0]], [[5, 5]]], []),  # a repeated vertex, in order
        ([[[1, 1], [0, 0], [1, 1]], [[5, 5]]], [0]),  # out of traversal order
        ([[[0, 0], [2, 2]], [[0, 0]]], [1]),  # a vertex of another object
        ([[[0, 0], [0, 0.5]], []], [0]),  # no level-0 vertex
        ([[[-0.0, 0], [2, 2]], [[5, 5]]], [0]),  # -0.0 is not 0.0, bit for bit
    ],
)
def test_coarse_vertices_are_level0_vertices_in_order(
    coarse: list[list[list[float]]], wrong: list[int]
) -> None:
    fine = _result([[[0, 0], [1, 1], [0, 0], [2, 2]], [[5, 5], [6, 6]]])
    report = ValidationReport(store="rows", level=5)
    ctx = Context(StoreIO(MemoryStore()), report, None)
    check_objects(ctx, 1, (Level0Rows(fine), _result(coarse)), np.arange(2), (None, {}))
    found = [p.path for p in report.problems if p.check_id == "L5.coarse_vertices_of_level0"]
    assert found == [f"1/object_index/data#object={k}" for k in wrong]


def test_an_object_without_vertices_stays_empty_at_every_level() -> None:
    lines = _lines(8)[:4]
    lines.insert(2, np.zeros((0, 3), np.float32))
    store = MemoryStore()
    zv.write_polylines(
        store, lines, chunk_shape=CHUNK, bin_shape=BIN, levels=zv.Levels(count=2), progress=False
    )
    report = validate(store, level=5)
    assert report.ok, report.summary()
    assert not [p for p in report.problems if p.check_id.startswith("L5.")]
    assert "L5.object_sparsity_rule" in report.checks_run


def _sparse_lines() -> list[np.ndarray]:
    """Two long lines from corner to corner (they span the bounding box) and short ones
    inside."""
    rng = np.random.default_rng(9)
    corners = [
        np.linspace([0.5] * 3, [11.5] * 3, 40),
        np.linspace([11.5, 0.5, 0.5], [0.5, 11.5, 11.5], 40),
    ]
    short = [np.cumsum(rng.normal(0, 0.3, (8, 3)), axis=0) + rng.uniform(3, 9, 3) for _ in range(6)]
    return [line.astype(np.float32) for line in corners + short]


def _polylines(store: MemoryStore, lines: list[np.ndarray]) -> None:
    zv.write_polylines(
        store,
        lines,
        kind="streamline",
        chunk_shape=CHUNK,
        bin_shape=BIN,
        object_attributes={"score": np.arange(len(lines), dtype=np.float64)},
        levels=zv.Levels(count=1),
        progress=False,
    )


def sparse_store() -> MemoryStore:
    """A streamline store whose level 1 keeps the 2 longest objects (rule "length"): level
    1 of a store in which the others have no vertex, put in place of the full level 1."""
    lines = _sparse_lines()
    store, kept = MemoryStore(), MemoryStore()
    _polylines(store, lines)
    _polylines(kept, lines[:2] + [np.zeros((0, 3), np.float32)] * (len(lines) - 2))
    assert s.read_json(kept, "1/zarr.json")["attributes"]["bin_ratio"] == [2, 2, 2]
    for key in list(store._store_dict):
        if key.startswith("1/"):
            del store._store_dict[key]
    for key, value in kept._store_dict.items():
        if key.startswith("1/"):
            store._store_dict[key] = value
    share = 2 / len(lines)

    def rule(attrs: dict[str, Any]) -> None:
        attrs["coarsening"]["objects"] = {"rule": "length", "count": 2}
        attrs.update(sparsity_strategy="length", kept_object_count=2, object_sparsity=share)

    s.edit_level(store, rule, 1)
    s.edit_root(store, lambda a: a["multiscales"][0]["datasets"][1].update(object_sparsity=share))
    return store


def test_a_level_kept_by_its_recorded_rule_passes() -> None:
    report = validate(sparse_store(), level=5)
    assert report.ok, report.summary()
    assert {p.check_id for p in report.problems} <= {"L3.object_empty"}
    assert {"L5.object_sparsity_rule", "L5.object_coarsening_reproduced"} <= set(report.checks_run)


@pytest.mark.parametrize(
    "objects",
    [
        {"rule": "length", "count": 3},
        {"rule": "spatial_coverage", "per_cell": 1, "priority": "id_hash"},
    ],
)
def test_another_recorded_rule_fires_on_the_sparse_level(objects: dict[str, Any]) -> None:
    store = sparse_store()

    def rule(attrs: dict[str, Any]) -> None:
        attrs["coarsening"]["objects"] = objects
        attrs["sparsity_strategy"] = objects["rule"]

    s.edit_level(store, rule, 1)
    report = validate(store, level=5)
    assert "L5.object_sparsity_rule" in report.ids(), report.summary()
