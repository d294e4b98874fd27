"""The native row-block decoding's self test and fallbacks (``store/native_blocks.py``)."""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from zarr_vectors.errors import MisplacedChunkError
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.format.fragment_encoding import encode_dense_ranges
from zarr_vectors.read.fragment_fetches import decode_blob
from zarr_vectors.store import native_blocks
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.write.options import DEFAULT_BLOSC


def test_the_self_test_blocks_are_the_blocks_the_writer_makes() -> None:
    """The self test checks the native functions on numcodecs' own blocks; those must be
    byte for byte what the writer stores, or the test would vouch for another format."""
    rows = np.random.default_rng(3).random((1000, 3), dtype=np.float32)
    layout = RowLayout(np.dtype("<f4"), (3,), 500, 1000, DEFAULT_BLOSC)
    assert native_blocks._numcodecs_blocks(rows, 500) == layout.encode_blocks(rows)


def test_encoding_reuses_a_thread_buffer_up_to_its_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each thread encodes into a buffer it keeps (no fresh pages per shard), large ones
    excepted; blocks copied before the next call stay right, and threads do not share."""
    monkeypatch.setattr(native_blocks, "_KEPT_OUT_NBYTES", 1000)
    monkeypatch.setattr(native_blocks, "_scratch", threading.local())
    first = native_blocks._out_buffer(800)
    assert np.shares_memory(native_blocks._out_buffer(500), first)  # kept, reused
    assert not np.shares_memory(native_blocks._out_buffer(2000), first)  # too large to keep
    assert np.shares_memory(native_blocks._out_buffer(600), first)  # still the kept one
    grown = native_blocks._out_buffer(900)  # larger, under the cap: kept instead
    assert not np.shares_memory(grown, first)
    assert np.shares_memory(native_blocks._out_buffer(100), grown)
    other: list[np.ndarray] = []
    thread = threading.Thread(target=lambda: other.append(native_blocks._out_buffer(500)))
    thread.start()
    thread.join()
    assert not np.shares_memory(other[0], grown)
    layout = RowLayout(np.dtype("<f4"), (3,), 64, 256, DEFAULT_BLOSC)
    rows = [np.random.default_rng(k).random((64 * k + 64, 3), dtype=np.float32) for k in range(3)]
    expected = [native_blocks._numcodecs_blocks(r, 64) for r in rows]
    assert [layout.encode_blocks(r) for r in rows] == expected


def test_native_functions_are_used_only_after_passing_the_self_test() -> None:
    found = native_blocks.native_block_functions()
    if found is None:
        pytest.skip("google-crc32c without its C extension: blocks decode through Python")
    crc, decompress = found
    assert native_blocks._native_self_test(crc, decompress)


def test_dense_blob_shards_are_left_to_the_slow_path_without_native_functions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(native_blocks, "native_block_functions", lambda: None)
    layout = RowLayout(np.dtype("u1"), (), 256, 256, None)
    keys = ["b/c/0", "b/c/1"]
    assert native_blocks.decode_dense_blob_shards(layout, [b"x", None], keys, 4) == [None, None]


def test_runnable_threads_are_read_from_the_fourth_field_of_loadavg(tmp_path: Path) -> None:
    path = tmp_path / "loadavg"
    path.write_text("1.93 0.71 0.40 3/412 18250\n")
    assert native_blocks._runnable_threads(str(path)) == 3


def test_idle_cpu_is_looked_at_again_only_after_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer is repeated for _IDLE_FOR seconds (a query's batches), then looked at."""
    clock = [100.0]
    answers = iter([True, False])
    monkeypatch.setattr(native_blocks, "_idle_seen", (-1.0, False))
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(native_blocks, "_looked_idle", lambda: next(answers))
    assert native_blocks._idle_cpu()
    clock[0] += native_blocks._IDLE_FOR / 2
    assert native_blocks._idle_cpu()  # repeated: not looked at
    clock[0] += native_blocks._IDLE_FOR
    assert not native_blocks._idle_cpu()


