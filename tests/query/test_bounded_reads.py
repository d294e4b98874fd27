"""A bounded object reader (what ``zv.build_levels`` reads level 0 with: the object index
of a run of objects read by range, fragment ranges decoded a few chunks at a time and kept
within a number of bytes) reads the same objects as the default reader, for runs and any
other selection, whatever it kept from the reads before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.geometry import object_cases
from tests.geometry.object_cases import KINDS
from zarr_vectors.format.names import VERTEX_FRAGMENTS
from zarr_vectors.query import ObjectReader
from zarr_vectors.read import LevelReader
from zarr_vectors.store.arrays import write_global_array
from zarr_vectors.update.object_sources import open_source

FIELDS = ["positions", "offsets", "object_ids", "vertex_object_ids", "edges", "faces"]


def _same(one: Any, two: Any) -> None:
    for name in FIELDS:
        a, b = getattr(one, name), getattr(two, name)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=name)
    for group in ("attributes", "object_attributes", "link_attributes"):
        a, b = dict(getattr(one, group) or {}), dict(getattr(two, group) or {})
        assert a.keys() == b.keys(), group
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"{group}/{key}")


@pytest.mark.parametrize("kind", KINDS)
def test_bounded_reads_are_the_default_reads(
    tmp_path_factory: pytest.TempPathFactory, kind: str
) -> None:
    @settings(
        deadline=None,
        max_examples=3,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(case=object_cases.cases(kind), data=st.data())
    def check(case: dict[str, Any], data: st.DataObject) -> None:
        path = tmp_path_factory.mktemp("bounded") / "store.zv"
        m = len(case["objects"])
        object_cases.write(path, case, 0, m)
        source = open_source(path)
        first = data.draw(st.integers(0, m - 1))
        stop = data.draw(st.integers(first + 1, m))
        picked = np.asarray(data.draw(st.lists(st.integers(0, m - 1), max_size=6)), np.int64)
        cache = data.draw(st.sampled_from([0, 64, 1 << 20]))
        bounded = ObjectReader(
            LevelReader(source.io, source.root, 0), bounded=True, cache_bytes=cache
        )
        for dense in (np.arange(first, stop, dtype=np.int64), picked):
            plain = ObjectReader(LevelReader(source.io, source.root, 0))
            expected = plain.read(dense)
            for _ in range(2):  # again from what the cache kept within its bytes
                _same(bounded.read(dense), expected)
                bounded.reader.trim_caches(cache)

    check()


def test_trim_ranges_forgets_the_least_recently_used_first(tmp_path: Any) -> None:
    walk = np.cumsum(np.full((60, 3), 0.5, np.float32), axis=0)
    zv.write_polylines(
        tmp_path / "s.zv", [walk, walk + 1, walk + 2], chunk_shape=8.0, progress=False
    )
    source = open_source(tmp_path / "s.zv")
    reader = LevelReader(source.io, source.root, 0)
    chunks, _ = reader.occupied_chunks(np.zeros(3, np.int64), reader.grid.shape)
    assert chunks.shape[0] >= 3
    found = reader.blob_ranges(VERTEX_FRAGMENTS, chunks[:3])
    size = [a.nbytes + b.nbytes for a, b in found]
    first, second, third = (tuple(int(c) for c in chunk) for chunk in chunks[:3])
    reader.blob_ranges(VERTEX_FRAGMENTS, chunks[:1])  # the first is now the most recent
    reader.trim_ranges(size[0] + size[2])
    assert reader.cached_ranges(VERTEX_FRAGMENTS, first) is found[0]
    assert reader.cached_ranges(VERTEX_FRAGMENTS, third) is found[2]
    with pytest.raises(KeyError):
        reader.cached_ranges(VERTEX_FRAGMENTS, second)
    reader.trim_ranges(0)
    with pytest.raises(KeyError):
        reader.cached_ranges(VERTEX_FRAGMENTS, first)


def test_global_rows_across_chunks_are_the_slices_of_the_array(tmp_path: Any) -> None:
    walk = np.cumsum(np.full((20, 3), 0.5, np.float32), axis=0)
    zv.write_polylines(tmp_path / "s.zv", [walk], chunk_shape=8.0, progress=False)
    source = open_source(tmp_path / "s.zv")
    data = np.arange(23, dtype=np.int64) * 3
    write_global_array(source.io, "0/probe", data, (5,), 0, {}, compressed=True)
    reader = LevelReader(source.io, source.root, 0)
    for start, stop in [(0, 3), (2, 4), (4, 12), (11, 11), (0, 23), (20, 23), (6, 7)]:
        got = reader.global_rows("probe", start, stop)  # the last chunk read kept between
        np.testing.assert_array_equal(got, data[start:stop])
