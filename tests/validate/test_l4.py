"""L4 (spec §11.5): geometry claims and topology of the objects of level 0.

Every case writes a valid store with the public writers and damages it, or its claim, in
exactly one way: L1 to L3 then report no error and L4 reports exactly the case's id.
:data:`COVERED` lists the ids these cases cover (used by the corruption corpus).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from zarr_vectors.store.io import StoreIO
from zarr_vectors.validate import CHECKS, geometry_claims, validate
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.geometry_claims import component_labels, follow_parents
from zarr_vectors.validate.report import ValidationReport

CHUNK = 10.0

# -- valid stores ---------------------------------------------------------------------------

OCTAHEDRON_FACES = np.array(
    [[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]]
)
"""A closed surface on the vertices ±x, ±y, ±z, every face counter-clockwise from outside."""


def octahedra(centres: list[tuple[float, float, float]], radius: float = 6.0) -> np.ndarray:
    """Vertices of one octahedron per centre (6 each, in the order of the faces above)."""
    unit = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    return np.concatenate([np.asarray(c) + radius * unit for c in centres])


def mesh_store(
    faces: np.ndarray | None = None, extra_vertex: bool = False, closed: bool = True
) -> MemoryStore:
    """Two octahedra (objects 0 and 1) spanning several chunks, optionally damaged."""
    vertices = octahedra([(10.0, 10.0, 10.0), (25.0, 5.0, 12.0)])
    if faces is None:
        faces = np.concatenate([OCTAHEDRON_FACES, OCTAHEDRON_FACES + 6])
    labels = np.repeat([0, 1], 6)
    if extra_vertex:
        vertices = np.concatenate([vertices, [[24.0, 6.0, 11.0]]])
        labels = np.append(labels, 1)
    store = MemoryStore()
    zv.write_mesh(
        store, vertices, faces, vertex_objects=labels, closed_surface=closed, chunk_shape=CHUNK
    )
    return store


def polylines() -> list[np.ndarray]:
    """Three polylines crossing chunks; lengths 3·√3 ≈ 5.196, 12 and 20."""
    return [
        np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]),
        np.array([[5.0, 5.0, 5.0], [17.0, 5.0, 5.0]]),
        np.array([[1.0, 15.0, 2.0], [1.0, 25.0, 2.0], [11.0, 25.0, 2.0]]),
    ]


def polyline_store(lines: list[np.ndarray] | None = None, **kw: Any) -> MemoryStore:
    store = MemoryStore()
    zv.write_polylines(store, polylines() if lines is None else lines, chunk_shape=CHUNK, **kw)
    return store


def streamline_store(low: float = 1.0, high: float = 50.0) -> MemoryStore:
    return polyline_store(kind="streamline", metadata={"min_length": low, "max_length": high})


GRAPH_POSITIONS = np.array(
    [[1, 1, 1], [12, 1, 1], [12, 12, 1], [1, 12, 1], [3, 3, 3], [25, 3, 3], [25, 14, 3]], float
)
GRAPH_LABELS = np.array([0, 0, 0, 0, 1, 1, 1])
TREE_EDGES = np.array([[0, 1], [1, 2], [1, 3], [4, 5], [5, 6]])


def graph_store(edges: np.ndarray = TREE_EDGES, *, directed: bool = False) -> MemoryStore:
    store = MemoryStore()
    zv.write_graph(
        store,
        GRAPH_POSITIONS,
        edges,
        vertex_objects=GRAPH_LABELS,
        directed=directed,
        chunk_shape=CHUNK,
    )
    return store


def claim(**keys: Any) -> Callable[[MemoryStore], None]:
    """A damage that sets root metadata keys (both copies, spec §2.2)."""
    return lambda st: s.edit_root(st, lambda a: a.update(keys))


SKELETON_PARENTS = np.array([-1, 0, 1, 2, 3, -1, 5, 5, 6])
SKELETON_LABELS = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1])


def skeleton_positions(spread: float) -> np.ndarray:
    rng = np.random.default_rng(3)
    return rng.uniform(0.0, spread, (SKELETON_PARENTS.shape[0], 3))


def skeleton_store(
    *, spread: float = 30.0, chunk: float = CHUNK, radius: Any = None, swc_type: Any = None
) -> MemoryStore:
    """Two skeletons: object 0 a chain 0←1←2←3←4, object 1 a small tree rooted at 5."""
    n = SKELETON_PARENTS.shape[0]
    store = MemoryStore()
    zv.write_skeletons(
        store,
        skeleton_positions(spread),
        parents=SKELETON_PARENTS,
        vertex_objects=SKELETON_LABELS,
        radius=np.linspace(0.5, 2.0, n) if radius is None else radius,
        swc_type=np.arange(n) % 8 if swc_type is None else swc_type,
        chunk_shape=chunk,
    )
    return store


def one_chunk_skeleton() -> MemoryStore:
    """The skeletons in a single chunk: every parent record is a row of ``links/0``."""
    return skeleton_store(spread=9.0, chunk=100.0)


def edit_parents(change: Callable[[np.ndarray], Any]) -> Callable[[MemoryStore], None]:
    """Apply ``change`` to the ``(child, parent)`` records of the single chunk.

    The rows are ``[row(child), row(parent) or -1]`` in ascending child row, and the rows
    of the chunk follow the objects and their input order (spec §10.3, §10.6), so row i
    is input vertex i here.
    """

    def damage(st: MemoryStore) -> None:
        chunk, n = s.first_chunk(st)
        rows = s.get_rows(st, "0/links/0", chunk, n)
        assert rows[:, 0].tolist() == list(range(n))
        assert rows[:, 1].tolist() == SKELETON_PARENTS.tolist()
        change(rows)
        s.put_rows(st, "0/links/0", chunk, rows)

    return damage


def second_root(rows: np.ndarray) -> None:
    rows[3, 1] = -1  # vertex 3 of object 0 loses its parent: object 0 has roots 0 and 3


def root_into_cycle(rows: np.ndarray) -> None:
    rows[0, 1] = 3  # the root of object 0 gets a parent: 0 -> 3 -> 2 -> 1 -> 0


def cycle_below_root(rows: np.ndarray) -> None:
    rows[2, 1] = 4  # 2 -> 4 -> 3 -> 2: vertices 2, 3, 4 no longer reach root 0


def skeleton_store_without_swc_type() -> MemoryStore:
    store = MemoryStore()
    zv.write_skeletons(
        store,
        skeleton_positions(30.0),
        parents=SKELETON_PARENTS,
        vertex_objects=SKELETON_LABELS,
        radius=np.ones(SKELETON_PARENTS.shape[0]),
        chunk_shape=CHUNK,
    )
    return store


def single_triangle() -> MemoryStore:
    store = MemoryStore()
    zv.write_mesh(store, np.array([[1.0, 1, 1], [12, 1, 1], [1, 12, 1]]), np.array([[0, 1, 2]]))
    return store


def flipped_faces() -> np.ndarray:
    """The faces of the second octahedron with the winding of face 3 reversed."""
    faces = OCTAHEDRON_FACES + 6
    faces[3] = faces[3, [0, 2, 1]]
    return faces


# -- the cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A store damaged in one way, the L4 id it must trigger, and text the message holds."""

    name: str
    check_id: str
    build: Callable[[], MemoryStore]
    damage: Callable[[MemoryStore], Any] = lambda st: None
    says: tuple[str, ...] = ()
    objects: tuple[int, ...] = ()


