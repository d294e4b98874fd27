"""Edited ``vertices`` metadata: validation fails and every reader raises our errors (issue 40).

Before, ``vertices`` with ``data_type`` edited to an integer type read as garbage, and a
grid edited to 2**31 read on as if nothing had changed.
"""

from __future__ import annotations

from typing import Any

import pytest

import zarr_vectors as zv
from tests.validate import stores as s
from tests.validate.object_stores import object_kind_store
from zarr_vectors.format.nodes import vertices_shape_problem
from zarr_vectors.validate import validate


def _set_vertices(store: Any, key: str, value: Any) -> None:
    s.edit_array(store, "0/vertices", lambda d: d.__setitem__(key, value))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float16", "uint8"])
def test_vertices_data_type_edited_is_refused_on_read(dtype: str) -> None:
    store = object_kind_store("mesh")
    _set_vertices(store, "data_type", dtype)
    assert not validate(store, level=3).ok
    with pytest.raises(zv.MetadataError, match="data_type"):
        zv.open(store).read_objects([0])
    with pytest.raises(zv.MetadataError, match="data_type"):
        zv.open(store).read()


def test_vertices_data_type_edited_is_refused_on_read_of_points() -> None:
    store = s.point_store()
    _set_vertices(store, "data_type", "int64")
    assert not validate(store, level=3).ok
    with pytest.raises(zv.MetadataError, match="data_type"):
        zv.open(store).read()


@pytest.mark.parametrize("length", [2**31, 2**62])
def test_vertices_grid_edited_is_refused_on_read(length: int) -> None:
    store = object_kind_store("mesh")
    s.edit_array(store, "0/vertices", lambda d: d["shape"].__setitem__(0, length))
    assert not validate(store, level=3).ok
    with pytest.raises(zv.MetadataError):
        zv.open(store).read()


@pytest.mark.parametrize("kind", ["mesh", "points"])
def test_vertices_and_counts_grid_of_2_31_is_refused_on_read(kind: str) -> None:
    """A grid of 2**31 on every axis: our MetadataError, not numpy's "invalid dims"."""
    store = s.point_store() if kind == "points" else object_kind_store(kind)
    for path in ("0/vertices", "0/vertex_counts"):
        s.edit_array(store, path, lambda d: d["shape"].__setitem__(slice(0, 3), [2**31] * 3))
    assert not validate(store, level=3).ok
    with pytest.raises(zv.MetadataError, match="2\\^63"):
        zv.open(store).read()


def test_vertices_last_dimension_disagreeing_with_spatial_dims_is_refused() -> None:
    store = object_kind_store("mesh")
    s.edit_array(store, "0/vertices", lambda d: d["shape"].__setitem__(-1, 2))
    assert not validate(store, level=3).ok
    with pytest.raises(zv.MetadataError, match="shape"):
        zv.open(store).read()


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"data_type": "float32", "shape": [3, 2, 3, 24, 3]}, None),
        ({"data_type": "int32", "shape": [3, 2, 3, 24, 3]}, "data_type"),
        ({"data_type": "float64", "shape": [3, 2, 3, 24]}, "shape"),
        ({"data_type": "float64", "shape": [3, 2, 0, 24, 3]}, "shape"),
        ({"data_type": "float64", "shape": [3, True, 3, 24, 3]}, "shape"),
        ({"data_type": "float64", "shape": [2**31, 2**31, 2**31, 24, 3]}, "2^63"),
    ],
)
def test_vertices_shape_problem_names_what_is_wrong(
    meta: dict[str, Any], expected: str | None
) -> None:
    problem = vertices_shape_problem(meta, 3)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None
        assert expected in problem


@pytest.mark.parametrize("change", [-1, 1])
@pytest.mark.parametrize("kind", ["mesh", "graph", "polyline"])
def test_object_count_edited_is_refused_on_read(kind: str, change: int) -> None:
    """object_count minus one: our MetadataError, not numpy's IndexError from store.groups."""
    store = object_kind_store(kind)
    s.edit_level(store, lambda a: a.__setitem__("object_count", a["object_count"] + change))
    assert not validate(store, level=3).ok
    opened = zv.open(store)
    with pytest.raises(zv.MetadataError, match="object_count"):
        _ = opened.groups
    with pytest.raises(zv.MetadataError, match="object_count"):
        opened.read()


def test_vertex_counts_chunk_deleted_and_fill_value_edited_is_refused_on_read() -> None:
    """The deleted chunk read as the edited fill value: rows went missing without an error."""
    store = s.point_store()
    s.delete_prefix(store, "0/vertex_counts/c")
    s.edit_array(store, "0/vertex_counts", lambda d: d.__setitem__("fill_value", 7))
    assert not validate(store, level=3).ok
    with pytest.raises(zv.MetadataError, match="fill_value"):
        zv.open(store).read()
