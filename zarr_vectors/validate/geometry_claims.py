"""Level 4 checks: the geometry claims and the topology of the objects (spec §11.5).

L4 runs only when L1 to L3 found no error, so the objects of level 0 are rebuilt with the
library's own reader (:class:`~zarr_vectors.query.object_queries.ObjectReader`), a batch of
objects at a time so that memory stays bounded. Every test is vectorised over all the objects of a
batch; a Python loop only runs over the offending objects that are reported.

Object findings use the path ``0/object_index/data#object=<k>`` (k = dense object
number). In messages, the vertices of an object are numbered by their position in the
object as read (traversal order, 0 = its first vertex).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from zarr_vectors.errors import ZarrVectorsError
from zarr_vectors.format.jsonutil import is_number
from zarr_vectors.format.kinds import geometry_kind, link_width_of
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.query import ObjectReader
from zarr_vectors.read import LevelReader
from zarr_vectors.result import QueryResult
from zarr_vectors.validate.context import MAX_FINDINGS_PER_CHECK, Context
from zarr_vectors.validate.names import ATTRIBUTES, OBJECT_INDEX, OBJECT_KINDS

__all__ = ["BATCH_OBJECTS", "BATCH_VERTICES", "component_labels", "follow_parents", "run"]

BATCH_OBJECTS = 10_000
"""Most objects read at once."""
BATCH_VERTICES = 4_000_000
"""Vertices aimed at per batch: fewer objects per batch when objects are large on average."""
SWC_TYPES = (0, 7)
"""Inclusive range of ``swc_type`` values when ``swc_compatible`` is true."""

POLYLINE_MIN_VERTICES = "L4.polyline_min_vertices"
STREAMLINE_LENGTH = "L4.streamline_length_bounds"
GRAPH_TREE = "L4.graph_tree"
SKELETON_TREE = "L4.skeleton_tree"
SKELETON_SWC = "L4.skeleton_swc"
MESH_CLOSED = "L4.mesh_closed"
MESH_ORIENTATION = "L4.mesh_orientation"
MESH_UNREFERENCED = "L4.mesh_unreferenced_vertices"

_READ_ERRORS = (ZarrVectorsError, OSError)
"""What reading the objects may raise on a store L3 could not fully vet."""
_ROOM = MAX_FINDINGS_PER_CHECK + 1
"""Findings sent per check: one more than the Context keeps, so it notes the overflow."""
_LISTED = 5
"""Vertices listed at most in one message."""


# -- batches and findings --------------------------------------------------------------------


class Batch:
    """Consecutive objects of level 0, as read, with per-vertex bookkeeping.

    Parameters
    ----------
    first
        Dense number of the first object of the batch.
    result
        The objects as :meth:`ObjectReader.read` returns them.
    width
        Vertices per link: 3 (mesh faces) or 2 (edges).
    """

    def __init__(self, first: int, result: QueryResult, width: int = 2) -> None:
        assert result.offsets is not None
        self.first = first
        self.offsets = np.asarray(result.offsets, dtype=np.int64)
        self.positions = result.positions
        self.attributes = result.attributes
        self.m = int(self.offsets.shape[0] - 1)
        self.sizes = np.diff(self.offsets)
        self.owner = np.repeat(np.arange(self.m, dtype=np.int64), self.sizes)
        links = result.edges if result.edges is not None else result.faces
        self.links = np.empty((0, width), np.int64) if links is None else links.astype(np.int64)
        self.ids = result.object_ids
        self._edges: MeshEdges | None = None

    @property
    def n(self) -> int:
        """Number of vertices of the batch."""
        return int(self.positions.shape[0])

    def local(self, row: int) -> int:
        """Position of vertex ``row`` (a row of the batch) within its object."""
        return int(row - self.offsets[self.owner[row]])

    def path(self, k: int) -> str:
        """Finding path of object ``k`` of the batch."""
        return f"0/{OBJECT_INDEX}/data#object={self.first + k}"

    def name(self, k: int) -> str:
        """``object <dense>``, with the caller's id when it differs."""
        dense = self.first + k
        own = None if self.ids is None else int(self.ids[k])
        return f"object {dense}" if own in (None, dense) else f"object {dense} (id {own})"

    def mesh_edges(self) -> MeshEdges:
        """The undirected edges of the faces of the batch (computed once)."""
        if self._edges is None:
            self._edges = MeshEdges(self.links, self.n)
        return self._edges


