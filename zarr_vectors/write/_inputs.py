"""Checks and normalisation of the arrays a user gives a writer: positions, object ids and
named columns, and the safe casts that fit them to what a store holds.

Everything here runs before a destination is touched, so bad input never changes a store.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import RESERVED_ATTRIBUTE_NAMES, check_name

_FLOAT32_EXACT = 2**24

__all__ = [
    "array",
    "attributes",
    "cast_columns",
    "cast_to",
    "column",
    "flag",
    "integer_ids",
    "is_number",
    "mapping",
    "number",
    "positions",
    "type_name",
]


def type_name(value: Any) -> str:
    """The name of ``value``'s type, for messages (``"list"``, ``"str"``)."""
    return type(value).__name__


def array(values: Any, what: str) -> np.ndarray:
    """``values`` as a numpy array, or an error naming ``what`` (e.g. a ragged list).

    Raises
    ------
    InvalidInputError
        When numpy cannot make one array of ``values``.
    """
    if isinstance(values, str | bytes | Mapping):
        raise InvalidInputError(
            f"{what} must be an array of numbers, got a {type_name(values)} ({values!r:.60})"
        )
    try:
        return np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(
            f"{what} must be an array of numbers (rows of equal length); "
            f"numpy could not make one array of it: {exc}"
        ) from exc


def mapping(values: Any, what: str) -> Mapping[Any, Any]:
    """``values`` (a mapping, or None for none) checked to be a mapping; an object with
    ``keys()`` and ``items()`` (a dataframe: its columns) is taken as one.

    Raises
    ------
    InvalidInputError
        For a list, an array or anything else that is not a mapping.
    """
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return values
    if callable(getattr(values, "items", None)) and callable(getattr(values, "keys", None)):
        return dict(values.items())  # a mapping that is not a Mapping (a dataframe...)
    raise InvalidInputError(
        f"{what} must be a mapping (dict) of name to array, e.g. "
        f"{{'intensity': values}}, got a {type_name(values)}"
    )


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number (numpy scalars too), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def number(value: Any, what: str) -> float:
    """A real number (not a bool, not a string) as a float.

    Raises
    ------
    InvalidInputError
        Naming ``what`` and the type given.
    """
    if not is_number(value):
        raise InvalidInputError(f"{what} must be a number, got {value!r} ({type_name(value)})")
    return float(value)


def flag(value: Any, what: str) -> bool:
    """``True`` or ``False`` (numpy bools too).

    Raises
    ------
    InvalidInputError
        For anything else (``"yes"``, 1, None...).
    """
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{what} must be True or False, got {value!r} ({type_name(value)})")
    return bool(value)


def positions(values: Any, what: str = "positions") -> np.ndarray:
    """``(n, D)`` coordinates: float32/float64 kept, other numbers as float32 when exact.

    Raises
    ------
    InvalidInputError
        Naming ``what``, for another shape, non-numbers or integers float32 cannot hold.
    """
    arr = array(values, what)
    if arr.ndim != 2 or arr.shape[1] not in (2, 3, 4):
        raise InvalidInputError(
            f"{what} must have shape (n, D) with D = 2, 3 or 4, got shape {arr.shape}"
        )
    if arr.dtype.kind not in "iuf":
        raise InvalidInputError(f"{what} must be numbers, got dtype {arr.dtype}")
    if arr.dtype == np.float64 or arr.dtype == np.float32:
        return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))
    as32 = arr.astype(np.float32)
    if arr.dtype.kind in "iu" and arr.size and np.abs(arr).max() > _FLOAT32_EXACT:
        raise InvalidInputError(
            f"integer {what} up to {np.abs(arr).max()} are not exact in float32; "
            f"pass {what}.astype(np.float64)"
        )
    return np.ascontiguousarray(as32)


def column(name: str, values: Any, n: int, what: str = "attribute") -> np.ndarray:
    """One named column of ``n`` rows, shape ``(n,)`` or ``(n, K)``, numeric or bool.

    Raises
    ------
    InvalidInputError
        Naming ``what`` and ``name``, for another dtype or shape.
    """
    arr = array(values, f"{what} {name!r}")
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(f"{what} {name!r} must be numeric or bool, got {arr.dtype}")
    if arr.ndim not in (1, 2) or arr.shape[0] != n or (arr.ndim == 2 and arr.shape[1] < 1):
        raise InvalidInputError(
            f"{what} {name!r} must have shape ({n},) or ({n}, K), got {arr.shape}"
        )
    return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))


