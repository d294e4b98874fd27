"""Corruptions of the links of skeleton ``thin`` and graph and mesh ``cluster`` levels: one
edit of a stored coarse parent, edge or face is reported with its check id (spec §4.3.3,
§11.6 ``L5.thin_still_tree``, ``L5.cluster_graph_links``, ``L5.cluster_mesh_faces``).

Each edit keeps the level valid up to L4 (rows in range, one object, no self-loop or
degenerate face), so only the L5 method check can see it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.test_object_levels import write
from tests.validate import stores as s
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.validate import validate
from zarr_vectors.validate.coarse_links import source_rows

COARSE_LINK_IDS = {"L5.thin_still_tree", "L5.cluster_graph_links", "L5.cluster_mesh_faces"}
"""The ids this file covers (the corpus of test_corruption.py counts them)."""

Chunk = tuple[int, ...]


def _link_count(store: MemoryStore, g: Chunk) -> int:
    starts, counts = decode_dense_ranges(s.get_blob_bytes(store, "1/link_fragments", g))
    return int((starts + counts).max(initial=0))


def _edit_links(store: MemoryStore, change: Callable[[np.ndarray], bool]) -> None:
    """Apply ``change`` to the link rows of the first chunk of level 1 where it returns
    true (it edits the rows in place)."""
    for g, _ in s.occupied(store, 1):
        count = _link_count(store, g)
        if not count:
            continue
        rows = s.get_rows(store, "1/links/0", g, count)
        if change(rows):
            s.put_rows(store, "1/links/0", g, rows)
            return
    raise AssertionError("no chunk of level 1 could take the edit")


def second_root(rows: np.ndarray) -> bool:
    """Cut a coarse vertex from its parent: the object has two roots."""
    child = np.flatnonzero(rows[:, 1] >= 0)
    if not child.shape[0]:
        return False
    rows[child[0], 1] = -1
    return True


def rewire_edge(rows: np.ndarray) -> bool:
    """Edges (a, b), (b, c) of one object: turn (a, b) into the new edge (a, c)."""
    known = {frozenset(map(int, row)) for row in rows}
    for i, (a, b) in enumerate(rows.tolist()):
        for c in rows[(rows[:, 0] == b) | (rows[:, 1] == b)].reshape(-1).tolist():
            if c not in (a, b) and frozenset((a, c)) not in known:
                rows[i] = (min(a, c), max(a, c))
                return True
    return False


def reverse_face(rows: np.ndarray) -> bool:
    """Turn the first face around: the same vertices in the other winding."""
    rows[0] = rows[0][[0, 2, 1]]
    return True


CASES: list[tuple[str, str, Callable[[np.ndarray], bool]]] = [
    ("L5.thin_still_tree", "skeleton", second_root),
    ("L5.cluster_graph_links", "graph", rewire_edge),
    ("L5.cluster_mesh_faces", "mesh", reverse_face),
]


def _store(kind: str) -> Any:
    store = MemoryStore()
    write(kind, store, levels=1)
    return store


@pytest.mark.parametrize(("check_id", "kind", "damage"), CASES, ids=[c[0] for c in CASES])
def test_coarse_link_corruption_is_reported(
    check_id: str, kind: str, damage: Callable[[np.ndarray], bool]
) -> None:
    store = _store(kind)
    assert validate(store, level=5).ok
    _edit_links(store, damage)
    report = validate(store, level=5)
    assert check_id in {p.check_id for p in report.problems}, report.summary()
    assert not report.ok
    found = [p for p in report.problems if p.check_id == check_id]
    assert all("at level 1" in p.message for p in found)


def test_the_cases_cover_the_ids() -> None:
    assert {case[0] for case in CASES} == COARSE_LINK_IDS


def test_sources_of_repeated_coordinates_are_distinct_rows() -> None:
    owner = np.array([0, 0, 0, 0, 1, 1])
    pos = np.array([[1.0], [2.0], [1.0], [1.0], [1.0], [1.0]])
    coarse_owner = np.array([0, 0, 0, 1])
    coarse = pos[[2, 1, 3, 5]]  # any order: cluster levels need not follow the sources
    found = source_rows((owner, pos), (coarse_owner, coarse))
    assert sorted(found[:3].tolist()) == [0, 1, 2]  # (the first free 1.0 rows, then 2.0)
    np.testing.assert_array_equal(pos[found], coarse)
    np.testing.assert_array_equal(owner[found], coarse_owner)
    missing = source_rows((owner, pos), (np.array([1]), np.array([[2.0]])))
    assert missing.tolist() == [-1]


def test_sources_ascend_when_asked() -> None:
    owner = np.zeros(5, np.int64)
    pos = np.array([[0.0], [1.0], [0.0], [2.0], [0.0]])
    coarse = (np.zeros(3, np.int64), pos[[0, 3, 4]])
    assert source_rows((owner, pos), coarse, ascending=True).tolist() == [0, 3, 4]
    assert source_rows((owner, pos), coarse).tolist() == [0, 3, 2]


def test_a_skeleton_revisiting_coordinates_validates_clean() -> None:
    """An out-and-back path and a branch back to the root's coordinates: level-0 vertices
    share coordinates and attributes, which the sources must not confuse."""
    out = np.arange(12, dtype=np.float32)
    path = np.concatenate([out, out[::-1][1:]])  # 0 .. 11 .. 0
    positions = np.stack([path, np.zeros_like(path), np.zeros_like(path)], axis=1)
    parents = np.arange(len(path)) - 1
    branch = positions[[3, 2, 1, 0]]
    positions = np.concatenate([positions, branch])
    parents = np.concatenate([parents, [5, len(path), len(path) + 1, len(path) + 2]])
    store = MemoryStore()
    zv.write_skeletons(
        store,
        positions,
        parents,
        radius=np.ones(len(positions)),
        chunk_shape=8.0,
        bin_shape=1.0,
        levels=zv.Levels(count=3),
        progress=False,
    )
    assert len(zv.open(store).levels) == 4
    report = validate(store, level=5)
    assert report.ok, report.summary()
    assert "L5.thin_still_tree" in report.checks_run
