"""The ``commit`` root key (spec §3.1): a serial that counts commits and a fresh id each."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr_vectors.format.commits import commit_problem, next_commit


def test_a_first_commit_is_serial_1_with_a_hex_id() -> None:
    record = next_commit(None)
    assert record["serial"] == 1
    assert commit_problem(record) is None


@given(serial=st.integers(1, 2**62))
def test_a_commit_continues_its_base_serial_with_a_new_id(serial: int) -> None:
    base = {"serial": serial, "id": "0" * 32}
    record = next_commit(base)
    assert record["serial"] == serial + 1
    assert record["id"] != base["id"]
    assert commit_problem(record) is None


@pytest.mark.parametrize(
    ("record", "next_serial"),
    [
        (None, 1),
        ([], 1),
        ({"serial": 0, "id": "0" * 32}, 1),
        ({"serial": True, "id": "0" * 32}, 1),
        ({"serial": 1, "id": "0" * 31}, 2),
        ({"serial": 1, "id": "G" * 32}, 2),
        ({"serial": 1, "id": "0" * 32, "other": 1}, 2),
    ],
)
def test_a_malformed_commit_record_is_named_and_never_stops_a_commit(
    record: Any, next_serial: int
) -> None:
    assert commit_problem(record) is not None
    assert next_commit(record)["serial"] == next_serial  # a usable serial is continued
