"""Object ids and groups as callers give them, checked before any read (spec §7, §9.10).

:func:`requested_ids` turns what a caller passes to ``read_objects`` or ``query(...,
object_ids=...)`` into int64 ids, refusing what is not an integer id with a message that
says what to pass; :func:`group_key` does the same for a group's name or number.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError

__all__ = ["group_key", "requested_ids"]

_INT64 = np.iinfo(np.int64)


def _not_an_id(value: Any) -> InvalidInputError:
    """The error for a requested object id that is not an integer, saying what to pass."""
    whole = isinstance(value, float | np.floating) and math.isfinite(value) and value == int(value)
    hint = (
        " (whole floats are refused too: convert them with ids.astype(np.int64))" if whole else ""
    )
    return InvalidInputError(
        f"object ids must be integers, got {value!r}{hint}; pass an int or a 1-d sequence or "
        "integer array of ids"
    )


def _checked_objects(values: np.ndarray) -> np.ndarray:
    """An object array of requested ids as int64, when every element is an int in range."""
    for value in values.tolist():
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
            raise _not_an_id(value)
        if not _INT64.min <= int(value) <= _INT64.max:
            raise InvalidInputError(
                f"object id {value} is out of range: ids are 64-bit signed integers"
            )
    return values.astype(np.int64)


def requested_ids(ids: Any) -> np.ndarray:
    """The caller's object ids as a 1-d int64 array (a single id gives one).

    Only integers are ids: Python and numpy integers, alone, in a sequence or in an
    integer array. Bools, strings and floats are refused, whole floats (``3.0``) too: an id
    is an int64 and a float column may already have lost digits of a large id.

    Raises
    ------
    InvalidInputError
        When ``ids`` is not an integer, a 1-d sequence of integers or an integer array, or
        an id lies outside the int64 range.
    """
    if isinstance(ids, AbstractSet | Mapping | Iterator):
        raise InvalidInputError(
            f"object ids must be an int or a 1-d sequence or array of ints, got a "
            f"{type(ids).__name__}; pass a list or an array (e.g. sorted(ids))"
        )
    try:
        wanted = np.atleast_1d(np.asarray(ids))
    except (ValueError, TypeError) as exc:  # ragged nesting
        raise InvalidInputError(
            f"object ids must be an int or a 1-d sequence or array of ints, got {reprlib.repr(ids)}"
        ) from exc
    if wanted.ndim != 1:
        raise InvalidInputError(
            f"object ids must be an int or a 1-d sequence or array of ints, got shape "
            f"{wanted.shape}; flatten them first (np.ravel)"
        )
    if not wanted.size:
        return np.empty(0, np.int64)
    if wanted.dtype.kind == "i" or (wanted.dtype.kind == "u" and wanted.max() <= _INT64.max):
        return wanted.astype(np.int64, copy=False)
    # Not plain integers: look at the caller's own elements (numpy may have made a mixed
    # list floats), to name the first one that is not an id, or take big-int objects.
    return _checked_objects(np.atleast_1d(np.asarray(ids, dtype=object)))


def group_key(group: Any) -> str | int:
    """A group given by name (str) or number (int), checked (bools and floats are refused).

    Raises
    ------
    InvalidInputError
        When ``group`` is neither a string nor an integer.
    """
    if isinstance(group, str):
        return group
    if isinstance(group, int | np.integer) and not isinstance(group, bool):
        return int(group)
    raise InvalidInputError(
        f"group must be a group name (str) or a group number (int), got {group!r}; "
        "store.groups lists them"
    )