class MeshEdges:
    """Every distinct undirected edge of a set of faces, with how the faces use it.

    Parameters
    ----------
    faces
        ``(F, 3)`` vertex rows.
    n
        Number of vertex rows (every entry of ``faces`` is below it).

    Attributes
    ----------
    lo, hi
        ``(U,)`` the smaller and the larger vertex row of each edge, ascending by
        ``(lo, hi)``.
    uses
        ``(U,)`` number of faces having the edge as a side.
    forward
        ``(U,)`` how many of those traverse it from ``lo`` to ``hi``.
    """

    def __init__(self, faces: np.ndarray, n: int) -> None:
        start = faces.reshape(-1)
        stop = faces[:, [1, 2, 0]].reshape(-1)
        lo, hi = np.minimum(start, stop), np.maximum(start, stop)
        width = max(n, 1)
        keys, inverse, uses = np.unique(lo * width + hi, return_inverse=True, return_counts=True)
        self.lo, self.hi = keys // width, keys % width
        self.uses = uses.astype(np.int64)
        forward = np.bincount(inverse.reshape(-1), weights=start < stop, minlength=keys.shape[0])
        self.forward = forward.astype(np.int64)


class Findings:
    """Sends findings to the Context, no more per check than it keeps plus one.

    Parameters
    ----------
    ctx
        The validation run.
    """

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._sent: dict[str, int] = {}

    def objects(
        self, check_id: str, batch: Batch, bad: np.ndarray, describe: Callable[[int], str]
    ) -> None:
        """Report each object ``k`` of ``batch`` with ``bad[k]``: ``<object> <describe(k)>``."""
        sent = self._sent.get(check_id, 0)
        for k in np.flatnonzero(bad)[: max(_ROOM - sent, 0)].tolist():
            self.node(check_id, batch.path(k), f"{batch.name(k)} {describe(k)}")

    def node(self, check_id: str, path: str, message: str) -> None:
        """Report one finding at ``path``."""
        self._sent[check_id] = self._sent.get(check_id, 0) + 1
        self.ctx.fail(check_id, path, message)


def _first_per_object(owner: np.ndarray, mask: np.ndarray, m: int) -> np.ndarray:
    """``(m,)``: the first index i with ``mask[i]`` and ``owner[i] == k``, else -1."""
    hits = np.flatnonzero(mask)
    first = np.full(m, -1, dtype=np.int64)
    objects, where = np.unique(owner[hits], return_index=True)
    first[objects] = hits[where]
    return first


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _listing(values: list[int]) -> str:
    """``0``, ``0 and 17``, ``0, 3 and 17``."""
    text = [str(v) for v in values]
    return text[0] if len(text) == 1 else f"{', '.join(text[:-1])} and {text[-1]}"


# -- polylines and streamlines ----------------------------------------------------------------


def check_min_vertices(out: Findings, batch: Batch) -> None:
    """``L4.polyline_min_vertices``: every object has at least 2 vertices."""
    sizes = batch.sizes
    out.objects(
        POLYLINE_MIN_VERTICES,
        batch,
        sizes < 2,
        lambda k: (
            f"has {_plural(int(sizes[k]), 'vertex', 'vertices')}; "
            "a polyline or streamline is expected to have at least 2"
        ),
    )


def object_lengths(batch: Batch) -> np.ndarray:
    """``(m,)`` float64 length of every object: the sum of its segment lengths."""
    if batch.n < 2:
        return np.zeros(batch.m)
    steps = np.diff(batch.positions.astype(np.float64), axis=0)
    lengths = np.sqrt(np.sum(steps * steps, axis=1))
    inside = batch.owner[1:] == batch.owner[:-1]
    return np.bincount(batch.owner[1:][inside], weights=lengths[inside], minlength=batch.m)


def length_check(low: float | None, high: float | None) -> Callable[[Findings, Batch], None]:
    """``L4.streamline_length_bounds`` for the bounds ``min_length`` and ``max_length``."""
    lowest = -np.inf if low is None else float(low)
    highest = np.inf if high is None else float(high)

    def check(out: Findings, batch: Batch) -> None:
        length = object_lengths(batch)

        def describe(k: int) -> str:
            where = (
                f"below min_length {lowest:g}"
                if length[k] < lowest
                else f"above max_length {highest:g}"
            )
            return (
                f"has length {length[k]:.9g} (sum of its segment lengths), {where}; "
                f"the length filter claims every length lies in [{lowest:g}, {highest:g}]"
            )

        bad = (length < lowest) | (length > highest)
        out.objects(STREAMLINE_LENGTH, batch, bad, describe)

    return check


# -- graphs -------------------------------------------------------------------------------------


