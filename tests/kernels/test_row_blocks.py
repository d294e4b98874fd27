"""decode_blocks (native CRC32C and Blosc calls) against a plain twin on numcodecs and
google-crc32c's Python APIs, on blocks encoded by RowLayout, whole and damaged."""

from __future__ import annotations

import itertools

import google_crc32c
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numcodecs import Blosc, blosc

from tests.kernels import naive
from zarr_vectors.errors import CorruptChunkError, FragmentIndexError
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.format.fragment_encoding import encode_dense_ranges
from zarr_vectors.kernels.row_blocks import (
    CRC_RESIDUE,
    block_spans,
    decode_blocks,
    decode_chunk_blocks,
    dense_blob_ranges,
)
from zarr_vectors.read.fragment_fetches import decode_blob
from zarr_vectors.store import native_blocks
from zarr_vectors.store.native_blocks import native_block_functions, native_encode_functions
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.store.zstd_contexts import zstd_context

NATIVE = native_block_functions()
pytestmark = pytest.mark.skipif(NATIVE is None, reason="no native CRC32C / Blosc functions")

BLOSC = {"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle"}


def naive_decode(
    buffer: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    out: np.ndarray,
    slots: np.ndarray,
    block_nbytes: int,
    compressed: bool,
) -> int:
    """Block by block through the Python APIs; the first block failing a check, or -1."""
    for i, (start, length, slot) in enumerate(zip(starts, lengths, slots, strict=True)):
        raw = buffer[start : start + length].tobytes()
        if len(raw) < 4:
            return i
        body, crc = raw[:-4], int.from_bytes(raw[-4:], "little")
        if google_crc32c.value(body) != crc:
            return i
        if compressed:
            if len(body) < 16 or int.from_bytes(body[4:8], "little") != block_nbytes:
                return i
            if int.from_bytes(body[12:16], "little") != len(body):
                return i
            body = blosc.decompress(body)
        if len(body) != block_nbytes:
            return i
        out[slot * block_nbytes : (slot + 1) * block_nbytes] = np.frombuffer(body, np.uint8)
    return -1


