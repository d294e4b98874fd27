"""Edited and hostile metadata found by the metadata-edit corpus (issue 35, item 3).

Each case is one finding of ``test_metadata_corpus``: before the fix a read crashed with
numpy's or Python's error (ZeroDivisionError, IndexError), exhausted memory (an N_max or a
row count of 2**40) or returned a wrong answer; validation crashed on some. Now every read
raises our MetadataError or CorruptChunkError and ``validate(level=3)`` reports an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from tests.validate.object_stores import object_kind_store
from zarr_vectors.format.layout import grid_problem
from zarr_vectors.format.nodes import reserved_dtype_problem
from zarr_vectors.store.arrays import check_stored_chunks
from zarr_vectors.store.io import StoreIO
from zarr_vectors.validate import validate

Doc = dict[str, Any]
BIG = 2**40


def _set(*path: Any) -> Callable[[Doc], None]:
    """An edit that sets ``doc[path[0]]...[path[-2]] = path[-1]``."""

    def apply(doc: Doc) -> None:
        node = doc
        for part in path[:-2]:
            node = node[part]
        node[path[-2]] = path[-1]

    return apply


def _n_max(value: int) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        doc["shape"][3] = doc["chunk_grid"]["configuration"]["chunk_shape"][3] = value

    return apply


def _drop_index_crc(doc: Doc) -> None:
    conf = doc["codecs"][0]["configuration"]
    conf["index_codecs"] = [c for c in conf["index_codecs"] if c["name"] != "crc32c"]


def _rows_and_count(key: str) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        doc["shape"][0] = doc["attributes"][key] = BIG

    return apply


# (kind, array, edit): each was a crash, a MemoryError or a wrong answer on read
FINDINGS: dict[str, tuple[str, str, Callable[[Doc], None]]] = {
    "row_block_of_0_rows_divided_by_zero": (
        "streamline",
        "vertices",
        _set("codecs", 0, "configuration", "chunk_shape", 3, 0),
    ),
    "shard_index_without_crc32c_read_as_garbage": ("points", "vertices", _drop_index_crc),
    "vertex_counts_chunk_of_0_divided_by_zero": (
        "mesh",
        "vertex_counts",
        _set("chunk_grid", "configuration", "chunk_shape", 0, 0),
    ),
    "object_attribute_one_row_short_raised_index_error": (
        "graph",
        "object_attributes/weight",
        _set("shape", 0, 2),
    ),
    "object_attribute_of_2_40_rows_exhausted_memory": (
        "mesh",
        "object_attributes/weight",
        _set("shape", 0, BIG),
    ),
    "cross_chunk_links_one_row_short_lost_a_link": (
        "graph",
        "cross_chunk_links",
        _set("shape", 0, 31),
    ),
    "cross_chunk_links_of_2_40_rows_exhausted_memory": (
        "skeleton",
        "cross_chunk_links",
        _rows_and_count("num_links"),
    ),
    "object_index_data_of_2_40_bytes_exhausted_memory": (
        "streamline",
        "object_index/data",
        _set("shape", 0, BIG),
    ),
    "n_max_of_2_40_exhausted_memory": ("points", "vertex_fragments", _n_max(BIG)),
    "n_max_doubled_read_wrong_rows": ("graph", "vertices", _set("shape", 3, 32)),
    "link_width_edited_raised_numpy_errors": ("skeleton", "links/0", _set("shape", 4, 3)),
    "attribute_vector_width_edited_read_wrong_values": (
        "points",
        "attributes/v",
        _set("shape", 4, 1),
    ),
    "reserved_radius_edited_to_int32_read_as_integers": (
        "skeleton",
        "attributes/radius",
        _set("data_type", "int32"),
    ),
}


def _store(kind: str) -> MemoryStore:
    return s.point_store() if kind == "points" else object_kind_store(kind)


def _reads(kind: str) -> list[Callable[[zv.VectorStore], Any]]:
    reads: list[Callable[[zv.VectorStore], Any]] = [
        lambda v: v.read(),
        lambda v: v.query(([0.0, 0.0, 0.0], [6.0, 6.0, 6.0])),
        lambda v: v.query(zv.ball([5.0, 5.0, 5.0], 4.0)),
    ]
    if kind != "points":
        reads.append(lambda v: v.read_objects([2, 0]))
    return reads


@pytest.mark.parametrize("finding", FINDINGS, ids=list(FINDINGS))
def test_edited_metadata_is_refused_on_read_and_reported(finding: str) -> None:
    """Every read raises our error or returns the undamaged answer; at least one raises."""
    kind, array, edit = FINDINGS[finding]
    store = _store(kind)
    expected = [read(zv.open(store)) for read in _reads(kind)]
    s.edit_array(store, f"0/{array}", edit)
    report = validate(store, level=3, progress=False)
    assert not report.ok
    assert all(p.check_id for p in report.errors)
    raised = 0
    for read, answer in zip(_reads(kind), expected, strict=True):
        try:
            found = read(zv.open(store))
        except (zv.MetadataError, zv.CorruptChunkError):
            raised += 1
        else:
            np.testing.assert_array_equal(found.positions, answer.positions)
    assert raised


def test_groupings_longer_than_the_object_count_is_an_l2_error() -> None:
    """validate(level=3) read a groupings array of 2**40 columns: MemoryError before."""
    store = object_kind_store("mesh")
    s.edit_array(store, "0/groupings", _set("shape", 1, BIG))
    ids = {p.check_id for p in validate(store, level=3, progress=False).errors}
    assert "L2.groupings_meta" in ids
    with pytest.raises(zv.MetadataError, match="groupings"):
        zv.open(store).query(group="first")


@pytest.mark.parametrize("array", ["groupings", "object_index/offsets", "cross_chunk_links"])
def test_global_chunk_of_0_is_an_l2_error(array: str) -> None:
    """The validator divided by zero on a global array with a chunk length of 0."""
    store = object_kind_store("graph")
    s.edit_array(store, f"0/{array}", _set("chunk_grid", "configuration", "chunk_shape", 0, 0))
    report = validate(store, level=3, progress=False)
    assert not report.ok
    assert {p.check_id for p in report.errors} & {
        "L2.groupings_meta",
        "L2.object_index_meta",
        "L2.cross_chunk_links_meta",
    }


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            {
                "shape": [4, 2],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 2]}},
            },
            None,
        ),
        (
            {
                "shape": [4, 2],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [0, 2]}},
            },
            "chunk_grid",
        ),
        (
            {
                "shape": [4],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 2]}},
            },
            "chunk_grid",
        ),
        (
            {
                "shape": [4, True],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 2]}},
            },
            "shape",
        ),
        (
            {
                "shape": [-1],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
            },
            "shape",
        ),
        (
            {
                "shape": [4],
                "chunk_grid": {"name": "rectilinear", "configuration": {"chunk_shape": [4]}},
            },
            "chunk_grid",
        ),
    ],
)
def test_grid_problem_names_what_is_wrong(doc: Doc, expected: str | None) -> None:
    problem = grid_problem(doc)
    assert problem is None if expected is None else expected in (problem or "")


@pytest.mark.parametrize(
    ("family", "name", "kind", "dtype", "refused"),
    [
        ("attributes", "radius", "skeleton", "float32", False),
        ("attributes", "radius", "skeleton", "int32", True),
        ("attributes", "radius", "graph", "int32", False),  # not reserved in a graph
        ("attributes", "swc_type", "skeleton", "float32", True),
        ("fragment_attributes", "object_id", "mesh", "uint8", False),
        ("fragment_attributes", "object_id", "mesh", "<U4", True),
        ("attributes", "object_id", "point_cloud", None, True),
        ("attributes", "intensity", "point_cloud", "bool", False),
    ],
)
def test_reserved_dtype_problem(
    family: str, name: str, kind: str, dtype: Any, refused: bool
) -> None:
    assert (reserved_dtype_problem(family, name, kind, dtype) is not None) is refused


def _plain(shape: list[int], chunks: list[int]) -> Doc:
    return {
        "shape": shape,
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
    }


@pytest.mark.parametrize(
    ("shape", "chunks", "stored", "refused"),
    [
        ([BIG], [4096], 1, True),  # 2**40 bytes declared, one chunk stored
        ([BIG], [BIG], 0, True),  # one chunk declared, none stored
        ([2**27], [2**20], 127, False),  # all but one (a first chunk of offset 0)
        ([2**27], [2**20], 126, True),
        ([2**20], [4096], 0, False),  # small arrays are not listed
    ],
)
def test_check_stored_chunks(
    shape: list[int], chunks: list[int], stored: int, refused: bool
) -> None:
    store = MemoryStore()
    io = StoreIO(store)
    for i in range(stored):
        io.set(f"a/c/{i + 1}", b"x")
    if refused:
        with pytest.raises(zv.MetadataError, match="holds"):
            check_stored_chunks(io, "a", _plain(shape, chunks))
    else:
        check_stored_chunks(io, "a", _plain(shape, chunks))  # accepted: no error


def test_object_count_of_2_40_written_consistently_is_refused_before_allocating() -> None:
    """object_count, num_objects and the offsets' shape all 2**40: the offsets' one stored
    chunk cannot hold them, so reads refuse before allocating 8 TiB."""
    store = object_kind_store("streamline")
    s.edit_level(store, lambda a: a.__setitem__("object_count", BIG))
    s.edit(store, "0/object_index/zarr.json", _set("attributes", "num_objects", BIG))
    s.edit_array(store, "0/object_index/offsets", _set("shape", 0, BIG))
    s.edit_array(store, "0/object_attributes/weight", _set("shape", 0, BIG))
    report = validate(store, level=3, progress=False)
    assert not report.ok
    with pytest.raises(zv.MetadataError, match="holds"):
        zv.open(store).read_objects([0])
