"""Issue 34: every writer answers an argument of the wrong type with an InvalidInputError
that names the argument and the type it expects (not a raw AttributeError or float
conversion error), checked in one place (``write/_writer_arguments.check_settings``); and every
writer takes ``units=``."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.write import _chunk_shapes as chunk_shapes
from zarr_vectors.write import _new_store as new_store

RNG = np.random.default_rng(34)
POINTS = RNG.uniform(0, 100, (60, 3))
EDGES = np.array([[0, 1], [1, 2]])
PARENTS = np.array([-1, 0, 1])
FACES = np.array([[0, 1, 2]])


def _points(store: Any, **kw: Any) -> None:
    zv.write_points(store, POINTS, **kw)


def _polylines(store: Any, **kw: Any) -> None:
    zv.write_polylines(store, [POINTS[:10], POINTS[10:30]], **kw)


def _graph(store: Any, **kw: Any) -> None:
    zv.write_graph(store, POINTS[:3], EDGES, **kw)


def _skeletons(store: Any, **kw: Any) -> None:
    zv.write_skeletons(store, POINTS[:3], parents=PARENTS, **kw)


def _mesh(store: Any, **kw: Any) -> None:
    zv.write_mesh(store, POINTS[:3], FACES, **kw)


def _stream(store: Any, **kw: Any) -> None:
    zv.write_points_stream(store, [POINTS[:30], POINTS[30:]], **kw)


def _point_writer(store: Any, **kw: Any) -> None:
    with zv.PointWriter(store, **kw) as writer:
        writer.append(POINTS)


def _object_writer(store: Any, **kw: Any) -> None:
    kw.setdefault("chunk_shape", 50.0)
    with zv.ObjectWriter(store, kind="polyline", **kw) as writer:
        writer.append([POINTS[:10]])


WRITERS: dict[str, Callable[..., None]] = {
    "write_points": _points,
    "write_polylines": _polylines,
    "write_graph": _graph,
    "write_skeletons": _skeletons,
    "write_mesh": _mesh,
    "write_points_stream": _stream,
    "PointWriter": _point_writer,
    "ObjectWriter": _object_writer,
}

WRONG_SETTINGS: list[tuple[str, dict[str, Any], str]] = [
    ("chunk_shape_text", {"chunk_shape": "abc"}, "chunk_shape must be one positive finite number"),
    ("chunk_shape_numeric_text", {"chunk_shape": "100"}, "not a string"),
    ("chunk_shape_bool", {"chunk_shape": True}, "chunk_shape must be one positive finite"),
    ("chunk_shape_list_of_text", {"chunk_shape": ["1", "2", "3"]}, "chunk_shape must be"),
    ("chunk_shape_dict", {"chunk_shape": {"x": 1}}, "chunk_shape must be"),
    ("chunk_shape_inf", {"chunk_shape": np.inf}, "positive finite"),
    ("chunk_shape_negative", {"chunk_shape": -5.0}, "positive finite"),
    ("bin_shape_text", {"bin_shape": "5"}, "bin_shape must be one positive finite number"),
    ("overwrite_text", {"overwrite": "yes"}, "overwrite must be a bool"),
    ("options_dict", {"options": {"rows_per_block": 8}}, "options must be a zarr_vectors."),
    ("units_number", {"units": 3}, "units must be one unit name"),
    ("units_empty", {"units": ""}, "units must be one unit name"),
]


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize(
    ("kwargs", "match"), [c[1:] for c in WRONG_SETTINGS], ids=[c[0] for c in WRONG_SETTINGS]
)
def test_wrong_setting_types_name_the_argument(
    writer: str, kwargs: dict[str, Any], match: str, tmp_path: Path
) -> None:
    target = tmp_path / "out.zarrvectors"
    with pytest.raises(InvalidInputError, match=re.escape(match)):
        WRITERS[writer](target, **kwargs)
    assert not target.exists()


MAPPING_ARGUMENTS: list[tuple[str, Callable[..., None], dict[str, Any], str]] = [
    ("points_attributes", _points, {"attributes": [POINTS[:, 0]]}, "attributes must be a mapping"),
    (
        "polyline_object_attributes",
        _polylines,
        {"object_attributes": [np.zeros(2)]},
        "object_attributes must be a mapping",
    ),
    ("graph_edge_attributes", _graph, {"edge_attributes": [np.zeros(2)]}, "edge_attributes must"),
    ("mesh_face_attributes", _mesh, {"face_attributes": (np.zeros(1),)}, "face_attributes must"),
    ("skeleton_groups", _skeletons, {"groups": [[0]]}, "groups must be a mapping"),
    (
        "stream_attributes",
        lambda s, **kw: zv.write_points_stream(s, [{"positions": POINTS, **kw}]),
        {"attributes": [POINTS[:, 0]]},
        "attributes must be a mapping",
    ),
]


@pytest.mark.parametrize(
    ("write", "kwargs", "match"),
    [c[1:] for c in MAPPING_ARGUMENTS],
    ids=[c[0] for c in MAPPING_ARGUMENTS],
)
def test_list_given_for_a_mapping_is_named(
    write: Callable[..., None], kwargs: dict[str, Any], match: str
) -> None:
    """Finding: ``attributes=[arr]`` gave ``AttributeError: 'list' object has no attribute
    'items'``."""
    with pytest.raises(InvalidInputError, match=re.escape(match)):
        write(MemoryStore(), **kwargs)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: zv.write_points(s, [[0.0, 1.0, 2.0], [1.0, 2.0]]), "positions must be an array"),
        (lambda s: zv.write_points(s, "0 1 2"), "positions must be an array of numbers"),
        (lambda s: zv.write_points(s, np.ones((4, 3), bool)), "positions must be numbers"),
        (lambda s: zv.write_points(s, POINTS, object_ids=[[1], [1, 2]]), "object_ids must be"),
        (
            lambda s: zv.write_points(s, POINTS, attributes={"a": [[1.0], [1.0, 2.0]]}),
            "attribute 'a' must be an array",
        ),
        (lambda s: zv.write_mesh(s, [*POINTS[:2].tolist(), [1.0]], FACES), "positions must be"),
        (lambda s: zv.write_graph(s, POINTS[:3], "0 1"), "edges must be an array"),
        (lambda s: zv.write_polylines(s, [POINTS[:2], [[1.0, 2.0], [3.0]]]), "polylines[1]"),
        (lambda s: zv.write_graph(s, POINTS[:3], EDGES, directed="no"), "directed must be True"),
    ],
    ids=[
        "ragged",
        "text",
        "bool",
        "ragged_ids",
        "ragged_attribute",
        "mesh_vertices",
        "edges_text",
        "ragged_polyline",
        "directed_text",
    ],
)
def test_non_numeric_and_ragged_arrays_are_named(call: Callable[[Any], None], match: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(match)):
        call(MemoryStore())


def test_parallel_writer_checks_settings_before_starting_a_cluster(tmp_path: Path) -> None:
    """The parallel writers check the shared settings before any worker starts (no
    ``distributed`` needed to get the error)."""
    with pytest.raises(InvalidInputError, match="chunk_shape must be one positive"):
        zv.write_points_parallel(tmp_path / "p", [POINTS], chunk_shape="100")
    with pytest.raises(InvalidInputError, match="chunk_shape must be one positive"):
        zv.write_objects_parallel(tmp_path / "o", "polyline", [[POINTS]], chunk_shape="100")
    with pytest.raises(InvalidInputError, match="overwrite must be a bool"):
        zv.write_objects_parallel(
            tmp_path / "o", "polyline", [[POINTS]], chunk_shape=10.0, overwrite="yes"
        )


def test_chunk_count_over_ten_million_is_refused_with_the_arithmetic() -> None:
    """Finding: a tiny ``chunk_shape`` ran for a minute without a word. A chunk shape with
    which the points could fill more than 10^7 chunks (the chunks the bounds span, or the
    point count if smaller) is refused before anything is allocated, with the arithmetic."""
    bounds = (np.zeros(3), np.full(3, 100.0))
    expected = (
        "chunk_shape 0.4 over bounds 0..100 on 3 axes gives 251 x 251 x 251 = 15,813,251 "
        "chunks: more than the 10,000,000"
    )
    with pytest.raises(InvalidInputError, match=re.escape(expected)):
        new_store.plan_grid(bounds, 20_000_000, 0.4, None, 3)
    sparse = "; 12,000,000 points could occupy 12,000,000 of them"
    with pytest.raises(InvalidInputError, match=re.escape(sparse)):
        new_store.plan_grid(bounds, 12_000_000, 0.001, None, 3)
    new_store.plan_grid(bounds, 10_000_000, 0.001, None, 3)  # at most 10^7 chunks occupied
    new_store.plan_grid(bounds, 20_000_000, 0.5, None, 3)  # 201**3: about 8.1e6, allowed


def test_a_refused_chunk_shape_leaves_the_destination_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writers refuse it through ``plan_grid``, before the destination is opened."""
    monkeypatch.setattr(chunk_shapes, "MAX_CHUNKS", 900)
    target = tmp_path / "many.zarrvectors"
    with pytest.raises(InvalidInputError, match=re.escape("10 x 10 x 10 = 1,000 chunks")):
        zv.write_points(target, RNG.uniform(0, 100, (5000, 3)), chunk_shape=10.0)
    assert not target.exists()


