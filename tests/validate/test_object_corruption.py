"""Corruption corpus of the L3 object checks: one damage per check id (spec §11.4).

Every case writes a valid object store with the library (``object_stores``), damages it in
one way and asserts that ``validate(level=3)`` reports the id (and is not ok for errors).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from tests.validate.object_stores import KINDS, object_kind_store
from zarr_vectors.format.fragment_counts import encode_counts_ragged
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.format.fragment_encoding import encode_dense_ranges
from zarr_vectors.format.manifest import decode_object_index_bulk
from zarr_vectors.validate import CHECKS, validate

Store = MemoryStore
Chunk = tuple[int, ...]


@dataclass(frozen=True)
class ObjectCase:
    """One corruption of an object store."""

    check_id: str
    kind: str
    damage: Callable[[Store], Any]


# -- access to the internals -----------------------------------------------------------------


def global_array(st: Store, path: str) -> np.ndarray:
    return np.asarray(zarr.open_array(st, path=path, mode="r")[...])


def set_global(st: Store, path: str, values: np.ndarray) -> None:
    arr = zarr.open_array(st, path=path, mode="r+")
    if arr.shape != values.shape:
        arr.resize(values.shape)
    arr[...] = values


def link_blob(st: Store, g: Chunk) -> tuple[np.ndarray, np.ndarray]:
    if s.has_records(st):
        return s.get_record(st, g).link_ranges()
    return decode_dense_ranges(s.get_blob_bytes(st, "0/link_fragments", g))


def links(st: Store, g: Chunk) -> np.ndarray:
    starts, counts = link_blob(st, g)
    e = int((starts + counts).max(initial=0))
    if not e:  # no link row: no links/0 shard (spec §9.6)
        return np.zeros((0, 2), np.int64)
    return s.get_rows(st, "0/links/0", g, e)


def put_links(st: Store, g: Chunk, rows: np.ndarray) -> None:
    s.put_rows(st, "0/links/0", g, rows)


def chunk_with_links(st: Store, at_least: int = 2) -> Chunk:
    for g, _ in s.occupied(st):
        if links(st, g).shape[0] >= at_least:
            return g
    raise AssertionError("no chunk with links")


def edit_links(change: Callable[[np.ndarray, Store, Chunk], Any]) -> Callable[[Store], None]:
    def apply(st: Store) -> None:
        g = chunk_with_links(st)
        rows = links(st, g)
        change(rows, st, g)
        put_links(st, g, rows)

    return apply


def refs(st: Store) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = global_array(st, "0/object_index/data")
    offsets = global_array(st, "0/object_index/offsets")
    return decode_object_index_bulk(data, offsets, np.arange(offsets.shape[0]), 3)


def owners(st: Store, g: Chunk, n: int) -> np.ndarray:
    starts, counts = s.get_blob(st, g)
    if s.has_records(st):
        return np.repeat(s.get_record(st, g).fragment_objects(), counts)
    column = s.get_rows(st, "0/fragment_attributes/object_id", g, starts.shape[0])
    return np.repeat(column.reshape(-1), counts)


def manifest_bytes(offset_in_manifest: int, raw: bytes) -> Callable[[Store], None]:
    """Overwrite bytes of manifest 0 (which starts at byte 0 of ``object_index/data``)."""

    def apply(st: Store) -> None:
        data = global_array(st, "0/object_index/data").copy()
        data[offset_in_manifest : offset_in_manifest + len(raw)] = np.frombuffer(raw, np.uint8)
        set_global(st, "0/object_index/data", data)

    return apply


def manifest_int64(offset_in_manifest: int, value: int) -> Callable[[Store], None]:
    return manifest_bytes(offset_in_manifest, np.int64(value).tobytes())


_FIRST_FRAGMENT = 4 + 8 * 3 + 1
"""Byte of manifest 0 where its first block's fragment (mode 0) or start (mode 1) begins."""


# -- damages ---------------------------------------------------------------------------------


