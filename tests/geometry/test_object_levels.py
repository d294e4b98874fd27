"""Levels of detail of skeletons, graphs and meshes written by ``write_*(levels=...)``.

Every level is checked against a recomputation with hE's kernels (``coarsen_skeletons``,
``coarsen_graphs``, ``coarsen_meshes``) from the level-0 store's own objects (spec §4.3.3:
objects in id order, vertices in traversal order, links as stored), the promises of each
method on what ``read_objects(level=N)`` returns (trees stay trees with the same root,
leaves and branch points; graph components stay apart and connected; every coarse face is
the image of a level-0 face, in its winding), and a box query at a level against brute
force over that level's vertices.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.helpers import examples, sorted_rows
from tests.validate.object_stores import _spheres
from zarr_vectors.kernels import (
    CoarseGrid,
    CoarseObjects,
    coarsen_graphs,
    coarsen_meshes,
    coarsen_skeletons,
)

CHUNK = 8.0
BIN = 1.0
KINDS = ("skeleton", "graph", "directed", "mesh")
LEVELS = 3


def _tree(rng: np.random.Generator, n: int, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A random tree: mostly a path, sometimes branching off an earlier vertex."""
    parents = np.arange(n) - 1
    branch = rng.random(n) < 0.12
    branch[0] = False
    parents[branch] = [int(rng.integers(0, i)) for i in np.flatnonzero(branch)]
    pos = np.empty((n, 3))
    pos[0] = start
    steps = rng.normal(0, 0.6, (n, 3))
    for i in range(1, n):
        pos[i] = pos[parents[i]] + steps[i]
    return pos, parents


def _skeletons(path: Path, seed: int, levels: Any) -> None:
    rng = np.random.default_rng(seed)
    parts = [_tree(rng, int(rng.integers(1, 80)), rng.uniform(8, 24, 3)) for _ in range(5)]
    sizes = [len(p) for p, _ in parts]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    parents = np.concatenate(
        [np.where(par < 0, -1, par + off) for (_, par), off in zip(parts, offsets, strict=False)]
    )
    n = int(offsets[-1])
    zv.write_skeletons(
        path,
        np.concatenate([p for p, _ in parts]).astype(np.float32),
        parents,
        vertex_objects=np.repeat(np.arange(5) * 3, sizes),
        radius=rng.uniform(0.1, 1, n),
        attributes={"k": np.arange(n, dtype=np.int32)},
        object_attributes={"score": rng.random(5)},
        groups={"g": [0, 12]},
        chunk_shape=CHUNK,
        bin_shape=BIN,
        levels=levels,
        progress=False,
    )


def _graphs(path: Path, seed: int, levels: Any, directed: bool = False) -> None:
    rng = np.random.default_rng(seed)
    owner = np.repeat(np.arange(4), 60)
    pos = np.concatenate(
        [np.cumsum(rng.normal(0, 0.7, (60, 3)), axis=0) + rng.uniform(8, 24, 3) for _ in range(4)]
    )
    edges = []
    for k in range(4):
        ids = np.flatnonzero(owner == k)
        chain = np.stack([ids[:-1], ids[1:]], axis=1)
        chain = np.delete(chain, 29, axis=0) if k % 2 else chain  # two components
        extra = rng.choice(ids, (8, 2))
        edges.append(np.concatenate([chain, extra[extra[:, 0] != extra[:, 1]]]))
    pairs = np.concatenate(edges)
    keys = pairs if directed else np.sort(pairs, axis=1)
    pairs = pairs[np.sort(np.unique(keys, axis=0, return_index=True)[1])]
    pairs = pairs[rng.permutation(len(pairs))]  # input order must not matter
    zv.write_graph(
        path,
        pos.astype(np.float32),
        pairs,
        directed=directed,
        vertex_objects=owner,
        attributes={"k": np.arange(len(pos), dtype=np.int32)},
        edge_attributes={"w": rng.random(len(pairs))},
        object_attributes={"score": rng.random(4)},
        chunk_shape=CHUNK,
        bin_shape=BIN,
        levels=levels,
        progress=False,
    )


def _meshes(path: Path, seed: int, levels: Any) -> None:
    rng = np.random.default_rng(seed)
    vertices, faces, owner = _spheres(rng)
    vertices = (vertices - 3) * 2.0 + 4  # radius 6, inside [0, 32)
    zv.write_mesh(
        path,
        vertices.astype(np.float32),
        faces,
        vertex_objects=owner,
        attributes={"k": np.arange(len(vertices), dtype=np.int32)},
        face_attributes={"w": rng.random(len(faces))},
        object_attributes={"score": rng.random(3)},
        chunk_shape=CHUNK,
        bin_shape=BIN,
        levels=levels,
        progress=False,
    )


WRITERS: dict[str, Callable[[Path, int, Any], None]] = {
    "skeleton": _skeletons,
    "graph": _graphs,
    "directed": lambda path, seed, levels: _graphs(path, seed, levels, directed=True),
    "mesh": _meshes,
}


