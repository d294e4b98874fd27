"""Blosc frames of Zstandard streams decoded with a reused context (kernels/zstd_frames.py)
against a plain-Python twin and C-Blosc itself."""

from __future__ import annotations

import ctypes
import threading

import google_crc32c
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numcodecs import Blosc, blosc, zstd

from tests.kernels.naive import frame_into
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels._jit import set_kernel_mode
from zarr_vectors.kernels.row_blocks import decode_blocks
from zarr_vectors.kernels.zstd_frames import (
    decode_frame_blocks_into,
    decode_frame_into,
    scratch_size,
    stage_frame,
    staged_size,
)
from zarr_vectors.store.native_blocks import blosc_libraries, native_block_functions
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.store.zstd_contexts import zstd_context, zstd_functions

NATIVE = native_block_functions()
ZSTD = zstd_context()
pytestmark = pytest.mark.skipif(ZSTD[0] == 0, reason="no usable Zstandard functions")
UNSHUFFLES = ZSTD[2:]

_SHUFFLES = [Blosc.NOSHUFFLE, Blosc.SHUFFLE, Blosc.BITSHUFFLE]
ZSTD_BLOSC = {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle"}


def naive_stage(frame: bytes) -> bytes | int:
    """The twin of :func:`stage_frame` through numcodecs' Zstandard: the staged frame, 0
    (left to C-Blosc) or -1 (damaged)."""
    flags, typesize = frame[2], frame[3]
    nbytes, blocksize = (int.from_bytes(frame[a : a + 4], "little") for a in (4, 8))
    if flags >> 5 != 4 or flags & 0x0A or not (typesize and nbytes and blocksize):
        return 0
    if nbytes >= 2**31 or blocksize >= 2**31:
        return 0
    n_blocks = -(-nbytes // blocksize)
    head = 16 + 4 * n_blocks
    if head > len(frame):
        return -1
    starts, streams = [], []
    at = head
    for j in range(n_blocks):
        size = min(blocksize, nbytes - j * blocksize)
        split = not (flags & 0x10 or size < blocksize) and typesize <= 16
        splits = typesize if split and size // typesize >= 128 else 1
        part = size // splits
        starts.append(at)
        src = int.from_bytes(frame[16 + 4 * j : 20 + 4 * j], "little")
        for _ in range(splits):
            if src < head or src + 4 > len(frame):
                return -1
            stored = int.from_bytes(frame[src : src + 4], "little")
            src += 4
            if stored >= 2**31 or src + stored > len(frame):
                return -1
            raw = frame[src : src + stored]
            if stored != part:
                try:
                    raw = zstd.decompress(raw)
                except RuntimeError:
                    return -1
                if len(raw) != part:
                    return -1
            streams.append(part.to_bytes(4, "little") + raw)
            at += 4 + part
            src += stored
    table = b"".join(s.to_bytes(4, "little") for s in starts)
    return frame[:12] + at.to_bytes(4, "little") + table + b"".join(streams)


def _kernel_stage(frame: bytes) -> bytes | int:
    buffer = np.frombuffer(b"\x07" + frame, dtype=np.uint8)  # not at the buffer's start
    if len(frame) < 16 or not staged_size(buffer, 1):
        return 0
    out = np.zeros(staged_size(buffer, 1), dtype=np.uint8)
    n = stage_frame(buffer, 1, len(frame), out, *ZSTD[:2])
    return n if n <= 0 else out[:n].tobytes()


@st.composite
def zstd_frames(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """``(rows' bytes, Blosc frame)`` of Zstandard frames: any shuffle and type size,
    several internal blocks and a leftover one, compressible and noisy rows."""
    dtype = draw(st.sampled_from(["<f4", "<f8", "<i2", "u1", "<i8"]))
    n = draw(st.integers(1, 3000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows = (np.arange(n) % draw(st.integers(1, 50))).astype(dtype)
    noisy = rng.random(n) < draw(st.sampled_from([0.0, 0.1, 1.0]))
    rows[noisy] = rng.integers(0, 100, int(noisy.sum())).astype(dtype)
    codec = Blosc(
        cname="zstd",
        clevel=draw(st.integers(1, 9)),
        shuffle=draw(st.sampled_from(_SHUFFLES)),
        blocksize=draw(st.sampled_from([0, 256, 1000, 4096])),
    )
    return rows.tobytes(), bytes(codec.encode(rows))


@settings(max_examples=80, deadline=None)
@given(zstd_frames())
def test_staged_frames_match_the_twin_and_decode_to_the_rows(case: tuple[bytes, bytes]) -> None:
    rows, frame = case
    staged = _kernel_stage(frame)
    assert staged == naive_stage(frame)
    if isinstance(staged, bytes):  # stored whole (MEMCPYED) frames go to C-Blosc
        assert blosc.decompress(staged) == rows


def _kernel_into(frame: bytes) -> bytes | int:
    """:func:`decode_frame_into` of ``frame`` into an array 3 bytes in; also checks that
    nothing outside the frame's place in the array is written."""
    buffer = np.frombuffer(b"\x07" + frame, dtype=np.uint8)  # not at the buffer's start
    nbytes = int.from_bytes(frame[4:8], "little") if len(frame) >= 16 else 0
    if len(frame) < 16 or not staged_size(buffer, 1) or nbytes > 1 << 24:
        return 0
    out = np.full(nbytes + 8, 0xAB, dtype=np.uint8)
    scratch = np.zeros(2 * nbytes + 1024, dtype=np.uint8)
    n = decode_frame_into(buffer, 1, len(frame), out, 3, *ZSTD[:2], UNSHUFFLES, scratch)
    if n <= 0:
        return n
    assert n == nbytes
    assert (out[:3] == 0xAB).all()
    assert (out[3 + n :] == 0xAB).all()
    return out[3 : 3 + n].tobytes()


@settings(max_examples=80, deadline=None)
@given(zstd_frames())
def test_frames_decoded_in_place_match_the_twin_and_c_blosc(case: tuple[bytes, bytes]) -> None:
    """A frame of one stream per block decodes straight to its rows (its shuffle undone
    by C-Blosc's functions), as its twin and as C-Blosc decode it; a frame stored whole is
    left to C-Blosc (0)."""
    rows, frame = case
    found = _kernel_into(frame)
    assert found == frame_into(frame, zstd.decompress)
    if isinstance(found, bytes):
        assert found == rows == blosc.decompress(frame)
    assert isinstance(found, bytes) == (not frame[2] & 0x02)  # every other frame here


@settings(max_examples=80, deadline=None)
@given(zstd_frames(), st.data())
def test_damaged_frames_in_place_match_the_twin(
    case: tuple[bytes, bytes], data: st.DataObject
) -> None:
    """A damaged frame (sizes kept) is decoded in place as its twin decodes it, refused
    as its twin refuses it, or left to staging alike: never a crash."""
    _, frame = case
    damaged = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 3))):
        damaged[data.draw(st.integers(0, len(frame) - 1))] ^= data.draw(st.integers(1, 255))
    damaged[4:8] = frame[4:8]  # the size the caller checks before decoding
    assert _kernel_into(bytes(damaged)) == frame_into(bytes(damaged), zstd.decompress)


@settings(max_examples=80, deadline=None)
@given(zstd_frames(), st.data())
def test_wanted_blocks_alone_are_decoded_as_the_twin_decodes_them(
    case: tuple[bytes, bytes], data: st.DataObject
) -> None:
    """Only the blocks ``wanted`` marks are written, each with the bytes the twin decodes
    for it; every other byte of the destination is left as it was."""
    rows, frame = case
    whole = frame_into(frame, zstd.decompress)
    nbytes, blocksize = (int.from_bytes(frame[a : a + 4], "little") for a in (4, 8))
    n_blocks = -(-nbytes // blocksize)
    wanted = np.array(data.draw(st.lists(st.booleans(), min_size=n_blocks, max_size=n_blocks)))
    buffer = np.frombuffer(frame, dtype=np.uint8)
    out = np.full(nbytes, 0xAB, dtype=np.uint8)
    scratch = np.zeros(2 * nbytes + 1024, dtype=np.uint8)
    args = (buffer, 0, len(frame), out, 0, *ZSTD[:2], UNSHUFFLES, scratch)
    found = decode_frame_blocks_into(*args, wanted.astype(np.uint8))
    if not isinstance(whole, bytes):  # a frame stored whole: left to C-Blosc alike
        assert found == whole == 0
        return
    assert found == nbytes
    expected = np.full(nbytes, 0xAB, dtype=np.uint8)
    for j in np.flatnonzero(wanted):
        span = slice(j * blocksize, min(nbytes, (j + 1) * blocksize))
        expected[span] = np.frombuffer(whole, dtype=np.uint8)[span]
    assert out.tobytes() == expected.tobytes()
    assert whole == rows


def test_a_wanted_of_the_wrong_length_leaves_the_frame_undecoded() -> None:
    rows = np.arange(4000, dtype="<i4")
    frame = bytes(Blosc(cname="zstd", clevel=3, shuffle=Blosc.SHUFFLE, blocksize=4096).encode(rows))
    buffer = np.frombuffer(frame, dtype=np.uint8)
    out = np.zeros(rows.nbytes, dtype=np.uint8)
    scratch = np.zeros(2 * rows.nbytes + 1024, dtype=np.uint8)
    args = (buffer, 0, len(frame), out, 0, *ZSTD[:2], UNSHUFFLES, scratch)
    assert decode_frame_blocks_into(*args, np.ones(3, dtype=np.uint8)) == 0  # 4 blocks
    assert not out.any()
    assert decode_frame_blocks_into(*args, np.ones(4, dtype=np.uint8)) == rows.nbytes
    assert out.view("<i4").tolist() == rows.tolist()


@pytest.mark.parametrize(
    ("dtype", "shuffle", "needed"),
    [
        ("u1", Blosc.SHUFFLE, False),
        ("<f4", Blosc.NOSHUFFLE, False),
        ("<f4", Blosc.SHUFFLE, True),
        ("u1", Blosc.BITSHUFFLE, True),
        ("<f4", Blosc.BITSHUFFLE, True),
    ],
)
def test_scratch_only_for_a_shuffle_to_undo(dtype: str, shuffle: int, needed: bool) -> None:
    rows = (np.arange(3000) % 37).astype(dtype)
    frame = bytes(Blosc(cname="zstd", clevel=3, shuffle=shuffle, blocksize=2048).encode(rows))
    size = scratch_size(np.frombuffer(frame, dtype=np.uint8), 0)
    assert size == (2 * int.from_bytes(frame[8:12], "little") + 4 * frame[3] if needed else 0)


def _split_frames(rows: np.ndarray, shuffle: int, blocksize: int) -> bytes | None:
    """A Zstandard frame whose blocks are split in ``typesize`` streams (C-Blosc's
    ``BLOSC_ALWAYS_SPLIT``), made by the C-Blosc library the decoder uses."""
    assert NATIVE is not None
    for path in blosc_libraries():
        library = ctypes.CDLL(path)
        if ctypes.cast(library.blosc_decompress_ctx, ctypes.c_void_p).value == NATIVE[1]:
            break
    else:
        return None
    out = ctypes.create_string_buffer(rows.nbytes + 16)
    compress = library.blosc_compress_ctx
    size, pointer, int32 = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int
    compress.argtypes = [int32, int32, size, size, pointer, pointer, size, ctypes.c_char_p]
    compress.argtypes += [size, int32]
    compress.restype = int32
    library.blosc_set_splitmode(1)  # always
    try:
        n = compress(
            1, shuffle, rows.itemsize, rows.nbytes, rows.ctypes.data, out,
            rows.nbytes + 16, b"zstd", blocksize, 1,
        )  # fmt: skip
    finally:
        library.blosc_set_splitmode(4)  # forward compatible: the default
    return out.raw[:n] if n > 0 else None


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["<f4", "<i8", "<i2"]),
    st.integers(200, 5000),
    st.sampled_from(_SHUFFLES),
    st.sampled_from([0, 1024, 2048]),
)
def test_split_streams_are_staged(dtype: str, n: int, shuffle: int, blocksize: int) -> None:
    rows = (np.arange(n) % 97).astype(dtype)
    frame = _split_frames(rows, shuffle, blocksize)
    if frame is None:
        pytest.skip("no C-Blosc library to make split frames")
    assert not frame[2] & 0x10  # blocks split in streams
    staged = _kernel_stage(frame)
    assert staged == naive_stage(frame)
    assert isinstance(staged, bytes)
    assert blosc.decompress(staged) == rows.tobytes()


@settings(max_examples=120, deadline=None)
@given(zstd_frames(), st.data())
def test_damaged_frames_decode_as_c_blosc_or_are_refused(
    case: tuple[bytes, bytes], data: st.DataObject
) -> None:
    """A damaged frame (its checksum redone) decodes through the context to what C-Blosc
    alone makes of it, or is refused: never to other bytes, never a crash."""
    rows, frame = case
    damaged = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 3))):
        damaged[data.draw(st.integers(0, len(frame) - 1))] ^= data.draw(st.integers(1, 255))
    damaged[4:8] = len(rows).to_bytes(4, "little")  # sizes the kernel checks before staging
    damaged[12:16] = len(frame).to_bytes(4, "little")
    block = bytes(damaged) + google_crc32c.value(bytes(damaged)).to_bytes(4, "little")
    buffer = np.frombuffer(block, dtype=np.uint8)
    one = (np.zeros(1, np.int64), np.full(1, len(block), np.int64))
    assert NATIVE is not None
    got, alone = (np.zeros(len(rows), np.uint8) for _ in range(2))
    slot = np.zeros(1, np.int64)
    ours = decode_blocks(buffer, *one, got, slot, len(rows), True, *NATIVE, *ZSTD)
    theirs = decode_blocks(buffer, *one, alone, slot, len(rows), True, *NATIVE)
    if ours == -1:
        assert theirs == -1
        np.testing.assert_array_equal(got, alone)


