"""Level 0 of an object store given batch by batch, for building its levels (spec §4.3.3).

A coarse level of an object kind is computed object by object: the coarsening of an object
depends on that object alone, and what is global — which objects the level keeps (object
sparsity), the ``per_cell`` of the bounding level of ``levels="auto"`` — depends only on a
small summary per object (its first vertex, its length, its vertex count at a level).
So a level builder needs level 0 only as a sequence of batches of whole objects, in storage
order: :class:`ObjectBatches`. The one-shot writer gives its whole table as one batch; a
stored store gives batches read back within a memory budget
(:func:`zarr_vectors.update.object_levels.stored_batches`), so the levels are the same bytes
whatever the batches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.kernels import bounds_and_nonfinite
from zarr_vectors.write._objects import ObjectTable

__all__ = ["ObjectBatches", "ObjectSummary", "joined_tables"]


@dataclass(frozen=True, slots=True)
class ObjectBatches:
    """Level 0 of an object table as batches of whole objects, in storage order.

    Attributes
    ----------
    kind
        The geometry kind.
    n_objects
        Objects of level 0.
    objects
        Level 0's per-object fields: ``object_attributes``, ``object_ids``, ``groups`` and
        ``root_extra`` of its :class:`ObjectTable` (vertex data unused).
    read
        ``read()`` iterates over the batches: tables of consecutive objects (vertex
        data, links and link attributes in batch-local vertex indices), together all
        the objects in order. It may be called several times (once per pass).
    held
        Whether level 0 is one table held in memory (:meth:`of_table`): its coarse levels
        are then held whole too; else each is gathered on disk batch by batch
        (:class:`~zarr_vectors.write._level_spill.LevelSpill`).

    Examples
    --------
    >>> lines = np.array([[0.0], [1.0], [5.0]])
    >>> table = ObjectTable("polyline", lines, np.array([0, 2, 3]), None, {}, {}, None,
    ...                     None, {})
    >>> batches = ObjectBatches.of_table(table)
    >>> batches.n_objects, [b.n_objects for b in batches.read()]
    (2, [2])
    """

    kind: str
    n_objects: int
    objects: ObjectTable
    read: Callable[[], Iterable[ObjectTable]]
    held: bool = False

    @classmethod
    def of_table(cls, table: ObjectTable) -> ObjectBatches:
        """A table in memory as one batch.

        Examples
        --------
        >>> table = ObjectTable("polyline", np.zeros((2, 1)), np.array([0, 2]), None, {},
        ...                     {}, None, None, {})
        >>> ObjectBatches.of_table(table).n_objects
        1
        """
        return cls(table.kind, table.n_objects, table, lambda: (table,), held=True)


@dataclass(frozen=True, slots=True)
class ObjectSummary:
    """What the object sparsity of any level needs of every object (spec §4.3.3).

    Attributes
    ----------
    first
        ``(m, D)`` every object's first vertex (zeros for an object without vertices).
    filled
        ``(m,)`` whether the object has a vertex.
    lengths
        ``(m,)`` float64 polyline lengths, or None when not asked for.
    n_vertices
        Vertices of level 0.
    bounds
        Per-axis minimum and maximum of level 0's positions (every coarse vertex is a
        level-0 vertex, so they hold every level).

    Examples
    --------
    >>> table = ObjectTable("polyline", np.array([[0.0], [3.0]]), np.array([0, 0, 2]),
    ...                     None, {}, {}, None, None, {})
    >>> summary = ObjectSummary.of(ObjectBatches.of_table(table), None)
    >>> summary.first.tolist(), summary.filled.tolist()
    ([[0.0], [0.0]], [False, True])
    """

    first: np.ndarray
    filled: np.ndarray
    lengths: np.ndarray | None
    n_vertices: int
    bounds: tuple[np.ndarray, np.ndarray]

    @classmethod
    def of(
        cls,
        batches: ObjectBatches,
        length: Callable[[np.ndarray, np.ndarray], np.ndarray] | None,
    ) -> ObjectSummary:
        """One pass over ``batches``; ``length(positions, offsets)`` gives the lengths.

        Examples
        --------
        >>> table = ObjectTable("polyline", np.array([[0.0], [3.0]]), np.array([0, 2]),
        ...                     None, {}, {}, None, None, {})
        >>> ObjectSummary.of(ObjectBatches.of_table(table), lambda p, o: np.diff(o)).lengths
        array([2.])
        """
        firsts, filled, lengths, low, high, n = [], [], [], [], [], 0
        for batch in batches.read():
            n += int(batch.positions.shape[0])
            if batch.positions.shape[0]:
                lo, hi = _bounds(batch.positions)
                low.append(lo)
                high.append(hi)
            starts = np.asarray(batch.offsets[:-1], np.int64)
            has = np.asarray(batch.offsets[1:], np.int64) > starts
            first = np.zeros((starts.shape[0], batch.positions.shape[1]), batch.positions.dtype)
            first[has] = batch.positions[starts[has]]
            firsts.append(first)
            filled.append(has)
            if length is not None:
                lengths.append(np.asarray(length(batch.positions, batch.offsets), np.float64))
        first = np.concatenate(firsts)
        if not low:  # no vertex: no bounds (a part of level 0, see joined)
            low = high = [np.zeros(first.shape[1], first.dtype)]
        return cls(
            first,
            np.concatenate(filled),
            np.concatenate(lengths) if length is not None else None,
            n,
            (np.min(low, axis=0), np.max(high, axis=0)),
        )

    @classmethod
    def joined(cls, parts: list[ObjectSummary]) -> ObjectSummary:
        """The summary of consecutive runs of objects, each summarised alone, in order
        (at least one with a vertex).

        Examples
        --------
        >>> table = ObjectTable("polyline", np.array([[0.0], [3.0]]), np.array([0, 2]),
        ...                     None, {}, {}, None, None, {})
        >>> part = ObjectSummary.of(ObjectBatches.of_table(table), None)
        >>> both = ObjectSummary.joined([part, part])
        >>> both.n_vertices, both.filled.tolist(), both.bounds
        (4, [True, True], (array([0.]), array([3.])))
        """
        lengths = [p.lengths for p in parts]
        held = [p for p in parts if p.n_vertices]
        return cls(
            np.concatenate([p.first for p in parts]),
            np.concatenate([p.filled for p in parts]),
            None if any(x is None for x in lengths) else np.concatenate(lengths),  # type: ignore[arg-type]
            sum(p.n_vertices for p in parts),
            (
                np.min([p.bounds[0] for p in held], axis=0),
                np.max([p.bounds[1] for p in held], axis=0),
            ),
        )


def _bounds(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``positions.min(axis=0)`` and ``.max(axis=0)`` by one pass of the bounds kernel
    (a strided numpy reduction of 10^7 rows costs ~0.2 s each); the plain reductions when
    a value is not finite (they give what they always gave)."""
    lo, hi, nonfinite = bounds_and_nonfinite(positions)
    if nonfinite:
        return positions.min(axis=0), positions.max(axis=0)
    return lo.astype(positions.dtype), hi.astype(positions.dtype)


