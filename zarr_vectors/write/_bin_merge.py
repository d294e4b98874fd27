"""A chunk's ``sample`` level from the bins of the level below, without re-binning (§4.3.2).

The rows of a chunk of level N - 1 are stored by its bins. Where a coarse bin is a union of
whole finer bins whose edges are the finer edges exactly, the coarse storage order is the
finer order grouped by coarse bin (a stable counting pass over the finer bins), so the
rows' positions need not be binned again. The edges agree exactly, per axis, when the
finer bins per coarse bin are a power of two (``e_b = c·C + b·B`` of spec §5.3: scaling
``B`` by a power of two is exact, so ``fl(b·(2^k B)) = fl((b·2^k)·B)``) or when the coarse
level has one bin on that axis; :meth:`BinMerge.plan` returns None otherwise, and the caller
bins the positions (:func:`~zarr_vectors.write.chunk_level`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zarr_vectors.kernels.point_levels import merged_sample, merged_sample_chunks
from zarr_vectors.write._sorting import SortedPoints

__all__ = ["BinMerge"]


@dataclass(frozen=True, slots=True)
class BinMerge:
    """How the bins of a finer level of a chunk group into the bins of a coarser one.

    Attributes
    ----------
    coarse
        ``(P,)`` the coarse flat bin of each finer flat bin.
    order
        ``(P,)`` the finer bins sorted by coarse bin (stable: finer bin order within one).
    coarse_count
        Coarse bins per chunk.

    Examples
    --------
    >>> import numpy as np
    >>> merge = BinMerge.plan(np.array([4, 2]), np.array([2, 1]))
    >>> merge.coarse.tolist(), merge.order.tolist()
    ([0, 0, 0, 0, 1, 1, 1, 1], [0, 1, 2, 3, 4, 5, 6, 7])
    """

    coarse: np.ndarray
    order: np.ndarray
    coarse_count: int

    @classmethod
    def plan(cls, fine_bins: np.ndarray, coarse_bins: np.ndarray) -> BinMerge | None:
        """The merge of ``fine_bins`` per chunk into ``coarse_bins`` (per axis), or None when
        the coarse edges are not exactly finer edges (see the module notes).

        Examples
        --------
        >>> import numpy as np
        >>> BinMerge.plan(np.array([6]), np.array([2])) is None   # 3 per coarse bin
        True
        >>> BinMerge.plan(np.array([6]), np.array([1])).coarse.tolist()
        [0, 0, 0, 0, 0, 0]
        """
        fine = np.asarray(fine_bins, dtype=np.int64)
        coarse = np.asarray(coarse_bins, dtype=np.int64)
        if (fine % coarse).any():
            return None
        per = fine // coarse
        if not _exact_axes(per, coarse):
            return None
        index = np.indices(tuple(int(b) for b in fine)).reshape(fine.shape[0], -1)
        flat = np.ravel_multi_index(tuple(index // per[:, None]), tuple(int(b) for b in coarse))
        flat = flat.astype(np.int64)
        return cls(flat, np.argsort(flat, kind="stable"), int(np.prod(coarse)))

    def sample(
        self, columns: list[np.ndarray], bin_offsets: np.ndarray, cap: int, chunk: np.ndarray
    ) -> SortedPoints:
        """The ``sample`` rows of one chunk: per coarse bin the ``cap`` rows of smallest
        (key, row in the finer level), in (coarse bin, finer row order).

        Parameters
        ----------
        columns
            Positions then every attribute of the chunk's finer rows in storage order.
        bin_offsets
            ``(P + 1,)`` the finer rows' bin offsets.
        cap
            Rows kept per coarse bin at most.
        chunk
            ``(D,)`` the chunk's grid index.

        Returns
        -------
        SortedPoints
            The kept rows of every column, as :func:`~zarr_vectors.write.chunk_level` gives.

        Examples
        --------
        >>> import numpy as np
        >>> merge = BinMerge.plan(np.array([2]), np.array([1]))
        >>> rows = [np.array([[0.5], [1.5], [1.7]], np.float32)]
        >>> level = merge.sample(rows, np.array([0, 1, 3]), 2, np.zeros(1, np.int64))
        >>> level.bin_offsets.tolist()
        [[0, 2]]
        """
        chosen, bins = merged_sample(
            bin_offsets, self.order, self.coarse, columns[0], cap, self.coarse_count
        )
        return SortedPoints(
            [values[chosen] for values in columns],
            np.asarray(chunk, dtype=np.int64).reshape(1, -1),
            np.array([0, bins[-1]], dtype=np.int64),
            bins[None, :],
        )

    def sample_chunks(self, rows: SortedPoints, cap: int) -> SortedPoints:
        """:meth:`sample` of every chunk of ``rows`` (several chunks, each with its finer bin
        offsets) by one kernel call: the same rows, chunk by chunk.

        Examples
        --------
        >>> import numpy as np
        >>> merge = BinMerge.plan(np.array([2]), np.array([1]))
        >>> rows = [np.array([[0.5], [1.5], [1.7], [8.5]], np.float32)]
        >>> chunks = np.array([[0], [1]])
        >>> bins = np.array([[0, 1, 3], [0, 1, 1]])
        >>> frame = SortedPoints(rows, chunks, np.array([0, 3, 4]), bins)
        >>> level = merge.sample_chunks(frame, 2)
        >>> level.chunk_offsets.tolist(), level.bin_offsets.tolist()
        ([0, 2, 3], [[0, 2], [0, 1]])
        """
        chosen, bins = merged_sample_chunks(
            rows.chunk_offsets,
            rows.bin_offsets,
            self.order,
            self.coarse,
            rows.columns[0],
            cap,
            self.coarse_count,
        )
        offsets = np.concatenate([[0], np.cumsum(bins[:, -1])]).astype(np.int64)
        return SortedPoints([values[chosen] for values in rows.columns], rows.chunks, offsets, bins)


def _exact_axes(per: np.ndarray, coarse: np.ndarray) -> bool:
    """Every axis merges a power of two of finer bins, or into a single coarse bin."""
    return bool((((per & (per - 1)) == 0) | (coarse == 1)).all())
