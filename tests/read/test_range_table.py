"""Warm object reads take their references' rows from a table of the chunks' fragment
ranges (``PointReads.range_table``): the first read of a chunk parses only the fragments
it needs, a later one fills the table from the full, checked parse; the rows it gives are
those of the full parse, and a manifest naming a fragment its chunk lacks is still refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from tests.read.test_needed_ranges import GOLDEN_1_5, _reader, _skeletons
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import FRAGMENT_RECORDS, LINK_FRAGMENTS, VERTEX_FRAGMENTS
from zarr_vectors.query import ObjectReader
from zarr_vectors.read import LevelReader, RangeTable

Ranges = tuple[np.ndarray, np.ndarray]


@pytest.mark.parametrize("name", ["", "skeletons_3d_swc", "meshes_3d_closed"])
def test_the_table_holds_the_full_ranges_from_the_second_ask(tmp_path: Path, name: str) -> None:
    """Fragment records (format 1.6) and counts-form blobs (1.5, two blob arrays)."""
    path = tmp_path / "s.zv" if not name else GOLDEN_1_5 / f"{name}.zarrvectors"
    if not name:
        _skeletons(path, None)
    full = _reader(path)
    chunks, _ = full.occupied_chunks(None, None)
    vertex = full.blob_ranges(VERTEX_FRAGMENTS, chunks)
    link = full.blob_ranges(LINK_FRAGMENTS, chunks)
    reader = _reader(path)  # held: its point reads refer to it weakly
    points = reader.points
    where = np.random.default_rng(3).permutation(chunks.shape[0])[: max(1, chunks.shape[0] // 2)]
    assert points.range_table(where, True) is None  # first ask: the records' needed parse
    table = points.range_table(where, True)
    assert table is not None
    assert points.range_table(where[:1], True) is table
    owners = full.fragment_owners(chunks) if full.records else None  # format 1.6
    _check_table(table, where, (vertex, link, owners))


def _check_table(
    table: RangeTable,
    where: np.ndarray,
    full: tuple[list[Ranges], list[Ranges], list[np.ndarray] | None],
) -> None:
    """The table's rows of every fragment of the chunks at ``where`` are the full parse's
    vertex and link ranges (and owners, unless None), by position."""
    vertex, link, owners = full
    for p in where.tolist():
        fragment = np.arange(vertex[p][0].shape[0], dtype=np.int64)
        found, bad = table.rows_of(np.full(fragment.shape[0], p), fragment)
        assert bad == -1
        for k, want in enumerate((*vertex[p], *link[p])):
            np.testing.assert_array_equal(found[k], want)
        assert table.link_rows[p] == link[p][1].sum()
        if owners is not None:
            np.testing.assert_array_equal(table.owner[table.first[p] + fragment], owners[p])


def test_rows_of_names_the_first_missing_fragment() -> None:
    table = RangeTable.empty(3)
    ranges = [(np.array([0, 2]), np.array([2, 1])), (np.array([0]), np.array([4]))]
    table.add(np.array([2, 0]), ranges, ranges)
    found, bad = table.rows_of(np.array([0, 2, 2]), np.array([0, 1, 0]))
    assert bad == -1
    assert found.tolist() == [[0, 2, 0], [4, 1, 2], [0, 2, 0], [4, 1, 2]]
    assert table.rows_of(np.array([2, 0, 2]), np.array([1, 1, -1]))[1] == 1


def test_warm_reads_equal_the_first_and_refuse_a_missing_fragment(tmp_path: Path) -> None:
    _skeletons(tmp_path / "s.zv", None)
    box = (np.full(3, 4.0), np.full(3, 14.0))
    expected = zv.open(tmp_path / "s.zv").query(box)
    store = zv.open(tmp_path / "s.zv")
    for _ in range(4):  # the third and later reads take the table
        got = store.query(box)
        np.testing.assert_array_equal(got.positions, expected.positions)
        np.testing.assert_array_equal(got.edges, expected.edges)
        np.testing.assert_array_equal(got.object_ids, expected.object_ids)
    reader = _reader(tmp_path / "s.zv")
    where = np.arange(reader.occupied_chunks(None, None)[0].shape[0])
    reader.points.range_table(where, True)
    table = reader.points.range_table(where, True)
    assert table is not None
    table.count[:] = 0  # every manifest now names a fragment its chunk lacks
    objects = ObjectReader(reader)
    with pytest.raises(CorruptChunkError, match="a manifest names fragment"):
        objects.read(np.array([0, 5]))


def _read_every_object(reader: LevelReader) -> np.ndarray:
    """Read every object once (the first ask of the table: its records are then held),
    and return the positions of every occupied chunk."""
    ObjectReader(reader).read(np.arange(reader.check_object_count()))
    return np.arange(reader.occupied_chunks(None, None)[0].shape[0])


def test_held_records_fill_the_table_as_the_full_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a read holds the chunks' records, the table is filled from them by one kernel
    call (not the per-chunk lists of ``fragment_ranges``), with the full parse's ranges,
    link rows and owners."""
    _skeletons(tmp_path / "s.zv", None)
    full = _reader(tmp_path / "s.zv")
    chunks, _ = full.occupied_chunks(None, None)
    vertex = full.blob_ranges(VERTEX_FRAGMENTS, chunks)
    link = full.blob_ranges(LINK_FRAGMENTS, chunks)
    owners = full.fragment_owners(chunks)
    reader = _reader(tmp_path / "s.zv")
    where = _read_every_object(reader)
    assert not reader.held.missing(FRAGMENT_RECORDS, [tuple(c) for c in chunks.tolist()])

    def parsed(*args: object, **kwargs: object) -> None:
        raise AssertionError("the held records were parsed chunk by chunk")

    monkeypatch.setattr(reader, "fragment_ranges", parsed)
    table = reader.points.range_table(where, True)
    assert table is not None
    _check_table(table, where, (vertex, link, owners))


@pytest.mark.parametrize("damage", ["record", "rows"])
def test_damaged_held_records_are_refused_as_before(tmp_path: Path, damage: str) -> None:
    """A held record the kernel refuses, or whose fragments do not cover its chunk's rows,
    goes to the per-chunk parse, which names the fault."""
    _skeletons(tmp_path / "s.zv", None)
    reader = _reader(tmp_path / "s.zv")
    where = _read_every_object(reader)
    chunk = tuple(int(c) for c in reader.occupied_chunks(None, None)[0][0])
    blob = reader.held.get(FRAGMENT_RECORDS, chunk)
    reader._ranges.clear()  # the lists parsed so far: parsed again, from the damaged blob
    if damage == "record":
        blob.buffer[blob.begin] ^= 0xFF  # the magic
        match = "bad magic"
    else:
        reader.occupied_chunks(None, None)[1][0] += 1  # vertex_counts says one row more
        reader._checked_ranges.clear()
        match = "fragment index covers"
    with pytest.raises(CorruptChunkError, match=match):
        reader.points.range_table(where, True)
