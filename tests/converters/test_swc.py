"""SWC files ↔ skeleton stores (zarr_vectors.converters.swc)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv

_names = (f"s{k}" for k in itertools.count())

Node = tuple[int, int, float, float, float, float, int]
"""An SWC line: id, type, x, y, z, radius, parent id."""


def _random_forest(seed: int, sizes: list[int]) -> list[Node]:
    """Trees of the given sizes with scattered ids, listed in a shuffled (invalid) order."""
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    ids = rng.choice(np.arange(1, 10 * n + 10), size=n, replace=False)
    nodes: list[Node] = []
    start = 0
    for size in sizes:
        for k in range(size):
            parent = -1 if k == 0 else int(ids[start + rng.integers(0, k)])
            x, y, z = (float(v) for v in rng.normal(0, 100, 3))
            nodes.append((int(ids[start + k]), int(rng.integers(0, 8)), x, y, z,
                          float(rng.uniform(0.1, 3)), parent))  # fmt: skip
        start += size
    return [nodes[i] for i in rng.permutation(n)]


def _swc(nodes: list[Node]) -> str:
    lines = ["# made by the test", "#   id type x y z r parent"]
    lines += [f"{i} {t} {x!r} {y!r} {z!r} {r!r} {p}" for i, t, x, y, z, r, p in nodes]
    return "\n".join(lines) + "\n"


def _read_back(path: Path) -> list[Node]:
    """A deliberately simple independent SWC reader."""
    out: list[Node] = []
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        i, t, x, y, z, r, p = line.split()
        out.append((int(i), int(t), float(x), float(y), float(z), float(r), int(p)))
    return out


def _structure(nodes: list[Node]) -> dict[tuple[float, float, float], tuple[object, ...]]:
    """Each node (keyed by its position) → its type, radius and its parent's position."""
    where = {n[0]: (n[2], n[3], n[4]) for n in nodes}
    return {(x, y, z): (t, r, where.get(p)) for _, t, x, y, z, r, p in nodes}


def _trees(nodes: list[Node]) -> int:
    return sum(1 for n in nodes if n[6] == -1)


def _check_valid_order(nodes: list[Node]) -> None:
    assert [n[0] for n in nodes] == list(range(1, len(nodes) + 1))
    assert all(p == -1 or p < i for i, *_, p in nodes)


def _round_trip(tmp: Path, nodes: list[Node], **export: object) -> list[Node]:
    src = tmp / "in.swc"
    src.write_text(_swc(nodes))
    store = zv.convert(src, tmp / "n.zv")
    assert isinstance(store, zv.VectorStore)
    assert store.kind == "skeleton"
    assert store.object_count == _trees(nodes)
    zv.convert(tmp / "n.zv", tmp / "out.swc", **export)
    return _read_back(tmp / "out.swc")


def test_round_trip_keeps_every_tree(tmp_path: Path) -> None:
    nodes = _random_forest(1, [40, 1, 25])
    back = _round_trip(tmp_path, nodes)
    _check_valid_order(back)
    assert _structure(back) == _structure(nodes)
    assert _trees(back) == 3


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(1, 12), min_size=1, max_size=4))
def test_round_trip_of_random_forests(
    tmp_path_factory: pytest.TempPathFactory, seed: int, sizes: list[int]
) -> None:
    nodes = _random_forest(seed, sizes)
    back = _round_trip(tmp_path_factory.mktemp(next(_names)), nodes)
    _check_valid_order(back)
    assert _structure(back) == _structure(nodes)


def test_a_file_in_valid_order_keeps_its_lines(tmp_path: Path) -> None:
    nodes: list[Node] = [
        (1, 1, 0.0, 0.0, 0.0, 5.5, -1),
        (2, 3, 1.5, 0.0, 0.0, 1.0, 1),
        (3, 3, 0.0, 1.25, 0.0, 1.0, 2),
        (4, 4, 0.1, 0.2, 0.3, 0.75, 2),
        (5, 2, -3e-7, 1e20, 7.0, 0.5, 1),
    ]
    assert _round_trip(tmp_path, nodes) == nodes


def test_trees_become_objects_in_root_order(tmp_path: Path) -> None:
    nodes: list[Node] = [
        (7, 1, 0.0, 0.0, 0.0, 1.0, -1),
        (3, 2, 9.0, 9.0, 9.0, 2.0, -1),
        (8, 1, 1.0, 0.0, 0.0, 1.0, 7),
        (4, 2, 9.0, 8.0, 9.0, 2.0, 3),
        (5, 2, 9.0, 7.0, 9.0, 2.0, 4),
    ]
    (tmp_path / "two.swc").write_text(_swc(nodes))
    store = zv.convert(tmp_path / "two.swc", tmp_path / "two.zv")
    assert isinstance(store, zv.VectorStore)
    np.testing.assert_array_equal(store.object_ids, [0, 1])
    second = store.read_objects([1])
    np.testing.assert_array_equal(second.positions, [[9, 9, 9], [9, 8, 9], [9, 7, 9]])
    np.testing.assert_array_equal(second.attributes["swc_id"], [3, 4, 5])
    np.testing.assert_array_equal(second.attributes["swc_type"], [2, 2, 2])
    zv.convert(tmp_path / "two.zv", tmp_path / "one.swc", ids=[1])
    assert _read_back(tmp_path / "one.swc") == [
        (1, 2, 9.0, 9.0, 9.0, 2.0, -1),
        (2, 2, 9.0, 8.0, 9.0, 2.0, 1),
        (3, 2, 9.0, 7.0, 9.0, 2.0, 2),
    ]