def component_labels(n: int, edges: np.ndarray) -> np.ndarray:
    """``(n,)`` the smallest vertex of each vertex's connected component (edges undirected).

    Vectorised union-find: every round hooks each root onto the smallest root it shares an
    edge with, then compresses every path by pointer jumping; the number of roots of a
    component at least halves per round.
    """
    label = np.arange(n, dtype=np.int64)
    u, v = edges[:, 0], edges[:, 1]
    while True:
        a, b = label[u], label[v]
        cross = a != b
        if not cross.any():
            return label
        np.minimum.at(label, np.maximum(a, b)[cross], np.minimum(a, b)[cross])
        while True:
            jumped = label[label]
            if np.array_equal(jumped, label):
                break
            label = jumped


def check_graph_tree(out: Findings, batch: Batch) -> None:
    """``L4.graph_tree``: each object is connected and has vertices - 1 edges.

    Edges count as undirected, also in a directed graph (which is then a tree when its
    underlying undirected graph is one).
    """
    sizes, edges = batch.sizes, batch.links
    n_edges = np.bincount(batch.owner[edges[:, 0]], minlength=batch.m)
    roots = component_labels(batch.n, edges) == np.arange(batch.n)
    parts = np.bincount(batch.owner[roots], minlength=batch.m)

    def describe(k: int) -> str:
        found = [
            f"has {_plural(int(n_edges[k]), 'edge', 'edges')} for "
            f"{_plural(int(sizes[k]), 'vertex', 'vertices')} (a tree has {int(sizes[k]) - 1})"
        ]
        if parts[k] != 1:
            found.append(f"{_plural(int(parts[k]), 'connected component', 'connected components')}")
        return (
            " and ".join(found)
            + "; is_tree claims every object is a tree (connected, with vertices - 1 edges)"
        )

    out.objects(GRAPH_TREE, batch, (n_edges != sizes - 1) | (parts != 1), describe)


# -- skeletons ----------------------------------------------------------------------------------


def follow_parents(parent: np.ndarray, longest: int) -> np.ndarray:
    """Where each vertex gets after at least ``longest`` parent steps (roots are fixed points).

    Pointer doubling: after ``2**s >= longest`` jumps a vertex of an object of at most
    ``longest`` vertices stands on its root, or on the parent cycle it runs into.
    """
    jump = parent.copy()
    steps = 1
    while steps < longest:
        jump = jump[jump]
        steps *= 2
    return jump


class SkeletonTrees:
    """Roots and parent cycles of the skeletons of a batch.

    Parameters
    ----------
    batch
        The objects; ``batch.links`` are ``(child, parent)`` rows without the roots' records.
    """

    def __init__(self, batch: Batch) -> None:
        self.batch = batch
        child, parent = batch.links[:, 0], batch.links[:, 1]
        self.parent = np.arange(batch.n, dtype=np.int64)
        self.parent[child] = parent
        self.root = np.ones(batch.n, dtype=bool)
        self.root[child] = False
        self.root_rows = np.flatnonzero(self.root)
        self.roots = np.bincount(batch.owner[self.root], minlength=batch.m)
        longest = int(batch.sizes.max()) if batch.m else 0
        self.jump = follow_parents(self.parent, longest)
        stray = ~self.root[self.jump]
        self.stray = np.bincount(batch.owner[stray], minlength=batch.m)
        self.first_stray = _first_per_object(batch.owner, stray, batch.m)

    def bad(self) -> np.ndarray:
        """``(m,)`` whether each object is not a tree with exactly one root."""
        return np.asarray((self.roots != 1) | (self.stray > 0))

    def describe(self, k: int) -> str:
        """What is wrong with object ``k``."""
        found = []
        if self.roots[k] == 0:
            found.append("no root (every vertex has a parent)")
        elif self.roots[k] > 1:
            found.append(f"{self.roots[k]} roots (vertices {self._root_list(k)})")
        if self.stray[k]:
            on_cycle = int(self.jump[self.first_stray[k]])
            found.append(
                f"a parent cycle through vertex {self.batch.local(on_cycle)} (whose parent is "
                f"vertex {self.batch.local(int(self.parent[on_cycle]))}), so {self.stray[k]} "
                f"of its {self.batch.sizes[k]} vertices never reach a root"
            )
        return f"has {' and '.join(found)}; a skeleton is a tree with exactly one root"

    def _root_list(self, k: int) -> str:
        owners = self.batch.owner[self.root_rows]
        start, stop = np.searchsorted(owners, [k, k + 1])
        rows = self.root_rows[start : min(stop, start + _LISTED)]
        listed = _listing([self.batch.local(int(r)) for r in rows])
        return listed if stop - start <= _LISTED else f"{listed}, ..."


