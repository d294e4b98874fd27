"""WriteOptions defaults per geometry kind (spec §9.0, informative defaults)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.write.options import OBJECT_ROWS_PER_BLOCK, POINT_ROWS_PER_BLOCK


def _inner_rows(store: MemoryStore, path: str) -> int:
    raw = store._store_dict[f"{path}/zarr.json"].to_bytes()
    conf = json.loads(raw)["codecs"][0]["configuration"]
    return int(conf["chunk_shape"][3])


def test_default_rows_per_block_depend_on_kind(rng: np.random.Generator) -> None:
    points, lines = MemoryStore(), MemoryStore()
    zv.write_points(points, rng.uniform(0, 10, (50, 3)), chunk_shape=5.0)
    zv.write_polylines(lines, [rng.uniform(0, 10, (7, 3))], chunk_shape=5.0)
    assert _inner_rows(points, "0/vertices") == POINT_ROWS_PER_BLOCK == 4096
    assert _inner_rows(lines, "0/vertices") == OBJECT_ROWS_PER_BLOCK == 1024
    assert _inner_rows(lines, "0/links/0") == OBJECT_ROWS_PER_BLOCK


@pytest.mark.parametrize("rows", [1, 64])
def test_explicit_rows_per_block_wins(rng: np.random.Generator, rows: int) -> None:
    store = MemoryStore()
    options = zv.WriteOptions(rows_per_block=rows)
    zv.write_polylines(store, [rng.uniform(0, 10, (7, 3))], chunk_shape=5.0, options=options)
    assert _inner_rows(store, "0/vertices") == rows


def test_unresolved_options_refuse_to_give_r() -> None:
    with pytest.raises(InvalidInputError, match="rows_per_block"):
        _ = zv.WriteOptions().block_rows


def test_blosc_lz4_is_the_old_name_of_the_default_chains() -> None:
    """``"blosc-lz4"`` meant the format's chains (zstd for 1.4 object kinds): it is
    ``"default"``, with a warning that names it, pointing at the caller's line."""
    with pytest.warns(DeprecationWarning, match='use compression="default"') as caught:
        old = zv.WriteOptions(compression="blosc-lz4")
    assert [w.filename for w in caught] == [__file__]
    assert old == zv.WriteOptions()
    assert old.compression == zv.WriteOptions().compression == "default"
    links = old.with_kind_defaults("streamline").blosc("links")
    assert links is not None
    assert links["cname"] == "zstd"
