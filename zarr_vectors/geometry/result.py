"""The in-memory result of a read or a query (one shape for every geometry kind)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["QueryResult"]


@dataclass(frozen=True, slots=True, repr=False)
class QueryResult:
    """What :meth:`VectorStore.read`, :meth:`~VectorStore.query` and
    :meth:`~VectorStore.read_objects` return: one GeoArrow-like shape for every kind.

    Attributes
    ----------
    positions
        ``(N, D)`` vertex coordinates, in the store's dtype.
    attributes
        Per-vertex attributes by name, each with one row per position.
    vertex_object_ids
        ``(N,)`` object id of each vertex, or None when the store has none.
    object_ids
        ``(M,)`` ids of the objects returned (object kinds), else None.
    offsets
        ``(M + 1,)``: object m owns rows ``offsets[m]:offsets[m+1]`` (traversal order for
        polylines), else None.
    edges
        ``(E, 2)`` row indices into ``positions`` (graphs: ``[u, v]``, ``[source, target]``
        when directed; skeletons: ``[child, parent]``), else None.
    faces
        ``(F, 3)`` row indices into ``positions`` (meshes, winding as written), else None.
    object_attributes
        Per-object attributes by name, one row per returned object.
    link_attributes
        Per-link attributes by name, one row per row of ``edges`` or ``faces``.
    """

    positions: np.ndarray
    attributes: dict[str, np.ndarray] = field(default_factory=dict)
    vertex_object_ids: np.ndarray | None = None
    object_ids: np.ndarray | None = None
    offsets: np.ndarray | None = None
    edges: np.ndarray | None = None
    faces: np.ndarray | None = None
    object_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    link_attributes: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.positions.shape[0])

    def __repr__(self) -> str:
        attrs = ", ".join(
            f"{k}: {v.dtype}{list(v.shape[1:]) or ''}" for k, v in self.attributes.items()
        )
        ids = "" if self.vertex_object_ids is None else ", with object ids"
        objects = "" if self.object_ids is None else f"{len(self.object_ids)} objects, "
        links = "".join(
            f", {len(v)} {k}"
            for k, v in (("edges", self.edges), ("faces", self.faces))
            if v is not None
        )
        return (
            f"<QueryResult {objects}{len(self)} vertices in {self.positions.shape[1]}-D "
            f"({self.positions.dtype}){ids}{links}; attributes: {attrs or 'none'}>"
        )

    @classmethod
    def empty(
        cls,
        ndim: int,
        dtype: Any,
        attributes: dict[str, tuple[Any, tuple[int, ...]]],
        object_id_dtype: Any | None,
    ) -> QueryResult:
        """A result with no vertex but the right dtypes and column shapes."""
        return cls(
            positions=np.empty((0, ndim), dtype=dtype),
            attributes={
                k: np.empty((0, *shape), dtype=dt) for k, (dt, shape) in attributes.items()
            },
            vertex_object_ids=None if object_id_dtype is None else np.empty(0, object_id_dtype),
        )
