"""Objects of every kind cut into batches: inputs shared by the append and streaming tests."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.helpers import without_commit
from zarr_vectors.store.io import StoreIO

SMALL_BLOCKS = zv.WriteOptions(rows_per_block=16)
KINDS = ("polyline", "graph", "skeleton", "mesh")


def files(root: Path) -> dict[str, bytes]:
    """Every file of a store but ``metadata.json`` (it holds the creation time)."""
    return {
        str(p.relative_to(root)): without_commit(str(p.relative_to(root)), p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "metadata.json"
    }


def keys(store: MemoryStore) -> dict[str, bytes | None]:
    io = StoreIO(store)
    return {k: without_commit(k, io.get(k)) for k in io.list_prefix("") if k != "metadata.json"}


def _object_links(kind: str, k: int, rng: np.random.Generator) -> np.ndarray:
    """Links of one object of ``k`` vertices, in the object's vertex numbering."""
    if kind == "graph":
        pairs = [(i, i + 1) for i in range(k - 1)] + [(i, i + 2) for i in range(0, k - 2, 3)]
        return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if kind == "skeleton":
        parent = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, k)], dtype=np.int64)
        return np.stack([np.arange(k), parent], axis=1)
    if kind == "mesh":
        return np.asarray([(i, i + 1, i + 2) for i in range(k - 2)], dtype=np.int64).reshape(-1, 3)
    return np.empty((0, 2), np.int64)


OPTIONS = [SMALL_BLOCKS, None, zv.WriteOptions(rows_per_block=16, fragment_attributes=("k",))]
SHARDED_OPTIONS = [
    zv.WriteOptions(rows_per_block=16, shard_chunks=2),
    zv.WriteOptions(rows_per_block=16, shard_chunks=3, fragment_attributes=("k",)),
]


@st.composite
def cases(draw: st.DrawFn, kind: str, sharded: bool = False) -> dict[str, Any]:
    """Objects of one kind, where to cut them into a first write and appends, and options
    (``sharded``: also stores of several chunks per shard)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.integers(1, 25))
    dim = draw(st.sampled_from([2, 3]))
    low = draw(st.sampled_from([0.0, -25.0]))  # appends below the origin move the grid
    objects = []
    for j in range(m):
        k = int(rng.integers(3, 40))
        start = rng.uniform(0.0 if j < m // 3 else low, 30.0, dim)
        steps = rng.normal(0.0, draw(st.sampled_from([1.0, 4.0])) if j == 0 else 3.0, (k, dim))
        objects.append((np.cumsum(steps, axis=0) + start).round(2))
    links = [_object_links(kind, len(o), rng) for o in objects]
    cut_count = draw(st.integers(1, 3))
    cuts = np.sort(rng.integers(1, m + 1, cut_count)) if m > 1 else np.array([1])
    return {
        "kind": kind,
        "objects": objects,
        "links": links,
        "value": [rng.random(len(o)) for o in objects],
        "link_values": [rng.random(len(lk)) for lk in links],
        "ids": rng.choice(10_000, m, replace=False) if draw(st.booleans()) else None,
        "groups": draw(st.booleans()),
        "cuts": cuts,
        "directed": draw(st.booleans()),
        "options": draw(st.sampled_from(OPTIONS + (SHARDED_OPTIONS if sharded else []))),
    }


def batches(case: dict[str, Any]) -> list[tuple[int, int]]:
    bounds = [0, *case["cuts"].tolist(), len(case["objects"])]
    return list(itertools.pairwise(bounds))


def _groups(case: dict[str, Any], a: int, b: int) -> dict[str, Any]:
    """Groups of every batch inside ``a:b`` (two groups per batch, as its append gives)."""
    ids = np.arange(len(case["objects"])) if case["ids"] is None else case["ids"]
    groups, weights = {}, []
    for s, e in batches(case):
        if a <= s < e <= b:
            groups |= {f"g{s}": ids[s : min(s + 2, e)].tolist(), f"h{s}": [int(ids[e - 1])]}
            weights += [s, -s]
    if not groups:
        return {}
    return {"groups": groups, "group_attributes": {"w": np.asarray(weights, np.float32)}}


def arguments(case: dict[str, Any], a: int, b: int) -> dict[str, Any]:
    """Keyword arguments of a write or append of objects ``a:b``."""
    objects = case["objects"][a:b]
    sizes = [len(o) for o in objects]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    dim = case["objects"][0].shape[1]
    vertices = np.concatenate([np.empty((0, dim)), *objects])
    ids = None if case["ids"] is None else case["ids"][a:b]
    args: dict[str, Any] = {
        "attributes": {"v": np.concatenate([np.empty(0), *case["value"][a:b]])},
        "object_attributes": {"k": np.arange(a, b, dtype=np.int64)},
        "object_ids": ids,
    }
    if case["groups"]:
        args |= _groups(case, a, b)
    if case["kind"] == "polyline":
        return args | {"polylines": (vertices, offsets)}
    labels = np.repeat(np.arange(a, b), sizes)
    links = [lk + off for lk, off in zip(case["links"][a:b], offsets[:-1], strict=True)]
    if case["kind"] == "skeleton":
        parents = np.concatenate(
            [np.empty(0, np.int64)]
            + [
                np.where(lk[:, 1] < 0, -1, lk[:, 1] + off)
                for lk, off in zip(case["links"][a:b], offsets[:-1], strict=True)
            ]
        )
        return args | {"positions": vertices, "parents": parents, "vertex_objects": labels}
    width = 3 if case["kind"] == "mesh" else 2
    joined = np.concatenate([np.empty((0, width), np.int64), *links])
    link_values = {"e": np.concatenate([np.empty(0), *case["link_values"][a:b]])}
    if case["kind"] == "mesh":
        return args | {
            "positions": vertices,
            "faces": joined,
            "vertex_objects": labels,
            "face_attributes": link_values,
        }
    return args | {
        "positions": vertices,
        "edges": joined,
        "vertex_objects": labels,
        "edge_attributes": link_values,
    }


def write(store: Any, case: dict[str, Any], a: int, b: int, **extra: Any) -> None:
    """Write objects ``a:b`` in one call (``extra``: more keywords, e.g. ``levels=``)."""
    args = arguments(case, a, b) | {"chunk_shape": 10.0, "options": case["options"], **extra}
    kind = case["kind"]
    if kind == "polyline":
        zv.write_polylines(store, args.pop("polylines"), **args)
    elif kind == "graph":
        zv.write_graph(
            store, args.pop("positions"), args.pop("edges"), directed=case["directed"], **args
        )
    elif kind == "skeleton":
        zv.write_skeletons(store, args.pop("positions"), **args)
    else:
        zv.write_mesh(store, args.pop("positions"), args.pop("faces"), **args)


def append(store: Any, case: dict[str, Any], a: int, b: int) -> None:
    """Append objects ``a:b`` with the kind's ``append_*`` function."""
    args = arguments(case, a, b)
    kind = case["kind"]
    if kind == "polyline":
        zv.append_polylines(store, args.pop("polylines"), **args)
    elif kind == "graph":
        zv.append_graph(store, args.pop("positions"), args.pop("edges"), **args)
    elif kind == "skeleton":
        zv.append_skeletons(store, args.pop("positions"), **args)
    else:
        zv.append_mesh(store, args.pop("positions"), args.pop("faces"), **args)
