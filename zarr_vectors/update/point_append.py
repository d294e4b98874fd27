"""Appending points to an existing point-cloud store (spec §2.4, §5.2, §5.5).

The new rows of a chunk go after its stored rows of the same bin, which is where a single
write of the old input followed by the new would put them: the result is, byte for byte,
the store of that single write. Chunks that receive no new point keep their shards; they
are only moved (the grid origin moved: new data lies below it) or re-indexed (``N_max``
grew). Chunks are visited in descending grid order so that, in a store changed in place,
no shard is overwritten before it is read.

With several chunks per shard (spec §9.0.1) a shard is rebuilt when one of its chunks
changes, or when the grid origin or ``N_max`` changed: the row blocks of its unchanged
chunks are copied into the new shard as they are, without decoding. Shards are visited in
descending order, for the same reason as chunks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors._version import __version__
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import POINT_CLOUD, VERTEX_COUNTS, VERTEX_FRAGMENTS, VERTICES
from zarr_vectors.geometry import commit_points, has_object_chunks, has_object_order
from zarr_vectors.kernels import assign_chunks_and_bins
from zarr_vectors.read import ChunkRows, LevelReader, existing_root
from zarr_vectors.store.io import StoreIO, StoreLike, resolve_store
from zarr_vectors.store.shards import RowLayout, shard_key
from zarr_vectors.store.target import modify_target
from zarr_vectors.write import (
    DEFAULT_BLOSC,
    DEFAULT_COMPRESSION,
    LevelStats,
    LevelWriter,
    WriteOptions,
    bin_sorted_chunk,
    new_store,
    point_blob_layout,
    round_up,
    shard_major_order,
    shards_of,
)

__all__ = [
    "Appended",
    "ExistingPoints",
    "LevelsUpdate",
    "append_to_store",
    "existing_level",
    "load_existing",
    "replace_level_chunks",
]

NewRows = Callable[[tuple[int, ...]], tuple[list[np.ndarray], np.ndarray]]
"""``new_rows(absolute chunk)``: the appended rows of every column and their bin indices,
in input order or in (bin, input order): :meth:`_Plan.rewrite` sorts them stably by bin."""


@dataclass(frozen=True, slots=True)
class ExistingPoints:
    """What an append needs to know of the store it extends.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [2.0, 2.0], [7.0, 7.0]], chunk_shape=5.0)
    >>> existing = load_existing(path)
    >>> existing.vertex_count, existing.chunks.tolist(), list(existing.columns)
    (3, [[0, 0], [1, 1]], ['vertices'])
    """

    root: RootMetadata
    grid: ChunkGrid
    chunks: np.ndarray  # (m, D) absolute chunk indices of the occupied chunks
    counts: np.ndarray  # (m,) rows of each
    columns: dict[str, tuple[np.dtype[Any], tuple[int, ...]]]  # "vertices" first
    layouts: dict[str, RowLayout]
    blob_layout: RowLayout  # of vertex_fragments
    options: WriteOptions
    base: bytes | None = None  # root zarr.json read: the version the append extends

    @property
    def vertex_count(self) -> int:
        """Rows stored."""
        return int(self.counts.sum())


def load_existing(
    store: StoreLike, *, with_levels: bool = False, purpose: str = "appending points"
) -> ExistingPoints:
    """Read the metadata, grid, chunk counts and column layouts of a point-cloud store.

    ``with_levels``: accept a store with levels of detail (the caller keeps them).
    ``purpose``: what the caller does, for the error naming another kind of store.

    Raises
    ------
    InvalidInputError
        When the store is not a point cloud, has levels and ``with_levels`` is False, or
        was written with row layouts this library does not write (another ``R`` per
        array, other codecs).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [2.0, 2.0], [7.0, 7.0]], chunk_shape=5.0)
    >>> load_existing(path).counts.tolist()
    [2, 1]
    """
    io = StoreIO(resolve_store(store, mode="r"))
    root, version = existing_root(io, str(store), with_levels=with_levels)
    if root.geometry_type != POINT_CLOUD:
        raise InvalidInputError(
            f"{store}: {purpose} needs a point_cloud store, not a {root.geometry_type} one"
        )
    return existing_level(io, root, 0, version.root)


def existing_level(
    io: StoreIO, root: RootMetadata, level: int, base: bytes | None
) -> ExistingPoints:
    """What :func:`load_existing` reads, of level ``level`` of a point-cloud store.

    Parameters
    ----------
    io
        The store.
    root
        Its root metadata.
    level
        The level read.
    base
        The root ``zarr.json`` read, kept as :attr:`ExistingPoints.base` (None: not kept).

    Returns
    -------
    ExistingPoints
        The level's occupied chunks, their rows, its column types and layouts.

    Raises
    ------
    InvalidInputError
        For row layouts this library does not write.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> points = np.random.default_rng(0).random((400, 2)) * 10
    >>> zv.write_points(path, points, chunk_shape=5.0, levels=zv.Levels(count=1, per_bin=8),
    ...                 progress=False)
    >>> root = load_existing(path, with_levels=True).root
    >>> level1 = existing_level(StoreIO(resolve_store(path, mode="r")), root, 1, None)
    >>> level1.vertex_count, level1.counts.tolist()
    (128, [32, 32, 32, 32])
    """
    reader = LevelReader(io, root, level)
    stop = reader.grid.shape
    chunks, counts = reader.occupied_chunks(np.zeros_like(stop), stop)
    layouts: dict[str, RowLayout] = {}
    for name in reader.paths:
        layout = reader.layouts[name]
        if layout is None:
            raise InvalidInputError(
                f"{reader.paths[name]} uses codecs that appending cannot extend"
            )
        layouts[name] = layout
    options = dataclasses.replace(
        _options_of(root, layouts),
        object_chunk_index=level == 0 and has_object_chunks(io),
        object_order=level == 0 and has_object_order(io),
    )
    path = f"{level}/{VERTEX_FRAGMENTS}"
    blobs = RowLayout.from_array_metadata(
        reader.array_metadata(path), reader.grid.ndim, path, placed=reader.placed
    )
    if blobs is None or blobs.shard_chunks != layouts[VERTICES].shard_chunks:
        raise InvalidInputError(f"{path} uses codecs or shards that appending cannot extend")
    return ExistingPoints(
        root=root,
        grid=reader.grid,
        chunks=chunks + reader.grid.origin,
        counts=counts,
        columns={name: reader.column_spec(name) for name in reader.paths},
        layouts=layouts,
        blob_layout=blobs,
        options=options,
        base=base,
    )


def _options_of(root: RootMetadata, layouts: dict[str, RowLayout]) -> WriteOptions:
    """The write options that reproduce the store's row layouts, or an error."""
    vertices = layouts[VERTICES]
    settings = {
        (layout.rows_per_block, str(layout.blosc), layout.shard_chunks)
        for layout in layouts.values()
    }
    if len(settings) != 1 or vertices.blosc not in (None, DEFAULT_BLOSC):
        raise InvalidInputError(
            "the store's arrays use row blocks or codecs this library does not write "
            f"({sorted(settings)}); appending needs one R, one shard shape and Blosc "
            f"{DEFAULT_BLOSC} or none"
        )
    return WriteOptions(
        axis_names=root.axis_names,
        axis_units=root.axis_units,
        rows_per_block=vertices.rows_per_block,
        compression=None if vertices.blosc is None else DEFAULT_COMPRESSION,
        shard_chunks=vertices.shard_chunks or 1,  # the store's S, never the default
    )


