"""Regenerate the golden stores of format 1.6 (run only when the format changes).

The golden stores are committed and read by ``tests/test_golden.py`` forever: if a change of
the library alters a single byte of what it writes for these inputs, that test fails, so the
format cannot drift silently. The stores of formats 1.0 (``1.0/``) and 1.1 (``1.1/``) were
written from the same inputs by the writers of those formats; this library no longer writes
them (every shard of a 1.2 store holds a place record, spec §9.0.2), so they are frozen: read
forever, never regenerated. So are the stores of format 1.2 (``1.2/``, the same inputs as
this library wrote them until every new store became a 1.3 store, spec §3.3). There is one
store per geometry kind family: point clouds, streamlines, a graph, skeletons and meshes.
The stores of format 1.3 (``1.3/``, plain Zarr v3: named dimensions, no ``.zattrs``, spec
§2.3, §9.0.3) are frozen too since every new store became a 1.4 store, and the stores of
format 1.4 (``1.4/``, object kinds with the compressed blobs and zstd row blocks of spec
§9.0.4) since every new store became a 1.5 store, and the stores of format 1.5 (``1.5/``,
object kinds with counts-form fragment blobs, spec §6.8) since every new store became a 1.6
store. The stores of format 1.6 (``1.6/``) are the same inputs as this library writes them
now (graphs and skeletons with the zstd level 3 codecs of spec §9.0.4), and point clouds
with levels of detail
(spec §4.3), one per point method, skeletons with ``thin`` levels (spec §4.3.3), and
polylines with ``"imported"`` levels (spec §4.3.4, imported from a zarr-vectors 0.9.2
store). Usage: ``python tests/data/golden/make_golden.py`` (``... make_golden.py
imported``: only the stores with imported levels).

Beside each ``NAME.zarrvectors`` store, ``NAME.expected.npz`` holds what reading it must give:

- point clouds: ``positions``, ``attr_<name>`` and (per vertex) ``object_ids``, a multiset of
  rows; with levels, ``level<N>_positions`` and ``level<N>_attr_<name>`` hold every level
  N >= 1 in storage order, as read when the store was made (the writer must rewrite the same
  bytes, and L5 validation recomputes each level from the one below); an object store's
  levels add ``level<N>_offsets`` and ``level<N>_links`` (:func:`object_level_arrays`);
- object kinds, objects in storage order: ``object_ids`` and ``offsets`` (object k owns rows
  ``offsets[k]:offsets[k+1]``), ``positions`` and ``attr_<name>`` in traversal order,
  ``object_attr_<name>``, ``links`` (edges or faces as rows of ``positions``, in the canonical
  order of :func:`canonical_links`; none for polylines) with ``link_attr_<name>``, and
  ``group_<name>`` (the ids a group query returns).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from zarr.storage import LocalStore

import zarr_vectors as zv
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.geometry import write_object_order
from zarr_vectors.query.point_queries import query_box
from zarr_vectors.read import LevelReader
from zarr_vectors.store.io import StoreIO

HERE = Path(__file__).parent / "1.0"
HERE_1_1 = Path(__file__).parent / "1.1"
HERE_1_3 = Path(__file__).parent / "1.3"
LAYOUT_V = Path(__file__).parent.parent / "layout_v"
HERE_1_4 = Path(__file__).parent / "1.4"
HERE_1_5 = Path(__file__).parent / "1.5"
HERE_1_6 = Path(__file__).parent / "1.6"
HERE_1_7 = Path(__file__).parent / "1.7"
SEED = 20261121
SHARDED = {
    "points_3d_sharded": ("points_3d_attributes", (2, 2, 2)),
    "streamlines_3d_sharded": ("streamlines_3d_groups", (2, 1, 3)),
}
"""Format 1.1 golden stores: a 1.0 store's inputs written with several chunks per shard."""


