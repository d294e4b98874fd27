"""Validation of the object-to-chunks index of point clouds with object ids (spec §9.14):
the reference point store validates; each damage below makes its check id fire, and a
reader refuses an index naming rows the level does not hold."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.geometry import stored_object_chunks
from zarr_vectors.read import LevelReader
from zarr_vectors.store.io import StoreIO
from zarr_vectors.validate import CHECKS, validate
from zarr_vectors.write import write_global

INDEX = "0/object_chunks"


def indexed_store() -> MemoryStore:
    """The reference point store of the corpus, with its object-to-chunks index."""
    store = MemoryStore()
    pts = s.points()
    zv.write_points(
        store,
        pts,
        chunk_shape=s.CHUNK,
        bin_shape=s.BIN,
        object_ids=np.arange(pts.shape[0], dtype=np.int64) // 3,
        options=zv.WriteOptions(rows_per_block=s.ROWS_PER_BLOCK),
    )
    return store


def _drop_entries(store: MemoryStore) -> None:
    io = StoreIO(store)
    io.delete_many(io.list_prefix(f"{INDEX}/entries/"))


def _wrong_count(store: MemoryStore) -> None:
    s.edit(store, f"{INDEX}/zarr.json", lambda d: d["attributes"].__setitem__("num_objects", 0))


def _old_version(store: MemoryStore) -> None:
    """Declare 1.2, with the ``.zattrs`` mirrors a 1.2 store has (so L1 passes)."""
    s.edit_root(store, lambda a: a.__setitem__("zarr_vectors_version", "1.2"))
    io = StoreIO(store)
    for group in ("", "0/"):
        attributes = json.loads(io.get(f"{group}zarr.json") or b"")["attributes"]
        io.set(f"{group}.zattrs", json.dumps(attributes).encode())


def _index_on_a_store_without_ids(store: MemoryStore) -> None:
    io = StoreIO(store)
    io.delete_many(io.list_prefix("0/attributes/object_id/"))


def _entries(store: MemoryStore) -> np.ndarray:
    io = StoreIO(store)
    root = RootMetadata.from_json(json.loads(io.get("zarr.json") or b"")["attributes"])
    index = stored_object_chunks(LevelReader(io, root, 0))
    assert index is not None
    return index.entries.copy()


def _rewrite_entries(store: MemoryStore, change: Callable[[np.ndarray], Any]) -> None:
    entries = _entries(store)
    change(entries)
    write_global(
        StoreIO(store), f"{INDEX}/entries", entries, 0, {"zv_array": "object_chunks_entries"}
    )


def _shifted_rows(store: MemoryStore) -> None:
    """A well-formed index whose first entry ends one row late (a neighbour's row)."""
    _rewrite_entries(store, lambda e: e.__setitem__((0, 2), e[0, 2] + 1))


CASES: list[tuple[str, Callable[[MemoryStore], Any]]] = [
    ("L1.object_chunks_nodes", _drop_entries),
    ("L1.object_chunks_nodes", _index_on_a_store_without_ids),
    ("L2.object_chunks_meta", _wrong_count),
    ("L2.object_chunks_meta", _old_version),
    ("L3.object_chunks_exact", _shifted_rows),
]
OBJECT_CHUNKS_IDS = frozenset(check for check, _ in CASES)
"""Check ids whose corruption cases are here (the corruption corpus counts them)."""


def test_the_reference_point_store_has_a_valid_index() -> None:
    store = indexed_store()
    assert StoreIO(store).get(f"{INDEX}/zarr.json") is not None
    report = validate(store, level=3)
    assert report.ok, report.problems
    assert set(report.checks_run) >= OBJECT_CHUNKS_IDS


@pytest.mark.parametrize(("check_id", "damage"), CASES, ids=[d.__name__ for _, d in CASES])
def test_damage_is_reported(check_id: str, damage: Callable[[MemoryStore], Any]) -> None:
    store = indexed_store()
    damage(store)
    report = validate(store, level=3)
    assert check_id in {p.check_id for p in report.problems}, report.problems
    assert CHECKS[check_id] == "error"
    assert not report.ok


def test_a_reader_refuses_an_index_naming_rows_a_chunk_does_not_hold() -> None:
    store = indexed_store()
    _rewrite_entries(store, lambda e: e.__setitem__((slice(None), 2), e[:, 2] + 10_000))
    opened = zv.open(store)
    with pytest.raises(CorruptChunkError, match="object_chunks names rows"):
        opened.read_objects(0)


def test_a_reader_refuses_an_index_naming_a_chunk_the_level_does_not_hold() -> None:
    store = indexed_store()
    reader = zv.open(store)._reader
    occupied = {tuple(c) for c in reader.occupied_chunks(None, None)[0].tolist()}
    shape = tuple(int(g) for g in reader.grid.shape)
    empty = next(
        i for i in range(int(np.prod(shape))) if tuple(np.unravel_index(i, shape)) not in occupied
    )
    _rewrite_entries(store, lambda e: e.__setitem__((slice(None), 0), empty))
    with pytest.raises(CorruptChunkError, match="object_chunks names a chunk"):
        zv.open(store).read_objects(0)