@dataclass(frozen=True, slots=True)
class Appended:
    """A point-cloud append whose level 0 is written, not yet committed: what a
    :data:`LevelsUpdate` needs to bring the store's levels of detail up to date.

    Examples
    --------
    :func:`append_to_store` hands one to its ``levels`` callable:

    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update.point_level_append import load_levels, update_levels
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> points = np.random.default_rng(0).random((400, 2)) * 10
    >>> zv.write_points(path, points, chunk_shape=5.0, bin_shape=5.0,
    ...                 levels=zv.Levels(count=1, per_bin=8), progress=False)
    >>> existing = load_existing(path, with_levels=True)
    >>> stored = load_levels(path, existing.root)
    >>> seen = []
    >>> def levels(change):
    ...     seen.append((change.added, change.stats.vertex_count))
    ...     return update_levels(stored, change)
    >>> append_to_store(path, existing, {(0, 0): 1},
    ...                 lambda chunk: ([np.array([[2.0, 2.0]])], np.zeros(1, np.int64)),
    ...                 (points.min(0), points.max(0)),
    ...                 lambda stage, done, total: None, levels)
    >>> seen
    [({(0, 0): 1}, 401)]
    """

    existing: ExistingPoints  # level 0 before the append
    root: RootMetadata  # the new root (origin and bounds), still listing the old levels
    grid: ChunkGrid  # the new level-0 grid
    stats: LevelStats  # of the new level 0
    source: StoreIO  # the store before the append
    target: StoreIO  # the store being written
    added: dict[tuple[int, ...], int]  # rows appended per absolute chunk
    progress: Callable[[str, int, int], None]