def inputs() -> dict[str, dict[str, Any]]:
    """The inputs of every golden store, by store name (deterministic).

    Returns
    -------
    dict
        Per store: ``writer``, the name of the ``zarr_vectors`` function that writes it,
        and the keyword arguments it is called with besides the store.
    """
    return _point_inputs() | {
        "streamlines_3d_groups": _streamlines(),
        "graph_2d_edge_attributes": _graph(),
        "skeletons_3d_swc": _skeletons(),
        "meshes_3d_closed": _meshes(),
    }


def sharded_inputs() -> dict[str, dict[str, Any]]:
    """The inputs of the format 1.1 golden stores (spec §9.0.1), by store name."""
    base = inputs()
    out = {}
    for name, (source, shard_chunks) in SHARDED.items():
        kwargs = dict(base[source])
        kwargs["options"] = replace(kwargs["options"], shard_chunks=shard_chunks)
        out[name] = kwargs
    return out


def level_inputs() -> dict[str, dict[str, Any]]:
    """The inputs of the format 1.3 golden stores: the 3-D point cloud in chunks of 20 with
    bins of 5 (four per chunk and axis) and levels of each point method (spec §4.3.2); and
    the skeletons of format 1.2 in bins of 2.5 with two ``thin`` levels (spec §4.3.3)."""
    base = {**_point_inputs()["points_3d_attributes"], "chunk_shape": 20.0, "bin_shape": 5.0}
    sample = zv.Levels(count=3, per_bin=4)
    aggregate = zv.Levels(count=2, method="aggregate", reductions={"rgb": "max"})
    skeletons = {**_skeletons(), "bin_shape": 2.5, "levels": zv.Levels(count=2, method="thin")}
    return {
        "points_3d_sample_levels": {**base, "levels": sample},
        "points_3d_aggregate_levels": {**base, "levels": aggregate},
        "skeletons_3d_thin_levels": skeletons,
    }


def index_inputs() -> dict[str, dict[str, Any]]:
    """The inputs of the golden point cloud with object ids and its object-to-chunks index
    (spec §9.14): ``points_2d_negative_ids`` as the writer writes it by default."""
    kwargs = _point_inputs()["points_2d_negative_ids"]
    return {
        "points_2d_object_chunks": {
            **kwargs,
            "options": replace(kwargs["options"], object_chunk_index=True),
        }
    }


def order_inputs() -> dict[str, dict[str, Any]]:
    """The inputs of the golden stores of format 1.7 (``1.7/``): ``points_2d_negative_ids``
    with the object-to-chunks index and the object-ordered copy (spec §9.15) of row blocks of
    8 rows, so its row sequences have several blocks and several shards (the only store of
    1.7: every other new store is a 1.6 store)."""
    kwargs = _point_inputs()["points_2d_negative_ids"]
    rng = np.random.default_rng(SEED + 17)
    n = kwargs["positions"].shape[0]
    return {
        "points_2d_object_order": {
            **kwargs,
            "object_ids": rng.integers(0, 12, n).astype(np.int16),
            "attributes": {"w": rng.random(n).astype(np.float32)},
            "options": replace(kwargs["options"], object_chunk_index=True, object_order=True),
            "order_rows": 8,
        }
    }


def imported_inputs() -> dict[str, Path]:
    """The golden stores (formats 1.4 to 1.6) with ``"imported"`` levels (spec §4.3.4), by
    store name: the layout-V store it is imported from (written by zarr-vectors 0.9.2, two coarse
    levels of polylines, random object sparsity at level 2)."""
    return {"polylines_3d_imported_levels": LAYOUT_V / "polylines_pyramid.zv"}


def write_imported(path: Path, source: Path) -> None:
    """Import the golden store ``path`` from the layout-V store ``source``."""
    zv.convert(source, path)


