"""Validation of the parts every object writer shares: offsets, ids, object columns, groups.

All of it runs before anything is written (spec §12): bad input raises
:class:`~zarr_vectors.errors.InvalidInputError` naming the problem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE
from zarr_vectors.write import _inputs as inputs
from zarr_vectors.write._objects import Groups

__all__ = [
    "object_attributes",
    "object_ids",
    "offsets",
    "parse_groups",
    "vertex_attributes",
]

_RESERVED_VERTEX = frozenset({OBJECT_ID_ATTRIBUTE})
_RESERVED_OBJECT = frozenset({OBJECT_ID_ATTRIBUTE})


def offsets(values: Any, n: int) -> np.ndarray:
    """Validate object offsets: ``m + 1`` non-decreasing integers from 0 to ``n``."""
    arr = inputs.array(values, "offsets")
    if arr.ndim != 1 or arr.shape[0] < 1 or arr.dtype.kind not in "iu":
        raise InvalidInputError(f"offsets must be a 1-D integer array of m + 1 values, got {arr!r}")
    arr = arr.astype(np.int64)
    if arr[0] != 0 or arr[-1] != n:
        raise InvalidInputError(
            f"offsets must start at 0 and end at the vertex count {n}, got {arr[0]} .. {arr[-1]}"
        )
    if np.any(np.diff(arr) < 0):
        k = int(np.flatnonzero(np.diff(arr) < 0)[0])
        raise InvalidInputError(f"offsets must not decrease (offsets[{k + 1}] < offsets[{k}])")
    return arr


def object_ids(values: Any, m: int) -> np.ndarray | None:
    """Validate the caller's object ids: ``m`` distinct integers (None: ids 0..m-1)."""
    if values is None:
        return None
    ids = inputs.integer_ids(values, m)
    assert ids is not None
    if np.unique(ids).shape[0] != m:
        raise InvalidInputError("object_ids must be distinct")
    if np.array_equal(ids, np.arange(m)):
        return None
    return ids.astype(np.uint64 if ids.dtype.kind == "u" and ids.dtype.itemsize == 8 else np.int64)


def vertex_attributes(values: Mapping[str, Any] | None, n: int) -> dict[str, np.ndarray]:
    """Per-vertex columns of ``n`` rows (spec §9.4)."""
    return inputs.attributes(values, n, what="attribute", reserved=_RESERVED_VERTEX)


def object_attributes(values: Mapping[str, Any] | None, m: int) -> dict[str, np.ndarray]:
    """Per-object columns of ``m`` rows (spec §9.9)."""
    return inputs.attributes(values, m, what="object attribute", reserved=_RESERVED_OBJECT)


def parse_groups(
    groups: Mapping[Any, Sequence[int]] | None,
    attributes: Mapping[str, Any] | None,
    ids: np.ndarray | None,
    m: int,
) -> Groups | None:
    """Validate ``{name_or_id: [object ids]}`` and per-group columns (spec §9.10).

    Members are the caller's object ids (``object_ids=``, or 0..m-1); they are stored as
    dense object ids, unique and ascending. Group order is the order of the mapping.
    """
    groups = inputs.mapping(groups, "groups")
    if not groups:
        if attributes:
            raise InvalidInputError("group_attributes were given without groups")
        return None
    known = np.arange(m) if ids is None else ids
    order = np.argsort(known, kind="stable")
    members = [_members(name, values, known, order) for name, values in groups.items()]
    names = [str(name) for name in groups]
    if len(set(names)) != len(names):
        raise InvalidInputError("group names must be distinct")
    columns = inputs.attributes(
        attributes, len(names), what="group attribute", reserved=frozenset()
    )
    return Groups(names, members, columns)


def _members(name: Any, values: Sequence[int], known: np.ndarray, order: np.ndarray) -> np.ndarray:
    wanted = inputs.array(values, f"group {name!r}")
    if wanted.size == 0:
        return np.empty(0, np.int64)
    if wanted.ndim != 1 or wanted.dtype.kind not in "iu":
        raise InvalidInputError(f"group {name!r} must list integer object ids")
    pos = np.searchsorted(known[order], wanted)
    pos = np.minimum(pos, known.shape[0] - 1) if known.shape[0] else pos
    found = known.shape[0] > 0 and np.all(known[order][pos] == wanted)
    if not found:
        bad = wanted[:1] if not known.shape[0] else wanted[known[order][pos] != wanted][:1]
        raise InvalidInputError(f"group {name!r} lists {bad[0]}, which is not an object id")
    return np.unique(order[pos]).astype(np.int64)
