"""Tests of object manifest blobs and the object_index container (spec §7)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import InvalidInputError, ManifestError
from zarr_vectors.format.manifest import (
    MAX_FRAGMENT_ID,
    ManifestBlock,
    decode_manifest,
    encode_manifest,
    encode_object_index,
    split_object_index,
)

GOLDEN = Path(__file__).parent / "golden"
EXAMPLE = (GOLDEN / "manifest_example.bin").read_bytes()
EXAMPLE_BLOCKS = [
    ManifestBlock((0, 0, 0), np.array([0])),
    ManifestBlock((1, 0, 0), np.array([2, 3, 4])),
    ManifestBlock((1, 1, 0), np.array([5, 1, 4])),
]
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def patch(blob: bytes, offset: int, fmt: str, *values: int) -> bytes:
    out = bytearray(blob)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def block_bytes(chunk: tuple[int, ...], mode: int, *payload: int, n: int | None = None) -> bytes:
    """One block assembled with struct, independent of the encoder."""
    out = struct.pack(f"<{len(chunk)}qB", *chunk, mode)
    if n is not None:
        out += struct.pack("<I", n)
    return out + struct.pack(f"<{len(payload)}q", *payload)


# --------------------------------------------------------------------------- golden bytes


def test_golden_manifest_decodes() -> None:
    assert len(EXAMPLE) == 131
    blocks = decode_manifest(EXAMPLE, 3)
    assert blocks == EXAMPLE_BLOCKS
    assert [b.chunk for b in blocks] == [(0, 0, 0), (1, 0, 0), (1, 1, 0)]
    assert [b.fragments.tolist() for b in blocks] == [[0], [2, 3, 4], [5, 1, 4]]
    assert [b.mode for b in blocks] == [0, 1, 2]
    assert [b.nbytes() for b in blocks] == [33, 41, 53]
    assert all(isinstance(c, int) for b in blocks for c in b.chunk)


def test_golden_manifest_encodes() -> None:
    assert encode_manifest(EXAMPLE_BLOCKS, 3) == EXAMPLE
    assert encode_manifest(iter(decode_manifest(EXAMPLE, 3)), 3) == EXAMPLE
    assert decode_manifest(np.frombuffer(EXAMPLE, np.uint8), 3) == EXAMPLE_BLOCKS
    assert decode_manifest(memoryview(EXAMPLE), 3) == EXAMPLE_BLOCKS


def test_golden_matches_independent_builder() -> None:
    built = (
        struct.pack("<I", 3)
        + block_bytes((0, 0, 0), 0, 0)
        + block_bytes((1, 0, 0), 1, 2, 3)
        + block_bytes((1, 1, 0), 2, 5, 1, 4, n=3)
    )
    assert built == EXAMPLE


def test_empty_manifest() -> None:
    assert encode_manifest([], 3) == b"\x00\x00\x00\x00"
    assert decode_manifest(b"\x00\x00\x00\x00", 3) == []


def test_mode_choice() -> None:
    cases = {
        (7,): 0,
        (7, 8): 1,
        (0, 1, 2, 3): 1,
        (8, 7): 2,
        (1, 1): 2,
        (1, 3): 2,
        (): 2,
    }
    for frags, mode in cases.items():
        block = ManifestBlock((1, 2), np.array(frags, dtype=np.int64))
        assert block.mode == mode
        blob = encode_manifest([block], 2)
        assert blob[4 + 16] == mode
        assert len(blob) == 4 + block.nbytes()
        assert decode_manifest(blob, 2) == [block]


def test_mode1_zero_count_decodes_to_empty_block() -> None:
    blob = struct.pack("<I", 1) + block_bytes((3,), 1, 9, 0)
    assert decode_manifest(blob, 1) == [ManifestBlock((3,), np.zeros(0, np.int64))]


def test_negative_chunk_coordinates_round_trip() -> None:
    blocks = [ManifestBlock((-1, -(2**63), 2**63 - 1), np.array([MAX_FRAGMENT_ID]))]
    assert decode_manifest(encode_manifest(blocks, 3), 3) == blocks


# --------------------------------------------------------------------------- model validation


@pytest.mark.parametrize(
    ("chunk", "frags"),
    [
        ((0, 0), [-1]),
        ((0, 0), [MAX_FRAGMENT_ID + 1]),
        ((0, 0), [[1, 2]]),
        ((0, 0), [1.0]),
        ((0.5, 0), [1]),
        ((2**63, 0), [1]),
    ],
)
def test_block_rejects(chunk: Any, frags: Any) -> None:
    with pytest.raises(InvalidInputError):
        ManifestBlock(chunk, np.asarray(frags))


def test_block_is_immutable_copy() -> None:
    src: Any = np.array([3, 4], dtype=np.int32)  # other int dtypes are converted
    block = ManifestBlock((0,), src)
    src[0] = 9
    assert block.fragments.tolist() == [3, 4]
    assert block.fragments.dtype == np.int64
    assert not block.fragments.flags.writeable
    assert "fragments=[3, 4]" in repr(block)
    assert block != ManifestBlock((1,), src)
    assert block != "block"


def test_encode_rejects_wrong_ndim() -> None:
    with pytest.raises(InvalidInputError, match="expected 3"):
        encode_manifest([ManifestBlock((0, 0), np.array([1]))], 3)
    with pytest.raises(InvalidInputError):
        encode_manifest([], 0)
    with pytest.raises(InvalidInputError):
        decode_manifest(EXAMPLE, 0)


# --------------------------------------------------------------------------- strictness

ONE = struct.pack("<I", 1)
# (id, blob, byte offset named in the message, message fragment); all with ndim = 3
STRICT_CASES: list[tuple[str, bytes, int, str]] = [
    ("no-count", b"\x01\x00", 0, "truncated block count"),
    ("empty-buffer", b"", 0, "truncated block count"),
    ("missing-block", patch(EXAMPLE, 0, "<I", 4), 131, "truncated block 3 of 4"),
    ("huge-block-count", patch(EXAMPLE, 0, "<I", 2**32 - 1), 131, "truncated block 3"),
    ("trunc-coords", EXAMPLE[:20], 4, "truncated block 0"),
    ("trunc-mode0-fragment", EXAMPLE[:33], 29, "truncated block 0 fragment id"),
    ("trunc-mode1-range", EXAMPLE[:70], 62, "truncated block 1 fragment range"),
    ("trunc-mode2-length", EXAMPLE[:105], 103, "truncated block 2 fragment list length"),
    ("trunc-mode2-list", EXAMPLE[:130], 107, "truncated block 2 fragment list (3 int64)"),
    ("trunc-mode2-huge-n", patch(EXAMPLE, 103, "<I", 2**32 - 1), 107, "fragment list"),
    ("unknown-mode-3", patch(EXAMPLE, 28, "<B", 3), 28, "unknown mode 3"),
    ("unknown-mode-255", patch(EXAMPLE, 102, "<B", 255), 102, "unknown mode 255"),
    ("trailing-byte", EXAMPLE + b"\x01", 131, "1 trailing bytes"),
    ("trailing-zero", EXAMPLE + b"\x00\x00", 131, "2 trailing bytes"),
    ("trailing-after-empty", b"\x00" * 5, 4, "1 trailing bytes"),
    ("mode0-negative", patch(EXAMPLE, 29, "<q", -1), 29, "fragment id -1 is negative"),
    ("mode0-too-large", patch(EXAMPLE, 29, "<q", 2**32), 29, "exceeds"),
    ("mode1-negative-start", patch(EXAMPLE, 62, "<q", -2), 62, "fragment id -2 is negative"),
    ("mode1-negative-count", patch(EXAMPLE, 70, "<q", -3), 70, "fragment count -3 is negative"),
    (
        "mode1-count-overflow",
        patch(EXAMPLE, 70, "<q", 2**63 - 1),
        70,
        "runs past fragment id",
    ),
    (
        "mode1-run-past-max",
        ONE + block_bytes((0, 0, 0), 1, MAX_FRAGMENT_ID, 2),
        37,
        "runs past fragment id",
    ),
    ("mode2-negative", patch(EXAMPLE, 115, "<q", -5), 115, "fragment id -5 is negative"),
    ("mode2-too-large", patch(EXAMPLE, 123, "<q", 2**40), 123, "exceeds"),
]


@pytest.mark.parametrize(
    ("blob", "offset", "text"),
    [case[1:] for case in STRICT_CASES],
    ids=[case[0] for case in STRICT_CASES],
)
def test_strict_decoder_rejects(blob: bytes, offset: int, text: str) -> None:
    with pytest.raises(ManifestError) as info:
        decode_manifest(blob, 3)
    message = str(info.value)
    assert text in message
    assert f"byte offset {offset}:" in message


def test_every_truncation_is_rejected() -> None:
    for n in range(len(EXAMPLE)):
        with pytest.raises(ManifestError):
            decode_manifest(EXAMPLE[:n], 3)


def test_boundary_values_accepted() -> None:
    blob = ONE + block_bytes((0, 0, 0), 1, MAX_FRAGMENT_ID - 1, 2)
    assert decode_manifest(blob, 3)[0].fragments.tolist() == [MAX_FRAGMENT_ID - 1, MAX_FRAGMENT_ID]
    blob = ONE + block_bytes((0, 0, 0), 0, MAX_FRAGMENT_ID)
    assert decode_manifest(blob, 3)[0].fragments.tolist() == [MAX_FRAGMENT_ID]


# --------------------------------------------------------------------------- object_index container


def test_object_index_round_trip() -> None:
    blobs = [EXAMPLE, b"\x00\x00\x00\x00", encode_manifest(EXAMPLE_BLOCKS[:1], 3)]
    data, offsets = encode_object_index(blobs)
    assert data == b"".join(blobs)
    assert offsets.dtype == np.int64
    assert offsets.tolist() == [0, 131, 135]
    parts = split_object_index(data, offsets)
    assert [bytes(p) for p in parts] == blobs
    assert decode_manifest(parts[0], 3) == EXAMPLE_BLOCKS
    parts_u = split_object_index(np.frombuffer(data, np.uint8), offsets.astype(np.uint64))
    assert [bytes(p) for p in parts_u] == blobs


def test_object_index_empty() -> None:
    data, offsets = encode_object_index([])
    assert data == b""
    assert offsets.shape == (0,)
    assert split_object_index(b"", np.zeros(0, np.int64)) == []
    assert split_object_index(b"", []) == []
    data, offsets = encode_object_index([b"\x00\x00\x00\x00"])
    assert offsets.tolist() == [0]
    assert [bytes(p) for p in split_object_index(data, offsets)] == [b"\x00\x00\x00\x00"]


@pytest.mark.parametrize(
    ("data", "offsets", "text"),
    [
        (b"abcd", [1, 2], r"offsets\[0\] = 1"),
        (b"abcd", [0, 3, 2], r"offsets\[2\] = 2 < offsets\[1\] = 3"),
        (b"abcd", [0, 5], r"offsets\[1\] = 5 points past the end"),
        (b"abcd", [0, 2, 5, 9], r"offsets\[2\] = 5 points past the end"),
        (b"abcd", [], "no object but its data holds 4 bytes"),
        (b"abcd", [[0]], "1-D"),
        (b"abcd", [0.0], "integers"),
        (b"abcd", np.array([0, 2**64 - 1], dtype=np.uint64), "int64 range"),
        (b"abcd", [0, -1], r"offsets\[1\] = -1 < offsets\[0\] = 0"),
    ],
)
def test_split_object_index_rejects(data: bytes, offsets: Any, text: str) -> None:
    with pytest.raises(ManifestError, match=text):
        split_object_index(data, offsets)


def test_split_object_index_allows_equal_offsets() -> None:
    parts = split_object_index(b"abcd", [0, 0, 4])
    assert [bytes(p) for p in parts] == [b"", b"abcd", b""]


# --------------------------------------------------------------------------- round trips and fuzz


@st.composite
def blocks_strategy(draw: st.DrawFn, ndim: int) -> ManifestBlock:
    chunk = tuple(draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=ndim, max_size=ndim)))
    frag_id = st.one_of(st.integers(0, 50), st.integers(0, MAX_FRAGMENT_ID))
    kind = draw(st.sampled_from(["single", "run", "list"]))
    if kind == "single":
        frags = [draw(frag_id)]
    elif kind == "run":
        start = draw(st.integers(0, MAX_FRAGMENT_ID - 10))
        frags = list(range(start, start + draw(st.integers(0, 10))))
    else:
        frags = draw(st.lists(frag_id, max_size=8))
    return ManifestBlock(chunk, np.array(frags, dtype=np.int64))


@st.composite
def manifests(draw: st.DrawFn) -> tuple[int, list[ManifestBlock]]:
    ndim = draw(st.integers(1, 4))
    return ndim, draw(st.lists(blocks_strategy(ndim), max_size=8))


@given(case=manifests())
@settings(max_examples=200, deadline=None)
def test_round_trip(case: tuple[int, list[ManifestBlock]]) -> None:
    ndim, blocks = case
    blob = encode_manifest(blocks, ndim)
    assert len(blob) == 4 + sum(b.nbytes() for b in blocks)
    back = decode_manifest(blob, ndim)
    assert back == blocks
    assert encode_manifest(back, ndim) == blob


@given(many=st.lists(manifests().map(lambda c: encode_manifest(c[1], c[0])), max_size=10))
@settings(max_examples=50, deadline=None)
def test_object_index_round_trip_property(many: list[bytes]) -> None:
    data, offsets = encode_object_index(many)
    assert [bytes(p) for p in split_object_index(data, offsets)] == many


def check_buffer(buf: bytes, ndim: int) -> None:
    try:
        blocks = decode_manifest(buf, ndim)
    except ManifestError:
        return
    for block in blocks:
        assert len(block.chunk) == ndim
        assert block.fragments.dtype == np.int64
        assert ((block.fragments >= 0) & (block.fragments <= MAX_FRAGMENT_ID)).all()
    again = encode_manifest(blocks, ndim)
    assert decode_manifest(again, ndim) == blocks


@given(buf=st.binary(max_size=200), ndim=st.integers(1, 4))
@FUZZ
def test_fuzz_arbitrary_bytes(buf: bytes, ndim: int) -> None:
    check_buffer(buf, ndim)


@given(
    case=manifests(),
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 7)), max_size=4),
    cut=st.one_of(st.none(), st.integers(0, 10**6)),
    extra=st.binary(max_size=12),
)
@FUZZ
def test_fuzz_mutated_valid_blobs(
    case: tuple[int, list[ManifestBlock]],
    flips: list[tuple[int, int]],
    cut: int | None,
    extra: bytes,
) -> None:
    ndim, blocks = case
    blob = bytearray(encode_manifest(blocks, ndim))
    for pos, bit in flips:
        blob[pos % len(blob)] ^= 1 << bit
    if cut is not None:
        del blob[cut % (len(blob) + 1) :]
    blob += extra
    check_buffer(bytes(blob), ndim)