def write_imported_all(here: Path) -> None:
    """Write the golden stores of :func:`imported_inputs` and their expected answers (every
    level's objects, :func:`object_level_arrays`; level 0's as ``level0_*``) under ``here``;
    run ``python tests/data/golden/make_golden.py imported`` for these alone."""
    for name, source in imported_inputs().items():
        path = here / f"{name}.zarrvectors"
        shutil.rmtree(path, ignore_errors=True)
        write_imported(path, source)
        store = zv.open(path)
        found = store.read_objects(np.asarray(store.object_ids))
        level0 = {"level0_offsets": np.asarray(found.offsets, np.int64)}
        level0["level0_positions"] = found.positions
        save_expected(here / f"{name}.expected.npz", level0 | object_level_arrays(path))
        print(f"wrote {path}")


def level_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every level above 0 of the store at ``path`` as read: a point cloud's vertices in
    storage order, an object store's objects (:func:`object_level_arrays`)."""
    root = RootMetadata.from_json(json.loads((path / "zarr.json").read_text())["attributes"])
    if root.geometry_type != "point_cloud":
        return object_level_arrays(path)
    io = StoreIO(LocalStore(path, read_only=True))
    everywhere = np.full(root.spatial_dims, np.inf)
    arrays = {}
    for entry in root.levels:
        got = query_box(LevelReader(io, root, entry.level), -everywhere, everywhere)
        arrays[f"level{entry.level}_positions"] = got.positions
        for name, values in got.attributes.items():
            arrays[f"level{entry.level}_attr_{name}"] = values
    return arrays


