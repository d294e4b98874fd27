"""Graphs: exact reads by id, box queries (whole and clipped) against brute force, bad input.

The reference model and the comparison helpers at the top are shared by the skeleton and
mesh tests: an object store is checked against the input arrays alone (positions, a label
per vertex, links as input vertex indices).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.helpers import examples, raw_fragments, sample_sizes
from zarr_vectors.errors import InvalidInputError

CHUNK = 10.0
BIN = 2.5
BOX_COUNTS = sample_sizes(30, 200)
"""Random boxes per brute-force test: the first 30 of the full 200 by default."""


# -- reference model shared with test_skeletons.py and test_meshes.py ----------------------


@dataclass
class Model:
    """What a store must hold, from the input arrays only.

    ``links`` are input vertex indices as they must come back (graph edges, skeleton
    ``[child, parent]`` of non-roots, mesh faces); ``ordered`` is False for undirected
    edges. Objects are numbered by ascending label; ``ids`` are their object ids.
    """

    positions: np.ndarray
    labels: np.ndarray
    links: np.ndarray
    ordered: bool = True
    attributes: dict[str, np.ndarray] = field(default_factory=dict)
    object_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    ids: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.unique, self.vertex_object = np.unique(self.labels, return_inverse=True)
        if self.ids is None:
            self.ids = self.unique

    def members(self, k: int) -> np.ndarray:
        """Input indices of object k, in input (traversal) order."""
        return np.flatnonzero(self.vertex_object == k)

    def inside(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.asarray(np.all((self.positions >= lo) & (self.positions < hi), axis=1))

    def owners(self, keep: np.ndarray) -> np.ndarray:
        return np.unique(self.vertex_object[keep])


def canonical(links: np.ndarray, ordered: bool) -> np.ndarray:
    """Links as a sorted multiset of rows; unordered edges compare as vertex pairs."""
    rows = links if ordered else np.sort(links, axis=1)
    return rows[np.lexsort(rows.T[::-1])] if rows.shape[0] else rows.reshape(0, links.shape[1])


def check_objects(
    got: zv.QueryResult, model: Model, dense: np.ndarray, keep: np.ndarray | None = None
) -> None:
    """``got`` holds exactly objects ``dense`` (in order), whole or only vertices ``keep``."""
    assert model.ids is not None
    np.testing.assert_array_equal(got.object_ids, model.ids[dense])
    assert got.offsets is not None
    assert got.offsets.shape[0] == dense.shape[0] + 1
    back = []
    for m, k in enumerate(dense):
        idx = model.members(int(k))
        if keep is not None:
            idx = idx[keep[idx]]
        part = slice(int(got.offsets[m]), int(got.offsets[m + 1]))
        np.testing.assert_array_equal(got.positions[part], model.positions[idx])
        for name, values in model.attributes.items():
            np.testing.assert_array_equal(got.attributes[name][part], values[idx])
        assert got.vertex_object_ids is not None
        assert np.all(got.vertex_object_ids[part] == model.ids[k])
        back.append(idx)
    for name, values in model.object_attributes.items():
        np.testing.assert_array_equal(got.object_attributes[name], values[dense])
    rows = np.concatenate(back) if back else np.empty(0, np.int64)
    links = got.faces if got.faces is not None else got.edges
    assert links is not None
    chosen = np.isin(model.vertex_object[model.links[:, 0]], dense)
    if keep is not None:
        chosen &= np.all(keep[model.links], axis=1)
    np.testing.assert_array_equal(
        canonical(rows[links], model.ordered), canonical(model.links[chosen], model.ordered)
    )


def check_boxes(store: zv.VectorStore, model: Model, boxes: list[tuple[Any, Any]]) -> None:
    """Whole and clipped box queries equal the brute-force reference."""
    for lo, hi in boxes:
        keep = model.inside(np.asarray(lo, np.float64), np.asarray(hi, np.float64))
        dense = model.owners(keep)
        check_objects(store.query((lo, hi)), model, dense)
        check_objects(store.query((lo, hi), clip=True), model, dense, keep)


def _chunk_index(p: np.ndarray, chunk: np.ndarray) -> np.ndarray:
    """Spec §5.1, independently of the library: ``c·C <= p < (c+1)·C`` in float64."""
    c = np.floor(p / chunk)
    c -= c * chunk > p
    c += (c + 1) * chunk <= p
    return np.asarray(c, dtype=np.int64)


@dataclass
class _Chunk:
    vertices: np.ndarray
    fragments: np.ndarray  # vertex fragment of each row
    link_fragments: np.ndarray  # link fragment of each links/0 row
    links: np.ndarray


def _stored(store: Any, path: str) -> Any:
    """A node of the store, read with plain zarr."""
    return zarr.open_group(store, mode="r")[path] if path else zarr.open_group(store, mode="r")


def _raw_level(store: Any) -> tuple[dict[str, Any], dict[tuple[int, ...], _Chunk], int]:
    """Level 0 as stored: root attributes, occupied chunks, ``N_max``."""
    group = _stored(store, "")
    root: dict[str, Any] = dict(group.attrs)
    ndim = int(root["spatial_dims"])
    width = 3 if root["geometry_type"] == "mesh" else 2
    counts = group["0/vertex_counts"][...]
    chunks = {}
    for idx in zip(*(a.tolist() for a in np.nonzero(counts)), strict=True):
        n = int(counts[idx])
        sizes, link_sizes, _ = raw_fragments(group, idx)
        e = int(link_sizes.sum())
        links = group["0/links/0"][(*idx, slice(0, e))] if e else np.empty((0, width))
        chunks[idx] = _Chunk(
            group["0/vertices"][(*idx, slice(0, n))],
            np.repeat(np.arange(len(sizes)), sizes),
            np.repeat(np.arange(len(link_sizes)), link_sizes),
            np.asarray(links, dtype=np.int64),
        )
    return root, chunks, int(group["0/vertices"].shape[ndim])


def check_link_layout(store: Any) -> None:
    """The stored links follow spec §9.6, §9.11 and §10.3-§10.7 (L3 does not check them yet)."""
    root, chunks, n_max = _raw_level(store)
    kind = root["geometry_type"]
    shape = tuple(int(s) for s in _stored(store, "0/vertex_counts").shape)
    children, roots = [], 0
    for idx, c in chunks.items():
        n = len(c.vertices)
        assert c.fragments.shape[0] == n
        assert c.link_fragments.shape[0] == len(c.links)
        local = c.links >= 0
        assert np.all(c.links[local] < n)
        if kind == "mesh":
            anchor = c.links[np.arange(len(c.links)), np.argmax(local, axis=1)]
            _check_faces(root, chunks, idx, c, n_max, shape)
        else:
            anchor = c.links[:, 0]
            _check_local_edges(root, c)
            children.append(int(np.ravel_multi_index(idx, shape)) * n_max + c.links[:, 0])
            roots += int(np.count_nonzero(~local[:, 1]))
        assert np.all(anchor >= 0)
        np.testing.assert_array_equal(c.fragments[anchor], c.link_fragments)
    if kind == "mesh":
        return
    cross = np.asarray(_stored(store, "0/cross_chunk_links")[...])
    _check_cross(root, cross, n_max)
    if kind == "skeleton":  # every vertex is a child exactly once; one root per object
        every = np.concatenate([*children, cross[:, 0]])
        assert np.unique(every).shape[0] == every.shape[0]
        assert every.shape[0] == sum(len(c.vertices) for c in chunks.values())
        assert roots == int(_stored(store, "0").attrs["object_count"])


def _check_local_edges(root: dict[str, Any], c: _Chunk) -> None:
    kind = root["geometry_type"]
    assert np.all(c.links[:, 0] != c.links[:, 1])
    assert np.all(c.links[:, 0] >= 0)
    assert kind == "skeleton" or np.all(c.links >= 0)
    if kind == "graph" and not root["is_directed"]:
        assert np.all(c.links[:, 0] < c.links[:, 1])
    if kind == "skeleton":  # ascending child row inside a link fragment
        same = c.link_fragments[1:] == c.link_fragments[:-1]
        assert np.all(np.diff(c.links[:, 0])[same] > 0)
        assert np.all(c.links[:, 1] >= -1)


def _check_cross(root: dict[str, Any], cross: np.ndarray, n_max: int) -> None:
    if cross.shape[0]:
        np.testing.assert_array_equal(cross, np.unique(cross, axis=0))  # sorted, unique
    assert np.all(cross[:, 0] // n_max != cross[:, 1] // n_max)
    if root["geometry_type"] == "graph" and not root["is_directed"]:
        assert np.all(cross[:, 0] < cross[:, 1])


def _check_faces(
    root: dict[str, Any],
    chunks: dict[tuple[int, ...], _Chunk],
    idx: tuple[int, ...],
    c: _Chunk,
    n_max: int,
    shape: tuple[int, ...],
) -> None:
    """Every face is stored in the chunk §10.7 prescribes, sentinels name other chunks."""
    size = np.asarray(root["chunk_shape"], np.float64)
    origin = np.asarray(root["chunk_grid_origin"], np.int64)
    for face in c.links.tolist():
        where, points = [], []
        for v in face:
            g = idx if v >= 0 else tuple(np.unravel_index((-v - 1) // n_max, shape))
            row = v if v >= 0 else (-v - 1) % n_max
            assert (v >= 0) == (g == idx)
            assert row < len(chunks[g].vertices)
            where.append(np.asarray(g) + origin)
            points.append(chunks[g].vertices[row].astype(np.float64))
        centroid = ((points[0] + points[1]) + points[2]) / 3
        target = _chunk_index(centroid, size)
        if any(np.array_equal(target, w) for w in where):
            np.testing.assert_array_equal(target, np.asarray(idx) + origin)
        else:
            assert face[0] >= 0


def random_boxes(
    rng: np.random.Generator, positions: np.ndarray, count: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random boxes; some with faces on vertex coordinates, some on chunk or bin edges."""
    ndim = positions.shape[1]
    boxes = []
    for i in range(count):
        lo = positions[rng.integers(0, len(positions))] - rng.uniform(0, 1.5 * CHUNK, ndim)
        hi = lo + rng.uniform(0.5, 3 * CHUNK, ndim)
        if i % 3 == 1:
            a, b = positions[rng.integers(0, len(positions), 2)]
            lo, hi = np.minimum(a, b), np.maximum(a, b) + (i % 2) * BIN
        elif i % 3 == 2:
            step = CHUNK if i % 2 else BIN
            lo = np.floor(lo / step) * step
            hi = lo + step * rng.integers(1, 4, ndim)
        boxes.append((lo, hi))
    boxes.append((np.full(ndim, -np.inf), np.full(ndim, np.inf)))
    return boxes


