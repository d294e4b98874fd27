"""Scalar chunk-grid helpers of the validator (spec §5.1, §1.3).

Scalar forms of the kernels' grid arithmetic (:mod:`zarr_vectors.kernels`), for the few
values metadata checks need.
"""

from __future__ import annotations

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels import chunk_coords

__all__ = ["chunk_index", "grid_label"]


def chunk_index(p: float, size: float) -> int | None:
    """The chunk index ``c`` with ``c·C ≤ p < (c+1)·C`` in float64 (spec §5.1).

    Returns None when ``p`` is not finite or too large for an exact index (the kernels'
    limit, ``|p / C| < 2**52``).
    """
    try:
        return int(chunk_coords(np.array([[p]], dtype=np.float64), np.array([size]))[0, 0])
    except InvalidInputError:
        return None


def grid_label(g: tuple[int, ...] | list[int]) -> str:
    """``(0,1,0)``: the grid index notation of finding paths (spec §11.1)."""
    return "(" + ",".join(str(int(v)) for v in g) + ")"
