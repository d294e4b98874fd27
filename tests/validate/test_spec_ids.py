"""The implemented check ids and severities match the tables of spec §11.

The ids are parsed from ``spec/zarr_vectors.md``, so a spec change (a new id, a renamed
id, a changed severity) fails here until the validator follows it.
"""

from __future__ import annotations

import re
from pathlib import Path

from zarr_vectors.validate import CHECKS

SPEC = Path(__file__).resolve().parents[2] / "spec" / "zarr_vectors.md"
ROW = re.compile(r"^\| `(L[1-5]\.[a-z0-9_]+)` \| (error|warning) \|", re.MULTILINE)


def spec_checks() -> dict[str, str]:
    """Every ``id -> severity`` row of the tables of spec §11."""
    rows = ROW.findall(SPEC.read_text(encoding="utf-8"))
    table = dict(rows)
    assert len(table) == len(rows), "an id appears twice in the spec tables"
    return table


def test_spec_tables_parse() -> None:
    table = spec_checks()
    assert len(table) > 100
    assert table["L1.store_exists"] == "error"


def test_implemented_ids_are_the_spec_ids() -> None:
    table = spec_checks()
    assert set(CHECKS) == set(table)


def test_severities_follow_the_spec() -> None:
    table = spec_checks()
    wrong = {i: (sev, table[i]) for i, sev in CHECKS.items() if table.get(i) != sev}
    assert not wrong
