"""Edited ``vertices`` metadata: validation fails and every reader raises our errors (issue 40).

Before, ``vertices`` with ``data_type`` edited to an integer type read as garbage, and a
grid edited to 2**31 read on as if nothing had changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from tests.validate.object_stores import object_kind_store
from zarr_vectors.format.kinds import grid_problem, kind_nodes_problem
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


# -- chunk grid and geometry_type edited in the root metadata (issue 40, item 4) -------

_KINDS = ["points", "mesh", "polyline", "graph"]
BOX_ALL = ([-1e9] * 3, [1e9] * 3)


def _kind_store(kind: str) -> Any:
    return s.point_store() if kind == "points" else object_kind_store(kind)


def _root_attr(store: Any, key: str) -> Any:
    return s.io(store).read_json("zarr.json")["attributes"][key]


def _assert_refused_everywhere(store: Any, match: str) -> None:
    """validate fails, and opening a level (read, query, read_objects) raises MetadataError."""
    assert not validate(store, level=3).ok
    opened = zv.open(store)
    with pytest.raises(zv.MetadataError, match=match):
        opened.read()
    with pytest.raises(zv.MetadataError, match=match):
        zv.open(store).query(([0, 0, 0], [10, 10, 10]))
    if opened.kind != "point_cloud":
        with pytest.raises(zv.MetadataError, match=match):
            zv.open(store).read_objects([0])


@pytest.mark.parametrize("shift", [10, -10])
@pytest.mark.parametrize("kind", _KINDS)
def test_chunk_grid_origin_edited_is_refused_on_read(kind: str, shift: int) -> None:
    """Before: read() answered, a query of the data's region returned 0 rows."""
    store = _kind_store(kind)
    origin = [o + shift for o in _root_attr(store, "chunk_grid_origin")]
    s.edit_root(store, lambda a: a.__setitem__("chunk_grid_origin", origin))
    _assert_refused_everywhere(store, "chunk_grid_origin")


@pytest.mark.parametrize("factor", [2.0, 0.5])
@pytest.mark.parametrize("kind", _KINDS)
def test_chunk_shape_edited_is_refused_on_read(kind: str, factor: float) -> None:
    """Before: queries answered from a grid of another chunk size (wrong rows, or counts)."""
    store = _kind_store(kind)
    shape = [c * factor for c in _root_attr(store, "chunk_shape")]
    s.edit_root(store, lambda a: a.__setitem__("chunk_shape", shape))
    _assert_refused_everywhere(store, "chunk_shape|chunk_grid_origin")


@pytest.mark.parametrize(
    ("kind", "relabelled", "match"),
    [
        ("points", "mesh", "lacks links"),
        ("points", "graph", "lacks links"),
        ("mesh", "point_cloud", "must not have"),
        ("mesh", "polyline", "lacks cross_chunk_links"),
        ("polyline", "point_cloud", "must not have"),
        ("polyline", "mesh", "must not have"),
        ("graph", "mesh", "must not have"),
        ("graph", "skeleton", "is_tree"),
    ],
)
def test_geometry_type_edited_is_refused_on_read(kind: str, relabelled: str, match: str) -> None:
    """Before: a mesh relabelled a point cloud or a polyline read on as the new kind."""
    store = _kind_store(kind)
    s.edit_root(store, lambda a: a.__setitem__("geometry_type", relabelled))
    assert not validate(store, level=3).ok
    with pytest.raises(zv.MetadataError, match=match):
        zv.open(store).read()


@pytest.mark.parametrize("kind", ["streamline", "skeleton"])
def test_relabelled_as_a_graph_is_refused_on_read(kind: str) -> None:
    """Same nodes as a graph: only the link rows tell them apart. Before: a skeleton's
    root link ``[r, -1]`` and backward edges ``[larger, smaller]`` were read as graph edges."""
    store = object_kind_store(kind)
    s.edit_root(store, lambda a: a.__setitem__("geometry_type", "graph"))
    assert "L3.edge_orientation" in {p.check_id for p in validate(store, level=3).errors}
    opened = zv.open(store)
    for read in (opened.read, lambda: opened.read_objects([0]), lambda: opened.query(BOX_ALL)):
        with pytest.raises(zv.CorruptChunkError, match="stored graph edge"):
            read()


