"""One writer vocabulary: ``mode="w-" | "w" | "a"``, ``storage_options``, positional data
arguments alike across kinds, and old spellings that warn naming the new one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError, StoreExistsError

POINTS = np.arange(30, dtype=np.float32).reshape(10, 3)
SQUARE = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=np.float32)
RING = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])
TRIANGLES = np.array([[0, 1, 2], [0, 2, 3]])
PARENTS = np.array([-1, 0, 1, 2])


def _points(path: Path, **kwargs: Any) -> None:
    zv.write_points(path, POINTS, chunk_shape=8.0, progress=False, **kwargs)


def test_w_minus_is_the_default_and_refuses_an_existing_store(tmp_path: Path) -> None:
    _points(tmp_path / "p")
    with pytest.raises(StoreExistsError):
        _points(tmp_path / "p")
    with pytest.raises(StoreExistsError):
        _points(tmp_path / "p", mode="w-")


def test_w_replaces_a_store(tmp_path: Path) -> None:
    _points(tmp_path / "p")
    zv.write_points(tmp_path / "p", POINTS[:4], chunk_shape=8.0, mode="w", progress=False)
    assert zv.open(tmp_path / "p").vertex_count == 4


def test_overwrite_true_still_replaces_but_warns_naming_mode_w(tmp_path: Path) -> None:
    _points(tmp_path / "p")
    with pytest.warns(DeprecationWarning, match='overwrite=True is deprecated; use mode="w"'):
        zv.write_points(tmp_path / "p", POINTS[:4], chunk_shape=8.0, overwrite=True)
    assert zv.open(tmp_path / "p").vertex_count == 4


def test_a_appends_as_append_points_does(tmp_path: Path) -> None:
    _points(tmp_path / "a")
    _points(tmp_path / "b")
    zv.write_points(tmp_path / "a", POINTS + 1, mode="a", progress=False)
    zv.append_points(tmp_path / "b", POINTS + 1, progress=False)
    assert zv.open(tmp_path / "a").vertex_count == zv.open(tmp_path / "b").vertex_count == 20


@pytest.mark.slow  # the append_* tests run this path (they are write_*(mode="a")) by default
def test_a_appends_objects_of_every_kind(tmp_path: Path) -> None:
    zv.write_graph(tmp_path / "g", SQUARE, RING, chunk_shape=4.0, progress=False)
    zv.write_graph(tmp_path / "g", SQUARE + 2, RING, mode="a", progress=False)
    zv.write_mesh(tmp_path / "m", SQUARE, TRIANGLES, chunk_shape=4.0, progress=False)
    zv.write_mesh(tmp_path / "m", SQUARE + 2, TRIANGLES, mode="a", progress=False)
    zv.write_skeletons(tmp_path / "s", SQUARE, PARENTS, chunk_shape=4.0, progress=False)
    zv.write_skeletons(tmp_path / "s", SQUARE + 2, PARENTS, mode="a", progress=False)
    zv.write_polylines(tmp_path / "l", [SQUARE], chunk_shape=4.0, progress=False)
    zv.write_polylines(tmp_path / "l", [SQUARE + 2], mode="a", progress=False)
    for name in "gmsl":
        assert zv.open(tmp_path / name).object_count == 2


def test_a_keeps_the_stores_settings(tmp_path: Path) -> None:
    _points(tmp_path / "p")
    with pytest.raises(InvalidInputError, match="mode='a' keeps the store's own settings"):
        _points(tmp_path / "p", mode="a")
    with (
        pytest.raises(InvalidInputError, match="contradicts mode='a'"),
        pytest.warns(DeprecationWarning, match="overwrite=True is deprecated"),
    ):
        zv.write_points(tmp_path / "p", POINTS, mode="a", overwrite=True)


def test_an_unknown_mode_is_refused_with_the_modes(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="mode must be 'w-'"):
        _points(tmp_path / "p", mode="x")
    with pytest.raises(InvalidInputError, match="mode must be 'w-'"):
        zv.PointWriter(tmp_path / "p", mode="r")


def test_writers_of_whole_stores_refuse_mode_a(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="write_objects_parallel writes a new store"):
        zv.write_objects_parallel(tmp_path / "g", "graph", [], chunk_shape=4.0, mode="a")


def test_object_writer_appends_with_the_store_settings(tmp_path: Path) -> None:
    zv.write_graph(tmp_path / "g", SQUARE, RING, chunk_shape=4.0, progress=False)
    with pytest.raises(InvalidInputError, match=r"keeps the store's own settings.*chunk_shape"):
        zv.ObjectWriter(tmp_path / "g", kind="graph", chunk_shape=4.0, mode="a")
    with pytest.raises(InvalidInputError, match=r"keeps the store's own settings.*directed"):
        zv.ObjectWriter(tmp_path / "g", kind="graph", mode="a", directed=True)
    with pytest.raises(InvalidInputError, match="cannot append mesh objects to a graph store"):
        zv.ObjectWriter(tmp_path / "g", kind="mesh", mode="a")
    with zv.ObjectWriter(tmp_path / "g", kind="graph", mode="a", progress=False) as writer:
        writer.append(SQUARE + 5, RING)
    assert zv.open(tmp_path / "g").object_count == 2


def test_storage_options_reach_urls_only(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="storage_options apply to URLs"):
        _points(tmp_path / "p", storage_options={"anon": True})


def test_skeleton_parents_are_positional_like_graph_edges(tmp_path: Path) -> None:
    zv.write_skeletons(tmp_path / "s", SQUARE, PARENTS, chunk_shape=4.0, progress=False)
    zv.write_graph(tmp_path / "g", SQUARE, RING, chunk_shape=4.0, progress=False)
    assert zv.open(tmp_path / "s").vertex_count == zv.open(tmp_path / "g").vertex_count == 4


def test_mesh_takes_positions_and_vertices_warns(tmp_path: Path) -> None:
    zv.write_mesh(tmp_path / "a", positions=SQUARE, faces=TRIANGLES, chunk_shape=4.0)
    with pytest.warns(DeprecationWarning, match="vertices= is deprecated; use positions="):
        zv.write_mesh(tmp_path / "b", vertices=SQUARE, faces=TRIANGLES, chunk_shape=4.0)
    assert zv.open(tmp_path / "a").vertex_count == zv.open(tmp_path / "b").vertex_count
    with (
        pytest.raises(InvalidInputError, match="give positions only"),
        pytest.warns(DeprecationWarning, match="vertices= is deprecated"),
    ):
        zv.write_mesh(tmp_path / "c", SQUARE, TRIANGLES, vertices=SQUARE)


def test_objects_stream_gives_the_object_writer_store(tmp_path: Path) -> None:
    batches = [(SQUARE, RING), {"positions": SQUARE + 5, "edges": RING}]
    zv.write_objects_stream(tmp_path / "s", batches, kind="graph", chunk_shape=4.0, progress=False)
    zv.write_graph(
        tmp_path / "one",
        np.concatenate([SQUARE, SQUARE + 5]),
        np.concatenate([RING, RING + 4]),
        vertex_objects=np.repeat([0, 1], 4),
        chunk_shape=4.0,
        progress=False,
    )
    a, b = zv.open(tmp_path / "s"), zv.open(tmp_path / "one")
    assert (a.object_count, a.vertex_count) == (b.object_count, b.vertex_count) == (2, 8)


def test_polyline_batches_of_a_stream_are_the_polylines_argument(tmp_path: Path) -> None:
    vertices = np.concatenate([SQUARE, SQUARE + 1])
    batches = [(vertices, np.array([0, 4, 8])), [SQUARE + 3]]
    zv.write_objects_stream(
        tmp_path / "l", batches, kind="polyline", chunk_shape=4.0, progress=False
    )
    assert zv.open(tmp_path / "l").object_count == 3


def test_the_deprecation_warning_points_at_the_callers_line(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match="overwrite=True") as caught:
        zv.write_graph(tmp_path / "g", SQUARE, RING, chunk_shape=4.0, overwrite=True)
    with pytest.warns(DeprecationWarning, match="overwrite=True") as streamed:
        zv.ObjectWriter(tmp_path / "s", kind="graph", chunk_shape=4.0, overwrite=True).abort()
    assert {Path(w.filename).name for w in [*caught, *streamed]} == {Path(__file__).name}
