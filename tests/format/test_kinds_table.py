"""The table of geometry kinds (format/kinds.py): one row per kind, asked instead of names."""

from __future__ import annotations

import pytest

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.kinds import (
    KINDS,
    expected_grid,
    geometry_kind,
    grid_problem,
    link_width_of,
)
from zarr_vectors.format.names import (
    CROSS_CHUNK_LINKS,
    EDGE_KINDS,
    GEOMETRY_TYPES,
    OBJECT_KINDS,
)


def test_one_row_per_geometry_type_in_order() -> None:
    assert tuple(KINDS) == GEOMETRY_TYPES
    assert all(geometry_kind(name).name == name for name in GEOMETRY_TYPES)


def test_rows_agree_with_the_name_groups_of_the_spec() -> None:
    assert tuple(k.name for k in KINDS.values() if k.has_objects) == OBJECT_KINDS
    assert tuple(k.name for k in KINDS.values() if k.cross_chunk_links) == EDGE_KINDS
    assert all(CROSS_CHUNK_LINKS in k.required_nodes for k in KINDS.values() if k.link_width == 2)


@pytest.mark.parametrize(
    ("name", "width", "ordered", "tree", "faces", "stored_edges"),
    [
        ("point_cloud", 0, False, False, False, False),
        ("polyline", 2, True, False, False, False),
        ("streamline", 2, True, False, False, False),
        ("graph", 2, False, False, False, True),
        ("skeleton", 2, False, True, False, True),
        ("mesh", 3, False, False, True, False),
    ],
)
def test_each_row_answers_what_the_code_asks(
    name: str, width: int, ordered: bool, tree: bool, faces: bool, stored_edges: bool
) -> None:
    row = geometry_kind(name)
    assert (row.link_width, row.ordered, row.tree, row.faces, row.stored_edges) == (
        width,
        ordered,
        tree,
        faces,
        stored_edges,
    )


def test_only_graphs_may_be_undirected() -> None:
    assert [k.name for k in KINDS.values() if k.undirected(False)] == ["graph"]
    assert not any(k.undirected(True) for k in KINDS.values())


def test_link_width_of_tolerates_a_damaged_claim() -> None:
    assert link_width_of("mesh") == 3
    assert link_width_of(None) == 2
    assert link_width_of("polygon") == 2


def test_an_unknown_kind_is_refused_with_the_kinds_to_use() -> None:
    with pytest.raises(InvalidInputError, match="not a geometry kind; use one of point_cloud"):
        geometry_kind("polygon")


def test_the_expected_grid_is_computed_once_and_handed_out_as_fresh_lists() -> None:
    """Each open of a store checks its grid against the one the root gives
    (:func:`grid_problem`); the numpy steps run once per distinct root, and a caller that
    changes the lists it got does not change what the next caller gets."""
    box = ((-5.0, 0.0, 0.0), (99.0, 99.0, 20.0))
    first = expected_grid([10.0, 10.0, 10.0], box)
    assert first == ([-1, 0, 0], [11, 10, 3])
    first[0].append(7)
    first[1][0] = 0
    assert expected_grid((10.0, 10.0, 10.0), box) == ([-1, 0, 0], [11, 10, 3])
    assert grid_problem([10.0] * 3, [-1, 0, 0], box, [11, 10, 3]) is None
    assert "chunk_grid_origin" in str(grid_problem([10.0] * 3, [0, 0, 0], box, [11, 10, 3]))
    assert expected_grid([10.0] * 3, ((0.0, 0.0, float("inf")), (1.0, 1.0, 1.0))) is None