def scatter(
    rng: np.random.Generator, m: int, *, ndim: int = 3, max_len: int = 40
) -> tuple[np.ndarray, np.ndarray]:
    """Positions and a non-dense label per vertex of ``m`` objects, objects interleaved.

    Objects are random walks crossing chunks, a third of the coordinates on bin (and
    chunk) edges; object 0 is one vertex on a chunk corner, object 1 leaves its chunk
    and comes back.
    """
    parts = []
    for _ in range(m):
        n = int(rng.integers(1, max_len))
        walk = np.cumsum(rng.normal(0, 0.4 * CHUNK, (n, ndim)), axis=0)
        walk += rng.uniform(0, 4 * CHUNK, ndim)
        snap = rng.random(walk.shape) < 0.3
        walk[snap] = np.round(walk[snap] / BIN) * BIN
        parts.append(walk)
    parts[0] = np.full((1, ndim), 2 * CHUNK)
    if m > 1:
        out_and_back = np.full((5, ndim), 1.0)
        out_and_back[1, 0] = 1.5 * CHUNK
        out_and_back[2] = 2.0
        out_and_back[3, 1] = 2.2 * CHUNK
        out_and_back[4] = CHUNK - BIN  # a bin edge
        parts[1] = out_and_back
    labels = rng.choice(np.arange(-500, 10**6), m, replace=False)
    positions = np.concatenate(parts)
    vertex_labels = np.repeat(labels, [len(p) for p in parts])
    perm = rng.permutation(len(positions))
    return positions[perm], vertex_labels[perm]


