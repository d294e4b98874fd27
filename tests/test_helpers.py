"""The tests' own helpers: the canonical row order that compares multisets of rows."""

from __future__ import annotations

import numpy as np
import pytest

from tests import helpers
from tests.helpers import sorted_rows


def _table(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    positions = np.round(rng.random((n, 3)) * 4).astype(np.float32)  # many repeated rows
    labels = rng.integers(-3, 3, (n, 2)).astype(np.int16)
    return positions, labels


@pytest.mark.parametrize("colliding", [False, True])
def test_the_same_rows_in_any_order_give_the_same_table(
    colliding: bool, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    if colliding:  # every row shares one hash: the lexicographic branch
        monkeypatch.setattr(helpers, "row_keys", lambda table: np.zeros(len(table), np.uint64))
    positions, labels = _table(rng, 500)
    shuffle = rng.permutation(500)
    first = sorted_rows(positions, labels)
    np.testing.assert_array_equal(first, sorted_rows(positions[shuffle], labels[shuffle]))
    assert first.shape == (500, 5)
    expected = np.column_stack([positions, labels]).astype(np.float64)
    lexicographic = expected[np.lexsort(expected.T[::-1])]
    np.testing.assert_array_equal(first[np.lexsort(first.T[::-1])], lexicographic)
    if colliding:
        np.testing.assert_array_equal(first, lexicographic)


@pytest.mark.parametrize("colliding", [False, True])
def test_other_rows_give_another_table(
    colliding: bool, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    if colliding:
        monkeypatch.setattr(helpers, "row_keys", lambda table: np.zeros(len(table), np.uint64))
    positions, labels = _table(rng, 200)
    changed = positions.copy()
    changed[17, 1] += 0.5
    assert not np.array_equal(sorted_rows(positions, labels), sorted_rows(changed, labels))
    doubled = np.concatenate([positions[:1], positions[:-1]])  # one row twice, one missing
    assert not np.array_equal(sorted_rows(positions), sorted_rows(doubled))


def test_negative_zero_equals_zero_and_empty_tables_work() -> None:
    np.testing.assert_array_equal(
        sorted_rows(np.array([[0.0, 1.0], [-0.0, 2.0]])),
        sorted_rows(np.array([[0.0, 2.0], [0.0, 1.0]])),
    )
    assert sorted_rows(np.empty((0, 3)), np.empty(0)).shape == (0, 4)