def check_skeleton_tree(out: Findings, batch: Batch) -> None:
    """``L4.skeleton_tree``: one root per object, no parent cycle, connected."""
    trees = SkeletonTrees(batch)
    out.objects(SKELETON_TREE, batch, trees.bad(), trees.describe)


def _bad_swc_type(values: np.ndarray) -> np.ndarray:
    return np.asarray((values < SWC_TYPES[0]) | (values > SWC_TYPES[1]))


def _bad_radius(values: np.ndarray) -> np.ndarray:
    return np.asarray(~(np.isfinite(values) & (values >= 0)))


_SWC_RULES: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "swc_type": (_bad_swc_type, f"lie outside [{SWC_TYPES[0]}, {SWC_TYPES[1]}]"),
    "radius": (_bad_radius, "are negative or not finite (radius must be finite and >= 0)"),
}


class SwcTally:
    """``L4.skeleton_swc``: the SWC attributes exist and hold valid values.

    :meth:`start` reports the missing attributes; the values of the others are counted
    over every batch, and :meth:`report` gives one finding per offending attribute, with
    its first offending value.
    """

    def __init__(self) -> None:
        self.bad: dict[str, int] = {}
        self.total: dict[str, int] = {}
        self.example: dict[str, str] = {}

    def start(self, out: Findings, names: list[str]) -> None:
        """Report the SWC attributes missing from ``names`` (the per-vertex attributes)."""
        for name in _SWC_RULES:
            if name in names:
                self.bad[name], self.total[name] = 0, 0
                continue
            out.node(
                SKELETON_SWC,
                f"0/{ATTRIBUTES}/{name}",
                f"swc_compatible is true but the per-vertex attribute {name} does not exist; "
                "an SWC-compatible skeleton has both swc_type and radius",
            )

    def __call__(self, out: Findings, batch: Batch) -> None:
        """Count the invalid values of a batch."""
        for name in self.bad:
            column = np.asarray(batch.attributes[name])
            values = column.reshape(batch.n, int(np.prod(column.shape[1:])))
            wrong = _SWC_RULES[name][0](values)
            rows = np.flatnonzero(wrong.any(axis=1))
            self.bad[name] += int(wrong.sum())
            self.total[name] += int(values.size)
            if rows.shape[0] and name not in self.example:
                row = int(rows[0])
                value = values[row][wrong[row]][0].item()
                k = int(batch.owner[row])
                self.example[name] = f"{value!r} at vertex {batch.local(row)} of {batch.name(k)}"

    def report(self, out: Findings) -> None:
        """Report each attribute holding invalid values."""
        for name, count in self.bad.items():
            if count:
                out.node(
                    SKELETON_SWC,
                    f"0/{ATTRIBUTES}/{name}",
                    f"swc_compatible is true but {count} of {self.total[name]} {name} values "
                    f"{_SWC_RULES[name][1]} (first: {self.example[name]})",
                )


# -- meshes ---------------------------------------------------------------------------------


def _edge_text(batch: Batch, start: int, stop: int) -> str:
    return f"{batch.local(start)} -> {batch.local(stop)}"


def check_mesh_closed(out: Findings, batch: Batch) -> None:
    """``L4.mesh_closed``: every edge of an object's faces is a side of exactly two faces."""
    edges = batch.mesh_edges()
    owner = batch.owner[edges.lo]
    wrong = edges.uses != 2
    count = np.bincount(owner[wrong], minlength=batch.m)
    first = _first_per_object(owner, wrong, batch.m)

    def describe(k: int) -> str:
        e = int(first[k])
        a, b = batch.local(int(edges.lo[e])), batch.local(int(edges.hi[e]))
        return (
            f"is not closed: {_plural(int(count[k]), 'edge is', 'edges are')} not shared by "
            f"exactly two faces (e.g. the edge between vertices {a} and {b} is used by "
            f"{_plural(int(edges.uses[e]), 'face', 'faces')}); closed_surface claims every "
            "edge is shared by exactly two faces"
        )

    out.objects(MESH_CLOSED, batch, count > 0, describe)


def check_mesh_orientation(out: Findings, batch: Batch) -> None:
    """``L4.mesh_orientation``: two faces sharing an edge traverse it in opposite directions."""
    edges = batch.mesh_edges()
    owner = batch.owner[edges.lo]
    wrong = (edges.uses == 2) & (edges.forward != 1)
    count = np.bincount(owner[wrong], minlength=batch.m)
    first = _first_per_object(owner, wrong, batch.m)

    def describe(k: int) -> str:
        e = int(first[k])
        lo, hi = int(edges.lo[e]), int(edges.hi[e])
        shown = _edge_text(batch, lo, hi) if edges.forward[e] else _edge_text(batch, hi, lo)
        return (
            f"has {_plural(int(count[k]), 'shared edge', 'shared edges')} traversed in the "
            f"same direction by both of their faces (e.g. the edge {shown}); two faces sharing "
            "an edge are expected to traverse it in opposite directions (consistent winding)"
        )

    out.objects(MESH_ORIENTATION, batch, count > 0, describe)