LevelsUpdate = Callable[[Appended], RootMetadata]
"""Updates the levels of detail of an appended store; returns the root listing them."""


def append_to_store(
    store: StoreLike,
    existing: ExistingPoints,
    added: dict[tuple[int, ...], int],
    new_rows: NewRows,
    bounds: tuple[np.ndarray, np.ndarray] | None,
    progress: Callable[[str, int, int], None],
    levels: LevelsUpdate | None = None,
    memory_budget: int | None = None,
) -> None:
    """Write the appended rows into the store and commit it.

    Parameters
    ----------
    store
        The store being extended.
    existing
        Its state before the append (:func:`load_existing`).
    added
        Rows appended per absolute chunk index.
    new_rows
        Gives the appended rows of a chunk (in input order, or sorted stably by bin) and
        their bin indices.
    bounds
        Bounds of old and new vertices together.
    progress
        Called with ``("write", chunks done, chunks to write)``.
    levels
        Brings the levels of detail up to date once level 0 is written (required when
        the store has levels).
    memory_budget
        Bytes of working memory for the object-ordered copy's build, when the store has
        one (None: its default), :func:`~zarr_vectors.geometry.write_object_order`.

    Examples
    --------
    One point appended to chunk ``(0, 0)`` (one bin per chunk: its bin index is 0):

    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [7.0, 7.0]], chunk_shape=5.0, bin_shape=5.0)
    >>> append_to_store(path, load_existing(path), {(0, 0): 1},
    ...                 lambda chunk: ([np.array([[2.0, 2.0]])], np.zeros(1, np.int64)),
    ...                 (np.array([1.0, 1.0]), np.array([7.0, 7.0])),
    ...                 lambda stage, done, total: None)
    >>> zv.open(path).read().positions.tolist()
    [[1.0, 1.0], [2.0, 2.0], [7.0, 7.0]]
    """
    ndim = existing.grid.ndim
    grid = new_store.plan_grid(
        bounds, 0, existing.root.chunk_shape, existing.root.base_bin_shape, ndim
    )
    root = dataclasses.replace(
        existing.root,
        chunk_grid_origin=tuple(int(o) for o in grid.origin),
        bounding_box=None
        if bounds is None
        else (tuple(float(v) for v in bounds[0]), tuple(float(v) for v in bounds[1])),
        extra={**existing.root.extra, "software": f"zarr_vectors {__version__}"},
    )
    old = _stored_rows(existing)
    totals = old | {c: old.get(c, 0) + n for c, n in added.items()}
    rewritten = tuple(f"{n}/{VERTEX_COUNTS}/c/" for n in range(len(root.levels) + 1))
    with modify_target(store, rewritten=rewritten, base=existing.base) as (source, target):
        level = _LevelChange(existing, grid, 0, source, target, new_rows)
        stats = level.write(added, totals, merge=True, progress=progress)
        if root.levels:
            if levels is None:
                raise InvalidInputError(
                    "this store has levels of detail: append with append_points"
                )
            change = Appended(existing, root, grid, stats, source, target, added, progress)
            root = levels(change)
        commit_points(
            target,
            root,
            grid,
            stats,
            object_chunks=existing.options.object_chunk_index,
            object_order=existing.options.object_order,
            memory_budget=memory_budget,
        )


