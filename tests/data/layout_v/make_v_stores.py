"""Write the golden layout-V stores: small stores of every kind ``zarr-vectors==0.9.2`` writes.

The other implementation of the format (``zarr-vectors`` on PyPI, import name
``zarr_vectors`` like ours) writes "layout V" (spec, section "Layout V interchange"). This
script runs with THAT library, in its own virtualenv, never with ours::

    python benchmarks/reference_env.py        # prints .../benchmarks/_reference_venv/bin/python
    benchmarks/_reference_venv/bin/python -I tests/data/layout_v/make_v_stores.py

(``... make_v_stores.py NAME ...`` rewrites only the stores named;
``... make_v_stores.py read STORE OUT.npz`` records 0.9.2's answers for another store: the
test of our export runs it.)

It rewrites ``tests/data/layout_v/<name>.zv/`` (the store as 0.9.2 wrote it),
``<name>.inputs.npz`` (exactly what 0.9.2 was given) and ``<name>.answers.npz`` (what 0.9.2
itself reads back: the whole store, a box query and a read by id at every level), so the
tests compare our import against both without 0.9.2 at test time.

Input arrays in ``<name>.inputs.npz``: ``positions``; ``object_ids`` (per vertex, when the
kind has objects); ``edges`` or ``faces`` (global vertex indices); ``offsets`` (polylines:
vertex offsets of each line, which is object ``i``); ``v_<name>`` vertex attributes,
``o_<name>`` object attributes, ``l_<name>`` edge attributes, ``g_<name>`` group
attributes; ``group_members`` and ``group_offsets`` (group ``g`` holds the object ids
``group_members[group_offsets[g]:group_offsets[g+1]]``); ``chunk_shape``, ``bin_shape``,
``bounds``. Answers: ``<level>_<read>_<field>`` with read ``all``, ``box`` or ``ids``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
CHUNK = [50.0, 50.0, 50.0]
BIN = [25.0, 25.0, 25.0]
BOUNDS = ([0.0, 0.0, 0.0], [100.0, 100.0, 100.0])
BOX = (np.array([10.0, 10.0, 10.0]), np.array([60.0, 70.0, 80.0]))
IDS = [1, 3]
LINKED_IDS = [0, 2]
"""Graphs, skeletons and meshes hold objects 0, 1, 2."""


def _groups(n_objects: int) -> dict[int, list[int]]:
    return {0: [0, 1], 1: list(range(2, n_objects)), 2: [n_objects - 1]}


def _group_arrays(groups: dict[int, list[int]]) -> dict[str, np.ndarray]:
    members = [np.asarray(groups[g], dtype=np.int64) for g in sorted(groups)]
    offsets = np.concatenate([[0], np.cumsum([m.size for m in members])]).astype(np.int64)
    return {"group_members": np.concatenate(members), "group_offsets": offsets}


def _walk(rng: np.random.Generator, n: int) -> np.ndarray:
    start = rng.uniform(15, 85, 3)
    steps = rng.normal(0, 6, (n, 3))
    return np.clip(start + np.cumsum(steps, axis=0), 1, 99).astype(np.float32)


def points_case(rng: np.random.Generator, with_objects: bool) -> dict[str, Any]:
    n = 80
    data: dict[str, Any] = {
        "positions": rng.uniform(1, 99, (n, 3)).astype(np.float32),
        "v_intensity": rng.uniform(0, 1, n).astype(np.float32),
        "v_label": rng.integers(0, 9, n).astype(np.int32),
    }
    if with_objects:
        n_obj = 6
        data["object_ids"] = (np.arange(n) % n_obj).astype(np.int64)
        data["o_score"] = rng.uniform(0, 10, n_obj).astype(np.float64)
        groups = _groups(n_obj)
        data.update(_group_arrays(groups))
        data["g_weight"] = np.array([0.5, 1.5, 2.5], dtype=np.float32)
    return data


def polyline_case(rng: np.random.Generator) -> dict[str, Any]:
    lengths = [12, 7, 20, 3, 15]
    lines = [_walk(rng, m) for m in lengths]
    n_obj = len(lines)
    groups = _groups(n_obj)
    return {
        "positions": np.concatenate(lines),
        "offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        "v_fa": rng.uniform(0, 1, sum(lengths)).astype(np.float32),
        "o_length": np.array([float(m) for m in lengths], dtype=np.float32),
        **_group_arrays(groups),
        "g_weight": np.array([0.5, 1.5, 2.5], dtype=np.float32),
    }


def graph_case(rng: np.random.Generator, tree: bool) -> dict[str, Any]:
    sizes = [9, 6, 11]
    positions, edges, owner = [], [], []
    start = 0
    for obj, m in enumerate(sizes):
        positions.append(_walk(rng, m))
        parents = [int(rng.integers(0, i)) for i in range(1, m)]
        edges += [(start + i, start + p) for i, p in zip(range(1, m), parents, strict=True)]
        if not tree and parents[-1] != 0:
            edges.append((start, start + m - 1))  # one cycle per object, no repeated edge
        owner += [obj] * m
        start += m
    n_edges = len(edges)
    return {
        "positions": np.concatenate(positions),
        "edges": np.asarray(edges, dtype=np.int64),
        "object_ids": np.asarray(owner, dtype=np.int64),
        "v_radius": rng.uniform(0.5, 2, start).astype(np.float32),
        "o_volume": rng.uniform(0, 100, len(sizes)).astype(np.float64),
        "l_weight": rng.uniform(0, 1, n_edges).astype(np.float32),
    }


def mesh_case(rng: np.random.Generator) -> dict[str, Any]:
    positions, faces, owner = [], [], []
    start = 0
    tet = np.array([[0, 1, 2], [0, 3, 1], [1, 3, 2], [2, 3, 0]])
    for obj, centre in enumerate([(20, 20, 20), (48, 52, 50), (80, 30, 70)]):
        corners = np.asarray(centre, dtype=np.float32) + rng.uniform(-9, 9, (4, 3))
        positions.append(corners.astype(np.float32))
        faces.append(tet + start)
        owner += [obj] * 4
        start += 4
    return {
        "positions": np.concatenate(positions),
        "faces": np.concatenate(faces).astype(np.int64),
        "object_ids": np.asarray(owner, dtype=np.int64),
        "v_curvature": rng.uniform(-1, 1, start).astype(np.float32),
        "o_area": rng.uniform(0, 50, 3).astype(np.float64),
    }


def _prefixed(data: dict[str, Any], prefix: str) -> dict[str, np.ndarray]:
    return {k[len(prefix) :]: v for k, v in data.items() if k.startswith(prefix)}


def _group_dict(data: dict[str, Any]) -> dict[int, list[int]] | None:
    if "group_offsets" not in data:
        return None
    off, members = data["group_offsets"], data["group_members"]
    return {g: members[off[g] : off[g + 1]].tolist() for g in range(off.size - 1)}


def write(zv: Any, path: Path, kind: str, data: dict[str, Any]) -> None:
    """Write ``data`` with 0.9.2's writer for ``kind``."""
    from zarr_vectors.types.graphs import write_graph
    from zarr_vectors.types.meshes import write_mesh
    from zarr_vectors.types.points import write_points
    from zarr_vectors.types.polylines import write_polylines

    common: dict[str, Any] = {"chunk_shape": CHUNK, "bin_shape": BIN, "bounds": list(BOUNDS)}
    # zstd keeps the 65536-row object attribute chunks small; "points" stays uncompressed.
    common["compressor"] = None if "object_ids" not in data and kind == "point_cloud" else "zstd"
    vattr = _prefixed(data, "v_") or None
    oattr = _prefixed(data, "o_") or None
    gattr = _prefixed(data, "g_") or None
    if kind == "point_cloud":
        write_points(
            str(path), data["positions"], vertex_attributes=vattr,
            object_ids=data.get("object_ids"), object_attributes=oattr,
            groups=_group_dict(data), group_attributes=gattr, **common,
        )  # fmt: skip
    elif kind in ("polyline", "streamline"):
        lines = np.split(data["positions"], data["offsets"][1:-1])
        vlines = {k: np.split(v, data["offsets"][1:-1]) for k, v in (vattr or {}).items()}
        write_polylines(
            str(path), lines, vertex_attributes=vlines or None, object_attributes=oattr,
            groups=_group_dict(data), group_attributes=gattr, geometry_type=kind, **common,
        )  # fmt: skip
    elif kind in ("graph", "skeleton"):
        write_graph(
            str(path), data["positions"], data["edges"], kind=kind, vertex_attributes=vattr,
            link_attributes=_prefixed(data, "l_") or None, object_attributes=oattr,
            object_ids=data["object_ids"], **common,
        )  # fmt: skip
    else:
        write_mesh(
            str(path), data["positions"], data["faces"], vertex_attributes=vattr,
            object_attributes=oattr, object_ids=data["object_ids"], **common,
        )  # fmt: skip


