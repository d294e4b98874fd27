"""Object cases: streamlines, a triangle mesh and skeletons, each beside a numpy floor.

Each data set is written with its ``zv.write_*`` writer, then read whole, read by id and
queried by boxes. The numpy floor keeps the same arrays (vertices, per-object offsets,
attributes, faces or edges) as ``.npy`` files or in memory: a box is answered by a
brute-force mask over every vertex, ``np.unique`` of the object id of the vertices inside,
and the gather of those objects' vertices (whole, like the query); a read by id slices the
in-memory arrays.

Every result is checked against the numpy answer: the same object ids, and for each object
exactly its input vertices, attributes, per-object attributes and faces or edges.

``python -m benchmarks.objects --profile CASE`` profiles one case with :mod:`cProfile`
(see :func:`main`).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, TypeVar

import numpy as np

import zarr_vectors as zv
from benchmarks._measure import (
    back_to_back,
    log,
    median,
    settle_allocator,
    timed,
    timed_write,
    tree_size,
    within_budget,
)
from benchmarks._table import Row, format_seconds
from zarr_vectors.kernels._jit import set_kernel_mode

__all__ = [
    "FOOTNOTES",
    "ObjectSet",
    "Sizes",
    "DEFAULT_SIZES",
    "QUICK_SIZES",
    "make_streamlines",
    "make_mesh",
    "make_skeletons",
    "run_objects",
    "main",
]

T = TypeVar("T")

SIDE = 200.0
"""Side (mm) of the cube ``[0, SIDE)^3`` every object data set lies in."""

STREAMLINE_CHUNK, STREAMLINE_BIN = 50.0, 12.5
"""Chunks of 50 mm (4^3 chunks over a brain-sized 200 mm cube) and bins of 12.5 mm. At
10,000 streamlines a chunk holds ~16,000 vertices of ~300 streamlines: inside both the
10k-100k vertices and the 50-500 streamlines per chunk the format notes recommend. Smaller
chunks (``--streamline-chunk 40,10``: ~8,000 vertices per chunk) touch more chunks per
object and multiply the files, which this machine's file system makes slow to create."""

MESH_CHUNK, MESH_BIN = 40.0, 10.0
"""Chunks of 40 mm (5^3 chunks) and bins of 10 mm for the mesh: its objects are spheres of
8-16 mm radius, so most lie in one to four chunks."""

SKELETON_CHUNK, SKELETON_BIN = 40.0, 10.0
"""Chunks of 40 mm and bins of 10 mm for the skeletons (trees spanning tens of mm)."""

STREAMLINE_WRITE_TARGET = (1_000_000, 1.5)
"""A write of this many streamline vertices in under this many seconds."""

STREAMLINE_QUERY_TARGET = (10_000, 0.01, 0.030)
"""A warm box of this volume fraction over this many streamlines in under this time."""

STREAMLINE_BY_ID_TARGET = (100, 0.010)
"""This many streamlines by id, warm, in under this time."""

MESH_BY_ID_TARGET = (1, 0.050)
"""One object of the full-size mesh by id, warm, in under this time."""

WRITE_BUDGET = 12.0
"""Seconds of repeated writes (or full reads) per data set before repeats stop."""

WARM_BUDGET = 2.0
"""Seconds of warm repeats per box or id set before repeats stop."""

BOX_BUDGET = 35.0
"""Seconds spent on the boxes of one fraction before further boxes are skipped."""

COLD_REPEATS = (3, 0.25)
"""Cold box queries per box (each on a fresh ``zv.open``, each beside a fresh floor), and
the seconds of a first cold query and its floor above which a box gets no more: a box's
cold figures are the medians of its repeats (a single cold query of the skeleton 1% box
swung 1.1-1.7x its floor between runs, 2026-12-05)."""


@dataclass(frozen=True)
class Sizes:
    """The sizes of one run of the objects section.

    Attributes
    ----------
    streamlines
        ``(count, vertices each)`` of every streamline data set.
    mesh
        ``(objects, triangles each)`` of the mesh.
    skeletons
        ``(objects, nodes each)`` of the skeletons.
    streamline_layout
        Chunk and bin side (mm) of the streamline stores.
    """

    streamlines: tuple[tuple[int, int], ...]
    mesh: tuple[int, int]
    skeletons: tuple[int, int]
    streamline_layout: tuple[float, float] = (STREAMLINE_CHUNK, STREAMLINE_BIN)


DEFAULT_SIZES = Sizes(((10_000, 100), (100_000, 100)), (100, 10_000), (100, 1_000))
QUICK_SIZES = Sizes(((10_000, 100),), (100, 1_000), (20, 1_000))

FOOTNOTES = (
    "n = objects x vertices each (streamlines, skeletons) or objects x triangles each (mesh). "
    "Everything lies in a 200 mm cube. Streamlines: persistent random walks of 1 mm steps, "
    "chunks and bins as in the write row (default 50 mm, 12.5 mm), one float32 vertex attribute "
    "and one float32 object attribute. "
    "Mesh: UV spheres of 8-16 mm radius, chunks 40 mm, bins 10 mm. Skeletons: branching "
    "random walks, chunks 40 mm, bins 10 mm.",
    "floor (numpy): np.save / np.load of the same arrays (vertices, offsets, attributes, "
    "faces or edges); a box's floor is a brute-force mask over every vertex, np.unique of "
    "the owners of the vertices inside, and the gather of those objects whole (the 'ids "
    "only' time in detail stops after np.unique); by id, the same gather of the ids. "
    "The section first frees a 30 MiB block, so malloc serves the floors' arrays below that "
    "size from memory it keeps, as late in a long process, not from freshly faulted pages.",
    "cold = zv.open then the first query or read on that handle (page cache warm, kernels "
    "loaded: every box or id set is first asked twice on an untimed fresh open; a box's "
    "cold figures, ours and the floor's, are the medians of 3 fresh opens); warm = "
    "median of repeats on the same handle (the same box again: its decoded row blocks are "
    "cached); moving = a fresh random box each time on one handle. Every timed call follows "
    "a gc.collect(), which leaves the CPU caches cold; a warm row's detail also gives the "
    "steady state, the same repeats back to back with no collection between them (ours vs "
    "floor). Repeats and boxes stop at a time budget; detail gives how many ran.",
    "ok = the object ids equal the brute-force set (by id: the ids in the order asked) and "
    "every object holds exactly its input vertices, vertex and object attributes and faces "
    "or edges; the exit status is 1 if any is FAIL.",
)