def extra_link_fragment(st: Store) -> None:
    g = s.occupied(st)[0][0]
    _, counts = link_blob(st, g)
    more = np.append(counts, 0)  # counts form (format 1.5): fits the blob array's block
    (blob,) = encode_counts_ragged(more, np.array([0, more.shape[0]]))
    s.put_rows(st, "0/link_fragments", g, blob)


def swap_manifests(st: Store) -> None:
    data = global_array(st, "0/object_index/data")
    offsets = global_array(st, "0/object_index/offsets")
    ends = np.append(offsets[1:], data.shape[0])
    parts = [data[a:b] for a, b in zip(offsets, ends, strict=True)]
    parts[0], parts[1] = parts[1], parts[0]
    set_global(st, "0/object_index/data", np.concatenate(parts))
    sizes = np.array([p.shape[0] for p in parts])
    set_global(st, "0/object_index/offsets", np.concatenate([[0], np.cumsum(sizes)[:-1]]))


def merge_runs_in_one_bin(st: Store) -> None:
    """Move the rows of a fragment onto the first vertex of the fragment listed before it."""
    obj, chunk, frag = refs(st)
    same = (obj[1:] == obj[:-1]) & np.all(chunk[1:] == chunk[:-1], axis=1)
    i = int(np.flatnonzero(same)[0])
    g = tuple(int(c) for c in chunk[i])
    n = dict(s.occupied(st))[g]
    starts, counts = s.get_blob(st, g)
    rows = s.get_rows(st, "0/vertices", g, n)
    a, b = int(frag[i]), int(frag[i + 1])
    rows[starts[b] : starts[b] + counts[b]] = rows[starts[a]]
    s.put_rows(st, "0/vertices", g, rows)


def non_canonical_first_block(st: Store) -> None:
    """Re-encode manifest 0 with its first block in mode 2 (explicit) instead of 0 or 1."""
    data = global_array(st, "0/object_index/data")
    offsets = global_array(st, "0/object_index/offsets")
    obj, chunk, frag = refs(st)
    mine = obj == 0
    first = chunk[mine][0]
    block_len = int(np.argmax(~np.all(chunk[mine] == first, axis=1))) or int(mine.sum())
    frags = frag[mine][:block_len]
    mode = data[offsets[0] + 4 + 24]
    old_len = 4 + 24 + 1 + (8 if mode == 0 else 16)
    explicit = (
        first.astype("<i8").tobytes()
        + bytes([2])
        + np.uint32(block_len).tobytes()
        + frags.astype("<i8").tobytes()
    )
    head = data[: offsets[0] + 4]
    rest = data[offsets[0] + old_len :]
    new = np.concatenate([head, np.frombuffer(explicit, np.uint8), rest])
    set_global(st, "0/object_index/data", new)
    shift = new.shape[0] - data.shape[0]
    set_global(st, "0/object_index/offsets", np.concatenate([[0], offsets[1:] + shift]))


def empty_manifest(st: Store) -> None:
    data = global_array(st, "0/object_index/data")
    offsets = global_array(st, "0/object_index/offsets")
    start = int(offsets[-1])
    set_global(st, "0/object_index/data", np.concatenate([data[:start], np.zeros(4, np.uint8)]))


def wrong_fragment_owner(st: Store) -> None:
    g = s.occupied(st)[0][0]
    if s.has_records(st):  # the last fragment's owner + 1 keeps the runs ascending
        record = s.get_record(st, g)
        owners = record.fragment_objects().copy()
        owners[-1] += 1
        s.put_record(st, g, record.vertex_counts, record.link_counts, owners)
        return
    starts, _ = s.get_blob(st, g)
    column = s.get_rows(st, "0/fragment_attributes/object_id", g, starts.shape[0])
    column[0] += 1
    s.put_rows(st, "0/fragment_attributes/object_id", g, column)


def nan_object_attribute(st: Store) -> None:
    values = global_array(st, "0/object_attributes/weight").copy()
    values[0] = np.nan
    set_global(st, "0/object_attributes/weight", values)


def unsorted_group(st: Store) -> None:
    table = global_array(st, "0/groupings").copy()
    table[0, :2] = [1, 0]
    set_global(st, "0/groupings", table)