def _answer(result: Any, prefix: str) -> dict[str, np.ndarray]:
    out = {f"{prefix}_positions": np.asarray(result.positions)}
    lengths = [s.stop - s.start for s in result.parts]
    out[f"{prefix}_part_lengths"] = np.asarray(lengths, dtype=np.int64)
    for name in ("part_objects", "object_ids", "edges", "faces"):
        value = getattr(result, name)
        if value is not None:
            out[f"{prefix}_{name}"] = np.asarray(value)
    for name, values in result.attributes.items():
        out[f"{prefix}_attr_{name}"] = np.asarray(values)
    return out


def kind_of(ds: Any) -> str:
    return str(ds.kinds[0])


def _by_manifest(ds: Any, level: int, ids: list[int]) -> dict[str, np.ndarray]:
    """Objects ``ids`` read by 0.9.2 through their manifests (its ``read_object_vertices``):
    its ``objects[...]`` and ``select(objects=)`` refuse graphs, skeletons and meshes."""
    from zarr_vectors.core.arrays import read_object_vertices
    from zarr_vectors.core.store import get_resolution_level

    group = get_resolution_level(ds.store, level)
    parts = [np.concatenate(read_object_vertices(group, i)) for i in ids]
    prefix = f"{level}_ids"
    return {
        f"{prefix}_positions": np.concatenate(parts),
        f"{prefix}_part_lengths": np.asarray([len(p) for p in parts], dtype=np.int64),
        f"{prefix}_part_objects": np.asarray(ids, dtype=np.int64),
    }


