"""Benchmark inputs and references: the point cloud, the query boxes, brute force, row order."""

from __future__ import annotations

import argparse
import os

import numpy as np

import zarr_vectors as zv
from zarr_vectors.kernels._jit import set_kernel_mode

__all__ = [
    "ATTRIBUTE",
    "CUBE",
    "Box",
    "brute_force",
    "canonical_rows",
    "column_filter",
    "make_boxes",
    "make_points",
    "point_counts",
    "same_rows",
    "warm_up",
]

CUBE = 1000.0
"""Side of the cube ``[0, CUBE)^3`` the points are drawn in."""

ATTRIBUTE = "value"
"""Name of the single float32 attribute."""

Box = tuple[np.ndarray, np.ndarray]


def make_points(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random float32 points in the cube and one float32 attribute.

    The arrays are drawn directly in float32 and scaled in place, so creating them never
    needs more memory than the arrays themselves (the peak-memory case relies on it).

    Parameters
    ----------
    n
        Number of points.
    seed
        Seed of :func:`numpy.random.default_rng`; the same seed gives the same arrays.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``(n, 3)`` positions and the ``(n,)`` attribute, both float32.
    """
    rng = np.random.default_rng(seed)
    positions = rng.random((n, 3), dtype=np.float32)
    positions *= np.float32(CUBE)
    attribute = rng.random(n, dtype=np.float32)
    return positions, attribute


def point_counts(text: str) -> tuple[int, ...]:
    """Point counts from a command line, e.g. ``"1e6,1e7"``: an ``argparse`` type.

    Parameters
    ----------
    text
        Numbers separated by commas.

    Returns
    -------
    tuple of int
        The counts, in the order given.

    Raises
    ------
    argparse.ArgumentTypeError
        When a part is not a number or a count is below 1000.
    """
    try:
        sizes = tuple(int(float(part)) for part in text.split(",") if part.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"sizes must be numbers such as 1e6,1e7: {text}") from exc
    if not sizes or min(sizes) < 1000:
        raise argparse.ArgumentTypeError("sizes must be at least 1000 points each")
    return sizes


def make_boxes(fraction: float, count: int, seed: int) -> list[Box]:
    """Cubes holding ``fraction`` of the volume, at random places inside the cube.

    Parameters
    ----------
    fraction
        Volume of a box over the volume of the cube (side ``CUBE * fraction ** (1/3)``).
    count
        Number of boxes.
    seed
        Seed; the boxes depend only on ``seed``, ``fraction`` and ``count``.

    Returns
    -------
    list of (numpy.ndarray, numpy.ndarray)
        ``(lo, hi)`` float64 corners of each box, half-open ``[lo, hi)``.
    """
    side = CUBE * fraction ** (1.0 / 3.0)
    rng = np.random.default_rng([seed, round(fraction * 1e6)])
    corners = rng.uniform(0.0, CUBE - side, size=(count, 3))
    return [(lo, lo + side) for lo in corners]


def brute_force(positions: np.ndarray, attribute: np.ndarray, box: Box) -> Box:
    """Rows of ``positions`` (and ``attribute``) inside ``box``: the numpy floor.

    Parameters
    ----------
    positions
        ``(n, 3)`` coordinates.
    attribute
        ``(n,)`` attribute.
    box
        ``(lo, hi)``, half-open.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        The positions and attribute values of the rows with ``lo <= p < hi``.
    """
    lo, hi = box
    mask = ((positions >= lo) & (positions < hi)).all(1)
    return positions[mask], attribute[mask]


def column_filter(positions: np.ndarray, attribute: np.ndarray, box: Box) -> Box:
    """The same rows as :func:`brute_force`, with a faster numpy mask built column by column.

    Shown beside the floor as a hint of what a tuned numpy scan costs; it avoids the
    ``(n, 3)`` boolean temporaries and the slow ``all(axis=1)`` reduction.

    Parameters
    ----------
    positions
        ``(n, 3)`` coordinates.
    attribute
        ``(n,)`` attribute.
    box
        ``(lo, hi)``, half-open.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        The positions and attribute values of the rows with ``lo <= p < hi``.
    """
    lo, hi = box
    mask = np.ones(positions.shape[0], dtype=bool)
    for axis in range(positions.shape[1]):
        column = positions[:, axis]
        mask &= column >= lo[axis]
        mask &= column < hi[axis]
    return positions[mask], attribute[mask]


def canonical_rows(positions: np.ndarray, attribute: np.ndarray) -> np.ndarray:
    """The rows ``(x, y, z, value)`` as bit patterns, in sorted order.

    Two results hold the same multiset of rows exactly when their canonical forms are
    equal. Each float32 row is read as two uint64 keys; the rows are sorted by the first
    key and the (rare) runs of equal first keys are then sorted by both.

    Parameters
    ----------
    positions
        ``(m, 3)`` float32 coordinates.
    attribute
        ``(m,)`` float32 attribute.

    Returns
    -------
    numpy.ndarray
        ``(m, 2)`` uint64 array in lexicographic order.
    """
    rows = np.empty((positions.shape[0], 4), dtype=np.float32)
    rows[:, :3] = positions
    rows[:, 3] = attribute
    keys = rows.view(np.uint64)
    keys = keys[np.argsort(keys[:, 0])]
    tied = keys[1:, 0] == keys[:-1, 0]
    if tied.any():
        in_run = np.zeros(keys.shape[0], dtype=bool)
        in_run[1:] |= tied
        in_run[:-1] |= tied
        runs = keys[in_run]
        keys[in_run] = runs[np.lexsort((runs[:, 1], runs[:, 0]))]
    return keys


def same_rows(result: zv.QueryResult, expected: np.ndarray) -> bool:
    """Whether a result holds exactly the rows of a canonical reference.

    Parameters
    ----------
    result
        A zarr_vectors read or query result.
    expected
        :func:`canonical_rows` of the reference rows.

    Returns
    -------
    bool
        True when dtypes, counts and the multisets of rows all agree.
    """
    values = result.attributes.get(ATTRIBUTE)
    if values is None or result.positions.dtype != np.float32 or values.dtype != np.float32:
        return False
    if len(result) != expected.shape[0]:
        return False
    return bool(np.array_equal(canonical_rows(result.positions, values), expected))


def warm_up(directory: str) -> None:
    """Write, open, query and read a tiny store so numba's kernels are compiled or loaded.

    Parameters
    ----------
    directory
        An existing scratch directory; the store is written inside it.
    """
    # Tiny calls of kernels not compiled yet would run as Python (first use) and leave the
    # compilation to the first timed call: the benchmarks time machine code only.
    set_kernel_mode("compiled")
    positions, attribute = make_points(1000, seed=12345)
    path = os.path.join(directory, "warm-up.zv")
    zv.write_points(path, positions, attributes={ATTRIBUTE: attribute}, mode="w")
    store = zv.open(path)
    store.query(make_boxes(0.01, 1, seed=12345)[0])
    store.read()