def write(kind: str, path: Path, seed: int = 0, levels: Any = LEVELS) -> Path:
    """Write the test store of ``kind`` (fewer levels than asked are allowed)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "built .* levels of detail", UserWarning)
        WRITERS[kind](path, seed, levels)
    return path


@pytest.fixture(scope="module", params=KINDS)
def stored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    kind = str(request.param)
    return write(kind, tmp_path_factory.mktemp(f"{kind}-levels") / "objects.zv")


def _links(result: zv.QueryResult) -> np.ndarray:
    links = result.faces if result.faces is not None else result.edges
    assert links is not None
    return np.asarray(links, dtype=np.int64)


def _parents(result: zv.QueryResult) -> np.ndarray:
    parents = np.full(result.positions.shape[0], -1, np.int64)
    edges = _links(result)
    parents[edges[:, 0]] = edges[:, 1]
    return parents


def _recomputed(store: zv.VectorStore, level: int) -> tuple[zv.QueryResult, CoarseObjects]:
    """Level 0 as stored, and the kernel's coarsening of it at ``level``."""
    base = store.read_objects(np.asarray(store.object_ids), level=0)
    root = store.metadata
    grid = CoarseGrid(root["chunk_shape"], store.levels[level].bin_shape, root["chunk_grid_origin"])
    links, offsets = _links(base), base.offsets
    if store.kind == "skeleton":
        return base, coarsen_skeletons(base.positions, _parents(base), offsets, grid)
    if store.kind == "mesh":
        return base, coarsen_meshes(base.positions, links, offsets, grid)
    directed = bool(root["is_directed"])
    return base, coarsen_graphs(base.positions, links, offsets, grid, directed=directed)


def _kernel_links(store: zv.VectorStore, coarse: CoarseObjects) -> np.ndarray:
    if store.kind == "skeleton":
        child = np.flatnonzero(coarse.links >= 0)
        return np.stack([child, coarse.links[child]], axis=1)
    return coarse.links


def _canonical(store: zv.VectorStore, links: np.ndarray) -> np.ndarray:
    """Undirected edges as (min, max); other links as stored."""
    if store.kind == "graph" and not store.metadata["is_directed"]:
        return np.sort(links, axis=1)
    return links


def test_levels_are_listed_with_their_method_and_version_1_3(stored: Path) -> None:
    store = zv.open(stored)
    assert store.metadata["zarr_vectors_version"] == "1.6"
    counts = [info.vertex_count for info in store.levels]
    assert len(counts) >= 3
    assert all(a > b for a, b in itertools.pairwise(counts))
    method = {"skeleton": "thin"}.get(store.kind, "cluster")
    for info in store.levels[1:]:
        assert info.coarsening["method"] == method
        attrs = zarr.open_group(str(stored / str(info.level)), mode="r").attrs
        assert attrs["kept_object_count"] == attrs["object_count"] == store.object_count
        assert attrs["object_sparsity"] == 1.0


def test_each_level_equals_the_kernel_over_the_stored_level0(stored: Path) -> None:
    store = zv.open(stored)
    for info in store.levels[1:]:
        base, coarse = _recomputed(store, info.level)
        found = store.read_objects(np.asarray(store.object_ids), level=info.level)
        np.testing.assert_array_equal(found.offsets, coarse.offsets)
        np.testing.assert_array_equal(found.positions, base.positions[coarse.source])
        for name, values in base.attributes.items():
            np.testing.assert_array_equal(found.attributes[name], values[coarse.source])
        np.testing.assert_array_equal(
            found.object_attributes["score"], base.object_attributes["score"]
        )
        want = _canonical(store, _kernel_links(store, coarse))
        got = _canonical(store, _links(found))
        columns = [values[coarse.link_source] for values in base.link_attributes.values()]
        got_columns = list(found.link_attributes.values())
        np.testing.assert_array_equal(sorted_rows(got, *got_columns), sorted_rows(want, *columns))
        counts = zarr.open_array(str(stored / str(info.level) / "object_vertex_counts"), mode="r")
        np.testing.assert_array_equal(counts[:], np.diff(coarse.offsets))