def _units_of(write: Callable[..., None], units: Any, tmp_path: Path) -> tuple[str, ...]:
    target = tmp_path / "u.zarrvectors"
    write(target, units=units, chunk_shape=50.0)
    return zv.open(target).axis_units


@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_writer_takes_units(writer: str, tmp_path: Path) -> None:
    """Finding: units could be set only through ``WriteOptions(axis_units=...)``."""
    assert _units_of(WRITERS[writer], "micrometer", tmp_path) == ("micrometer",) * 3
    per_axis = ("nanometer", "nanometer", "micrometer")
    target = tmp_path / "v.zarrvectors"
    WRITERS[writer](target, units=per_axis, chunk_shape=50.0)
    assert zv.open(target).axis_units == per_axis


def test_units_need_one_or_one_per_axis_and_agree_with_options() -> None:
    with pytest.raises(InvalidInputError, match=re.escape("units (axis_units) need 1 or 3")):
        zv.write_points(MemoryStore(), POINTS, units=("m", "m"))
    with pytest.raises(InvalidInputError, match="disagree"):
        zv.write_points(
            MemoryStore(), POINTS, units="m", options=zv.WriteOptions(axis_units="nanometer")
        )
    same = zv.WriteOptions(axis_units="meter")
    zv.write_points(MemoryStore(), POINTS, units="meter", options=same)
    as_list = zv.WriteOptions(axis_units=["m", "m", "um"])  # type: ignore[arg-type]
    zv.write_points(MemoryStore(), POINTS, units=("m", "m", "um"), options=as_list)


