"""The default chunk shape, and the limit on the chunks a given chunk shape may fill (spec §5).

The default is measured on a deterministic sample of the points
(:func:`~zarr_vectors.kernels.sampling.sample_rows`), so one-shot, streaming and parallel
writes of the same points choose the same shape. Everything here runs before a destination
is touched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.sampling import sample_rows

__all__ = [
    "MAX_CHUNKS",
    "TARGET_POINTS_PER_CHUNK",
    "check_chunk_count",
    "default_chunk_shape",
    "nice_sides",
    "points_per_chunk",
    "sample_for_default",
]

TARGET_POINTS_PER_CHUNK = 50_000
"""Points the default chunk shape aims at in the chunk of a point (:func:`points_per_chunk`)."""

MAX_CHUNKS = 10**7
"""Most chunks the points may fill with a given chunk shape (:func:`check_chunk_count`)."""


_NICE_STEPS = ("1", "1.2", "1.5", "2", "2.5", "3", "4", "5", "6", "8")
"""Mantissas of the default chunk side: consecutive ones differ by at most 4/3, so the
nearest gives a chunk volume within a factor of about 1.5 of the one aimed at (3-D)."""
_ROBUST_QUANTILES = (0.005, 0.995)
"""Per-axis quantiles of the sample that bound the bulk of the data (outliers left out)."""


def nice_sides(low: float, high: float) -> list[float]:
    """Every "nice" number (:data:`_NICE_STEPS` times a power of ten) from the largest one
    at most ``low`` to the smallest one at least ``high``, ascending.

    Each is the float nearest its decimal spelling (``1.2e-1``), so the same on every
    platform.
    """
    exponent = int(np.floor(np.log10(low)))
    out: list[float] = []
    while True:
        for step in _NICE_STEPS:
            value = float(f"{step}e{exponent}")
            out = [value] if value <= low else [*out, value]
            if value >= high:
                return out
        exponent += 1


def _rows_per_key(keys: np.ndarray) -> np.ndarray:
    """How many rows of ``(m, D)`` int64 ``keys`` share each distinct key (one flat key per
    row when they fit in int64)."""
    shifted = keys - keys.min(axis=0)
    spans = (shifted.max(axis=0) + 1).tolist()
    if float(np.prod([float(s) for s in spans])) >= 2.0**62:
        return np.asarray(np.unique(keys, axis=0, return_counts=True)[1])
    flat = np.zeros(keys.shape[0], dtype=np.int64)
    for d, span in enumerate(spans):
        flat = flat * span + shifted[:, d]
    return np.asarray(np.unique(flat, return_counts=True)[1])


def points_per_chunk(rows: np.ndarray, n: int, side: float) -> float:
    """The number of points in the chunk of a point, on average over the ``n`` points
    (``sum(c_j**2) / n`` over the chunks' counts ``c_j``), for cubic chunks of ``side``,
    estimated from ``rows``, a sample of the points.

    Averaged over points rather than chunks, a few outliers alone in their chunks count
    for little, and the chunks of dense clusters count fully. With every point in
    ``rows`` it is exact; with a sample taken at rate ``r = m / n`` it is the unbiased
    estimate ``(sum(s_j**2) - (1 - r) m) / (r m)`` from the sample counts ``s_j``.
    """
    m = int(rows.shape[0])
    counts = _rows_per_key(np.floor(rows / side).astype(np.int64)).astype(np.float64)
    rate = min(1.0, m / n)
    return float((np.sum(counts**2) - (1.0 - rate) * m) / (rate * m))


def default_chunk_shape(
    sample: np.ndarray, n: int, bounds: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """The chunk shape used when none is given (spec §5, non-normative).

    A cube whose side is a "nice" number (:func:`nice_sides`) such that the chunk of a
    point holds about 50,000 points (:func:`points_per_chunk`, nearest in ratio),
    measured on ``sample``, a deterministic sample of the points
    (:func:`~zarr_vectors.kernels.sampling.sample_rows`). Sides are searched from a
    thousandth of the side a uniform cloud over the sample's robust bounds
    (:data:`_ROBUST_QUANTILES`) would need up to twice the robust extent, so dense
    clusters get small chunks and far outliers, alone in their chunks, do not make the
    chunks huge (the grid is then sparse: many chunks spanned, few occupied).

    Parameters
    ----------
    sample
        ``(m, D)`` float64 rows sampled from the ``n`` points (all of them when ``m = n``).
    n
        Points written.
    bounds
        Per-axis minimum and maximum of all the points.

    Returns
    -------
    numpy.ndarray
        ``(D,)`` float64, the same side on every axis.
    """
    lo, hi = (np.asarray(b, dtype=np.float64) for b in bounds)
    robust = np.quantile(sample, _ROBUST_QUANTILES, axis=0) if sample.shape[0] else None
    extent = np.zeros_like(lo) if robust is None else np.maximum(robust[1] - robust[0], 0.0)
    positive = extent[extent > 0]
    if positive.size == 0 or n == 0:
        whole = float(np.max(hi - lo, initial=0.0))
        return np.full_like(lo, nice_sides(whole, whole)[-1] if whole > 0 else 1.0)
    uniform = float(np.prod(positive) * TARGET_POINTS_PER_CHUNK / n) ** (1.0 / positive.size)
    largest = float(positive.max())
    sides = nice_sides(min(uniform, largest) / 1000.0, 2.0 * largest)
    return np.full_like(lo, _closest_side(sides, sample, n))


def _closest_side(sides: list[float], sample: np.ndarray, n: int) -> float:
    """The side of ``sides`` (ascending) whose :func:`points_per_chunk` is nearest the
    target (in ratio), by bisection: the estimate grows with the side."""
    memo: dict[int, float] = {}

    def mean(i: int) -> float:
        if i not in memo:
            memo[i] = points_per_chunk(sample, n, sides[i])
        return memo[i]

    a, b = 0, len(sides) - 1
    if mean(b) <= TARGET_POINTS_PER_CHUNK:
        return sides[b]
    while a < b:  # first side whose estimate reaches the target
        mid = (a + b) // 2
        if mean(mid) >= TARGET_POINTS_PER_CHUNK:
            b = mid
        else:
            a = mid + 1
    if a == 0:
        return sides[0]
    below, above = mean(a - 1), mean(a)
    closer_below = TARGET_POINTS_PER_CHUNK / below < above / TARGET_POINTS_PER_CHUNK
    return sides[a - 1] if closer_below else sides[a]


def check_chunk_count(bounds: tuple[np.ndarray, np.ndarray], chunk: np.ndarray, n: int) -> None:
    """Refuse a chunk shape with which ``n`` points within ``bounds`` could occupy more than
    :data:`MAX_CHUNKS` chunks: the chunks spanned by the bounds, or ``n`` if fewer.

    Counted per axis from the bounds and the chunk shape alone, in Python integers,
    before anything the size of the grid is allocated. A sparse grid (two clusters far
    apart in small chunks: spanning 10^13 chunks, occupying few) is allowed.

    Raises
    ------
    InvalidInputError
        With the arithmetic: the chunks per axis, their product and what to do.
    """
    lo, hi = (np.asarray(b, dtype=np.float64) for b in bounds)
    per_axis_count = [
        int(np.floor(h / c)) - int(np.floor(l_ / c)) + 1
        for l_, h, c in zip(lo.tolist(), hi.tolist(), chunk.tolist(), strict=True)
    ]
    total = 1
    for k in per_axis_count:
        total *= k
    if min(total, n) <= MAX_CHUNKS:
        return
    shapes = sorted({float(c) for c in chunk.tolist()})
    shape = f"{shapes[0]:g}" if len(shapes) == 1 else str([float(c) for c in chunk.tolist()])
    pairs = list(zip(lo.tolist(), hi.tolist(), strict=True))
    span = (
        f"{pairs[0][0]:g}..{pairs[0][1]:g}"
        if len(set(pairs)) == 1
        else ", ".join(f"{a:g}..{b:g}" for a, b in pairs)
    )
    product = " x ".join(f"{k:,}" for k in per_axis_count)
    occupied = "" if total <= n else f"; {n:,} points could occupy {n:,} of them"
    raise InvalidInputError(
        f"chunk_shape {shape} over bounds {span} on {len(per_axis_count)} axes gives "
        f"{product} = {_format_number(total)} chunks{occupied}: more than the "
        f"{MAX_CHUNKS:,} chunks a write may fill (each is stored and indexed on its own); "
        f"pass a larger chunk_shape (about {_side_for(lo, hi, n):.3g} gives 50,000 "
        "points per chunk on uniform data), or leave it out for the default"
    )


def _format_number(value: int) -> str:
    return f"{value:,}" if value < 10**15 else f"{float(value):.3g}"


def _side_for(lo: np.ndarray, hi: np.ndarray, n: int) -> float:
    """The cube side putting :data:`TARGET_POINTS_PER_CHUNK` of ``n`` uniform points in a
    chunk of the bounding box ``lo..hi`` (for messages)."""
    extent = np.maximum(hi - lo, 0.0)
    positive = extent[extent > 0]
    if positive.size == 0:
        return 1.0
    fraction = min(1.0, TARGET_POINTS_PER_CHUNK / max(n, 1))
    return float((np.prod(positive) * fraction) ** (1.0 / positive.size))


def sample_for_default(positions: np.ndarray, chunk_shape: Any) -> np.ndarray | None:
    """The sample :func:`default_chunk_shape` measures, or None when ``chunk_shape`` is
    given (nothing to measure)."""
    if chunk_shape is not None or positions.shape[0] == 0:
        return None
    return sample_rows(positions)[0]
