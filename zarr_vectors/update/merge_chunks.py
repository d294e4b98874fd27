"""Writing the chunks of a merged store: merged, kept, moved or re-indexed shards.

A chunk that some new source holds is written from the rows of every source holding it, in
source order, with row numbers, fragment numbers, object ids and global vertex ids moved as
the plan says (:mod:`zarr_vectors.update.merge_plan`). A base chunk no other source
touches keeps its shards: moved when the grid origin moves, re-indexed when an ``N_max``
grows, re-encoded only when its content must change. With several chunks per shard each
shard is assembled from its chunks' row blocks and written once; a base's shard is then
either kept whole or written again whole (the plan's ``rebuilt`` chunks), and the base's
shards no new shard replaces are deleted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from zarr_vectors._progress import Progress
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.names import (
    FRAGMENT_ATTRIBUTES,
    FRAGMENT_RECORDS,
    OBJECT_ID_ATTRIBUTE,
    VERTEX_FRAGMENTS,
)
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout, shard_key
from zarr_vectors.update.merge_links import (
    link_count,
    link_rows,
    read_family,
    rewrites_kept_links,
)
from zarr_vectors.update.merge_plan import MergePlan, link_blob, record_blob, vertex_blob
from zarr_vectors.update.object_sources import BLOBS, FAMILIES, LINKS0, SourceArray
from zarr_vectors.write import Batcher, ShardAssembler, shard_major_order, shards_of

__all__ = ["merge_chunks"]


def _key(path: str, g: np.ndarray, row_ndim: int) -> str:
    return shard_key(f"0/{path}", g, row_ndim)


@dataclass(slots=True)
class _Writer:
    plan: MergePlan
    target: StoreIO
    assemblers: dict[str, ShardAssembler] = dataclasses.field(default_factory=dict)
    batcher: Batcher | None = None

    def _old_keys(self, chunk: tuple[int, ...]) -> dict[str, str]:
        base = self.plan.sources[0]
        return self._keys(self.plan.grid_index(chunk, base.grid), base.arrays)

    def _keys(self, g: np.ndarray, arrays: dict[str, SourceArray]) -> dict[str, str]:
        keys = {p: _key(p, g, len(a.layout.row_shape)) for p, a in arrays.items()}
        return keys | {name: _key(name, g, 0) for name in self.plan.blobs}

    def _drop_moved(self, chunk: tuple[int, ...]) -> None:
        old = self._old_keys(chunk)
        new = self._keys(self.plan.grid_index(chunk), self.plan.arrays)
        self.target.delete_many([k for p, k in old.items() if k != new[p]])

    def merge(self, chunk: tuple[int, ...]) -> None:
        """Write a chunk from the rows of every source holding it, in source order.

        With several chunks per shard the chunk's row blocks are held until its shard is
        complete (chunks come shard by shard, see :func:`merge_chunks`).
        """
        plan = self.plan
        g = plan.grid_index(chunk)
        columns = self._merged_columns(chunk)
        if plan.shard_chunks:
            for path, layout, rows in columns:
                if len(rows):
                    self._assembler(path, layout).add(g, rows)
            return
        keys = [_key(path, g, len(layout.row_shape)) for path, layout, _ in columns]
        items = [
            (key, layout.encode_shard(rows, key))
            for key, (_, layout, rows) in zip(keys, columns, strict=True)
            if len(rows)
        ]
        if plan.has_base and plan.holders[chunk][0] == 0:
            self._drop_moved(chunk)
        self.target.set_many(items)

    def _assembler(self, path: str, layout: RowLayout) -> ShardAssembler:
        if self.batcher is None:
            self.batcher = Batcher(self.target)
        if path not in self.assemblers:
            self.assemblers[path] = ShardAssembler(self.batcher, f"0/{path}", layout)
        return self.assemblers[path]

    def flush(self) -> None:
        """Write the shards still being assembled."""
        for assembler in self.assemblers.values():
            assembler.flush()
        if self.batcher is not None:
            self.batcher.flush()

    def _merged_columns(self, chunk: tuple[int, ...]) -> list[tuple[str, RowLayout, np.ndarray]]:
        """``(path, final layout, rows)`` of every per-chunk array of a merged chunk."""
        plan = self.plan
        holding = plan.holders[chunk]
        parts = [plan.ranges[(chunk, s)] for s in holding]
        values: dict[str, list[np.ndarray]] = {p: [] for p in plan.arrays}
        for s, part in zip(holding, parts, strict=True):
            sizes = {
                "vertex": int(plan.sources[s].counts[plan.index[s][chunk]]),
                "fragment": len(part[0]),
                "link": int(part[2].sum()),
            }
            for family in FAMILIES:
                paths = [p for p, a in plan.arrays.items() if a.family == family]
                for path, rows in zip(
                    paths, read_family(plan, s, chunk, paths, sizes[family]), strict=True
                ):
                    values[path].append(self._transform(s, chunk, path, rows))
        columns = [
            (
                path,
                array.layout,
                np.concatenate(values[path]).astype(array.layout.dtype, copy=False),
            )
            for path, array in plan.arrays.items()
        ]
        columns += [
            (name, plan.blobs[name][0], blob) for name, blob in plan.chunk_blobs(chunk).items()
        ]
        return columns

    def _transform(self, s: int, chunk: tuple[int, ...], path: str, rows: np.ndarray) -> np.ndarray:
        if path == LINKS0:
            return link_rows(self.plan, s, chunk, rows)
        if path == f"{FRAGMENT_ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}":
            return rows + self.plan.places[s].object_shift
        return rows

    def keep(self, chunk: tuple[int, ...]) -> None:
        """Leave a base chunk's shards, or move, re-index or rewrite what must change."""
        plan, base = self.plan, self.plan.sources[0]
        if plan.shard_chunks:
            return  # its shard is kept whole: the plan rebuilds every shard that changes
        old = self._old_keys(chunk)
        g = plan.grid_index(chunk)
        new = self._keys(g, plan.arrays)
        items = []
        for path, array in plan.arrays.items():
            if path == LINKS0 and rewrites_kept_links(plan):
                n = link_count(plan, 0, chunk)
                (rows,) = read_family(plan, 0, chunk, [path], n)
                if n:
                    rows = link_rows(plan, 0, chunk, rows).astype(array.layout.dtype)
                    items.append((new[path], array.layout.encode_shard(rows, new[path])))
                continue
            shard = self._moved(old[path], new[path], base.arrays[path].layout, array.layout)
            if shard is None and array.family != "link":
                raise CorruptChunkError(f"{old[path]}: shard of an occupied chunk is missing")
            if shard:
                items.append((new[path], shard))
        for name in plan.blobs:
            items += self._kept_blob(chunk, name, old[name], new[name])
        self._drop_moved(chunk)
        self.target.set_many(items)

    def _moved(self, old: str, new: str, was: RowLayout, now: RowLayout) -> bytes | None:
        """The shard at its new key (its place record rewritten), re-indexed if needed;
        b'' when nothing changes."""
        if old == new and was.n_max == now.n_max and was.placed == now.placed:
            return b""
        shard = self.plan.sources[0].io.get(old)
        if shard is None:
            return shard
        return was.reindex_shard(shard, now, old, new)

    def _kept_blob(
        self, chunk: tuple[int, ...], name: str, old: str, new: str
    ) -> list[tuple[str, bytes]]:
        base = self.plan.sources[0]
        was, now = base.blobs[name][0], self.plan.blobs[name][0]
        if (was.rows_per_block, was.n_max) == (now.rows_per_block, now.n_max):
            shard = b"" if old == new and was.placed == now.placed else base.io.get(old)
            if shard is None:
                raise CorruptChunkError(f"{old}: fragment index of an occupied chunk is missing")
            return [(new, was.reindex_shard(shard, now, old, new))] if shard else []
        g = self.plan.grid_index(chunk, base.grid).reshape(1, -1)
        if name == FRAGMENT_RECORDS:
            (_, counts), (_, links) = (base.reader.blob_ranges(n, g)[0] for n in BLOBS)
            blob = record_blob(counts, links, base.reader.fragment_owners(g)[0])
            return [(new, now.encode_shard(blob, new))]
        starts, counts = base.reader.blob_ranges(name, g)[0]
        form = self.plan.counts_form
        blob = (
            vertex_blob(starts, counts, form)
            if name == VERTEX_FRAGMENTS
            else link_blob(counts, form)
        )
        return [(new, now.encode_shard(blob, new))]


