"""The damages of the data-file corpus, as data: one table, each entry a function of a file.

A damage changes one stored file of a store (a chunk or shard file of an array, or a
document that is not a ``zarr.json``) and returns False when it does not apply to that file
(a bit flip of an empty file, a duplicate where the array's grid has no empty key). Swapped
files and metadata edits are separate corpora; add more damages by adding entries.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

JUNK = bytes(range(0xA5, 0xA5 + 23))
"""What ``junk_appended`` appends (23 bytes, none of them zero)."""


Changes = dict[str, bytes | None]
"""New contents by key (None: delete the key)."""


@dataclass(frozen=True)
class Damage:
    """One way of damaging one file: ``changes(root, key)``, the keys to write (None: not
    applicable to this file)."""

    name: str
    changes: Callable[[Path, str], Changes | None]


def _flip(where: Callable[[int], int]) -> Callable[[Path, str], Changes | None]:
    """Flip bit 2 of the byte at ``where(len)``."""

    def changes(root: Path, key: str) -> Changes | None:
        raw = bytearray((root / key).read_bytes())
        if not raw:
            return None
        raw[min(max(where(len(raw)), 0), len(raw) - 1)] ^= 0x04
        return {key: bytes(raw)}

    return changes


def _truncate(keep: Callable[[int], int]) -> Callable[[Path, str], Changes | None]:
    def changes(root: Path, key: str) -> Changes | None:
        raw = (root / key).read_bytes()
        return {key: raw[: keep(len(raw))]} if raw else None

    return changes


def _zero_fill(root: Path, key: str) -> Changes:
    return {key: bytes((root / key).stat().st_size)}


def _junk_appended(root: Path, key: str) -> Changes:
    return {key: (root / key).read_bytes() + JUNK}


def _deleted(root: Path, key: str) -> Changes:
    return {key: None}


def chunk_grid_keys(root: Path, array: str) -> list[str] | None:
    """Keys of the first 4096 stored-object positions of ``array`` (its outer chunk grid,
    default key encoding), or None when ``array`` is not an array with ``/c/`` keys."""
    meta_file = root / array / "zarr.json"
    if not meta_file.is_file():
        return None
    meta = json.loads(meta_file.read_text())
    if meta.get("node_type") != "array":
        return None
    outer = meta["chunk_grid"]["configuration"]["chunk_shape"]
    grid = [max(1, math.ceil(s / c)) for s, c in zip(meta["shape"], outer, strict=True)]
    cells = itertools.islice(itertools.product(*(range(g) for g in grid)), 4096)
    return [f"{array}/c/" + "/".join(str(i) for i in cell) for cell in cells]


def _duplicated(root: Path, key: str) -> Changes | None:
    """Copy the file onto the first key of its array where nothing is stored."""
    if "/c/" not in key:
        return None
    keys = chunk_grid_keys(root, key.split("/c/")[0]) or []
    empty = next((k for k in keys if not (root / k).exists()), None)
    return None if empty is None else {empty: (root / key).read_bytes()}


DAMAGES: list[Damage] = [
    Damage("flip_start", _flip(lambda n: 0)),
    Damage("flip_middle", _flip(lambda n: n // 2)),
    Damage("flip_index", _flip(lambda n: n - 12)),  # a shard index entry (before its crc)
    Damage("flip_last", _flip(lambda n: n - 1)),
    Damage("truncate_0", _truncate(lambda n: 0)),
    Damage("truncate_half", _truncate(lambda n: n // 2)),
    Damage("truncate_minus_1", _truncate(lambda n: n - 1)),
    Damage("zero_fill", _zero_fill),
    Damage("junk_appended", _junk_appended),
    Damage("deleted", _deleted),
    Damage("duplicated", _duplicated),
]
"""Every damage of the corpus, by name."""
