"""The plan of an annotation source: annotation ids and spatial index levels from chunk counts.

Everything here is computed from the per-chunk vertex counts of the store's levels (their
``vertex_counts``), never from vertex data.

*Sets.* The levels used are listed coarse to fine, ``s_0 > s_1 > … > s_K``. With nested
levels (point ``"sample"``: a vertex of level N is a vertex of level N - 1), the annotations
of spatial level k are ``D_k``, the vertices of store level ``s_k`` that are not in
``s_{k-1}`` (all of ``s_0`` for k = 0): together the spatial levels hold every vertex of
level 0 exactly once, as Neuroglancer's spatial index asks (each level a subset of the
annotations no coarser level emitted). In chunk ``g`` the set ``D_k`` holds
``count_{s_k}(g) - count_{s_{k-1}}(g)`` vertices.

*Ids.* Annotations are numbered spatial level by spatial level (coarse first), chunk by chunk
(C order of the chunk grid), and in each chunk in the order of the level's rows: an id names
its spatial level, chunk and rank without reading anything.

*Grids.* Spatial level k's cells are blocks of ``2^e`` chunks per axis (``e`` per axis,
never growing from one level to the next, so each level's cells divide the coarser level's),
aligned to the grid of ``2^m`` chunks per axis that covers the occupied chunks; ``e`` is the
largest that keeps every cell within ``limit`` annotations, or 0 (one chunk per cell) when
even single chunks hold more, and the level's ``limit`` in the ``info`` is then the most
any of its cells holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["AnnotationPlan", "SpatialLevel", "chunk_of", "plan_annotations"]


def chunk_of(positions: np.ndarray, chunk_shape: np.ndarray) -> np.ndarray:
    """Absolute chunk indices of positions (spec §5.1: ``c·C <= p < (c+1)·C`` in float64).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.annotation_index import chunk_of
    >>> chunk_of(np.array([[0.3, -0.1]]), np.array([0.1, 0.1])).tolist()  # 3 * 0.1 > 0.3
    [[2, -1]]
    """
    p = np.asarray(positions, dtype=np.float64)
    c = np.floor(p / chunk_shape)
    c = np.where(c * chunk_shape > p, c - 1, c)
    c = np.where((c + 1) * chunk_shape <= p, c + 1, c)
    out: np.ndarray = c.astype(np.int64)
    return out


@dataclass(frozen=True, slots=True)
class SpatialLevel:
    """One level of the spatial index.

    Attributes
    ----------
    level
        The store level whose vertices (less those of the coarser spatial levels) it holds.
    shift
        ``e`` per axis: a cell is ``2^e`` chunks.
    grid_shape
        Cells per axis.
    limit
        The most annotations a cell of the level holds.
    cells
        The cells that hold annotations, ``(k, D)``, in C order.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.annotation_index import SpatialLevel
    >>> lv = SpatialLevel(0, np.array([1, 1]), np.array([2, 2]), 5, np.array([[0, 1]]))
    >>> lv.cell_name(lv.cells[0])
    '0_1'
    """

    level: int
    shift: np.ndarray
    grid_shape: np.ndarray
    limit: int
    cells: np.ndarray

    def cell_name(self, cell: np.ndarray) -> str:
        """The cell's file name: its coordinates joined by ``_``."""
        return "_".join(str(int(c)) for c in cell)


