"""The conformance suite every registered converter runs (plug-ins included).

For each converter: a small store of the kind it imports is exported, imported, exported
and imported again; the geometry comes back equal, and the attributes the first round trip
kept come back equal the second time. Then the error paths every format shares: a missing
library names the extra to install (or, for a format that needs none, the round trip works
without any optional library), a file of a suffix no format has needs ``format=``, and a
store of a kind the format cannot hold is refused. A new converter gets these tests by
being registered.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors import _optional
from zarr_vectors.converters import (
    Converter,
    FileConverter,
    PluginWarning,
    converter_for_path,
    converters,
    format_of,
    register,
    registered,
    registry,
)
from zarr_vectors.format.names import GEOMETRY_TYPES

ALL = converters()
TOLERANCE = 1e-6
"""Coordinates may move by a format's rounding (LAS keeps integers of 0.001)."""
UNKNOWN_SUFFIX = ".nosuchformat"

_POSITIONS = np.array(
    [[0.5, 1.0, 2.0], [1.5, 1.0, 2.5], [1.5, 2.0, 3.0], [0.5, 2.5, 3.5], [3.0, 3.5, 1.0]]
)
_QUALITY = np.array([0.25, 0.5, 0.75, 1.0, 1.25], dtype=np.float32)


def _graph(path: Path) -> None:
    edges = [[0, 1], [1, 2], [2, 3], [3, 4]]
    zv.write_graph(path, _POSITIONS, edges, attributes={"quality": _QUALITY})


SAMPLES: dict[str, Callable[[Path], Any]] = {
    "point_cloud": lambda path: zv.write_points(path, _POSITIONS, attributes={"quality": _QUALITY}),
    "mesh": lambda path: zv.write_mesh(
        path, _POSITIONS, [[0, 1, 2], [0, 2, 3], [1, 4, 2]], attributes={"quality": _QUALITY}
    ),
    "skeleton": lambda path: zv.write_skeletons(
        path, _POSITIONS, parents=[-1, 0, 1, 1, 3], attributes={"quality": _QUALITY}
    ),
    "streamline": lambda path: zv.write_polylines(
        path,
        (_POSITIONS, [0, 3, 5]),
        kind="streamline",
        attributes={"quality": _QUALITY},
    ),
    "polyline": lambda path: zv.write_polylines(
        path, (_POSITIONS, [0, 3, 5]), attributes={"quality": _QUALITY}
    ),
    "graph": _graph,
}
"""A small store of each kind, written at a path: five vertices, one float32 attribute."""


def _sorted_rows(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64).reshape(rows.shape[0], -1)
    return rows[np.lexsort(rows.T[::-1])] if rows.shape[0] else rows


def _geometry(store: zv.VectorStore) -> list[np.ndarray]:
    """What the store's geometry is, whatever the order its vertices and objects come in:
    sorted vertices, and sorted faces, edges or lines spelled by their coordinates."""
    found = store.read()
    positions = found.positions.astype(np.float64)
    parts = [_sorted_rows(positions)]
    if found.faces is not None:
        parts.append(_sorted_rows(positions[found.faces]))
    elif found.edges is not None and found.edges.shape[0]:
        ends = np.sort(positions[found.edges].reshape(-1, 2 * positions.shape[1]), axis=0)
        parts.append(_sorted_rows(ends))
    elif found.offsets is not None and store.kind != "point_cloud":
        bounds = zip(found.offsets[:-1], found.offsets[1:], strict=True)
        lines = [positions[a:b].reshape(-1) for a, b in bounds]
        parts.extend(sorted(lines, key=lambda line: tuple(line)))
    return parts


def _attributes(store: zv.VectorStore) -> dict[str, np.ndarray]:
    """Each vertex attribute as rows of (position, value), sorted, with its dtype."""
    found = store.read()
    return {
        name: _sorted_rows(np.column_stack([found.positions, values.reshape(len(values), -1)]))
        for name, values in found.attributes.items()
    } | {f"{name} dtype": np.array(str(v.dtype)) for name, v in found.attributes.items()}


def _assert_same_geometry(a: zv.VectorStore, b: zv.VectorStore) -> None:
    left, right = _geometry(a), _geometry(b)
    assert len(left) == len(right)
    for x, y in zip(left, right, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=TOLERANCE)


