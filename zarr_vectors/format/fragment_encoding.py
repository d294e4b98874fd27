"""Encoding many all-range fragment-index blobs (ZVFG v1, spec §6) at once.

Split from :mod:`zarr_vectors.format.fragments` (the model and its single-blob encoder):
the writers' hot paths encode one blob per chunk, every fragment a range (a point cloud's
dense per-bin ranges, an object chunk's runs), straight from arrays of starts and counts
without building a :class:`~zarr_vectors.format.fragments.FragmentIndex` per blob.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.fragment_counts import encode_counts_ragged, tiling_blobs
from zarr_vectors.format.fragments import (
    FRAGMENT_INDEX_HEADER_NBYTES,
    FRAGMENT_INDEX_MAGIC,
    FRAGMENT_INDEX_VERSION,
    I64_MAX,
    U32_MAX,
    FragmentIndex,
    IntArray,
    all_range_prefix,
    as_int64_vector,
    check_ranges,
    encode_all_ranges,
    fragment_index_nbytes,
)
from zarr_vectors.kernels.range_blobs import fill_range_blobs

__all__ = ["encode_dense_ranges", "encode_dense_ranges_batch", "encode_ranges_ragged"]


def encode_dense_ranges(starts: npt.ArrayLike, counts: npt.ArrayLike) -> bytes:
    """Encode per-fragment ranges straight to a blob, without building a FragmentIndex.

    Equivalent to ``FragmentIndex.from_ranges(starts, counts).encode()`` (spec §6).

    Parameters
    ----------
    starts, counts : array_like of int, shape (F,)

    Returns
    -------
    bytes

    Raises
    ------
    InvalidInputError
        As :meth:`FragmentIndex.from_ranges`.
    """
    index = FragmentIndex.from_ranges(starts, counts)
    return encode_all_ranges(index.range_starts, index.range_counts)


def encode_dense_ranges_batch(
    starts: npt.ArrayLike, counts: npt.ArrayLike
) -> npt.NDArray[np.uint8]:
    """Encode many all-range blobs of the same ``F`` at once (one numpy pass).

    Row ``i`` of the result is ``encode_dense_ranges(starts[i], counts[i])``; all blobs of
    one ``F`` have the same length, so the result can be written directly into a
    ``(…, L)`` ``uint8`` fragment array (spec §6).

    Parameters
    ----------
    starts, counts : array_like of int, shape (n, F)

    Returns
    -------
    numpy.ndarray of uint8, shape (n, fragment_index_nbytes(F, F, 0))

    Raises
    ------
    InvalidInputError
        Shapes differ or are not 2-D, non-integer input, negative values, overflow.
    """
    s = np.asarray(starts)
    c = np.asarray(counts)
    if s.ndim != 2 or s.shape != c.shape:
        raise InvalidInputError(
            f"starts and counts must be 2-D of equal shape, got {s.shape} and {c.shape}"
        )
    n_blob, n_frag = s.shape
    flat_s = as_int64_vector("starts", s.reshape(-1))
    flat_c = as_int64_vector("counts", c.reshape(-1))
    if n_frag > U32_MAX:
        raise InvalidInputError(f"{n_frag} fragments exceed the uint32 limit of spec §6")
    check_ranges(flat_s, flat_c, "flat range")
    prefix = np.frombuffer(all_range_prefix(n_frag), dtype=np.uint8)
    size = fragment_index_nbytes(n_frag, n_frag, 0)
    out = np.zeros((n_blob, size), dtype=np.uint8)
    out[:, : prefix.size] = prefix
    if n_frag:
        table = np.empty((n_blob, n_frag, 2), dtype="<i8")
        table[:, :, 0] = flat_s.reshape(n_blob, n_frag)
        table[:, :, 1] = flat_c.reshape(n_blob, n_frag)
        out[:, prefix.size : prefix.size + 16 * n_frag] = table.view(np.uint8).reshape(
            n_blob, 16 * n_frag
        )
    return out


def encode_ranges_ragged(
    starts: npt.ArrayLike,
    counts: npt.ArrayLike,
    bounds: npt.ArrayLike,
    *,
    counts_form: bool = False,
) -> list[npt.NDArray[np.uint8]]:
    """Encode many all-range blobs of different ``F`` at once (one numpy pass).

    Blob ``j`` holds the fragments ``bounds[j]:bounds[j+1]`` of the flat ``starts`` and
    ``counts``; it equals ``encode_dense_ranges(starts[a:b], counts[a:b])`` (spec §6), or,
    with ``counts_form`` (format 1.5), the counts form of spec §6.8 when its ranges tile
    its rows in order and it has fragments.

    Parameters
    ----------
    starts, counts : array_like of int, shape (r,)
        Range of every fragment, blob after blob.
    bounds : array_like of int, shape (k + 1,)
        Non-decreasing from 0 to ``r``.
    counts_form : bool
        Write the blobs that tile in the counts form (spec §6.8).

    Returns
    -------
    list of numpy.ndarray of uint8
        ``k`` blobs.

    Raises
    ------
    InvalidInputError
        Lengths differ, bounds out of order, negative values, overflow, or a blob of
        more than 2**32 - 1 fragments.
    """
    flat_s, flat_c, edges = (
        _int64_view(k, v) for k, v in (("starts", starts), ("counts", counts), ("bounds", bounds))
    )
    n = flat_s.size
    if flat_c.size != n:
        raise InvalidInputError(f"starts and counts differ in length ({n} and {flat_c.size})")
    sizes = np.diff(edges)
    if edges.size < 1 or edges[0] != 0 or edges[-1] != n or (sizes.size and sizes.min() < 0):
        raise InvalidInputError(f"bounds must rise from 0 to {n}")
    if sizes.size and int(sizes.max()) > U32_MAX:
        raise InvalidInputError("a blob's fragments exceed the uint32 limit of spec §6")
    if n and (
        int(flat_s.min()) < 0
        or int(flat_c.min()) < 0
        or int(flat_s.max()) + int(flat_c.max()) > I64_MAX
    ):
        check_ranges(flat_s, flat_c, "range")
    tiles = tiling_blobs(flat_s, flat_c, edges) if counts_form else np.zeros(0, np.bool_)
    if tiles.size and tiles.all():
        return encode_counts_ragged(flat_c, edges)
    blobs = _range_blobs(flat_s, flat_c, edges, sizes)
    if tiles.any():
        compact = encode_counts_ragged(flat_c, edges)
        blobs = [c if t else b for b, c, t in zip(blobs, compact, tiles.tolist(), strict=True)]
    return blobs


def _range_blobs(
    flat_s: IntArray, flat_c: IntArray, edges: IntArray, sizes: IntArray
) -> list[npt.NDArray[np.uint8]]:
    """The all-range blobs of :func:`encode_ranges_ragged`, in the range form."""
    # every blob is written straight into one buffer (no intermediate bytes objects), by
    # one kernel call (no per-blob Python)
    prefix_nbytes = FRAGMENT_INDEX_HEADER_NBYTES + ((sizes + 7) // 8 + 7) // 8 * 8
    nbytes = np.where(sizes > 0, prefix_nbytes + 16 * sizes + 4, FRAGMENT_INDEX_HEADER_NBYTES)
    ends = np.cumsum(nbytes)
    out = np.zeros(int(ends[-1]) if ends.size else 0, dtype=np.uint8)
    begins = ends - nbytes
    header = (FRAGMENT_INDEX_MAGIC, FRAGMENT_INDEX_VERSION, FRAGMENT_INDEX_HEADER_NBYTES)
    fill_range_blobs(out, begins, edges, (flat_s, flat_c), header)
    return [out[a:b] for a, b in zip(begins.tolist(), ends.tolist(), strict=True)]


def _int64_view(name: str, values: npt.ArrayLike) -> IntArray:
    """``values`` as a 1-D int64 array, without a copy when it already is one."""
    arr = np.asarray(values)
    if arr.dtype == np.int64 and arr.ndim == 1:
        return arr
    return as_int64_vector(name, arr)