_FRACTIONS = (0.01, 0.25)


# -- data ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Frame:
    """Objects as plain arrays: the numpy side of every comparison.

    Object ``k`` owns vertex rows ``offsets[k]:offsets[k+1]`` and link rows
    ``link_offsets[k]:link_offsets[k+1]`` (faces or edges, as global vertex rows).

    Attributes
    ----------
    positions
        ``(n, 3)`` float32 vertices, object by object.
    offsets
        ``(m + 1,)`` int64.
    attributes
        Per-vertex columns.
    object_attributes
        Per-object columns.
    links
        ``(e, 3)`` faces or ``(e, 2)`` edges, or None (streamlines).
    link_offsets
        ``(m + 1,)`` int64, or None.
    """

    positions: np.ndarray
    offsets: np.ndarray
    attributes: dict[str, np.ndarray]
    object_attributes: dict[str, np.ndarray]
    links: np.ndarray | None = None
    link_offsets: np.ndarray | None = None

    @property
    def n_objects(self) -> int:
        """Number of objects."""
        return int(self.offsets.shape[0] - 1)

    @cached_property
    def vertex_object(self) -> np.ndarray:
        """``(n,)`` object of every vertex."""
        return np.repeat(np.arange(self.n_objects, dtype=np.int64), np.diff(self.offsets))

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array by a file name (what the ``.npy`` floor saves)."""
        out = {"positions": self.positions, "offsets": self.offsets}
        out.update({f"v_{k}": v for k, v in self.attributes.items()})
        out.update({f"o_{k}": v for k, v in self.object_attributes.items()})
        if self.links is not None and self.link_offsets is not None:
            out.update(links=self.links, link_offsets=self.link_offsets)
        return out

    def save(self, directory: str) -> None:
        """``np.save`` every array into ``directory`` (which exists)."""
        for name, values in self.arrays().items():
            np.save(os.path.join(directory, f"{name}.npy"), values)

    @classmethod
    def load(cls, directory: str) -> Frame:
        """``np.load`` the arrays :meth:`save` wrote."""
        arrays = {
            name[:-4]: np.load(os.path.join(directory, name))
            for name in sorted(os.listdir(directory))
            if name.endswith(".npy")
        }
        return cls(
            positions=arrays["positions"],
            offsets=arrays["offsets"],
            attributes={k[2:]: v for k, v in arrays.items() if k.startswith("v_")},
            object_attributes={k[2:]: v for k, v in arrays.items() if k.startswith("o_")},
            links=arrays.get("links"),
            link_offsets=arrays.get("link_offsets"),
        )

    def owners(self, box: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """Ascending ids of the objects with at least one vertex in the half-open box."""
        lo, hi = box
        mask = ((self.positions >= lo) & (self.positions < hi)).all(1)
        return np.unique(self.vertex_object[mask])

    def gather(self, ids: np.ndarray) -> Gathered:
        """The objects ``ids``, whole, in that order (links renumbered to the result)."""
        rows, starts = _ranges(self.offsets, ids)
        links = None
        if self.links is not None and self.link_offsets is not None:
            link_rows, _ = _ranges(self.link_offsets, ids)
            counts = self.link_offsets[ids + 1] - self.link_offsets[ids]
            shift = np.repeat(starts - self.offsets[ids], counts)
            links = self.links[link_rows] + shift[:, None]
        return Gathered(
            object_ids=ids,
            positions=self.positions[rows],
            offsets=np.concatenate([[0], np.cumsum(np.diff(self.offsets)[ids])]),
            attributes={k: v[rows] for k, v in self.attributes.items()},
            object_attributes={k: v[ids] for k, v in self.object_attributes.items()},
            links=links,
        )

    def query(self, box: tuple[np.ndarray, np.ndarray]) -> Gathered:
        """The brute-force answer of a box: its owners, whole (the query floor)."""
        return self.gather(self.owners(box))


def _ranges(offsets: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``offsets[i]:offsets[i+1]`` of every ``i`` in ``ids``, concatenated, and the
    start of each object in that concatenation."""
    first = offsets[ids]
    counts = offsets[ids + 1] - first
    ends = np.cumsum(counts)
    starts = ends - counts
    total = int(ends[-1]) if ends.shape[0] else 0
    return np.arange(total, dtype=np.int64) + np.repeat(first - starts, counts), starts


@dataclass(frozen=True)
class Gathered:
    """Objects gathered from a :class:`Frame`: what a read or query should return."""

    object_ids: np.ndarray
    positions: np.ndarray
    offsets: np.ndarray
    attributes: dict[str, np.ndarray]
    object_attributes: dict[str, np.ndarray]
    links: np.ndarray | None


