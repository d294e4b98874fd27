"""Validation of stores with several spatial chunks per shard (spec §9.0.1, format 1.1).

A valid sharded store of every kind validates at level 4; each damage below, specific to
shared shards, makes its check id fire.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import google_crc32c
import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout, shard_key
from zarr_vectors.validate import CHECKS, validate

SHARD = (2, 2, 2)
SHARDED_IDS = frozenset({"L2.shard_version"})
"""Check ids whose only corruption case is here (the corruption corpus counts them)."""


def sharded_points() -> MemoryStore:
    """A point store with 2 x 2 x 2 chunks per shard and a few empty chunks."""
    store = MemoryStore()
    rng = np.random.default_rng(3)
    xyz = rng.uniform(0, 40, (300, 3)).astype(np.float32)
    xyz = xyz[~((xyz[:, 0] >= 20) & (xyz[:, 0] < 30) & (xyz[:, 1] >= 10) & (xyz[:, 1] < 20))]
    options = zv.WriteOptions(rows_per_block=16, shard_chunks=SHARD)
    zv.write_points(store, xyz, chunk_shape=10.0, bin_shape=5.0, options=options)
    return store


def _layout(store: MemoryStore, path: str) -> RowLayout:
    meta = StoreIO(store).read_json(f"{path}/zarr.json")
    layout = RowLayout.from_array_metadata(meta, 3, path, placed=True)
    assert layout is not None
    return layout


def _shard(store: MemoryStore, path: str, g: tuple[int, ...]) -> tuple[str, bytes]:
    layout = _layout(store, path)
    key = shard_key(path, layout.shard_of(g), len(layout.row_shape))
    return key, s.get(store, key)


def _empty_in_occupied_shard(store: MemoryStore) -> tuple[int, ...]:
    """An empty chunk (20..30, 10..20, *) whose shard holds occupied chunks."""
    occupied = {g for g, _ in s.occupied(store)}
    empty = (2, 1, 0)
    assert empty not in occupied
    assert (2, 0, 0) in occupied
    return empty


def declare_1_0(store: MemoryStore) -> None:
    s.declare_older_version(store, "1.0")


def mixed_shard_chunks(store: MemoryStore) -> None:
    def change(doc: dict[str, Any]) -> None:
        doc["chunk_grid"]["configuration"]["chunk_shape"][:3] = [1, 1, 1]

    s.edit_array(store, "0/vertex_fragments", change)


def _rewrite_index(store: MemoryStore, key: str, raw: bytes, index: np.ndarray) -> None:
    """Store the shard ``raw`` at ``key`` with ``index`` (and a valid CRC32C) as its index."""
    layout = _layout(store, key.split("/c/")[0])
    table = np.ascontiguousarray(index, dtype="<u8").tobytes()
    body = raw[: len(raw) - layout.index_nbytes]  # blocks and place record
    s.put(store, key, body + table + google_crc32c.value(table).to_bytes(4, "little"))


def blocks_of_an_empty_chunk(store: MemoryStore) -> None:
    """Give an empty chunk of an occupied shard the row blocks of its neighbour."""
    empty = _empty_in_occupied_shard(store)
    layout = _layout(store, "0/vertices")
    key, raw = _shard(store, "0/vertices", empty)
    index = layout.decode_index(raw, key).copy()
    index[layout.local_chunk(empty) * layout.n_blocks] = index[
        layout.local_chunk((2, 0, 0)) * layout.n_blocks
    ]
    _rewrite_index(store, key, raw, index)


def shard_of_empty_chunks(store: MemoryStore) -> None:
    """Store a shard where every chunk is empty (a copy of an occupied one, moved)."""
    key, raw = _shard(store, "0/vertices", (0, 0, 0))
    s.put(store, key.replace("/c/0/0/0/", "/c/1/1/5/"), raw)


def missing_block(store: MemoryStore) -> None:
    """Mark the first row block of the chunk (1, 1, 1) missing."""
    layout = _layout(store, "0/vertices")
    key, raw = _shard(store, "0/vertices", (1, 1, 1))
    index = layout.decode_index(raw, key).copy()
    index[layout.local_chunk((1, 1, 1)) * layout.n_blocks] = 2**64 - 1
    _rewrite_index(store, key, raw, index)


def block_outside(store: MemoryStore) -> None:
    """Point the last stored row block of a shard past the shard's data."""
    layout = _layout(store, "0/vertices")
    key, raw = _shard(store, "0/vertices", (1, 1, 1))
    index = layout.decode_index(raw, key).copy()
    stored = np.flatnonzero(index[:, 0] != 2**64 - 1)
    index[stored[-1], 0] = len(raw)
    _rewrite_index(store, key, raw, index)


def flip_block_byte(store: MemoryStore) -> None:
    """Damage a byte of a row block of a chunk that is not the first of its shard."""
    layout = _layout(store, "0/vertices")
    key, raw = _shard(store, "0/vertices", (1, 1, 1))
    index = layout.decode_index(raw, key)
    entry = index[layout.local_chunk((1, 1, 1)) * layout.n_blocks]
    damaged = bytearray(raw)
    damaged[int(entry[0]) + 3] ^= 0xFF
    s.put(store, key, bytes(damaged))


CASES: list[tuple[str, Callable[[MemoryStore], Any], int]] = [
    ("L2.shard_version", declare_1_0, 2),
    ("L2.sharding_layout", mixed_shard_chunks, 2),
    ("L3.empty_chunk_clean", blocks_of_an_empty_chunk, 3),
    ("L3.empty_chunk_clean", shard_of_empty_chunks, 3),
    ("L3.shard_rows_present", missing_block, 3),
    ("L3.shard_index", block_outside, 3),
    ("L3.shard_index", flip_block_byte, 3),
]


def test_the_valid_sharded_store_is_valid() -> None:
    report = validate(sharded_points(), level=4)
    assert report.ok, report.problems
    assert not report.problems


@pytest.mark.parametrize(("check_id", "damage", "level"), CASES)
def test_damage_is_reported(
    check_id: str, damage: Callable[[MemoryStore], Any], level: int
) -> None:
    store = sharded_points()
    damage(store)
    report = validate(store, level=level)
    assert check_id in report.ids(), report.summary()
    assert CHECKS[check_id] != "error" or not report.ok