def _round_trip(
    converter: Converter, folder: Path, samples: dict[str, Path]
) -> tuple[zv.VectorStore, ...]:
    """The sample, imported once and imported again from its own export."""
    sample = samples[converter.kinds[0]]
    suffix = converter.suffixes[0]
    zv.convert(sample, folder / f"first{suffix}")
    first = zv.convert(folder / f"first{suffix}", folder / "first.zarr")
    zv.convert(first, folder / f"second{suffix}")
    second = zv.convert(folder / f"second{suffix}", folder / "second.zarr")
    assert isinstance(first, zv.VectorStore)
    assert isinstance(second, zv.VectorStore)
    return zv.open(sample), first, second


def _without_optional_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every optional library fail to import, as when no extra is installed."""

    def missing(name: str) -> None:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(_optional, "importlib", SimpleNamespace(import_module=missing))


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sample store of each kind, written once (conversions only read them)."""
    folder = tmp_path_factory.mktemp("samples")
    for kind, write in SAMPLES.items():
        write(folder / f"{kind}.zarr")
    return {kind: folder / f"{kind}.zarr" for kind in SAMPLES}


@pytest.fixture(params=ALL, ids=[c.name for c in ALL])
def converter(request: pytest.FixtureRequest) -> Converter:
    found: Converter = request.param
    return found


def test_the_sample_comes_back(
    converter: Converter, tmp_path: Path, samples: dict[str, Path]
) -> None:
    sample, first, second = _round_trip(converter, tmp_path, samples)
    assert first.kind == second.kind == converter.kinds[0]
    _assert_same_geometry(sample, first)
    _assert_same_geometry(first, second)
    kept, again = _attributes(first), _attributes(second)
    assert kept.keys() == again.keys()
    for name, rows in kept.items():
        np.testing.assert_array_equal(rows, again[name], err_msg=name)


