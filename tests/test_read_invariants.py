"""Cheap invariants checked on every read (issue 35, item 2).

Each test damages a store so that exactly one invariant breaks while every checksum still
passes (rows re-encoded with the project's own shard encoder, counts rewritten through
zarr), and asserts that every read path raises our error instead of answering: ``read``,
box queries (a box covering the chunk, and one cutting it, which reads by bins), region
queries, reads by id and ``to_dask``. A hypothesis property checks that undamaged stores
answer exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.helpers import sorted_rows
from tests.validate import stores as s
from tests.validate.object_stores import object_kind_store
from zarr_vectors.format.fragment_decoding import decode_dense_ranges

Read = Callable[[zv.VectorStore], Any]


def _chunk_box(store: MemoryStore, g: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The box ``[c·C, (c+1)·C)`` of zarr chunk ``g``."""
    grid = zv.open(store)._reader.grid
    chunk = np.asarray(g, dtype=np.int64)
    return grid.chunk_lower(chunk), grid.chunk_upper(chunk)


def _point_reads(store: MemoryStore, g: tuple[int, ...]) -> dict[str, Read]:
    """Every read path of a point cloud that reads chunk ``g``: whole, covered by a box,
    cut by a box (read by bins), by a ball (the general region path), and lazily."""
    lo, hi = _chunk_box(store, g)
    inner = (lo + 0.01, hi - 0.01)
    center, radius = (lo + hi) / 2, 0.45 * float(np.min(hi - lo))  # meets every bin
    return {
        "read": lambda v: v.read(),
        "box covering the chunk": lambda v: v.query((lo, hi)),
        "box cutting the chunk": lambda v: v.query(inner),
        "everything": lambda v: v.query(([-np.inf] * 3, [np.inf] * 3)),
        "sphere": lambda v: v.query(zv.ball(center, radius)),
        "to_dask": lambda v: v.to_dask(inner).compute(scheduler="sync"),
        "to_dask whole": lambda v: v.to_dask().compute(scheduler="sync"),
    }


def _assert_every_read_raises(
    store: MemoryStore, reads: dict[str, Read], match: str, skip: tuple[str, ...] = ()
) -> None:
    for name, read in reads.items():
        if name in skip:
            continue
        with pytest.raises(zv.CorruptChunkError, match=match):
            read(zv.open(store))  # a fresh reader: nothing cached from another path


def test_vertex_moved_out_of_its_chunk_is_refused_by_every_read_path() -> None:
    store = s.point_store()
    g, _ = s.first_chunk(store)
    s.edit_rows(store, "0/vertices", lambda rows: rows.__setitem__((0, 0), rows[0, 0] + s.CHUNK))
    _assert_every_read_raises(store, _point_reads(store, g), "does not lie in its chunk")


def test_vertex_moved_to_another_bin_of_its_chunk_is_refused_by_reads_by_bin() -> None:
    """Rows in their chunk but not in their bins: reads that rely on bins refuse them;
    a whole read does not rely on bins and returns the chunk's rows as stored."""
    store = s.point_store()
    g, n = s.first_chunk(store)
    sizes = s.get_blob(store, g)[1]
    assert np.count_nonzero(sizes) > 1

    def swap(rows: np.ndarray) -> None:
        rows[[0, n - 1]] = rows[[n - 1, 0]]  # the first and last rows lie in other bins

    s.edit_rows(store, "0/vertices", swap)
    reads = _point_reads(store, g)
    by_bins = ("box cutting the chunk", "sphere", "to_dask")
    _assert_every_read_raises(store, {k: reads[k] for k in by_bins}, "its bin")
    assert zv.open(store).read().positions.shape[0] == sum(c for _, c in s.occupied(store))


def test_chunk_file_swapped_with_another_chunks_is_refused_by_every_read_path() -> None:
    store = s.point_store()
    (a, _), (b, _) = s.occupied(store)[:2]
    moved = s.get(store, s.shard_key(store, "0/vertices", b))
    s.put(store, s.shard_key(store, "0/vertices", a), moved)
    _assert_every_read_raises(store, _point_reads(store, a), "chunk")


