"""A :class:`~zarr_vectors.QueryResult` as a table: one row per vertex."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.errors import InvalidInputError

if TYPE_CHECKING:
    from zarr_vectors.result.query_result import QueryResult

__all__ = ["OBJECT_ID_COLUMN", "column_names", "to_pandas", "to_table"]

OBJECT_ID_COLUMN = "object_id"


def column_names(name: str, row_shape: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """Column names of an attribute with per-row shape ``row_shape``, with their indices.

    ``()`` gives ``name``; ``(K,)`` gives ``name[0]`` ... ``name[K-1]``; more dimensions give
    ``name[i,j]``. Brackets never occur in attribute names, so these cannot collide with one.
    """
    if not row_shape:
        return [(name, ())]
    return [
        (f"{name}[{','.join(str(i) for i in index)}]", index) for index in np.ndindex(row_shape)
    ]


def to_table(result: QueryResult) -> dict[str, np.ndarray]:
    """The columns of :meth:`QueryResult.to_table` (see there)."""
    table: dict[str, np.ndarray] = {}

    def add(name: str, values: np.ndarray) -> None:
        if name in table:
            raise InvalidInputError(
                f"two columns would be named {name!r}: rename the attribute or the axis"
            )
        table[name] = values

    for d, axis in enumerate(result.coordinate_names):
        add(axis, np.ascontiguousarray(result.positions[:, d]))
    for name, values in result.attributes.items():
        for column, index in column_names(name, tuple(values.shape[1:])):
            key: tuple[Any, ...] = (slice(None), *index)
            add(column, values[key])
    if result.vertex_object_ids is not None:
        add(OBJECT_ID_COLUMN, result.vertex_object_ids)
    return table


def to_pandas(result: QueryResult) -> Any:
    """:func:`to_table` as a ``pandas.DataFrame``."""
    pandas = require("pandas", extra="pandas", purpose="QueryResult.to_pandas")
    return pandas.DataFrame(to_table(result))
