"""Format versions: which root attributes this library can read, and why not the others."""

from __future__ import annotations

from typing import Any

import pytest

from zarr_vectors.format.version import foreign_layout


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        (
            {"zarr_vectors": {"zv_version": "0.9.2"}},
            "zarr-vectors 0.9.x (zv_version '0.9.2'), a different layout (layout V)",
        ),
        ({"zarr_vectors": {"zv_version": "0.9.4"}}, "(layout V)"),
        (
            {"zarr_vectors": {"zv_version": "0.7.0"}},
            "zarr-vectors 0.7.x (zv_version '0.7.0'), a different layout (layout G)",
        ),
        ({"zarr_vectors": {"format_version": "0.4.1"}}, "zarr-vectors 0.x, a different layout;"),
    ],
)
def test_a_zarr_vectors_0x_root_is_named_with_its_layout(attrs: Any, expected: str) -> None:
    reason = foreign_layout(attrs)
    assert reason is not None
    assert expected in reason
    what_to_do = "zv.convert(src, dst)" if "(layout V)" in reason else "cannot read it yet"
    assert what_to_do in reason


@pytest.mark.parametrize(
    "attrs",
    [
        {"zarr_vectors_version": "1.0", "zarr_vectors": {"zv_version": "0.9.2"}},  # ours
        {"zarr_vectors_version": "1.1"},
        {},
        {"zarr_vectors": "0.9.2"},  # not the 0.x metadata block
        None,
    ],
)
def test_other_roots_are_not_taken_for_zarr_vectors_0x(attrs: Any) -> None:
    assert foreign_layout(attrs) is None
