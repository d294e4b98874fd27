"""Formatting helpers and the HTML table renderer of the notebook displays."""

from __future__ import annotations

import numpy as np
import pytest

from tests.result.result_cases import html_rows
from zarr_vectors.display import (
    Section,
    column_spec,
    format_bytes,
    format_count,
    format_grid,
    format_number,
    format_vector,
    name_list,
    render_html,
)


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (5 * 2**20, "5.0 MiB")],
)
def test_format_bytes(n: int, text: str) -> None:
    assert format_bytes(n) == text


def test_format_bytes_of_huge_sizes_stays_in_tib() -> None:
    assert format_bytes(3 * 2**50) == "3072.0 TiB"


def test_numbers_vectors_and_grids() -> None:
    assert format_count(1234567) == "1,234,567"
    assert format_count(None) == "-"
    assert format_number(2.0) == "2"
    assert format_number(-0.25) == "-0.25"
    assert format_number(np.float32(0.1)) == "0.1"
    assert format_number(1 / 3) == "0.333333"
    assert format_vector([1.0, 2.5, -3]) == "[1, 2.5, -3]"
    assert format_grid((20, 21, 9)) == "20 x 21 x 9"


def test_column_spec_and_name_list() -> None:
    assert column_spec(np.float32, ()) == "float32"
    assert column_spec("uint8", (3,)) == "uint8[3]"
    assert column_spec(np.dtype("<i8"), [2, 2]) == "int64[2, 2]"
    assert name_list(["a", "b"]) == "a, b"
    assert name_list([str(i) for i in range(10)], limit=3) == "0, 1, 2, … (10 in all)"


def test_render_html_escapes_and_spans_short_rows() -> None:
    page = render_html(
        "T & <t>",
        [
            Section("first", rows=[("k", '"v"')]),
            Section("second", rows=[("a", "b", "<c>")], header=("x", "y", "z")),
        ],
    )
    assert "<t>" not in page
    assert "<c>" not in page
    assert "T &amp; &lt;t&gt;" in page
    assert "&quot;v&quot;" in page
    assert '<td colspan="2" style' in page  # ("k", "v") fills the 3 columns
    assert html_rows(page) == [
        ("T & <t>",),
        ("first",),
        ("k", '"v"'),
        ("second",),
        ("x", "y", "z"),
        ("a", "b", "<c>"),
    ]