def test_units_are_documented_on_every_writer() -> None:
    for write in (
        zv.write_points,
        zv.write_polylines,
        zv.write_graph,
        zv.write_skeletons,
        zv.write_mesh,
        zv.PointWriter,
        zv.write_points_parallel,
    ):
        assert "units\n" in (write.__doc__ or ""), write
    for write in (zv.ObjectWriter, zv.write_objects_parallel):
        assert "``units``" in (write.__doc__ or ""), write


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (zv.WriteOptions(rows_per_block="8"), "rows_per_block must be a positive int"),  # type: ignore[arg-type]
        (zv.WriteOptions(rows_per_block=True), "rows_per_block must be a positive int"),
        (zv.WriteOptions(compression="zstd"), "compression must be 'default' or None"),
        (zv.WriteOptions(axis_names="xyz"), "axis_names must be a sequence"),  # type: ignore[arg-type]
    ],
    ids=["rows_text", "rows_bool", "compression", "axis_names_text"],
)
def test_wrong_write_options_are_named(options: zv.WriteOptions, match: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(match)):
        zv.write_points(MemoryStore(), POINTS, options=options)


def test_appends_name_wrong_argument_types(tmp_path: Path) -> None:
    """The ``append_*`` functions go through the same checks as the writers."""
    points, lines = tmp_path / "p", tmp_path / "l"
    zv.write_points(points, POINTS, chunk_shape=50.0, attributes={"a": np.zeros(60)})
    zv.write_polylines(lines, [POINTS[:10]], chunk_shape=50.0, attributes={"a": np.zeros(10)})
    with pytest.raises(InvalidInputError, match="attributes must be a mapping"):
        zv.append_points(points, POINTS, attributes=[np.zeros(60)], progress=False)
    with pytest.raises(InvalidInputError, match="positions must be an array of numbers"):
        zv.append_points(points, "1 2 3", attributes={"a": np.zeros(1)}, progress=False)
    with pytest.raises(InvalidInputError, match="memory_budget must be a number"):
        zv.append_points(points, POINTS, attributes={"a": np.zeros(60)}, memory_budget=True)
    with pytest.raises(InvalidInputError, match="attributes must be a mapping"):
        zv.append_polylines(lines, [POINTS[:5]], attributes=[np.zeros(5)], progress=False)
    with pytest.raises(InvalidInputError, match=re.escape("polylines[0] must be an array")):
        zv.append_polylines(lines, [[[1.0, 2.0, 3.0], [1.0]]], progress=False)


def test_a_streaming_write_refuses_too_many_chunks_at_the_batch_that_crosses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streaming write with ``chunk_shape`` refuses the batch that takes it over the
    limit, when it is appended (not after spilling everything); earlier batches stay."""
    monkeypatch.setattr(chunk_shapes, "MAX_CHUNKS", 900)
    target = tmp_path / "s"
    with zv.PointWriter(target, chunk_shape=10.0, progress=False) as writer:
        writer.append(RNG.uniform(0, 50, (2000, 3)))
        with pytest.raises(InvalidInputError, match="chunks: more than the 900"):
            writer.append(RNG.uniform(0, 100, (2000, 3)))
    assert zv.open(target).vertex_count == 2000


def test_a_mapping_that_is_not_a_dict_is_still_taken() -> None:
    """The mapping check refuses lists, not mapping-like objects (a dataframe's columns)."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": np.arange(60.0), "b": np.arange(60, dtype=np.int16)})
    store = MemoryStore()
    zv.write_points(store, POINTS, attributes=frame, chunk_shape=50.0)
    got = zv.open(store).read()
    assert sorted(got.attributes) == ["a", "b"]