def answers(zv: Any, path: Path, has_objects: bool) -> dict[str, np.ndarray]:
    """What 0.9.2 reads from the store it wrote: every level, whole, in a box, by id."""
    ds = zv.open(str(path))
    out: dict[str, np.ndarray] = {"levels": np.asarray(ds.levels, dtype=np.int64)}
    for level in ds.levels:
        out.update(_answer(ds.read(level=level), f"{level}_all"))
        out.update(_answer(ds.read(level=level, bbox=BOX), f"{level}_box"))
        if has_objects and kind_of(ds) not in ("graph", "skeleton", "mesh"):
            out.update(_answer(ds.level(level).objects[IDS], f"{level}_ids"))
        elif has_objects:
            out.update(_by_manifest(ds, level, LINKED_IDS))
    return out


def pyramid_case(rng: np.random.Generator) -> dict[str, Any]:
    n = 240
    return {
        "positions": rng.uniform(1, 99, (n, 3)).astype(np.float32),
        "v_intensity": rng.uniform(0, 1, n).astype(np.float32),
    }


ONE_LEVEL = [(2.0, 1.0)]
CASES: dict[str, tuple[str, Any, list[tuple[float, float]]]] = {
    "points": ("point_cloud", lambda rng: points_case(rng, False), []),
    "points_objects": ("point_cloud", lambda rng: points_case(rng, True), []),
    "polylines": ("polyline", polyline_case, []),
    "streamlines": ("streamline", polyline_case, ONE_LEVEL),
    "graph": ("graph", lambda rng: graph_case(rng, False), []),
    "skeleton": ("skeleton", lambda rng: graph_case(rng, True), ONE_LEVEL),
    "mesh": ("mesh", mesh_case, []),
    "points_pyramid": ("point_cloud", pyramid_case, [(2.0, 1.0), (2.0, 1.0)]),
    "polylines_pyramid": ("polyline", polyline_case, [(2.0, 1.0), (2.0, 2.0)]),
    "graph_pyramid": ("graph", lambda rng: graph_case(rng, False), ONE_LEVEL),
    "mesh_pyramid": ("mesh", mesh_case, ONE_LEVEL),
}
"""Store name -> (kind, input maker, the ``factors`` of 0.9.2's ``build_pyramid`` (coarse
levels), if any). ``polylines_pyramid`` keeps half of its objects at level 2 (0.9.2's
``"random"`` object sparsity, seed :data:`SPARSITY_SEED`): its level 2 bin (100) is larger
than the chunk (50)."""
SPARSITY_SEED = 38


def main(names: list[str]) -> None:
    """Write the stores ``names`` (every store when empty)."""
    import zarr_vectors as zv

    if zv.__version__ != "0.9.2":
        sys.exit(f"run this with zarr-vectors 0.9.2 (found {zv.__version__} at {zv.__file__})")
    for index, (name, (kind, make, pyramid)) in enumerate(CASES.items()):
        if names and name not in names:
            continue
        rng = np.random.default_rng(3800 + index)
        data = make(rng)
        path = HERE / f"{name}.zv"
        shutil.rmtree(path, ignore_errors=True)
        write(zv, path, kind, data)
        if pyramid:
            seed = SPARSITY_SEED if any(s > 1 for _, s in pyramid) else None
            zv.open(str(path), mode="r+").build_pyramid(factors=pyramid, sparsity_seed=seed)
        meta = {"chunk_shape": CHUNK, "bin_shape": BIN, "bounds": BOUNDS, "box": BOX}
        np.savez(HERE / f"{name}.inputs.npz", **data, **{k: np.asarray(v) for k, v in meta.items()})
        has_objects = kind != "point_cloud" or "object_ids" in data
        np.savez(HERE / f"{name}.answers.npz", **answers(zv, path, has_objects))
        print(name, kind, json.dumps([int(v) for v in zv.open(str(path)).levels]))


def read_back(pairs: list[str]) -> None:
    """``make_v_stores.py read STORE OUT.npz [STORE OUT.npz ...]``: 0.9.2's answers for other
    stores (exported by our ``zv.convert(..., format="zarr-vectors-0.9")``), as for the
    golden ones, with the errors of 0.9.2's own validation at level 5 (``validate_errors``)."""
    import zarr_vectors as zv
    from zarr_vectors.validate import validate

    for store, out in zip(pairs[::2], pairs[1::2], strict=True):
        ds = zv.open(store)
        objects = kind_of(ds) != "point_cloud" or (Path(store) / "0" / "object_index").is_dir()
        found = answers(zv, Path(store), objects)
        errors = validate(store, level=5).errors
        np.savez(out, **found, validate_errors=np.asarray(errors, dtype=str))


if __name__ == "__main__":
    if sys.argv[1:2] == ["read"]:
        read_back(sys.argv[2:])
    else:
        main(sys.argv[1:])