def merge_chunks(
    target: StoreIO,
    plan: MergePlan,
    chunks: list[tuple[int, ...]],
    progress: Progress | None = None,
) -> None:
    """Write the given chunks of the merged store (any subset, in any process).

    A chunk's shards depend only on the plan and the sources, so writers of disjoint sets of
    chunks can run at once, and a chunk written twice gets the same bytes. ``progress`` is
    called as ``progress("merge", chunks done, chunks)`` after each chunk.

    With several chunks per shard (``plan.shard_chunks``) a shard is written whole, once:
    ``chunks`` must then hold every occupied chunk of the shards they touch (they are
    visited shard by shard, whatever their order).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update import open_source, plan_merge
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
    >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
    >>> from zarr_vectors.store.target import write_target
    >>> from zarr_vectors.update import check_globals, commit_merge, merge_chunks
    >>> plan = plan_merge(sources, has_base=False)
    >>> ids, groups = check_globals(plan)
    >>> with write_target(folder / "c.zarr", overwrite=False) as io:
    ...     merge_chunks(io, plan, sorted(plan.holders))
    ...     commit_merge(io, plan, ids, groups)
    >>> zv.open(folder / "c.zarr").read().object_ids.tolist()
    [0, 1, 2, 3]
    """
    if plan.shard_chunks:
        grid = np.asarray([plan.grid_index(c) for c in chunks], dtype=np.int64)
        grid = grid.reshape(len(chunks), plan.grid.ndim)
        order = shard_major_order(grid, plan.shard_chunks, descending=plan.has_base)
        chunks = [chunks[j] for j in order.tolist()]
    writer = _Writer(plan, target)
    for done, chunk in enumerate(chunks, 1):
        if plan.merged(chunk):
            writer.merge(chunk)
        else:
            writer.keep(chunk)
        if progress is not None:
            progress("merge", done, len(chunks))
    writer.flush()
    if plan.has_base and plan.shard_chunks:
        _drop_stale_shards(target, plan, writer)


def _drop_stale_shards(target: StoreIO, plan: MergePlan, writer: _Writer) -> None:
    """Delete the base's shards that the merge neither kept whole nor wrote again (several
    chunks per shard): those at grid indices no longer used (the origin moved), and those
    of an array whose rebuilt shard has no rows any more (e.g. ``links/0``)."""
    base = plan.sources[0]

    def shards(
        chunks: list[tuple[int, ...]], grid: ChunkGrid | None = None
    ) -> set[tuple[int, ...]]:
        grid_chunks = np.asarray([plan.grid_index(c, grid) for c in chunks], dtype=np.int64)
        return set(shards_of(grid_chunks, plan.shard_chunks))

    old = shards(list(plan.index[0]), base.grid)
    kept = shards([c for c in plan.index[0] if not plan.merged(c)])
    rows = {p: len(a.layout.row_shape) for p, a in base.arrays.items()}
    rows |= dict.fromkeys(base.blobs, 0)
    stale = []
    for path, ndim in rows.items():
        assembler = writer.assemblers.get(path)
        written = set() if assembler is None else assembler.written
        stale += [_key(path, np.asarray(s), ndim) for s in sorted(old - kept - written)]
    target.delete_many(stale)
