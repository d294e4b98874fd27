"""Row blocks encoded as Blosc zstd frames through a reused Zstandard context
(kernels/zstd_encode.py, store/zstd_encoder.py) against C-Blosc itself: the library's
``blosc_compress_ctx`` and numcodecs' Blosc (the bytes the golden fixtures pin), with the
kernel run as machine code and as its own Python source."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numcodecs import Blosc

from zarr_vectors.kernels._jit import set_kernel_mode
from zarr_vectors.kernels.row_blocks import BLOSC_MAX_OVERHEAD, encode_blocks
from zarr_vectors.store import native_blocks, zstd_encoder
from zarr_vectors.store.native_blocks import blosc_libraries, native_encode_functions
from zarr_vectors.store.shards import RowLayout

NATIVE = native_encode_functions()
ENCODER = None if NATIVE is None else zstd_encoder.zstd_encoder(*NATIVE, blosc_libraries())
pytestmark = pytest.mark.skipif(ENCODER is None, reason="no usable Zstandard encoder")
_ZSTD = np.frombuffer(b"zstd\0", dtype=np.uint8)
_SHUFFLES = [Blosc.NOSHUFFLE, Blosc.SHUFFLE, Blosc.BITSHUFFLE]


def _data(kind: str, nbytes: int, seed: int) -> np.ndarray:
    """Bytes that compress (smooth), do not (noise), or hardly differ (sparse)."""
    rng = np.random.default_rng(seed)
    if kind == "noise":
        return rng.integers(0, 256, nbytes, dtype=np.uint8)
    if kind == "sparse":
        data = np.zeros(nbytes, dtype=np.uint8)
        data[rng.integers(0, nbytes, 1 + nbytes // 500)] = 7
        return data
    steps = rng.integers(0, 3, nbytes // 4 + 1).astype("<f4")
    return np.cumsum(steps, dtype="<f4").view(np.uint8)[:nbytes].copy()


def _both(data: np.ndarray, n: int, settings_: tuple[int, int, int]) -> tuple[bytes, bytes]:
    """The blocks of ``data`` (``n`` bytes each, the last as the tail) by this encoder
    and by C-Blosc's ``blosc_compress_ctx`` (their lengths checked equal); both empty
    when the encoder declines, as it must below 128 bytes."""
    assert ENCODER is not None
    assert NATIVE is not None
    k = data.shape[0] // n
    rows, pad = data[: k * n], data[:0]
    sizes = np.array([k * n], np.int64)
    size = k * (n + BLOSC_MAX_OVERHEAD + 4)
    ours, theirs = np.zeros(size, np.uint8), np.zeros(size, np.uint8)
    lengths, expected = np.zeros(k, np.int64), np.zeros(k, np.int64)
    blocks = (rows, sizes, pad, n)
    done = zstd_encoder.encode_zstd(ENCODER, *blocks, ours, lengths, settings_)
    total = encode_blocks(*blocks, theirs, expected, (*settings_, _ZSTD), *NATIVE)
    assert total > 0
    if n < 128:  # C-Blosc stores such frames whole: left to it
        assert done is None
        return b"", b""
    assert done is not None
    assert lengths.tolist() == expected.tolist()
    return ours[:done].tobytes(), theirs[:total].tobytes()


@settings(max_examples=150, deadline=None)
@given(
    typesize=st.sampled_from([1, 2, 4, 8, 12, 16]),
    items=st.integers(8, 12000),
    blocks=st.integers(1, 3),
    clevel=st.sampled_from([1, 3]),
    shuffle=st.sampled_from(_SHUFFLES),
    kind=st.sampled_from(["smooth", "noise", "sparse"]),
    seed=st.integers(0, 2**16),
)
def test_frames_equal_c_blosc(
    typesize: int, items: int, blocks: int, clevel: int, shuffle: int, kind: str, seed: int
) -> None:
    """Every type size, shuffle and level the writer uses, one or several Blosc blocks
    per frame (a short last one: bit shuffle's trailing bytes), streams stored raw and
    frames stored whole: C-Blosc's bytes."""
    n = typesize * items
    ours, theirs = _both(_data(kind, n * blocks, seed), n, (clevel, shuffle, typesize))
    assert ours == theirs


@pytest.mark.parametrize("mode", ["python", "compiled"])
@pytest.mark.parametrize("shuffle", ["noshuffle", "shuffle", "bitshuffle"])
def test_row_layout_blocks_equal_numcodecs(mode: str, shuffle: str) -> None:
    """A layout's row blocks (which go through this encoder) are numcodecs' Blosc frames
    block by block, the kernel run as machine code and as Python."""
    rows = np.cumsum(np.random.default_rng(1).random((3000, 3)), axis=0).astype("<f4")
    layout = RowLayout(
        np.dtype("<f4"), (3,), 1024, 4096, {"cname": "zstd", "clevel": 1, "shuffle": shuffle}
    )
    codec = Blosc(
        cname="zstd",
        clevel=1,
        shuffle=_SHUFFLES[["noshuffle", "shuffle", "bitshuffle"].index(shuffle)],
        blocksize=0,
    )
    padded = np.concatenate([rows, np.zeros((72, 3), "<f4")])
    set_kernel_mode(mode)
    try:
        blocks = layout.encode_blocks(rows)
    finally:
        set_kernel_mode("compiled")
    expected = [bytes(codec.encode(padded[a : a + 1024])) for a in range(0, 3072, 1024)]
    assert [b[:-4] for b in blocks] == expected


def test_threads_keep_their_own_context() -> None:
    """Encode threads at once give the same bytes (a context per thread)."""
    data = _data("smooth", 12288 * 8, 3)
    expected = _both(data, 12288, (1, Blosc.BITSHUFFLE, 4))[1]
    found: list[bytes] = []

    def work() -> None:
        for _ in range(5):
            found.append(_both(data, 12288, (1, Blosc.BITSHUFFLE, 4))[0])

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [expected] * 15


def test_declines_what_c_blosc_stores_whole() -> None:
    """Level 0 and frames under 128 bytes (stored whole by C-Blosc) are left to it."""
    assert ENCODER is not None
    data = _data("smooth", 200, 0)
    out, lengths = np.zeros(400, np.uint8), np.zeros(2, np.int64)
    blocks = (data, np.array([200], np.int64), data[:0], 100, out, lengths)
    assert zstd_encoder.encode_zstd(ENCODER, *blocks, (1, 2, 4)) is None
    assert zstd_encoder.encode_zstd(ENCODER, *blocks, (0, 2, 4)) is None


def test_failed_self_test_falls_back_to_c_blosc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the encoder (its self test failed) the blocks are C-Blosc's, unchanged."""
    layout = RowLayout(
        np.dtype("<f4"), (3,), 512, 2048, {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle"}
    )
    rows = np.cumsum(np.ones((1500, 3), "<f4"), axis=0)
    expected = layout.encode_blocks(rows)
    monkeypatch.setattr(native_blocks, "zstd_encoder", lambda *args: None)
    assert layout.encode_blocks(rows) == expected
    monkeypatch.setattr(zstd_encoder, "_self_test", lambda encoder: False)
    assert NATIVE is not None
    assert zstd_encoder.zstd_encoder.__wrapped__(*NATIVE, blosc_libraries()) is None