def test_each_thread_has_its_own_context() -> None:
    found: list[tuple[int, int]] = []
    thread = threading.Thread(target=lambda: found.append(zstd_context()))
    thread.start()
    thread.join()
    assert zstd_context() == ZSTD
    assert found[0][0] == ZSTD[0]
    assert found[0][1] not in (0, ZSTD[1])
    assert zstd_functions() is not None


@pytest.mark.parametrize("shuffle", _SHUFFLES)
def test_frames_stage_and_decode_alike_when_kernels_run_as_python(shuffle: int) -> None:
    rows = (np.arange(5000) % 37).astype("<f4")
    frame = bytes(Blosc(cname="zstd", clevel=3, shuffle=shuffle, blocksize=2048).encode(rows))
    compiled = _kernel_stage(frame), _kernel_into(frame)
    previous = set_kernel_mode("python")
    try:
        assert (_kernel_stage(frame), _kernel_into(frame)) == compiled
    finally:
        set_kernel_mode(previous)
    assert isinstance(compiled[0], bytes)
    assert blosc.decompress(compiled[0]) == compiled[1] == rows.tobytes()


def _zstd_layout_blocks() -> tuple[RowLayout, np.ndarray, list[bytes]]:
    rows = (np.arange(3000, dtype="<f4") % 101).reshape(1000, 3)
    layout = RowLayout(np.dtype("<f4"), (3,), 256, 1024, ZSTD_BLOSC)
    return layout, rows, layout.encode_blocks(rows)