def _stored_rows(existing: ExistingPoints) -> dict[tuple[int, ...], int]:
    """Rows stored per absolute chunk."""
    return {
        tuple(c): int(n) for c, n in zip(existing.chunks.tolist(), existing.counts, strict=True)
    }


@dataclass(frozen=True, slots=True)
class _LevelChange:
    """One level of an appended store to write: its old state, the new grid, the stores."""

    existing: ExistingPoints
    grid: ChunkGrid
    level: int
    source: StoreIO
    target: StoreIO
    new_rows: NewRows

    def write(
        self,
        added: dict[tuple[int, ...], int],
        totals: dict[tuple[int, ...], int],
        *,
        merge: bool,
        progress: Callable[[str, int, int], None],
    ) -> LevelStats:
        """Rewrite the chunks in ``added`` (merging their stored rows, or replacing them),
        keep or move the others; ``totals``: the rows of every chunk afterwards."""
        existing = self.existing
        n_max = round_up(max(totals.values(), default=0), existing.options.block_rows)
        names = list(existing.columns)
        shapes = (existing.columns[VERTICES], {k: existing.columns[k] for k in names[1:]})
        reader = LevelReader(self.source, existing.root, self.level)  # before the writer
        # changes the arrays' metadata (a store changed in place)
        writer = LevelWriter(
            self.target,
            self.level,
            self.grid,
            shapes,
            n_max,
            existing.options,
            blobs=point_blob_layout(self.grid),  # as the one-shot writer's (§9.2)
            placed=existing.layouts[VERTICES].placed,  # a 1.0 or 1.1 store stays so (§9.0.2)
        )
        plan = _Plan(
            existing,
            self.grid,
            writer,
            reader,
            self.source,
            self.target,
            _stored_rows(existing),
            added,
            self.new_rows,
            self.level,
            merge,
        )
        if existing.layouts[VERTICES].chunks_per_shard != 1:
            plan.visit_shards(progress)
        else:
            plan.visit_chunks(progress)
        return writer.finish()


def replace_level_chunks(
    existing: ExistingPoints,
    grid: ChunkGrid,
    level: int,
    stores: tuple[StoreIO, StoreIO],
    changed: tuple[dict[tuple[int, ...], int], NewRows],
    progress: Callable[[str, int, int], None],
) -> LevelStats:
    """Write level ``level`` of an appended store: the ``changed`` chunks' rows replaced by
    new ones, every other chunk kept (or moved or re-indexed, as level 0's are).

    Parameters
    ----------
    existing
        The level before the append (:func:`existing_level`).
    grid
        The level's grid with the new origin.
    level
        The level number.
    stores
        ``(source, target)``: the store before the append and the one being written.
    changed
        The new rows per absolute chunk rewritten, and the function giving them with
        their bin indices.
    progress
        Called with ``("write", chunks done, chunks to write)``.

    Returns
    -------
    LevelStats
        What the level write produced.

    Examples
    --------
    The rows of chunk ``(0, 0)`` of level 0 replaced by none, in place:

    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> points = np.random.default_rng(0).random((400, 2)) * 10
    >>> zv.write_points(path, points, chunk_shape=5.0, progress=False)
    >>> existing = load_existing(path)
    >>> existing.counts.tolist()
    [82, 93, 126, 99]
    >>> io = StoreIO(resolve_store(path, mode="r+"))
    >>> dtype = existing.columns["vertices"][0]
    >>> stats = replace_level_chunks(
    ...     existing,
    ...     existing.grid,
    ...     0,
    ...     (io, io),
    ...     ({(0, 0): 0}, lambda chunk: ([np.empty((0, 2), dtype)], np.empty(0, np.int64))),
    ...     lambda stage, done, total: None,
    ... )
    >>> stats.vertex_count
    318
    """
    counts, rows = changed
    totals = _stored_rows(existing) | counts
    change = _LevelChange(existing, grid, level, *stores, rows)
    return change.write(counts, totals, merge=False, progress=progress)