def object_level_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every level above 0 of the object store at ``path``: ``level<N>_offsets``,
    ``level<N>_positions``, ``level<N>_attr_<name>`` (objects in storage order, vertices in
    traversal order) and ``level<N>_links`` (rows of the level's positions, canonical order)."""
    store = zv.open(path)
    arrays = {}
    for info in store.levels[1:]:
        got = store.read_objects(np.asarray(store.object_ids), level=info.level)
        arrays[f"level{info.level}_offsets"] = np.asarray(got.offsets, np.int64)
        arrays[f"level{info.level}_positions"] = got.positions
        for name, values in got.attributes.items():
            arrays[f"level{info.level}_attr_{name}"] = values
        links = got.faces if got.faces is not None else got.edges
        if links is not None:
            ordered = store.kind != "graph" or bool(store.metadata.get("is_directed"))
            arrays[f"level{info.level}_links"] = canonical_links(links, {}, ordered)[0]
    return arrays


def _point_inputs() -> dict[str, dict[str, Any]]:
    """The two point clouds (their random draws must never change)."""
    rng = np.random.default_rng(SEED)
    xyz = np.round(rng.uniform(0, 40, (300, 3)), 2).astype(np.float32)
    xyz[:10] = np.array(
        [
            [0, 0, 0],
            [10, 10, 10],
            [20, 0, 5],
            [9.99, 10, 30],
            [30, 30, 30],
            [39.5, 0.5, 20],
            [10, 20, 30],
            [5, 5, 5],
            [15, 25, 35],
            [0, 40, 0],
        ]
    )
    xy = np.round(rng.normal(0, 12, (120, 2)), 3)
    options = zv.WriteOptions(rows_per_block=64, shard_chunks=1)  # a chunk per shard (§9.0)
    return {
        "points_3d_attributes": {
            "writer": "write_points",
            "positions": xyz,
            "chunk_shape": 10.0,
            "bin_shape": 5.0,
            "attributes": {
                "intensity": np.round(rng.random(300), 3).astype(np.float32),
                "rgb": rng.integers(0, 256, (300, 3)).astype(np.uint8),
            },
            "options": options,
        },
        "points_2d_negative_ids": {
            "writer": "write_points",
            "positions": xy,
            "chunk_shape": [8.0, 4.0],
            "bin_shape": [2.0, 4.0],
            "object_ids": rng.integers(0, 2**40, 120).astype(np.uint64),
            # without the object-to-chunks index (index_inputs writes it)
            "options": replace(options, object_chunk_index=False),
        },
    }


def _walk(rng: np.random.Generator, n: int) -> np.ndarray:
    """A random walk of ``n`` vertices in ``[0, 20]^3`` on a 0.5 grid (float32)."""
    steps = np.cumsum(rng.normal(0, 3, (n, 3)), axis=0) + rng.uniform(2, 18, 3)
    return np.clip(np.round(steps * 2) / 2, 0, 20).astype(np.float32)


def _streamlines() -> dict[str, Any]:
    """20 streamlines with custom ids, vertex and object attributes, and groups."""
    rng = np.random.default_rng(SEED + 1)
    lines = [_walk(rng, int(rng.integers(2, 12))) for _ in range(20)]
    lines[0] = np.array([[0, 0, 0], [10, 10, 10], [20, 10, 5], [10, 10, 10]], np.float32)
    lines[1] = np.array([[5, 5, 5], [5, 5, 15]], np.float32)  # bin edges, crosses a chunk
    n = sum(len(line) for line in lines)
    ids = np.arange(20, dtype=np.uint32) * 7 + 1000
    return {
        "writer": "write_polylines",
        "polylines": lines,
        "kind": "streamline",
        "chunk_shape": 10.0,
        "bin_shape": 5.0,
        "attributes": {"fa": np.round(rng.random(n), 3).astype(np.float32)},
        "object_attributes": {
            "weight": np.round(rng.random(20), 3),
            "n_points": np.array([len(line) for line in lines], np.int32),
        },
        "object_ids": ids,
        "groups": {"cst": ids[[3, 1, 2]], "af": ids[[0, 5, 9, 14]], "none": []},
        "group_attributes": {"colour": rng.integers(0, 256, (3, 3)).astype(np.uint8)},
        "metadata": {"step_size": 1.5, "min_length": 0.0, "max_length": 500.0},
        "options": zv.WriteOptions(
            rows_per_block=16, fragment_attributes=("weight",), shard_chunks=1
        ),
    }


def _graph_edges(rng: np.random.Generator, labels: np.ndarray) -> np.ndarray:
    """Distinct undirected edges inside each object, in shuffled order and orientation."""
    parts = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        pairs = rng.choice(members, (2 * len(members), 2))
        pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
        parts.append(pairs)
    edges = np.concatenate(parts)[rng.permutation(sum(len(p) for p in parts))]
    flip = rng.random(len(edges)) < 0.5
    edges[flip] = edges[flip, ::-1]
    return edges


def _graph() -> dict[str, Any]:
    """A 2-D undirected graph of 4 interleaved objects around the origin, with edge values."""
    rng = np.random.default_rng(SEED + 2)
    n = 96
    positions = np.round(rng.uniform(-10, 10, (n, 2)) * 2) / 2
    positions[:5] = [[0, 0], [-10, 5], [5, -5], [10, 10], [-2.5, 0]]
    labels = rng.choice(np.array([3, 7, 11, 20]), n)
    edges = _graph_edges(rng, labels)
    return {
        "writer": "write_graph",
        "positions": positions,
        "edges": edges,
        "vertex_objects": labels,
        "chunk_shape": 10.0,
        "bin_shape": 2.5,
        "attributes": {"visited": rng.random(n) < 0.5},
        "object_attributes": {"score": np.round(rng.random(4), 3).astype(np.float32)},
        "edge_attributes": {
            "weight": np.round(rng.random(len(edges)), 3).astype(np.float32),
            "kind": rng.integers(0, 4, (len(edges), 2)).astype(np.int16),
        },
        "options": zv.WriteOptions(rows_per_block=16, shard_chunks=1),
    }


def _tree(rng: np.random.Generator, n: int, root: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A random tree of ``n`` nodes from ``root`` on a 0.5 grid: (positions, parents).

    The nodes are shuffled, so the root is anywhere and parents may follow their children.
    """
    parents = np.full(n, -1, np.int64)
    positions = np.empty((n, 3))
    positions[0] = root
    for j in range(1, n):
        parents[j] = j - 1 if rng.random() < 0.7 else rng.integers(0, j)
        positions[j] = positions[parents[j]] + np.round(rng.normal(0, 2, 3) * 2) / 2
    order = rng.permutation(n)
    new = np.argsort(order)
    return positions[order], np.where(parents[order] >= 0, new[parents[order]], -1)


def _skeletons() -> dict[str, Any]:
    """5 SWC-style skeletons (parent arrays) with custom ids, radii, types and groups."""
    rng = np.random.default_rng(SEED + 3)
    roots = np.array([[10, 10, 10], [5, 15, 10], [15, 5, 10], [10, 10, 5], [12, 8, 15]], float)
    sizes = [24, 30, 18, 26, 22]
    trees = [_tree(rng, size, root) for size, root in zip(sizes, roots, strict=True)]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    parents = [np.where(p >= 0, p + s, -1) for (_, p), s in zip(trees, starts, strict=True)]
    n = sum(sizes)
    return {
        "writer": "write_skeletons",
        "positions": np.concatenate([t[0] for t in trees]),
        "parents": np.concatenate(parents),
        "vertex_objects": np.repeat(np.array([10, 20, 30, 40, 50]), sizes),
        "object_ids": np.array([9, 4, 17, 2, 30]),
        "radius": np.round(rng.uniform(0.2, 2, n), 2).astype(np.float32),
        "swc_type": rng.integers(0, 8, n).astype(np.int8),
        "attributes": {"swc_id": np.arange(1, n + 1, dtype=np.int32)},
        "object_attributes": {"soma": np.round(rng.uniform(0, 20, (5, 3)), 1)},
        "groups": {"pyramidal": [9, 17, 30], "interneuron": [4]},
        "chunk_shape": 10.0,
        "bin_shape": 5.0,
        "options": zv.WriteOptions(rows_per_block=16, shard_chunks=1),
    }


def _sphere(centre: np.ndarray, radius: float, n_lon: int) -> tuple[np.ndarray, np.ndarray]:
    """A closed UV sphere: a pole, 3 rings of ``n_lon`` vertices, a pole; (vertices, faces)."""
    polar = np.pi * np.arange(1, 4) / 4
    azimuth = 2 * np.pi * np.arange(n_lon) / n_lon
    ring = np.stack(
        [
            np.outer(np.sin(polar), np.cos(azimuth)),
            np.outer(np.sin(polar), np.sin(azimuth)),
            np.repeat(np.cos(polar)[:, None], n_lon, axis=1),
        ],
        axis=-1,
    ).reshape(-1, 3)
    unit = np.concatenate([[[0, 0, 1]], ring, [[0, 0, -1]]])
    return np.round(centre + radius * unit, 2), _sphere_faces(n_lon)


def _sphere_faces(n_lon: int) -> np.ndarray:
    """Faces of :func:`_sphere`, counter-clockwise seen from outside."""
    j = np.arange(n_lon)
    k = (j + 1) % n_lon
    faces = [np.stack([np.zeros_like(j), 1 + j, 1 + k], axis=1)]
    for upper in (1, 1 + n_lon):
        lower = upper + n_lon
        faces += [
            np.stack([upper + j, lower + j, lower + k], axis=1),
            np.stack([upper + j, lower + k, upper + k], axis=1),
        ]
    last = 1 + 2 * n_lon
    faces.append(np.stack([np.full(n_lon, last + n_lon), last + k, last + j], axis=1))
    return np.concatenate(faces)


def _meshes() -> dict[str, Any]:
    """4 closed spheres centred on chunk edges, faces shuffled, with face values."""
    rng = np.random.default_rng(SEED + 4)
    centres = np.array([[10, 10, 10], [20, 10, 5], [5, 15, 10], [10, 5, 18]], float)
    spheres = [
        _sphere(c, r, n)
        for c, r, n in zip(centres, [4.0, 3.0, 2.5, 3.5], [6, 5, 4, 6], strict=True)
    ]
    counts = [len(v) for v, _ in spheres]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    faces = np.concatenate([f + s for (_, f), s in zip(spheres, starts, strict=True)])
    faces = faces[rng.permutation(len(faces))]
    n = sum(counts)
    return {
        "writer": "write_mesh",
        "positions": np.concatenate([v for v, _ in spheres]).astype(np.float32),
        "faces": faces,
        "vertex_objects": np.repeat(np.array([100, 200, 300, 400]), counts),
        "closed_surface": True,
        "attributes": {"curvature": np.round(rng.random(n), 3).astype(np.float32)},
        "object_attributes": {"radius": np.array([4.0, 3.0, 2.5, 3.5])},
        "face_attributes": {"patch": rng.integers(0, 5, len(faces)).astype(np.uint8)},
        "groups": {"left": [100, 300]},
        "chunk_shape": 10.0,
        "bin_shape": 5.0,
        "options": zv.WriteOptions(rows_per_block=16, shard_chunks=1),
    }


class ObjectModel(NamedTuple):
    """An object store's input in one form: vertices with an object label each, and links.

    Attributes
    ----------
    positions
        ``(n, D)`` vertices in input order.
    labels
        ``(n,)`` label of each vertex's object; objects are stored by ascending label.
    attributes
        Per-vertex columns, in input order.
    links
        ``(e, 2 | 3)`` links as input vertex indices (graph edges, skeleton
        ``[child, parent]`` of every non-root, mesh faces), or None for polylines.
    link_attributes
        Per-link columns.
    ordered
        False for undirected graph edges (``[u, v]`` equals ``[v, u]``).
    """

    positions: np.ndarray
    labels: np.ndarray
    attributes: dict[str, np.ndarray]
    links: np.ndarray | None
    link_attributes: dict[str, np.ndarray]
    ordered: bool = True


def object_model(kwargs: dict[str, Any]) -> ObjectModel:
    """The :class:`ObjectModel` of the inputs of an object store."""
    attributes = dict(kwargs.get("attributes", {}))
    writer = kwargs["writer"]
    if writer == "write_polylines":
        lines = kwargs["polylines"]
        labels = np.repeat(np.arange(len(lines)), [len(line) for line in lines])
        return ObjectModel(np.concatenate(lines), labels, attributes, None, {})
    labels = kwargs["vertex_objects"]
    if writer == "write_graph":
        edges, values = kwargs["edges"], kwargs.get("edge_attributes", {})
        directed = bool(kwargs.get("directed", False))
        return ObjectModel(kwargs["positions"], labels, attributes, edges, values, directed)
    if writer == "write_skeletons":
        parents = kwargs["parents"]
        child = np.flatnonzero(parents >= 0)
        swc = {k: kwargs[k] for k in ("radius", "swc_type") if kwargs.get(k) is not None}
        links = np.stack([child, parents[child]], axis=1)
        return ObjectModel(kwargs["positions"], labels, swc | attributes, links, {})
    faces, values = kwargs["faces"], kwargs.get("face_attributes", {})
    return ObjectModel(kwargs["positions"], labels, attributes, faces, values)


def canonical_links(
    links: np.ndarray, attributes: dict[str, np.ndarray], ordered: bool
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Links in one order independent of storage: rows sorted, and each row sorted if unordered.

    Parameters
    ----------
    links
        ``(e, k)`` vertex indices.
    attributes
        Per-link columns, reordered with the links.
    ordered
        False when a link's entries are an unordered pair.

    Returns
    -------
    tuple
        The sorted links (int64) and their columns.
    """
    rows = np.asarray(links, np.int64) if ordered else np.sort(links, axis=1).astype(np.int64)
    order = np.lexsort(rows.T[::-1])
    return rows[order], {name: values[order] for name, values in attributes.items()}


def expected(kwargs: dict[str, Any]) -> dict[str, np.ndarray]:
    """The arrays of ``NAME.expected.npz``: what reading the store must give."""
    if kwargs["writer"] != "write_points":
        return _expected_objects(kwargs)
    arrays = {"positions": kwargs["positions"]}
    arrays |= {f"attr_{k}": v for k, v in kwargs.get("attributes", {}).items()}
    if "object_ids" in kwargs:
        arrays["object_ids"] = kwargs["object_ids"]
    return arrays


def _expected_objects(kwargs: dict[str, Any]) -> dict[str, np.ndarray]:
    """Objects in storage order (ascending label), each vertex in input order."""
    model = object_model(kwargs)
    unique, dense = np.unique(model.labels, return_inverse=True)
    order = np.argsort(dense, kind="stable")
    ids = np.asarray(kwargs.get("object_ids", unique))
    arrays = {
        "object_ids": ids,
        "offsets": np.concatenate([[0], np.cumsum(np.bincount(dense))]).astype(np.int64),
        "positions": np.asarray(model.positions)[order],
    }
    arrays |= {f"attr_{k}": np.asarray(v)[order] for k, v in model.attributes.items()}
    arrays |= {
        f"object_attr_{k}": np.asarray(v) for k, v in kwargs.get("object_attributes", {}).items()
    }
    if model.links is not None:
        written = np.argsort(order)
        links, values = canonical_links(written[model.links], model.link_attributes, model.ordered)
        arrays["links"] = links
        arrays |= {f"link_attr_{k}": v for k, v in values.items()}
    for name, members in kwargs.get("groups", {}).items():
        arrays[f"group_{name}"] = ids[np.isin(ids, members)]
    return arrays


def main() -> None:
    """Write every golden store of format 1.6 under ``1.6/``, replacing what is there: the
    inputs of the 1.0 stores and of the 1.1 stores (several chunks per shard), the stores
    with levels, and the point cloud with an object-to-chunks index."""
    write_all(HERE_1_6, inputs() | sharded_inputs() | level_inputs() | index_inputs())
    write_imported_all(HERE_1_6)
    write_all(HERE_1_7, order_inputs())


def write_all(here: Path, stores: dict[str, dict[str, Any]]) -> None:
    """Write the golden ``stores`` and their expected answers under ``here``."""
    here.mkdir(exist_ok=True)
    for name, kwargs in stores.items():
        path = here / f"{name}.zarrvectors"
        shutil.rmtree(path, ignore_errors=True)
        write(path, kwargs)
        levels = level_arrays(path) if "levels" in kwargs else {}
        save_expected(here / f"{name}.expected.npz", expected(kwargs) | levels)
        print(f"wrote {path}")


def save_expected(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` unless it already holds them (an npz embeds a timestamp)."""
    if path.exists():
        with np.load(path) as old:
            same = sorted(old.files) == sorted(arrays) and all(
                old[k].dtype == np.asarray(v).dtype and np.array_equal(old[k], v)
                for k, v in arrays.items()
            )
        if same:
            return
    np.savez(path, **arrays)


def write(path: Path, kwargs: dict[str, Any]) -> None:
    """Write one golden store exactly as the committed one was written."""
    args = dict(kwargs)
    rows = args.pop("order_rows", None)
    getattr(zv, args.pop("writer"))(path, **args)
    if rows is not None:  # the copy again, of R = rows (the writer's default is 128)
        io = StoreIO(LocalStore(path))
        root = RootMetadata.from_json(io.read_json("zarr.json")["attributes"])
        io.name_dimensions(root.axis_names)  # as every writer's destination names them
        write_object_order(io, root, rows_per_block=rows)
    (path / "metadata.json").unlink(missing_ok=True)  # 1.2 and older: a timestamp (§2.5)


if __name__ == "__main__":
    if sys.argv[1:] == ["imported"]:
        write_imported_all(HERE_1_6)
    else:
        main()
