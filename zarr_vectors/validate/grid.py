"""Scalar chunk-grid helpers of the validator (spec §5.1, §1.3).

Python floats are IEEE binary64 and Python never fuses a multiply and an add, so the
arithmetic below is exactly the "computed in float64" of the spec. Vectorised work on
vertex rows uses the numba kernels instead (:mod:`zarr_vectors.kernels`).
"""

from __future__ import annotations

import math

__all__ = ["MAX_INDEX", "chunk_index", "grid_label"]

MAX_INDEX = 2.0**52
"""``|p / C|`` must stay below this for chunk indices to be exact (as in the kernels)."""


def chunk_index(p: float, size: float) -> int | None:
    """The chunk index ``c`` with ``c·C ≤ p < (c+1)·C`` in float64 (spec §5.1).

    Returns None when ``p`` is not finite or ``|p / C| ≥ 2**52``.
    """
    q = p / size
    if not math.isfinite(q) or abs(q) >= MAX_INDEX:
        return None
    c = math.floor(q)
    if float(c) * size > p:
        c -= 1
    elif float(c + 1) * size <= p:
        c += 1
    return c


def grid_label(g: tuple[int, ...] | list[int]) -> str:
    """``(0,1,0)``: the grid index notation of finding paths (spec §11.1)."""
    return "(" + ",".join(str(int(v)) for v in g) + ")"