def test_links_width_other_than_the_kind_is_refused_on_read() -> None:
    """A mesh's links/0 with 2 columns (an edited shape): refused, not read as faces."""
    store = object_kind_store("mesh")
    s.edit_array(store, "0/links/0", lambda d: d["shape"].__setitem__(-1, 2))
    assert not validate(store, level=3).ok
    with pytest.raises(zv.MetadataError, match="3 columns"):
        zv.open(store).read()


@pytest.mark.parametrize(
    ("origin", "grid", "expected"),
    [
        ([-1, 0, 0], [3, 2, 1], None),
        ([0, 0, 0], [3, 2, 1], "chunk_grid_origin"),
        ([-1, 0, 0], [3, 2, 2], "chunk grid"),
    ],
)
def test_grid_problem_names_what_is_wrong(
    origin: list[int], grid: list[int], expected: str | None
) -> None:
    box = ((-10.0, 0.0, 0.0), (19.5, 19.5, 9.5))
    problem = grid_problem((10.0, 10.0, 10.0), origin, box, grid)
    assert problem is None if expected is None else expected in str(problem)


def test_grid_problem_of_a_store_without_vertices() -> None:
    assert grid_problem((10.0, 10.0), [0, 0], None, [1, 1]) is None
    assert grid_problem((10.0, 10.0), [0, 0], None, [2, 1]) is not None


@pytest.mark.parametrize(
    ("kind", "children", "expected"),
    [
        ("point_cloud", ["vertices", "attributes"], None),
        ("point_cloud", ["vertices", "links"], "must not have"),
        ("mesh", ["links", "link_fragments", "object_index"], None),
        ("mesh", ["links", "link_fragments", "object_index", "cross_chunk_links"], "must not"),
        ("graph", ["links", "link_fragments", "object_index"], "cross_chunk_links"),
        ("graph", ["links", "link_fragments", "object_index", "cross_chunk_links"], None),
    ],
)
def test_kind_nodes_problem_follows_the_table_of_section_10_1(
    kind: str, children: list[str], expected: str | None
) -> None:
    problem = kind_nodes_problem(kind, children)
    assert problem is None if expected is None else expected in str(problem)


# -- appenders check node metadata as readers do (format.nodes.node_problem) --------------


def _lines(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.cumsum(rng.normal(size=(6, 3)), axis=0) for _ in range(4)]


def _polyline_store() -> MemoryStore:
    store = MemoryStore()
    zv.write_polylines(store, _lines(0), chunk_shape=4.0, object_attributes={"w": np.ones(4)})
    return store


def _zarr_format_two(store: MemoryStore, key: str) -> None:
    s.edit(store, key, lambda d: d.__setitem__("zarr_format", 2))


def test_append_points_refuses_a_root_zarr_json_that_is_not_a_v3_group() -> None:
    """Before: the append went ahead and wrote a fresh root over the damaged one."""
    store = s.point_store(object_ids=False)
    _zarr_format_two(store, "zarr.json")
    before = _contents(store)
    with pytest.raises(zv.MetadataError, match="zarr_format"):
        zv.append_points(store, s.points(seed=9, n=20))
    assert _contents(store) == before


def _contents(store: MemoryStore) -> dict[str, bytes | None]:
    keys = s.io(store).list_prefix("")
    return dict(zip(keys, s.io(store).get_many([(k, None) for k in keys]), strict=True))


@pytest.mark.parametrize(
    "key",
    [
        "zarr.json",
        "0/fragment_records/zarr.json",
        "0/object_index/data/zarr.json",
        "0/cross_chunk_links/zarr.json",
        "0/object_attributes/w/zarr.json",
    ],
)
def test_append_polylines_refuses_node_metadata_that_is_not_zarr_v3(key: str) -> None:
    """Before: the appender read these documents without the node check (appended on, or
    raised CorruptChunkError("'dtype'"))."""
    store = _polyline_store()
    _zarr_format_two(store, key)
    with pytest.raises(zv.MetadataError, match="zarr_format"):
        zv.append_polylines(store, _lines(1), object_attributes={"w": np.ones(4)})