def test_children_listed_first_are_written_depth_first(tmp_path: Path) -> None:
    nodes: list[Node] = [
        (4, 3, 3.0, 0.0, 0.0, 1.0, 2),
        (3, 3, 2.0, 0.0, 0.0, 1.0, 1),
        (2, 3, 1.0, 0.0, 0.0, 1.0, 1),
        (1, 1, 0.0, 0.0, 0.0, 1.0, -1),
    ]
    back = _round_trip(tmp_path, nodes)
    _check_valid_order(back)
    # depth first from the root, children in file order: 1, then 3 (listed before 2), 2, 4
    assert [n[2] for n in back] == [0.0, 2.0, 1.0, 3.0]
    assert _structure(back) == _structure(nodes)


def test_import_options(tmp_path: Path) -> None:
    (tmp_path / "a.swc").write_text("1 1 0.1 0.2 0.3 1 -1\n2 1 1 2 3 1 1\n")
    store = zv.convert(tmp_path / "a.swc", tmp_path / "a.zv", dtype="float32", keep_ids=False)
    assert isinstance(store, zv.VectorStore)
    found = store.read()
    assert found.positions.dtype == np.float32
    np.testing.assert_array_equal(found.positions, np.float32([[0.1, 0.2, 0.3], [1, 2, 3]]))
    assert sorted(found.attributes) == ["radius", "swc_type"]
    assert store.metadata["swc_compatible"] is True


def test_store_without_radius_or_type_exports_defaults(tmp_path: Path) -> None:
    zv.write_skeletons(tmp_path / "s.zv", [[0, 0, 0], [1, 1, 1.5]], parents=[-1, 0])
    zv.convert(tmp_path / "s.zv", tmp_path / "s.swc")
    assert _read_back(tmp_path / "s.swc") == [
        (1, 0, 0.0, 0.0, 0.0, 1.0, -1),
        (2, 0, 1.0, 1.0, 1.5, 1.0, 1),
    ]


def test_float32_store_writes_shortest_digits(tmp_path: Path) -> None:
    xyz = np.float32([[0.1, 0.2, 0.3], [1e-3, 2.5, 3]])
    zv.write_skeletons(tmp_path / "s.zv", xyz, parents=[-1, 0], radius=np.float32([0.7, 0.1]))
    zv.convert(tmp_path / "s.zv", tmp_path / "s.swc")
    lines = [ln for ln in (tmp_path / "s.swc").read_text().splitlines() if ln[0] != "#"]
    assert lines == ["1 0 0.1 0.2 0.3 0.7 -1", "2 0 0.001 2.5 3.0 0.1 1"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 1 0 0 0 1 -1\n2 1 0 0 0 1\n", "line 2: expected 7 columns"),
        ("# c\n\n1 1 0 0 zero 1 -1\n", "line 3: 'zero' is not a number"),
        ("1 1 0 0 0 1 -1\n1.5 1 0 0 0 1 1\n", "line 2: '1.5' is not an integer"),
        ("1 1 0 0 0 1 -1\n1 1 0 0 0 1 -1\n", "line 2: node id 1 is used twice"),
        ("1 1 0 0 0 1 -1\n2 1 0 0 0 1 9\n", "line 2: parent 9 of node 2 is not the id"),
        ("1 1 0 0 0 1 -1\n2 1 0 0 0 1 3\n3 1 0 0 0 1 2\n", r"line \d: node \d is its own ancestor"),
        ("1 1 0 0 0 1 -1\n2 1 0 0 0 1 2\n", "line 2: node 2 is its own ancestor"),
        ("# only a comment\n", "holds no node"),
    ],
)
def test_bad_files_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bad.swc").write_text(text)
    with pytest.raises(zv.InvalidInputError, match=message):
        zv.convert(tmp_path / "bad.swc", tmp_path / "bad.zv")
    assert not (tmp_path / "bad.zv").exists()


def test_integral_float_ids_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "f.swc").write_text("1.0 1 0 0 0 1 -1.0\n2 1 1 0 0 1 1.0\n")
    store = zv.convert(tmp_path / "f.swc", tmp_path / "f.zv")
    assert isinstance(store, zv.VectorStore)
    np.testing.assert_array_equal(store.read().edges, [[1, 0]])


def test_export_needs_three_dimensions(tmp_path: Path) -> None:
    zv.write_skeletons(tmp_path / "s.zv", [[0, 0], [1, 1]], parents=[-1, 0])
    with pytest.raises(zv.InvalidInputError, match="3-D"):
        zv.convert(tmp_path / "s.zv", tmp_path / "s.swc")
    assert not (tmp_path / "s.swc").exists()