def check_mesh_unreferenced(out: Findings, batch: Batch) -> None:
    """``L4.mesh_unreferenced_vertices``: every vertex is a corner of at least one face."""
    used = np.zeros(batch.n, dtype=bool)
    used[batch.links.reshape(-1)] = True
    count = np.bincount(batch.owner[~used], minlength=batch.m)
    first = _first_per_object(batch.owner, ~used, batch.m)
    out.objects(
        MESH_UNREFERENCED,
        batch,
        count > 0,
        lambda k: (
            f"has {_plural(int(count[k]), 'vertex', 'vertices')} used by no face "
            f"(e.g. vertex {batch.local(int(first[k]))}); every mesh vertex is expected to belong "
            "to a face"
        ),
    )


# -- the plan and the run -------------------------------------------------------------------

Check = Callable[[Findings, Batch], None]


def plan(kind: str, attrs: dict[str, Any]) -> tuple[dict[str, Check], SwcTally | None]:
    """The L4 checks that apply to a store of ``kind`` with root metadata ``attrs``.

    Parameters
    ----------
    kind
        The geometry type (an object kind).
    attrs
        The root metadata, for the claims ``min_length``, ``max_length``, ``is_tree``,
        ``swc_compatible`` and ``closed_surface``.

    Returns
    -------
    dict, SwcTally or None
        Check id → per-batch check, and the SWC tally when ``L4.skeleton_swc`` applies.
    """
    checks: dict[str, Check] = {}
    row = geometry_kind(kind)
    if row.ordered:
        checks[POLYLINE_MIN_VERTICES] = check_min_vertices
    low, high = attrs.get("min_length"), attrs.get("max_length")
    if "min_length" in row.root_keys and (is_number(low) or is_number(high)):
        checks[STREAMLINE_LENGTH] = length_check(
            low if is_number(low) else None, high if is_number(high) else None
        )
    if "is_tree" in row.root_keys and not row.tree and attrs.get("is_tree") is True:
        checks[GRAPH_TREE] = check_graph_tree
    tally = None
    if row.tree:
        checks[SKELETON_TREE] = check_skeleton_tree
        if attrs.get("swc_compatible") is True:
            tally = SwcTally()
            checks[SKELETON_SWC] = tally
    if row.faces:
        if attrs.get("closed_surface") is True:
            checks[MESH_CLOSED] = check_mesh_closed
        checks[MESH_ORIENTATION] = check_mesh_orientation
        checks[MESH_UNREFERENCED] = check_mesh_unreferenced
    return checks, tally


def open_objects(ctx: Context) -> ObjectReader:
    """The object reader of level 0."""
    root = RootMetadata.from_json(ctx.root_attrs())
    return ObjectReader(LevelReader(ctx.io, root, 0))


def batches(objects: ObjectReader) -> Iterator[Batch]:
    """Every object of level 0, in batches of consecutive dense numbers."""
    total = objects.n_objects
    width = link_width_of(objects.kind)
    vertices = int(objects.reader.meta.vertex_count)
    per_object = max(1, vertices // max(total, 1))
    step = min(BATCH_OBJECTS, max(1, BATCH_VERTICES // per_object))
    for first in range(0, total, step):
        dense = np.arange(first, min(total, first + step), dtype=np.int64)
        yield Batch(first, objects.read(dense), width)


def run(ctx: Context) -> None:
    """Run the L4 checks that apply to the store, on level 0 (spec §11.5)."""
    kind = ctx.facts.kind
    if kind not in OBJECT_KINDS:
        return
    checks, tally = plan(kind, ctx.root_attrs())
    if not checks:
        return
    try:
        objects = open_objects(ctx)
    except _READ_ERRORS as exc:
        _stop(ctx, exc)
        return
    ctx.mark(*checks)
    out = Findings(ctx)
    if tally is not None:
        tally.start(out, objects.reader.attribute_names)
    try:
        for batch in batches(objects):
            for check in checks.values():
                check(out, batch)
    except _READ_ERRORS as exc:
        _stop(ctx, exc)
        return
    if tally is not None:
        tally.report(out)


def _stop(ctx: Context, exc: Exception) -> None:
    ctx.report.note(
        f"L4 stopped: the objects of level 0 cannot be read ({type(exc).__name__}: {exc})"
    )