@dataclass(slots=True)
class _Plan:
    """The steps of an append: visit the chunks (or shards), rewriting those with new rows
    and keeping, moving or re-indexing the others."""

    existing: ExistingPoints
    grid: ChunkGrid
    writer: LevelWriter
    reader: LevelReader
    source: StoreIO
    target: StoreIO
    old: dict[tuple[int, ...], int]  # rows stored per absolute chunk
    added: dict[tuple[int, ...], int]  # rows appended per absolute chunk
    new_rows: NewRows
    level: int = 0
    merge: bool = True  # False: a rewritten chunk's new rows replace its stored rows

    def _stored(self, chunk: tuple[int, ...]) -> int:
        """Rows of ``chunk`` the rewrite merges with its new rows."""
        return self.old.get(chunk, 0) if self.merge else 0

    def visit_chunks(self, progress: Callable[[str, int, int], None]) -> None:
        """Rewrite or keep every chunk, one shard per chunk."""
        old, added = self.old, self.added
        visited = sorted(old, reverse=True) + sorted(set(added) - set(old))
        for done, chunk in enumerate(visited):
            if chunk in added:
                self.rewrite(chunk, self._stored(chunk), self.new_rows(chunk))
            else:
                self.keep(chunk, old[chunk])
            if chunk in old:
                self.drop_old_keys(chunk)
            progress("write", done + 1, len(visited))

    def visit_shards(self, progress: Callable[[str, int, int], None]) -> None:
        """Rebuild the shards that change, shard by shard in descending order, and delete
        the old shards no new one replaces (several chunks per shard)."""
        old, added = self.old, self.added
        chunks = sorted(set(old) | set(added))
        per = self.writer.shard_chunks
        grid_chunks = (
            np.asarray(chunks, dtype=np.int64).reshape(len(chunks), self.grid.ndim)
            - self.grid.origin
        )
        shard_of = shards_of(grid_chunks, per)
        shards: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
        for j in shard_major_order(grid_chunks, per, descending=True).tolist():
            shards.setdefault(shard_of[j], []).append(chunks[j])
        same_layout = not self.moved and not self.resized
        done = 0
        for members in shards.values():
            if same_layout and not any(c in added for c in members):
                for chunk in members:
                    g = np.asarray(chunk, dtype=np.int64) - self.grid.origin
                    self.writer.keep_chunk(g, old[chunk])
            else:
                old_shards: dict[str, bytes] = {}
                for chunk in members:
                    if chunk in added:
                        self.rewrite(chunk, self._stored(chunk), self.new_rows(chunk))
                    else:
                        self.copy_blocks(chunk, old[chunk], old_shards)
            done += len(members)
            progress("write", done, len(chunks))
        self.drop_old_shards(set(shards))

    @property
    def moved(self) -> bool:
        """Whether the grid origin moved (new points lie below the old grid)."""
        return bool(np.any(self.grid.origin != self.existing.grid.origin))

    @property
    def resized(self) -> bool:
        """Whether ``N_max`` grew."""
        return self.writer.n_max != self.existing.layouts[VERTICES].n_max

    def _old_layout(self, name: str) -> RowLayout:
        if name == VERTEX_FRAGMENTS:
            return self.existing.blob_layout
        return self.existing.layouts[name]

    def _paths(self) -> dict[str, str]:
        return {**self.reader.paths, VERTEX_FRAGMENTS: f"{self.level}/{VERTEX_FRAGMENTS}"}

    def _keys(self, chunk: tuple[int, ...], origin: np.ndarray) -> dict[str, str]:
        g = np.asarray(chunk, dtype=np.int64) - origin
        return {
            name: shard_key(path, g, 0 if name == VERTEX_FRAGMENTS else len(self._row_shape(name)))
            for name, path in self._paths().items()
        }

    def _row_shape(self, name: str) -> tuple[int, ...]:
        return self.existing.columns[name][1]

    def drop_old_keys(self, chunk: tuple[int, ...]) -> None:
        """Delete the chunk's shards at its old grid index when the origin moved."""
        old = self._keys(chunk, self.existing.grid.origin)
        new = self._keys(chunk, self.grid.origin)
        self.target.delete_many([key for name, key in old.items() if key != new[name]])

    def rewrite(
        self, chunk: tuple[int, ...], stored: int, added: tuple[list[np.ndarray], np.ndarray]
    ) -> None:
        """Merge a chunk's stored rows with its new ones by (bin, old before new)."""
        new_values, new_bins = added
        values, bins = new_values, new_bins.astype(np.int64)
        if stored:
            g = tuple(int(v) for v in np.asarray(chunk) - self.existing.grid.origin)
            wanted = [ChunkRows(g, np.array([[0, stored]], dtype=np.int64))]
            old_values = self.reader.read_columns(list(self.reader.paths), wanted)
            values = [np.concatenate([a, b]) for a, b in zip(old_values, new_values, strict=True)]
            bins = np.concatenate([_bins_of(old_values[0], chunk, self.grid), bins])
        rows, blob = bin_sorted_chunk(values, bins, self.grid.bins_per_chunk_total)
        self.writer.add_chunk(np.asarray(chunk, dtype=np.int64) - self.grid.origin, rows, blob)

    def keep(self, chunk: tuple[int, ...], count: int) -> None:
        """Leave a chunk's shards as they are, or move / re-index them if the grid changed."""
        old_keys = self._keys(chunk, self.existing.grid.origin)
        new_keys = self._keys(chunk, self.grid.origin)
        resized = self.writer.n_max != self.existing.layouts[VERTICES].n_max
        for name, old_key in old_keys.items():
            row_array = name != VERTEX_FRAGMENTS
            if old_key == new_keys[name] and not (resized and row_array):
                continue
            shard = self.source.get(old_key)
            if shard is None:
                raise InvalidInputError(f"{old_key}: shard of an occupied chunk is missing")
            layout = self._old_layout(name)
            n_max = self.writer.n_max if row_array else layout.n_max
            shard = layout.reindex_shard(shard, _with_n_max(layout, n_max), old_key, new_keys[name])
            self.target.set(new_keys[name], shard)
        self.writer.keep_chunk(np.asarray(chunk, dtype=np.int64) - self.grid.origin, count)

    def copy_blocks(self, chunk: tuple[int, ...], count: int, shards: dict[str, bytes]) -> None:
        """Put an unchanged chunk into the shard being rebuilt: its row blocks of every array,
        copied from its old shards (``shards`` keeps those fetched for the current shard)."""
        g = np.asarray(chunk, dtype=np.int64) - self.existing.grid.origin
        blocks = []
        for name, path in self._paths().items():
            layout = self._old_layout(name)
            key = shard_key(path, layout.shard_of(g), len(layout.row_shape))
            if key not in shards:
                shard = self.source.get(key)
                if shard is None:
                    raise InvalidInputError(f"{key}: shard of an occupied chunk is missing")
                shards[key] = shard
            stored = layout.n_max if name == VERTEX_FRAGMENTS else count
            blocks.append(layout.chunk_blocks(shards[key], g, stored, key))
        self.writer.add_encoded_chunk(np.asarray(chunk) - self.grid.origin, blocks, count)

    def drop_old_shards(self, shards: set[tuple[int, ...]]) -> None:
        """Delete the old grid's shards that none of the new ``shards`` replaces (the
        origin moved)."""
        if not self.moved or not self.old:
            return
        old = np.asarray(list(self.old), dtype=np.int64) - self.existing.grid.origin
        gone = set(shards_of(old, self.writer.shard_chunks)) - shards
        self.target.delete_many(
            [
                shard_key(path, np.asarray(s), len(self._old_layout(name).row_shape))
                for name, path in self._paths().items()
                for s in sorted(gone)
            ]
        )


def _with_n_max(layout: RowLayout, n_max: int) -> RowLayout:
    return dataclasses.replace(layout, n_max=n_max)


def _bins_of(positions: np.ndarray, chunk: tuple[int, ...], grid: ChunkGrid) -> np.ndarray:
    """Bin flat index of each stored vertex of absolute chunk ``chunk``."""
    ones = np.ones(grid.ndim, dtype=np.int64)
    _, bins = assign_chunks_and_bins(
        positions, grid.chunk_shape, grid.bin_shape, grid.bins, np.asarray(chunk), ones
    )
    return bins
