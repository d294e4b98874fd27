"""The spatial chunk grid and the bins inside chunks (spec §5) and box planning (spec §8)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels import chunk_coords

__all__ = ["ChunkGrid", "bins_per_chunk"]

_RATIO_TOLERANCE = 1e-9


def bins_per_chunk(chunk_shape: np.ndarray, bin_shape: np.ndarray) -> np.ndarray:
    """Bins per chunk on each axis, ``round(C / B)``, checking that bins tile chunks exactly.

    Computed on Python floats (a few axes: each numpy step on them cost more than the
    arithmetic, in a store's opening); ``round`` takes ties to even, as ``np.round``.

    Raises
    ------
    InvalidInputError
        When ``|C/B - round(C/B)| > 1e-9`` or a bin is larger than its chunk (spec §5).

    Examples
    --------
    >>> bins_per_chunk(np.array([40.0, 40.0]), np.array([10.0, 40.0])).tolist()
    [4, 1]
    """
    rounded = []
    for d, (c, b) in enumerate(zip(chunk_shape.tolist(), bin_shape.tolist(), strict=True)):
        ratio = c / b if b else math.inf
        whole = round(ratio) if math.isfinite(ratio) and ratio < 2**62 else 0  # int64
        if abs(ratio - whole) > _RATIO_TOLERANCE or whole < 1:
            raise InvalidInputError(
                f"bin_shape[{d}] = {bin_shape[d]} does not divide chunk_shape[{d}] = "
                f"{chunk_shape[d]} into a whole number of bins"
            )
        rounded.append(whole)
    return np.array(rounded, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class ChunkGrid:
    """A store's chunk grid: sizes, bins, and the placement of the zarr chunk indices.

    Attributes
    ----------
    chunk_shape, bin_shape
        ``C`` and ``B`` per axis (float64).
    bins
        Bins per chunk per axis (int64).
    origin
        ``chunk_grid_origin``: absolute chunk index of zarr chunk index 0 on each axis.
    shape
        ``G``, the number of chunks per axis of the zarr arrays.
    """

    chunk_shape: np.ndarray
    bin_shape: np.ndarray
    bins: np.ndarray
    origin: np.ndarray
    shape: np.ndarray

    @property
    def ndim(self) -> int:
        """``D``."""
        return int(self.chunk_shape.shape[0])

    @property
    def bins_per_chunk_total(self) -> int:
        """Bins in one chunk (product over axes)."""
        return math.prod(self.bins.tolist())

    def chunk_lower(self, chunks: np.ndarray) -> np.ndarray:
        """Lower corners ``c*C`` (float64) of zarr chunk indices ``chunks`` (…, D)."""
        return np.asarray((chunks + self.origin) * self.chunk_shape, dtype=np.float64)

    def chunk_upper(self, chunks: np.ndarray) -> np.ndarray:
        """Upper corners ``(c+1)*C`` (float64, exclusive) of zarr chunk indices ``chunks``."""
        return np.asarray((chunks + self.origin + 1) * self.chunk_shape, dtype=np.float64)

    def bin_edges(self, chunk: np.ndarray, axis: int) -> np.ndarray:
        """Edges ``e_0 .. e_bpc`` of the bins of zarr chunk ``chunk`` along ``axis`` (spec §5)."""
        c = float(chunk[axis] + self.origin[axis])
        lower = c * self.chunk_shape[axis]
        edges = lower + np.arange(self.bins[axis], dtype=np.float64) * self.bin_shape[axis]
        return np.append(edges, (c + 1.0) * self.chunk_shape[axis])

    def chunk_bin_edges(self, chunks: np.ndarray, axis: int) -> np.ndarray:
        """Bin edges along ``axis`` of each of the zarr chunks ``chunks`` ``(k, D)``.

        Returns
        -------
        numpy.ndarray
            ``(k, bins[axis] + 1)`` float64; row ``i`` is ``bin_edges(chunks[i], axis)``,
            computed the same way.
        """
        c = (chunks[:, axis] + self.origin[axis]).astype(np.float64)
        steps = np.arange(self.bins[axis], dtype=np.float64) * self.bin_shape[axis]
        edges = (c * self.chunk_shape[axis])[:, None] + steps
        return np.concatenate([edges, ((c + 1.0) * self.chunk_shape[axis])[:, None]], axis=1)

    def bin_boxes(self, chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper corners of every bin of each of the zarr chunks ``chunks``.

        Returns
        -------
        lower, upper
            ``(k, prod(bins), D)`` float64, bins in flat index (C) order, with the edges of
            :meth:`bin_edges`: bin ``b`` of chunk ``i`` holds the points
            ``lower[i, b] <= p < upper[i, b]``.
        """
        k, ndim = chunks.shape[0], self.ndim
        lower = np.empty((k, *self.bins.tolist(), ndim), dtype=np.float64)
        upper = np.empty_like(lower)
        for axis in range(ndim):
            edges = self.chunk_bin_edges(chunks, axis)
            shape = [k] + [1] * ndim
            shape[1 + axis] = int(self.bins[axis])
            lower[..., axis] = edges[:, :-1].reshape(shape)
            upper[..., axis] = edges[:, 1:].reshape(shape)
        return lower.reshape(k, -1, ndim), upper.reshape(k, -1, ndim)

    def box_chunk_range(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Zarr chunk index range ``[first, stop)`` of the chunks that meet ``[lo, hi)``.

        Empty on an axis when ``stop <= first`` there. Infinite or huge bounds are clamped
        to the grid's extent first.
        """
        lower = self.chunk_lower(np.zeros(self.ndim, dtype=np.int64))
        upper = self.chunk_upper(self.shape - 1)
        if np.any(hi <= lower) or np.any(lo >= upper):
            return np.zeros(self.ndim, np.int64), np.zeros(self.ndim, np.int64)
        lo_c, hi_c = np.maximum(lo, lower), np.minimum(hi, upper)
        span = chunk_coords(np.stack([lo_c, hi_c]), self.chunk_shape)
        on_edge = span[1].astype(np.float64) * self.chunk_shape >= hi_c
        first = np.maximum(span[0] - self.origin, 0)
        last = np.minimum(span[1] - on_edge - self.origin, self.shape - 1)
        return first, last + 1

    def bins_meeting_box(
        self, chunk: np.ndarray, lo: np.ndarray, hi: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Which bins of ``chunk`` the box ``[lo, hi)`` meets, and which it covers whole.

        Returns
        -------
        meets, covers
            Boolean arrays over the bin flat index (C order), length ``prod(bins)``.
        """
        meets = np.ones((), dtype=bool)
        covers = np.ones((), dtype=bool)
        for axis in range(self.ndim):
            e = self.bin_edges(chunk, axis)
            meets = np.multiply.outer(meets, (e[:-1] < hi[axis]) & (lo[axis] < e[1:]))
            covers = np.multiply.outer(covers, (lo[axis] <= e[:-1]) & (e[1:] <= hi[axis]))
        return meets.ravel().astype(bool), covers.ravel().astype(bool)