CASES = [
    Case(
        "one-vertex-polyline",
        "L4.polyline_min_vertices",
        lambda: polyline_store([*polylines(), np.array([[4.0, 4.0, 4.0]])]),
        says=("has 1 vertex", "at least 2"),
        objects=(3,),
    ),
    Case(
        "one-vertex-streamline",
        "L4.polyline_min_vertices",
        lambda: polyline_store([np.array([[4.0, 4.0, 4.0]]), *polylines()], kind="streamline"),
        objects=(0,),
    ),
    Case(
        "streamline-too-short",
        "L4.streamline_length_bounds",
        lambda: streamline_store(low=6.0),
        says=("length 5.19615242", "below min_length 6"),
        objects=(0,),
    ),
    Case(
        "streamline-too-long",
        "L4.streamline_length_bounds",
        lambda: streamline_store(high=19.5),
        says=("length 20", "above max_length 19.5"),
        objects=(2,),
    ),
    Case(
        "streamline-min-length-only",
        "L4.streamline_length_bounds",
        lambda: polyline_store(kind="streamline", metadata={"min_length": 13.0}),
        objects=(0, 1),
    ),
    Case(
        "graph-cycle",
        "L4.graph_tree",
        lambda: graph_store(np.array([[0, 1], [1, 2], [2, 3], [0, 3], [4, 5], [5, 6]])),
        claim(is_tree=True),
        says=("4 edges for 4 vertices (a tree has 3)", "is_tree"),
        objects=(0,),
    ),
    Case(
        "graph-disconnected",
        "L4.graph_tree",
        lambda: graph_store(np.array([[0, 1], [1, 2], [1, 3], [4, 5]])),
        claim(is_tree=True),
        says=("1 edge for 3 vertices", "2 connected components"),
        objects=(1,),
    ),
    Case(
        "directed-graph-cycle",
        "L4.graph_tree",
        lambda: graph_store(
            np.array([[0, 1], [1, 2], [1, 3], [4, 5], [5, 6], [6, 4]]), directed=True
        ),
        claim(is_tree=True),
        objects=(1,),
    ),
    Case(
        "skeleton-two-roots",
        "L4.skeleton_tree",
        one_chunk_skeleton,
        edit_parents(second_root),
        says=("has 2 roots (vertices 0 and 3)", "exactly one root"),
        objects=(0,),
    ),
    Case(
        "skeleton-no-root",
        "L4.skeleton_tree",
        one_chunk_skeleton,
        edit_parents(root_into_cycle),
        says=("has no root", "cycle through vertex 0", "5 of its 5 vertices never reach a root"),
        objects=(0,),
    ),
    Case(
        "skeleton-cycle-below-root",
        "L4.skeleton_tree",
        one_chunk_skeleton,
        edit_parents(cycle_below_root),
        says=("cycle through vertex 3", "3 of its 5 vertices never reach a root"),
        objects=(0,),
    ),
    Case(
        "swc-negative-radius",
        "L4.skeleton_swc",
        lambda: skeleton_store(radius=np.array([1.0, 1, 1, 1, -0.5, 1, 1, 1, 1])),
        claim(swc_compatible=True),
        says=("0/attributes/radius", "1 of 9 radius values", "-0.5 at vertex 4 of object 0"),
    ),
    Case(
        "swc-type-out-of-range",
        "L4.skeleton_swc",
        lambda: skeleton_store(swc_type=np.array([1, 2, 3, 3, 3, 1, 9, 3, 3], np.int16)),
        claim(swc_compatible=True),
        says=("0/attributes/swc_type", "outside [0, 7]", "9 at vertex 1 of object 1"),
    ),
    Case(
        "swc-missing-attribute",
        "L4.skeleton_swc",
        skeleton_store_without_swc_type,
        claim(swc_compatible=True),
        says=("0/attributes/swc_type", "does not exist"),
    ),
    Case(
        "mesh-single-triangle",
        "L4.mesh_closed",
        single_triangle,
        claim(closed_surface=True),
        says=("3 edges are not shared by exactly two faces", "used by 1 face"),
        objects=(0,),
    ),
    Case(
        "mesh-missing-face",
        "L4.mesh_closed",
        lambda: mesh_store(
            np.concatenate([OCTAHEDRON_FACES, OCTAHEDRON_FACES[1:] + 6]), closed=False
        ),
        claim(closed_surface=True),
        objects=(1,),
    ),
    Case(
        "mesh-flipped-face",
        "L4.mesh_orientation",
        lambda: mesh_store(np.concatenate([OCTAHEDRON_FACES, flipped_faces()])),
        says=("3 shared edges", "same direction", "opposite directions"),
        objects=(1,),
    ),
    Case(
        "mesh-unreferenced-vertex",
        "L4.mesh_unreferenced_vertices",
        lambda: mesh_store(extra_vertex=True),
        says=("1 vertex used by no face", "vertex 6"),
        objects=(1,),
    ),
]
COVERED = {case.check_id for case in CASES}
"""The L4 ids the cases above produce."""


