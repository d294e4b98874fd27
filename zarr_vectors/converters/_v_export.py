"""Level 0 of a store of this format written as a layout-V store (zarr-vectors 0.9.x, §14).

Point clouds (every vertex attribute, a per-vertex ``object_id`` included, as vertex
attributes) and polylines/streamlines (object ids, vertices in traversal order, vertex,
object and group attributes, groups) are written as zarr-vectors 0.9.2 writes them: one
fragment per bin of a chunk for points, one fragment per run of a polyline in a chunk, a
mode-0 manifest block per run, and the chunk-crossing steps of a polyline as bridge links
``links/0/<offsets>/`` (canonical placement, ``perm`` column). Graphs, skeletons and meshes:
:mod:`zarr_vectors.converters._v_linked`.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.converters._v_cells import (
    V_VERSION,
    Chunk,
    Grid,
    cell_attrs,
    signed,
    write_fragments,
    write_groups,
    write_object_arrays,
    write_vertex_arrays,
)
from zarr_vectors.converters._v_export_levels import write_imported_levels, write_point_levels
from zarr_vectors.converters._v_linked import LINKED_KINDS, write_linked, write_point_objects
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.fragments import FragmentIndex
from zarr_vectors.format.manifest import ManifestBlock, encode_manifest
from zarr_vectors.store.layout_v import LayoutVWriter

__all__ = ["EXPORT_KINDS", "export_v"]

EXPORT_KINDS = ("point_cloud", "polyline", "streamline", *LINKED_KINDS)
"""The kinds written as layout V."""

CONVENTIONS = {
    "graph": "explicit",
    "mesh": "explicit",
    "skeleton": "implicit_sequential_with_branches",
}
"""``links_convention`` of a kind (``implicit_sequential`` unless named here)."""


def _root(store: VectorStore, kind: str, lo: np.ndarray, hi: np.ndarray) -> dict[str, Any]:
    bins = np.asarray(store.bin_shape, dtype=np.float64)
    axes = [{"name": n, "type": "space"} for n in store.axis_names]
    block = {
        "zv_version": V_VERSION,
        "format_capabilities": [],
        "chunk_shape": [float(c) for c in store.chunk_shape],
        "bounds": [lo.tolist(), hi.tolist()],
        "geometry_types": [kind],
        "base_bin_shape": bins.tolist(),
        "links_convention": CONVENTIONS.get(kind, "implicit_sequential"),
        "object_index_convention": "standard",
        "cross_chunk_strategy": "explicit_links",
    }
    dataset = {
        "path": "0",
        "coordinateTransformations": [
            {"type": "scale", "scale": [1.0] * len(axes)},
            {"type": "translation", "translation": (bins / 2).tolist()},
        ],
    }
    scales = {"version": "0.4", "name": "default", "axes": axes, "datasets": [dataset]}
    return {
        "zarr_vectors": block,
        "multiscales": [{**scales, "metadata": {"format": "zarr_vectors"}}],
    }


def _level_attrs(count: int, present: list[str]) -> dict[str, Any]:
    level = {
        "level": 0,
        "object_sparsity": 1.0,
        "vertex_count": count,
        "coarsening_method": "none",
        "parent_level": None,
        "arrays_present": present,
        "fragments_tile": True,
    }
    return {"zarr_vectors_level": level}


def _points(out: LayoutVWriter, store: VectorStore, grid: Grid) -> list[str]:
    """A point cloud: per chunk, its rows by bin (C order), one range fragment per bin (with
    object ids: :func:`~zarr_vectors.converters._v_linked.write_point_objects`)."""
    result = store.read()
    if result.vertex_object_ids is not None:
        return write_point_objects(out, store, grid, result)
    positions = np.asarray(result.positions, dtype=np.float64)
    chunks = grid.of(positions)
    per = np.round(grid.chunk / np.asarray(store.bin_shape)).astype(np.int64)
    local = np.floor(positions / np.asarray(store.bin_shape)).astype(np.int64) - chunks * per
    bin_id = np.ravel_multi_index(tuple(np.clip(local, 0, per - 1).T), tuple(per))
    rows: dict[Chunk, np.ndarray] = {}
    frags: dict[Chunk, FragmentIndex] = {}
    for chunk in sorted({tuple(c) for c in chunks.tolist()}):
        mine = np.flatnonzero((chunks == chunk).all(axis=1))
        mine = mine[np.argsort(bin_id[mine], kind="stable")]
        counts = np.bincount(bin_id[mine], minlength=int(per.prod()))
        rows[chunk] = mine
        frags[chunk] = FragmentIndex.from_ranges(np.cumsum(counts) - counts, counts)
    present = write_vertex_arrays(out, grid, rows, result)
    write_fragments(out, grid, frags)
    return present


def _runs(chunks: np.ndarray, start: int, stop: int) -> list[tuple[int, int]]:
    """Maximal runs ``[a, b)`` of vertices ``start..stop`` in one chunk."""
    change = np.flatnonzero((chunks[start + 1 : stop] != chunks[start : stop - 1]).any(axis=1))
    cuts = [start, *(start + 1 + change).tolist(), stop]
    return list(itertools.pairwise(cuts))


class _Polylines:
    """Chunk rows, fragments, manifests and bridge links of polylines, built object by object."""

    def __init__(self) -> None:
        self.rows: dict[Chunk, list[np.ndarray]] = defaultdict(list)
        self.local: dict[int, tuple[Chunk, int]] = {}
        self.manifests: list[bytes] = []
        self.bridges: dict[str, dict[Chunk, list[list[int]]]] = defaultdict(
            lambda: defaultdict(list)
        )

    def add(self, chunks: np.ndarray, start: int, stop: int) -> None:
        blocks = []
        for a, b in _runs(chunks, start, stop):
            chunk = tuple(int(c) for c in chunks[a])
            held = sum(r.size for r in self.rows[chunk])
            for v in range(a, b):
                self.local[v] = (chunk, held + v - a)
            blocks.append(ManifestBlock(chunk, np.array([len(self.rows[chunk])])))
            self.rows[chunk].append(np.arange(a, b))
            if a > start:
                self._bridge(a - 1, a)
        self.manifests.append(encode_manifest(blocks, chunks.shape[1]))

    def _bridge(self, tail: int, head: int) -> None:
        """The step from vertex ``tail`` to ``head`` across chunks (canonical, with perm)."""
        ends = [self.local[tail], self.local[head]]
        order = sorted(range(2), key=lambda k: ends[k])
        (src, vi0), (dst, vi1) = ends[order[0]], ends[order[1]]
        offset = signed(np.asarray(dst) - np.asarray(src))
        self.bridges[offset][src].append([int(order != [0, 1]), vi0, vi1])

    def fragments(self) -> dict[Chunk, FragmentIndex]:
        out = {}
        for chunk, runs in self.rows.items():
            counts = np.array([r.size for r in runs])
            out[chunk] = FragmentIndex.from_ranges(np.cumsum(counts) - counts, counts)
        return out


def _write_bridges(out: LayoutVWriter, grid: Grid, lines: _Polylines) -> None:
    total = sum(len(r) for cells in lines.bridges.values() for r in cells.values())
    out.group("0/links", {})
    family = {"zv_array": "links_family", "level_delta": 0, "link_width": 2, "directed": False}
    family |= {"store": "canonical", "sid_ndim": len(grid.shape)}
    out.group("0/links/0", {**family, "num_links": total, "num_physical_records": total})
    for offset, cells in lines.bridges.items():
        blobs = {
            c: np.concatenate([[1, 0], np.ravel(rows)]).astype("<i8").tobytes()
            for c, rows in cells.items()
        }
        meta = cell_attrs(grid, blobs, zv_array="links", dtype="int64")
        offsets = [[int(c) for c in offset.split(".")]]
        meta |= {"offsets": offsets, "has_perm": True, "link_width": 2, "level_delta": 0}
        out.cells(f"0/links/0/{offset}", blobs, grid.origin, grid.shape, meta)


def _polylines(out: LayoutVWriter, store: VectorStore, grid: Grid) -> list[str]:
    result = store.read_objects(sorted(store.object_ids.tolist()))
    chunks = grid.of(np.asarray(result.positions, dtype=np.float64))
    lines = _Polylines()
    offsets = np.asarray(result.offsets)
    for k in range(offsets.size - 1):
        lines.add(chunks, int(offsets[k]), int(offsets[k + 1]))
    rows = {c: np.concatenate(r) for c, r in lines.rows.items()}
    present = write_vertex_arrays(out, grid, rows, result)
    write_fragments(out, grid, lines.fragments())
    _write_bridges(out, grid, lines)
    write_object_arrays(out, store, result, lines.manifests)
    write_groups(out, store)
    return [*present, "object_index"]


def export_v(store: VectorStore, path: Path) -> None:
    """Write level 0 of ``store`` (and a point cloud's ``"aggregate"`` levels, an object
    store's ``"imported"`` levels) as a layout-V store at ``path`` (a new directory).

    Raises
    ------
    InvalidInputError
        For a kind not in :data:`EXPORT_KINDS`, an empty store, or object ids that are not
        ``0..n-1`` (0.9.2's object index numbers objects densely).
    """
    if store.kind not in EXPORT_KINDS:
        raise InvalidInputError(
            f"a {store.kind} store cannot be written as layout V yet (only "
            f"{', '.join(EXPORT_KINDS)}); import it into 0.9 from a file format instead"
        )
    if store.bounds is None:
        raise InvalidInputError("an empty store has nothing to write as layout V")
    ids = sorted(store.object_ids.tolist()) if store.is_object_store else []
    if ids != list(range(len(ids))):
        raise InvalidInputError("layout V numbers objects 0..n-1; renumber the objects first")
    lo, hi = (np.asarray(b, dtype=np.float64) for b in store.bounds)
    grid = Grid(np.asarray(store.chunk_shape, dtype=np.float64), lo, hi)
    out = LayoutVWriter(path)
    root = _root(store, store.kind, lo, hi)
    out.group("", root)
    writers = {"point_cloud": _points, "polyline": _polylines, "streamline": _polylines}
    present = writers.get(store.kind, write_linked)(out, store, grid)
    count = store.vertex_count
    out.group("0", _level_attrs(count, present))
    coarse = write_point_levels(out, store, grid) + write_imported_levels(out, store, grid)
    if coarse:
        root["multiscales"][0]["datasets"] += coarse
        shared = ["preserved_object_ids"] if store.is_object_store else []
        root["zarr_vectors"]["format_capabilities"] = [*shared, "shared_fragments"]
        out.group("", root)
