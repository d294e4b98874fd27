"""Writing stores of this format as layout V (zarr-vectors 0.9.x): ours -> V -> ours keeps
every object, vertex and attribute; V -> ours -> V reads the same in the real 0.9.2.

The 0.9.2 read-back runs in the reference virtualenv (``benchmarks/_reference_venv``, made
by ``python benchmarks/reference_env.py``; 0.9.2 shares our import name, so it runs in a
process of its own); without that virtualenv those tests are skipped, saying so. ``.ci/run``
can run them by creating the virtualenv first (``python benchmarks/reference_env.py``) and
then ``pytest -m reference``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.converters.conftest import LAYOUT_V_CASES

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "layout_v"
REFERENCE_PYTHON = ROOT / "benchmarks" / "_reference_venv" / "bin" / "python"
EXPORTED = list(LAYOUT_V_CASES)
"""The golden V stores exported back (after their import)."""
DIFFERENCES = {
    "own_meshes": ["0/links/0/", "0/link_attributes/"],
}
"""Store -> the nodes of ours that ours -> V -> ours does not give back (spec §14.3): the
order of a mesh's faces in a chunk when they were not written in the order layout V reads
them (the same faces come back). Everything else comes back byte for byte, but the root's
random commit id."""
V = "zarr-vectors-0.9"


def _walk(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` vertices that wander across chunks of 10 and come back to some."""
    return rng.uniform(0, 30, (n, 3)).astype(np.float32)


def _mid_rooted_skeletons(path: Path, rng: np.random.Generator) -> None:
    """Three paths, each rooted at its third vertex (not at a run start in its chunk)."""
    sizes, parents, owner = [7, 5, 9], [], []
    for k, n in enumerate(sizes):
        start = sum(sizes[:k])
        parents += [start + i + 1 if i < 2 else start + i - 1 for i in range(n)]
        parents[start + 2] = -1
        owner += [k] * n
    zv.write_skeletons(
        path, _walk(rng, sum(sizes)), parents, vertex_objects=owner, chunk_shape=10.0,
        radius=rng.uniform(1, 2, sum(sizes)).astype(np.float32), progress=False,
    )  # fmt: skip


def _graph(path: Path, rng: np.random.Generator, directed: bool) -> None:
    owner = np.repeat([0, 1, 2], 6)
    edges = [
        (k * 6 + a, k * 6 + b)
        for k in range(3)
        for a, b in [(0, 1), (2, 1), (3, 4), (4, 0), (5, 2)]
    ]
    zv.write_graph(
        path, _walk(rng, 18), edges, directed=directed, vertex_objects=owner, chunk_shape=10.0,
        edge_attributes={"w": np.arange(len(edges), dtype=np.float32)}, progress=False,
    )  # fmt: skip


def _meshes(path: Path, rng: np.random.Generator) -> None:
    tet = np.array([[0, 1, 2], [0, 3, 1], [1, 3, 2], [2, 3, 0]])
    faces = np.concatenate([tet + 4 * k for k in range(3)])
    zv.write_mesh(
        path, _walk(rng, 12), faces, vertex_objects=np.repeat([0, 1, 2], 4), chunk_shape=10.0,
        face_attributes={"q": np.arange(12, dtype=np.int32)}, progress=False,
    )  # fmt: skip


def _pyramid(path: Path, rng: np.random.Generator) -> None:
    zv.write_points(
        path, rng.uniform(0, 30, (120, 3)).astype(np.float32), chunk_shape=10.0, bin_shape=2.5,
        attributes={"a": rng.uniform(0, 1, 120).astype(np.float32)}, progress=False,
        levels=zv.Levels(count=2, method="aggregate"),
    )  # fmt: skip


OWN: dict[str, Any] = {
    "own_pyramid": _pyramid,
    "own_skeletons": _mid_rooted_skeletons,
    "own_graph": lambda path, rng: _graph(path, rng, False),
    "own_digraph": lambda path, rng: _graph(path, rng, True),
    "own_meshes": _meshes,
}
"""Stores written here whose objects leave chunks and come back, skeletons whose roots are
not the first vertex of their run in a chunk, a directed graph, edge and face attributes."""

reference = pytest.mark.skipif(
    not REFERENCE_PYTHON.exists(),
    reason="no zarr-vectors 0.9.2 virtualenv: run `python benchmarks/reference_env.py` first",
)


