"""The in-memory result of a read or a query (one shape for every geometry kind)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["QueryResult"]


@dataclass(frozen=True, slots=True, repr=False)
class QueryResult:
    """Vertices returned by :meth:`VectorStore.read` or :meth:`VectorStore.query`.

    Attributes
    ----------
    positions
        ``(N, D)`` vertex coordinates, in the store's dtype.
    attributes
        Per-vertex attributes by name, each with one row per position.
    vertex_object_ids
        ``(N,)`` object id of each vertex, or None when the store has none.
    """

    positions: np.ndarray
    attributes: dict[str, np.ndarray] = field(default_factory=dict)
    vertex_object_ids: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.positions.shape[0])

    def __repr__(self) -> str:
        attrs = ", ".join(
            f"{k}: {v.dtype}{list(v.shape[1:]) or ''}" for k, v in self.attributes.items()
        )
        ids = "" if self.vertex_object_ids is None else ", with object ids"
        return (
            f"<QueryResult {len(self)} vertices in {self.positions.shape[1]}-D "
            f"({self.positions.dtype}){ids}; attributes: {attrs or 'none'}>"
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
