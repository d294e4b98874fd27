"""Line annotations of polylines, streamlines and graphs, decoded independently and compared
with brute force over the objects read whole."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from tests.precomputed.ng_decoder import decode_by_id, decode_list
from zarr_vectors.precomputed import PrecomputedFileNotFoundError, sources
from zarr_vectors.precomputed.line_annotations import LineAnnotations


def _f32(values: Any) -> list[float]:
    return [float(np.float32(v)) for v in values]


def _expected(store: zv.VectorStore) -> Counter[tuple[Any, ...]]:
    """Every line (end points, then the properties Neuroglancer gets), by brute force."""
    found: Counter[tuple[Any, ...]] = Counter()
    everything = store.read()
    pos = np.asarray(everything.positions)
    offsets = np.asarray(everything.offsets)
    for n, _ in enumerate(everything.object_ids):
        a, b = int(offsets[n]), int(offsets[n + 1])
        if everything.edges is None:
            pairs = [(r, r + 1, None) for r in range(a, b - 1)]
        else:
            pairs = [(int(u), int(v), e) for e, (u, v) in enumerate(everything.edges) if a <= u < b]
        for u, v, e in pairs:
            props = []
            if e is not None:
                props.append(float(np.float32(everything.link_attributes["w"][e])))
            else:
                props.append(float(np.float32(everything.attributes["fa"][u])))
                props.append(float(np.float32(everything.object_attributes["length"][n])))
            found[(*_f32(pos[u]), *_f32(pos[v]), *props)] += 1
    return found


def _polylines(tmp_path: Path) -> zv.VectorStore:
    rng = np.random.default_rng(5)
    lines = [np.cumsum(rng.normal(0, 4, (int(rng.integers(2, 30)), 3)), axis=0) for _ in range(40)]
    n = sum(len(x) for x in lines)
    path = tmp_path / "lines.zarr"
    zv.write_polylines(
        path, lines, kind="streamline", chunk_shape=8.0,
        object_ids=rng.permutation(1000)[:40],
        attributes={"fa": rng.uniform(size=n)},
        object_attributes={"length": rng.uniform(size=40).astype(np.float32)},
    )  # fmt: skip
    return zv.open(path)


def _graph(tmp_path: Path) -> zv.VectorStore:
    rng = np.random.default_rng(6)
    xyz = rng.uniform(0, 30, (60, 3))
    edges = np.array([[i, i + 1] for i in range(59) if i % 20 != 19] + [[0, 5], [40, 47]])
    path = tmp_path / "graph.zarr"
    zv.write_graph(
        path, xyz, edges, vertex_objects=np.arange(60) // 20, chunk_shape=10.0,
        edge_attributes={"w": rng.uniform(size=len(edges))},
    )  # fmt: skip
    return zv.open(path)


@pytest.mark.parametrize("make", [_polylines, _graph])
def test_every_line_once_by_id_and_objects(tmp_path: Path, make: Any) -> None:
    store = make(tmp_path)
    source = sources(store)["annotations"]
    info = json.loads(source.read("info"))
    assert info["annotation_type"] == "line"
    assert len(info["spatial"]) == 1
    spec = info["spatial"][0]
    lo, size = np.array(info["lower_bound"]), np.array(spec["chunk_size"])
    spatial: dict[int, tuple[Any, ...]] = {}
    paths = list(source.paths())
    for path in (p for p in paths if p.startswith("spatial0/")):
        rows = decode_list(source.read(path), info)
        assert len(rows) <= spec["limit"]
        cell = np.array([int(c) for c in path.split("/")[1].split("_")])
        starts = np.array([r[:3] for _, r in rows]).reshape(-1, 3)
        assert np.all(starts >= lo + cell * size - 1e-4)
        assert np.all(starts < lo + (cell + 1) * size + 1e-4)
        for annotation, row in rows:
            assert annotation not in spatial
            spatial[annotation] = row
    assert Counter(spatial.values()) == _expected(store)
    by_id = sorted(int(p.split("/")[1]) for p in paths if p.startswith("by_id/"))
    assert by_id == sorted(spatial)
    owners: dict[int, set[int]] = {}
    for annotation in by_id:
        row, related = decode_by_id(source.read(f"by_id/{annotation}"), info)
        assert row == spatial[annotation]
        owners.setdefault(related[0][0], set()).add(annotation)
    assert sorted(owners) == sorted(store.object_ids.tolist())
    for obj, mine in owners.items():
        listed = decode_list(source.read(f"by_object/{obj}"), info)
        assert {i for i, _ in listed} == mine
    with pytest.raises(PrecomputedFileNotFoundError):
        source.read(f"by_id/{max(by_id) + 1}")
    with pytest.raises(PrecomputedFileNotFoundError):
        source.read("by_object/123456")


def test_small_limit_gives_finer_cells(tmp_path: Path) -> None:
    store = _polylines(tmp_path)
    coarse = json.loads(LineAnnotations(store).read("info"))["spatial"][0]
    fine = json.loads(LineAnnotations(store, limit=20).read("info"))["spatial"][0]
    assert np.prod(fine["grid_shape"]) > np.prod(coarse["grid_shape"])
    assert fine["limit"] <= max(20, int(store.chunk_counts()[1].max()))
