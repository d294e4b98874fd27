"""Levels of detail of a stored object store, built again from its level 0 (spec §4.3.3).

Every write path that is not the one-shot writer builds object levels here: after the fact
(:func:`build_object_levels`, ``zv.build_levels``), at the end of an append or a streamed
or parallel write (:func:`rebuild_levels`, called before the root is committed). Level 0
is read back as the kind's writer's object table — objects in storage order, vertices in
traversal order, the stored dtype — and given to the kind's level builder
(:attr:`~zarr_vectors.write.KindWriter.levels`), the function ``write_*(levels=...)``
calls; so the levels are those a one-shot write of the same objects gives, byte for byte.

Object kinds need whole objects, but each object is coarsened alone: level 0 is read back
in batches of whole objects within a memory budget (:func:`stored_batches`), once for a
summary of every object (what object sparsity needs) and once per candidate level. Each
coarse batch goes to spill files at once and the level is written from them chunk by
chunk (:class:`~zarr_vectors.write._level_spill.LevelSpill`), so memory holds a batch,
the summary and one chunk, not the coarse level. The levels are written into a scratch
store on disk first and only the files whose bytes differ are written to the store (stale
files of a former level are deleted), so an append that changes a few coarse chunks
rewrites only those; untouched files keep their bytes and, in a local store, their
modification times.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from zarr_vectors._progress import Progress, ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.levels import IMPORTED
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import (
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_RECORDS,
    OBJECT_ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_INDEX,
    VERTEX_FRAGMENTS,
)
from zarr_vectors.geometry import object_writer
from zarr_vectors.query import ObjectReader
from zarr_vectors.read import LevelReader
from zarr_vectors.result import QueryResult
from zarr_vectors.store.io import StoreIO, StoreLike, local_root, resolve_store
from zarr_vectors.store.spill import remove_scratch, scratch_directory
from zarr_vectors.store.target import modify_target
from zarr_vectors.update.object_sources import Source, open_source, options_of, store_arguments
from zarr_vectors.update.point_levels import LEVELS_ON_ZIP
from zarr_vectors.update.point_stream import DEFAULT_MEMORY_BUDGET
from zarr_vectors.write import (
    LevelPasses,
    Levels,
    ObjectBatches,
    ObjectTable,
    WriteOptions,
    commit_root,
    inputs,
    level_settings,
    object_inputs,
    write_object_levels,
)

__all__ = [
    "build_object_levels",
    "checked_levels",
    "commit_levels",
    "commit_passed_levels",
    "rebuild_levels",
    "stored_batches",
    "stored_levels",
    "whole_index_bytes",
]


def _group_arguments(source: Source, ids: np.ndarray) -> dict[str, Any]:
    """The ``groups=`` and ``group_attributes=`` that give ``source``'s groups again."""
    if source.groups is None:
        return {}
    members = {
        name: ids[members].tolist()
        for name, members in zip(source.groups.names, source.groups.members, strict=True)
    }
    return {"groups": members, "group_attributes": dict(source.groups.attributes) or None}


def _kind_data(kind: str, found: QueryResult, sizes: np.ndarray) -> dict[str, Any]:
    """The kind's data arguments, rebuilt from its objects as read."""
    if geometry_kind(kind).ordered:
        return {"polylines": (found.positions, found.offsets)}
    labels = np.repeat(np.arange(sizes.shape[0]), sizes)
    data: dict[str, Any] = {"positions": found.positions, "vertex_objects": labels}
    links = found.faces if found.faces is not None else found.edges
    links = np.empty((0, 2), np.int64) if links is None else links
    if kind == "skeleton":
        parents = np.full(found.positions.shape[0], -1, np.int64)
        parents[links[:, 0]] = links[:, 1]
        return data | {"parents": parents}
    columns = dict(found.link_attributes) or None
    if kind == "mesh":
        return data | {"faces": links, "face_attributes": columns}
    return data | {"edges": links, "edge_attributes": columns}