def test_vertex_counts_edited_down_is_refused_by_every_read_path() -> None:
    """One row block fewer than stored: a whole read used to return the first rows only."""
    store = s.point_store()
    g, n = s.first_chunk(store)
    assert n > s.ROWS_PER_BLOCK
    s.set_count_and_total(store, g, n - s.ROWS_PER_BLOCK)
    # a box cutting the chunk reads its fragment index first, which disagrees (its own error)
    reads = _point_reads(store, g)
    _assert_every_read_raises(
        store, reads, "need only blocks", skip=("box cutting the chunk", "sphere", "to_dask")
    )
    for name in ("box cutting the chunk", "sphere", "to_dask"):
        with pytest.raises(zv.CorruptChunkError):
            reads[name](zv.open(store))


def test_vertex_counts_edited_up_into_the_padding_is_refused_by_every_read_path() -> None:
    """A count one row higher needs the same row blocks: the padding row it adds (the fill
    value, 0.0) lies outside the chunk, so reads refuse it instead of returning it."""
    store = s.point_store()
    g, n = s.first_chunk(store)
    lo, hi = _chunk_box(store, g)
    assert n % s.ROWS_PER_BLOCK
    assert not np.all((lo <= 0.0) & (hi > 0.0))
    s.set_count_and_total(store, g, n + 1)
    reads = _point_reads(store, g)
    _assert_every_read_raises(
        store,
        {k: reads[k] for k in ("read", "box covering the chunk", "everything", "to_dask whole")},
        "does not lie in its chunk",
    )
    for name in ("box cutting the chunk", "sphere", "to_dask"):
        with pytest.raises(zv.CorruptChunkError):  # the fragment index disagrees first
            reads[name](zv.open(store))


@pytest.mark.parametrize("kind", ["polyline", "graph", "mesh", "skeleton"])
def test_object_vertex_moved_out_of_its_chunk_is_refused_by_every_read_path(kind: str) -> None:
    store = object_kind_store(kind)
    g, _ = s.first_chunk(store)
    ndim = 3

    def move(rows: np.ndarray) -> None:
        rows[0, 0] += 4.0  # object_stores.CHUNK

    s.edit_rows(store, "0/vertices", move)
    lo, hi = _chunk_box(store, g)
    reads: dict[str, Read] = {
        "read": lambda v: v.read(),
        "by id": lambda v: v.read_objects(np.arange(v.object_count or 0)),
        "box": lambda v: v.query((lo + 0.01, hi - 0.01)),
        "everything": lambda v: v.query(([-np.inf] * ndim, [np.inf] * ndim)),
    }
    _assert_every_read_raises(store, reads, "does not lie in its chunk")


def test_link_entry_out_of_range_is_refused_by_reads_of_objects() -> None:
    """Entries of ``links/0`` name chunk rows ``< n_g`` (spec §9.6)."""
    store = object_kind_store("graph")
    g, n = next((g, n) for g, n in s.occupied(store) if _link_rows(store, g))
    rows = s.get_rows(store, "0/links/0", g, _link_rows(store, g))
    rows[0, 1] = n + 3
    s.put_rows(store, "0/links/0", g, rows)
    for read in (lambda v: v.read(), lambda v: v.read_objects(np.arange(v.object_count or 0))):
        with pytest.raises(zv.CorruptChunkError, match="link"):
            read(zv.open(store))


def _link_rows(store: MemoryStore, g: tuple[int, ...]) -> int:
    """``E_g``: the row extent of chunk ``g``'s link fragments (its fragment record in a
    store of format 1.6, else its ``link_fragments`` blob)."""
    if s.has_records(store):
        return int(s.get_record(store, g).link_counts.sum())
    starts, sizes = decode_dense_ranges(s.get_blob_bytes(store, "0/link_fragments", g))
    return int((starts + sizes).max(initial=0))


# -- undamaged stores answer as before ---------------------------------------------------------

STEP = 0.25  # coordinates on a grid that chunk and bin edges fall on