@dataclass(frozen=True)
class ObjectSet:
    """One object data set and how to write it.

    Attributes
    ----------
    kind
        ``"streamlines"``, ``"mesh"`` or ``"skeletons"`` (the case prefix).
    label
        The ``n`` cell, e.g. ``"1e4 x 100"``.
    frame
        The arrays.
    write
        ``write(path)`` writes the store with the matching ``zv.write_*``.
    links_name
        ``"faces"``, ``"edges"`` or ``""``: the :class:`~zarr_vectors.QueryResult` field of
        the links.
    layout
        Chunk and bin shapes, for ``detail``.
    """

    kind: str
    label: str
    frame: Frame
    write: Callable[[str], None] = field(repr=False)
    links_name: str = ""
    layout: str = ""

    @property
    def n_vertices(self) -> int:
        """Number of vertices."""
        return int(self.frame.positions.shape[0])


def _walk_step(
    rng: np.random.Generator, p: np.ndarray, d: np.ndarray, turn: float
) -> tuple[np.ndarray, np.ndarray]:
    """One unit step of persistent random walks, reflected at the walls of the cube."""
    d = d + rng.normal(scale=turn, size=d.shape)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    p = p + d
    low, high = p < 0.0, p >= SIDE
    p[low] = -p[low]
    p[high] = 2.0 * SIDE - p[high]
    d[low | high] *= -1.0
    np.clip(p, 0.0, np.nextafter(np.float32(SIDE), np.float32(0.0)), out=p)
    return p, d


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return d


def make_streamlines(
    count: int,
    length: int,
    seed: int,
    layout: tuple[float, float] = (STREAMLINE_CHUNK, STREAMLINE_BIN),
) -> ObjectSet:
    """Random-walk streamlines in the cube, one vertex attribute, one object attribute.

    Each streamline starts at a uniform random point with a random direction and takes
    ``length - 1`` steps of 1 mm, turning a little at each (normal noise of 0.3 on the unit
    direction), reflected at the cube's walls.

    Parameters
    ----------
    count
        Number of streamlines.
    length
        Vertices per streamline.
    seed
        Seed of :func:`numpy.random.default_rng`.
    layout
        Chunk and bin side of the store, in mm.

    Returns
    -------
    ObjectSet
        Float32 vertices, vertex attribute ``fa`` and object attribute ``weight``.
    """
    rng = np.random.default_rng([seed, 1])
    vertices = np.empty((length, count, 3), dtype=np.float32)
    p = rng.uniform(0.0, SIDE, size=(count, 3))
    d = _unit(rng, count)
    for i in range(length):
        vertices[i] = p
        p, d = _walk_step(rng, p, d, 0.3)
    frame = Frame(
        positions=np.ascontiguousarray(vertices.transpose(1, 0, 2)).reshape(-1, 3),
        offsets=np.arange(count + 1, dtype=np.int64) * length,
        attributes={"fa": rng.random(count * length, dtype=np.float32)},
        object_attributes={"weight": rng.random(count, dtype=np.float32)},
    )

    def write(path: str) -> None:
        zv.write_polylines(
            path,
            (frame.positions, frame.offsets),
            kind="streamline",
            chunk_shape=layout[0],
            bin_shape=layout[1],
            attributes=frame.attributes,
            object_attributes=frame.object_attributes,
        )

    return ObjectSet(
        "streamlines",
        f"{_count_label(count)} x {length}",
        frame,
        write,
        layout=f"chunks {layout[0]:g} mm, bins {layout[1]:g} mm",
    )


def _sphere(rings: int, segments: int) -> tuple[np.ndarray, np.ndarray]:
    """A unit UV sphere: ``2 + segments * (rings - 1)`` vertices, ``2 * segments * (rings -
    1)`` triangles, outward winding."""
    theta = np.linspace(0.0, np.pi, rings + 1)[1:-1]
    phi = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    ring = np.stack(
        [
            np.outer(np.sin(theta), np.cos(phi)).ravel(),
            np.outer(np.sin(theta), np.sin(phi)).ravel(),
            np.repeat(np.cos(theta), segments),
        ],
        axis=1,
    )
    vertices = np.concatenate([[[0.0, 0.0, 1.0]], ring, [[0.0, 0.0, -1.0]]])
    s = np.arange(segments)
    s1 = (s + 1) % segments
    faces = [np.stack([np.zeros(segments, np.int64), 1 + s, 1 + s1], axis=1)]
    for r in range(rings - 2):
        a, b = 1 + r * segments, 1 + (r + 1) * segments
        faces.append(np.stack([a + s, b + s, b + s1], axis=1))
        faces.append(np.stack([a + s, b + s1, a + s1], axis=1))
    south = vertices.shape[0] - 1
    last = 1 + (rings - 2) * segments
    faces.append(np.stack([np.full(segments, south), last + s1, last + s], axis=1))
    return vertices, np.concatenate(faces).astype(np.int64)


