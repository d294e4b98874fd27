"""What L3 gathers about one level of an object store before the object-wide checks.

:class:`ObjectLevel` receives every chunk the level's L3 reads (vertex fragments, vertex rows,
fragment attributes, ``link_fragments`` and ``links/0``), checks the per-chunk link rules as
it goes, and keeps what the object-wide checks of :mod:`~zarr_vectors.validate.object_checks`
need: fragment ranges and bins, links, and (meshes) vertex positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from zarr_vectors.format.kinds import geometry_kind, link_width_of
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE
from zarr_vectors.validate.blobs import Blob, BlobError, blob_size, checked_blob
from zarr_vectors.validate.chunks import CheckedChunk, ChunkChecker
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.shard_check import (
    ArraySpec,
    blob_blocks_present,
    read_blob_payload,
    read_rows,
)

__all__ = ["ChunkObjects", "ObjectLevel"]

Chunk = tuple[int, ...]


@dataclass(slots=True)
class ChunkObjects:
    """The object data of one chunk whose vertex fragments tile its rows.

    Attributes
    ----------
    n
        ``n_g``.
    starts, counts
        Vertex fragment ranges (F,).
    bins
        Level 0: flat bin of each fragment's first row (-1 for empty fragments), else None.
    owner_column
        Rows of ``fragment_attributes/object_id`` when stored, else None.
    links
        ``links/0`` rows ``(E_g, L)`` as int64, or None when unusable.
    link_starts, link_counts
        Link fragment ranges, or None when unusable.
    positions
        Vertex rows (meshes only, for the face-chunk rule), else None.
    """

    n: int
    starts: np.ndarray
    counts: np.ndarray
    bins: np.ndarray | None = None
    owner_column: np.ndarray | None = None
    links: np.ndarray | None = None
    link_starts: np.ndarray | None = None
    link_counts: np.ndarray | None = None
    positions: np.ndarray | None = None


@dataclass(slots=True)
class ObjectLevel:
    """Per-chunk link checks of one level, and the data kept for the object-wide checks.

    Attributes
    ----------
    ctx
        The validation run.
    level
        Level number.
    kind
        Geometry type.
    links, link_fragments
        Specs of ``links/0`` and ``link_fragments`` (None when absent or unusable).
    link_attributes
        Specs of the ``link_attributes/<name>`` arrays: each chunk with links must store
        their rows ``[0, E_g)`` (spec §9.12).
    chunks
        The usable chunks read so far.
    """

    ctx: Context
    level: int
    kind: str
    links: ArraySpec | None
    link_fragments: ArraySpec | None
    link_attributes: list[ArraySpec] = field(default_factory=list)
    chunks: dict[Chunk, ChunkObjects] = field(default_factory=dict)

    def mark(self) -> None:
        """Record the per-chunk link checks this level evaluates."""
        if self.link_fragments is not None:
            self.ctx.mark("L3.link_frag_parallel")
        if self.links is not None:
            self.ctx.mark("L3.link_rows_bound")

    def add(
        self,
        g: Chunk,
        n: int,
        checked: CheckedChunk,
        shards: dict[str, bytes | None],
        checker: ChunkChecker,
    ) -> None:
        """Take the data of chunk ``g`` (``n`` rows) and check its link arrays."""
        blob = checked.blob
        if blob is None or not blob.tiles(n):
            return
        data = ChunkObjects(n, blob.starts, blob.counts)
        if self.level == 0 and checked.rows is not None:
            bins = np.full(blob.n_fragments, -1, dtype=np.int64)
            used = blob.counts > 0
            bins[used] = checker.row_bins(checked.rows[blob.starts[used]], g)
            data.bins = bins
        data.owner_column = checked.fragment_rows.get(OBJECT_ID_ATTRIBUTE)
        if geometry_kind(self.kind).faces:
            data.positions = checked.rows
        if checked.links is not None:  # format 1.6: the record holds the link fragments
            self._link_fragments(g, checked.links, data, shards)
        else:
            self._link_blob(g, blob, data, shards)
        self.chunks[g] = data

    # -- link fragments and links ---------------------------------------------------------
    def _link_blob(
        self, g: Chunk, vertex_blob: Blob, data: ChunkObjects, shards: dict[str, bytes | None]
    ) -> None:
        spec = self.link_fragments
        if spec is None:
            return
        shard = shards.get(spec.path)
        if shard is None:
            return  # reported by L3.shard_present
        blob = self._parse_blob(spec, g, shard)
        if blob is None:
            return
        key = spec.key(g)
        if blob.n_fragments != vertex_blob.n_fragments:
            self.ctx.fail(
                "L3.link_frag_parallel",
                key,
                f"{blob.n_fragments} link fragments, but the chunk has "
                f"{vertex_blob.n_fragments} vertex fragments",
            )
            return
        if self.level == 0 and not blob.tiles(blob.extent):
            self.ctx.fail(
                "L3.frag_tiling", key, f"link fragments do not tile rows [0, {blob.extent})"
            )
            return
        self._link_fragments(g, blob, data, shards)

    def _link_fragments(
        self, g: Chunk, blob: Blob, data: ChunkObjects, shards: dict[str, bytes | None]
    ) -> None:
        """Keep a chunk's link fragments and check its ``links/0`` rows."""
        if not blob.all_ranges:
            return
        data.link_starts, data.link_counts = blob.starts, blob.counts
        self._link_rows(g, blob.extent, data, shards)

    def _parse_blob(self, spec: ArraySpec, g: Chunk, shard: bytes) -> Blob | None:
        got = read_blob_payload(self.ctx, spec, g, shard)
        if got is None:
            return None
        payload, present = got
        if not blob_blocks_present(self.ctx, spec, g, present, blob_size(payload)):
            return None
        try:
            return checked_blob(payload, self.ctx.facts.version)
        except BlobError as exc:
            self.ctx.fail(exc.check_id, spec.key(g), exc.message)
            return None

    def _link_rows(
        self, g: Chunk, e_g: int, data: ChunkObjects, shards: dict[str, bytes | None]
    ) -> None:
        spec = self.links
        if e_g == 0:
            data.links = np.zeros((0, link_width_of(self.kind)), dtype=np.int64)
            return
        if spec is None:
            return
        if e_g > spec.n_rows:
            self.ctx.fail(
                "L3.link_rows_bound",
                self.link_fragments.key(g) if self.link_fragments else spec.key(g),
                f"the link fragments cover {e_g} rows; links/0 holds E_max = {spec.n_rows}",
            )
            return
        shard = shards.get(spec.path)
        if shard is None:
            self.ctx.fail("L3.shard_present", spec.key(g), f"{e_g} link rows but no shard")
            return
        rows = read_rows(self.ctx, spec, g, shard, e_g)
        if rows is not None:
            data.links = rows.astype(np.int64).reshape(e_g, -1)
        for attribute in self.link_attributes:
            self._link_attribute_rows(g, e_g, attribute, shards.get(attribute.path))

    def _link_attribute_rows(
        self, g: Chunk, e_g: int, spec: ArraySpec, shard: bytes | None
    ) -> None:
        """Rows ``[0, E_g)`` of a link attribute must be stored and decode (spec §9.12)."""
        if e_g > spec.n_rows:
            self.ctx.fail(
                "L3.link_rows_bound",
                spec.key(g),
                f"the chunk has {e_g} link rows; this link attribute holds {spec.n_rows}",
            )
        elif shard is None:
            self.ctx.fail("L3.shard_present", spec.key(g), f"{e_g} link rows but no shard")
        else:
            read_rows(self.ctx, spec, g, shard, e_g)