def _shifted(links: np.ndarray, by: int) -> np.ndarray:
    """Links moved by ``by`` vertices; negative entries (no vertex) stay."""
    return np.where(links >= 0, links + by, links)


def _columns(parts: list[ObjectTable], field: str) -> dict[str, np.ndarray]:
    names = list(getattr(parts[0], field))
    return {name: np.concatenate([getattr(p, field)[name] for p in parts]) for name in names}


def joined_tables(parts: list[ObjectTable], objects: ObjectTable) -> ObjectTable:
    """The table of ``parts`` (consecutive batches, local vertex indices) back to back, with
    the per-object fields of ``objects``.

    Examples
    --------
    >>> links = np.array([[0, -1], [1, 0]])
    >>> part = ObjectTable("skeleton", np.zeros((2, 1)), np.array([0, 2]), links, {}, {},
    ...                    None, None, {})
    >>> joined_tables([part, part], part).links.tolist()
    [[0, -1], [1, 0], [2, -1], [3, 2]]
    """
    starts = np.cumsum([0] + [int(p.positions.shape[0]) for p in parts])
    offsets = [parts[0].offsets[:1]] + [
        np.asarray(p.offsets[1:], np.int64) + int(s)
        for p, s in zip(parts, starts[:-1].tolist(), strict=True)
    ]
    links: Any = None
    if parts[0].links is not None:
        links = np.concatenate(
            [_shifted(p.links, int(s)) for p, s in zip(parts, starts[:-1].tolist(), strict=True)]
        )
    return dataclasses.replace(
        objects,
        positions=np.concatenate([p.positions for p in parts]),
        offsets=np.concatenate(offsets).astype(np.int64),
        links=links,
        vertex_attributes=_columns(parts, "vertex_attributes"),
        link_attributes=_columns(parts, "link_attributes"),
    )
