"""Point clouds: validate the input and write it (spec §10, point_cloud).

Everything is checked before the destination is touched, so bad input never changes an
existing store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import POINT_METHODS
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE, POINT_CLOUD
from zarr_vectors.format.version import OBJECT_CHUNKS_VERSION, OBJECT_ORDER_VERSION, at_least
from zarr_vectors.geometry._docstrings import shared_docs
from zarr_vectors.geometry.object_chunks import has_object_ids, write_object_chunks
from zarr_vectors.geometry.object_order import drop_object_order, write_object_order
from zarr_vectors.store.io import StoreIO, StoreLike
from zarr_vectors.store.target import write_target
from zarr_vectors.write import (
    Levels,
    LevelStats,
    WriteMode,
    WriteOptions,
    chunk_shapes,
    commit_root,
    inputs,
    level_settings,
    name_new_arrays,
    new_store,
    sort_points,
    write_level_metadata,
    write_point_level,
    write_point_levels,
    write_sorted_points,
    writer_arguments,
)

__all__ = ["commit_points", "level0_metadata", "write_points"]


@shared_docs
def write_points(
    store: StoreLike,
    positions: Any,
    *,
    chunk_shape: float | Sequence[float] | None = None,
    bin_shape: float | Sequence[float] | None = None,
    attributes: Mapping[str, Any] | None = None,
    object_ids: Any = None,
    units: str | Sequence[str] | None = None,
    mode: WriteMode = "w-",
    overwrite: bool | None = None,
    options: WriteOptions | None = None,
    progress: ProgressOption = None,
    storage_options: Mapping[str, Any] | None = None,
    levels: int | str | Levels | None = None,
) -> None:
    """Write a point cloud store.

    Parameters
    ----------
    store
        Destination: a local directory path (the default kind), a ``.zip`` path, a URL, or
        any zarr-python 3 store (``LocalStore``, ``MemoryStore``, ``ZipStore``,
        ``FsspecStore``).
    positions
        ``(n, D)`` coordinates, ``D`` = 2, 3 or 4. float32 and float64 are stored as
        given; other numbers are stored as float32 when that is exact. Negative
        coordinates are allowed (spec §5, ``chunk_grid_origin``).
    chunk_shape
        Size of a spatial chunk per axis (one number for all axes), in coordinate units.
        Default: a cube whose side (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of
        ten) puts about 50,000 points in the chunk of a point, on average over the points
        (measured on a deterministic sample of 65,536 points): clusters get smaller
        chunks, and far outliers, alone in their chunks, do not make the chunks bigger.
        On uniform data an occupied chunk then holds 50,000 points within a factor of
        about 2 to 4 (chunks cut by the faces of the bounding box hold fewer). A given
        chunk shape with which the points could fill more than 10,000,000 chunks is
        refused, with the arithmetic.
    bin_shape
        Size of a bin, the spatial index unit inside a chunk; must divide ``chunk_shape``.
        Default: ``chunk_shape / 4`` per axis (``/ 2`` in 4-D).
    attributes
        Per-vertex attributes: name → array of ``n`` rows, shape ``(n,)`` or ``(n, K)``, any
        numeric or bool dtype. Names are Python identifiers.
    object_ids
        Optional ``(n,)`` integer object id of each point (any integer dtype, kept).
    {units}
    mode
        ``"w-"`` (default): create the store, refusing an existing one; ``"w"``: replace
        an existing Zarr Vectors store (never anything else); ``"a"``: append to an
        existing point cloud, as :func:`append_points` does (the store keeps its own
        settings).
    overwrite
        Deprecated: ``overwrite=True`` is ``mode="w"``.
    options
        Less common settings (:class:`WriteOptions`).
    progress
        None (default): a progress bar over the chunks written when standard error is a
        terminal or in Jupyter; True: always; False: never; or a callable
        ``progress(stage, done, total)`` called instead (stage ``"write"``, counting chunks).
    {storage_options}
    levels
        Levels of detail for overviews (spec §4.3): None (default) writes level 0
        alone; ``"auto"`` adds levels until one holds at most 100,000 points; an int
        asks for that many levels; a :class:`~zarr_vectors.Levels` chooses the method
        (``"sample"``: nested subsets, at most ``per_bin`` points per coarse bin;
        ``"aggregate"``: one point per coarse bin with reduced attributes and a
        ``count``), the target and the reductions. Not with ``mode="a"``.

    Raises
    ------
    InvalidInputError
        For NaN/infinite coordinates, wrong shapes or dtypes, attribute length mismatches,
        bad names, non-positive or non-dividing chunk/bin shapes, arguments of the wrong
        type (a string or bool for a shape, a list for a mapping), too many chunks. The
        message names the argument and what it must be. Raised before anything is
        written.
    StoreExistsError
        When the destination holds data and ``mode`` is ``"w-"``.

    {example_setup}
    >>> positions = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=np.float32)
    >>> zv.write_points(path, positions, chunk_shape=5.0, progress=False)
    >>> zv.write_points(path, positions + 10, mode="a", progress=False)
    >>> zv.open(path).vertex_count
    6
    >>> grid = np.stack(np.meshgrid(np.arange(40), np.arange(40)), -1).reshape(-1, 2) * 1.0
    >>> lod = pathlib.Path(tempfile.mkdtemp()) / "lod.zarr"
    >>> levels = zv.Levels(count=2, per_bin=16)
    >>> zv.write_points(lod, grid, chunk_shape=20.0, levels=levels, progress=False)
    >>> [zv.open(lod).metadata["multiscales"][0]["datasets"][i]["bin_ratio"] for i in range(3)]
    [[1, 1], [2, 2], [4, 4]]
    """
    target = writer_arguments.destination(store, mode, overwrite, storage_options)
    settings = level_settings(levels)
    if settings is not None and settings.method not in POINT_METHODS:
        raise InvalidInputError(
            f"point clouds coarsen by {' or '.join(POINT_METHODS)}, not {settings.method!r}"
        )
    if target.mode == "a":
        if settings is not None:
            raise InvalidInputError(
                "levels= cannot be given with mode='a': an append keeps the store's settings"
            )
        writer_arguments.check_append_settings(
            chunk_shape=chunk_shape, bin_shape=bin_shape, units=units, options=options
        )
        append = writer_arguments.append_function(POINT_CLOUD)
        append(
            target.store, positions, attributes=attributes, object_ids=object_ids, progress=progress
        )
        return
    options = writer_arguments.check_settings(
        POINT_CLOUD, chunk_shape=chunk_shape, bin_shape=bin_shape, options=options, units=units
    )
    pos = inputs.positions(positions)
    n, ndim = pos.shape
    lo, hi = new_store.check_finite(pos)
    columns = inputs.attributes(attributes, n)
    ids = inputs.integer_ids(object_ids, n)
    if ids is not None:
        columns[OBJECT_ID_ATTRIBUTE] = ids
    bounds = None if n == 0 else (lo, hi)
    sample = chunk_shapes.sample_for_default(pos, chunk_shape)
    grid = new_store.plan_grid(bounds, n, chunk_shape, bin_shape, ndim, sample)
    root = new_store.root_metadata(POINT_CLOUD, grid, options, bounds)
    with (
        progress_reporter(progress) as report,
        write_target(target.store, overwrite=target.overwrite) as io,
    ):
        name_new_arrays(io, root)
        if settings is None:
            stats = write_point_level(io, 0, (pos, columns), grid, options, (lo, hi), report)
        else:
            points = sort_points([pos, *columns.values()], (lo, hi), grid)
            names = list(columns)
            stats = write_sorted_points(io, 0, points, names, grid, options, report)
            built = write_point_levels(io, points, names, grid, (lo, hi), options, settings)
            entries = tuple(level.entry() for level in built)
            root = root.with_levels(entries, settings.to_schedule())
        commit_points(
            io,
            root,
            grid,
            stats,
            object_chunks=options.object_chunk_index,
            object_order=options.object_order,
        )


def commit_points(
    io: StoreIO,
    root: RootMetadata,
    grid: ChunkGrid,
    stats: LevelStats,
    *,
    object_chunks: bool = False,
    object_order: bool | None = False,
    memory_budget: int | None = None,
) -> None:
    """Write the level and root metadata of a point cloud whose level 0 is written, last.

    With ``object_chunks``, a level 0 with object ids also gets its object-to-chunks index
    (spec §9.14), computed from the stored ids, and the store declares format 1.3.

    Parameters
    ----------
    io
        The destination being written.
    root
        The root metadata (:func:`~zarr_vectors.write._new_store.root_metadata`).
    grid
        Its chunk grid.
    stats
        What the level write produced.
    object_chunks
        Write the object-to-chunks index when level 0 has object ids.
    object_order
        Write the object-ordered copy (spec §9.15) when level 0 has object ids; the store
        then declares format 1.7. False removes a copy level 0 has; None leaves it as it
        is (level 0 unchanged: levels of detail added).
    memory_budget
        Bytes of working memory for the builds of the index and of the copy (None: their
        defaults), :func:`~zarr_vectors.geometry.write_object_chunks` and
        :func:`~zarr_vectors.geometry.write_object_order`.
    """
    level = level0_metadata(grid, stats)
    ids = has_object_ids(io)
    indexed = bool(object_chunks or object_order) and ids
    if indexed:
        write_level_metadata(io, level)  # the index and copy are read from the level as stored
    if object_chunks and ids:
        write_object_chunks(io, root, memory_budget)
        root = dataclasses.replace(root, version=at_least(root.version, OBJECT_CHUNKS_VERSION))
    if object_order and ids:
        write_object_order(io, root, memory_budget=memory_budget)
        root = dataclasses.replace(root, version=at_least(root.version, OBJECT_ORDER_VERSION))
    elif object_order is not None:
        drop_object_order(io)  # never a copy of rows level 0 no longer holds
    summary = {
        "geometry_type": POINT_CLOUD,
        "vertex_count": stats.vertex_count,
        "chunk_count": stats.chunk_count,
    }
    commit_root(io, root, level, summary, level_written=indexed)


def level0_metadata(grid: ChunkGrid, stats: LevelStats) -> LevelMetadata:
    """The level metadata of a point cloud's level 0 as written (spec §4).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.format.grid import ChunkGrid
    >>> from zarr_vectors.write import LevelStats
    >>> one = np.ones(2, int)
    >>> grid = ChunkGrid(np.array([8.0, 8.0]), np.array([4.0, 4.0]), 2 * one, 0 * one, one)
    >>> level0_metadata(grid, LevelStats(5, 1, 0)).bin_shape
    (4.0, 4.0)
    """
    return LevelMetadata(
        level=0,
        bin_ratio=(1,) * grid.ndim,
        bin_shape=tuple(float(b) for b in grid.bin_shape),
        vertex_count=stats.vertex_count,
        chunk_count=stats.chunk_count,
    )
