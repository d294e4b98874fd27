"""What reads, queries and plots share: the level a request is answered from (given, or the
finest within a vertex budget), the region checked, and the read of one level."""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError, MetadataError
from zarr_vectors.handle.properties import Properties
from zarr_vectors.query import (
    LevelCount,
    LevelCounter,
    Region,
    admissible_levels,
    as_region,
    check_budget,
    clip_to_region,
    everywhere,
    query_region,
    read_all,
)
from zarr_vectors.result import QueryResult

__all__ = ["Selection"]


class Selection(Properties):
    """Choosing the level and region of a request, and answering it at one level.

    The shared steps of :class:`~zarr_vectors.handle.reads.Reads`,
    :class:`~zarr_vectors.handle.queries.Queries` and :class:`~zarr_vectors.handle.views.Views`.
    """

    def _read_level(self, level: int, progress: ProgressOption = None) -> QueryResult:
        """Every vertex or object of ``level``, whole, stamped with the level."""
        with progress_reporter(progress) as report:
            if not self.is_object_store:
                return self._stamped(read_all(self._level_reader(level), report), level)
            objects = self._objects_at(level)
            report("read objects", 0, 1)
            found = objects.read(np.arange(objects.n_objects, dtype=np.int64))
            report("read objects", 1, 1)
            return self._stamped(found, level)

    def _region_of(self, region: Any, group: Any) -> Region | None:
        """The checked region of a query (None: a query of a group's objects only).

        Raises
        ------
        InvalidInputError
            For a malformed region, or no region (nor group) at all.
        """
        if not self.is_object_store and region is None:
            raise InvalidInputError(
                "query needs a region, e.g. a box (lo, hi), of a point cloud; read() returns "
                "every point, and -inf/inf bounds leave an axis unbounded"
            )
        if self.is_object_store and region is None:
            if group is None:
                raise InvalidInputError(
                    "query needs a region, a group, or both; read() returns every object"
                )
            return None
        return as_region(region, self.ndim, self.axis_names)

    def _check_one_level_choice(self, level: Any) -> None:
        """Refuse ``level=`` given together with ``max_vertices=``."""
        if level is not None:
            raise InvalidInputError(
                "give level= or max_vertices=, not both: level= reads that level, "
                "max_vertices= chooses the finest level within the vertex budget"
            )

    def _within_budget(
        self, region: Region | None, group: Any, clip: bool, max_vertices: Any
    ) -> QueryResult:
        """The query (None: everything, or the group's objects) at the finest level whose
        count in the region is at most ``max_vertices`` (see :meth:`query`).

        Raises
        ------
        InvalidInputError
            When even the coarsest level holds more vertices than ``max_vertices``.
        """
        budget = check_budget(max_vertices)
        counter = self._counter(region)
        found = self._finest_within(region, group, clip, (counter, budget))
        if found is not None:
            return found
        coarsest = counter.levels[-1]
        listed = [c.level for c in counter.levels]
        count = counter.count(coarsest)
        if count <= budget:  # whole objects reach outside the chunks the region meets
            raise InvalidInputError(
                f"the objects meeting the region hold more than max_vertices={budget:,} "
                f"vertices even at the coarsest level ({coarsest.level}): whole objects reach "
                "outside the region; query with clip=True, a smaller region or a larger "
                f"max_vertices, or read one level with level= (store.levels lists {listed})"
            )
        raise InvalidInputError(
            f"max_vertices={budget:,} is less than the {count:,} vertices the coarsest level "
            f"({coarsest.level}) holds in the region; query a smaller region, give a larger "
            f"max_vertices, or read one level with level= (store.levels lists {listed})"
        )

    def _finest_within(
        self,
        region: Region | None,
        group: Any,
        clip: bool,
        budget: tuple[LevelCounter, int],
    ) -> QueryResult | None:
        """The query at the finest level within the budget ``(counts, max_vertices)``
        (None when no level is).

        Levels are tried finest first among those whose count in the region is within the
        budget; a result over it (whole objects reaching outside the chunks counted) moves
        on to the next.
        """
        counter, limit = budget
        for level in admissible_levels(counter, limit):
            found = self._query_level(region, group, clip, level)
            if len(found) <= limit:
                return found
        return None

    def _counter(self, region: Region | None) -> LevelCounter:
        """Counts of the store's levels inside ``region`` (None: all of space)."""
        levels = [
            LevelCount(record.level, record.vertex_count)
            for record in self._level_records()
            if record.vertex_count is not None
        ]
        if not levels:
            raise MetadataError(
                "no level of the store has readable metadata (vertex_count); run "
                "zarr-vectors validate, and restore or rewrite the store"
            )
        space = everywhere(self.ndim) if region is None else region
        return LevelCounter(levels, space, self._root.bounding_box, self._level_reader)

    def _query_level(
        self, region: Region | None, group: Any, clip: bool, level: int
    ) -> QueryResult:
        """The query at ``level``: everything (no region nor group), a group's objects (no
        region), or what the region meets (see :meth:`query`)."""
        if region is None and group is None:
            return self._read_level(level, progress=False)
        if region is None:
            objects = self._objects_at(level)
            return self._stamped(objects.read(objects.group_members(group)), level)
        return self._stamped(self._query_region(region, group, clip, level), level)

    def _check_object_options(self, group: Any, clip: object) -> None:
        """Refuse ``group=`` and ``clip=`` where they cannot apply, before anything is read.

        Raises
        ------
        InvalidInputError
            When ``clip`` is not a bool, or ``group``/``clip`` are given for a point cloud.
        """
        if clip is not True and clip is not False and not isinstance(clip, np.bool_):
            raise InvalidInputError(f"clip must be True or False, got {clip!r}")
        if self.is_object_store:
            return
        if group is not None:
            raise InvalidInputError(
                f"a {self.kind} store has no groups: group= applies to object stores "
                "(polylines, streamlines, graphs, skeletons, meshes); query the region "
                "without group="
            )
        if clip:
            raise InvalidInputError(
                f"clip= applies to object stores only: a {self.kind} query already "
                "returns exactly the points in the region; leave clip out"
            )

    def _query_region(self, region: Region, group: Any, clip: bool, level: int = 0) -> QueryResult:
        """The vertices, or the objects with a vertex, in ``region`` (see :meth:`query`;
        ``group`` and ``clip`` checked by :meth:`_check_object_options`); whole objects are
        built with the store's labels (:meth:`_labels`)."""
        if not self.is_object_store:
            return query_region(self._level_reader(level), region)
        found = self._objects_at(level).read_region(region, group, self._labels(level))
        return clip_to_region(found, region) if clip else found
