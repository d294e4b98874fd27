"""Level 3 checks of links: ``links/0``, ``cross_chunk_links`` and the kind rules (spec §11.4).

Run after :func:`~zarr_vectors.validate.object_checks.run_object_checks`, whose owners map
every vertex read to its object. Entries and anchors are checked chunk by chunk; the
polyline and skeleton rules, which relate links of several chunks, only when every chunk
was read.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.kernels import chunk_coords, concat_ranges
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.names import CROSS_CHUNK_LINKS
from zarr_vectors.validate.object_checks import Refs, read_global, report_objects
from zarr_vectors.validate.object_data import ChunkObjects, LevelIndex, ObjectLevel

__all__ = ["run_link_checks"]

Chunk = tuple[int, ...]
_MAX_REPORTED = 20


def run_link_checks(
    ctx: Context,
    data: ObjectLevel,
    index: LevelIndex,
    refs: Refs | None,
    geometry: tuple[np.ndarray, np.ndarray],
    *,
    sampled: bool,
) -> None:
    """Every link check of one level.

    Parameters
    ----------
    geometry
        ``(chunk_shape, chunk_grid_origin)``, for the mesh face-chunk rule.
    """
    checks = _Links(ctx, data, index, geometry)
    ccl = checks.cross_chunk_links()
    checks.chunks(ccl)
    if sampled:
        ctx.report.note(
            f"level {data.level}: polyline_links and skeleton_parent_once need every chunk; "
            "skipped for a sample"
        )
        return
    if geometry_kind(data.kind).ordered and refs is not None:
        checks.polyline_links(refs, ccl)
    if geometry_kind(data.kind).tree:
        checks.skeleton_parents(ccl)


class _Links:
    def __init__(
        self,
        ctx: Context,
        data: ObjectLevel,
        index: LevelIndex,
        geometry: tuple[np.ndarray, np.ndarray],
    ) -> None:
        self.ctx, self.data, self.index = ctx, data, index
        self.kind, self.base = data.kind, str(data.level)
        self.row = geometry_kind(data.kind)
        self.chunk_shape, self.origin = geometry
        self.directed = _directed(ctx)

    def _key(self, g: Chunk) -> str:
        spec = self.data.links
        return spec.key(g) if spec is not None else f"{self.base}/links/0"

    # -- cross-chunk links -------------------------------------------------------------------
    def cross_chunk_links(self) -> np.ndarray | None:
        """The valid rows of ``cross_chunk_links`` after its own checks (None if absent)."""
        if not self.row.cross_chunk_links:
            return None
        if not self.ctx.node(f"{self.base}/{CROSS_CHUNK_LINKS}").is_array:
            return None
        ctx = self.ctx
        ctx.mark("L3.ccl_gid_valid", "L3.ccl_different_chunks", "L3.ccl_sorted")
        path = f"{self.base}/{CROSS_CHUNK_LINKS}"
        table = read_global(ctx, path, "L3.ccl_gid_valid")
        if table is None:
            return None
        table = table.astype(np.int64).reshape(-1, 2)
        valid = self.index.valid_gids(table[:, 0]) & self.index.valid_gids(table[:, 1])
        for r in np.flatnonzero(~valid)[:_MAX_REPORTED].tolist():
            ctx.fail("L3.ccl_gid_valid", f"{path}#row={r}", f"{table[r].tolist()} names no vertex")
        same = valid & (table[:, 0] // self.index.n_max == table[:, 1] // self.index.n_max)
        for r in np.flatnonzero(same)[:_MAX_REPORTED].tolist():
            ctx.fail(
                "L3.ccl_different_chunks",
                f"{path}#row={r}",
                f"{table[r].tolist()}: both vertices lie in one chunk; such a link belongs in "
                "links/0",
            )
        order = np.lexsort((table[:, 1], table[:, 0]))
        unsorted = np.flatnonzero(order != np.arange(table.shape[0]))
        if unsorted.size:
            ctx.fail(
                "L3.ccl_sorted",
                f"{path}#row={int(unsorted[0])}",
                "rows are not sorted ascending by (column 0, column 1)",
            )
        good: np.ndarray = table[valid & ~same]
        self._edge_rules(good, lambda r: f"{path}#row={r}", np.flatnonzero(valid & ~same))
        owners = self.index.owner_of_gids(good.reshape(-1)).reshape(-1, 2)
        mixed = (owners[:, 0] >= 0) & (owners[:, 1] >= 0) & (owners[:, 0] != owners[:, 1])
        rows = np.flatnonzero(valid & ~same)
        for r in rows[mixed][:_MAX_REPORTED].tolist():
            ctx.fail(
                "L3.link_single_object",
                f"{path}#row={r}",
                f"{table[r].tolist()} joins vertices of two objects",
            )
        return good

    # -- links/0, chunk by chunk ------------------------------------------------------------
    def chunks(self, ccl: np.ndarray | None) -> None:
        """Entries, anchors, owners and the kind rules of every chunk's ``links/0``."""
        if self.data.links is None:
            return
        ctx = self.ctx
        ctx.mark("L3.link_entries", "L3.link_anchor", "L3.link_single_object")
        if self.row.cross_chunk_links:
            ctx.mark("L3.no_self_loops", "L3.no_duplicate_links")
            if self.row.undirected(self.directed):
                ctx.mark("L3.edge_orientation")
        if self.row.faces:
            ctx.mark("L3.no_degenerate_faces", "L3.no_duplicate_faces", "L3.face_chunk")
        for g, data in self.data.chunks.items():
            if data.links is not None and data.links.shape[0]:
                self._chunk(g, data)

    def _chunk(self, g: Chunk, data: ChunkObjects) -> None:
        links, key = data.links, self._key(g)
        assert links is not None
        gids = self._entry_gids(g, data, links)
        if gids is None:
            return
        self._anchor(g, data, links)
        owner = self.index.owner_of_gids(np.where(gids >= 0, gids, 0).reshape(-1))
        owner = np.where(gids.reshape(-1) >= 0, owner, -1).reshape(gids.shape)
        known = owner >= 0
        first = np.max(np.where(known, owner, -1), axis=1)
        mixed = np.any(known & (owner != first[:, None]), axis=1)
        if mixed.any():
            r = int(np.flatnonzero(mixed)[0])
            self.ctx.fail(
                "L3.link_single_object", key, f"row {r} {links[r].tolist()} joins two objects"
            )
        if self.row.faces:
            self._faces(g, data, links, gids)
        else:
            edges = np.flatnonzero(gids[:, 1] >= 0)
            self._edge_rules(gids[edges], lambda r: f"{key}#row={r}", edges)

    def _entry_gids(self, g: Chunk, data: ChunkObjects, links: np.ndarray) -> np.ndarray | None:
        """L3.link_entries; the gid of every entry (-1 for a skeleton root's parent)."""
        base = self.index.base(g)
        local = (links >= 0) & (links < data.n)
        gids = np.where(local, links + base, -1)
        bad = ~local
        if self.row.tree:
            bad[:, 1] &= links[:, 1] != -1
        if self.row.faces:
            sentinel = links < 0
            foreign = -links[sentinel] - 1
            ok = self.index.valid_gids(foreign) & (
                foreign // self.index.n_max != base // self.index.n_max
            )
            gids[sentinel] = np.where(ok, foreign, -1)
            bad[sentinel] = ~ok
        rows = np.flatnonzero(bad.any(axis=1))
        if rows.size:
            r = int(rows[0])
            self.ctx.fail(
                "L3.link_entries",
                self._key(g),
                f"{rows.size} rows name vertices that do not exist (first: row {r} "
                f"{links[r].tolist()}; the chunk has {data.n} rows)",
            )
            return None
        return gids

    def _anchor(self, g: Chunk, data: ChunkObjects, links: np.ndarray) -> None:
        """L3.link_anchor: link fragment f's rows are anchored in vertex fragment f."""
        if data.link_starts is None or data.link_counts is None:
            return
        if self.row.faces:
            first = np.argmax(links >= 0, axis=1)
            anchor = links[np.arange(links.shape[0]), first]
        else:
            anchor = links[:, 0]
        frag = np.repeat(np.arange(data.link_counts.shape[0]), data.link_counts)
        n = min(frag.shape[0], anchor.shape[0])
        lo = data.starts[frag[:n]]
        hi = lo + data.counts[frag[:n]]
        bad = np.flatnonzero((anchor[:n] < lo) | (anchor[:n] >= hi))
        if bad.size:
            r = int(bad[0])
            self.ctx.fail(
                "L3.link_anchor",
                self._key(g),
                f"row {r} {links[r].tolist()} belongs to link fragment {int(frag[r])} but its "
                f"anchor is not a row of vertex fragment {int(frag[r])}",
            )

    def _edge_rules(self, pairs: np.ndarray, path: Callable[[int], str], rows: np.ndarray) -> None:
        """L3.no_self_loops, L3.edge_orientation and L3.no_duplicate_links on gid pairs.

        ``rows`` are the stored row numbers of ``pairs``, named in findings via ``path``.
        """
        if not self.row.cross_chunk_links or not pairs.shape[0]:
            return
        loops = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
        if loops.size:
            self.ctx.fail(
                "L3.no_self_loops", path(int(rows[loops[0]])), "an edge joins a vertex to itself"
            )
        if self.row.undirected(self.directed):
            backwards = np.flatnonzero(pairs[:, 0] > pairs[:, 1])
            if backwards.size:
                self.ctx.fail(
                    "L3.edge_orientation",
                    path(int(rows[backwards[0]])),
                    "an undirected edge is stored as [larger, smaller]; store [min, max]",
                )
        repeat = _first_repeat(pairs)
        if repeat is not None:
            self.ctx.fail(
                "L3.no_duplicate_links", path(int(rows[repeat])), "an edge is stored twice"
            )

    # -- meshes --------------------------------------------------------------------------------
    def _faces(self, g: Chunk, data: ChunkObjects, links: np.ndarray, gids: np.ndarray) -> None:
        key = self._key(g)
        degenerate = (
            (gids[:, 0] == gids[:, 1]) | (gids[:, 1] == gids[:, 2]) | (gids[:, 0] == gids[:, 2])
        )
        if degenerate.any():
            r = int(np.flatnonzero(degenerate)[0])
            self.ctx.fail(
                "L3.no_degenerate_faces", key, f"face {r} {links[r].tolist()} repeats a vertex"
            )
        repeat = _first_repeat(np.sort(gids, axis=1))
        if repeat is not None:
            self.ctx.fail(
                "L3.no_duplicate_faces", key, f"face {repeat} has the vertices of another face"
            )
        self._face_chunk(g, key, gids)

    def _face_chunk(self, g: Chunk, key: str, gids: np.ndarray) -> None:
        """L3.face_chunk: centroid chunk if it holds a vertex of the face, else v0's (§10.7)."""
        points = self._positions(gids.reshape(-1))
        if points is None:
            return
        points = points.reshape(gids.shape[0], 3, -1)
        centroid = ((points[:, 0] + points[:, 1]) + points[:, 2]) / 3.0
        cell = chunk_coords(centroid, self.chunk_shape) - self.origin
        inside = np.all((cell >= 0) & (cell < np.asarray(self.index.grid)), axis=1)
        target = self.index.flat(np.where(inside[:, None], cell, 0))
        holders = gids // self.index.n_max
        holds = inside & np.any(holders == target[:, None], axis=1)
        expected = np.where(holds, target, holders[:, 0])
        here = self.index.base(g) // self.index.n_max
        wrong = np.flatnonzero(expected != here)
        if wrong.size:
            r = int(wrong[0])
            self.ctx.fail(
                "L3.face_chunk",
                key,
                f"face {r} belongs in chunk {np.unravel_index(int(expected[r]), self.index.grid)}",
            )

    def _positions(self, gids: np.ndarray) -> np.ndarray | None:
        """Float64 coordinates of the vertices ``gids``; None when a chunk was not read."""
        flat, row = np.divmod(gids, self.index.n_max)
        out = np.empty((gids.shape[0], self.chunk_shape.shape[0]), dtype=np.float64)
        for f in np.unique(flat).tolist():
            g = tuple(int(c) for c in np.unravel_index(f, self.index.grid))
            data = self.data.chunks.get(g)
            if data is None or data.positions is None:
                return None
            sel = flat == f
            out[sel] = data.positions[row[sel]]
        return out

    # -- rules over every chunk ----------------------------------------------------------------
    def polyline_links(self, refs: Refs, ccl: np.ndarray | None) -> None:
        """L3.polyline_links: the stored edges are exactly the consecutive vertex pairs."""
        self.ctx.mark("L3.polyline_links")
        seq = self._vertex_sequence(refs)
        if seq is None:
            return
        gid, obj = seq
        step = obj[1:] == obj[:-1]
        expected = np.stack([gid[:-1][step], gid[1:][step]], axis=1)
        stored = [
            d.links[:, :2] + self.index.base(g)
            for g, d in self.data.chunks.items()
            if d.links is not None
        ]
        if ccl is not None:
            stored.append(ccl)
        got = np.concatenate(stored) if stored else np.zeros((0, 2), np.int64)
        missing, extra = _pair_difference(expected, got)
        if missing.shape[0]:
            owner = self.index.owner_of_gids(missing[:, 0])
            report_objects(
                self.ctx,
                self.base,
                "L3.polyline_links",
                owner[owner >= 0],
                "a pair of consecutive vertices has no edge",
            )
        if extra.shape[0]:
            owner = self.index.owner_of_gids(extra[:, 0])
            report_objects(
                self.ctx,
                self.base,
                "L3.polyline_links",
                owner[owner >= 0],
                "an edge joins vertices that are not consecutive in the object",
            )

    def _vertex_sequence(self, refs: Refs) -> tuple[np.ndarray, np.ndarray] | None:
        """Gid and object of every vertex, object by object in manifest order."""
        starts = np.zeros(refs.obj.shape[0], np.int64)
        sizes = np.zeros_like(starts)
        flat = self.index.flat(refs.chunk)
        for f in np.unique(flat).tolist():
            g = tuple(int(c) for c in np.unravel_index(f, self.index.grid))
            data = self.data.chunks.get(g)
            if data is None:
                return None
            sel = flat == f
            starts[sel], sizes[sel] = data.starts[refs.frag[sel]], data.counts[refs.frag[sel]]
        order = np.argsort(refs.obj, kind="stable")
        rows = concat_ranges(starts[order], sizes[order])
        gid = np.repeat(flat[order], sizes[order]) * self.index.n_max + rows
        return gid, np.repeat(refs.obj[order], sizes[order])

    def skeleton_parents(self, ccl: np.ndarray | None) -> None:
        """L3.skeleton_parent_once: every vertex is the child of exactly one record."""
        self.ctx.mark("L3.skeleton_parent_once")
        children = [
            d.links[:, 0] + self.index.base(g)
            for g, d in self.data.chunks.items()
            if d.links is not None
        ]
        if ccl is not None:
            children.append(ccl[:, 0])
        child = np.concatenate(children) if children else np.zeros(0, np.int64)
        every = [np.arange(d.n) + self.index.base(g) for g, d in self.data.chunks.items()]
        vertices = np.sort(np.concatenate(every)) if every else np.zeros(0, np.int64)
        times = np.zeros(vertices.shape[0], np.int64)
        values, counts = np.unique(child, return_counts=True)
        pos = np.searchsorted(vertices, values)
        hit = pos < vertices.shape[0]
        hit[hit] &= vertices[pos[hit]] == values[hit]
        times[pos[hit]] = counts[hit]
        bad = vertices[times != 1]
        owner = self.index.owner_of_gids(bad)
        report_objects(
            self.ctx,
            self.base,
            "L3.skeleton_parent_once",
            owner[owner >= 0],
            "a vertex is the child of no parent record or of several",
        )


