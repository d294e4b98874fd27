"""Byte layouts of layout V (zarr-vectors 0.9.x) the importer decodes (spec §14)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import MetadataError
from zarr_vectors.format.layout_v import (
    decode_link_cell,
    lehmer_permutation,
    parse_offsets,
    restore_input_order,
)


def _lehmer_code(sigma: tuple[int, ...]) -> int:
    """The encoder as the layout describes it: ``sum(idx_i * (L-1-i)!)`` with ``idx_i``
    the position of ``sigma[i]`` among the values not yet used."""
    free = sorted(sigma)
    code = 0
    for i, value in enumerate(sigma):
        code += free.index(value) * math.factorial(len(sigma) - 1 - i)
        free.remove(value)
    return code


@pytest.mark.parametrize("length", [1, 2, 3, 4])
def test_every_permutation_decodes_from_its_lehmer_code(length: int) -> None:
    perms = list(itertools.permutations(range(length)))
    assert sorted(_lehmer_code(p) for p in perms) == list(range(math.factorial(length)))
    for sigma in perms:
        assert lehmer_permutation(_lehmer_code(sigma), length) == sigma


@settings(max_examples=30, deadline=None)
@given(st.permutations(list(range(3))), st.lists(st.integers(0, 99), min_size=3, max_size=3))
def test_restoring_the_input_order_inverts_the_stored_permutation(
    sigma: list[int], endpoints: list[int]
) -> None:
    stored = np.array([[endpoints[s] for s in sigma]])  # stored[k] = input[sigma[k]]
    restored = restore_input_order(stored, np.array([_lehmer_code(tuple(sigma))]))
    assert restored.tolist() == [endpoints]


def test_a_framed_cell_skips_its_frame_and_keeps_every_group() -> None:
    rows = np.array([[0, 2, 0], [1, 5, 7]], dtype="<i8")
    framed = np.concatenate([[2, 0, 24], rows.ravel()]).astype("<i8").tobytes()
    assert decode_link_cell(framed, 3, framed=True).tolist() == rows.tolist()
    assert decode_link_cell(rows.tobytes(), 3, framed=False).tolist() == rows.tolist()


@pytest.mark.parametrize(
    ("blob", "framed"),
    [
        (b"\x01\x02\x03", False),  # not int64
        (np.array([1, 2, 3, 4], "<i8").tobytes(), False),  # not rows of 3
        (np.array([5, 0], "<i8").tobytes(), True),  # frame longer than the cell
    ],
)
def test_a_malformed_link_cell_is_refused(blob: bytes, framed: bool) -> None:
    with pytest.raises(MetadataError, match="spec §14"):
        decode_link_cell(blob, 3, framed=framed)


@pytest.mark.parametrize("segment", ["0.0", "a.b.c", "0.0.0_1.x.0"])
def test_a_link_array_name_that_is_not_offsets_is_refused(segment: str) -> None:
    with pytest.raises(MetadataError):
        parse_offsets(segment, 3)
