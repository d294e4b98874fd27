"""Row runs of many chunks read by the box-read kernels (LevelReader.read_runs).

The kernel path must return exactly what the per-chunk row reads return for the same runs:
vertex columns of an object level, and its ``links/0`` rows given each chunk's link rows.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.format.names import LINK_FRAGMENTS, LINKS, VERTICES
from zarr_vectors.read import RowRuns, point_reads
from zarr_vectors.read.reader import ChunkRows, LevelReader


def _skeleton_store(path: Path) -> None:
    rng = np.random.default_rng(3)
    n = 3000
    positions = rng.uniform(0.0, 400.0, (n, 3)).astype(np.float32)
    parents = np.arange(n) - 1
    parents[::500] = -1  # six trees of 500 nodes
    zv.write_skeletons(
        path,
        positions,
        parents=parents,
        vertex_objects=np.arange(n) // 500,
        radius=rng.uniform(0.1, 2.0, n).astype(np.float32),
        chunk_shape=100.0,
        options=zv.WriteOptions(rows_per_block=16),
    )


def _runs(counts: np.ndarray, cuts: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ascending, non-overlapping, non-empty runs of every chunk, from the cut fractions."""
    chunk, start, stop = [], [], []
    for k, n in enumerate(counts.tolist()):
        edges = sorted({0, n, *(int(c * n / 100) for c in cuts)})
        for i, (a, b) in enumerate(itertools.pairwise(edges)):
            if b > a and i % 2 == 0:  # every other piece: runs with gaps between them
                chunk.append(k)
                start.append(a)
                stop.append(b)
    return (np.array(chunk, np.int64), np.array(start, np.int64), np.array(stop, np.int64))


def _per_chunk(chunks: list[tuple[int, ...]], runs: tuple[np.ndarray, ...]) -> list[ChunkRows]:
    chunk, start, stop = runs
    return [
        ChunkRows(c, np.stack([start[chunk == k], stop[chunk == k]], axis=1))
        for k, c in enumerate(chunks)
        if (chunk == k).any()
    ]


@settings(max_examples=5, deadline=None)
@given(cuts=st.lists(st.integers(1, 99), max_size=6))
def test_runs_read_by_kernels_equal_the_per_chunk_reads(tmp_path_factory, cuts) -> None:
    path = tmp_path_factory.mktemp("runs") / "s.zv"
    _skeleton_store(path)
    store = zv.open(path)
    reader: LevelReader = store._objects_at(0).reader
    coords, counts = reader.occupied_chunks(None, None)
    chunks = [tuple(c) for c in coords.tolist()]
    runs = _runs(counts, cuts)
    names = [VERTICES, *reader.attribute_names]
    by_kernels = reader.points.read_selected
    calls: list[int] = []

    def spy(*args: object, **options: bool) -> list[np.ndarray]:
        calls.append(1)
        return by_kernels(*args, **options)  # type: ignore[arg-type]

    reader.points.read_selected = spy  # type: ignore[method-assign]
    got = reader.read_runs(names, RowRuns(chunks, *runs))
    expected = reader.read_columns(names, _per_chunk(chunks, runs))
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)

    links = [r[1] for r in reader.blob_ranges(LINK_FRAGMENTS, coords)]
    link_rows = np.array([int(c.sum()) for c in links], dtype=np.int64)
    link_runs = _runs(link_rows, cuts)
    column = "__links__"  # the ObjectReader's name of links/0
    assert reader.paths[column].endswith(f"{LINKS}/0")
    got_links = reader.read_runs([column], RowRuns(chunks, *link_runs), link_rows)[0]
    expected_links = reader.read_columns([column], _per_chunk(chunks, link_runs))[0]
    np.testing.assert_array_equal(got_links, expected_links)
    assert len(calls) == 2  # both read by the kernels, not by the per-chunk reads
    assert got_links.shape[0] == int((link_runs[2] - link_runs[1]).sum())


def test_runs_read_in_turns_equal_the_per_chunk_reads(tmp_path, monkeypatch) -> None:
    """A read large enough to be shared with the helper thread (here: any read) copies
    the same rows of every run."""
    _skeleton_store(tmp_path / "s.zv")
    reader: LevelReader = zv.open(tmp_path / "s.zv")._objects_at(0).reader
    coords, counts = reader.occupied_chunks(None, None)
    chunks = [tuple(c) for c in coords.tolist()]
    runs = _runs(counts, [10, 35, 60, 90])
    names = [VERTICES, *reader.attribute_names]
    monkeypatch.setattr(point_reads, "_TURNS_MIN_BYTES", 0)
    turns: list[int] = []
    shared = point_reads.PointReads._read_in_turns

    def spy(*args: object) -> list[np.ndarray]:
        turns.append(1)
        return shared(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(point_reads.PointReads, "_read_in_turns", spy)
    got = reader.read_runs(names, RowRuns(chunks, *runs))
    expected = reader.read_columns(names, _per_chunk(chunks, runs))
    assert turns == [1]
    for a, b in zip(got, expected, strict=True):
        assert a.shape[0] == int((runs[2] - runs[1]).sum())
        np.testing.assert_array_equal(a, b)
