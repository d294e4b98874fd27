"""What a writer's ``levels=`` asks for: :class:`Levels` (spec §4.3.2).

The computation is in :mod:`zarr_vectors.write._point_levels`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.levels import (
    COUNT_ATTRIBUTE,
    DEFAULT_OBJECTS_KEPT,
    DEFAULT_OBJECTS_PER_CELL,
    DEFAULT_PER_BIN,
    DEFAULT_TARGET,
    OBJECT_METHODS,
    OBJECT_SPARSITY,
    POINT_METHODS,
    SAMPLE,
    check_schedule,
)

__all__ = ["Levels", "level_settings", "levels_done", "warn_short"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Levels:
    """Levels of detail to build with a point cloud or objects of any kind (spec §4.3).

    Attributes
    ----------
    count
        ``"auto"`` (default): add levels until one holds at most ``target`` vertices; an
        int: that many levels above 0 (fewer, with a warning, when no level can reduce
        further).
    method
        ``"sample"`` (default): each level a nested subset of the level below, at most
        ``per_bin`` vertices per coarse bin, attributes carried exactly; ``"aggregate"``:
        one vertex per occupied coarse bin at the centroid of its level-0 vertices, each
        attribute reduced, plus a ``count`` attribute. Object kinds each have one
        method (spec §4.3.3): polylines and streamlines ``"runs"`` (each run of vertices
        in one coarse bin becomes one vertex, end points kept), skeletons ``"thin"``
        (still trees), graphs and meshes ``"cluster"`` (vertices merged per coarse bin,
        links remapped); for them leave ``method`` at its default or pass their method.
    target
        Vertex count at which ``count="auto"`` stops (default 100,000).
    per_bin
        ``sample``: vertices per coarse bin while coarse bins grow (default 256); then the
        cap halves per level, down to 1.
    reductions
        ``aggregate``: attribute name → ``"mean"``, ``"sum"`` (floating attributes),
        ``"min"``, ``"max"`` or ``"mode"`` (integer and bool attributes). Default ``"mean"``
        for floating, ``"mode"`` for integer and bool attributes.
    count_name
        ``aggregate``: name of the count attribute (default ``"count"``).
    objects
        Object sparsity of object kinds (spec §4.3.3): None (default: every object at every
        level, except that ``count="auto"`` adds a *bounding level* when the kind's method
        stalls above ``target``: coarse bin = chunk, rule ``"coverage"`` with the largest
        ``objects_per_cell`` that fits the target, at least 1), ``"coverage"`` (in every
        coarse bin the ``objects_per_cell`` objects whose first vertex lies in it with the
        smallest id hash: the coarsest level then holds at most ``objects_per_cell`` objects
        per occupied coarse bin) or ``"length"`` (the ``objects_kept`` longest objects,
        polylines and streamlines). Recorded in each
        level's ``coarsening.objects``, ``sparsity_strategy``, ``kept_object_count`` and
        ``object_sparsity``.
    objects_per_cell
        ``objects="coverage"``: objects kept per coarse bin at every level (default 4).
    objects_kept
        ``objects="length"``: objects kept at every level (default 1000).

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> zv.Levels(method="aggregate", reductions={"size": "max"}).method
    'aggregate'
    >>> zv.Levels(count=2, objects="coverage", objects_per_cell=2).objects_per_cell
    2
    """

    count: int | Literal["auto"] = "auto"
    method: str = SAMPLE
    target: int = DEFAULT_TARGET
    per_bin: int = DEFAULT_PER_BIN
    reductions: Mapping[str, str] | None = field(default=None)
    count_name: str = COUNT_ATTRIBUTE
    objects: Literal["coverage", "length"] | None = None
    objects_per_cell: int = DEFAULT_OBJECTS_PER_CELL
    objects_kept: int = DEFAULT_OBJECTS_KEPT

    def __post_init__(self) -> None:
        if self.method not in (*POINT_METHODS, *OBJECT_METHODS):
            raise InvalidInputError(
                f"levels method must be one of {', '.join((*POINT_METHODS, *OBJECT_METHODS))}, "
                f"got {self.method!r}"
            )
        if self.count != "auto" and not _non_negative_int(self.count):
            raise InvalidInputError(
                f"levels count must be 'auto' or an int >= 0, got {self.count!r}"
            )
        if self.objects not in (None, *OBJECT_SPARSITY):
            raise InvalidInputError(
                f"levels objects must be None or one of {', '.join(OBJECT_SPARSITY)}, "
                f"got {self.objects!r}"
            )
        for name in ("target", "per_bin", "objects_per_cell", "objects_kept"):
            if not _non_negative_int(getattr(self, name)) or getattr(self, name) < 1:
                raise InvalidInputError(
                    f"levels {name} must be an int >= 1, got {getattr(self, name)!r}"
                )

    def to_schedule(self) -> dict[str, Any]:
        """The root's ``level_schedule`` record of this request (spec §3.1, §4.3.1): every
        field, so that an append or a rebuild reruns the same schedule.

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> record = zv.Levels(count=2, per_bin=8).to_schedule()
        >>> record["count"], record["per_bin"], record["objects"]
        (2, 8, None)
        """
        reductions = dict(sorted(self.reductions.items())) if self.reductions else None
        return {
            "count": self.count if self.count == "auto" else int(self.count),
            "method": self.method,
            "target": int(self.target),
            "per_bin": int(self.per_bin),
            "objects_per_cell": int(self.objects_per_cell),
            "objects_kept": int(self.objects_kept),
            "reductions": reductions,
            "count_name": self.count_name,
            "objects": self.objects,
        }

    @classmethod
    def from_schedule(cls, record: Any) -> Levels:
        """The request a root's ``level_schedule`` records (:meth:`to_schedule`).

        Raises
        ------
        MetadataError
            When ``record`` is malformed (spec §3.1).

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> asked = zv.Levels(count="auto", target=500, objects="coverage")
        >>> zv.Levels.from_schedule(asked.to_schedule()) == asked
        True
        """
        return cls(**check_schedule(record))


def _non_negative_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and bool(value >= 0)


def level_settings(levels: Any) -> Levels | None:
    """The :class:`Levels` a writer's ``levels=`` argument asks for, or None for no levels.

    Parameters
    ----------
    levels
        None or 0 (no levels), ``"auto"``, an int count, or a :class:`Levels`.

    Raises
    ------
    InvalidInputError
        For any other value.

    Examples
    --------
    >>> level_settings(3).count, level_settings(None)
    (3, None)
    """
    if isinstance(levels, Levels):
        return None if levels.count == 0 else levels
    if levels is None or (_non_negative_int(levels) and levels == 0):
        return None
    if levels == "auto" or _non_negative_int(levels):
        return Levels(count=levels)
    raise InvalidInputError(
        f"levels must be None, 'auto', an int >= 0 or a zarr_vectors.Levels, got {levels!r}"
    )


def levels_done(settings: Levels, built: int, count: int) -> bool:
    """Whether the schedule stops: ``built`` levels made, the last holding ``count`` vertices.

    Examples
    --------
    >>> levels_done(Levels(target=10), 1, 10), levels_done(Levels(count=2), 1, 5)
    (True, False)
    """
    if settings.count == "auto":
        return count <= settings.target
    return built >= settings.count


def warn_short(settings: Levels, built: int, count: int) -> None:
    """Warn when fewer levels were built than asked for (the last holding ``count``).

    Examples
    --------
    >>> warn_short(Levels(count=1), 1, 5)  # as many as asked: no warning
    """
    if settings.count != "auto" and built < settings.count:
        warnings.warn(
            f"built {built} levels of detail, not {settings.count}: no coarser level holds "
            f"fewer vertices (the last holds {count})",
            stacklevel=5,
        )
