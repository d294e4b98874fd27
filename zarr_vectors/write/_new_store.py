"""What a new store is made of, fixed before anything is written: the options of its kind,
the bounds of its positions, its chunk grid (spec §5.2) and its root metadata (spec §3).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from zarr_vectors._version import __version__
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid, bins_per_chunk
from zarr_vectors.format.metadata import DEFAULT_AXIS_NAMES, RootMetadata
from zarr_vectors.format.version import FORMAT_VERSION
from zarr_vectors.kernels import bounds_and_nonfinite, chunk_coords
from zarr_vectors.write._chunk_shapes import check_chunk_count, default_chunk_shape
from zarr_vectors.write._inputs import is_number, type_name
from zarr_vectors.write.options import DEFAULT_COMPRESSION, WriteOptions

__all__ = [
    "check_finite",
    "check_options",
    "per_axis",
    "plan_grid",
    "root_metadata",
    "shape_values",
]


def check_finite(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo, hi, bad = bounds_and_nonfinite(positions)
    if bad:
        row = int(np.flatnonzero(~np.isfinite(positions).all(axis=1))[0])
        raise InvalidInputError(
            f"positions hold {bad} NaN or infinite values (first at row {row}: "
            f"{positions[row].tolist()})"
        )
    return lo, hi


def shape_values(value: Any, what: str) -> np.ndarray:
    """A shape setting (``chunk_shape``, ``bin_shape``): one positive finite number or a
    sequence of them, as a 0-d or 1-d float64 array; the count of axes is checked later
    (:func:`per_axis`).

    Raises
    ------
    InvalidInputError
        For strings, bools, mappings, non-numbers, and numbers that are not positive and
        finite, naming ``what``.
    """
    expected = f"{what} must be one positive finite number or a sequence of them (one per axis)"
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf" and value.ndim <= 1:
        items = value.reshape(-1).tolist()
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        items = list(value)
    else:
        items = [value]
    if not items or not all(is_number(v) for v in items):
        hint = "; pass a number, not a string" if isinstance(value, str | bytes) else ""
        raise InvalidInputError(f"{expected}, got {value!r} ({type_name(value)}){hint}")
    arr = np.asarray(items, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise InvalidInputError(f"{expected}, got {value!r}")
    scalar = not isinstance(value, Sequence | np.ndarray) or (
        isinstance(value, np.ndarray) and value.ndim == 0
    )
    return arr.reshape(()) if scalar else arr


def per_axis(value: float | Sequence[float], ndim: int, what: str) -> np.ndarray:
    """``(ndim,)`` float64 from one number for every axis or one per axis.

    Raises
    ------
    InvalidInputError
        As :func:`shape_values`, or for another count of numbers than ``ndim``.
    """
    arr = shape_values(value, what)
    arr = np.full(ndim, float(arr)) if arr.ndim == 0 else arr
    if arr.shape != (ndim,):
        raise InvalidInputError(
            f"{what} must be one number or {ndim} positive finite numbers (one per axis), "
            f"got {value!r}"
        )
    return arr


def _default_bins(ndim: int) -> int:
    return 2 if ndim == 4 else 4


def plan_grid(
    bounds: tuple[np.ndarray, np.ndarray] | None,
    n: int,
    chunk_shape: float | Sequence[float] | None,
    bin_shape: float | Sequence[float] | None,
    ndim: int,
    sample: np.ndarray | None = None,
) -> ChunkGrid:
    """The chunk grid of a new store: shapes (given or default), origin and grid shape (§5.2).

    Without ``chunk_shape`` the default (:func:`default_chunk_shape`) is measured on
    ``sample``, rows of the points (:func:`~zarr_vectors.kernels.sampling.sample_rows`).

    Raises
    ------
    InvalidInputError
        For non-positive or non-dividing shapes, or a missing chunk shape without data.
    """
    if chunk_shape is None and bounds is None:
        raise InvalidInputError("chunk_shape is required to write a store without vertices")
    if chunk_shape is not None:
        chunk = per_axis(chunk_shape, ndim, "chunk_shape")
    elif bounds is not None and sample is not None:
        chunk = default_chunk_shape(sample, n, bounds)
    else:
        raise InvalidInputError("the default chunk shape needs a sample of the points")
    bins = (
        np.full(ndim, _default_bins(ndim), dtype=np.int64)
        if bin_shape is None
        else bins_per_chunk(chunk, per_axis(bin_shape, ndim, "bin_shape"))
    )
    if bounds is None:
        first = last = np.zeros(ndim, dtype=np.int64)
    else:
        if chunk_shape is not None:  # the default aims at 50,000 points per chunk
            check_chunk_count(bounds, chunk, n)
        span = chunk_coords(np.stack(bounds), chunk)
        first, last = span[0], span[1]
    origin = np.minimum(first, 0)
    return ChunkGrid(chunk, chunk / bins, bins, origin, last - origin + 1)


def root_metadata(
    kind: str,
    grid: ChunkGrid,
    options: WriteOptions,
    bounds: tuple[np.ndarray, np.ndarray] | None,
    extra: dict[str, Any] | None = None,
) -> RootMetadata:
    """Root metadata of a new store of geometry ``kind`` (spec §3)."""
    ndim = grid.ndim
    names = options.axis_names or DEFAULT_AXIS_NAMES[:ndim]
    units = options.axis_units
    units_t = (units,) * ndim if isinstance(units, str) else tuple(units)
    if len(names) != ndim:
        raise InvalidInputError(
            f"axis_names need {ndim} entries (the data have {ndim} axes), got {names!r}"
        )
    if len(units_t) != ndim:
        raise InvalidInputError(
            f"units (axis_units) need 1 or {ndim} entries (the data have {ndim} axes), "
            f"got {units!r}"
        )
    if options.custom_metadata is not None:
        extra = {**(extra or {}), "custom_metadata": options.custom_metadata}
    if options.shard_chunks is not None:
        options.shard_shape(ndim)  # refuses a shard shape of another dimension
    return RootMetadata(
        version=FORMAT_VERSION,  # every new store (§3.3); appends keep their base's
        geometry_type=kind,
        chunk_shape=tuple(float(c) for c in grid.chunk_shape),
        base_bin_shape=tuple(float(b) for b in grid.bin_shape),
        chunk_grid_origin=tuple(int(o) for o in grid.origin),
        axis_names=tuple(names),
        axis_units=units_t,
        bounding_box=None
        if bounds is None
        else (tuple(float(v) for v in bounds[0]), tuple(float(v) for v in bounds[1])),
        extra={**(extra or {}), "software": f"zarr_vectors {__version__}"},
    )


def check_options(options: WriteOptions | None, kind: str) -> WriteOptions:
    """The options with the defaults of ``kind`` filled in.

    Raises
    ------
    InvalidInputError
        For settings that cannot be written.
    """
    options = (options or WriteOptions()).with_kind_defaults(kind)
    rows = options.block_rows
    if not isinstance(rows, int | np.integer) or isinstance(rows, bool) or rows < 1:
        raise InvalidInputError(
            f"rows_per_block must be a positive int, got {rows!r} ({type_name(rows)})"
        )
    if options.compression not in (None, DEFAULT_COMPRESSION):
        raise InvalidInputError(
            f"compression must be {DEFAULT_COMPRESSION!r} or None, got {options.compression!r}"
        )
    names: Any = options.axis_names
    if names is not None and (
        isinstance(names, str) or not all(isinstance(a, str) and a for a in names)
    ):
        raise InvalidInputError(
            f"axis_names must be a sequence of one name per axis, e.g. ('x', 'y', 'z'), "
            f"got {names!r}"
        )
    return options