def test_a_missing_library_names_the_extra(
    converter: Converter,
    tmp_path: Path,
    samples: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if converter.extra is None:
        _without_optional_libraries(monkeypatch)
        _round_trip(converter, tmp_path, samples)
        return
    suffix = converter.suffixes[0]
    sample = samples[converter.kinds[0]]
    zv.convert(sample, tmp_path / f"file{suffix}")
    before = sorted(tmp_path.iterdir())
    _without_optional_libraries(monkeypatch)
    hint = rf"pip install 'zarr-vectors\[{converter.extra}\]'"
    with pytest.raises(zv.MissingDependencyError, match=hint):
        zv.convert(sample, tmp_path / f"out{suffix}")
    with pytest.raises(zv.MissingDependencyError, match=hint):
        zv.convert(tmp_path / f"file{suffix}", tmp_path / "new.zarr")
    assert sorted(tmp_path.iterdir()) == before


def test_a_suffix_of_no_format_needs_format(
    converter: Converter, tmp_path: Path, samples: dict[str, Path]
) -> None:
    sample = samples[converter.kinds[0]]
    with pytest.raises(zv.InvalidInputError, match="cannot tell the format"):
        zv.convert(sample, tmp_path / f"out{UNKNOWN_SUFFIX}")
    exported = zv.convert(sample, tmp_path / f"out{converter.suffixes[0]}")
    assert isinstance(exported, Path)
    renamed = exported.rename(tmp_path / f"file{UNKNOWN_SUFFIX}")
    with pytest.raises(zv.InvalidInputError, match="cannot tell the format"):
        zv.convert(renamed, tmp_path / "new.zarr")
    assert not (tmp_path / "new.zarr").exists()
    store = zv.convert(renamed, tmp_path / "new.zarr", format=converter.name.upper())
    assert isinstance(store, zv.VectorStore)
    assert store.kind == converter.kinds[0]


def test_a_kind_the_format_cannot_hold_is_refused(
    converter: Converter, tmp_path: Path, samples: dict[str, Path]
) -> None:
    refused = [kind for kind in GEOMETRY_TYPES if kind not in converter.kinds]
    if not refused:
        pytest.skip(f"{converter.name} holds every kind")
    suffix = converter.suffixes[0]
    for kind in refused:
        message = f"a {kind} store cannot be written as {converter.name}"
        with pytest.raises(zv.InvalidInputError, match=message):
            zv.convert(samples[kind], tmp_path / f"out{suffix}")
    assert list(tmp_path.iterdir()) == []


# -- plug-ins --------------------------------------------------------------------------------

PLUGIN_MODULE = """
import numpy as np

import zarr_vectors as zv
from zarr_vectors.converters import FileConverter


def read_xyz(name, path, target, options):
    zv.write_points(target.store, np.loadtxt(path, ndmin=2), **target.write_keywords())


def write_xyz(name, store, path, overwrite, options):
    np.savetxt(path, store.read().positions, fmt="%.17g")


XYZ = FileConverter("xyz", (".xyz",), None, ("point_cloud",), read_xyz, write_xyz)
NOT_A_CONVERTER = object()
TAKES_PLY = FileConverter("ply", (".ply2",), None, ("mesh",), read_xyz, write_xyz)
"""


def install_plugins(
    folder: Path, monkeypatch: pytest.MonkeyPatch, entry_points: dict[str, str]
) -> None:
    """Install a distribution that declares ``entry_points`` (name -> ``module:object``) in
    the group ``zarr_vectors.converters``, as pip would (a dist-info on ``sys.path``), and
    start from a registry that has not read the entry points yet."""
    folder.mkdir()
    (folder / "zv_fake_plugin.py").write_text(PLUGIN_MODULE)
    info = folder / "zv_fake_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zv-fake-plugin\nVersion: 1.0\n")
    lines = [f"{name} = {value}" for name, value in entry_points.items()]
    (info / "entry_points.txt").write_text("[zarr_vectors.converters]\n" + "\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "zv_fake_plugin", raising=False)
    monkeypatch.setattr(registry, "_REGISTRY", registry._Registry(registry.BUILT_IN))


def test_a_plugin_runs_the_conformance_suite(
    tmp_path: Path, samples: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugins(tmp_path / "site", monkeypatch, {"xyz": "zv_fake_plugin:XYZ"})
    xyz = registered("xyz")
    assert [c.name for c in converters()][-1] == "xyz"
    assert converter_for_path("cells.XYZ") is xyz
    for check in (
        test_the_sample_comes_back,
        test_a_suffix_of_no_format_needs_format,
        test_a_kind_the_format_cannot_hold_is_refused,
    ):
        folder = tmp_path / check.__name__
        folder.mkdir()
        check(xyz, folder, samples)
    (tmp_path / "extra").mkdir()
    test_a_missing_library_names_the_extra(xyz, tmp_path / "extra", samples, monkeypatch)


def test_broken_plugins_are_skipped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugins(
        tmp_path / "site",
        monkeypatch,
        {
            "gone": "zv_no_such_module:XYZ",
            "odd": "zv_fake_plugin:NOT_A_CONVERTER",
            "ply2": "zv_fake_plugin:TAKES_PLY",
            "xyz": "zv_fake_plugin:XYZ",
        },
    )
    with pytest.warns(PluginWarning) as caught:
        names = [c.name for c in converters()]
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 3
    assert "plug-in 'gone' (zv_no_such_module:XYZ) skipped: it failed to load" in messages[0]
    assert "plug-in 'odd' (zv_fake_plugin:NOT_A_CONVERTER) skipped: " in messages[1]
    assert "is not a converter" in messages[1]
    assert "the format name 'ply' is taken" in messages[2]
    assert names == [c.name for c in registry.BUILT_IN] + ["xyz"]
    assert registered("ply") is registry.BUILT_IN[0]


def test_register_refuses_a_name_or_suffix_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_REGISTRY", registry._Registry(registry.BUILT_IN))
    ply = registered("ply")
    with pytest.raises(zv.InvalidInputError, match="the format name 'ply' is taken"):
        register(ply)
    renamed = FileConverter("ply2", (".PLY",), None, ("mesh",), *_functions(ply))
    with pytest.raises(zv.InvalidInputError, match=r"the suffix '\.PLY' is taken by ply"):
        register(renamed)
    with pytest.raises(zv.InvalidInputError, match="is not a converter"):
        register(object())  # type: ignore[arg-type]
    register(FileConverter("ply2", (".ply2",), None, ("mesh",), *_functions(ply)))
    assert format_of("mesh.ply2") is registered("PLY2")


def _functions(converter: Converter) -> tuple[Any, Any]:
    assert isinstance(converter, FileConverter)
    return converter.importer, converter.exporter