@pytest.mark.parametrize("text", ["", "1.0 0.5", "1.0 0.5 0.2 x/412 1"])
def test_runnable_threads_are_unknown_when_the_file_says_nothing_usable(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "loadavg"
    path.write_text(text)
    assert native_blocks._runnable_threads(str(path)) is None
    assert native_blocks._runnable_threads(str(tmp_path / "missing")) is None


@pytest.mark.parametrize(("runnable", "idle"), [(1, True), (3, True), (4, False), (9, False)])
def test_a_cpu_is_idle_while_fewer_threads_than_cpus_are_runnable(
    monkeypatch: pytest.MonkeyPatch, runnable: int, idle: bool
) -> None:
    monkeypatch.setattr(native_blocks, "_CPUS", 4)
    monkeypatch.setattr(native_blocks, "_runnable_threads", lambda: runnable)
    monkeypatch.setattr(native_blocks.os, "getloadavg", lambda: (9.0, 9.0, 9.0))  # not asked
    assert native_blocks._looked_idle() is idle


@pytest.mark.parametrize(("load", "idle"), [(0.2, True), (3.5, True), (3.6, False)])
def test_without_a_runnable_count_the_load_average_decides(
    monkeypatch: pytest.MonkeyPatch, load: float, idle: bool
) -> None:
    monkeypatch.setattr(native_blocks, "_CPUS", 4)
    monkeypatch.setattr(native_blocks, "_runnable_threads", lambda: None)
    monkeypatch.setattr(native_blocks.os, "getloadavg", lambda: (load, 0.0, 0.0))
    assert native_blocks._looked_idle() is idle


def test_no_helper_thread_when_no_cpu_is_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_blocks, "_CPUS", 2)
    monkeypatch.setattr(native_blocks, "_idle_cpu", lambda: False)
    assert native_blocks._decode_helper(10 * native_blocks._SPLIT_BLOCKS) is None
    monkeypatch.setattr(native_blocks, "_idle_cpu", lambda: True)
    assert native_blocks._decode_helper(10 * native_blocks._SPLIT_BLOCKS) is not None
    assert native_blocks._decode_helper(native_blocks._SPLIT_BLOCKS - 1) is None