def attributes(
    values: Mapping[str, Any] | None,
    n: int,
    *,
    what: str = "attribute",
    reserved: frozenset[str] = RESERVED_ATTRIBUTE_NAMES,
) -> dict[str, np.ndarray]:
    """Validate named columns of ``n`` rows each (names per spec §9.4).

    Raises
    ------
    InvalidInputError
        For unsafe or reserved names, non-numeric dtypes or wrong lengths.
    """
    out: dict[str, np.ndarray] = {}
    for name, column_values in mapping(values, f"{what.replace(' ', '_')}s").items():
        check_name(name, what)
        if name in reserved:
            raise InvalidInputError(f"{what} name {name!r} is reserved by the format")
        out[name] = column(name, column_values, n, what)
    return out


def cast_to(values: np.ndarray, dtype: np.dtype[Any], expression: str, holder: str) -> np.ndarray:
    """``values`` as ``dtype`` when numpy casts it safely (``float32`` to ``float64``,
    ``int16`` to ``int32``...); a cast that can lose values is refused.

    Parameters
    ----------
    values
        The caller's array.
    dtype
        The dtype ``holder`` stores.
    expression
        How the caller names the array (``"positions"``, ``"attributes['w']"``), for the
        ``.astype`` the message suggests.
    holder
        What fixes the dtype (``"the store"``, ``"the first batch"``).

    Raises
    ------
    InvalidInputError
        For a cast that is not safe, with the ``.astype(...)`` that does it on purpose.
    """
    if values.dtype == dtype:
        return values
    if np.can_cast(values.dtype, dtype, "safe"):
        return values.astype(dtype)
    raise InvalidInputError(
        f"{expression} is {values.dtype} but {holder} holds {dtype}; {values.dtype} to "
        f"{dtype} can lose values, so it is not done implicitly: pass "
        f"{expression}.astype(np.{dtype.name}) to store them as {dtype}"
    )


def cast_columns(
    columns: dict[str, np.ndarray],
    stored: Mapping[str, tuple[np.dtype[Any], tuple[int, ...]]],
    what: str,
    holder: str,
) -> dict[str, np.ndarray]:
    """Columns fitted to the names, row shapes and dtypes ``holder`` stores (safe casts
    only, :func:`cast_to`).

    Parameters
    ----------
    columns
        Validated columns by name (:func:`attributes`).
    stored
        ``(dtype, row shape)`` of every column ``holder`` stores, by name.
    what
        The argument holding the columns (``"attributes"``), for messages.
    holder
        What fixes the columns (``"the store"``, ``"the first batch"``).

    Raises
    ------
    InvalidInputError
        Naming the argument: for missing or extra names, another row shape, or a cast
        that can lose values.
    """
    if set(columns) != set(stored):
        missing = sorted(set(stored) - set(columns))
        extra = sorted(set(columns) - set(stored))
        raise InvalidInputError(
            f"{what} must have the names {holder} has, {sorted(stored)}: "
            f"missing {missing}, not in {holder} {extra}"
        )
    out: dict[str, np.ndarray] = {}
    for name, (dtype, row_shape) in stored.items():
        values = columns[name]
        expression = f"{what}[{name!r}]"
        if tuple(values.shape[1:]) != tuple(row_shape):
            raise InvalidInputError(
                f"{expression} has rows of shape {tuple(values.shape[1:])}, {holder} "
                f"{tuple(row_shape)}"
            )
        out[name] = cast_to(values, dtype, expression, holder)
    return out


def integer_ids(object_ids: Any, n: int) -> np.ndarray | None:
    """Validate ``n`` integer ids (any integer dtype, kept); None passes through."""
    if object_ids is None:
        return None
    ids = array(object_ids, "object_ids")
    if ids.dtype.kind not in "iu" or ids.shape != (n,):
        raise InvalidInputError(
            f"object_ids must be integers of shape ({n},), got {ids.dtype} {ids.shape}"
        )
    return np.ascontiguousarray(ids, dtype=ids.dtype.newbyteorder("="))
