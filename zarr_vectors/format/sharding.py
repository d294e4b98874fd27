"""Level 0's default spatial chunks per shard (spec §9.0.1, library default).

A store of small chunks is thousands of small storage objects when every chunk is its own
shard. When the caller does not choose ``shard_chunks``, every write path packs level 0's
chunks with :func:`default_shard_chunks`: a function of the number of axes and the row block
``R`` alone, so one-shot, streaming, appending and parallel writers choose the same ``S``
before they have seen the data, and an append (which keeps the store's ``S``) still gives the
store of one write. This module does no I/O.
"""

from __future__ import annotations

from zarr_vectors.format.levels import level_shard_chunks

__all__ = [
    "DEFAULT_SHARD_MAX_CHUNKS",
    "DEFAULT_SHARD_NBYTES",
    "default_shard_chunks",
    "estimated_chunk_nbytes",
]

DEFAULT_SHARD_NBYTES = 2 << 20
"""Uncompressed bytes a level-0 shard of the estimated chunks holds at most (2 MiB): with
the Blosc LZ4 row blocks compressing coordinates to between about a half and the whole of
their size, a shard of typical chunks stores about 1 MiB or more."""

DEFAULT_SHARD_MAX_CHUNKS = 128
"""Spatial chunks a default level-0 shard holds at most, whatever ``R``: a shard's index has
an entry per row block of every chunk of the shard, occupied or not, so a small ``R`` must not
make it list thousands of chunks (a small store would be mostly shard index)."""


def estimated_chunk_nbytes(ndim: int, rows_per_block: int) -> int:
    """The bytes :func:`default_shard_chunks` expects a typical level-0 chunk to hold in its
    positions: one full row block of ``float32`` coordinates, ``R · 4 · D``.

    ``R`` is sized for the chunks users choose (thousands of rows for point clouds, about a
    thousand for object kinds, :class:`~zarr_vectors.WriteOptions`), so a row block is the
    declared size of a chunk that every writer knows before any row is written.

    Examples
    --------
    >>> estimated_chunk_nbytes(3, 4096), estimated_chunk_nbytes(3, 1024)
    (49152, 12288)
    """
    return int(rows_per_block) * 4 * int(ndim)


def default_shard_chunks(ndim: int, rows_per_block: int) -> tuple[int, ...]:
    """``S_0``, level 0's spatial chunks per shard when the caller gives no ``shard_chunks``.

    ``S`` starts at one chunk per axis and doubles along the axes in turn (the first axis
    first) while ``prod(S)`` chunks of :func:`estimated_chunk_nbytes` stay within
    :data:`DEFAULT_SHARD_NBYTES` and their number within :data:`DEFAULT_SHARD_MAX_CHUNKS`
    — the rule of the coarse levels
    (:func:`~zarr_vectors.format.levels.level_shard_chunks`) without the grid bound, since
    an append may grow the grid but keeps the store's ``S``. A grid smaller than ``S`` is
    one shard per array (its shard index lists the chunks outside the grid as missing).

    Parameters
    ----------
    ndim
        ``D``, the number of spatial axes.
    rows_per_block
        Level 0's row block ``R``.

    Returns
    -------
    tuple of int
        ``S`` per axis, or ``()`` for one chunk per shard (as
        :meth:`~zarr_vectors.WriteOptions.shard_shape` gives it).

    Examples
    --------
    >>> default_shard_chunks(3, 4096)   # point clouds: 32 chunks of 48 KiB
    (4, 4, 2)
    >>> default_shard_chunks(3, 1024)   # object kinds: 128 chunks of 12 KiB
    (8, 4, 4)
    >>> default_shard_chunks(2, 4096)
    (8, 8)
    >>> default_shard_chunks(3, 16)     # small row blocks: at most 128 chunks
    (8, 4, 4)
    >>> default_shard_chunks(3, 1 << 20)  # a row block alone fills a shard
    ()
    """
    unbounded = (1 << 62,) * int(ndim)
    chunk = estimated_chunk_nbytes(ndim, rows_per_block)
    least = -(-DEFAULT_SHARD_NBYTES // DEFAULT_SHARD_MAX_CHUNKS)  # at most that many chunks
    return level_shard_chunks(unbounded, max(chunk, least), DEFAULT_SHARD_NBYTES)