def _sharing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every call of two or more turns share them with the helper thread."""
    monkeypatch.setattr(native_blocks, "_CPUS", 2)
    monkeypatch.setattr(native_blocks, "_SPLIT_BLOCKS", 2)
    monkeypatch.setattr(native_blocks, "_SPLIT_BYTES", 0)
    monkeypatch.setattr(native_blocks, "_idle_cpu", lambda: True)


def test_turns_run_in_order_on_the_calling_thread_without_a_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(native_blocks, "_idle_cpu", lambda: False)
    taken: list[tuple[int, int]] = []
    native_blocks.in_turns(6, lambda t: taken.append((t, threading.get_ident())), 1000)
    assert taken == [(t, threading.get_ident()) for t in range(6)]


def test_turns_are_shared_with_the_helper_and_each_runs_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _sharing(monkeypatch)
    helper_began = threading.Event()
    taken: list[tuple[int, int]] = []

    def work(turn: int) -> None:
        if threading.current_thread() is threading.main_thread():
            helper_began.wait(5)  # so that both threads surely take turns
        else:
            helper_began.set()
        taken.append((turn, threading.get_ident()))
        time.sleep(0.001)

    native_blocks.in_turns(40, work, 1000)
    assert sorted(t for t, _ in taken) == list(range(40))
    assert len({ident for _, ident in taken}) == 2


@pytest.mark.parametrize("where", ["main", "helper"])
def test_a_failing_turn_is_raised_after_every_turn_taken_has_ended(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    _sharing(monkeypatch)
    helper_began = threading.Event()
    running = [0]
    lock = threading.Lock()

    def work(turn: int) -> None:
        on_main = threading.current_thread() is threading.main_thread()
        if on_main:
            helper_began.wait(5)
        else:
            helper_began.set()
        with lock:
            running[0] += 1
        try:
            time.sleep(0.002)
            if turn >= 5 and on_main == (where == "main"):
                raise ValueError(f"turn {turn} fails")
        finally:
            with lock:
                running[0] -= 1

    with pytest.raises(ValueError, match="fails"):
        native_blocks.in_turns(200, work, 1000)
    assert running[0] == 0  # nothing still runs once the error is raised


def test_python_blosc_is_tried_first_and_numcodecs_last() -> None:
    """python-blosc's C-Blosc (built with AVX2 shuffles) is preferred; numcodecs' bundled
    copy is always the last resort."""
    libraries = native_blocks.blosc_libraries()
    assert libraries[-1] == native_blocks.blosc.__file__
    if importlib.util.find_spec("blosc") is None:
        assert len(libraries) == 1
        return
    assert len(libraries) == 2
    assert Path(libraries[0]).name.startswith("libblosc") or Path(libraries[0]).name == "blosc.dll"
    found = native_blocks.native_block_functions()
    assert found is not None
    assert found[1] == native_blocks._blosc_function(libraries[0], "blosc_decompress_ctx")


def test_a_library_failing_the_self_test_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    numcodecs_library = native_blocks.blosc.__file__
    monkeypatch.setattr(
        native_blocks, "blosc_libraries", lambda: ("/no/such/libblosc.so.1", numcodecs_library)
    )
    refused = native_blocks._blosc_function(numcodecs_library, "blosc_decompress_ctx")
    real_test = native_blocks._native_self_test
    found = native_blocks.native_block_functions.__wrapped__()
    if found is None:
        pytest.skip("google-crc32c without its C extension")
    assert found[1] == refused  # the missing library is skipped, the next one is used
    monkeypatch.setattr(
        native_blocks, "_native_self_test", lambda crc, f: f != refused and real_test(crc, f)
    )
    assert native_blocks.native_block_functions.__wrapped__() is None
    monkeypatch.setattr(native_blocks, "native_block_functions", lambda: found)
    monkeypatch.setattr(native_blocks, "_native_encode_self_test", lambda crc, f: False)
    assert native_blocks.native_encode_functions.__wrapped__() is None


def test_a_missing_function_has_no_address() -> None:
    assert native_blocks._blosc_function(native_blocks.blosc.__file__, "no_such_symbol") is None
    assert native_blocks._blosc_function("/no/such/library.so", "blosc_decompress_ctx") is None


def _blob_shard(layout: RowLayout, counts: list[int], key: str) -> bytes:
    """A fragment-blob shard of all-range fragments of ``counts`` rows, stored at ``key``."""
    sizes = np.array(counts, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    blob = np.frombuffer(encode_dense_ranges(starts, sizes), dtype=np.uint8)
    return layout.encode_shard(blob, key)


@pytest.mark.parametrize("placed", [True, False])
def test_dense_blob_shards_of_either_layout_decode_in_the_kernel(placed: bool) -> None:
    """Whole shards go to the kernel (with a place record before the index when placed):
    it decoded none of a placed layout's shards before, and every one went the slow way."""
    if native_blocks.native_block_functions() is None:
        pytest.skip("google-crc32c without its C extension: blobs decode through Python")
    layout = RowLayout(np.dtype("u1"), (), 256, 512, None, placed=placed)
    keys = ["0/vertex_fragments/c/0/0", "0/vertex_fragments/c/0/1", "0/vertex_fragments/c/1/0"]
    counts = [[3, 0, 5, 1], [0, 0, 0, 7], [2, 2, 2, 2]]
    shards = [_blob_shard(layout, c, k) for c, k in zip(counts, keys, strict=True)]
    found = native_blocks.decode_dense_blob_shards(layout, shards, keys, 4)
    for c, k, shard, got in zip(counts, keys, shards, found, strict=True):
        assert got is not None
        blob = decode_blob(layout, k, layout.decode_index(shard, k), shard, 0)
        want = decode_dense_ranges(blob)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[1], c)


