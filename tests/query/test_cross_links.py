"""Cross-chunk links of object reads, found along the table ordered by first id (once per
reader): any stored row order gives the same links, and a link to a vertex that is not
returned is refused."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from tests.validate.object_stores import object_kind_store
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.store.arrays import write_global_array
from zarr_vectors.store.io import StoreIO

TABLE = "0/cross_chunk_links"


def _table(st: MemoryStore) -> np.ndarray:
    return np.asarray(zarr.open_array(st, path=TABLE, mode="r")[...])


def _put(st: MemoryStore, table: np.ndarray) -> None:
    """Write ``table`` in place of the store's (its chunk table too, as a writer does)."""
    meta = s.read_json(st, f"{TABLE}/zarr.json")
    chunks = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"])
    write_global_array(StoreIO(st), TABLE, table, chunks, -1, meta["attributes"], compressed=True)


def _edges(result: zv.QueryResult) -> np.ndarray:
    """The result's edges, sorted (their row order is free)."""
    assert result.edges is not None
    return result.edges[np.lexsort(result.edges.T[::-1])]


@pytest.mark.parametrize("kind", ["skeleton", "graph"])
def test_a_table_in_any_row_order_gives_the_same_links(kind: str) -> None:
    st = object_kind_store(kind)
    table = _table(st)
    assert table.shape[0] > 1
    box = ([0, 0, 0], [60, 60, 60])
    before = zv.open(st)
    whole, boxed = before.read(progress=False), before.query(box)
    _put(st, table[np.random.default_rng(0).permutation(table.shape[0])])
    after = zv.open(st)
    for old, new in ((whole, after.read(progress=False)), (boxed, after.query(box))):
        np.testing.assert_array_equal(new.positions, old.positions)
        np.testing.assert_array_equal(_edges(new), _edges(old))


def test_a_cross_chunk_link_to_a_vertex_that_is_not_returned_is_refused() -> None:
    st = object_kind_store("skeleton")
    n_max = s.layout(st, "0/vertices").n_max
    grid = zarr.open_array(st, path="0/vertex_counts", mode="r").shape
    chunk, rows = next((g, n) for g, n in s.occupied(st) if n < n_max)
    table = _table(st)
    table[0, 1] = int(np.ravel_multi_index(chunk, grid)) * n_max + rows  # no vertex there
    _put(st, table)
    with pytest.raises(CorruptChunkError, match="outside its object's manifest"):
        zv.open(st).read(progress=False)