def members_by_label(labels: np.ndarray) -> list[np.ndarray]:
    """Input indices of each object (ascending label), in input order."""
    _, dense = np.unique(labels, return_inverse=True)
    order = np.argsort(dense, kind="stable")
    return np.split(order, np.cumsum(np.bincount(dense))[:-1])


# -- graph-specific input -------------------------------------------------------------------


def random_edges(
    rng: np.random.Generator, labels: np.ndarray, directed: bool, density: float = 1.5
) -> np.ndarray:
    """Distinct edges without self-loops inside each object, in random order."""
    found = []
    for idx in members_by_label(labels):
        if len(idx) < 2:
            continue
        pairs = rng.integers(0, len(idx), (int(density * len(idx)) + 1, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        key = pairs if directed else np.sort(pairs, axis=1)
        _, first = np.unique(key, axis=0, return_index=True)
        found.append(idx[pairs[np.sort(first)]])
    edges = np.concatenate(found) if found else np.empty((0, 2), np.int64)
    return edges[rng.permutation(len(edges))]


def _graph(
    rng: np.random.Generator, m: int, *, directed: bool, ndim: int = 3, **kwargs: Any
) -> tuple[zv.VectorStore, Model, MemoryStore]:
    positions, labels = scatter(rng, m, ndim=ndim)
    edges = random_edges(rng, labels, directed)
    n = len(positions)
    attributes: dict[str, np.ndarray] = {
        "w": rng.random(n).astype(np.float32),
        "rgb": rng.integers(0, 255, (n, 3)).astype(np.uint8),
    }
    object_attributes: dict[str, np.ndarray] = {
        "score": rng.random(m),
        "kind": rng.integers(0, 5, m).astype(np.int16),
    }
    store = MemoryStore()
    zv.write_graph(
        store,
        positions,
        edges,
        directed=directed,
        vertex_objects=labels,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes=attributes,
        object_attributes=object_attributes,
        options=zv.WriteOptions(rows_per_block=16),
        **kwargs,
    )
    model = Model(positions, labels, edges, directed, attributes, object_attributes)
    return zv.open(store), model, store


@pytest.mark.parametrize("directed", [False, True])
def test_every_graph_reads_back_exactly_by_id(rng: np.random.Generator, directed: bool) -> None:
    opened, model, store = _graph(rng, 60, directed=directed)
    check_link_layout(store)
    assert opened.kind == "graph"
    assert opened.object_count == 60
    assert opened.metadata["is_directed"] is directed
    assert opened.metadata["is_tree"] is False
    assert model.ids is not None
    np.testing.assert_array_equal(opened.object_ids, model.ids)
    order = rng.permutation(60)
    check_objects(opened.read_objects(model.ids[order]), model, order)
    check_objects(opened.read(), model, np.arange(60))
    assert zv.validate(store, level=2).ok
    assert zv.validate(store, level=3).ok


@pytest.mark.parametrize("boxes", BOX_COUNTS)
@pytest.mark.parametrize("directed", [False, True])
def test_graph_boxes_equal_brute_force(
    rng: np.random.Generator, directed: bool, boxes: int
) -> None:
    opened, model, _ = _graph(rng, 80, directed=directed)
    check_boxes(opened, model, random_boxes(rng, model.positions, boxes))


def test_directed_edges_keep_direction_and_reverse_pairs() -> None:
    positions = np.array([[1.0, 1, 1], [15, 1, 1], [1, 15, 1], [2, 2, 2]])
    edges = np.array([[0, 1], [1, 0], [2, 0], [3, 0], [0, 3]])
    store = MemoryStore()
    zv.write_graph(store, positions, edges, directed=True, chunk_shape=CHUNK)
    check_link_layout(store)
    got = zv.open(store).read_objects([0])
    assert got.edges is not None
    np.testing.assert_array_equal(canonical(got.edges, True), canonical(edges, True))


def test_dense_ids_given_explicitly_groups_and_single_vertices(rng: np.random.Generator) -> None:
    positions = np.array([[0.0, 0], [10, 10], [5, 5], [19.9, 0], [20, 0], [2.5, 7.5]])
    labels = np.array([4, 4, 9, 4, 2, 9])
    edges = np.array([[0, 1], [3, 1], [2, 5]])
    ids = np.array([100, 7, 2**40], dtype=np.int64)  # for labels 2, 4, 9
    store = MemoryStore()
    zv.write_graph(
        store,
        positions,
        edges,
        vertex_objects=labels,
        object_ids=ids,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        groups={"pair": [7, 100], "big": [2**40], "none": []},
        group_attributes={"tag": np.array([1, 2, 3], np.int8)},
    )
    check_link_layout(store)
    opened = zv.open(store)
    model = Model(positions, labels, edges, ordered=False, ids=ids)
    check_objects(opened.read_objects([2**40, 100]), model, np.array([2, 0]))
    check_objects(opened.query(group="pair"), model, np.array([0, 1]))
    check_objects(opened.query(group="none"), model, np.empty(0, np.int64))
    box = ([4.0, 4.0], [11.0, 11.0])
    check_objects(opened.query(box, group="big"), model, np.array([2]))
    check_objects(opened.query(box, group="pair"), model, np.array([1]))
    assert zv.validate(store, level=2).ok


def test_one_object_by_default_and_no_edges() -> None:
    positions = np.array([[0.0, 0, 0], [30, 0, 0], [0, 30, 0]])
    store = MemoryStore()
    zv.write_graph(store, positions, np.empty((0, 2), np.int64), chunk_shape=CHUNK)
    opened = zv.open(store)
    assert opened.object_count == 1
    got = opened.read_objects([0])
    np.testing.assert_array_equal(got.positions, positions)
    assert got.edges is not None
    assert got.edges.shape == (0, 2)
    assert zv.validate(store, level=3).ok


def test_empty_graph() -> None:
    store = MemoryStore()
    zv.write_graph(store, np.empty((0, 3)), np.empty((0, 2), np.int64), chunk_shape=CHUNK)
    opened = zv.open(store)
    assert opened.object_count == 0
    assert opened.vertex_count == 0
    assert len(opened.read()) == 0
    assert zv.validate(store, level=2).ok


P = np.array([[0.0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]])
BAD: list[tuple[str, Any, dict[str, Any], str]] = [
    ("range", [[0, 4]], {}, "outside 0..3"),
    ("negative", [[-1, 2]], {}, "outside 0..3"),
    ("float", np.array([[0.0, 1.0]]), {}, "integer array"),
    ("shape", [[0, 1, 2]], {}, r"shape \(count, 2\)"),
    ("self_loop", [[0, 1], [2, 2]], {}, "self-loop"),
    ("duplicate", [[0, 1], [1, 2], [1, 0]], {}, "repeat the same edge"),
    ("duplicate_directed", [[0, 1], [0, 1]], {"directed": True}, "ordered pair"),
    ("cross_object", [[0, 2]], {"vertex_objects": [1, 1, 2, 2]}, "different objects"),
    ("labels_float", [[0, 1]], {"vertex_objects": [1.0, 1, 2, 2]}, "vertex_objects"),
    ("labels_len", [[0, 1]], {"vertex_objects": [1, 1, 2]}, "vertex_objects"),
    ("ids_len", [[0, 1]], {"vertex_objects": [1, 1, 2, 2], "object_ids": [5]}, "object_ids"),
    ("ids_dup", [[0, 1]], {"vertex_objects": [1, 1, 2, 2], "object_ids": [5, 5]}, "distinct"),
    ("directed_flag", [[0, 1]], {"directed": "yes"}, "True or False"),
    ("attr_len", [[0, 1]], {"attributes": {"a": np.zeros(3)}}, r"shape \(4,\)"),
    ("obj_attr_len", [[0, 1]], {"object_attributes": {"a": np.zeros(2)}}, r"shape \(1,\)"),
    ("reserved", [[0, 1]], {"attributes": {"object_id": np.zeros(4, int)}}, "reserved"),
    ("group_member", [[0, 1]], {"groups": {"g": [3]}}, "not an object id"),
]


@pytest.mark.parametrize(
    ("edges", "kwargs", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input(edges: Any, kwargs: dict[str, Any], message: str) -> None:
    store = MemoryStore()
    with pytest.raises(InvalidInputError, match=message):
        zv.write_graph(store, P, edges, chunk_shape=CHUNK, **kwargs)
    assert not store._store_dict


@settings(
    max_examples=examples(12, 25), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 12),
    ndim=st.integers(2, 4),
    directed=st.booleans(),
    density=st.sampled_from([0.0, 0.5, 2.0]),
)
def test_graph_property(seed: int, m: int, ndim: int, directed: bool, density: float) -> None:
    rng = np.random.default_rng(seed)
    positions, labels = scatter(rng, m, ndim=ndim, max_len=15)
    if seed % 2:  # stored as float32: boxes compare the stored values
        positions = positions.astype(np.float32)
    edges = random_edges(rng, labels, directed, density)
    store = MemoryStore()
    zv.write_graph(
        store,
        positions,
        edges,
        directed=directed,
        vertex_objects=labels,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        options=zv.WriteOptions(rows_per_block=4),
    )
    check_link_layout(store)
    opened = zv.open(store)
    model = Model(positions, labels, edges, directed)
    check_objects(opened.read_objects(model.unique[::-1]), model, np.arange(m)[::-1])
    check_boxes(opened, model, random_boxes(rng, positions, 2))