def _pieces(result: zv.QueryResult, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Object k's positions and its links in its own vertex numbers."""
    a, b = int(result.offsets[k]), int(result.offsets[k + 1])
    links = _links(result)
    mine = links[(links[:, 0] >= a) & (links[:, 0] < b)] - a
    return result.positions[a:b], mine


def _row_set(rows: np.ndarray) -> set[bytes]:
    return {row.tobytes() for row in np.ascontiguousarray(rows)}


def _tree_parts(pos: np.ndarray, edges: np.ndarray) -> tuple[bytes, set[bytes], set[bytes]]:
    """Root position, leaf positions, branch point positions of one tree."""
    children = np.bincount(edges[:, 1], minlength=pos.shape[0])
    root = np.setdiff1d(np.arange(pos.shape[0]), edges[:, 0])
    assert root.shape[0] == 1
    assert edges.shape[0] == pos.shape[0] - 1
    return pos[root[0]].tobytes(), _row_set(pos[children == 0]), _row_set(pos[children >= 2])


def _components(n: int, edges: np.ndarray) -> int:
    label = np.arange(n)
    for _ in range(n):
        low = np.minimum(label[edges[:, 0]], label[edges[:, 1]])
        new = label.copy()
        np.minimum.at(new, edges[:, 0], low)
        np.minimum.at(new, edges[:, 1], low)
        if np.array_equal(new, label):
            break
        label = new
    return int(np.unique(label).shape[0])


def test_read_objects_keeps_each_kinds_promises(stored: Path) -> None:
    store = zv.open(stored)
    ids = np.asarray(store.object_ids)[::-1]
    fine = store.read_objects(ids, level=0)
    for info in store.levels[1:]:
        coarse = store.read_objects(ids, level=info.level)
        for k in range(len(ids)):
            (p0, l0), (p1, l1) = _pieces(fine, k), _pieces(coarse, k)
            assert _row_set(p1) <= _row_set(p0)
            if store.kind == "skeleton":
                assert _tree_parts(p1, l1) == _tree_parts(p0, l0)
            elif store.kind == "graph":
                assert _components(len(p1), l1) == _components(len(p0), l0)
                assert not (l1[:, 0] == l1[:, 1]).any()
            else:
                _faces_are_images(p0, l0, p1, l1, store.levels[info.level].bin_shape)


def _faces_are_images(
    p0: np.ndarray, f0: np.ndarray, p1: np.ndarray, f1: np.ndarray, bins: tuple[float, ...]
) -> None:
    """Every coarse face is a level-0 face with each vertex replaced by the coarse vertex
    of its coarse bin, in the same cyclic order (chunks are multiples of bins)."""
    cell = {tuple(c): i for i, c in enumerate(np.floor(p1 / np.asarray(bins)).astype(int))}
    mapped = np.asarray([cell[tuple(c)] for c in np.floor(p0 / np.asarray(bins)).astype(int)])
    images = mapped[f0]
    assert len(f1) <= len(f0)
    rotations = {tuple(np.roll(face, -r)) for face in images for r in range(3)}
    assert all(tuple(face) in rotations for face in f1)
    assert len(np.unique(np.sort(f1, axis=1), axis=0)) == len(f1)


def test_validate_level5_is_clean(stored: Path) -> None:
    report = zv.validate(stored, level=5)
    assert report.ok, report.summary()
    assert not report.warnings, report.summary()
    assert {"L5.thin_still_tree", "L5.cluster_graph_links", "L5.cluster_mesh_faces"} & set(
        report.checks_run
    )


@pytest.mark.parametrize("kind", ["skeleton", "mesh"])
def test_levels_none_and_zero_write_the_same_bytes_as_before(tmp_path: Path, kind: str) -> None:
    a = write(kind, tmp_path / "a.zv", levels=None)
    b = write(kind, tmp_path / "b.zv", levels=0)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert not (a / "1").exists()
    for rel in files:
        if rel.name not in ("zarr.json", ".zattrs", "metadata.json"):
            assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    assert zv.open(a).metadata["zarr_vectors_version"] == "1.6"


@pytest.mark.parametrize(
    ("writer", "method"), [("skeleton", "cluster"), ("graph", "thin"), ("mesh", "runs")]
)
def test_another_kinds_method_is_refused(tmp_path: Path, writer: str, method: str) -> None:
    with pytest.raises(zv.InvalidInputError, match="coarsen by"):
        write(writer, tmp_path / "x.zv", levels=zv.Levels(count=1, method=method))
    assert not (tmp_path / "x.zv").exists()


@settings(
    max_examples=examples(8, 100),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    level=st.integers(1, LEVELS),
    corner=st.tuples(*[st.floats(0, 32) for _ in range(3)]),
    size=st.tuples(*[st.floats(0.5, 20) for _ in range(3)]),
)
def test_box_query_at_a_level_is_brute_force(
    stored: Path,
    level: int,
    corner: tuple[float, float, float],
    size: tuple[float, float, float],
) -> None:
    store = zv.open(stored)
    level = min(level, store.levels[-1].level)
    everything = store.read(level=level)
    lo, hi = np.asarray(corner), np.asarray(corner) + np.asarray(size)
    inside = np.all((everything.positions >= lo) & (everything.positions < hi), axis=1)
    owner = np.repeat(everything.object_ids, np.diff(everything.offsets))
    expected = np.unique(owner[inside])
    found = store.query((lo, hi), level=level)
    assert found.level == level
    np.testing.assert_array_equal(np.sort(found.object_ids), expected)
    kept = np.isin(owner, expected)
    found_owner = np.repeat(found.object_ids, np.diff(found.offsets))
    np.testing.assert_array_equal(
        sorted_rows(found.positions, found.attributes["k"], found_owner),
        sorted_rows(everything.positions[kept], everything.attributes["k"][kept], owner[kept]),
    )