def _l4_ids(report: ValidationReport) -> set[str]:
    return {p.check_id for p in report.problems if p.check_id.startswith("L4.")}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_damage_is_reported(case: Case) -> None:
    store = case.build()
    case.damage(store)
    below = validate(store, level=3)
    assert below.ok, below.summary()
    report = validate(store, level=4)
    assert report.level == 4
    assert not [p for p in report.errors if not p.check_id.startswith("L4.")], report.summary()
    assert _l4_ids(report) == {case.check_id}, report.summary()
    assert report.ok == (CHECKS[case.check_id] == "warning")
    found = [p for p in report.problems if p.check_id == case.check_id]
    text = "\n".join(f"{p.path} {p.message}" for p in found)
    for part in case.says:
        assert part in text, text
    if case.objects:
        paths = [f"0/object_index/data#object={k}" for k in case.objects]
        assert [p.path for p in found] == paths, text
    assert case.check_id in report.checks_run


def test_error_stops_before_l5() -> None:
    store = graph_store(np.array([[0, 1], [1, 2], [2, 3], [0, 3], [4, 5], [5, 6]]))
    claim(is_tree=True)(store)
    report = validate(store, level=5)
    assert report.level == 4
    assert not report.ok


# -- valid stores ----------------------------------------------------------------------------


def _written_points() -> MemoryStore:
    return s.point_store()


def _graph_tree_claimed() -> MemoryStore:
    store = graph_store()
    claim(is_tree=True)(store)
    return store


