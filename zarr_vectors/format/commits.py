"""The ``commit`` root key: which commit of a store its root metadata records (spec §3.1).

Every commit of a store (a write, an append, a streaming or parallel write) writes a new
``{"serial": n, "id": "<32 hex digits>"}``: ``serial`` counts the commits since the store was
first written (an append adds one to its base's; a write that replaces a store starts again
at 1), ``id`` is a random UUID4, so no two commits write the same root ``zarr.json``. Readers
tell versions apart by those bytes (spec §12.4); a store without the key is valid.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

__all__ = ["COMMIT_KEY", "commit_problem", "next_commit"]

COMMIT_KEY = "commit"
_ID = re.compile(r"[0-9a-f]{32}")


def _serial(record: Any) -> int | None:
    serial = record.get("serial") if isinstance(record, dict) else None
    if isinstance(serial, int) and not isinstance(serial, bool) and serial >= 1:
        return serial
    return None


def next_commit(previous: Any) -> dict[str, Any]:
    """The ``commit`` record of a commit whose base recorded ``previous`` (None: none)."""
    return {"serial": (_serial(previous) or 0) + 1, "id": uuid.uuid4().hex}


def commit_problem(record: Any) -> str | None:
    """What is wrong with a ``commit`` record, or None when it is valid."""
    if (
        not isinstance(record, dict)
        or set(record) != {"serial", "id"}
        or _serial(record) is None
        or not isinstance(record["id"], str)
        or not _ID.fullmatch(record["id"])
    ):
        return (
            "commit must be {'serial': integer >= 1, 'id': 32 lowercase hex digits}, "
            f"got {record!r}"
        )
    return None