def too_many_link_rows(st: Store) -> None:
    g = chunk_with_links(st)
    starts, counts = link_blob(st, g)
    counts = counts.copy()
    counts[-1] += s.layout(st, "0/links/0").n_max
    if s.has_records(st):
        record = s.get_record(st, g)
        s.put_record(st, g, record.vertex_counts, counts, record.fragment_objects())
        return
    blob = encode_dense_ranges(starts, counts)
    s.put_rows(st, "0/link_fragments", g, np.frombuffer(blob, dtype=np.uint8))


def link_to_other_object(st: Store) -> None:
    for g, n in s.occupied(st):
        own = owners(st, g, n)
        rows = links(st, g)
        if len(np.unique(own)) < 2 or not rows.shape[0]:
            continue
        other = int(np.flatnonzero(own != own[rows[0, 0]])[0])
        rows[0, 1] = other
        put_links(st, g, rows)
        return
    raise AssertionError("no chunk holds two objects")


def reroot(st: Store) -> None:
    """A root record names a vertex that has a parent already."""
    for g, _ in s.occupied(st):
        rows = links(st, g)
        root = np.flatnonzero(rows[:, 1] == -1)
        child = np.flatnonzero(rows[:, 1] >= 0)
        if root.size and child.size:
            rows[root[0], 0] = rows[child[0], 0]
            put_links(st, g, rows)
            return
    raise AssertionError("no chunk with a root and a child")


def edit_ccl(change: Callable[[np.ndarray], Any]) -> Callable[[Store], None]:
    def apply(st: Store) -> None:
        table = global_array(st, "0/cross_chunk_links").copy()
        change(table)
        set_global(st, "0/cross_chunk_links", table)

    return apply