@pytest.fixture(scope="module")
def round_trip(
    tmp_path_factory: pytest.TempPathFactory, imported_v_stores: dict[str, Path]
) -> dict[str, tuple[Path, Path, Path]]:
    """Per golden store: ours (imported), the export as V, and that export imported again."""
    folder = tmp_path_factory.mktemp("to-v")
    out = {}
    for name in EXPORTED:
        ours, v, again = imported_v_stores[name], folder / f"{name}.zv", folder / f"{name}-2.zarr"
        assert zv.convert(ours, v, format=V) == v
        zv.convert(v, again, lossy=LAYOUT_V_CASES[name])
        out[name] = (ours, v, again)
    for seed, (name, write) in enumerate(OWN.items()):
        ours, v, again = folder / f"{name}.zarr", folder / f"{name}.zv", folder / f"{name}-2.zarr"
        write(ours, np.random.default_rng(380 + seed))
        zv.convert(ours, v, format=V)
        zv.convert(v, again)
        out[name] = (ours, v, again)
    return out


def _files(root: Path) -> dict[str, bytes]:
    """Every file of a store by its path, the root document without its commit id."""
    out = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    doc = json.loads(out["zarr.json"])
    doc["attributes"].pop("commit")
    out["zarr.json"] = json.dumps(doc, sort_keys=True).encode()
    return out


@pytest.mark.parametrize("name", [*EXPORTED, *OWN])
def test_ours_to_v_to_ours_is_byte_identical_but_for_the_listed_differences(
    name: str, round_trip: dict[str, tuple[Path, Path, Path]]
) -> None:
    first, second = _files(round_trip[name][0]), _files(round_trip[name][2])
    differ = {k for k in first.keys() | second.keys() if first.get(k) != second.get(k)}
    listed = DIFFERENCES.get(name, [])
    assert {k for k in differ if not k.startswith(tuple(listed))} <= {"zarr.json"}
    if not listed:
        assert differ == set()
    for prefix in listed:  # each listed difference is real; nodes not exported are gone
        assert any(k.startswith(prefix) for k in differ)
        assert name == "own_meshes" or not any(k.startswith(prefix) for k in second)


@pytest.mark.parametrize("name", ["points", "polylines", "streamlines"])
def test_ours_to_v_to_ours_keeps_everything(
    name: str, round_trip: dict[str, tuple[Path, Path, Path]]
) -> None:
    ours, again = zv.open(round_trip[name][0]), zv.open(round_trip[name][2])
    assert (again.kind, again.vertex_count) == (ours.kind, ours.vertex_count)
    assert (again.chunk_shape, again.bin_shape) == (ours.chunk_shape, ours.bin_shape)
    if ours.is_object_store:
        ids = sorted(ours.object_ids.tolist())
        first, second = ours.read_objects(ids), again.read_objects(ids)
        assert second.object_ids.tolist() == first.object_ids.tolist()
        np.testing.assert_array_equal(second.offsets, first.offsets)
        for name_ in first.object_attributes:
            np.testing.assert_array_equal(
                second.object_attributes[name_], first.object_attributes[name_]
            )
        assert {k: v.tolist() for k, v in again.groups.items()} == {
            k: v.tolist() for k, v in ours.groups.items()
        }
        for name_, values in ours.group_attributes.items():
            np.testing.assert_array_equal(again.group_attributes[name_], values)
    else:
        first, second = ours.read(), again.read()
    np.testing.assert_array_equal(second.positions, first.positions)
    for name_, values in first.attributes.items():
        np.testing.assert_array_equal(second.attributes[name_], values)


def test_object_ids_other_than_0_to_n_are_refused(tmp_path: Path) -> None:
    lines = [np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)]
    zv.write_polylines(tmp_path / "a.zarr", lines, object_ids=[4, 9], progress=False)
    with pytest.raises(zv.InvalidInputError, match="renumber"):
        zv.convert(tmp_path / "a.zarr", tmp_path / "a.zv", format=V)
    assert not (tmp_path / "a.zv").exists()


def test_an_existing_destination_is_replaced_only_when_asked(
    tmp_path: Path, round_trip: dict[str, tuple[Path, Path, Path]]
) -> None:
    ours, _, _ = round_trip["points"]
    zv.convert(ours, tmp_path / "p.zv", format=V)
    with pytest.raises(zv.StoreExistsError, match='mode="w"'):
        zv.convert(ours, tmp_path / "p.zv", format=V)
    zv.convert(ours, tmp_path / "p.zv", format=V, mode="w")
    assert zv.convert(tmp_path / "p.zv", tmp_path / "p.zarr").vertex_count == 80


