"""Stores of format 1.3 are plain Zarr v3 (spec §2.3, §9.0.3): xarray opens every group of
them with the values zarr-python reads, and a zarr-python walk raises no warning. Stores of
formats 1.0 to 1.2 keep their ``.zattrs`` mirrors, which every zarr-python walk warns about,
until ``zv.upgrade`` makes them 1.3 stores (spec §3.3.1): the walk of every golden store runs
on the old-format ones after ``zv.upgrade`` of a copy.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
import zarr
from zarr.errors import ZarrUserWarning

import zarr_vectors as zv
from zarr_vectors.format.dimensions import array_dimension_names

GOLDEN = Path(__file__).parent / "data" / "golden"
PLAIN = sorted(p for v in ("1.3", "1.4", "1.5", "1.6") for p in (GOLDEN / v).glob("*.zarrvectors"))
QUICK = ("graph_2d_edge_attributes", "points_3d_sample_levels", "skeletons_3d_thin_levels")
"""1.6 golden stores whose groups xarray opens in the default run (the others, and every
1.3 to 1.5 store, whose arrays are those of 1.6 with other codecs or blobs: ``-m slow``):
every family of arrays (edge values, coarse levels, object arrays) is among them."""
MIRRORED = sorted(p for v in ("1.0", "1.1", "1.2") for p in (GOLDEN / v).glob("*.zarrvectors"))
EARLIER = sorted((GOLDEN / "earlier").rglob("*.zarrvectors"))
"""Stores of earlier writers (formats 1.0, 1.1 and 1.3 with mirrors), frozen like 1.0-1.2."""


def _walk(path: Path) -> list[tuple[str, Any]]:
    """Every node below the root, as zarr-python's recursive ``members`` lists it."""
    return list(zarr.open_group(path, mode="r").members(max_depth=None))


def _groups_with_arrays(path: Path) -> dict[str, list[str]]:
    """Group path -> names of the arrays directly in it."""
    found: dict[str, list[str]] = {}
    for name, node in _walk(path):
        if isinstance(node, zarr.Array):
            group, _, leaf = name.rpartition("/")
            found.setdefault(group, []).append(leaf)
    return found


def _check_xarray(path: Path) -> int:
    """Open every group holding arrays with xarray; the same values and names as zarr."""
    groups = _groups_with_arrays(path)
    root = zarr.open_group(path, mode="r")
    for group, names in groups.items():
        with xr.open_zarr(
            path, group=group, consolidated=False, mask_and_scale=False, chunks=None
        ) as ds:
            assert sorted(ds.data_vars) == sorted(names), group
            for name in names:
                array = root[f"{group}/{name}"]
                assert isinstance(array, zarr.Array)
                assert ds[name].dims == tuple(array.metadata.dimension_names), name
                np.testing.assert_array_equal(ds[name].values, array[...], err_msg=name)
    return len(groups)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p,
            marks=()
            if p.name.removesuffix(".zarrvectors") in QUICK and p.parent.name == "1.6"
            else pytest.mark.slow,
        )
        for p in PLAIN
    ],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_xarray_opens_every_group_of_the_plain_golden_stores(path: Path) -> None:
    groups = _check_xarray(path)
    levels = len(zv.open(path).levels)
    assert groups >= 2 * levels  # at least each level and one of its subgroups


@pytest.mark.parametrize(
    "path", [*PLAIN, *MIRRORED, *EARLIER], ids=lambda p: str(p.relative_to(GOLDEN))
)
def test_zarr_walk_of_every_golden_store_raises_no_warning(path: Path, tmp_path: Path) -> None:
    """Every golden store, walked by zarr-python with warnings as errors: the 1.3 and 1.4
    stores as they are; the stores of formats 1.0 to 1.2 (and the 1.3 stores an earlier writer left
    with mirrors) after ``zv.upgrade`` of a copy, since their ``.zattrs`` and
    ``metadata.json`` are what zarr-python warns about (see the next test)."""
    if path not in PLAIN:
        path = Path(shutil.copytree(path, tmp_path / path.name))
        assert zv.upgrade(path).changed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nodes = _walk(path)
    arrays = [name for name, node in nodes if isinstance(node, zarr.Array)]
    assert "0/vertices" in arrays
    assert not any(p.name in (".zattrs", "metadata.json") for p in path.rglob("*"))
    expected = path.parent.name if path.parent.name in ("1.3", "1.4", "1.5", "1.6") else "1.3"
    assert zv.open(path).metadata["zarr_vectors_version"] == expected


