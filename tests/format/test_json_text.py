"""``indented_json`` writes exactly what ``json.dumps(doc, indent=2)`` writes."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.format.json_text import indented_json

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_same_text_as_json_dumps(doc: object) -> None:
    assert indented_json(doc) == json.dumps(doc, indent=2)


@settings(max_examples=100, deadline=None)
@given(_VALUES)
def test_same_text_or_error_without_nan(doc: object) -> None:
    try:
        expected = json.dumps(doc, indent=2, allow_nan=False)
    except ValueError:
        with pytest.raises(ValueError, match="not JSON compliant"):
            indented_json(doc, allow_nan=False)
        return
    assert indented_json(doc, allow_nan=False) == expected


@pytest.mark.parametrize(
    "doc",
    [
        {"a": (1, 2.5)},  # a tuple: json.dumps writes a list
        {1: "x", None: [True]},  # keys json.dumps converts
        [math.inf, -math.inf, {"k": {}}, []],
        {'é\n"': "ü\x00"},
    ],
)
def test_unusual_values_as_json_dumps(doc: object) -> None:
    assert indented_json(doc) == json.dumps(doc, indent=2)


def test_not_serialisable_raises_as_json_dumps() -> None:
    with pytest.raises(TypeError):
        indented_json({"a": object()})


def test_circular_document_raises_as_json_dumps() -> None:
    doc: dict[str, object] = {}
    doc["self"] = doc
    with pytest.raises(ValueError, match="Circular reference"):
        indented_json(doc)
