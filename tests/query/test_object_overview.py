"""A query covering every occupied chunk of an object level (the overview) takes its owners
from the manifests: it equals the query of a box that holds every vertex but cuts chunks
(owners read from the fragments), and brute force over the level's own vertices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.geometry.test_object_levels import write

EVERYTHING = (np.full(3, -np.inf), np.full(3, np.inf))


def _streamlines(path: Path) -> Path:
    rng = np.random.default_rng(5)
    walks = [
        np.cumsum(rng.normal(0, 2.5, (int(rng.integers(1, 30)), 3)), axis=0) + rng.uniform(4, 28, 3)
        for _ in range(60)
    ]
    n = sum(map(len, walks))
    zv.write_polylines(
        path,
        [w.astype(np.float32) for w in walks],
        kind="streamline",
        chunk_shape=8.0,
        bin_shape=1.0,
        attributes={"a": np.arange(n, dtype=np.float32)},
        object_attributes={"w": rng.random(len(walks))},
        levels=zv.Levels(count=2, objects="coverage", objects_per_cell=1),
        progress=False,
    )
    return path


@pytest.fixture(scope="module", params=["streamline", "graph", "mesh"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("overview") / f"{request.param}.zv"
    return _streamlines(path) if request.param == "streamline" else write(request.param, path)


def _same(a: zv.QueryResult, b: zv.QueryResult) -> None:
    fields: list[tuple[Any, Any]] = [
        (a.object_ids, b.object_ids),
        (a.offsets, b.offsets),
        (a.positions, b.positions),
        (a.edges, b.edges),
        (a.faces, b.faces),
    ]
    fields += [(a.attributes[k], b.attributes[k]) for k in b.attributes]
    fields += [(a.object_attributes[k], b.object_attributes[k]) for k in b.object_attributes]
    fields += [(a.link_attributes[k], b.link_attributes[k]) for k in b.link_attributes]
    assert set(a.attributes) == set(b.attributes)
    for got, want in fields:
        np.testing.assert_array_equal(got, want)


@settings(max_examples=4, deadline=None)
@given(margin=st.floats(0.0, 0.4), data=st.data())
def test_the_overview_equals_the_general_path_and_brute_force(
    store: Path, margin: float, data: st.DataObject
) -> None:
    opened = zv.open(store)
    level = data.draw(st.sampled_from([lv.level for lv in opened.levels]))
    whole = opened.read(level=level)
    lo = whole.positions.min(axis=0).astype(np.float64)
    hi = np.nextafter(whole.positions.max(axis=0).astype(np.float64), np.inf) + margin
    found = zv.open(store).query(EVERYTHING, level=level)
    _same(found, zv.open(store).query((lo, hi), level=level))
    filled = np.diff(whole.offsets) > 0  # brute force: the objects with a vertex, whole
    np.testing.assert_array_equal(found.object_ids, whole.object_ids[filled])
    _same(found, zv.open(store).read_objects(whole.object_ids[filled], level=level))
