"""Streaming point writes give, byte for byte, the store of one write of the whole input."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.helpers import sample_sizes, without_commit
from zarr_vectors.store import spill
from zarr_vectors.write import _level_writer

HYPOTHESIS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _files(root: Path) -> dict[str, bytes]:
    """Every file of a store but ``metadata.json`` (it holds the creation time)."""
    return {
        str(p.relative_to(root)): without_commit(str(p.relative_to(root)), p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "metadata.json"
    }


@st.composite
def clouds(draw: st.DrawFn) -> dict[str, Any]:
    """Points on and around chunk and bin edges, with attributes, and where to cut them."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(0, 1500))
    dim = draw(st.sampled_from([2, 3, 4]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    grid = rng.integers(-3, 4, (n, dim)) * 2.5
    jitter = rng.choice([0.0, 0.0, 1e-3, -1e-3, 1.1], (n, dim))
    positions = (grid + jitter).astype(dtype)
    cuts = np.sort(rng.integers(0, n + 1, draw(st.integers(0, 6))))
    return {
        "positions": positions,
        "attributes": {"a": rng.random(n).astype(np.float32), "rgb": rng.integers(0, 9, (n, 3))},
        "object_ids": rng.integers(0, 2**40, n).astype(np.uint64),
        "cuts": cuts,
        "chunk_shape": draw(st.sampled_from([5.0, 2.5, None])),
    }


def _batches(cloud: dict[str, Any]) -> list[dict[str, Any]]:
    cuts = cloud["cuts"]
    attrs = {k: np.split(v, cuts) for k, v in cloud["attributes"].items()}
    return [
        {
            "positions": p,
            "attributes": {k: attrs[k][i] for k in attrs},
            "object_ids": ids,
        }
        for i, (p, ids) in enumerate(
            zip(
                np.split(cloud["positions"], cuts), np.split(cloud["object_ids"], cuts), strict=True
            )
        )
    ]


@pytest.mark.parametrize("examples", sample_sizes(5, 25))
def test_stream_writes_the_one_shot_store(tmp_path_factory: Any, examples: int) -> None:
    @settings(HYPOTHESIS, max_examples=examples)
    @given(cloud=clouds(), budget=st.sampled_from([2**16, 2**17, 2**28]))
    def check(cloud: dict[str, Any], budget: int) -> None:
        if cloud["chunk_shape"] is None and not len(cloud["positions"]):
            return  # an empty store needs a chunk shape either way
        tmp = tmp_path_factory.mktemp("s")
        one, streamed = tmp / "one", tmp / "streamed"
        settings_ = {"chunk_shape": cloud["chunk_shape"], "bin_shape": None}
        zv.write_points(
            one,
            cloud["positions"],
            attributes=cloud["attributes"],
            object_ids=cloud["object_ids"],
            **settings_,
        )
        zv.write_points_stream(
            streamed, _batches(cloud), memory_budget=budget, progress=False, **settings_
        )
        assert _files(streamed) == _files(one)
        assert not [p for p in tmp.iterdir() if "zv-spill" in p.name]

    check()


def test_large_batches_are_sliced_to_the_budget(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    xyz = rng.uniform(0, 100, (20_000, 3)).astype(np.float32)
    zv.write_points(tmp_path / "one", xyz, chunk_shape=25.0)
    seen: list[tuple[str, int, int]] = []
    with zv.PointWriter(
        tmp_path / "streamed",
        chunk_shape=25.0,
        memory_budget=2**16,
        progress=lambda *update: seen.append(update),
    ) as writer:
        writer.append(xyz[:15_000])
        assert writer.binned is not None
        assert writer.slice is not None
        step = writer.slice[0].shape[0]
        assert 2 * step * xyz[0].nbytes <= 2**16  # a slice and its sorted copy fit the budget
        assert writer.binned.rows == 15_000 - 15_000 % step  # whole slices spilled
        assert writer.slice_rows == 15_000 % step  # the rest waits for more rows
        pieces = [len(v) for v in writer.pieces.values()]
        assert max(pieces) > 1  # several slices reached the same chunk
        writer.append(xyz[15_000:])
    assert _files(tmp_path / "streamed") == _files(tmp_path / "one")
    assert seen[:2] == [("ingest", 15_000, -1), ("ingest", 20_000, -1)]
    chunks = zv.open(tmp_path / "one").chunk_count
    assert seen[-1] == ("write", chunks, chunks)


@pytest.mark.parametrize("chunk_shape", [25.0, None])
def test_spill_given_back_while_writing_still_gives_the_one_shot_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_shape: float | None
) -> None:
    given_back: list[int] = []
    decide = spill._Append.done_with

    def counted(append: spill._Append, a: int, b: int, step: int) -> tuple[int, int] | None:
        stretch = decide(append, a, b, step)
        if stretch is not None:
            given_back.append(stretch[1] - stretch[0])
        return stretch

    monkeypatch.setattr(spill, "RELEASE_BYTES", 1)  # every piece as soon as it can go
    monkeypatch.setattr(spill._Append, "done_with", counted)
    rng = np.random.default_rng(11)
    xyz = rng.uniform(0, 100, (20_000, 3)).astype(np.float32)
    value = rng.random(20_000, dtype=np.float32)
    zv.write_points(tmp_path / "one", xyz, chunk_shape=chunk_shape, attributes={"v": value})
    with zv.PointWriter(
        tmp_path / "streamed", chunk_shape=chunk_shape, memory_budget=2**16, progress=False
    ) as writer:
        for part in np.array_split(np.arange(20_000), 7):
            writer.append(xyz[part], attributes={"v": value[part]})
    assert _files(tmp_path / "streamed") == _files(tmp_path / "one")
    spilled = 20_000 if chunk_shape is not None else 40_000  # raw, then binned
    assert len(given_back) > 10
    assert sum(given_back) == spilled


def test_small_batches_are_spilled_together(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    xyz = rng.uniform(0, 100, (5000, 3)).astype(np.float32)
    zv.write_points(tmp_path / "one", xyz, chunk_shape=25.0)
    with zv.PointWriter(tmp_path / "streamed", chunk_shape=25.0, progress=False) as writer:
        for batch in np.array_split(xyz, 50):
            writer.append(batch)
        assert writer.binned is None  # 5000 rows fit one slice: nothing spilled yet
        writer._spill_slice()
        assert writer.binned is not None
        assert {len(v) for v in writer.pieces.values()} == {1}  # one piece per chunk
    assert _files(tmp_path / "streamed") == _files(tmp_path / "one")


def test_a_memory_store_and_reading_back(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    xyz = rng.normal(0, 30, (3000, 3))
    store = MemoryStore()
    zv.write_points_stream(store, np.array_split(xyz, 5), chunk_shape=16.0, progress=False)
    got = zv.open(store).read()
    assert np.array_equal(np.unique(got.positions, axis=0), np.unique(xyz, axis=0))


def test_a_batch_that_does_not_match_is_refused_and_the_rest_kept(tmp_path: Path) -> None:
    xyz = np.random.default_rng(5).uniform(0, 10, (100, 3)).astype(np.float32)
    with zv.PointWriter(tmp_path / "s", chunk_shape=5.0, progress=False) as writer:
        writer.append(xyz[:40], attributes={"a": np.zeros(40, np.float32)})
        lossy = r"attributes\['a'\] is float64 but the first batch holds float32"
        with pytest.raises(zv.InvalidInputError, match=lossy):
            writer.append(xyz[40:], attributes={"a": np.zeros(60)})
        with pytest.raises(zv.InvalidInputError, match=r"positions is float64 but the first batch"):
            writer.append(xyz[40:].astype(np.float64), attributes={"a": np.zeros(60, np.float32)})
        with pytest.raises(zv.InvalidInputError, match="NaN or infinite"):
            writer.append(np.full((2, 3), np.nan), attributes={"a": np.zeros(2)})
        writer.append(xyz[40:50], attributes={"a": np.zeros(10, np.int16)})  # a safe cast
        writer.append(xyz[50:], attributes={"a": np.ones(50, np.float32)})
    got = zv.open(tmp_path / "s").read()
    assert got.positions.shape == (100, 3)
    assert got.attributes["a"].dtype == np.float32
    assert sorted(got.attributes["a"].tolist()) == [0.0] * 50 + [1.0] * 50


def test_attribute_order_may_change_between_batches(tmp_path: Path) -> None:
    xyz = np.random.default_rng(6).uniform(0, 10, (40, 3))
    a, b = np.arange(40.0), np.arange(40) * 2
    zv.write_points(tmp_path / "one", xyz, chunk_shape=5.0, attributes={"a": a, "b": b})
    with zv.PointWriter(tmp_path / "s", chunk_shape=5.0, progress=False) as writer:
        writer.append(xyz[:10], attributes={"a": a[:10], "b": b[:10]})
        writer.append(xyz[10:], attributes={"b": b[10:], "a": a[10:]})
    assert _files(tmp_path / "s") == _files(tmp_path / "one")


def test_an_error_in_the_block_leaves_the_destination_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "s"
    zv.write_points(path, np.ones((3, 3)), chunk_shape=5.0)
    before = _files(path)

    def interrupted() -> None:
        with zv.PointWriter(path, chunk_shape=5.0, mode="w", progress=False) as writer:
            writer.append(np.zeros((10, 3)))
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        interrupted()
    assert _files(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_a_failure_while_closing_stops_the_reads_ahead_and_keeps_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks are read back ahead of their writing; when a write fails, the reads ahead
    stop before the spill files go, and the old store stays."""
    path = tmp_path / "s"
    zv.write_points(path, np.ones((3, 3)), chunk_shape=5.0)
    before = _files(path)
    calls = []
    add_chunk = _level_writer.LevelWriter.add_chunk

    def failing(self: _level_writer.LevelWriter, *args: Any) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full")
        add_chunk(self, *args)

    readers_at_cleanup = []
    close = spill.SpillColumns.close

    def closing(self: spill.SpillColumns) -> None:
        threads = threading.enumerate()
        readers_at_cleanup.extend(t for t in threads if t.name.startswith("zv-read-ahead"))
        close(self)

    monkeypatch.setattr(_level_writer.LevelWriter, "add_chunk", failing)
    monkeypatch.setattr(spill.SpillColumns, "close", closing)
    xyz = np.random.default_rng(5).uniform(0, 40, (4000, 3))
    with (
        pytest.raises(OSError, match="disk full"),
        zv.PointWriter(path, chunk_shape=5.0, mode="w", progress=False) as writer,
    ):
        writer.append(xyz)
    assert len(calls) == 3
    assert readers_at_cleanup == []  # stopped before the spill files were closed
    assert _files(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_refusals(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "s", np.ones((3, 3)), chunk_shape=5.0)
    with pytest.raises(zv.StoreExistsError):
        zv.PointWriter(tmp_path / "s", chunk_shape=5.0)
    with pytest.raises(zv.InvalidInputError, match="memory_budget"):
        zv.PointWriter(tmp_path / "t", memory_budget=100)
    with pytest.raises(zv.InvalidInputError, match="nothing to write"):
        zv.write_points_stream(tmp_path / "t", [], chunk_shape=5.0, progress=False)
    with pytest.raises(zv.InvalidInputError, match="positions"):
        zv.write_points_stream(tmp_path / "t", [{"xyz": np.ones((2, 3))}], progress=False)
    writer = zv.PointWriter(tmp_path / "u", chunk_shape=5.0, progress=False)
    writer.append(np.ones((2, 3)))
    writer.close()
    with pytest.raises(zv.InvalidInputError, match="closed"):
        writer.append(np.ones((2, 3)))
    assert not [p for p in tmp_path.iterdir() if "zv-spill" in p.name]


def test_spill_files_go_where_asked(tmp_path: Path) -> None:
    spill = tmp_path / "scratch"
    writer = zv.PointWriter(tmp_path / "s", chunk_shape=5.0, spill_dir=spill, progress=False)
    writer.append(np.ones((2, 3)))
    assert [p.name for p in spill.iterdir()] == [writer.scratch.name]
    writer.close()
    assert list(spill.iterdir()) == []


def test_default_progress_is_silent_off_a_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    zv.write_points_stream(tmp_path / "s", [np.ones((4, 3))], chunk_shape=5.0)
    assert capfd.readouterr().err == ""


def test_a_progress_bar_is_drawn_and_its_line_ended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zv.write_points_stream(tmp_path / "s", [np.ones((4, 3))], chunk_shape=5.0, progress=True)
    err = capsys.readouterr().err
    assert err.startswith("\ringest: ")
    assert "write chunks: 100%" in err
    assert err.endswith("\n")