def same_chunk_partner(table: np.ndarray, st: Store) -> None:
    n_max = s.layout(st, "0/vertices").n_max
    table[0, 1] = (table[0, 0] // n_max) * n_max + (0 if table[0, 0] % n_max else 1)


def _swap_rows(rows: np.ndarray, a: int, b: int) -> None:
    rows[[a, b]] = rows[[b, a]]


def _self_loop(rows: np.ndarray, st: Store, g: Chunk) -> None:
    rows[0, 1] = rows[0, 0]


CASES = [
    ObjectCase("L3.link_frag_parallel", "streamlines-1.5", extra_link_fragment),
    ObjectCase("L3.frag_object_order", "polyline", swap_manifests),
    ObjectCase("L3.frag_maximal_runs", "polyline", merge_runs_in_one_bin),
    ObjectCase(
        "L3.object_index_offsets",
        "polyline",
        lambda st: set_global(
            st,
            "0/object_index/offsets",
            global_array(st, "0/object_index/offsets") + np.array([1, 0, 0, 0, 0]),
        ),
    ),
    ObjectCase("L3.manifest_decodes", "polyline", manifest_bytes(4 + 24, bytes([7]))),
    ObjectCase("L3.manifest_chunks", "polyline", manifest_int64(4, 99)),
    ObjectCase("L3.manifest_fragments", "polyline", manifest_int64(_FIRST_FRAGMENT, 5000)),
    ObjectCase("L3.manifest_partition", "graph", manifest_int64(_FIRST_FRAGMENT, 1)),
    ObjectCase("L3.manifest_blocks_canonical", "polyline", non_canonical_first_block),
    ObjectCase("L3.object_empty", "graph", empty_manifest),
    ObjectCase("L3.fragment_object_id", "skeleton", wrong_fragment_owner),
    ObjectCase("L3.object_attribute_finite", "mesh", nan_object_attribute),
    ObjectCase("L3.groupings_members", "streamline", unsorted_group),
    ObjectCase("L3.link_rows_bound", "graph", too_many_link_rows),
    ObjectCase(
        "L3.link_entries",
        "graph",
        edit_links(lambda rows, st, g: rows.__setitem__((0, 1), 10_000)),
    ),
    ObjectCase("L3.link_anchor", "polyline", edit_links(lambda r, st, g: _swap_rows(r, 0, -1))),
    ObjectCase("L3.link_single_object", "graph", link_to_other_object),
    ObjectCase("L3.no_self_loops", "directed", edit_links(_self_loop)),
    ObjectCase(
        "L3.edge_orientation",
        "graph",
        edit_links(lambda rows, st, g: rows.__setitem__(0, rows[0, ::-1].copy())),
    ),
    ObjectCase(
        "L3.no_duplicate_links",
        "directed",
        edit_links(lambda rows, st, g: rows.__setitem__(1, rows[0].copy())),
    ),
    ObjectCase(
        "L3.no_degenerate_faces",
        "mesh",
        edit_links(lambda rows, st, g: rows.__setitem__((0, 1), rows[0, 0])),
    ),
    ObjectCase(
        "L3.no_duplicate_faces",
        "mesh",
        edit_links(lambda rows, st, g: rows.__setitem__(1, rows[0, [1, 2, 0]].copy())),
    ),
    ObjectCase(
        "L3.polyline_links",
        "streamline",
        edit_links(lambda rows, st, g: rows.__setitem__(0, rows[0, ::-1].copy())),
    ),
    ObjectCase("L3.skeleton_parent_once", "skeleton", reroot),
    ObjectCase("L3.ccl_gid_valid", "polyline", edit_ccl(lambda t: t.__setitem__((0, 1), 2**40))),
    ObjectCase(
        "L3.ccl_different_chunks",
        "graph",
        lambda st: edit_ccl(lambda t: same_chunk_partner(t, st))(st),
    ),
    ObjectCase("L3.ccl_sorted", "streamline", edit_ccl(lambda t: _swap_rows(t, 0, 1))),
]


def _face_chunk_store() -> Store:
    """One triangle: v0 in chunk 0, v1 and v2 in chunk 1 (x in [4, 8)); centroid in chunk 1."""
    store = MemoryStore()
    vertices = np.array([[0.5, 1, 1], [7.9, 1, 1], [7.9, 2, 1]], dtype=np.float64)
    zv.write_mesh(store, vertices, np.array([[0, 1, 2]]), chunk_shape=4.0, bin_shape=4.0)
    return store


def test_face_stored_in_the_wrong_chunk_is_reported() -> None:
    store = _face_chunk_store()
    assert validate(store, level=3).ok
    g, n = s.occupied(store)[1]
    rows = s.get_rows(store, "0/vertices", g, n)
    rows[:, 0] = 4.1  # the centroid moves to chunk 0, which holds v0: the face belongs there
    s.put_rows(store, "0/vertices", g, rows)
    report = validate(store, level=3)
    assert "L3.face_chunk" in report.ids(), report.summary()


@pytest.mark.parametrize("kind", KINDS)
def test_valid_object_stores_have_no_finding(kind: str) -> None:
    report = validate(object_kind_store(kind), level=3)
    assert not report.problems, report.summary()
    assert not report.notes


@pytest.mark.parametrize("case", CASES, ids=[c.check_id for c in CASES])
def test_object_damage_is_reported(case: ObjectCase) -> None:
    store = object_kind_store(case.kind)
    case.damage(store)
    report = validate(store, level=3)
    assert case.check_id in report.ids(), report.summary()
    if CHECKS[case.check_id] == "error":
        assert not report.ok


def test_sampled_validation_skips_checks_that_need_every_chunk() -> None:
    store = object_kind_store("polyline")
    report = validate(store, level=3, sample=2)
    assert report.ok, report.summary()
    assert any("polyline_links" in note for note in report.notes)


OBJECT_IDS = {c.check_id for c in CASES} | {"L3.face_chunk"}
"""The L3 object ids this corpus covers (used by the corpus-coverage test)."""


def test_object_attribute_checksum_failure_is_an_error() -> None:
    """A damaged object_attributes chunk fails validation, as every reader raises on it."""
    store = object_kind_store("mesh")
    key = "0/object_attributes/weight/c/0"
    damaged = bytearray(s.get(store, key))
    damaged[len(damaged) // 2] ^= 0xFF
    s.put(store, key, bytes(damaged))
    with pytest.raises(zv.CorruptChunkError):
        zv.open(store).read_objects([0])
    report = validate(store, level=3)
    assert "L3.shard_index" in report.ids(), report.summary()
    assert not report.ok
