"""Small predicates on parsed JSON values and JSON Pointer paths (spec §1.3, §11.1).

In JSON an *integer* is a number without fraction or exponent and booleans are not
numbers; Python's ``json`` module gives ``int`` for the former and ``bool`` for ``true`` /
``false``, so ``bool`` must be excluded explicitly everywhere.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

__all__ = [
    "approx",
    "as_float_list",
    "as_int_list",
    "is_int",
    "is_number",
    "is_finite_number",
    "json_equal",
    "pointer",
]


def is_int(value: Any) -> TypeGuard[int]:
    """True for a JSON integer (not a boolean, not a float)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[int | float]:
    """True for any JSON number (integer or float, not a boolean)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_finite_number(value: Any) -> TypeGuard[int | float]:
    """True for a JSON number that is finite (``NaN``/``Infinity`` literals are not)."""
    return is_number(value) and math.isfinite(value)


def as_int_list(value: Any, length: int | None = None) -> list[int] | None:
    """``value`` as a list of integers (of ``length`` items if given), else None."""
    if not isinstance(value, list) or (length is not None and len(value) != length):
        return None
    for v in value:  # a loop, not all() of a generator: checked for every array at each open
        if type(v) is not int and (not isinstance(v, int) or isinstance(v, bool)):  # is_int
            return None
    return list(value)


def as_float_list(value: Any, length: int | None = None) -> list[float] | None:
    """``value`` as a list of finite numbers widened to float (of ``length`` items), else None."""
    if not isinstance(value, list) or not all(is_finite_number(v) for v in value):
        return None
    if length is not None and len(value) != length:
        return None
    return [float(v) for v in value]


def approx(a: float, b: float) -> bool:
    """The spec's "≈": ``|a - b| ≤ 1e-9 · max(|a|, |b|)`` (spec §11.1)."""
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two parsed JSON values as JSON values.

    Numbers compare by value (``1`` equals ``1.0``), but a boolean never equals a number,
    and object member order does not matter.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) or is_number(b):
        return is_number(a) and is_number(b) and (a == b or (a != a and b != b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _escape(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(document: str, *tokens: str | int) -> str:
    """A finding path: a store key plus a JSON Pointer into it (spec §11.1).

    ``pointer("zarr.json", "attributes", "chunk_shape", 0)`` gives
    ``"zarr.json#/attributes/chunk_shape/0"``; without tokens the key itself.
    """
    if not tokens:
        return document
    return document + "#/" + "/".join(_escape(t) for t in tokens)