@pytest.mark.parametrize("path", MIRRORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_zarr_walk_of_older_golden_stores_warns_only_of_their_mirrors(path: Path) -> None:
    """Formats 1.0 to 1.2 hold a ``.zattrs`` at the root and in each level (spec §2.3):
    every zarr-python walk (``members``, ``tree``, ``arrays``) warns once per file, and
    finds every node."""
    mirrors = sorted(str(p.relative_to(path)) for p in path.rglob(".zattrs"))
    assert mirrors == [".zattrs", "0/.zattrs"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nodes = _walk(path)
    messages = {str(w.message) for w in caught if issubclass(w.category, ZarrUserWarning)}
    assert messages == {"Object at .zattrs is not recognized as a component of a Zarr hierarchy."}
    assert len(caught) == len(mirrors)
    assert any(name == "0/vertices" for name, _ in nodes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ZarrUserWarning):
            _walk(path)


def test_every_array_name_is_the_spec_rule() -> None:
    """Per-chunk arrays share the chunk axes; rows and components are per array."""
    assert array_dimension_names("2/attributes/rgb", 5, ["a", "b", "c"], per_chunk=True) == (
        "chunk.a",
        "chunk.b",
        "chunk.c",
        "row.rgb",
        "component.rgb",
    )
    assert array_dimension_names("0/groupings", 3, "xy", per_chunk=False) == (
        "row.groupings",
        "component.groupings",
        "component.groupings.1",
    )


def _lines(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [np.cumsum(rng.normal(0, 2, (12, 2)), axis=0) + 10 for _ in range(n)]


def test_written_stores_open_in_xarray(tmp_path: Path) -> None:
    """Written stores of other shapes: 2-D with its own axis names and several chunks per
    shard; a graph with values on edges within and across chunks; levels of detail."""
    rng = np.random.default_rng(5)
    points = tmp_path / "points.zarr"
    zv.write_points(
        points,
        rng.uniform(0, 30, (400, 2)),
        chunk_shape=5.0,
        attributes={"rgb": rng.integers(0, 255, (400, 3)).astype(np.uint8)},
        options=zv.WriteOptions(axis_names=("u", "v"), shard_chunks=(2, 2)),
        levels=zv.Levels(count=1),
        progress=False,
    )
    vertices = zarr.open_array(points / "0" / "vertices", mode="r")
    assert vertices.metadata.dimension_names == (
        "chunk.u",
        "chunk.v",
        "row.vertices",
        "component.vertices",
    )
    graph = tmp_path / "graph.zarr"
    positions = rng.uniform(0, 20, (60, 2))
    edges = np.stack([np.arange(59), np.arange(1, 60)], axis=1)
    zv.write_graph(
        graph,
        positions,
        edges,
        chunk_shape=5.0,
        edge_attributes={"w": rng.random(59).astype(np.float32)},
        progress=False,
    )
    assert _check_xarray(points) >= 3
    assert _check_xarray(graph) >= 5
    for path in (points, graph):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _walk(path)
        assert zv.validate(path, level=2).ok


def test_an_append_keeps_a_1_2_store_as_it_is_and_levels_make_it_plain(tmp_path: Path) -> None:
    """An append to a 1.2 store keeps its mirrors and writes no names (spec §3.3); adding
    levels makes it a 1.3 store, plain Zarr v3."""
    path = tmp_path / "cloud.zarrvectors"
    shutil.copytree(GOLDEN / "1.2" / "points_3d_attributes.zarrvectors", path)
    attributes = {"intensity": np.ones(2, np.float32), "rgb": np.zeros((2, 3), np.uint8)}
    zv.append_points(path, np.array([[1, 1, 1], [2, 3, 4]], np.float32), attributes=attributes)
    assert zv.open(path).metadata["zarr_vectors_version"] == "1.2"
    assert (path / ".zattrs").is_file()
    assert (path / "0" / ".zattrs").is_file()
    assert "dimension_names" not in (path / "0" / "vertices" / "zarr.json").read_text()
    assert zv.validate(path, level=3).ok
    assert zv.build_levels(path, zv.Levels(count=1, per_bin=2)) == 1
    assert zv.open(path).metadata["zarr_vectors_version"] == "1.3"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _walk(path)
    report = zv.validate(path, level=3)
    assert report.ok, report
    assert not report.warnings, report
    assert _check_xarray(path) == 4  # two levels and their attributes
