"""Bulk manifest kernels (spec §7) against the pure-Python codec of format.manifest."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from zarr_vectors.errors import InvalidInputError, ManifestError
from zarr_vectors.format import manifest as fm
from zarr_vectors.format.manifest import (
    ManifestBlock,
    decode_manifest,
    decode_object_index_bulk,
    encode_manifest,
    encode_object_index,
    encode_object_index_bulk,
    split_object_index,
)
from zarr_vectors.kernels import decode_manifests, encode_manifests
from zarr_vectors.kernels import manifests as km

Array = npt.NDArray[Any]
MAX = km.MAX_FRAGMENT_ID
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
EXAMPLE = (Path(__file__).parents[1] / "format" / "golden" / "manifest_example.bin").read_bytes()
EXAMPLE_ROWS = (
    [[0, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 0], [1, 1, 0]],
    [0, 2, 3, 4, 5, 1, 4],
)
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ = settings(
    max_examples=examples(100, 300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
FUZZ_LIMIT = 5_000  # max_refs in fuzz runs, so the Python reference never expands huge ranges


class Runs:
    """Fragment references of objects 0..n-1: per object a list of (chunk, fragment)."""

    def __init__(self, ndim: int, objects: list[list[tuple[tuple[int, ...], int]]]) -> None:
        self.ndim = ndim
        self.objects = objects

    def arrays(self) -> tuple[Array, Array, Array]:
        rows = [(k, c, f) for k, refs in enumerate(self.objects) for c, f in refs]
        obj = np.array([r[0] for r in rows], dtype=np.int64)
        chunk = np.array([r[1] for r in rows], dtype=np.int64).reshape(len(rows), self.ndim)
        frag = np.array([r[2] for r in rows], dtype=np.int64)
        return obj, chunk, frag

    def blocks(self, k: int) -> list[ManifestBlock]:
        """Reference blocking (spec §7.2): one block per maximal same-chunk sequence."""
        out: list[tuple[tuple[int, ...], list[int]]] = []
        for chunk, frag in self.objects[k]:
            if out and out[-1][0] == chunk:
                out[-1][1].append(frag)
            else:
                out.append((chunk, [frag]))
        return [ManifestBlock(c, np.array(f, dtype=np.int64)) for c, f in out]

    def reference(self) -> tuple[bytes, Array]:
        n = len(self.objects)
        return encode_object_index([encode_manifest(self.blocks(k), self.ndim) for k in range(n)])


@st.composite
def fragment_segment(draw: st.DrawFn) -> list[int]:
    kind = draw(st.sampled_from(["single", "ascending", "descending", "random", "repeat"]))
    base = draw(st.one_of(st.integers(0, 40), st.integers(MAX - 12, MAX - 6)))
    n = draw(st.integers(2, 6))
    if kind == "single":
        return [base]
    if kind == "ascending":
        return list(range(base, base + n))
    if kind == "descending":
        return list(range(base + n, base, -1))
    if kind == "repeat":
        return [base] * n
    return draw(st.lists(st.sampled_from([0, 1, 2, 3, 7, MAX - 1, MAX]), min_size=1, max_size=6))


@st.composite
def runs(draw: st.DrawFn, max_objects: int = 7) -> Runs:
    ndim = draw(st.integers(2, 4))
    coord = st.one_of(st.integers(-3, 3), st.sampled_from([I64_MIN, I64_MAX, -(2**40)]))
    pool = draw(st.lists(st.tuples(*[coord] * ndim), min_size=1, max_size=4, unique=True))
    objects = []
    for _ in range(draw(st.integers(0, max_objects))):
        refs: list[tuple[tuple[int, ...], int]] = []
        for _ in range(draw(st.integers(0, 5))):
            chunk = draw(st.sampled_from(pool))
            refs.extend((chunk, f) for f in draw(fragment_segment()))
        objects.append(refs)
    return Runs(ndim, objects)


def reference_decode(
    data: bytes | Array, offsets: Array, ids: Array, ndim: int
) -> tuple[Array, Array, Array]:
    """Expected decode_manifests output, built from split_object_index + decode_manifest."""
    blobs = split_object_index(data, offsets)
    obj: list[int] = []
    chunk: list[tuple[int, ...]] = []
    frag: list[int] = []
    for j, k in enumerate(ids.tolist()):
        if not 0 <= k < len(blobs):
            raise ManifestError(f"object {k} out of range")
        for block in decode_manifest(blobs[k], ndim):
            obj.extend([j] * block.fragments.size)
            chunk.extend([block.chunk] * block.fragments.size)
            frag.extend(block.fragments.tolist())
    return (
        np.array(obj, dtype=np.int64),
        np.array(chunk, dtype=np.int64).reshape(len(chunk), ndim),
        np.array(frag, dtype=np.int64),
    )


def assert_rows_equal(
    got: tuple[Array, Array, Array], expected: tuple[Array, Array, Array]
) -> None:
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.int64
        assert g.shape == e.shape
        np.testing.assert_array_equal(g, e)


def check_consistent(data: bytes | Array, offsets: Array, ids: Array, ndim: int) -> None:
    """Bulk decode raises ManifestError, or agrees with the reference; nothing else."""
    try:
        got = decode_object_index_bulk(data, offsets, ids, ndim, max_refs=FUZZ_LIMIT)
    except ManifestError as exc:
        msg = str(exc)
        assert "object" in msg
        if "max_refs" in msg:
            return
        with pytest.raises(ManifestError):
            reference_decode(data, offsets, ids, ndim)
        return
    assert_rows_equal(got, reference_decode(data, offsets, ids, ndim))


def block_bytes(chunk: tuple[int, ...], mode: int, *payload: int, n: int | None = None) -> bytes:
    """One block assembled with struct, independent of both encoders."""
    out = struct.pack(f"<{len(chunk)}qB", *chunk, mode)
    if n is not None:
        out += struct.pack("<I", n)
    return out + struct.pack(f"<{len(payload)}q", *payload)


def manifest(*blocks: bytes) -> bytes:
    return struct.pack("<I", len(blocks)) + b"".join(blocks)


def container(*blobs: bytes) -> tuple[Array, Array]:
    data, offsets = encode_object_index(list(blobs))
    return np.frombuffer(data, dtype=np.uint8), offsets


# --------------------------------------------------------------------------- properties


@PROPS
@given(runs())
def test_encode_matches_python_codec(r: Runs) -> None:
    data, offsets = encode_manifests(*r.arrays(), len(r.objects))
    ref_data, ref_offsets = r.reference()
    assert data.dtype == np.uint8
    assert data.ndim == 1
    assert offsets.dtype == np.int64
    assert offsets.shape == (len(r.objects),)
    assert data.tobytes() == ref_data
    np.testing.assert_array_equal(offsets, ref_offsets)


@PROPS
@given(runs(), st.data())
def test_decode_round_trip_any_ids(r: Runs, data: st.DataObject) -> None:
    n = len(r.objects)
    buf, offsets = encode_object_index_bulk(*r.arrays(), n)
    ids = np.array(
        data.draw(st.lists(st.integers(0, n - 1), max_size=12)) if n else [], dtype=np.int64
    )
    ref_object, ref_chunk, ref_fragment = decode_object_index_bulk(buf, offsets, ids, r.ndim)
    expected = [(j, c, f) for j, k in enumerate(ids.tolist()) for c, f in r.objects[k]]
    assert ref_object.tolist() == [e[0] for e in expected]
    assert [tuple(c) for c in ref_chunk.tolist()] == [e[1] for e in expected]
    assert ref_fragment.tolist() == [e[2] for e in expected]
    assert ref_chunk.shape == (len(expected), r.ndim)
    assert_rows_equal(
        (ref_object, ref_chunk, ref_fragment), reference_decode(buf, offsets, ids, r.ndim)
    )


@PROPS
@given(runs())
def test_all_ids_decode_back_to_the_runs(r: Runs) -> None:
    obj, chunk, frag = r.arrays()
    data, offsets = encode_manifests(obj, chunk, frag, len(r.objects))
    got = decode_manifests(data, offsets, np.arange(len(r.objects)), r.ndim)
    assert_rows_equal(got, (obj, chunk, frag))


def test_block_modes_follow_the_writer_rule() -> None:
    # Object 0: chunk A [5] | B [2, 3, 4] | A [9, 8] | A-again after B [1, 1] | B [7] [8]?
    a, b = (0, 0), (1, -1)
    refs = [(a, 5), (b, 2), (b, 3), (b, 4), (a, 9), (a, 8), (b, 1), (b, 1), (a, 7), (a, 8)]
    obj = np.zeros(len(refs), dtype=np.int64)
    chunk = np.array([c for c, _ in refs], dtype=np.int64)
    frag = np.array([f for _, f in refs], dtype=np.int64)
    data, offsets = encode_manifests(obj, chunk, frag, 2)
    blocks = decode_manifest(split_object_index(data, offsets)[0], 2)
    assert [(blk.chunk, blk.fragments.tolist(), blk.mode) for blk in blocks] == [
        (a, [5], 0),
        (b, [2, 3, 4], 1),
        (a, [9, 8], 2),
        (b, [1, 1], 2),
        (a, [7, 8], 1),
    ]
    assert bytes(split_object_index(data, offsets)[1]) == b"\x00\x00\x00\x00"


@pytest.mark.parametrize("n_objects", [0, 1, 5])
def test_no_runs_gives_empty_manifests(n_objects: int) -> None:
    data, offsets = encode_manifests(
        np.zeros(0, np.int64), np.zeros((0, 3), np.int64), np.zeros(0, np.int64), n_objects
    )
    assert data.tobytes() == b"\x00\x00\x00\x00" * n_objects
    assert offsets.tolist() == [4 * k for k in range(n_objects)]
    got = decode_manifests(data, offsets, np.arange(n_objects), 3)
    assert [a.size for a in got] == [0, 0, 0]
    assert got[1].shape == (0, 3)


def test_accepts_other_integer_dtypes_and_lists() -> None:
    data, offsets = encode_manifests(
        [0, 0, 2], np.array([[1, 2], [1, 2], [0, 0]], np.int32), np.array([4, 5, 6], np.uint32), 3
    )
    ref, _ = Runs(2, [[((1, 2), 4), ((1, 2), 5)], [], [((0, 0), 6)]]).reference()
    assert data.tobytes() == ref
    got = decode_manifests(data.tobytes(), offsets.astype(np.uint64), np.array([2, 0], np.int32), 2)
    assert got[0].tolist() == [0, 1, 1]
    assert got[2].tolist() == [6, 4, 5]


# --------------------------------------------------------------------------- golden bytes


def test_golden_manifest_through_the_bulk_decoder() -> None:
    assert len(EXAMPLE) == 131
    data = np.frombuffer(EXAMPLE, dtype=np.uint8)
    ref_object, ref_chunk, ref_fragment = decode_object_index_bulk(data, np.array([0]), [0], 3)
    assert ref_object.tolist() == [0] * 7
    assert ref_chunk.tolist() == EXAMPLE_ROWS[0]
    assert ref_fragment.tolist() == EXAMPLE_ROWS[1]


def test_golden_manifest_in_a_container() -> None:
    empty = b"\x00\x00\x00\x00"
    data, offsets = container(empty, EXAMPLE, empty, EXAMPLE)
    assert offsets.tolist() == [0, 4, 135, 139]
    got = decode_object_index_bulk(data, offsets, [3, 2, 1, 1], 3)
    assert got[0].tolist() == [0] * 7 + [2] * 7 + [3] * 7
    assert got[1].tolist() == EXAMPLE_ROWS[0] * 3
    assert got[2].tolist() == EXAMPLE_ROWS[1] * 3


def test_golden_manifest_is_what_the_bulk_encoder_writes() -> None:
    chunk, frag = EXAMPLE_ROWS
    data, offsets = encode_object_index_bulk(np.zeros(7, np.int64), chunk, frag, 1)
    assert data.tobytes() == EXAMPLE
    assert offsets.tolist() == [0]


def test_non_canonical_valid_blocks_decode() -> None:
    # Readers must accept mode 1 with count 1 (and 0), mode 2 with m = 0 or 1, repeats.
    blob = manifest(
        block_bytes((4, 4), 1, 7, 1),
        block_bytes((4, 4), 1, 3, 0),
        block_bytes((5, 5), 2, n=0),
        block_bytes((5, 5), 2, 6, n=1),
        block_bytes((4, 4), 1, MAX, 1),
        block_bytes((4, 4), 2, 1, 1, n=2),
    )
    data, offsets = container(blob)
    got = decode_manifests(data, offsets, [0], 2)
    assert got[2].tolist() == [7, 6, MAX, 1, 1]
    assert got[1].tolist() == [[4, 4], [5, 5], [4, 4], [4, 4], [4, 4]]
    assert_rows_equal(got, reference_decode(data, offsets, np.array([0]), 2))


def test_large_range_expands_exactly() -> None:
    data, offsets = container(manifest(block_bytes((0,), 1, MAX - 99_999, 100_000)))
    _, ref_chunk, ref_fragment = decode_manifests(data, offsets, [0, 0], 1)
    assert ref_fragment.size == 200_000
    assert ref_fragment[99_999] == MAX
    assert ref_fragment[100_000] == MAX - 99_999
    assert not ref_chunk.any()


# --------------------------------------------------------------------------- strict decoding


def _patched(blob: bytes, offset: int, fmt: str, *values: int) -> bytes:
    out = bytearray(blob)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


EMPTY = b"\x00\x00\x00\x00"
MALFORMED = {
    "unknown mode": (_patched(EXAMPLE, 28, "<B", 3), 28, "unknown mode 3"),
    "truncated payload": (EXAMPLE[:130], 107, "truncated payload"),
    "truncated header": (EXAMPLE[:60], 37, "truncated block 1 of 3"),
    "truncated count": (b"\x00\x00\x00", 0, "truncated block count"),
    "trailing bytes": (EXAMPLE + b"\x00", 131, "1 trailing bytes"),
    "negative mode 0": (_patched(EXAMPLE, 29, "<q", -1), 29, "fragment id -1 is negative"),
    "big mode 0": (_patched(EXAMPLE, 29, "<q", MAX + 1), 29, f"fragment id {MAX + 1} exceeds"),
    "negative start": (_patched(EXAMPLE, 62, "<q", -2), 62, "fragment id -2 is negative"),
    "big start": (_patched(EXAMPLE, 62, "<q", I64_MAX), 62, f"fragment id {I64_MAX} exceeds"),
    "negative count": (_patched(EXAMPLE, 70, "<q", I64_MIN), 70, "count -9223372036854775808"),
    "range overflow": (_patched(EXAMPLE, 62, "<qq", MAX, 2), 70, "runs past fragment id"),
    "range int64 overflow": (_patched(EXAMPLE, 62, "<qq", MAX, I64_MAX), 70, "runs past"),
    "negative explicit": (_patched(EXAMPLE, 115, "<q", -5), 115, "fragment id -5 is negative"),
    "big explicit": (_patched(EXAMPLE, 123, "<q", 2**32), 123, "exceeds"),
    "huge explicit length": (_patched(EXAMPLE, 103, "<I", 2**32 - 1), 107, "truncated payload"),
    "huge block count": (_patched(EXAMPLE, 0, "<I", 2**32 - 1), 131, "truncated block 3 of"),
    "too many refs": (manifest(block_bytes((0, 0, 0), 1, 0, MAX + 1)), 37, "max_refs"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_blob_names_object_and_offset(case: str) -> None:
    blob, offset, what = MALFORMED[case]
    data, offsets = container(EMPTY, EMPTY, blob, EMPTY)
    start = int(offsets[2])
    with pytest.raises(ManifestError) as info:
        decode_manifests(data, offsets, [1, 2, 0], 3)
    msg = str(info.value)
    assert f"object 2, byte offset {offset} of its manifest (data byte {start + offset})" in msg
    assert what in msg
    # Requested objects only: the broken one is never read when not asked for.
    assert decode_manifests(data, offsets, [3, 1, 0], 3)[0].size == 0


def test_max_refs_is_a_parameter() -> None:
    data, offsets = container(EXAMPLE, EXAMPLE)
    assert decode_manifests(data, offsets, [0, 1], 3, max_refs=14)[0].size == 14
    with pytest.raises(ManifestError, match="max_refs=13"):
        decode_manifests(data, offsets, [0, 1], 3, max_refs=13)


@pytest.mark.parametrize(
    ("offsets", "ids", "pattern"),
    [
        ([0, 140, 135], [1], r"object 1: object_index span data\[140:135\] at byte offset 140"),
        ([0, 4, 300], [2], r"object 2: object_index span data\[300:139\]"),
        ([0, -4, 135], [1], r"object 1: .*data\[-4:135\]"),
        ([4, 4, 135], [1], r"object 0: object_index offsets\[0\] = 4 is byte offset 4"),
        ([0, 4, 135], [3], r"ids\[0\] = 3: object id outside \[0, 3\)"),
        ([0, 4, 135], [0, -1], r"ids\[1\] = -1: object id outside"),
        ([0, 3, 135], [0], r"object 0, byte offset 0 .*truncated block count"),
        ([0, 4, 134], [1], r"object 1, byte offset 107 .*truncated payload"),
    ],
)
def test_bad_offsets_and_ids(offsets: list[int], ids: list[int], pattern: str) -> None:
    data, _ = container(EMPTY, EXAMPLE, EMPTY)
    with pytest.raises(ManifestError, match=pattern):
        decode_manifests(data, np.array(offsets), ids, 3)


def test_container_without_objects() -> None:
    got = decode_manifests(np.zeros(0, np.uint8), np.zeros(0, np.int64), [], 3)
    assert [a.shape for a in got] == [(0,), (0, 3), (0,)]
    with pytest.raises(ManifestError, match="no object but its data holds 4 bytes"):
        decode_manifests(np.zeros(4, np.uint8), np.zeros(0, np.int64), [], 3)
    with pytest.raises(ManifestError, match="outside"):
        decode_manifests(np.zeros(0, np.uint8), np.zeros(0, np.int64), [0], 3)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"data": np.zeros(4, np.int8)}, InvalidInputError, "uint8"),
        ({"data": np.zeros((2, 2), np.uint8)}, InvalidInputError, "1-d uint8"),
        ({"offsets": np.zeros((1, 1), np.int64)}, ManifestError, "offsets must be a 1-d"),
        ({"offsets": np.zeros(1)}, ManifestError, "integer"),
        ({"offsets": np.array([2**64 - 1], np.uint64)}, ManifestError, "int64 range"),
        ({"ids": [0.0]}, InvalidInputError, "ids must be"),
        ({"ndim": 0}, InvalidInputError, "ndim"),
        ({"ndim": True}, InvalidInputError, "ndim"),
        ({"ndim": 2**40}, InvalidInputError, "ndim"),
        ({"max_refs": -1}, InvalidInputError, "max_refs"),
    ],
)
def test_decode_argument_errors(
    kwargs: dict[str, Any], error: type[Exception], pattern: str
) -> None:
    args: dict[str, Any] = {
        "data": np.zeros(4, np.uint8),
        "offsets": np.zeros(1, np.int64),
        "ids": [0],
        "ndim": 3,
    }
    args.update(kwargs)
    with pytest.raises(error, match=pattern):
        decode_manifests(**args)


# --------------------------------------------------------------------------- encoder input


@pytest.mark.parametrize(
    ("obj", "frag", "n", "pattern"),
    [
        ([0, 2], [0, 0], 2, r"run_object\[1\] = 2 is outside \[0, 2\)"),
        ([-1, 0], [0, 0], 2, r"run_object\[0\] = -1 is outside"),
        ([1, 0], [0, 0], 2, r"non-decreasing: run_object\[1\] = 0 follows 1"),
        ([0, 0], [0, -1], 1, r"run_fragment\[1\] = -1 is outside \[0, 4294967294\]"),
        ([0, 1], [MAX + 1, 0], 2, r"run_fragment\[0\] = 4294967295"),
        ([0], [0, 1], 1, "same number of rows"),
    ],
)
def test_encode_rejects_bad_runs(obj: list[int], frag: list[int], n: int, pattern: str) -> None:
    chunk = np.zeros((len(obj), 2), np.int64)
    with pytest.raises(InvalidInputError, match=pattern):
        encode_manifests(obj, chunk, frag, n)


@pytest.mark.parametrize(
    ("chunk", "n", "pattern"),
    [
        (np.zeros((1, 0), np.int64), 1, "D in"),
        (np.zeros(1, np.int64), 1, "run_chunk must be a 2-d"),
        (np.zeros((1, 2)), 1, "integer"),
        (np.zeros((1, 2), np.int64), -1, "n_objects"),
        (np.zeros((1, 2), np.int64), 1.0, "n_objects"),
        (np.full((1, 2), 2**64 - 1, np.uint64), 1, "int64 range"),
    ],
)
def test_encode_argument_errors(chunk: Array, n: Any, pattern: str) -> None:
    with pytest.raises(InvalidInputError, match=pattern):
        encode_manifests([0], chunk, [0], n)


def test_constants_agree_with_the_format_layer() -> None:
    assert km.MAX_FRAGMENT_ID == fm.MAX_FRAGMENT_ID


# --------------------------------------------------------------------------- fuzz


@FUZZ
@given(
    st.binary(max_size=160),
    st.lists(st.integers(-8, 170), max_size=5),
    st.integers(1, 4),
    st.randoms(use_true_random=False),
)
def test_fuzz_arbitrary_bytes(blob: bytes, cuts: list[int], ndim: int, rnd: Any) -> None:
    offsets = np.array(cuts, dtype=np.int64)
    ids = np.arange(offsets.size, dtype=np.int64)
    rnd.shuffle(ids)
    check_consistent(blob, offsets, ids, ndim)
    # Sorted cut points from 0: mostly well-formed containers of garbage blobs.
    sorted_cuts = np.array(sorted({0, *(c for c in cuts if 0 <= c <= len(blob))}), np.int64)
    check_consistent(blob, sorted_cuts, np.arange(sorted_cuts.size), ndim)


@FUZZ
@given(runs(max_objects=4), st.data())
def test_fuzz_mutated_containers(r: Runs, data: st.DataObject) -> None:
    buf, offsets = encode_manifests(*r.arrays(), len(r.objects))
    blob = bytearray(buf.tobytes())
    offs = offsets.copy()
    for _ in range(data.draw(st.integers(1, 3))):
        action = data.draw(st.sampled_from(["byte", "word", "truncate", "insert", "offset"]))
        if action == "byte" and blob:
            blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
        elif action == "word" and len(blob) >= 8:
            at = data.draw(st.integers(0, len(blob) - 8))
            value = data.draw(
                st.sampled_from([-1, 0, 1, 2, 3, MAX, MAX + 1, 2**32, I64_MIN, I64_MAX])
            )
            fmt = data.draw(st.sampled_from(["<q", "<I"]))
            struct.pack_into(fmt, blob, at, value % 2**32 if fmt == "<I" else value)
        elif action == "truncate" and blob:
            del blob[data.draw(st.integers(0, len(blob) - 1)) :]
        elif action == "insert":
            at = data.draw(st.integers(0, len(blob)))
            blob[at:at] = data.draw(st.binary(min_size=1, max_size=9))
        elif action == "offset" and offs.size:
            offs[data.draw(st.integers(0, offs.size - 1))] += data.draw(st.integers(-9, 9))
    ids = np.array(data.draw(st.permutations(range(offs.size))), dtype=np.int64)
    check_consistent(np.frombuffer(bytes(blob), np.uint8), offs, ids, r.ndim)


def test_error_messages_are_single_line() -> None:
    for blob, _, _ in MALFORMED.values():
        data, offsets = container(blob)
        with pytest.raises(ManifestError) as info:
            decode_manifests(data, offsets, [0], 3)
        assert re.fullmatch(r"object 0, byte offset \d+ .*\(spec §7\)", str(info.value))
