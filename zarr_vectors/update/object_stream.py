"""Streaming writes of object stores: batches of whole objects in, the one-shot store out.

Each batch is written alone, with the one-shot writer and the writer's settings, into its
own store under a scratch directory; closing the writer merges them all, chunk by chunk, into
the destination (:func:`~zarr_vectors.update.object_merge.merge_stores`). The objects of
batch ``k`` follow those of the batches before it, so the store is, byte for byte apart from
``creation_timestamp`` and ``commit``, the one a single write of the concatenated input
gives: same chunks, fragment order, manifests, cross-chunk links and object ids. Memory
holds one batch while it is written, and one chunk of every batch while they are merged.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zarr_vectors._closing import CloseOnExit
from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.geometry import group_vertices, object_writer, shared_docs, split_polylines
from zarr_vectors.store.io import StoreLike, local_destination
from zarr_vectors.store.spill import remove_scratch, scratch_directory
from zarr_vectors.store.target import check_destination
from zarr_vectors.store.writer_lock import writer_lock
from zarr_vectors.update.object_append import (
    continuing_ids,
    fit_arguments,
    open_base,
    store_arguments,
    store_settings,
)
from zarr_vectors.update.object_levels import checked_levels
from zarr_vectors.update.object_merge import merge_stores
from zarr_vectors.update.object_sources import Source, open_source
from zarr_vectors.write import (
    KindWriter,
    WriteMode,
    WriteOptions,
    inputs,
    write_kind,
    writer_arguments,
)

__all__ = ["BatchSpec", "ObjectWriter", "write_objects_stream"]


@dataclass(frozen=True, slots=True)
class BatchSpec:
    """How every batch of an object store is written alone: the kind and its fixed settings.

    It pickles, so a batch can be written in another process (parallel writes).

    Attributes
    ----------
    kind
        ``"polyline"``, ``"streamline"``, ``"graph"``, ``"skeleton"`` or ``"mesh"``.
    store_wide
        The kind's store-wide arguments (``directed``...; see
        :class:`~zarr_vectors.write.KindWriter`).
    settings
        ``chunk_shape``, ``bin_shape``, ``options`` and ``units`` of every batch.
    shard_chunks
        ``options.shard_chunks`` of the merged store: batches are written with one shard
        per chunk, and the merge packs chunks into shards (spec §9.0.1).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> spec = BatchSpec.create("polyline", 8.0, None, None, {})
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(2)]
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "batch.zarr"
    >>> spec.write(path, spec.arguments((lines,), {}), 5, overwrite=False)
    >>> zv.open(path).read().object_ids.tolist()
    [5, 6]
    """

    kind: str
    store_wide: dict[str, Any]
    settings: dict[str, Any]
    shard_chunks: int | tuple[int, ...] | None = None

    @classmethod
    def create(
        cls,
        kind: str,
        chunk_shape: float | Sequence[float] | None,
        bin_shape: float | Sequence[float] | None,
        options: WriteOptions | None,
        settings: dict[str, Any],
    ) -> BatchSpec:
        """Check the kind and the settings (see :class:`ObjectWriter`).

        Raises
        ------
        InvalidInputError
            For an unknown kind, a missing ``chunk_shape`` or settings the kind lacks.

        Examples
        --------
        >>> BatchSpec.create("graph", 8.0, None, None, {"directed": True}).store_wide
        {'directed': True}
        >>> BatchSpec.create("graph", None, None, None, {})
        Traceback (most recent call last):
        ...
        zarr_vectors.errors.InvalidInputError: a streaming object write needs chunk_shape
        """
        writer = object_writer(kind)
        if chunk_shape is None:
            raise InvalidInputError("a streaming object write needs chunk_shape")
        settings = dict(settings)
        units = settings.pop("units", None)
        writer_arguments.check_settings(
            kind, chunk_shape=chunk_shape, bin_shape=bin_shape, options=options, units=units
        )
        unknown = set(settings) - set(writer.store_wide)
        if unknown:
            raise InvalidInputError(f"{sorted(unknown)} are not settings of a {kind} store")
        if "kind" in writer.store_wide:
            settings["kind"] = kind
        shards = None if options is None else options.shard_chunks
        fixed = {
            "chunk_shape": chunk_shape,
            "bin_shape": bin_shape,
            "options": dataclasses.replace(options or WriteOptions(), shard_chunks=1),
            "units": units,
        }
        return cls(kind, settings, fixed, shards)

    @classmethod
    def for_store(cls, base: Source) -> BatchSpec:
        """Batches that join the existing store ``base``: written with its settings.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.update import open_source
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.zarr"
        >>> zv.write_polylines(path, [np.ones((3, 3)) * [1, 2, 3]], chunk_shape=8.0)
        >>> spec = BatchSpec.for_store(open_source(path))
        >>> spec.kind, spec.settings["chunk_shape"]
        ('polyline', (8.0, 8.0, 8.0))
        """
        return cls(base.kind, store_arguments(base), store_settings(base))

    @property
    def writer(self) -> KindWriter:
        """The kind's writer."""
        return object_writer(self.kind)

    def arguments(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """A batch's arguments to the kind's ``write_*`` function, by name (store excluded).

        Raises
        ------
        InvalidInputError
            For arguments the function does not take, or settings fixed once per store.

        Examples
        --------
        >>> import numpy as np
        >>> spec = BatchSpec.create("polyline", 8.0, None, None, {})
        >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(2)]
        >>> sorted(spec.arguments((lines,), {}))
        ['polylines']
        """
        clash = sorted(
            set(kwargs) & (writer_arguments.WRITE_SETTINGS | set(self.writer.store_wide))
        )
        if clash:
            raise InvalidInputError(f"{clash} are set once, on the ObjectWriter")
        return self.writer.bind(args, kwargs)

    def count(self, arguments: Mapping[str, Any]) -> int:
        """Objects in a batch.

        Raises
        ------
        InvalidInputError
            For positions or object labels that are not valid.

        Examples
        --------
        >>> import numpy as np
        >>> spec = BatchSpec.create("polyline", 8.0, None, None, {})
        >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(2)]
        >>> spec.count(spec.arguments((lines,), {}))
        2
        """
        if geometry_kind(self.kind).ordered:
            return int(split_polylines(arguments["polylines"])[1].shape[0]) - 1
        n = inputs.positions(arguments["positions"]).shape[0]
        return group_vertices(arguments.get("vertex_objects"), n).n_objects

    def write(
        self, path: StoreLike, arguments: Mapping[str, Any], first: int, *, overwrite: bool
    ) -> None:
        """Write a batch alone into ``path``; its default ids start at ``first``.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> import numpy as np
        >>> spec = BatchSpec.create("polyline", 8.0, None, None, {})
        >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(2)]
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "batch.zarr"
        >>> spec.write(path, spec.arguments((lines,), {}), 2, overwrite=False)
        >>> zv.open(path).read().object_ids.tolist()
        [2, 3]
        """
        batch = {**arguments, "object_ids": continuing_ids(self.kind, first, arguments)}
        settings = {**self.settings, "mode": "w" if overwrite else "w-", "progress": False}
        write_kind(path, self.writer, batch, self.store_wide, settings)


@shared_docs
class ObjectWriter(CloseOnExit):
    """Write an object store (polylines, streamlines, graphs, skeletons, meshes) from batches.

    Use it as a context manager; :meth:`append` takes a batch of whole objects with the
    arguments of the kind's ``write_*`` function (``write_polylines``, ``write_graph``,
    ``write_skeletons``, ``write_mesh``) but the store and the settings given here. Leaving
    the ``with`` block without an error writes the store (or call :meth:`close`); an error,
    or :meth:`abort`, leaves the destination as it was.

    Parameters
    ----------
    store
        Destination, checked now and written when the writer closes.
    kind
        ``"polyline"``, ``"streamline"``, ``"graph"``, ``"skeleton"`` or ``"mesh"``.
    chunk_shape
        Chunk size per axis (one number for all axes). Required unless ``mode="a"``: the
        default chunk shape depends on all the data.
    bin_shape
        Bin size, as for the ``write_*`` functions.
    mode
        ``"w-"`` (default): refuse an existing store; ``"w"``: replace an existing Zarr
        Vectors store (never anything else) when the writer closes; ``"a"``: add the
        batches to an existing store of the kind when the writer closes, as
        ``write_*(..., mode="a")`` with all the batches at once would (the store keeps its
        own chunk and bin shapes, options and store-wide settings, so those are not given).
    overwrite
        Deprecated: ``overwrite=True`` is ``mode="w"``.
    options
        Less common settings (:class:`~zarr_vectors.WriteOptions`).
    spill_dir
        Directory for the batches' temporary stores. Default: beside a local destination,
        else the system temporary directory.
    progress
        Progress bar over the chunks merged when the writer closes: None (default) on a
        terminal or in Jupyter, True always, False never, or a callable
        ``progress(stage, done, total)`` (stage ``"merge"``).
    storage_options
        URLs only: options of the fsspec filesystem, as for :func:`zarr_vectors.open`.
    levels
        Levels of detail (spec §4.3.3), as for the kind's ``write_*`` function: built when
        the writer closes from the merged level 0, the same bytes as a one-shot write of
        all the objects (level 0 is read back in batches of objects, as by
        :func:`~zarr_vectors.build_levels`; each coarse level is spilled to disk and written
        chunk by chunk). Not with
        ``mode="a"``: an append keeps the store's levels (its number of levels and object
        sparsity), built again over all its objects; only the files that change are
        written.
    **settings
        Store-wide arguments of the kind's ``write_*`` function: ``units`` (of the
        coordinates, as for :func:`~zarr_vectors.write_points`), ``directed`` (graph),
        ``winding_order`` and ``closed_surface`` (mesh), ``metadata``.

    Raises
    ------
    StoreExistsError
        When the destination holds data and ``mode`` is ``"w-"``.
    InvalidInputError
        For an unknown kind, a missing ``chunk_shape``, or (``mode="a"``) a store of
        another kind or settings given; :meth:`append` raises it for an invalid batch,
        which is then not added.
    ConcurrentWriteError
        ``mode="a"``: when another writer changed the store since the writer opened it;
        the store keeps that writer's change.

    {example_setup}
    >>> line = np.array([[0, 0, 0], [1, 1, 1]], dtype=np.float32)
    >>> with zv.ObjectWriter(path, kind="polyline", chunk_shape=4.0, progress=False) as w:
    ...     w.append([line, line + 1])
    ...     w.append([line + 2])
    >>> zv.open(path).object_count
    3
    """

    def __init__(
        self,
        store: StoreLike,
        *,
        kind: str,
        chunk_shape: float | Sequence[float] | None = None,
        bin_shape: float | Sequence[float] | None = None,
        mode: WriteMode = "w-",
        overwrite: bool | None = None,
        options: WriteOptions | None = None,
        spill_dir: str | os.PathLike[str] | None = None,
        progress: ProgressOption = None,
        storage_options: Mapping[str, Any] | None = None,
        levels: Any = None,
        **settings: Any,
    ) -> None:
        target = writer_arguments.destination(store, mode, overwrite, storage_options)
        self.levels = checked_levels(kind, levels)
        self.store, self.kind, self.overwrite = target.store, kind, target.overwrite
        self.base: Source | None = None  # mode "a": the store the batches join
        if target.mode == "a":
            if self.levels is not None:
                raise InvalidInputError(
                    "levels= cannot be given with mode='a': an append keeps the store's levels"
                )
            writer_arguments.check_append_settings(
                chunk_shape=chunk_shape, bin_shape=bin_shape, options=options, **settings
            )
            self.base = open_base(self.store, object_writer(kind))
            self.spec = BatchSpec.for_store(self.base)
        else:
            self.spec = BatchSpec.create(kind, chunk_shape, bin_shape, options, settings)
            check_destination(self.store, overwrite=self.overwrite)
        self.progress = progress_reporter(progress)
        self.scratch = scratch_directory(local_destination(self.store), spill_dir)
        self.batches: list[Path] = []
        self.first = self.base  # later batches are cast to it (else to the first batch)
        self.n_objects = 0 if self.base is None else self.base.n_objects
        self.closed = False

    @shared_docs
    def append(self, *args: Any, **kwargs: Any) -> None:
        """Add a batch of whole objects (the ``write_*`` arguments after the store).

        Without ``object_ids`` (and, for graphs, skeletons and meshes, without other labels
        in ``vertex_objects``) the objects are numbered after those appended before.
        Positions and columns are cast to the first batch's dtypes when numpy casts them
        safely; a cast that can lose values is refused with the ``.astype(...)`` to use.

        Raises
        ------
        InvalidInputError
            For an invalid batch; it is not added and the writer stays usable.


        {example_setup}
        >>> line = np.array([[0, 0, 0], [5, 5, 5.0]])
        >>> writer = zv.ObjectWriter(path, kind="polyline", chunk_shape=10.0)
        >>> writer.append([line])
        >>> writer.append([line + 20, line + 40])   # numbered after the first batch's objects
        >>> writer.close()
        >>> zv.open(path).object_ids
        array([0, 1, 2])
        """
        if self.closed:
            raise InvalidInputError("this ObjectWriter is closed")
        arguments = self.spec.arguments(args, kwargs)
        if self.first is not None:
            holder = "the first batch" if self.base is None else "the store"
            arguments = fit_arguments(self.spec.kind, self.first, arguments, holder)
        path = self.scratch / f"batch-{len(self.batches)}"
        self.spec.write(path, arguments, self.n_objects, overwrite=False)
        source = open_source(path)
        self.first = self.first or source
        self.n_objects += source.n_objects
        self.batches.append(path)

    @shared_docs
    def close(self) -> None:
        """Merge the batches into the destination and remove the temporary stores.

        Raises
        ------
        InvalidInputError
            When nothing was appended.


        {example_setup}
        >>> line = np.array([[0, 0, 0], [5, 5, 5.0]])
        >>> writer = zv.ObjectWriter(path, kind="polyline", chunk_shape=10.0)
        >>> writer.append([line])
        >>> writer.close()
        >>> zv.open(path).object_count
        1
        """
        if self.closed:
            raise InvalidInputError("this ObjectWriter is closed")
        try:
            if not self.batches:
                raise InvalidInputError("nothing to write: append at least one batch")
            sources = [open_source(path) for path in self.batches]
            if self.base is not None:
                with writer_lock(self.store):
                    merge_stores(
                        self.store, [self.base, *sources], has_base=True, progress=self.progress
                    )
                return
            merge_stores(
                self.store,
                sources,
                has_base=False,
                overwrite=self.overwrite,
                progress=self.progress,
                shard_chunks=self.spec.shard_chunks,
                levels=self.levels,
            )
        finally:
            self.abort()

    @shared_docs
    def abort(self) -> None:
        """Drop the batches and their temporary stores; the destination is untouched.

        {example_setup}
        >>> line = np.array([[0, 0, 0], [5, 5, 5.0]])
        >>> writer = zv.ObjectWriter(path, kind="polyline", chunk_shape=10.0)
        >>> writer.append([line])
        >>> writer.abort()
        >>> path.exists()
        False
        """
        self.closed = True
        remove_scratch(self.scratch)
        self.progress.close()


@shared_docs
def write_objects_stream(
    store: StoreLike,
    batches: Iterable[Any],
    *,
    kind: str,
    chunk_shape: float | Sequence[float] | None = None,
    **settings: Any,
) -> None:
    """Write an object store from an iterable of batches of whole objects.

    The object counterpart of :func:`~zarr_vectors.write_points_stream`: memory holds one
    batch at a time, and the store is, byte for byte apart from ``creation_timestamp`` and
    ``commit``, the one the kind's ``write_*`` function writes for all the objects.

    Parameters
    ----------
    store
        Destination.
    batches
        Each item is one batch: a mapping of the kind's ``write_*`` arguments after the
        store (``{"positions": ..., "edges": ...}``), a tuple of its data arguments
        (``(positions, edges)``; for polylines and streamlines, the ``polylines``
        argument itself: a list of arrays or ``(vertices, offsets)``).
    kind
        ``"polyline"``, ``"streamline"``, ``"graph"``, ``"skeleton"`` or ``"mesh"``.
    chunk_shape
        Chunk size per axis (one number for all axes); required unless ``mode="a"``, as
        for :class:`ObjectWriter`.
    **settings
        Keyword arguments of :class:`ObjectWriter` (``bin_shape``, ``mode``, ``levels``,
        ``options``, ``spill_dir``, ``progress``, ``storage_options``, ``units`` and the kind's
        store-wide settings such as ``directed``).

    Raises
    ------
    InvalidInputError
        For an invalid batch or setting; nothing is written then.
    StoreExistsError
        When the destination holds data and ``mode`` is ``"w-"``.
    ConcurrentWriteError
        ``mode="a"``: when another writer changed the store meanwhile.

    {example_setup}
    >>> square = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=np.float32)
    >>> ring = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])
    >>> batches = [(square, ring), {"positions": square + 5, "edges": ring}]
    >>> zv.write_objects_stream(path, batches, kind="graph", chunk_shape=4.0, progress=False)
    >>> store = zv.open(path)
    >>> store.object_count, store.vertex_count
    (2, 8)
    >>> lod = pathlib.Path(tempfile.mkdtemp()) / "lod.zarr"
    >>> walk = np.cumsum(np.ones((64, 3), np.float32), axis=0)
    >>> zv.write_objects_stream(lod, [[walk], [walk + 1]], kind="streamline", chunk_shape=32.0,
    ...                         levels=1, progress=False)
    >>> [level.vertex_count for level in zv.open(lod).levels]
    [128, 10]
    """
    several = len(object_writer(kind).data) > 1  # else a tuple is one argument
    with ObjectWriter(store, kind=kind, chunk_shape=chunk_shape, **settings) as writer:
        for batch in batches:
            if isinstance(batch, Mapping):
                writer.append(**batch)
            elif isinstance(batch, tuple) and several:
                writer.append(*batch)
            else:
                writer.append(batch)