def make_mesh(objects: int, triangles: int, seed: int) -> ObjectSet:
    """``objects`` UV spheres of about ``triangles`` triangles each, spread in the cube.

    Parameters
    ----------
    objects
        Number of spheres (one object each).
    triangles
        Triangles per sphere (rounded to ``2 * segments * (rings - 1)`` with
        ``segments = 2 * (rings - 1)``).
    seed
        Seed of :func:`numpy.random.default_rng`.

    Returns
    -------
    ObjectSet
        Float32 vertices, int64 faces, vertex attribute ``curvature``, object attribute
        ``volume``.
    """
    rng = np.random.default_rng([seed, 2])
    half = max(2, round((triangles / 4) ** 0.5))  # rings - 1
    unit, faces = _sphere(half + 1, 2 * half)
    radius = rng.uniform(8.0, 16.0, size=objects)
    centre = rng.uniform(16.0, SIDE - 16.0, size=(objects, 3))
    positions = (unit[None] * radius[:, None, None] + centre[:, None, :]).astype(np.float32)
    nv, nf = unit.shape[0], faces.shape[0]
    frame = Frame(
        positions=positions.reshape(-1, 3),
        offsets=np.arange(objects + 1, dtype=np.int64) * nv,
        attributes={"curvature": np.repeat((1.0 / radius).astype(np.float32), nv)},
        object_attributes={"volume": (4.0 / 3.0 * np.pi * radius**3).astype(np.float32)},
        links=(faces[None] + (np.arange(objects) * nv)[:, None, None]).reshape(-1, 3),
        link_offsets=np.arange(objects + 1, dtype=np.int64) * nf,
    )

    def write(path: str) -> None:
        zv.write_mesh(
            path,
            frame.positions,
            frame.links,
            vertex_objects=frame.vertex_object,
            chunk_shape=MESH_CHUNK,
            bin_shape=MESH_BIN,
            attributes=frame.attributes,
            object_attributes=frame.object_attributes,
        )

    return ObjectSet(
        "mesh",
        f"{objects} x {_count_label(nf)} tri",
        frame,
        write,
        links_name="faces",
        layout=f"chunks {MESH_CHUNK:g} mm, bins {MESH_BIN:g} mm",
    )


def make_skeletons(objects: int, nodes: int, seed: int) -> ObjectSet:
    """Random trees: branching random walks of 1 mm steps, ``nodes`` nodes each.

    Node ``i > 0`` of every tree continues from node ``i - 1`` with probability 0.95 and
    otherwise branches off a uniformly chosen earlier node; its direction is its parent's
    plus normal noise of 0.4.

    Parameters
    ----------
    objects
        Number of trees.
    nodes
        Nodes per tree (node 0 is the root).
    seed
        Seed of :func:`numpy.random.default_rng`.

    Returns
    -------
    ObjectSet
        Float32 vertices, ``[child, parent]`` edges (global rows), vertex attribute
        ``radius`` and object attribute ``cell_type``.
    """
    rng = np.random.default_rng([seed, 3])
    pos = np.empty((objects, nodes, 3), dtype=np.float64)
    dirs = np.empty((objects, nodes, 3), dtype=np.float64)
    parent = np.empty((objects, nodes), dtype=np.int64)
    parent[:, 0] = -1
    pos[:, 0] = rng.uniform(20.0, SIDE - 20.0, size=(objects, 3))
    dirs[:, 0] = _unit(rng, objects)
    every = np.arange(objects)
    for i in range(1, nodes):
        branch = rng.random(objects) < 0.05
        par = np.where(branch, rng.integers(0, i, size=objects), i - 1)
        parent[:, i] = par
        p, d = _walk_step(rng, pos[every, par].copy(), dirs[every, par].copy(), 0.4)
        pos[:, i], dirs[:, i] = p, d
    base = (np.arange(objects) * nodes)[:, None]
    child = np.arange(1, nodes)[None, :] + base
    edges = np.stack([child.ravel(), (parent[:, 1:] + base).ravel()], axis=1)
    frame = Frame(
        positions=pos.reshape(-1, 3).astype(np.float32),
        offsets=np.arange(objects + 1, dtype=np.int64) * nodes,
        attributes={"radius": rng.uniform(0.1, 2.0, size=objects * nodes).astype(np.float32)},
        object_attributes={"cell_type": rng.integers(0, 5, size=objects).astype(np.int32)},
        links=edges.astype(np.int64),
        link_offsets=np.arange(objects + 1, dtype=np.int64) * (nodes - 1),
    )
    parents = (parent + np.where(parent >= 0, base, 0)).ravel()

    def write(path: str) -> None:
        zv.write_skeletons(
            path,
            frame.positions,
            parents=parents,
            vertex_objects=frame.vertex_object,
            radius=frame.attributes["radius"],
            chunk_shape=SKELETON_CHUNK,
            bin_shape=SKELETON_BIN,
            object_attributes=frame.object_attributes,
        )

    return ObjectSet(
        "skeletons",
        f"{objects} x {_count_label(nodes)}",
        frame,
        write,
        links_name="edges",
        layout=f"chunks {SKELETON_CHUNK:g} mm, bins {SKELETON_BIN:g} mm",
    )


def _count_label(n: int) -> str:
    text = str(n)
    if n >= 10_000 and text.strip("0") == "1":
        return f"1e{len(text) - 1}"
    return f"{n:,}"


