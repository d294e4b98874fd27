"""Object sparsity of a coarse level: which objects it keeps (spec §4.3.3).

A level builder of an object kind calls :func:`sparse_level` with level 0's per-object
summary (:class:`~zarr_vectors.write._object_batches.ObjectSummary`) and the level's grid,
then empties the dropped objects of every batch before coarsening it
(:meth:`SparseLevel.batch`): the objects the rule drops lose their vertices (and the links
between them), the others are untouched, so every kept object's coarse vertices are those
it would have without sparsity. The rule is a function of level 0's
stored vertices and the objects' storage order only (``"coverage"``: the id hash of the
object's storage index; ``"length"``: its length, ties to the smaller index).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import object_sparsity_rule
from zarr_vectors.kernels import CoarseGrid, coarse_cells
from zarr_vectors.kernels.object_sparsity import cell_ranks, id_hashes, keep_longest
from zarr_vectors.write._object_batches import ObjectSummary
from zarr_vectors.write._objects import ObjectTable
from zarr_vectors.write.levels import Levels

__all__ = [
    "LENGTH_KINDS",
    "SparseLevel",
    "auto_per_cell",
    "emptied",
    "first_vertex_ranks",
    "needs_lengths",
    "sparse_level",
]

LENGTH_KINDS = ("polyline", "streamline")
"""The kinds whose objects have a length (rule ``"length"``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class SparseLevel:
    """Which objects a coarse level keeps, and what the level records.

    Attributes
    ----------
    kept
        ``(m,)`` bool per object of level 0, or None when every object is kept (no rule).
    objects
        The ``coarsening.objects`` record, or None without a rule.
    strategy
        The level's ``sparsity_strategy``, or None without a rule.
    """

    kept: np.ndarray | None
    objects: dict[str, Any] | None
    strategy: str | None

    def coarsening(self, base: dict[str, Any]) -> dict[str, Any]:
        """``base`` (the method's record) with ``objects`` when a rule applies.

        Examples
        --------
        >>> SparseLevel(None, {"rule": "length", "count": 2}, "length").coarsening(
        ...     {"method": "runs"})
        {'method': 'runs', 'objects': {'rule': 'length', 'count': 2}}
        """
        return base if self.objects is None else {**base, "objects": self.objects}

    def batch(self, table: ObjectTable, first: int) -> ObjectTable:
        """``table`` (the objects from ``first`` on) with the objects the level drops emptied.

        Examples
        --------
        >>> lines = np.array([[0.5], [0.7], [1.0]], np.float32)
        >>> table = ObjectTable("polyline", lines, np.array([0, 2, 3]), None, {}, {}, None,
        ...                     None, {})
        >>> level = SparseLevel(np.array([True, True, False]), None, None)
        >>> level.batch(table, 1).offsets.tolist()  # objects 1 and 2 of the level
        [0, 2, 2]
        """
        if self.kept is None:
            return table
        return emptied(table, self.kept[first : first + table.n_objects])


def needs_lengths(kind: str, settings: Levels) -> bool:
    """Whether the object sparsity of ``settings`` ranks ``kind``'s objects by length.

    Raises
    ------
    InvalidInputError
        For ``objects="length"`` on a kind without lengths.

    Examples
    --------
    >>> needs_lengths("polyline", Levels(objects="length", objects_kept=3))
    True
    """
    if settings.objects != "length":
        return False
    if kind not in LENGTH_KINDS:
        raise InvalidInputError(
            f"objects='length' is for polylines and streamlines, not {kind}; use objects='coverage'"
        )
    return True


def first_vertex_ranks(summary: ObjectSummary, grid: ChunkGrid) -> np.ndarray:
    """Every object's rank in its cell by rule ``"spatial_coverage"`` with priority
    ``"id_hash"`` on the level of ``grid`` (-1 for an object without vertices): the
    objects kept with ``per_cell=k`` are those of rank below k (spec §4.3.3).

    Examples
    --------
    >>> from zarr_vectors.write._object_batches import ObjectBatches
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([8.0]), one, 0 * one, 2 * one)
    >>> lines = np.array([[0.5], [0.7], [1.0], [9.0], [9.5]], np.float32)
    >>> table = ObjectTable("polyline", lines, np.array([0, 2, 3, 5]), None, {}, {}, None,
    ...                     None, {})
    >>> first_vertex_ranks(ObjectSummary.of(ObjectBatches.of_table(table), None), grid).tolist()
    [1, 0, 0]
    """
    cells = CoarseGrid(grid.chunk_shape, grid.bin_shape, grid.origin)
    _, cell = coarse_cells(summary.first[summary.filled], cells)  # first vertices only
    first = np.full(summary.filled.shape[0], -1, np.int64)
    first[summary.filled] = cell
    return cell_ranks(first, id_hashes(np.arange(first.shape[0], dtype=np.int64)))


def auto_per_cell(ranks: np.ndarray, counts: np.ndarray, target: int) -> int:
    """The ``per_cell`` of the level ``levels="auto"`` bounds by object sparsity (spec
    §4.3.3): the largest k whose kept objects (rank below k) hold at most ``target``
    vertices by ``counts`` (each object's vertex count at that level without sparsity), or
    1 when even one object per cell holds more.

    Examples
    --------
    >>> auto_per_cell(np.array([0, 1, 2, 0, -1]), np.array([5, 5, 5, 5, 0]), 15)
    2
    >>> auto_per_cell(np.array([0, 0]), np.array([9, 9]), 10)
    1
    """
    valid = ranks >= 0
    per_rank = np.zeros(int(ranks.max(initial=-1)) + 1, np.int64)
    np.add.at(per_rank, ranks[valid], counts[valid].astype(np.int64))
    return max(1, int(np.searchsorted(np.cumsum(per_rank), target, side="right")))


def _links_kept(table: ObjectTable, vertex_kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The links between kept vertices, renumbered, and which links they are."""
    links = table.links
    if links.shape[0] == 0:
        return links, np.zeros(0, np.bool_)
    new_index = np.cumsum(vertex_kept) - 1
    valid = links >= 0
    entries = np.where(valid, links, 0)
    keep = np.all(vertex_kept[entries] | ~valid, axis=1)
    return np.where(valid, new_index[entries], links)[keep], keep


def emptied(table: ObjectTable, kept: np.ndarray) -> ObjectTable:
    """``table`` with the objects not ``kept`` emptied: they lose their vertices and the
    links between them; the others are untouched.

    Examples
    --------
    >>> lines = np.array([[0.5], [0.7], [1.0]], np.float32)
    >>> table = ObjectTable("polyline", lines, np.array([0, 2, 3]), None, {}, {}, None,
    ...                     None, {})
    >>> emptied(table, np.array([False, True])).positions.tolist()
    [[1.0]]
    """
    sizes = np.diff(table.offsets)
    vertex_kept = np.repeat(kept, sizes)
    links, link_kept = _links_kept(table, vertex_kept) if table.links is not None else (None, None)
    return dataclasses.replace(
        table,
        positions=table.positions[vertex_kept],
        offsets=np.concatenate([[0], np.cumsum(np.where(kept, sizes, 0))]).astype(np.int64),
        vertex_attributes={k: v[vertex_kept] for k, v in table.vertex_attributes.items()},
        links=links,
        link_attributes={
            k: v[link_kept] for k, v in table.link_attributes.items() if link_kept is not None
        },
    )


def sparse_level(summary: ObjectSummary, grid: ChunkGrid, settings: Levels) -> SparseLevel:
    """The objects a coarse level keeps by ``settings.objects`` (spec §4.3.3).

    Parameters
    ----------
    summary
        Level 0's objects, summarised (lengths when ``objects="length"``).
    grid
        The level's grid (the store's chunks, the level's ``bin_shape``).
    settings
        The levels asked for; ``objects=None`` keeps every object.

    Returns
    -------
    SparseLevel
        The objects kept and the level's records.

    Examples
    --------
    >>> from zarr_vectors.write._object_batches import ObjectBatches
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([8.0]), one, 0 * one, 2 * one)
    >>> lines = np.array([[0.5], [0.7], [1.0], [9.0], [9.5]], np.float32)
    >>> table = ObjectTable("polyline", lines, np.array([0, 2, 3, 5]), None, {}, {}, None,
    ...                     None, {})
    >>> summary = ObjectSummary.of(ObjectBatches.of_table(table), None)
    >>> level = sparse_level(summary, grid, Levels(objects="coverage", objects_per_cell=1))
    >>> level.kept.tolist(), level.strategy
    ([False, True, True], 'spatial_coverage')
    """
    if settings.objects is None:
        return SparseLevel(None, None, None)
    if settings.objects == "length":
        assert summary.lengths is not None  # needs_lengths asked the summary for them
        kept = keep_longest(summary.lengths, settings.objects_kept)
    else:
        rank = first_vertex_ranks(summary, grid)
        kept = (rank >= 0) & (rank < settings.objects_per_cell)
    rule = object_sparsity_rule(settings.objects, settings.objects_per_cell, settings.objects_kept)
    return SparseLevel(kept, rule, str(rule["rule"]))
