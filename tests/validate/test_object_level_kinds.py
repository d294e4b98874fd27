"""The object L5 checks on skeleton ``thin`` and graph and mesh ``cluster`` levels, and on
levels with object sparsity (spec §4.3.3, §11.6).

- ``L5.coarse_vertices_of_level0`` follows each method: a ``cluster`` object keeps one
  level-0 vertex per cluster, in the order of the clusters' smallest members (its source,
  the member closest to the mean, need not be the smallest);
- ``L5.object_coarsening_reproduced`` recomputes ``thin`` and ``cluster`` levels: an edited
  carried attribute, link attribute or coarse vertex fires it;
- ``L3.object_empty`` is quiet at a coarse level for objects the recorded rule dropped or
  that level 0 already holds empty, and warns for an object a level should have kept;
- ``Levels(objects="coverage")`` on skeletons, graphs and meshes keeps, per coarse bin of an
  object's first vertex, the object of smallest id hash (plain numpy below), and the store
  validates at level 5 without a finding.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.test_object_levels import write
from tests.validate import stores as s
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.kernels import CoarseGrid, coarsen_graphs, coarsen_meshes
from zarr_vectors.store.io import StoreIO
from zarr_vectors.validate import validate
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.object_compare import reproduce
from zarr_vectors.validate.object_rules import Recipe
from zarr_vectors.validate.object_vertices import Level0Rows, check_objects
from zarr_vectors.validate.report import ValidationReport

KINDS = ("skeleton", "graph", "mesh")
REPRODUCED = "L5.object_coarsening_reproduced"
_PRISTINE: dict[str, MemoryStore] = {}


def fresh(kind: str) -> MemoryStore:
    """A copy of the test store of ``kind`` with one level (written once per session)."""
    if kind not in _PRISTINE:
        store = MemoryStore()
        write(kind, store, levels=1)
        _PRISTINE[kind] = store
    return MemoryStore(dict(_PRISTINE[kind]._store_dict))


def _objects(store: Any, level: int) -> zv.QueryResult:
    handle = zv.open(store)
    return handle.read_objects(np.asarray(handle.object_ids), level=level)


# -- coarse_vertices_of_level0 by method ------------------------------------------------------


def _cluster_case(coarse: list[list[float]]) -> list[str]:
    """``check_objects`` on one mesh-like object of level 0 (cells of 4 on a chunk of 8)
    whose level-N vertices are ``coarse``: the paths it reports."""
    fine = np.array([[0.5], [4.5], [1.0], [1.5], [5.0], [2.0]], np.float32)
    found = zv.QueryResult(positions=fine, offsets=np.array([0, 6]))
    stored = zv.QueryResult(
        positions=np.asarray(coarse, np.float32).reshape(-1, 1),
        offsets=np.array([0, len(coarse)]),
    )
    report = ValidationReport(store="rows", level=5)
    ctx = Context(StoreIO(MemoryStore()), report, None)
    rule = (CoarseGrid((8.0,), (4.0,), (0,)), {"method": "cluster", "within": "object"})
    check_objects(ctx, 1, (Level0Rows(found), stored), np.arange(1), rule)
    return [p.path for p in report.problems if p.check_id == "L5.coarse_vertices_of_level0"]


@pytest.mark.parametrize(
    ("coarse", "fires"),
    [
        ([[0.5], [4.5]], False),  # the clusters' smallest members: cell 0 first (vertex 0)
        ([[1.5], [5.0]], False),  # sources are other members: order by cluster, not source
        ([[4.5], [1.0]], True),  # cell 1 before cell 0
        ([[1.0], [1.5], [4.5]], True),  # two vertices of one cluster
        ([[1.0], [3.0]], True),  # 3.0 is no level-0 vertex
    ],
)
def test_cluster_vertices_are_one_per_cluster_in_order(
    coarse: list[list[float]], fires: bool
) -> None:
    assert bool(_cluster_case(coarse)) == fires


def test_graph_clusters_follow_components_even_with_repeated_coordinates() -> None:
    # vertices 0 and 2 share coordinates but lie in two components of one cell
    fine = np.array([[1.0], [1.5], [1.0], [2.0]], np.float32)
    found = zv.QueryResult(
        positions=fine, offsets=np.array([0, 4]), edges=np.array([[0, 1], [2, 3]])
    )
    grid = CoarseGrid((8.0,), (4.0,), (0,))
    clusters = Level0Rows(found).clusters(grid, "component")
    assert clusters.tolist() == [0, 0, 1, 1]
    for coarse, fires in (([[1.0], [1.0]], False), ([[1.0], [1.0], [1.0]], True)):
        stored = zv.QueryResult(
            positions=np.asarray(coarse, np.float32), offsets=np.array([0, len(coarse)])
        )
        report = ValidationReport(store="rows", level=5)
        ctx = Context(StoreIO(MemoryStore()), report, None)
        rule = (grid, {"method": "cluster", "within": "component"})
        check_objects(ctx, 1, (Level0Rows(found), stored), np.arange(1), rule)
        assert bool(report.problems) == fires


# -- object_coarsening_reproduced on thin and cluster levels ---------------------------------


def _bump_first(rows: np.ndarray) -> None:
    rows[0] = rows[0] + 1


def _link_rows(store: MemoryStore) -> tuple[tuple[int, ...], int]:
    """The first chunk of level 1 with link rows, and their number."""
    for g, _ in s.occupied(store, 1):
        starts, counts = decode_dense_ranges(s.get_blob_bytes(store, "1/link_fragments", g))
        count = int((starts + counts).max(initial=0))
        if count:
            return g, count
    raise LookupError("no link rows at level 1")


def _nudge_a_vertex(store: MemoryStore) -> None:
    """Move one vertex of level 1 by one ulp toward the middle of its chunk."""

    def change(rows: np.ndarray) -> None:
        middle = (np.floor(rows[0] / 8.0) + 0.5) * 8.0
        rows[0] = np.nextafter(rows[0], middle.astype(rows.dtype))

    s.edit_rows(store, "1/vertices", change, s.occupied(store, 1)[0])


def test_clean_kinds_are_recomputed() -> None:
    for kind in KINDS:
        report = validate(fresh(kind), level=5)
        assert not report.problems, report.summary()
        assert REPRODUCED in report.checks_run
        assert not report.notes, report.notes


EDITS = [
    (kind, edit)
    for kind in KINDS
    for edit in ("vertex attribute", "link attribute", "vertex")
    if (kind, edit) != ("skeleton", "link attribute")  # the test skeletons have none
]


@pytest.mark.parametrize(("kind", "edit"), EDITS)
def test_an_edited_level_is_not_the_recomputed_one(kind: str, edit: str) -> None:
    store = fresh(kind)
    if edit == "vertex attribute":
        s.edit_rows(store, "1/attributes/k", _bump_first, s.occupied(store, 1)[0])
    elif edit == "link attribute":
        s.edit_rows(store, "1/link_attributes/w", _bump_first, _link_rows(store))
    else:
        _nudge_a_vertex(store)
    report = validate(store, level=5)
    assert REPRODUCED in report.ids(), report.summary()
    assert not report.ok


@pytest.mark.parametrize("kind", ["graph", "mesh"])
def test_another_member_as_the_coarse_vertex_only_fails_the_recomputation(kind: str) -> None:
    """The coarse vertex of a cluster of several members replaced by another member: still
    one level-0 vertex per cluster in order (the stored-data check passes), but not the
    member closest to the mean (the recomputation fails)."""
    store = fresh(kind)
    base, stored = _objects(store, 0), _objects(store, 1)
    root = zv.open(store).metadata
    bins = zv.open(store).levels[1].bin_shape
    grid = CoarseGrid(root["chunk_shape"], bins, root["chunk_grid_origin"])
    offsets = base.offsets
    if kind == "graph":
        kernel = coarsen_graphs(base.positions, base.edges, offsets, grid)
    else:
        kernel = coarsen_meshes(base.positions, base.faces, offsets, grid)
    sizes = np.diff(kernel.member_offsets)
    i = int(np.flatnonzero(sizes > 1)[0])
    members = kernel.members[kernel.member_offsets[i] : kernel.member_offsets[i + 1]]
    other = int(members[members != kernel.source[i]][0])
    stored.positions[i] = base.positions[other]
    for name, values in base.attributes.items():
        stored.attributes[name][i] = values[other]
    report = ValidationReport(store="rows", level=5)
    ctx = Context(StoreIO(MemoryStore()), report, None)
    within = "component" if kind == "graph" else "object"
    ids = np.arange(offsets.shape[0] - 1)
    check_objects(
        ctx, 1, (Level0Rows(base), stored), ids, (grid, {"method": "cluster", "within": within})
    )
    assert not report.problems
    keep = np.ones(ids.shape[0], bool)
    found = reproduce("cluster", base, stored, Recipe(grid, keep, within))
    assert found == "the vertices are not those recomputed from level 0"


# -- L3.object_empty at coarse levels ---------------------------------------------------------


def _walks(seed: int, m: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        (np.cumsum(rng.normal(0, 0.3, (int(rng.integers(2, 12)), 3)), axis=0) + 10).astype(
            np.float32
        )
        for _ in range(m)
    ]


def _sparse_polylines(empty_at: int | None = None) -> MemoryStore:
    lines = _walks(3, 40)
    if empty_at is not None:
        lines[empty_at] = np.zeros((0, 3), np.float32)
    store = MemoryStore()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "built .* levels of detail", UserWarning)
        zv.write_polylines(
            store,
            lines,
            chunk_shape=4.0,
            bin_shape=0.5,
            levels=zv.Levels(count=3, objects="coverage", objects_per_cell=1),
            progress=False,
        )
    return store


def test_a_sparse_store_reports_nothing() -> None:
    store = _sparse_polylines()
    counts = np.asarray(zarr.open_array(store, path="1/object_vertex_counts", mode="r")[:])
    assert (counts == 0).sum() >= 5  # the rule dropped objects
    report = validate(store, level=5)
    assert not report.problems, report.summary()
    assert {"L3.object_empty", "L5.object_sparsity_rule", REPRODUCED} <= set(report.checks_run)


def test_an_object_empty_at_level0_is_reported_there_only() -> None:
    report = validate(_sparse_polylines(empty_at=7), level=5)
    found = [p.path for p in report.problems if p.check_id == "L3.object_empty"]
    assert found == ["0/object_index/data#object=7"], report.summary()
    assert report.ok


def test_objects_a_level_should_have_kept_still_warn() -> None:
    store = _sparse_polylines()

    def forget_the_rule(attrs: dict[str, Any]) -> None:
        del attrs["coarsening"]["objects"]
        del attrs["sparsity_strategy"]

    s.edit_level(store, forget_the_rule, 1)
    report = validate(store, level=5)
    empty = [p.path for p in report.problems if p.check_id == "L3.object_empty"]
    assert empty
    assert all(path.startswith("1/") for path in empty)
    assert "L5.object_sparsity_rule" in report.ids()


# -- object sparsity on skeletons, graphs and meshes -----------------------------------------


def _splitmix(ids: np.ndarray) -> np.ndarray:
    """SplitMix64 of each id (spec §4.3.3, priority ``id_hash``) in plain numpy."""
    z = ids.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _coverage(firsts: np.ndarray, bins: tuple[float, ...]) -> np.ndarray:
    """Rule ``spatial_coverage`` with ``per_cell`` 1 (grid origin 0, bins divide chunks)."""
    cells = np.floor(firsts.astype(np.float64) / np.asarray(bins)).astype(np.int64)
    hashes = _splitmix(np.arange(firsts.shape[0]))
    kept = np.zeros(firsts.shape[0], bool)
    best: dict[tuple[int, ...], int] = {}
    for k, cell in enumerate(map(tuple, cells.tolist())):
        if cell not in best or (int(hashes[k]), k) < (int(hashes[best[cell]]), best[cell]):
            best[cell] = k
    kept[list(best.values())] = True
    return kept


def _small_objects(kind: str, store: MemoryStore, levels: zv.Levels) -> np.ndarray:
    """Thirty three-vertex objects (a path, a chain, a triangle) in [1, 7]^3; returns the
    first vertex of each."""
    rng = np.random.default_rng(11)
    m = 30
    starts = rng.uniform(1, 7, (m, 3))
    pos = (starts[:, None, :] + rng.uniform(-0.3, 0.3, (m, 3, 3))).reshape(-1, 3)
    pos = pos.astype(np.float32)
    owner = np.repeat(np.arange(m), 3)
    base = np.arange(m)[:, None] * 3
    common = {"vertex_objects": owner, "chunk_shape": 8.0, "bin_shape": 1.0}
    common |= {"levels": levels, "progress": False}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "built .* levels of detail", UserWarning)
        if kind == "skeleton":
            parents = (base + np.array([[-3, 0, 1]])).reshape(-1)
            parents[0::3] = -1
            zv.write_skeletons(store, pos, parents, **common)
        elif kind == "graph":
            edges = np.concatenate([base + np.array([[0, 1]]), base + np.array([[1, 2]])])
            zv.write_graph(store, pos, edges, **common)
        else:
            zv.write_mesh(store, pos, base + np.array([[0, 1, 2]]), **common)
    return pos[0::3]


@pytest.mark.parametrize("kind", KINDS)
def test_coverage_sparsity_on_every_kind(kind: str) -> None:
    store = MemoryStore()
    firsts = _small_objects(kind, store, zv.Levels(count=2, objects="coverage", objects_per_cell=1))
    handle = zv.open(store)
    assert len(handle.levels) == 3
    for info in handle.levels[1:]:
        counts = np.asarray(
            zarr.open_array(store, path=f"{info.level}/object_vertex_counts", mode="r")[:]
        )
        want = _coverage(firsts, info.bin_shape)
        np.testing.assert_array_equal(counts > 0, want)
        assert want.sum() < want.shape[0]
    report = validate(store, level=5)
    assert not report.problems, report.summary()
    assert {"L5.object_sparsity_rule", REPRODUCED} <= set(report.checks_run)


@pytest.mark.parametrize("kind", KINDS)
def test_length_sparsity_is_refused_for_kinds_without_length(kind: str) -> None:
    with pytest.raises(zv.InvalidInputError, match="objects='length' is for polylines"):
        _small_objects(kind, MemoryStore(), zv.Levels(count=1, objects="length"))