def checked_levels(kind: str, levels: Any) -> Levels | None:
    """The levels a streamed or parallel write of ``kind`` asks for, or None.

    Raises
    ------
    InvalidInputError
        For bad ``levels``, or levels of a kind whose writer builds none.

    Examples
    --------
    >>> checked_levels("streamline", 2).count
    2
    """
    settings = level_settings(levels)
    writer = object_writer(kind)
    if settings is not None and writer.levels is None:
        raise InvalidInputError(
            f"{writer.writer} does not build levels of detail yet; write without levels="
        )
    return settings


def _batch_data(source: Source, found: QueryResult) -> dict[str, Any]:
    """A batch of objects as read, as the kind's writer takes it (vertex data only)."""
    offsets = np.zeros(1, np.int64) if found.offsets is None else found.offsets
    return {
        **_kind_data(source.kind, found, np.diff(offsets)),
        "attributes": dict(found.attributes) or None,
    }


def _object_fields(source: Source, table: ObjectTable) -> ObjectTable:
    """``table`` with the per-object fields of ``source`` as its kind's writer validates
    them from the stored columns (object attributes, ids, groups)."""
    m = source.n_objects
    has_ids = source.io.get(f"0/{OBJECT_ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}/zarr.json") is not None
    ids = object_inputs.object_ids(source.ids if has_ids else None, m)
    groups = _group_arguments(source, source.ids)
    return dataclasses.replace(
        table,
        object_attributes=object_inputs.object_attributes(dict(source.object_columns) or None, m),
        object_ids=ids,
        groups=object_inputs.parse_groups(
            groups.get("groups"), groups.get("group_attributes"), ids, m
        ),
    )