@st.composite
def _point_clouds(draw: st.DrawFn) -> tuple[np.ndarray, float, float, np.dtype[Any]]:
    ndim = draw(st.integers(2, 3))
    n = draw(st.integers(1, 120))
    steps = draw(
        st.lists(
            st.lists(st.integers(-12, 12), min_size=ndim, max_size=ndim), min_size=n, max_size=n
        )
    )
    dtype = np.dtype(draw(st.sampled_from(["float32", "float64"])))
    chunk = draw(st.sampled_from([1.0, 1.5, 2.0]))
    bin_ = chunk / draw(st.sampled_from([1, 2, 3]))
    return np.asarray(steps, dtype=np.float64).astype(dtype) * STEP, chunk, bin_, dtype


@settings(max_examples=25, deadline=None)
@given(_point_clouds(), st.data())
def test_undamaged_point_clouds_answer_every_read_exactly(
    cloud: tuple, data: st.DataObject
) -> None:
    points, chunk, bin_, _ = cloud
    store = MemoryStore()
    zv.write_points(
        store, points, chunk_shape=chunk, bin_shape=bin_, options=zv.WriteOptions(rows_per_block=4)
    )
    opened = zv.open(store)
    assert np.array_equal(sorted_rows(opened.read().positions), sorted_rows(points))
    ndim = points.shape[1]
    lo = np.asarray(data.draw(st.lists(st.integers(-14, 14), min_size=ndim, max_size=ndim))) * STEP
    size = np.asarray(data.draw(st.lists(st.integers(0, 16), min_size=ndim, max_size=ndim))) * STEP
    wide = points.astype(np.float64)
    inside = np.all((lo <= wide) & (wide < lo + size), axis=1)
    found = opened.query((lo, lo + size)).positions
    assert np.array_equal(sorted_rows(found), sorted_rows(points[inside]))
    radius = float(size.max())
    squares = (wide - lo) ** 2
    total = squares[:, 0].copy()
    for d in range(1, ndim):
        total += squares[:, d]  # summed in axis order, as spec'd
    near = total <= radius**2
    ball = opened.query(zv.ball(lo, radius)).positions
    assert ball.shape[0] == int(near.sum())


# -- manifests agree with the chunks and fragment indexes (spec §7.3 "in context") -----------


def _edit_first_block(store: MemoryStore, at: int, value: int) -> None:
    """Overwrite the int64 at byte ``at`` of object 0's first manifest block (``at`` 0 is
    its first grid index; ``8 * D + 1`` its first fragment or start)."""
    data = zarr.open_array(store, path="0/object_index/data", mode="r+")
    raw = np.asarray(data[...]).copy()
    raw[4 + at : 12 + at] = np.frombuffer(np.int64(value).tobytes(), dtype=np.uint8)
    data[...] = raw
    s.retable(store, "0/object_index/data")


@pytest.mark.parametrize(
    ("at", "value", "match"),
    [
        (0, 10**6, "outside the grid"),
        (0, -1, "outside the grid"),
        (3 * 8 + 1, 10**6, "fragment"),
    ],
    ids=["grid index past the grid", "negative grid index", "fragment past F"],
)
def test_manifest_naming_what_the_chunks_do_not_hold_is_refused(
    at: int, value: int, match: str
) -> None:
    store = object_kind_store("graph")
    _edit_first_block(store, at, value)
    for read in (lambda v: v.read(), lambda v: v.read_objects([0])):
        with pytest.raises(zv.CorruptChunkError, match=match):
            read(zv.open(store))


def test_manifest_naming_an_empty_chunk_is_refused() -> None:
    store = object_kind_store("graph")
    counts = np.asarray(zarr.open_array(store, path="0/vertex_counts", mode="r")[...])
    empty = np.argwhere(counts == 0)
    assert empty.shape[0]
    data = zarr.open_array(store, path="0/object_index/data", mode="r+")
    raw = np.asarray(data[...]).copy()
    raw[4 : 4 + 24] = np.frombuffer(empty[0].astype("<i8").tobytes(), dtype=np.uint8)
    data[...] = raw
    s.retable(store, "0/object_index/data")
    with pytest.raises(zv.CorruptChunkError, match="empty chunk"):
        zv.open(store).read_objects([0])
