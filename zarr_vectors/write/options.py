"""Write settings: :class:`WriteOptions`, the options every writer takes as ``options=``.

The default row block sizes (``R``, spec §9.0) and the default Blosc settings of numeric row
blocks live here with the options that choose between them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from zarr_vectors._deprecation import warn_renamed
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.codecs import (
    LZ4_BITSHUFFLE,
    blob_blosc,
    counts_blobs,
    fragment_records,
    global_blosc,
    numeric_blosc,
)
from zarr_vectors.format.names import POINT_CLOUD, VERTICES
from zarr_vectors.format.sharding import default_shard_chunks
from zarr_vectors.format.version import FORMAT_VERSION

__all__ = [
    "DEFAULT_BLOSC",
    "DEFAULT_COMPRESSION",
    "OBJECT_ROWS_PER_BLOCK",
    "POINT_ROWS_PER_BLOCK",
    "WriteOptions",
]

DEFAULT_COMPRESSION = "default"
"""``WriteOptions.compression`` of the library's codec chains of a format version and kind
(spec §9.0.4); None writes raw row blocks."""
DEFAULT_BLOSC: dict[str, Any] = dict(LZ4_BITSHUFFLE)
"""Blosc settings of point clouds' numeric row blocks (and of every numeric array before
format 1.4)."""
POINT_ROWS_PER_BLOCK = 4096
"""Default R of point clouds: a box query reads whole bins, thousands of rows at a time."""
OBJECT_ROWS_PER_BLOCK = 1024
"""Default R of object kinds: reading an object by id needs tens to hundreds of rows of a
chunk, so smaller row blocks decode less that is not needed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteOptions:
    """Less common write settings.

    Attributes
    ----------
    axis_names
        Names of the axes (default ``x, y, z, w`` truncated to ``D``).
    axis_units
        One unit for all axes or one per axis (UDUNITS-2 names such as ``"micrometer"``).
        Every writer also takes it as ``units=``.
    rows_per_block
        ``R``: rows per inner chunk of every per-chunk array (spec §9.0). Default
        :data:`POINT_ROWS_PER_BLOCK` for point clouds, :data:`OBJECT_ROWS_PER_BLOCK` for
        object kinds.
    compression
        ``"default"`` (default): the library's Blosc codec chains of the store's format
        version and kind (spec §9.0.4) — LZ4 with bit shuffle for point clouds; for object
        kinds of format 1.4, zstd and compressed fragment blobs. None: raw row blocks and
        fragment blobs. ``"blosc-lz4"``, its former name, still means ``"default"`` (the
        chains, zstd included) and warns.
    fragment_attributes
        Object kinds: names of object attributes to copy to every fragment of the object
        (opt-in ``fragment_attributes/<name>``, spec §9.5), so tools can filter rows of a
        chunk by an object property without reading the manifests.
    custom_metadata
        A JSON object stored as the root key ``custom_metadata`` (spec §3.1), never
        interpreted by readers (the converters record a source file's header there).
    shard_chunks
        Spatial chunks per shard (spec §9.0.1, format 1.1): one positive int for every
        axis or one per axis. Fewer, larger storage objects and fewer requests, but a
        shard is written whole (one writer per shard). None (default): the library's
        choice, :func:`~zarr_vectors.format.sharding.default_shard_chunks` of the axes
        and ``R`` (``(4, 4, 2)`` for 3-D point clouds, ``(8, 4, 4)`` for 3-D object kinds),
        so a shard holds about 1 MiB or more. 1 (or all ones): one shard per spatial chunk.
        It applies to level 0: coarse levels of detail always pack their chunks into
        shards of about 1 MiB (spec §9.0); an append keeps the store's shards.
    object_chunk_index
        Point clouds with ``object_ids``: write the object-to-chunks index (spec §9.14,
        format 1.3), so :meth:`~zarr_vectors.VectorStore.read_objects` reads only the chunks
        and rows holding the objects asked for. False writes no index: reads by id then
        read every chunk. Default True.
    object_order
        Point clouds with ``object_ids``: also write an object-ordered copy of level 0's
        points (spec §9.15, format 1.7: the store declares ``"1.7"``), so that reading a
        few objects decodes a few small row blocks even when each object is scattered over
        every chunk (genes of spatial transcriptomics, labels found everywhere). It about
        doubles the bytes of the points and costs a sort and a second encoding of level 0
        at each write and append (which rebuilds it). Default False; an append keeps the
        copy a store has.
    codecs_of
        ``(format version, geometry kind)`` whose library codec chains the row blocks use
        (:mod:`zarr_vectors.format.codecs`). Set by :meth:`with_kind_defaults` (the newest
        version) and by appends (the store's version, so a store keeps its codecs); it
        does not change the version a new store declares.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> options = zv.WriteOptions(axis_names=("x", "y", "depth"), shard_chunks=2)
    >>> xyz = np.array([[1, 1, 1], [12, 3, 4], [25, 25, 25]], dtype=np.float32)
    >>> zv.write_points(path, xyz, chunk_shape=10.0, options=options)
    >>> zv.open(path).axis_names
    ('x', 'y', 'depth')
    """

    axis_names: tuple[str, ...] | None = None
    axis_units: str | tuple[str, ...] = "unknown"
    rows_per_block: int | None = None
    compression: str | None = DEFAULT_COMPRESSION
    fragment_attributes: tuple[str, ...] = ()
    custom_metadata: dict[str, Any] | None = None
    shard_chunks: int | tuple[int, ...] | None = None
    object_chunk_index: bool = True
    object_order: bool = False
    codecs_of: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if self.compression == "blosc-lz4":  # its former name, from when both were LZ4
            new = f'compression="{DEFAULT_COMPRESSION}"'
            warn_renamed('compression="blosc-lz4"', new, stacklevel=4)
            object.__setattr__(self, "compression", DEFAULT_COMPRESSION)
        values = (self.shard_chunks,) if isinstance(self.shard_chunks, int) else self.shard_chunks
        if values is None:
            return
        if not isinstance(values, tuple | list) or not all(_positive_int(v) for v in values):
            raise InvalidInputError(
                f"shard_chunks must be a positive int or a tuple of them, got {self.shard_chunks!r}"
            )

    def shard_shape(self, ndim: int) -> tuple[int, ...]:
        """Spatial chunks per shard along each of ``ndim`` axes; ``()`` for one per shard.

        Raises
        ------
        InvalidInputError
            When a tuple of ``shard_chunks`` does not have ``ndim`` entries, or
            ``shard_chunks`` is None (the default) and ``rows_per_block`` is not set
            (:meth:`with_kind_defaults`).

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> zv.WriteOptions(shard_chunks=4).shard_shape(3)
        (4, 4, 4)
        >>> zv.WriteOptions(shard_chunks=1).shard_shape(3)   # one chunk per shard
        ()
        >>> zv.WriteOptions(rows_per_block=1024).shard_shape(3)   # the default
        (8, 4, 4)
        """
        value = self.shard_chunks
        if value is None:
            return default_shard_chunks(ndim, self.block_rows)
        shape = (value,) * ndim if isinstance(value, int) else tuple(value)
        if len(shape) != ndim:
            raise InvalidInputError(f"shard_chunks needs {ndim} entries, got {value!r}")
        return shape if any(s != 1 for s in shape) else ()

    @property
    def block_rows(self) -> int:
        """``R`` once the kind's default is filled in (:func:`with_kind_defaults`)."""
        if self.rows_per_block is None:
            raise InvalidInputError("rows_per_block is not set; call with_kind_defaults first")
        return self.rows_per_block

    def with_kind_defaults(self, kind: str) -> WriteOptions:
        """These options with the defaults of geometry ``kind`` filled in.

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> zv.WriteOptions().with_kind_defaults("point_cloud").rows_per_block
        4096
        >>> zv.WriteOptions().with_kind_defaults("mesh").rows_per_block
        1024
        """
        default = POINT_ROWS_PER_BLOCK if kind == POINT_CLOUD else OBJECT_ROWS_PER_BLOCK
        rows = default if self.rows_per_block is None else self.rows_per_block
        codecs = (FORMAT_VERSION, kind) if self.codecs_of is None else self.codecs_of
        if (rows, codecs) == (self.rows_per_block, self.codecs_of):
            return self
        return replace(self, rows_per_block=rows, codecs_of=codecs)

    def blosc(self, role: str = VERTICES) -> dict[str, Any] | None:
        """Blosc settings of the numeric row blocks of an array of ``role`` (``vertices``,
        ``attributes``, ``links``...), or None for uncompressed blocks (spec §9.0.4).

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> zv.WriteOptions().blosc()
        {'cname': 'lz4', 'clevel': 5, 'shuffle': 'bitshuffle'}
        >>> zv.WriteOptions().with_kind_defaults("streamline").blosc("links")
        {'cname': 'zstd', 'clevel': 1, 'shuffle': 'bitshuffle'}
        >>> zv.WriteOptions(compression=None).blosc() is None
        True
        """
        if self.compression is None:
            return None
        version, kind = self.codecs_of or (FORMAT_VERSION, POINT_CLOUD)
        return numeric_blosc(version, kind, role)

    def global_blosc(self, name: str) -> dict[str, Any]:
        """Blosc settings of the global array ``name`` (``object_index``,
        ``cross_chunk_links``...) of a level (spec §9.0.4, §9.8).

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> zv.WriteOptions().with_kind_defaults("skeleton").global_blosc("object_index")
        {'cname': 'zstd', 'clevel': 3, 'shuffle': 'shuffle'}
        """
        version, kind = self.codecs_of or (FORMAT_VERSION, POINT_CLOUD)
        return global_blosc(version, kind, name)

    def blob_blosc(self) -> dict[str, Any] | None:
        """Blosc settings of the fragment-blob arrays, None for raw blocks (spec §9.0.4).

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> zv.WriteOptions().with_kind_defaults("mesh").blob_blosc()["cname"]
        'zstd'
        >>> zv.WriteOptions().with_kind_defaults("point_cloud").blob_blosc() is None
        True
        """
        if self.compression is None:
            return None
        version, kind = self.codecs_of or (FORMAT_VERSION, POINT_CLOUD)
        return blob_blosc(version, kind)

    def counts_blobs(self) -> bool:
        """Whether tiling fragment blobs are written in the counts form (spec §6.8).

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> zv.WriteOptions().with_kind_defaults("skeleton").counts_blobs()
        True
        >>> zv.WriteOptions(codecs_of=("1.4", "skeleton")).counts_blobs()
        False
        """
        version, kind = self.codecs_of or (FORMAT_VERSION, POINT_CLOUD)
        return counts_blobs(version, kind)

    def fragment_records(self) -> bool:
        """Whether level 0 keeps its fragments in ``fragment_records`` (spec §6.9).

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> zv.WriteOptions().with_kind_defaults("skeleton").fragment_records()
        True
        >>> zv.WriteOptions(codecs_of=("1.5", "skeleton")).fragment_records()
        False
        """
        version, kind = self.codecs_of or (FORMAT_VERSION, POINT_CLOUD)
        return fragment_records(version, kind)


def _positive_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and bool(value > 0)
