"""benchmarks/_framing.py and benchmarks/_codecs.py (issue 39, item 5): the split of a
store's sharded arrays into payload and framing, and the re-encoding of its blocks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr

import zarr_vectors as zv
from benchmarks._codecs import SETTINGS, codec_alternatives, stored_blocks
from benchmarks._framing import BLOSC_HEADER, framing_split


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small random trees over a few chunks."""
    rng = np.random.default_rng(7)
    positions = np.cumsum(rng.normal(0.0, 1.5, size=(120, 3)), axis=0).astype(np.float32)
    parents = np.arange(-1, 119, dtype=np.int64)
    parents[60] = -1
    objects = np.repeat(np.arange(2), 60)
    path = tmp_path_factory.mktemp("bytes") / "trees.zv"
    zv.write_skeletons(
        path,
        positions,
        parents=parents,
        vertex_objects=objects,
        radius=rng.uniform(0.1, 2.0, 120).astype(np.float32),
        chunk_shape=4.0,
        bin_shape=2.0,
    )
    return path


def _size(array: Path) -> int:
    return sum(p.stat().st_size for p in (array / "c").rglob("*") if p.is_file())


@pytest.mark.parametrize("name", ["vertices", "links/0", "fragment_records"])
def test_framing_parts_add_up_to_the_files(store: Path, name: str) -> None:
    array = store / "0" / name
    split = framing_split(array)
    assert split.total == _size(array)
    occupied = int(np.count_nonzero(zarr.open_array(store / "0" / "vertex_counts")[...]))
    # one block per occupied chunk (chunks of < 1024 rows); links/0 none where no link is inside
    assert split.blocks <= occupied if name == "links/0" else split.blocks == occupied
    assert split.headers == BLOSC_HEADER * split.blocks
    assert split.crc == 4 * split.blocks
    assert split.place == 12 * split.shards
    assert split.payload > 0


def test_re_encoding_the_stored_setting_gives_the_stored_bytes(store: Path) -> None:
    array = store / "0" / "vertices"
    blocks = stored_blocks(array)
    assert blocks[0].dtype == np.float32
    stored = zarr.open_array(array)
    first = next(g for g in np.ndindex(stored.shape[:3]) if stored[g][0].any())
    np.testing.assert_array_equal(blocks[0].reshape(-1, 3), stored[first][: len(blocks[0]) // 3])
    sizes = codec_alternatives(blocks, repeats=1)
    assert set(sizes) == set(SETTINGS)
    stored = ("zstd", 1, "bitshuffle")
    split = framing_split(array)
    assert sizes[stored][0] == split.payload + split.headers


def test_global_arrays_give_their_chunks(store: Path) -> None:
    array = store / "0" / "object_index" / "data"
    blocks = stored_blocks(array)
    expected = zarr.open_array(array)[...]
    assert len(blocks) == 1
    np.testing.assert_array_equal(blocks[0], expected)
