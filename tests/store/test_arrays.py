"""Array documents and ``vertex_counts`` chunks written without zarr-python equal zarr-python's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.store import arrays
from zarr_vectors.store.io import StoreIO, scratch_store

CODECS = [
    None,
    arrays._compressors(None),
    arrays._compressors({"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle"}),
    arrays._compressors({"cname": "zstd", "clevel": 3, "shuffle": "shuffle"}),
]
DTYPES = ["float32", "float64", "int8", "uint8", "int16", "int32", "int64", "uint64", "bool"]
SHAPES = [
    ((5, 6, 7, 81920, 3), (1, 1, 1, 4096, 3), (1, 1, 1, 81920, 3)),
    ((5, 6, 7, 8192), (1, 1, 1, 1024), (2, 3, 1, 8192)),
    ((3, 4), (3, 4), None),
    ((100,), (64,), None),
]


def _zarr_document(**kwargs: Any) -> bytes:
    scratch = scratch_store()
    zarr.create_array(scratch, name="a", zarr_format=3, **kwargs)
    raw = StoreIO(scratch).get("a/zarr.json")
    assert raw is not None
    return raw


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("codecs", range(len(CODECS)))
def test_documents_equal_zarr_python(dtype: str, codecs: int) -> None:
    fills = [False] if dtype == "bool" else [0, 1] if dtype.startswith("u") else [0, -1]
    for fill in fills:
        for shape, chunks, shards in SHAPES:
            kwargs: dict[str, Any] = {
                "shape": shape,
                "dtype": np.dtype(dtype),
                "chunks": chunks,
                "compressors": CODECS[codecs],
                "fill_value": fill,
                "attributes": {"zv_array": "x", "name": "é ü", "nested": {"a": [1, 2.5, None]}},
            }
            if shards is not None:
                kwargs["shards"] = shards
            assert arrays._metadata_bytes(**kwargs) == _zarr_document(**kwargs)


def _zarr_counts(store: Any, chunks: np.ndarray, counts: np.ndarray) -> None:
    arr = zarr.open_array(store, path="a", mode="r+")
    edge = np.asarray(arr.chunks)
    keys, inverse = np.unique(chunks // edge, axis=0, return_inverse=True)
    for k, block in enumerate(keys):
        lo = block * edge
        hi = np.minimum(lo + edge, arr.shape)
        dense = np.zeros(tuple(hi - lo), np.int64)
        sel = inverse.ravel() == k
        dense[tuple((chunks[sel] - lo).T)] = counts[sel]
        arr[tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))] = dense


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from([(5, 6, 7), (40, 33, 20), (70, 65), (9, 8, 9, 10), (5000,)]),
    st.integers(0, 2**32 - 1),
)
def test_counts_chunks_equal_zarr_python(grid: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    cells = int(np.prod(grid))
    m = int(rng.integers(1, min(300, cells)))
    flat = rng.choice(cells, m, replace=False)
    chunks = np.stack(np.unravel_index(flat, grid), axis=1).astype(np.int64)
    counts = rng.integers(1, 10**9, m)
    counts[rng.random(m) < 0.2] = 0  # zero cells; a chunk of zeros only is not stored
    ours, theirs = scratch_store(), scratch_store()
    document = arrays.counts_array_metadata(grid, {"zv_array": "vertex_counts"})
    for store in (ours, theirs):
        StoreIO(store).set("a/zarr.json", document)
    _zarr_counts(theirs, chunks, counts)
    arrays.write_counts(ours, "a", chunks, counts)
    mine, ref = StoreIO(ours), StoreIO(theirs)
    keys = sorted(ref.list_prefix("a"))
    assert sorted(mine.list_prefix("a")) == keys
    assert all(mine.get(k) == ref.get(k) for k in keys)
    read = zarr.open_array(ours, path="a", mode="r")[...]
    want = np.zeros(grid, np.int64)
    want[tuple(chunks.T)] = counts
    np.testing.assert_array_equal(read, want)