def make_boxes(fraction: float, count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Cubes of ``fraction`` of the cube's volume at random places inside it (half-open)."""
    side = SIDE * fraction ** (1.0 / 3.0)
    rng = np.random.default_rng([seed, 4, round(fraction * 1e6)])
    corners = rng.uniform(0.0, SIDE - side, size=(count, 3))
    return [(lo, lo + side) for lo in corners]


# -- checks ----------------------------------------------------------------------------------
def same_objects(result: zv.QueryResult, expected: Gathered, links_name: str) -> bool:
    """Whether a result holds exactly the expected objects, in the same order.

    Parameters
    ----------
    result
        A read, a read by id or a whole-object query.
    expected
        The numpy answer (:meth:`Frame.gather` of the expected ids).
    links_name
        ``"faces"``, ``"edges"`` or ``""``.

    Returns
    -------
    bool
        True when ids, offsets, vertices (bit for bit, float32), every vertex and object
        attribute, and the faces or edges all agree.
    """
    if result.object_ids is None or result.offsets is None:
        return False
    if not np.array_equal(np.asarray(result.object_ids, dtype=np.int64), expected.object_ids):
        return False
    if not np.array_equal(result.offsets, expected.offsets):
        return False
    if result.positions.dtype != expected.positions.dtype:
        return False
    if not np.array_equal(result.positions, expected.positions):
        return False
    for name, values in expected.attributes.items():
        got = result.attributes.get(name)
        if got is None or got.dtype != values.dtype or not np.array_equal(got, values):
            return False
    for name, values in expected.object_attributes.items():
        got = result.object_attributes.get(name)
        if got is None or not np.array_equal(got, values):
            return False
    if links_name and expected.links is not None:
        got = getattr(result, links_name)
        return got is not None and _same_links(got, expected.links)
    return True


def _same_links(got: np.ndarray, expected: np.ndarray) -> bool:
    """Same faces (each with its winding: vertex order within a row kept) or edges, as
    multisets of rows (the library may store them in another row order)."""
    if got.shape != expected.shape:
        return False
    return bool(
        np.array_equal(got[np.lexsort(got.T[::-1])], expected[np.lexsort(expected.T[::-1])])
    )


def same_id_set(result: zv.QueryResult, frame: Frame, expected_ids: np.ndarray, links: str) -> bool:
    """A box query's check: the expected id set, each object whole and exact."""
    if result.object_ids is None:
        return False
    ids = np.asarray(result.object_ids, dtype=np.int64)
    if not np.array_equal(np.sort(ids), expected_ids):
        return False
    return same_objects(result, frame.gather(ids), links)


# -- timing ----------------------------------------------------------------------------------
def repeat_within(func: Callable[[], T], repeat: int, budget: float) -> tuple[list[float], T]:
    """Run ``func`` up to ``repeat`` times, stopping early once ``budget`` seconds would be
    exceeded by one more run (it always runs once).

    Returns
    -------
    tuple of (list of float, object)
        Every run's seconds and the last value.
    """
    times: list[float] = []
    while True:
        seconds, value = timed(func)
        times.append(seconds)
        if not within_budget(times, repeat, budget):
            return times, value


def _runs(times: list[float], asked: int) -> str:
    return f"median of {len(times)}" + ("" if len(times) >= asked else f" (of {asked}: budget)")


@dataclass
class _Context:
    data: ObjectSet
    store: str
    npy: str
    repeat: int
    seed: int
    rows: list[Row] = field(default_factory=list)

    def row(self, case: str, ours: float | None, floor: float | None, unit: str, **kw: Any) -> Row:
        row = Row(
            f"{self.data.kind} {case}",
            self.data.n_vertices,
            ours,
            floor,
            unit,
            label=self.data.label,
            **kw,
        )
        self.rows.append(row)
        return row


def _bench_write(data: ObjectSet, repeat: int, seed: int, tmp: str) -> _Context:
    """Write ``repeat`` times (within the budget) beside ``np.save``; query the last pair.

    Every store stays until the run's directory goes (see ``benchmarks/README``).
    """
    ours: list[float] = []
    floor: list[float] = []
    store = npy = ""
    while True:
        i = len(ours)
        new_store, new_npy = os.path.join(tmp, f"store-{i}.zv"), os.path.join(tmp, f"npy-{i}")
        os.mkdir(new_npy)
        ours.append(timed_write(partial(data.write, new_store))[0])
        floor.append(timed_write(partial(data.frame.save, new_npy))[0])
        store, npy = new_store, new_npy
        if len(ours) >= repeat or sum(ours) + ours[-1] > WRITE_BUDGET:
            break
    ctx = _Context(data, store, npy, repeat, seed)
    t_ours, t_floor = median(ours), median(floor)
    mv = data.n_vertices / 1e6
    limit_n, limit_s = STREAMLINE_WRITE_TARGET
    has_target = data.kind == "streamlines" and data.n_vertices == limit_n
    ctx.row(
        "write",
        t_ours,
        t_floor,
        "s",
        target=f"< {limit_s} s" if has_target else "",
        passed=(t_ours < limit_s) if has_target else None,
        detail=(
            f"{mv / t_ours:.2f} vs {mv / t_floor:.1f} M vertices/s; {_runs(ours, repeat)}; "
            f"{data.layout}"
        ),
        extra={"ours_all": ours, "floor_all": floor},
    )
    store_bytes, store_files = tree_size(store)
    npy_bytes, npy_files = tree_size(npy)
    ctx.row(
        "size on disk",
        store_bytes,
        npy_bytes,
        "B",
        detail=f"{store_bytes:,} B in {store_files} files vs {npy_bytes:,} B in {npy_files} .npy",
        extra={"store_files": store_files, "npy_files": npy_files},
    )
    return ctx


def _bench_read_all(ctx: _Context) -> None:
    data = ctx.data
    ours, result = repeat_within(lambda: zv.open(ctx.store).read(), ctx.repeat, WRITE_BUDGET)
    ok = same_objects(result, data.frame.gather(np.arange(data.frame.n_objects)), data.links_name)
    del result
    floor, _ = repeat_within(lambda: Frame.load(ctx.npy), ctx.repeat, WRITE_BUDGET)
    mv = data.n_vertices / 1e6
    ctx.row(
        "read all",
        median(ours),
        median(floor),
        "s",
        ok=ok,
        detail=(
            f"zv.open(path).read() vs np.load of every array; {_runs(ours, ctx.repeat)}; "
            f"{mv / median(ours):.2f} M vertices/s"
        ),
        extra={"ours_all": ours, "floor_all": floor},
    )


def _bench_boxes(ctx: _Context, fraction: float, boxes: int, targeted: bool) -> None:
    """Cold and warm box queries (medians over the boxes), checked against brute force."""
    data, frame = ctx.data, ctx.data.frame
    per_box: list[dict[str, Any]] = []
    asked = make_boxes(fraction, boxes, ctx.seed)
    _load_kernels(ctx, [partial(zv.VectorStore.query, region=box) for box in asked])
    began = time.perf_counter()
    for box in asked:
        expected = frame.owners(box)
        t_open, store = timed(partial(zv.open, ctx.store))
        t_first, result = timed(partial(store.query, box))
        ok = same_id_set(result, frame, expected, data.links_name)
        del result
        warm, result = repeat_within(partial(store.query, box), ctx.repeat, WARM_BUDGET)
        ok = ok and same_id_set(result, frame, expected, data.links_name)
        del result
        floor, _ = repeat_within(partial(frame.query, box), ctx.repeat, WARM_BUDGET)
        steady = back_to_back(partial(store.query, box), ctx.repeat, WARM_BUDGET)
        steady_floor = back_to_back(partial(frame.query, box), ctx.repeat, WARM_BUDGET)
        ids_only, _ = repeat_within(partial(frame.owners, box), ctx.repeat, WARM_BUDGET)
        t_load, loaded = timed(partial(Frame.load, ctx.npy))
        t_filter, _ = timed(partial(loaded.query, box))
        colds = _cold_repeats(ctx, (box, expected), (t_open, t_first), (t_load, t_filter))
        per_box.append(
            {
                "open": t_open,
                "cold": median(colds[0]),
                "cold_runs": len(colds[0]),
                "warm": median(warm),
                "warm_runs": len(warm),
                "floor": median(floor),
                "steady": median(steady),
                "steady_floor": median(steady_floor),
                "ids_only": median(ids_only),
                "load": t_load,
                "cold_floor": median(colds[1]),
                "objects": int(expected.shape[0]),
                "ok": ok and colds[2],
            }
        )
        if time.perf_counter() - began > BOX_BUDGET:
            break

    def med(key: str) -> float:
        return median([m[key] for m in per_box])

    ok = all(m["ok"] for m in per_box)
    label = f"{fraction:.0%}"
    done = f"{len(per_box)} boxes" + ("" if len(per_box) == boxes else f" (of {boxes}: budget)")
    runs = min(m["cold_runs"] for m in per_box)
    ctx.row(
        f"query {label} cold",
        med("cold"),
        med("cold_floor"),
        "s",
        ok=ok,
        detail=(
            f"zv.open {format_seconds(med('open'))} + first query, a box's the median of "
            f"{runs}+ fresh opens; median over {done}; worst "
            f"{format_seconds(max(m['cold'] for m in per_box))}; floor = np.load "
            f"{format_seconds(med('load'))} + filter"
        ),
        extra={"per_box": per_box},
    )
    limit = STREAMLINE_QUERY_TARGET[2]
    runs = min(m["warm_runs"] for m in per_box)
    ctx.row(
        f"query {label} warm",
        med("warm"),
        med("floor"),
        "s",
        ok=ok,
        target=f"< {limit * 1e3:.0f} ms" if targeted else "",
        passed=(med("warm") < limit) if targeted else None,
        detail=(
            f"median of {runs}+ repeats, over {done}; worst "
            f"{format_seconds(max(m['warm'] for m in per_box))}; ~{int(med('objects')):,} "
            f"objects/box; floor ids only {format_seconds(med('ids_only'))}; back to back "
            f"{format_seconds(med('steady'))} vs {format_seconds(med('steady_floor'))} "
            f"({med('steady') / med('steady_floor'):.2f}x)"
        ),
    )
    _bench_moving_boxes(ctx, fraction, boxes)


def _cold_repeats(
    ctx: _Context,
    asked: tuple[Any, np.ndarray],
    first: tuple[float, float],
    first_floor: tuple[float, float],
) -> tuple[list[float], list[float], bool]:
    """Cold queries of a box (``asked``: the box and its owners) by ``zv.open`` + query,
    each call timed after a collection, and their floors (``Frame.load`` + filter), in
    turn, up to :data:`COLD_REPEATS` of each with the ``first`` pair measured already (none
    more when that pair was slow), and whether every further answer equals brute force."""
    box, expected = asked
    ours, floors, ok = [sum(first)], [sum(first_floor)], True
    count, slow = COLD_REPEATS
    while len(ours) < count and ours[0] + floors[0] <= slow:
        t_open, store = timed(partial(zv.open, ctx.store))
        t_first, result = timed(partial(store.query, box))
        ours.append(t_open + t_first)
        ok = ok and same_id_set(result, ctx.data.frame, expected, ctx.data.links_name)
        del store, result
        t_load, loaded = timed(partial(Frame.load, ctx.npy))
        floors.append(t_load + timed(partial(loaded.query, box))[0])
    return ours, floors, ok


def _load_kernels(ctx: _Context, asks: list[Callable[[zv.VectorStore], object]]) -> None:
    """Each of ``asks`` (what the section's timed calls ask) on a fresh open, twice (cold,
    then warm on its handle), not timed: numba loads the kernels of those paths before any
    call of the section is timed, as cold means (kernels loaded, page cache warm; the tiny
    stores of :func:`warm_up` do not take every path of the benchmark's sizes: four
    kernels were first loaded inside timed calls, 8-24 ms each, 2026-12-05)."""
    for ask in asks:
        handle = zv.open(ctx.store)
        ask(handle)
        ask(handle)


def _bench_moving_boxes(ctx: _Context, fraction: float, boxes: int) -> None:
    """Boxes that move: a fresh random box each time on one open handle (after one box
    not timed), so the cache of decoded blocks holds only what the boxes share."""
    data, frame = ctx.data, ctx.data.frame
    store = zv.open(ctx.store)
    first, *moving = make_boxes(fraction, 1 + max(3, 2 * boxes), ctx.seed + 1)
    _load_kernels(ctx, [lambda handle: [handle.query(box) for box in (first, *moving)]])
    store.query(first)
    ours: list[float] = []
    floor: list[float] = []
    ok = True
    began = time.perf_counter()
    for box in moving:
        seconds, result = timed(partial(store.query, box))
        ok = ok and same_id_set(result, frame, frame.owners(box), data.links_name)
        del result
        ours.append(seconds)
        floor.append(timed(partial(frame.query, box))[0])
        if time.perf_counter() - began > BOX_BUDGET:
            break
    ctx.row(
        f"query {fraction:.0%} moving",
        median(ours),
        median(floor),
        "s",
        ok=ok,
        detail=(
            f"a fresh random box each time on one handle (warm: not the same box again); "
            f"median of {len(ours)} boxes; worst {format_seconds(max(ours))}"
        ),
    )


def _bench_by_id(ctx: _Context, count: int, sets: int, limit: float | None) -> None:
    """Read ``count`` random objects by id: cold (in detail) and warm, beside slicing."""
    data, frame = ctx.data, ctx.data.frame
    rng = np.random.default_rng([ctx.seed, 5, count])
    asked = [
        rng.choice(frame.n_objects, size=count, replace=False).astype(np.int64) for _ in range(sets)
    ]
    _load_kernels(ctx, [partial(zv.VectorStore.read_objects, ids=ids) for ids in asked])
    per_set: list[dict[str, Any]] = []
    for ids in asked:
        expected = frame.gather(ids)
        t_open, store = timed(partial(zv.open, ctx.store))
        t_first, result = timed(partial(store.read_objects, ids))
        ok = same_objects(result, expected, data.links_name)
        warm, result = repeat_within(partial(store.read_objects, ids), ctx.repeat, WARM_BUDGET)
        ok = ok and same_objects(result, expected, data.links_name)
        floor, _ = repeat_within(partial(frame.gather, ids), ctx.repeat, WARM_BUDGET)
        per_set.append(
            {"cold": t_open + t_first, "warm": median(warm), "floor": median(floor), "ok": ok}
        )
    warm_t = median([m["warm"] for m in per_set])
    noun = "object" if count == 1 else "objects"
    ctx.row(
        f"{count} {noun} by id",
        warm_t,
        median([m["floor"] for m in per_set]),
        "s",
        ok=all(m["ok"] for m in per_set),
        target="" if limit is None else f"< {limit * 1e3:.0f} ms",
        passed=None if limit is None else warm_t < limit,
        detail=(
            f"warm, median over {sets} random id sets; cold (zv.open + first read) "
            f"{format_seconds(median([m['cold'] for m in per_set]))}; worst warm "
            f"{format_seconds(max(m['warm'] for m in per_set))}; floor = slicing in memory"
        ),
        extra={"per_set": per_set},
    )


# -- the cases -------------------------------------------------------------------------------
def warm_up(tmp: str) -> None:
    """Write, read, query and read by id tiny streamline, mesh and skeleton stores, so
    numba's kernels are compiled or loaded before any timing (never run as Python: see
    :func:`benchmarks._data.warm_up`), after :func:`~benchmarks._measure.settle_allocator`
    (the floors' ``np.load`` in the allocator's state of a long process)."""
    settle_allocator()
    set_kernel_mode("compiled")
    for data in (
        make_streamlines(50, 20, 12345),
        make_mesh(4, 200, 12345),
        make_skeletons(4, 50, 12345),
    ):
        path = os.path.join(tmp, f"warm-up-{data.kind}.zv")
        shutil.rmtree(path, ignore_errors=True)  # tiny; the run's own stores stay to its end
        data.write(path)
        store = zv.open(path)
        store.read()
        store.read_objects([0, 1])
        store.query(make_boxes(0.25, 1, 12345)[0])


def _run_streamlines(
    count: int,
    length: int,
    layout: tuple[float, float],
    seed: int,
    repeat: int,
    boxes: int,
    tmp: str,
) -> list[Row]:
    log(f"streamlines {count:,} x {length}: make")
    data = make_streamlines(count, length, seed, layout)
    log(f"streamlines {count:,} x {length}: write")
    ctx = _bench_write(data, repeat, seed, tmp)
    log(f"streamlines {count:,} x {length}: read all")
    _bench_read_all(ctx)
    for fraction in _FRACTIONS:
        log(f"streamlines {count:,} x {length}: boxes of {fraction:.0%}")
        n_t, frac_t, _ = STREAMLINE_QUERY_TARGET
        _bench_boxes(ctx, fraction, boxes, targeted=count == n_t and fraction == frac_t)
    log(f"streamlines {count:,} x {length}: 100 by id")
    by_id, limit = STREAMLINE_BY_ID_TARGET
    _bench_by_id(ctx, min(by_id, count), boxes, limit if count >= by_id else None)
    return ctx.rows


def _run_mesh(
    objects: int, triangles: int, seed: int, repeat: int, boxes: int, tmp: str, full: bool
) -> list[Row]:
    data = make_mesh(objects, triangles, seed)
    log(f"mesh {data.label}: write")
    ctx = _bench_write(data, repeat, seed, tmp)
    log(f"mesh {data.label}: 1 by id")
    count, limit = MESH_BY_ID_TARGET
    _bench_by_id(ctx, count, boxes, limit if full else None)
    for fraction in _FRACTIONS:
        log(f"mesh {data.label}: boxes of {fraction:.0%}")
        _bench_boxes(ctx, fraction, boxes, targeted=False)
    return ctx.rows


def _run_skeletons(
    objects: int, nodes: int, seed: int, repeat: int, boxes: int, tmp: str
) -> list[Row]:
    data = make_skeletons(objects, nodes, seed)
    log(f"skeletons {data.label}: write")
    ctx = _bench_write(data, repeat, seed, tmp)
    log(f"skeletons {data.label}: read all")
    _bench_read_all(ctx)
    log(f"skeletons {data.label}: 10 by id")
    _bench_by_id(ctx, min(10, objects), boxes, None)
    for fraction in _FRACTIONS:
        log(f"skeletons {data.label}: boxes of {fraction:.0%}")
        _bench_boxes(ctx, fraction, boxes, targeted=False)
    return ctx.rows


def run_objects(sizes: Sizes, *, seed: int, repeat: int, boxes: int, tmp: str) -> list[Row]:
    """Every object case.

    Parameters
    ----------
    sizes
        :data:`DEFAULT_SIZES` or :data:`QUICK_SIZES`.
    seed
        Seed of the data, the boxes and the id sets.
    repeat
        Repeats of each write, full read and warm query (stopped early by time budgets).
    boxes
        Boxes per volume fraction, and random id sets per read-by-id case.
    tmp
        A scratch directory (the caller deletes it).

    Returns
    -------
    list of Row
        The streamline, mesh and skeleton rows.
    """
    log("objects: warm-up")
    warm_up(tmp)
    rows: list[Row] = []
    # Every store stays until the caller deletes tmp (see _bench_write).
    for count, length in sizes.streamlines:
        scratch = tempfile.mkdtemp(dir=tmp)
        rows += _run_streamlines(
            count, length, sizes.streamline_layout, seed, repeat, boxes, scratch
        )
    full = sizes.mesh == DEFAULT_SIZES.mesh
    rows += _run_mesh(*sizes.mesh, seed, repeat, boxes, tempfile.mkdtemp(dir=tmp), full)
    rows += _run_skeletons(*sizes.skeletons, seed, repeat, boxes, tempfile.mkdtemp(dir=tmp))
    return rows


# -- profiling -------------------------------------------------------------------------------
_PROFILES = ("write", "query", "by-id", "read", "mesh-by-id", "mesh-write", "skeleton-write")


def _profile(
    case: str, quick: bool, seed: int, top: int, repeat: int, layout: tuple[float, float]
) -> None:
    with tempfile.TemporaryDirectory(prefix="zv-bench-prof-", dir="/tmp") as tmp:
        warm_up(tmp)
        if case.startswith("mesh"):
            objects, triangles = (QUICK_SIZES if quick else DEFAULT_SIZES).mesh
            data = make_mesh(objects, triangles, seed)
        elif case.startswith("skeleton"):
            data = make_skeletons(*(QUICK_SIZES if quick else DEFAULT_SIZES).skeletons, seed)
        else:
            count, length = (QUICK_SIZES if quick else DEFAULT_SIZES).streamlines[0]
            data = make_streamlines(count, length, seed, layout)
        path = os.path.join(tmp, "store.zv")
        data.write(path)
        store = zv.open(path)
        box = make_boxes(0.01, 1, seed)[0]
        m = data.frame.n_objects
        ids = np.random.default_rng([seed, 5, 100]).choice(m, min(100, m), replace=False)
        calls: dict[str, Callable[[], object]] = {
            "query": lambda: store.query(box),
            "by-id": lambda: store.read_objects(ids),
            "read": store.read,
            "mesh-by-id": lambda: store.read_objects(ids[:1]),
        }
        if case.endswith("write"):
            n = [0]

            def call() -> object:
                n[0] += 1
                data.write(os.path.join(tmp, f"again-{n[0]}.zv"))
                return None

        else:
            call = calls[case]
            call()  # warm
        profiler = cProfile.Profile()
        began = time.perf_counter()
        profiler.enable()
        for _ in range(repeat):
            call()
        profiler.disable()
        each = (time.perf_counter() - began) / repeat
        print(
            f"{case} on {data.kind} {data.label}: {format_seconds(each)} per call "
            f"(under the profiler), {repeat} calls"
        )
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(top)
        stats.sort_stats("cumulative").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.objects --profile CASE``: profile one object case.

    Cases: ``write``, ``query`` (1% box, warm), ``by-id`` (100 ids, warm), ``read`` (all)
    on the 10,000-streamline set; ``mesh-by-id`` and ``mesh-write`` on the mesh;
    ``skeleton-write`` on the skeletons. Prints the :mod:`pstats` top entries by own time
    and by cumulative time.

    Parameters
    ----------
    argv
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0.
    """
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.objects", description="profile one object case"
    )
    parser.add_argument("--profile", choices=_PROFILES, required=True)
    parser.add_argument("--quick", action="store_true", help="the --quick sizes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top", type=int, default=25, help="entries to print (default 25)")
    parser.add_argument("--repeat", type=int, default=5, help="profiled calls (default 5)")
    parser.add_argument(
        "--streamline-chunk",
        default=f"{STREAMLINE_CHUNK:g},{STREAMLINE_BIN:g}",
        metavar="CHUNK,BIN",
        help="chunk and bin side in mm of the streamline store (default 50,12.5)",
    )
    args = parser.parse_args(argv)
    chunk, bin_side = (float(part) for part in args.streamline_chunk.split(","))
    _profile(args.profile, args.quick, args.seed, args.top, args.repeat, (chunk, bin_side))
    return 0


if __name__ == "__main__":
    sys.exit(main())
