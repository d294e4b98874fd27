"""JSON documents as the store writes them: two spaces of indent (``json.dumps(doc,
indent=2)``), serialised without the pure-Python encoder's cost.

With an indent, :func:`json.dumps` gives up its C encoder for a generator per nested value
and a ``yield`` per token: a store's dozen ``zarr.json`` documents took ~3 ms of every
write. :func:`indented_json` writes the same text by one recursive pass over the plain
types JSON documents are made of (``dict`` with ``str`` keys, ``list``, ``str``, ``int``,
``float``, ``bool``, ``None``), with the C string escaper; any other value (a tuple, a
non-string key, a float that is not finite when ``allow_nan`` is false...) is left to
:func:`json.dumps` for the whole document, so the text (or the error) is always its.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["indented_json"]

_ESCAPE = json.encoder.encode_basestring_ascii
_INDENT = "  "
_FLAT = frozenset((int, str))
"""Item types of a list written by one join."""


class _Unusual(Exception):
    """A value :func:`indented_json` leaves to :func:`json.dumps`."""


def indented_json(doc: Any, *, allow_nan: bool = True) -> str:
    """``json.dumps(doc, indent=2, allow_nan=allow_nan)``, the same text, faster.

    Examples
    --------
    >>> doc = {"shape": [2, 3], "fill_value": float("nan"), "attributes": {}, "a": None}
    >>> indented_json(doc) == json.dumps(doc, indent=2)
    True
    >>> print(indented_json({"dimension_names": ["chunk.x", "row.vertices"]}))
    {
      "dimension_names": [
        "chunk.x",
        "row.vertices"
      ]
    }
    """
    parts: list[str] = []
    try:
        _put(doc, parts, "\n", allow_nan)
    except (_Unusual, RecursionError):  # a circular document: json.dumps's ValueError
        return json.dumps(doc, indent=2, allow_nan=allow_nan)
    return "".join(parts)


def _put(value: Any, parts: list[str], newline: str, allow_nan: bool) -> None:
    """Append the text of ``value``, whose line starts with ``newline``'s indent."""
    kind = type(value)
    if kind is str:
        parts.append(_ESCAPE(value))
    elif kind is dict:
        _put_dict(value, parts, newline, allow_nan)
    elif kind is list:
        _put_list(value, parts, newline, allow_nan)
    elif kind is int:
        parts.append(int.__repr__(value))
    elif kind is float:
        parts.append(_float(value, allow_nan))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    else:
        raise _Unusual


def _put_dict(value: dict[Any, Any], parts: list[str], newline: str, allow_nan: bool) -> None:
    """:func:`_put` of a dict: a member per line, keys in their order."""
    if not value:
        parts.append("{}")
        return
    inner = newline + _INDENT
    opening = "{" + inner
    for key, item in value.items():
        if type(key) is not str:
            raise _Unusual
        parts.append(opening + _ESCAPE(key) + ": ")
        opening = "," + inner
        _put(item, parts, inner, allow_nan)
    parts.append(newline + "}")


def _put_list(value: list[Any], parts: list[str], newline: str, allow_nan: bool) -> None:
    """:func:`_put` of a list: an item per line."""
    if not value:
        parts.append("[]")
        return
    inner = newline + _INDENT
    kinds = set(map(type, value))
    if kinds <= _FLAT:  # integers or strings (shapes, names): joined at once
        text = map(int.__repr__, value) if kinds == {int} else map(_flat, value)
        parts.append("[" + inner + ("," + inner).join(text) + newline + "]")
        return
    opening = "[" + inner
    for item in value:
        parts.append(opening)
        opening = "," + inner
        _put(item, parts, inner, allow_nan)
    parts.append(newline + "]")


def _flat(value: int | str) -> str:
    """An integer's or a string's JSON text."""
    return _ESCAPE(value) if type(value) is str else int.__repr__(value)


def _float(value: float, allow_nan: bool) -> str:
    """A float's JSON text, as :mod:`json` writes it (``NaN``, ``Infinity``)."""
    if math.isfinite(value):
        return float.__repr__(value)
    if not allow_nan:
        raise _Unusual  # json.dumps raises its own ValueError
    if value != value:
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"