def test_a_failed_export_leaves_the_destination_as_it_was(
    tmp_path: Path, round_trip: dict[str, tuple[Path, Path, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, _, _ = round_trip["points"]
    old = zv.convert(ours, tmp_path / "p.zv", format=V)
    before = sorted(p.relative_to(old) for p in old.rglob("*"))

    def fail(*args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("zarr_vectors.converters._v_export._level_attrs", fail)
    for mode, target in (("w", old), ("w-", tmp_path / "fresh.zv")):
        with pytest.raises(OSError, match="disk full"):
            zv.convert(ours, target, format=V, mode=mode)
    assert sorted(p.relative_to(old) for p in old.rglob("*")) == before  # the old store
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.zv"]  # nothing else left


def _canonical(key: str, rows: np.ndarray, kind: str) -> Any:
    """Links as 0.9.2 reads them, in an order the layout does not fix: the rows sorted; a
    graph edge as its two ends sorted (undirected), a face as the rotation that starts at
    its smallest corner (winding kept); other answers as they are."""
    if key.endswith("_edges") and kind == "graph":
        rows = np.sort(rows, axis=1)
    elif key.endswith("_faces"):
        rows = np.array([np.roll(f, -int(np.argmin(f))) for f in rows]).reshape(rows.shape)
    elif not key.endswith("_edges"):
        return rows
    return sorted(map(tuple, rows.tolist()))


REFERENCE_CASES = [n for n in EXPORTED if n != "points_objects"]
"""Exports 0.9.2 reads as it read its own store, answer for answer (``points_objects``: read
for read as sets of vertices, :func:`_same_vertices`)."""


def _vertices(answers: dict[str, np.ndarray], read: str) -> list[tuple[float, ...]]:
    """The vertices of one read (``"0_all"``...) as sorted records: position, attributes."""
    names = sorted(k for k in answers if k.startswith(f"{read}_attr_"))
    names += [k for k in answers if k == f"{read}_object_ids"]
    columns = [answers[f"{read}_positions"], *(answers[n][:, None] for n in names)]
    return sorted(map(tuple, np.hstack(columns).astype(np.float64).tolist()))


def _same_vertices(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    """A point cloud with objects: each read holds the same vertices, attributes and object
    ids (this format orders a chunk's points by bin, 0.9.x by object)."""
    assert got["validate_errors"].tolist() == []
    assert sorted(k for k in got if k.startswith("0_")) == sorted(k for k in want if k[0] == "0")
    for read in ("0_all", "0_box", "0_ids"):
        assert _vertices(got, read) == _vertices(want, read), read
        np.testing.assert_array_equal(got[f"{read}_part_lengths"], want[f"{read}_part_lengths"])


@pytest.mark.reference
@reference
def test_092_reads_our_export_as_it_read_its_own_store(
    tmp_path: Path, round_trip: dict[str, tuple[Path, Path, Path]]
) -> None:
    pairs = []
    for name in [*EXPORTED, *OWN]:
        pairs += [str(round_trip[name][1]), str(tmp_path / f"{name}.npz")]
    subprocess.run(
        [str(REFERENCE_PYTHON), "-I", str(DATA / "make_v_stores.py"), "read", *pairs],
        check=True,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
        timeout=300,
    )
    for name in REFERENCE_CASES:
        kind = zv.open(round_trip[name][0]).kind
        with (
            np.load(tmp_path / f"{name}.npz") as got,
            np.load(DATA / f"{name}.answers.npz") as want,
        ):
            assert got["validate_errors"].tolist() == []
            levels = got["levels"].tolist()  # 0.9.2's coarse levels this format holds
            assert levels == want["levels"].tolist()[: len(levels)]
            if kind != "point_cloud":  # objects: every level, imported as it is
                assert levels == want["levels"].tolist()
            keys = [k for k in want if k.split("_")[0] in map(str, levels)]
            assert sorted(k for k in got if k != "validate_errors" and k != "levels") == sorted(
                keys
            )
            for key in keys:
                np.testing.assert_array_equal(
                    _canonical(key, got[key], kind),
                    _canonical(key, want[key], kind),
                    err_msg=f"{name}: {key}",
                )
    for name in OWN:
        with np.load(tmp_path / f"{name}.npz") as got:
            _same_as_ours(zv.open(round_trip[name][0]), dict(got))
    with (
        np.load(tmp_path / "points_objects.npz") as got,
        np.load(DATA / "points_objects.answers.npz") as want,
    ):
        _same_vertices(dict(got), dict(want))


def _as_points(positions: np.ndarray, links: np.ndarray, directed: bool) -> list[Any]:
    """Links as tuples of their end points' coordinates (a face from its smallest corner,
    an undirected edge sorted), sorted: what a read answers, in any vertex numbering."""
    out = []
    for link in np.asarray(links).tolist():
        ends = [tuple(positions[v].tolist()) for v in link]
        if len(ends) == 3:
            k = ends.index(min(ends))
            ends = ends[k:] + ends[:k]
        elif not directed:
            ends = sorted(ends)
        out.append(tuple(ends))
    return sorted(out)


def _same_as_ours(store: Any, got: dict[str, np.ndarray]) -> None:
    """0.9.2's answers for our export of ``store`` equal our own reads of it."""
    assert got["validate_errors"].tolist() == []
    assert got["levels"].tolist() == [lv.level for lv in store.levels]
    for level in got["levels"].tolist():
        assert sorted(map(tuple, got[f"{level}_all_positions"].tolist())) == sorted(
            map(tuple, store.read(level=level).positions.tolist())
        )
    if store.kind == "point_cloud":
        return
    ours = store.read()
    key, links = (
        ("0_all_faces", ours.faces) if store.kind == "mesh" else ("0_all_edges", ours.edges)
    )
    directed = store.kind == "skeleton" or bool(store.metadata.get("is_directed"))
    assert _as_points(got["0_all_positions"], got[key], directed) == _as_points(
        ours.positions, links, directed
    )
    by_id = store.read_objects([0, 2])
    np.testing.assert_array_equal(got["0_ids_positions"], by_id.positions)
    np.testing.assert_array_equal(got["0_ids_part_lengths"], np.diff(by_id.offsets))


def test_a_grid_that_starts_below_zero_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(38)
    lines = [rng.uniform(-30, 20, (n, 3)).astype(np.float32) for n in (4, 9, 2)]
    zv.write_polylines(tmp_path / "a.zarr", lines, chunk_shape=10.0, object_ids=[0, 1, 2])
    zv.convert(tmp_path / "a.zarr", tmp_path / "a.zv", format=V)
    origin = json.loads((tmp_path / "a.zv" / "0" / "vertices" / "zarr.json").read_text())
    assert min(origin["attributes"]["chunk_grid_origin"]) < 0
    again = zv.convert(tmp_path / "a.zv", tmp_path / "b.zarr").read_objects([0, 1, 2])
    np.testing.assert_array_equal(again.positions, np.concatenate(lines))


_LINE = st.integers(1, 12).flatmap(
    lambda n: st.lists(st.tuples(*[st.floats(-40, 40, width=32)] * 3), min_size=n, max_size=n)
)


@pytest.mark.slow  # the golden round trips and the grid below zero cover it by default
@settings(max_examples=5, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=4))
def test_any_polylines_come_back_from_layout_v_in_order(
    tmp_path_factory: pytest.TempPathFactory, lines: list[list[Any]]
) -> None:
    arrays = [np.asarray(line, dtype=np.float32) for line in lines]
    where = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp()))
    zv.write_polylines(where / "a.zarr", arrays, chunk_shape=16.0, progress=False)
    zv.convert(where / "a.zarr", where / "a.zv", format=V)
    back = zv.convert(where / "a.zv", where / "b.zarr")
    got = back.read_objects(list(range(len(arrays))))
    np.testing.assert_array_equal(got.positions, np.concatenate(arrays))
    np.testing.assert_array_equal(np.diff(got.offsets), [len(a) for a in arrays])


_FOREST = st.lists(st.integers(1, 7), min_size=1, max_size=4).flatmap(
    lambda sizes: st.tuples(
        st.just(sizes),
        st.lists(st.floats(0, 29, width=32), min_size=3 * sum(sizes), max_size=3 * sum(sizes)),
        st.lists(st.integers(0, 10**6), min_size=sum(sizes), max_size=sum(sizes)),
    )
)


@pytest.mark.slow  # the golden stores and the stores of OWN cover it by default
@settings(max_examples=8, deadline=None)
@given(_FOREST, st.sampled_from(["skeleton", "graph", "digraph"]))
def test_any_forest_comes_back_from_layout_v_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory, forest: Any, kind: str
) -> None:
    sizes, coords, picks = forest
    positions = np.asarray(coords, dtype=np.float32).reshape(-1, 3)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    starts = np.repeat(np.cumsum([0, *sizes[:-1]]), sizes)
    parents = np.full(owner.size, -1)
    for v in range(owner.size):  # each object a tree rooted at a drawn vertex
        local, size = v - starts[v], sizes[owner[v]]
        root = picks[starts[v]] % size
        if local != root:  # before the root: the root; after it: any vertex before
            parents[v] = starts[v] + (root if local < root else picks[v] % local)
    where = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp()))
    if kind == "skeleton":
        zv.write_skeletons(
            where / "a.zarr", positions, parents, vertex_objects=owner, chunk_shape=10.0,
            progress=False,
        )  # fmt: skip
    else:
        child = np.flatnonzero(parents >= 0)
        zv.write_graph(
            where / "a.zarr", positions, np.c_[child, parents[child]], vertex_objects=owner,
            directed=kind == "digraph", chunk_shape=10.0, progress=False,
        )  # fmt: skip
    zv.convert(where / "a.zarr", where / "a.zv", format=V)
    zv.convert(where / "a.zv", where / "b.zarr")
    assert _files(where / "a.zarr") == _files(where / "b.zarr")