def test_a_dense_blob_shard_at_another_key_is_left_to_the_slow_path() -> None:
    """A placed shard read from another key than its place record names is not decoded
    by the kernel (the one-by-one decoding then raises MisplacedChunkError)."""
    if native_blocks.native_block_functions() is None:
        pytest.skip("google-crc32c without its C extension: blobs decode through Python")
    layout = RowLayout(np.dtype("u1"), (), 256, 512, None, placed=True)
    keys = ["0/vertex_fragments/c/0/0", "0/vertex_fragments/c/0/1"]
    shards = [_blob_shard(layout, [1, 2, 3, 4], key) for key in keys]
    found = native_blocks.decode_dense_blob_shards(layout, shards[::-1], keys, 4)
    assert found == [None, None]


@pytest.mark.parametrize("damage", ["magic", "key crc", "record crc", "data type"])
def test_a_dense_blob_shard_with_a_wrong_record_is_left_to_the_slow_path(damage: str) -> None:
    """The kernel path takes a placed shard only when its record is exactly its key's and
    data type's (compared in place with the cached record); any other record, damaged or
    written for another data type, goes the one-by-one way, which reports it."""
    if native_blocks.native_block_functions() is None:
        pytest.skip("google-crc32c without its C extension: blobs decode through Python")
    layout = RowLayout(np.dtype("u1"), (), 256, 512, None, placed=True)
    key = "0/vertex_fragments/c/0/0"
    shard = bytearray(_blob_shard(layout, [1, 2, 3, 4], key))
    at = len(shard) - layout.tail_nbytes
    if damage == "data type":
        other = RowLayout(np.dtype("i1"), (), 256, 512, None, placed=True)
        shard = bytearray(_blob_shard(other, [1, 2, 3, 4], key))
    else:
        shard[at + {"magic": 0, "key crc": 5, "record crc": 10}[damage]] ^= 0x01
    assert native_blocks.decode_dense_blob_shards(layout, [bytes(shard)], [key], 4) == [None]
    with pytest.raises(MisplacedChunkError):
        layout.decode_index(bytes(shard), key)


def test_a_batch_of_little_work_is_decoded_on_the_calling_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Many blocks that decode to less than ``_SPLIT_BYTES`` are not offered to the
    helper thread (its start would cost more than it saves); at a lower threshold the
    same batch is. Both decode every row."""
    monkeypatch.setattr(native_blocks, "_CPUS", 2)
    monkeypatch.setattr(native_blocks, "_idle_cpu", lambda: True)
    monkeypatch.setattr(native_blocks, "_SPLIT_PART", 1)
    native = native_blocks.native_block_functions()
    if native is None:
        pytest.skip("no native block functions")
    rows = (np.arange(64 * 256 * 3) % 101).astype("<f4").reshape(-1, 3)
    layout = RowLayout(np.dtype("<f4"), (3,), 256, rows.shape[0], DEFAULT_BLOSC)
    blocks = layout.encode_blocks(rows)
    buffer = np.frombuffer(b"".join(blocks), dtype=np.uint8)
    lengths = np.array([len(b) for b in blocks], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    slots = np.arange(len(blocks), dtype=np.int64)
    asked: list[int] = []
    helper = native_blocks._decode_helper

    def spy(count: int) -> object:
        asked.append(count)
        return helper(count)

    monkeypatch.setattr(native_blocks, "_decode_helper", spy)
    size = 256 * 12
    assert len(blocks) >= native_blocks._SPLIT_BLOCKS
    assert len(blocks) * size < native_blocks._SPLIT_BYTES
    for threshold, offered in ((native_blocks._SPLIT_BYTES, []), (0, [len(blocks)])):
        monkeypatch.setattr(native_blocks, "_SPLIT_BYTES", threshold)
        asked.clear()
        out = np.zeros_like(rows)
        flat = out.reshape(-1).view(np.uint8)
        args = (buffer, starts, lengths, slots, flat, size, True, native)
        assert native_blocks.decode_natively(*args) == -1
        np.testing.assert_array_equal(out, rows)
        assert asked == offered
