"""The native row-block decoding's self test and fallbacks (``store/native_blocks.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from zarr_vectors.geometry._pipeline import DEFAULT_BLOSC
from zarr_vectors.store import native_blocks
from zarr_vectors.store.shards import RowLayout


def test_the_self_test_blocks_are_the_blocks_the_writer_makes() -> None:
    """The self test checks the native functions on numcodecs' own blocks; those must be
    byte for byte what the writer stores, or the test would vouch for another format."""
    rows = np.random.default_rng(3).random((1000, 3), dtype=np.float32)
    layout = RowLayout(np.dtype("<f4"), (3,), 500, 1000, DEFAULT_BLOSC)
    assert native_blocks._numcodecs_blocks(rows, 500) == layout.encode_blocks(rows)


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
    assert native_blocks.decode_dense_blob_shards(layout, [b"x", None], 4) == [None, None]