@st.composite
def stored_blocks(draw: st.DrawFn) -> tuple[RowLayout, np.ndarray, list[bytes]]:
    dtype = np.dtype(draw(st.sampled_from(["<f4", "<f8", "<i2", "<u8"])))
    row_shape = draw(st.sampled_from([(), (2,), (3,), (2, 2)]))
    r = draw(st.sampled_from([1, 8, 33]))
    n = draw(st.integers(1, 4 * r))
    rows = draw(hnp.arrays(dtype, (n, *row_shape), elements={"allow_nan": False}))
    compression = BLOSC if draw(st.booleans()) else None
    layout = RowLayout(dtype, row_shape, r, -(-n // r) * r, compression)
    return layout, rows, layout.encode_blocks(rows)


@settings(max_examples=80, deadline=None)
@given(stored_blocks(), st.data())
def test_decode_blocks_matches_the_twin(
    case: tuple[RowLayout, np.ndarray, list[bytes]], data: st.DataObject
) -> None:
    layout, _, blocks = case
    gap = data.draw(st.integers(0, 5))  # blocks need not lie back to back in the buffer
    order = data.draw(st.permutations(list(range(len(blocks)))))
    pieces, starts, pos = [], [], 0
    for b in order:
        pieces.append(b"\x00" * gap + blocks[b])
        starts.append(pos + gap)
        pos += gap + len(blocks[b])
    buffer = np.frombuffer(b"".join(pieces), dtype=np.uint8).copy()
    if data.draw(st.booleans()):  # damage one byte of one block
        buffer[data.draw(st.sampled_from(starts)) + data.draw(st.integers(0, 3))] ^= 0x10
    lengths = np.array([len(blocks[b]) for b in order], dtype=np.int64)
    slots = np.array(order, dtype=np.int64)
    size = layout.rows_per_block * layout.row_nbytes
    got = np.zeros(len(blocks) * size, np.uint8)
    want = np.zeros_like(got)
    starts_arr = np.array(starts, dtype=np.int64)
    compressed = layout.blosc is not None
    assert NATIVE is not None
    failed = decode_blocks(buffer, starts_arr, lengths, got, slots, size, compressed, *NATIVE)
    assert failed == naive_decode(buffer, starts_arr, lengths, want, slots, size, compressed)
    np.testing.assert_array_equal(got, want)


def test_the_decoded_blocks_are_the_rows() -> None:
    rows = np.arange(90, dtype="<f8").reshape(30, 3) / 7
    layout = RowLayout(np.dtype("<f8"), (3,), 8, 32, BLOSC)
    blocks = layout.encode_blocks(rows)
    buffer = np.frombuffer(b"".join(blocks), dtype=np.uint8)
    lengths = np.array([len(b) for b in blocks], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    out = np.full((32, 3), np.nan)
    assert NATIVE is not None
    slots = np.arange(4, dtype=np.int64)
    size = 8 * 24
    assert (
        decode_blocks(
            buffer, starts, lengths, out.reshape(-1).view(np.uint8), slots, size, True, *NATIVE
        )
        == -1
    )
    np.testing.assert_array_equal(out[:30], rows)
    np.testing.assert_array_equal(out[30:], 0)  # the fill value pads the last block


def test_blocks_out_of_bounds_are_refused() -> None:
    assert NATIVE is not None
    buffer = np.zeros(10, np.uint8)
    out = np.zeros(16, np.uint8)
    one = np.array([1], dtype=np.int64)
    zero = np.array([0], dtype=np.int64)
    assert decode_blocks(buffer, zero, np.array([11]), out, zero, 8, False, *NATIVE) == 0
    assert decode_blocks(buffer, zero, np.array([10]), out, np.array([2]), 8, False, *NATIVE) == 0
    assert decode_blocks(buffer, zero, np.array([3]), out, one, 8, False, *NATIVE) == 0


def test_the_residue_of_every_checksummed_block() -> None:
    for raw in (b"", b"a", bytes(range(200))):
        crc = google_crc32c.value(raw).to_bytes(4, "little")
        assert google_crc32c.value(raw + crc) == CRC_RESIDUE


# -- dense_blob_ranges ------------------------------------------------------------------


def _blob_shape(n: int) -> tuple[np.ndarray, np.ndarray]:
    zeros = np.zeros(n, dtype=np.int64)
    template = encode_dense_ranges(zeros, zeros)
    plen = len(template) - 16 * n - 4
    return (
        np.frombuffer(template[:plen], dtype=np.uint8),
        np.frombuffer(template[plen + 16 * n :], dtype=np.uint8),
    )


def naive_blob_ranges(
    raw: bytes, layout: RowLayout, n: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """The library's one-by-one decoding of a blob shard (None where it refuses it)."""
    try:
        index = layout.decode_index(raw, "blob")
        return decode_dense_ranges(decode_blob(layout, "blob", index, raw, 0))
    except (CorruptChunkError, FragmentIndexError):
        return None


@st.composite
def blob_shards(draw: st.DrawFn) -> tuple[RowLayout, int, list[bytes], list[bool]]:
    n = draw(st.integers(1, 40))
    r = draw(st.sampled_from([64, 256, 2048]))
    nbytes = len(encode_dense_ranges(np.zeros(n, np.int64), np.zeros(n, np.int64)))
    n_max = -(-nbytes // r) * r + r * draw(st.integers(0, 1))  # room for an unused block
    layout = RowLayout(np.dtype("u1"), (), r, n_max, None, placed=False)  # the kernel's view
    shards, damaged = [], []
    for _ in range(draw(st.integers(1, 4))):
        counts = np.array(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)), np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        blob = np.frombuffer(encode_dense_ranges(starts, counts), dtype=np.uint8)
        shard = bytearray(layout.encode_shard(blob, "blob"))
        hurt = draw(st.booleans())
        if hurt:
            shard[draw(st.integers(0, len(shard) - 1))] ^= 1 << draw(st.integers(0, 7))
        shards.append(bytes(shard))
        damaged.append(hurt)
    return layout, n, shards, damaged


@settings(max_examples=80, deadline=None)
@given(blob_shards())
def test_dense_blob_ranges_match_the_one_by_one_decoding(
    case: tuple[RowLayout, int, list[bytes], list[bool]],
) -> None:
    layout, n, shards, damaged = case
    lengths = np.array([len(s) for s in shards], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    buffer = np.frombuffer(b"".join(shards), dtype=np.uint8)
    assert NATIVE is not None
    prefix, suffix = _blob_shape(n)
    got_starts, got_counts, ok = dense_blob_ranges(
        buffer,
        starts,
        lengths,
        layout.n_blocks,
        layout.rows_per_block,
        prefix,
        suffix,
        n,
        NATIVE[0],
    )
    for i, shard in enumerate(shards):
        want = naive_blob_ranges(shard, layout, n)
        if not damaged[i]:
            assert ok[i]
        if ok[i]:  # everything the kernel accepts decodes the same one by one
            assert want is not None
            np.testing.assert_array_equal(got_starts[i], want[0])
            np.testing.assert_array_equal(got_counts[i], want[1])


_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


def naive_encode(layout: RowLayout, rows: np.ndarray) -> list[bytes]:
    """Block by block through the Python APIs: pad the last block with the fill value,
    compress it with numcodecs' Blosc (when the layout has a codec), append its CRC32C."""
    r = layout.rows_per_block
    data = np.asarray(rows, dtype=layout.dtype.newbyteorder("<"))
    blocks = []
    for a in range(0, data.shape[0], r):
        block = np.full((r, *layout.row_shape), layout.fill, dtype=data.dtype)
        block[: min(r, data.shape[0] - a)] = data[a : a + r]
        body = block.tobytes()
        if layout.blosc is not None:
            settings = layout.blosc
            body = blosc.compress(
                np.ascontiguousarray(block),
                settings["cname"].encode(),
                settings["clevel"],
                _SHUFFLE[settings["shuffle"]],
                0,
            )
        blocks.append(body + google_crc32c.value(body).to_bytes(4, "little"))
    return blocks


@st.composite
def rows_to_encode(draw: st.DrawFn) -> tuple[RowLayout, np.ndarray]:
    dtype = np.dtype(draw(st.sampled_from(["<f4", ">f4", "<f8", "<i2", "<u8", "u1", "?"])))
    row_shape = draw(st.sampled_from([(), (2,), (3,), (2, 2)]))
    r = draw(st.sampled_from([1, 8, 33]))
    n = draw(st.integers(1, 4 * r))
    rows = draw(hnp.arrays(dtype, (n, *row_shape), elements={"allow_nan": False}))
    shuffle = draw(st.sampled_from(sorted(_SHUFFLE)))
    compression = (
        {"cname": "lz4", "clevel": draw(st.integers(1, 9)), "shuffle": shuffle}
        if draw(st.booleans())
        else None
    )
    fill = draw(st.integers(0, 1))
    layout = RowLayout(dtype.newbyteorder("<"), row_shape, r, -(-n // r) * r, compression, fill)
    return layout, rows


@settings(max_examples=80, deadline=None)
@given(rows_to_encode())
def test_encoded_blocks_and_shards_match_the_twin(case: tuple[RowLayout, np.ndarray]) -> None:
    """Natively encoded row blocks are byte for byte numcodecs' (the golden stores pin the
    bytes), and a shard of them is the shard assembled from the twin's blocks."""
    layout, rows = case
    assert native_encode_functions() is not None
    expected = naive_encode(layout, rows)
    assert layout.encode_blocks(rows) == expected
    assert layout.encode_shard(rows, "a/c/0") == layout.assemble_shard([(0, expected)], "a/c/0")


@settings(max_examples=60, deadline=None)
@given(
    rows_to_encode(),
    st.sampled_from([None, "lz4", "zstd"]),
    st.lists(st.integers(0, 40), min_size=1, max_size=5),
)
def test_chunks_padded_in_the_kernel_match_the_twin(
    case: tuple[RowLayout, np.ndarray], cname: str | None, cuts: list[int]
) -> None:
    """Several chunks' rows encoded in one kernel call, each chunk's last block padded
    with the fill value inside the kernel (the rows are never padded in memory): the
    twin's blocks chunk by chunk, for raw, C-Blosc and Zstandard (own encoder) blocks."""
    layout, rows = case
    if cname is not None:
        codec = {"cname": cname, "clevel": 1, "shuffle": "bitshuffle"}
        layout = RowLayout(
            layout.dtype, layout.row_shape, layout.rows_per_block, layout.n_max, codec, layout.fill
        )
    elif layout.blosc is not None:
        layout = RowLayout(
            layout.dtype, layout.row_shape, layout.rows_per_block, layout.n_max, None, layout.fill
        )
    bounds = sorted({0, rows.shape[0], *(min(c, rows.shape[0]) for c in cuts)})
    chunks = [rows[a:b] for a, b in itertools.pairwise(bounds)] + [rows[:1]]
    expected = [naive_encode(layout, chunk) for chunk in chunks]
    assert layout.encode_chunks_blocks(chunks) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-2, 40), max_size=6),
    st.integers(1, 9),
    st.integers(-1, 1),
    st.integers(-1, 1),
    st.sampled_from([0, 1, 9]),
)
def test_block_spans_match_the_twin(
    sizes: list[int], block: int, off_total: int, off_blocks: int, pad: int
) -> None:
    """The blocks of chunks back to back, and the refusals (negative sizes, sizes that do
    not add up, another block count, a short block without padding): the twin's."""
    array = np.array(sizes, np.int64)
    total = max(0, sum(sizes)) + off_total
    blocks = sum(-(-max(0, n) // block) for n in sizes) + off_blocks
    if blocks < 0:
        return
    found = block_spans(array, block, total, blocks, pad)
    expected = naive.block_spans(array, block, total, blocks, pad)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert found[0].tolist() == expected[0].tolist()
        assert found[1].tolist() == expected[1].tolist()


def test_rows_encode_through_python_when_the_kernel_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = np.arange(90, dtype="<f8").reshape(30, 3) / 7
    layout = RowLayout(np.dtype("<f8"), (3,), 8, 32, BLOSC)
    monkeypatch.setattr(native_blocks, "encode_blocks", lambda *args: -1)
    assert layout.encode_blocks(rows) == naive_encode(layout, rows)
    expected = layout.assemble_shard([(0, naive_encode(layout, rows))], "a/c/0")
    assert layout.encode_shard(rows, "a/c/0") == expected


def test_the_encode_self_test_refuses_functions_that_differ_from_numcodecs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert NATIVE is not None
    found = native_encode_functions()
    assert found is not None
    assert native_blocks._native_encode_self_test(*found)
    real = native_blocks._numcodecs_blocks

    def other_level(rows: np.ndarray, per_block: int) -> list[bytes]:
        blocks = real(rows, per_block)
        return [blocks[0][:-5] + bytes([blocks[0][-5] ^ 1]) + blocks[0][-4:], *blocks[1:]]

    monkeypatch.setattr(native_blocks, "_numcodecs_blocks", other_level)
    assert not native_blocks._native_encode_self_test(*found)


def _stored_chunk(rows: np.ndarray, cname: str) -> np.ndarray:
    frame = bytes(Blosc(cname=cname, clevel=3, shuffle=Blosc.SHUFFLE, blocksize=1024).encode(rows))
    return np.frombuffer(frame + google_crc32c.value(frame).to_bytes(4, "little"), np.uint8)


@pytest.mark.skipif(zstd_context()[0] == 0, reason="no usable Zstandard functions")
def test_chunk_blocks_are_decoded_only_from_a_sound_zstd_chunk() -> None:
    """1: the wanted blocks decoded (the others untouched); 0: a sound chunk of another
    compressor or a ``wanted`` of the wrong length, left to the whole decode; -1: a
    checksum or a size that disagrees."""
    assert NATIVE is not None
    rows = (np.arange(1000) % 251).astype("<i4")  # 4000 bytes: 4 blocks of 1024
    chunk = _stored_chunk(rows, "zstd")
    wanted = np.array([1, 0, 0, 1], np.uint8)
    out = np.full(rows.nbytes, 0xEE, np.uint8)
    native = (NATIVE[0], *zstd_context())
    assert decode_chunk_blocks(chunk, out, wanted, *native) == 1
    expected = np.full(rows.nbytes, 0xEE, np.uint8)
    expected[:1024], expected[3072:] = rows.view(np.uint8)[:1024], rows.view(np.uint8)[3072:]
    np.testing.assert_array_equal(out, expected)
    assert decode_chunk_blocks(chunk, out, np.ones(5, np.uint8), *native) == 0
    assert decode_chunk_blocks(_stored_chunk(rows, "lz4"), out, wanted, *native) == 0
    damaged = chunk.copy()
    damaged[30] ^= 1
    assert decode_chunk_blocks(damaged, out, wanted, *native) == -1
    assert decode_chunk_blocks(chunk, out[:-4], wanted, *native) == -1  # another size