def _decode_all(layout: RowLayout, blocks: list[bytes], out: np.ndarray) -> None:
    buffer = np.frombuffer(b"".join(blocks), dtype=np.uint8)
    lengths = np.array([len(b) for b in blocks], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    slots = np.arange(len(blocks), dtype=np.int64)
    layout.decode_blocks_at(buffer, starts, lengths, slots, out, lambda i: (i, "v/c/0/0/0"))


def test_zstd_row_blocks_decode_to_their_rows() -> None:
    layout, rows, blocks = _zstd_layout_blocks()
    assert blocks[0][2] >> 5 == 4  # Zstandard frames: staged
    out = np.full((1024, 3), np.nan, dtype="<f4")
    _decode_all(layout, blocks, out)
    np.testing.assert_array_equal(out[:1000], rows)


def test_a_damaged_zstd_stream_is_a_clear_error() -> None:
    """A stored block whose Zstandard stream is damaged (checksum redone, so only the
    stream tells) is refused with the block named, never decoded to other rows."""
    layout, _, blocks = _zstd_layout_blocks()
    frame = bytearray(blocks[2][:-4])
    frame[int.from_bytes(frame[16:20], "little") + 4] ^= 0xFF  # the stream's magic number
    blocks[2] = bytes(frame) + google_crc32c.value(bytes(frame)).to_bytes(4, "little")
    out = np.zeros((1024, 3), dtype="<f4")
    with pytest.raises(CorruptChunkError, match=r"v/c/0/0/0: row block 2"):
        _decode_all(layout, blocks, out)