VALID: dict[str, Callable[[], MemoryStore]] = {
    "points": _written_points,
    "polyline": polyline_store,
    "streamline": streamline_store,
    "streamline-tight-bounds": lambda: streamline_store(low=3 * np.sqrt(3), high=20.0),
    "graph-undirected": graph_store,
    "graph-directed": lambda: graph_store(directed=True),
    "graph-tree-claimed": _graph_tree_claimed,
    "graph-cycle-unclaimed": lambda: graph_store(
        np.array([[0, 1], [1, 2], [2, 3], [0, 3], [4, 5], [5, 6]])
    ),
    "skeleton": skeleton_store,
    "skeleton-one-chunk": one_chunk_skeleton,
    "mesh-closed": mesh_store,
    "mesh-open-unclaimed": single_triangle,
}

EXPECTED_RUN: dict[str, set[str]] = {
    "points": set(),
    "polyline": {"L4.polyline_min_vertices"},
    "streamline": {"L4.polyline_min_vertices", "L4.streamline_length_bounds"},
    "streamline-tight-bounds": {"L4.polyline_min_vertices", "L4.streamline_length_bounds"},
    "graph-undirected": set(),
    "graph-directed": set(),
    "graph-tree-claimed": {"L4.graph_tree"},
    "graph-cycle-unclaimed": set(),
    "skeleton": {"L4.skeleton_tree", "L4.skeleton_swc"},
    "skeleton-one-chunk": {"L4.skeleton_tree", "L4.skeleton_swc"},
    "mesh-closed": {"L4.mesh_closed", "L4.mesh_orientation", "L4.mesh_unreferenced_vertices"},
    "mesh-open-unclaimed": {"L4.mesh_orientation", "L4.mesh_unreferenced_vertices"},
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_stores_are_clean(name: str) -> None:
    store = VALID[name]()
    for level in (4, 5):
        report = validate(store, level=level)
        assert not report.problems, report.summary()
        assert report.level == level
        ran = {c for c in report.checks_run if c.startswith("L4.")}
        assert ran == EXPECTED_RUN[name]


def test_nothing_is_read_when_no_check_applies() -> None:
    store = graph_store()
    s.delete(store, "0/vertices/zarr.json")  # would stop L4 if the objects were read
    report = ValidationReport(store="damaged", level=4)
    ctx = Context(StoreIO(store), report, None)
    ctx.facts.kind = "graph"
    geometry_claims.run(ctx)
    assert not report.problems
    assert not report.notes
    assert not report.checks_run


# -- batches, limits and unreadable stores ----------------------------------------------------


def test_batches_keep_dense_object_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [np.array([[float(k), 1.0, 1.0]] * (1 if k in (1, 4, 5) else 2)) for k in range(7)]
    for line in lines:
        line[-1, 1] += 2.0
    store = polyline_store(lines, object_ids=np.arange(100, 107))
    monkeypatch.setattr(geometry_claims, "BATCH_OBJECTS", 2)
    report = validate(store, level=4)
    found = [p for p in report.problems if p.check_id == "L4.polyline_min_vertices"]
    assert [p.path for p in found] == [f"0/object_index/data#object={k}" for k in (1, 4, 5)]
    assert found[0].message.startswith("object 1 (id 101) has 1 vertex")


def test_findings_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(geometry_claims, "_ROOM", 3)
    store = polyline_store([np.array([[float(k), 1.0, 1.0]]) for k in range(6)])
    report = validate(store, level=4)
    assert len(report.problems) == 3


def test_unreadable_objects_stop_l4_with_a_note() -> None:
    store = mesh_store()
    s.delete(store, "0/vertices/zarr.json")
    report = ValidationReport(store="damaged", level=4)
    ctx = Context(StoreIO(store), report, None)
    ctx.facts.kind = "mesh"
    geometry_claims.run(ctx)
    assert not report.problems
    assert any(note.startswith("L4 stopped") for note in report.notes), report.notes


# -- the vectorised kernels --------------------------------------------------------------------


def test_component_labels_match_a_search() -> None:
    rng = np.random.default_rng(5)
    n = 300
    edges = rng.integers(0, n, (200, 2))
    labels = component_labels(n, edges)
    # every edge joins one component, and each label is the smallest member of its component
    assert np.all(labels[edges[:, 0]] == labels[edges[:, 1]])
    assert np.all(labels <= np.arange(n))
    assert np.all(labels[labels] == labels)
    reference = np.arange(n)
    for _ in range(n):  # label propagation to the fixed point
        low = np.minimum(reference[edges[:, 0]], reference[edges[:, 1]])
        np.minimum.at(reference, edges[:, 0], low)
        np.minimum.at(reference, edges[:, 1], low)
    assert np.array_equal(labels, reference)


def test_long_chains_are_fast() -> None:
    n = 200_000
    chain = np.stack([np.arange(1, n), np.arange(n - 1)], axis=1)
    order = np.random.default_rng(1).permutation(n)
    assert np.all(component_labels(n, order[chain]) == 0)
    parent = np.concatenate([[0], np.arange(n - 1)])
    assert np.all(follow_parents(parent, n) == 0)
