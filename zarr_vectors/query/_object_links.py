"""Links of an object read as rows of its result (spec §9.6, §9.11, §10.5).

The vertices a read returns are runs of keys (:class:`Runs`): chunk-local rows by chunk
slot, or global ids; link entries and cross-chunk links are turned into result rows by
one kernel call each (:mod:`zarr_vectors.kernels.link_rows`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels.cross_links import CrossLinks
from zarr_vectors.kernels.link_entries import rows_in_runs
from zarr_vectors.kernels.link_rows import EdgeRows, edge_result_rows, link_result_rows
from zarr_vectors.kernels.read_plan import ReadPlan
from zarr_vectors.read import RowRuns

__all__ = [
    "LINK_COLUMN",
    "Runs",
    "check_graph_links",
    "link_column",
    "lookup",
    "returned_runs",
    "translate",
    "translate_edges",
]

LINK_COLUMN = "__links__"
"""The reader's column of ``links/0``."""


def link_column(name: str) -> str:
    """The reader's column of the per-link attribute ``name``."""
    return f"__link__{name}"


class Runs(NamedTuple):
    """The vertices a read returns, as runs of keys (chunk-local rows, or global ids):
    run ``q`` holds keys ``start[q] ... start[q] + length[q] - 1``, returned from result
    row ``result[q]`` on; group ``g`` (a chunk slot) owns runs ``bounds[g]:bounds[g + 1]``,
    ascending and disjoint (the arguments of :func:`rows_in_runs`)."""

    bounds: np.ndarray
    start: np.ndarray
    length: np.ndarray
    result: np.ndarray


def returned_runs(plan: ReadPlan) -> tuple[Runs, Runs]:
    """The returned vertices as runs of local rows by chunk slot, and as runs of global
    ids (spec §9.11) in one group: the non-empty references in their (slot, first row)
    order, whose chunks ascend, so the global ids ascend too (:func:`read_plan`).

    Raises
    ------
    CorruptChunkError
        When two referenced fragments of a chunk share a row, or a fragment passes
        its chunk's row count (fragments tile their chunk at level 0, spec §6.5).
    """
    if plan.overlap:
        raise CorruptChunkError("the fragments of a chunk overlap or pass its rows")
    by_gid = np.array([0, plan.gid.shape[0]], dtype=np.int64)
    local = Runs(plan.bounds, plan.start, plan.length, plan.result)
    return local, Runs(by_gid, plan.gid, plan.length, plan.result)


def check_graph_links(rows: np.ndarray, directed: bool) -> None:
    """Raise CorruptChunkError unless every stored graph edge (chunk-local rows of ``links/0``
    or global ids of ``cross_chunk_links``) joins two distinct vertices, as ``[min, max]``
    when the graph is undirected (spec §10.5; L3.no_self_loops, L3.edge_orientation).

    Streamlines or skeletons relabelled as a graph (the same nodes) were read as edges
    ``[child, -1]`` and ``[larger, smaller]`` before.
    """
    if not rows.size:
        return
    bad = (rows < 0).any(axis=1) | (rows[:, 0] == rows[:, 1])
    if not directed:
        bad |= rows[:, 0] > rows[:, 1]
    if bad.any():
        first = rows[int(np.argmax(bad))].tolist()
        raise CorruptChunkError(
            f"a stored graph edge {first} is not two distinct vertices"
            f"{'' if directed else ' in ascending order'}: the links or the geometry_type "
            "were damaged or edited; run zv.validate(store, level=3) to find the damage, and "
            "restore or rewrite the store"
        )


def lookup(gids: Runs, wanted: np.ndarray) -> np.ndarray:
    """The result rows of the global ids ``wanted`` (``(n,)``, each returned)."""
    rows, bad = rows_in_runs(wanted, np.zeros(wanted.shape[0], np.int64), *gids)
    if bad >= 0:
        raise CorruptChunkError("a link names a vertex outside its object's manifest")
    return rows


def translate(
    rows: np.ndarray, runs: RowRuns, returned: Runs, gids: Runs, sentinels: bool, tree: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Chunk-local link entries to result rows (:func:`link_result_rows`), and which links
    are kept (None: all).

    ``rows`` holds one link per row (its vertex entries), the rows of the link ``runs`` one
    run after another; ``returned`` and ``gids`` the vertices returned
    (:func:`returned_runs`). With ``sentinels`` (meshes) every negative entry is
    ``-(gid + 1)`` (spec §9.6); otherwise -1 (a skeleton root's parent) stays -1, and with
    ``tree`` the root's link is dropped.

    Raises
    ------
    CorruptChunkError
        When an entry names a row that is not a returned vertex of its chunk.
    """
    mapped, kept, bad_row, bad_gid = link_result_rows(
        rows,
        runs.chunk,
        runs.stop - runs.start,
        returned,
        gids,
        sentinels=sentinels,
        drop_rootless=tree,
    )
    if bad_row >= 0:
        raise CorruptChunkError("a link names a row that is not a vertex of its object")
    if bad_gid >= 0:
        raise CorruptChunkError("a link names a vertex outside its object's manifest")
    return mapped, kept


def translate_edges(
    rows: np.ndarray,
    runs: RowRuns,
    returned: tuple[Runs, Runs],
    tree: bool,
    cross: tuple[CrossLinks, np.ndarray, int],
) -> EdgeRows:
    """:func:`translate` of edges, and the cross-chunk links whose first vertex is
    returned, in one kernel call (:func:`edge_result_rows`; ``cross``: what it takes).

    Raises
    ------
    CorruptChunkError
        When an entry names a row that is not a returned vertex of its chunk, or a
        cross-chunk link of a returned vertex names a vertex that is not returned.
    """
    local, gids = returned
    found = edge_result_rows(
        rows, runs.chunk, runs.stop - runs.start, local, gids, cross, drop_rootless=tree
    )
    if found.bad_row >= 0:
        raise CorruptChunkError("a link names a row that is not a vertex of its object")
    if found.bad_cross >= 0:
        raise CorruptChunkError("a link names a vertex outside its object's manifest")
    return found