@dataclass(frozen=True, slots=True)
class AnnotationPlan:
    """Ids and spatial levels of an annotation source (see the module).

    Attributes
    ----------
    origin
        The first chunk (absolute index) of the grid of the spatial index, per axis.
    span
        Chunks per axis of that grid: ``2^m``.
    extent
        Chunks per axis that the occupied chunks span (the flat chunk numbering's shape).
    levels
        The spatial levels, coarse first.
    keys, starts, counts
        Per spatial level: the flat chunk numbers (C order over ``extent``) holding its
        annotations, the id of each chunk's first annotation, and how many it holds.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.annotation_index import plan_annotations
    >>> chunks = np.array([[0, 0], [1, 0]])
    >>> plan = plan_annotations({0: (chunks, np.array([3, 1]))}, [0], 100)
    >>> plan.total, plan.locate(3)
    (4, (0, 1, 0))
    """

    origin: np.ndarray
    span: np.ndarray
    extent: np.ndarray
    levels: list[SpatialLevel]
    keys: list[np.ndarray]
    starts: list[np.ndarray]
    counts: list[np.ndarray]

    @property
    def total(self) -> int:
        """How many annotations there are (ids ``0 … total - 1``)."""
        return int(sum(int(c.sum()) for c in self.counts))

    def flat(self, chunks: np.ndarray) -> np.ndarray:
        """Flat chunk numbers of absolute chunk indices ``(k, D)``."""
        rel = np.asarray(chunks, dtype=np.int64) - self.origin
        out: np.ndarray = np.ravel_multi_index(tuple(rel.T), tuple(self.extent)).astype(np.int64)
        return out

    def chunk(self, flat: int) -> np.ndarray:
        """The absolute chunk index of a flat chunk number."""
        rel = np.asarray(np.unravel_index(flat, tuple(self.extent)), dtype=np.int64)
        out: np.ndarray = rel + self.origin
        return out

    def locate(self, annotation: int) -> tuple[int, int, int] | None:
        """``(spatial level, flat chunk, rank in the chunk)`` of an id, or None."""
        if annotation < 0:
            return None
        for k, (starts, counts) in enumerate(zip(self.starts, self.counts, strict=True)):
            if starts.size == 0 or annotation >= starts[-1] + counts[-1]:
                continue
            at = int(np.searchsorted(starts, annotation, side="right")) - 1
            if at >= 0 and annotation < starts[at] + counts[at]:
                return k, int(self.keys[k][at]), annotation - int(starts[at])
        return None

    def first_id(self, k: int, flat: np.ndarray) -> np.ndarray:
        """The id of the first annotation of spatial level ``k`` in each flat chunk."""
        at = np.searchsorted(self.keys[k], flat)
        out: np.ndarray = self.starts[k][np.minimum(at, self.keys[k].size - 1)]
        return out

    def cell_chunks(self, k: int, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The absolute chunk range ``[first, stop)`` a cell of spatial level ``k`` covers."""
        shift = self.levels[k].shift
        first = self.origin + (np.asarray(cell, dtype=np.int64) << shift)
        return first, np.minimum(first + (1 << shift), self.origin + self.extent)


def _differences(
    counts: dict[int, tuple[np.ndarray, np.ndarray]],
    used: list[int],
    flat_of: Callable[[np.ndarray], np.ndarray],
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per spatial level (coarse first): flat chunks and the annotations each holds."""
    out = []
    previous: dict[int, int] = {}
    for s in used:  # coarse first
        chunks, per = counts[s]
        keys = flat_of(chunks)
        held = per - np.array([previous.get(int(f), 0) for f in keys], dtype=np.int64)
        keep = held > 0
        order = np.argsort(keys[keep], kind="stable")
        out.append((keys[keep][order], held[keep][order]))
        previous = {int(f): int(c) for f, c in zip(keys, per, strict=True)}
    return out


def _cells(
    rel: np.ndarray, held: np.ndarray, shift: np.ndarray, grid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Occupied cells (C order) of blocks of ``2^shift`` chunks, and what each holds."""
    if rel.shape[0] == 0:
        return np.zeros((0, grid.size), dtype=np.int64), np.zeros(0, dtype=np.int64)
    cells = rel >> shift
    flat = np.ravel_multi_index(tuple(cells.T), tuple(grid))
    unique, inverse = np.unique(flat, return_inverse=True)
    sums = np.bincount(inverse.ravel(), weights=held, minlength=unique.size).astype(np.int64)
    found = np.stack(np.unravel_index(unique, tuple(grid)), axis=1).astype(np.int64)
    return found, sums


def plan_annotations(
    counts: dict[int, tuple[np.ndarray, np.ndarray]], used: list[int], limit: int
) -> AnnotationPlan:
    """The plan of a source from each used store level's ``(chunks, counts)``.

    Parameters
    ----------
    counts
        Store level → absolute occupied chunks ``(k, D)`` and their vertex counts.
    used
        The store levels to use, coarse first (nested: each a subset of the next).
    limit
        The most annotations a cell should hold (kept unless single chunks hold more).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.annotation_index import plan_annotations
    >>> chunks = np.array([[0, 0], [0, 1], [3, 3]])
    >>> plan = plan_annotations({0: (chunks, np.array([4, 4, 4])),
    ...                          1: (chunks, np.array([1, 1, 1]))}, [1, 0], 6)
    >>> [(lv.level, lv.grid_shape.tolist(), lv.limit) for lv in plan.levels]
    [(1, [1, 1], 3), (0, [2, 2], 6)]
    """
    base = counts[used[-1]][0]
    origin = base.min(axis=0)
    extent = base.max(axis=0) - origin + 1
    top = np.ceil(np.log2(extent)).astype(np.int64)
    span = np.int64(1) << top

    def flat_of(chunks: np.ndarray) -> np.ndarray:
        rel = np.asarray(chunks, dtype=np.int64) - origin
        out: np.ndarray = np.ravel_multi_index(tuple(rel.T), tuple(extent)).astype(np.int64)
        return out

    sets = _differences(counts, used, flat_of)
    levels, starts = [], []
    e = int(top.max())
    next_id = 0
    for s, (keys, held) in zip(used, sets, strict=True):
        rel = np.stack(np.unravel_index(keys, tuple(extent)), axis=1).astype(np.int64)
        while True:
            shift = np.minimum(top, e)
            grid = span >> shift
            cells, sums = _cells(rel.reshape(-1, top.size), held, shift, grid)
            if e == 0 or sums.size == 0 or int(sums.max()) <= limit:
                break
            e -= 1
        most = int(sums.max()) if sums.size else 1
        levels.append(SpatialLevel(s, shift, grid, max(most, 1), cells))
        starts.append(next_id + np.cumsum(held) - held)
        next_id += int(held.sum())
    return AnnotationPlan(
        origin, span, extent, levels, [k for k, _ in sets], starts, [h for _, h in sets]
    )