def _directed(ctx: Context) -> bool:
    attrs = ctx.doc("zarr.json").obj() or {}
    inner = attrs.get("attributes")
    return isinstance(inner, dict) and inner.get("is_directed") is True


def _sorted_rows(rows: np.ndarray) -> np.ndarray:
    """The rows of a 2-D integer array in lexicographic order."""
    return rows[np.lexsort(rows.T[::-1])] if rows.shape[0] else rows


def _first_repeat(rows: np.ndarray) -> int | None:
    """Index of a row equal to another row, or None when all rows differ."""
    if rows.shape[0] < 2:
        return None
    order = np.lexsort(rows.T[::-1])
    same = np.all(rows[order][1:] == rows[order][:-1], axis=1)
    return int(order[1:][same][0]) if same.any() else None


def _pair_difference(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of ``a`` missing from ``b`` and pairs of ``b`` not in ``a`` (as multisets)."""
    both = np.concatenate([a, b]).reshape(-1, 2)
    if a.shape == b.shape and np.array_equal(_sorted_rows(a), _sorted_rows(b)):
        return both[:0], both[:0]
    keys, inverse = np.unique(both, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    in_a = np.bincount(inverse[: a.shape[0]], minlength=keys.shape[0])
    in_b = np.bincount(inverse[a.shape[0] :], minlength=keys.shape[0])
    return keys[in_a > in_b], keys[in_b > in_a]