@dataclass(slots=True)
class LevelIndex:
    """Global vertex ids and owners of one level (spec §9.11).

    Attributes
    ----------
    grid
        ``G``.
    n_max
        ``N_max`` of the level's vertices.
    occupied
        ``n_g`` of every non-empty chunk (from ``vertex_counts``).
    owners
        Owner object of every row of the chunks read, once the manifests are decoded.
    """

    grid: tuple[int, ...]
    n_max: int
    occupied: dict[Chunk, int]
    owners: dict[Chunk, np.ndarray] = field(default_factory=dict)
    _flat: np.ndarray = field(init=False)
    _counts: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        chunks = np.asarray(list(self.occupied), dtype=np.int64).reshape(-1, len(self.grid))
        flat = self.flat(chunks)
        order = np.argsort(flat)
        self._flat = flat[order]
        self._counts = np.asarray(list(self.occupied.values()), dtype=np.int64)[order]

    def flat(self, chunks: np.ndarray) -> np.ndarray:
        """C-order flat index of grid indices ``(k, D)`` (which must lie in the grid)."""
        if not chunks.shape[0]:
            return np.zeros(0, np.int64)
        flat: np.ndarray = np.ravel_multi_index(tuple(chunks.T), self.grid).astype(np.int64)
        return flat

    def base(self, g: Chunk) -> int:
        """The gid of row 0 of chunk ``g``."""
        return int(np.ravel_multi_index(g, self.grid)) * self.n_max

    def rows_of_flat(self, flat: np.ndarray) -> np.ndarray:
        """``n_g`` of each flat chunk index (0 for empty chunks)."""
        pos = np.minimum(np.searchsorted(self._flat, flat), max(self._flat.shape[0] - 1, 0))
        hit = self._flat.shape[0] > 0
        found = (self._flat[pos] == flat) if hit else np.zeros(flat.shape, dtype=bool)
        return np.where(found, self._counts[pos] if hit else 0, 0)

    def valid_gids(self, gids: np.ndarray) -> np.ndarray:
        """Mask of the gids naming an existing vertex (spec §9.11)."""
        total = int(np.prod(self.grid)) * self.n_max
        ok = (gids >= 0) & (gids < total)
        flat, row = np.divmod(np.where(ok, gids, 0), self.n_max)
        return ok & (row < self.rows_of_flat(flat))

    def owner_of_gids(self, gids: np.ndarray) -> np.ndarray:
        """Owner object of each valid gid, -1 where unknown (chunk not read)."""
        out = np.full(gids.shape[0], -1, dtype=np.int64)
        if not gids.size:
            return out
        flat, row = np.divmod(gids, self.n_max)
        for f in np.unique(flat).tolist():
            g = tuple(int(c) for c in np.unravel_index(f, self.grid))
            owners = self.owners.get(g)
            if owners is None:
                continue
            sel = np.flatnonzero(flat == f)
            inside = row[sel] < owners.shape[0]
            out[sel[inside]] = owners[row[sel[inside]]]
        return out