def _objects_per_batch(source: Source, budget: int) -> int:
    """Objects per batch so that one batch, read and coarsened, stays within ``budget``."""
    row_bytes = sum(
        a.layout.dtype.itemsize * int(np.prod(a.layout.row_shape)) for a in source.arrays.values()
    )
    vertices = int(source.reader.meta.vertex_count or 0)
    per_object = _WORKING_COPIES * row_bytes * max(1.0, vertices / max(1, source.n_objects))
    return max(1, int(budget // per_object))


_WORKING_COPIES = 12
"""Copies of a batch's rows a level pass may hold at once: the shards read, the result,
the table prepared from it, the kept objects, their coarsening and its temporaries."""

CACHE_SHARE = 4
"""Level 0's decoded fragment ranges and shard indexes kept across batches (least
recently used forgotten first) hold at most ``memory_budget // CACHE_SHARE`` bytes, so
those of a store that fit are decoded once per pass, not once per batch."""


def stored_batches(
    store: Source | StoreLike,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    progress: Progress | None = None,
) -> ObjectBatches:
    """Level 0 of an object store as batches of whole objects, read back within a budget.

    Each batch is the object table the kind's writer prepares from the objects as read,
    with the store-wide arguments the store was written with.

    Parameters
    ----------
    store
        An object store: open (:func:`~zarr_vectors.update.object_sources.open_source`),
        or a path or zarr store to open.
    memory_budget
        Bytes of working memory a batch may take (estimated from level 0's row sizes).
    progress
        Called as ``progress("levels", batches read, batches)`` in every pass.

    Returns
    -------
    ObjectBatches
        Level 0, read again at every pass over it.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> zv.write_polylines(path, [np.zeros((2, 2)), np.ones((3, 2))], chunk_shape=4.0)
    >>> [batch.n_objects for batch in stored_batches(path).read()]
    [2]
    >>> [batch.offsets.tolist() for batch in stored_batches(path, 1).read()]  # one by one
    [[0, 2], [0, 3]]
    """
    source = store if isinstance(store, Source) else open_source(store, links=False)
    writer, store_wide = object_writer(source.kind), store_arguments(source)
    cache = memory_budget // CACHE_SHARE
    level0 = LevelReader(source.io, source.root, 0)
    bounded = whole_index_bytes(level0) > cache
    reader = ObjectReader(level0, bounded=bounded, cache_bytes=cache)
    m = source.n_objects
    step = min(max(1, m), _objects_per_batch(source, memory_budget))

    def batch(first: int, stop: int) -> ObjectTable:
        found = reader.read(np.arange(first, min(m, stop), dtype=np.int64))
        if bounded:
            reader.reader.trim_caches(cache)  # what fits, not the whole level
        return writer.prepare(_batch_data(source, found), **store_wide)

    def read() -> Iterator[ObjectTable]:
        starts = range(0, m, step)
        for done, first in enumerate(starts, start=1):
            yield batch(first, first + step)
            if progress is not None:
                progress("levels", done, len(starts))

    objects = _object_fields(source, batch(0, 1))  # the store-wide root keys of one object
    return ObjectBatches(source.kind, m, objects, read)


def whole_index_bytes(level: LevelReader) -> int:
    """At most the bytes an object level's fragment indexes, object index and cross-chunk
    links take when read whole, from its metadata alone: every occupied chunk's decoded
    fragment ranges (16 bytes a fragment, as a range row of its blob, so at most the blob
    length ``L_max``, spec §6.1), the object index's manifests and offsets (spec §7.4), and
    ``cross_chunk_links`` with its attribute columns (8 bytes a value, spec §9.11, §9.13).

    :func:`stored_batches` reads level 0 bounded (:class:`~zarr_vectors.query.ObjectReader`
    ``bounded``) only when they do not fit its cache share of the memory budget: the
    whole-index reader decodes each chunk's ranges once, where the bounded one decodes
    again those the cache let go, and reads each batch's object index by range.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> zv.write_polylines(path, [np.zeros((2, 2)), np.ones((3, 2))], chunk_shape=4.0)
    >>> source = open_source(path, links=False)
    >>> whole_index_bytes(LevelReader(source.io, source.root, 0)) < 1000
    True
    """
    blobs = FRAGMENT_RECORDS if level.records else VERTEX_FRAGMENTS
    blob = level.array_metadata(f"{level.base}/{blobs}")["shape"][-1]
    manifests = level.array_metadata(f"{level.base}/{OBJECT_INDEX}/data")["shape"][0]
    chunks, objects = level.meta.chunk_count or 0, level.meta.object_count or 0
    return int(chunks) * int(blob) + int(manifests) + 8 * int(objects) + _cross_link_bytes(level)


def _cross_link_bytes(level: LevelReader) -> int:
    """8 bytes a value of ``cross_chunk_links`` and its attribute columns (0 without)."""
    table = f"{level.base}/{CROSS_CHUNK_LINKS}"
    if level.document(f"{table}/zarr.json") is None:
        return 0
    family = f"{level.base}/{CROSS_CHUNK_LINK_ATTRIBUTES}"
    paths = [table] + [f"{family}/{name}" for name in level.children(family)]
    shapes = [level.array_metadata(path)["shape"] for path in paths]
    return 8 * sum(int(np.prod(shape, dtype=np.int64)) for shape in shapes)


def _level_keys(io: StoreIO) -> list[str]:
    """Every key of the levels above 0 in ``io``."""
    return [
        key
        for name in io.list_dir("")
        if name.rstrip("/").isdigit() and int(name.rstrip("/")) >= 1
        for key in io.list_prefix(f"{name.rstrip('/')}/")
    ]


def _prune_empty(io: StoreIO, levels: set[str]) -> None:
    """Remove the directories of a local store's ``levels`` left empty by deleted files."""
    root = local_root(io.store)
    if root is None:
        return
    for name in levels:
        for folder, _, _ in sorted(os.walk(root / name), key=lambda w: -len(w[0])):
            with contextlib.suppress(OSError):  # not empty: a file of a kept level
                os.rmdir(folder)


def _write_changed(built: StoreIO, io: StoreIO) -> int:
    """Copy the level files of ``built`` into ``io`` where their bytes differ, delete the
    level files ``built`` does not have; the number of files written."""
    fresh = _level_keys(built)
    stale = sorted(set(_level_keys(io)) - set(fresh))
    io.delete_many(stale)
    _prune_empty(io, {key.split("/", 1)[0] for key in stale})
    changed = []
    for key in fresh:
        value = built.get(key)
        if value is not None and io.get(key) != value:
            changed.append((key, value))
    io.set_many(changed)
    return len(changed)


def stored_levels(store: Source | StoreLike) -> Levels | None:
    """The :class:`~zarr_vectors.Levels` an object store's levels were built with, or None
    when it has none: the request its root records (``level_schedule``, spec §3.1), else
    (a store that does not record it) as many levels as it holds, with its object sparsity.

    Raises
    ------
    InvalidInputError
        For levels imported as they are (method ``"imported"``, spec §4.3.4): no rule
        rebuilds them over new objects.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> zv.write_polylines(path, [np.zeros((2, 2)), np.ones((3, 2))], chunk_shape=4.0)
    >>> stored_levels(path) is None
    True
    """
    source = store if isinstance(store, Source) else open_source(store, links=False)
    if not source.root.levels:
        return None
    if source.root.schedule is not None:
        return Levels.from_schedule(source.root.schedule)
    top = len(source.root.levels)
    doc = source.io.read_json(f"{top}/zarr.json") or {}
    coarsening = doc.get("attributes", {}).get("coarsening") or {}
    if coarsening.get("method") == IMPORTED:
        raise InvalidInputError(
            "the store's levels of detail were imported as they are (method 'imported', spec "
            "§4.3.4) and cannot follow new objects; replace them with zv.build_levels(store) "
            "or remove them with zv.build_levels(store, 0) first"
        )
    objects = coarsening.get("objects")
    if not isinstance(objects, dict):
        return Levels(count=top)
    if objects.get("rule") == "length":
        return Levels(count=top, objects="length", objects_kept=int(objects["count"]))
    return Levels(count=top, objects="coverage", objects_per_cell=int(objects["per_cell"]))


def rebuild_levels(
    io: StoreIO,
    source: Source,
    settings: Levels,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    progress: Progress | None = None,
) -> RootMetadata:
    """Build the levels ``settings`` asks for from level 0 of ``source`` (read from
    ``io`` in batches of objects within ``memory_budget``) and write into ``io`` only the
    level files that change; the root to commit.

    The store's former levels above those built are deleted. ``progress`` is called as
    ``progress("levels", batches read, batches)`` per pass over level 0.

    Raises
    ------
    InvalidInputError
        When the kind's writer builds no levels.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> zv.write_polylines(path, [np.arange(40.0).reshape(20, 2)], chunk_shape=8.0)
    >>> source = open_source(path)
    >>> len(rebuild_levels(source.io, source, Levels(count=1)).levels)
    1
    """
    writer = object_writer(source.kind)
    if writer.levels is None:
        checked_levels(source.kind, settings)
        return source.root.with_levels(())
    folder = scratch_directory(local_root(io.store), None)
    try:
        built_io = StoreIO(resolve_store(str(folder / "levels"), mode="w"))
        built: tuple[LevelMetadata, ...] = ()
        if int(source.reader.meta.vertex_count or 0):
            batches = stored_batches(source, memory_budget, progress)
            options = options_of(source)
            built = write_object_levels(built_io, batches, source.grid, options, settings)
        _write_changed(built_io, io)
    finally:
        remove_scratch(folder)
    return source.root.with_levels(tuple(level.entry() for level in built), settings.to_schedule())


def commit_passed_levels(
    io: StoreIO, settings: Levels, passes: Callable[[WriteOptions], LevelPasses]
) -> int:
    """:func:`commit_levels` for a new store whose passes over level 0 run elsewhere (a
    parallel writer's workers); ``passes(options)`` gives them for the store's write
    options. The levels are written into ``io`` at once (it has none); the number of
    levels.
    """
    source = open_source(io, links=False)
    built: tuple[LevelMetadata, ...] = ()
    if int(source.reader.meta.vertex_count or 0):
        batches = stored_batches(source)
        options = options_of(source)
        passed = passes(options)
        built = write_object_levels(io, batches, source.grid, options, settings, passed)
    root = source.root.with_levels(tuple(level.entry() for level in built), settings.to_schedule())
    commit_root(io, root, source.reader.meta, _summary(source, source.reader.meta))
    return len(root.levels)


def commit_levels(io: StoreIO, settings: Levels, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> int:
    """Build the levels of the object store just merged into ``io`` (its root written, the
    change not yet committed where ``io`` is a staging copy) and write its root again
    listing them; the number of levels.

    An append, a streamed or a parallel write calls it last, so its levels are those a
    one-shot write of all the objects gives and the change commits as one version.

    Examples
    --------
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> memory = MemoryStore()
    >>> zv.write_polylines(memory, [np.arange(40.0).reshape(20, 2)], chunk_shape=8.0)
    >>> commit_levels(StoreIO(memory), Levels(count=1))
    1
    """
    source = open_source(io, links=False)
    root = rebuild_levels(io, source, settings, memory_budget)
    commit_root(io, root, source.reader.meta, _summary(source, source.reader.meta))
    return len(root.levels)


def build_object_levels(
    store: StoreLike,
    levels: Any = "auto",
    progress: ProgressOption = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> int:
    """Add or rebuild the levels of detail of an object store (spec §4.3.3).

    The levels are those the kind's ``write_*(..., levels=levels)`` writes for the same
    objects, byte for byte; the store is committed as a new version (a failed build leaves
    it as it was). ``levels=0`` removes the levels.

    Parameters
    ----------
    store
        A local path or zarr store of polylines, streamlines or another kind whose writer
        builds levels.
    levels
        ``"auto"`` (default), a number of levels, or a :class:`~zarr_vectors.Levels`.
    progress
        As for the writers: stage ``"levels"``, the batches of objects read in each pass
        over level 0.
    memory_budget
        Bytes of working memory, as for the streaming writers (default 256 MiB): level 0
        is read in batches of objects that fit (estimated from its row sizes), once for a
        summary of the objects and once per candidate level; each coarse level goes to
        spill files beside the store batch by batch and is written from them chunk by
        chunk (its object index and cross-chunk links too), and level 0 is read without
        caches that grow with it (its decoded fragment ranges kept within a quarter of the
        budget). Memory holds the budget and that quarter, a few chunks of level 0, one
        shard of the coarse level and what grows with the number of objects only: about
        30 bytes per object and level 0's object attributes, ids and groups.

    Returns
    -------
    int
        The number of levels the store now has.

    Raises
    ------
    InvalidInputError
        For a store that is not an object store, a kind whose writer builds no levels,
        bad ``levels`` or a ``memory_budget`` below one byte.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> walk = np.cumsum(np.random.default_rng(0).normal(0, 1, (500, 3)), axis=0)
    >>> zv.write_polylines(path, [walk], chunk_shape=16.0, progress=False)
    >>> build_object_levels(path, zv.Levels(count=2), progress=False)
    2
    >>> zv.open(path).metadata["zarr_vectors_version"]
    '1.6'
    """
    if inputs.number(memory_budget, "memory_budget") < 1:
        raise InvalidInputError(
            f"memory_budget must be a positive number of bytes, got {memory_budget}"
        )
    settings = level_settings(levels) or Levels(count=0)
    source = open_source(store, links=False)
    changed = modify_target(store, rewritten=".zattrs", base=source.base, on_zip=LEVELS_ON_ZIP)
    with progress_reporter(progress) as report, changed as (_, target):
        root = rebuild_levels(target, source, settings, memory_budget, report)
        meta = source.reader.meta
        commit_root(target, root, meta, _summary(source, meta))
    return len(root.levels)


def _summary(source: Source, meta: LevelMetadata) -> dict[str, Any]:
    """The ``metadata.json`` summary of level 0."""
    return {
        "geometry_type": source.kind,
        "vertex_count": meta.vertex_count,
        "chunk_count": meta.chunk_count,
        "object_count": source.n_objects,
    }
