"""Reads by id parse only the fragments they need (``LevelReader.needed_ranges``): the
same ranges as the full parse restricted to them, from records held unparsed whatever
the reads before held, and a damaged record or a wrong count still refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import FRAGMENT_RECORDS, LINK_FRAGMENTS, VERTEX_FRAGMENTS
from zarr_vectors.read import LevelReader
from zarr_vectors.update.object_sources import open_source

GOLDEN_1_5 = Path(__file__).parents[1] / "data" / "golden" / "1.5"


def _skeletons(path: Path, shard_chunks: int | None) -> None:
    rng = np.random.default_rng(7)
    steps = rng.normal(scale=1.5, size=(12, 40, 3))
    nodes = np.cumsum(steps, axis=1) + rng.uniform(0, 20, (12, 1, 3))
    parents = np.arange(-1, 479)  # a chain per skeleton
    parents[::40] = -1
    options = zv.WriteOptions(shard_chunks=shard_chunks)
    zv.write_skeletons(
        path,
        nodes.reshape(-1, 3).astype(np.float32),
        parents=parents,
        vertex_objects=np.repeat(np.arange(12), 40),
        chunk_shape=8.0,
        options=options,
        progress=False,
    )


def _reader(path: Path) -> LevelReader:
    source = open_source(path)
    return LevelReader(source.io, source.root, 0)


@pytest.mark.parametrize("shard_chunks", [None, 1])
def test_needed_ranges_are_the_full_ranges_restricted(tmp_path: Path, shard_chunks: int) -> None:
    _skeletons(tmp_path / "s.zv", shard_chunks)
    _check_restricted(tmp_path / "s.zv")


@pytest.mark.parametrize("name", ["skeletons_3d_swc", "meshes_3d_closed"])
def test_needed_ranges_of_format_1_5_are_the_full_ranges_restricted(name: str) -> None:
    """Counts-form blobs (no records): vertex and link fragments in two blob arrays."""
    _check_restricted(GOLDEN_1_5 / f"{name}.zarrvectors")


def _check_restricted(path: Path) -> None:
    full = _reader(path)
    chunks, counts = full.occupied_chunks(None, None)
    vertex = full.blob_ranges(VERTEX_FRAGMENTS, chunks)
    link = full.blob_ranges(LINK_FRAGMENTS, chunks)
    reader = _reader(path)
    rng = np.random.default_rng(3)
    for _ in range(3):  # later reads join records held from several fetches
        pick = rng.permutation(chunks.shape[0])[: rng.integers(1, chunks.shape[0] + 1)]
        per_chunk = [rng.integers(0, vertex[p][0].shape[0], rng.integers(0, 6)) for p in pick]
        bounds = np.cumsum([0, *(f.shape[0] for f in per_chunk)])
        fragment = np.concatenate(per_chunk).astype(np.int64)
        found = reader.needed_ranges(chunks[pick], counts[pick], (bounds, fragment))
        for name, ranges, got in (
            ("vertex", vertex, (found.vertex_starts, found.vertex_counts)),
            ("link", link, (found.link_starts, found.link_counts)),
        ):
            for k in range(2):
                want = np.concatenate(
                    [ranges[p][k][f] for p, f in zip(pick, per_chunk, strict=True)]
                )
                np.testing.assert_array_equal(got[k], want, err_msg=name)
        np.testing.assert_array_equal(found.vertex_rows, counts[pick])
        np.testing.assert_array_equal(found.link_rows, [link[p][1].sum() for p in pick])
        np.testing.assert_array_equal(found.fragments, [vertex[p][0].shape[0] for p in pick])
    # the records held for the partial parses serve the full parse unchanged
    for got, want in zip(reader.blob_ranges(VERTEX_FRAGMENTS, chunks), vertex, strict=True):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_by_id_reads_equal_after_any_reads_before(tmp_path: Path) -> None:
    _skeletons(tmp_path / "s.zv", None)
    expected = [zv.open(tmp_path / "s.zv").read_objects([i]) for i in range(12)]
    store = zv.open(tmp_path / "s.zv")
    store.query((np.zeros(3), np.full(3, 10.0)))  # full parses of some chunks first
    for i in (3, 0, 11, 3):
        got = store.read_objects([i])
        np.testing.assert_array_equal(got.positions, expected[i].positions)
        np.testing.assert_array_equal(got.edges, expected[i].edges)


def test_a_damaged_record_or_count_is_refused(tmp_path: Path) -> None:
    _skeletons(tmp_path / "s.zv", None)
    reader = _reader(tmp_path / "s.zv")
    chunks, counts = reader.occupied_chunks(None, None)
    need = (np.array([0, 1]), np.zeros(1, np.int64))
    reader.needed_ranges(chunks[:1], counts[:1], need)
    with pytest.raises(CorruptChunkError, match="vertex_counts says"):
        reader.needed_ranges(chunks[:1], counts[:1] + 1, need)
    with pytest.raises(CorruptChunkError, match="names fragment 9999"):
        reader.needed_ranges(chunks[:1], counts[:1], (need[0], np.array([9999])))
    key = tuple(int(c) for c in chunks[0])
    held = reader.held.get(FRAGMENT_RECORDS, key)
    damaged = held.buffer.copy()
    damaged[held.begin + 16] = 0  # the first vertex count: 0 breaks spec §6.9
    reader.held.keep(FRAGMENT_RECORDS, [key], [held._replace(buffer=damaged)])
    with pytest.raises(CorruptChunkError, match=r"§6\.9"):
        reader.needed_ranges(chunks[:1], counts[:1], need)


@pytest.mark.parametrize("shard_chunks", [None, 1])
def test_the_row_columns_shard_indexes_come_with_the_records(
    tmp_path: Path, shard_chunks: int | None
) -> None:
    """needed_ranges fetches the vertex columns' shard indexes with the fragment records
    and, when links are asked, the link columns' too (the row reads need no wave more;
    a chunk without link rows has no ``links/0`` shard, spec §9.6)."""
    _skeletons(tmp_path / "s.zv", shard_chunks)
    for links in (False, True):
        reader = _reader(tmp_path / "s.zv")
        reader.add_column("__links__", "0/links/0")
        chunks, counts = reader.occupied_chunks(None, None)
        need = (np.arange(chunks.shape[0] + 1), np.zeros(chunks.shape[0], np.int64))
        found = reader.needed_ranges(chunks, counts, need, links=links)
        linked = chunks if found.link_rows is None else chunks[found.link_rows > 0]
        for name, some in (("vertices", chunks), ("__links__", linked)):
            layout = reader.layouts[name]
            assert layout is not None
            wanted = [(reader.paths[name], layout, tuple(c)) for c in some.tolist()]
            if name == "vertices" or links:
                assert reader.indexes.requests(wanted) == []
            else:
                assert reader.indexes.requests(wanted)
