"""Validation of user input shared by every writer, and the grid it implies (spec §5).

Everything here runs before a destination is touched, so bad input never changes a store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from zarr_vectors._version import __version__
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid, bins_per_chunk
from zarr_vectors.format.metadata import DEFAULT_AXIS_NAMES, RootMetadata
from zarr_vectors.format.names import RESERVED_ATTRIBUTE_NAMES, check_name
from zarr_vectors.format.version import BASE_VERSION, SHARDED_VERSION
from zarr_vectors.geometry._pipeline import WriteOptions
from zarr_vectors.kernels import bounds_and_nonfinite, chunk_coords

__all__ = [
    "attributes",
    "check_finite",
    "check_options",
    "column",
    "default_chunk_shape",
    "integer_ids",
    "per_axis",
    "plan_grid",
    "positions",
    "root_metadata",
]

_TARGET_POINTS_PER_CHUNK = 50_000
_FLOAT32_EXACT = 2**24


def positions(values: Any) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 2 or arr.shape[1] not in (2, 3, 4):
        raise InvalidInputError(
            f"positions must have shape (n, D) with D = 2, 3 or 4, got shape {arr.shape}"
        )
    if arr.dtype.kind not in "iuf":
        raise InvalidInputError(f"positions must be numbers, got dtype {arr.dtype}")
    if arr.dtype == np.float64 or arr.dtype == np.float32:
        return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))
    as32 = arr.astype(np.float32)
    if arr.dtype.kind in "iu" and arr.size and np.abs(arr).max() > _FLOAT32_EXACT:
        raise InvalidInputError(
            f"integer positions up to {np.abs(arr).max()} are not exact in float32; "
            "pass them as float64"
        )
    return np.ascontiguousarray(as32)


def check_finite(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo, hi, bad = bounds_and_nonfinite(positions)
    if bad:
        row = int(np.flatnonzero(~np.isfinite(positions).all(axis=1))[0])
        raise InvalidInputError(
            f"positions hold {bad} NaN or infinite values (first at row {row}: "
            f"{positions[row].tolist()})"
        )
    return lo, hi


def column(name: str, values: Any, n: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(f"attribute {name!r} must be numeric or bool, got {arr.dtype}")
    if arr.ndim not in (1, 2) or arr.shape[0] != n or (arr.ndim == 2 and arr.shape[1] < 1):
        raise InvalidInputError(
            f"attribute {name!r} must have shape ({n},) or ({n}, K), got {arr.shape}"
        )
    return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))


def attributes(
    values: Mapping[str, Any] | None,
    n: int,
    *,
    what: str = "attribute",
    reserved: frozenset[str] = RESERVED_ATTRIBUTE_NAMES,
) -> dict[str, np.ndarray]:
    """Validate named columns of ``n`` rows each (names per spec §9.4).

    Raises
    ------
    InvalidInputError
        For unsafe or reserved names, non-numeric dtypes or wrong lengths.
    """
    out: dict[str, np.ndarray] = {}
    for name, column_values in (values or {}).items():
        check_name(name, what)
        if name in reserved:
            raise InvalidInputError(f"{what} name {name!r} is reserved by the format")
        out[name] = column(name, column_values, n)
    return out


def integer_ids(object_ids: Any, n: int) -> np.ndarray | None:
    """Validate ``n`` integer ids (any integer dtype, kept); None passes through."""
    if object_ids is None:
        return None
    ids = np.asarray(object_ids)
    if ids.dtype.kind not in "iu" or ids.shape != (n,):
        raise InvalidInputError(
            f"object_ids must be integers of shape ({n},), got {ids.dtype} {ids.shape}"
        )
    return np.ascontiguousarray(ids, dtype=ids.dtype.newbyteorder("="))


def per_axis(value: float | Sequence[float], ndim: int, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    arr = np.full(ndim, float(arr)) if arr.ndim == 0 else arr
    if arr.shape != (ndim,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise InvalidInputError(f"{what} must be {ndim} positive finite numbers, got {value!r}")
    return arr


def _nice(value: float) -> float:
    exponent = np.floor(np.log10(value))
    for step in (1.0, 2.0, 5.0, 10.0):
        if value <= step * 10**exponent:
            return float(step * 10**exponent)
    return float(10 ** (exponent + 1))


def default_chunk_shape(lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """The chunk shape used when none is given (spec §5, non-normative).

    A cube whose side is a "nice" number (1, 2 or 5 times a power of ten) such that a
    uniform cloud over the data's bounding box puts about 50,000 points in a chunk.
    """
    extent = np.maximum(hi - lo, 0.0)
    positive = extent[extent > 0]
    if positive.size == 0 or n == 0:
        return np.ones_like(lo)
    volume = float(np.prod(positive))
    side = (volume * min(1.0, _TARGET_POINTS_PER_CHUNK / n)) ** (1.0 / positive.size)
    return np.full_like(lo, _nice(max(side, float(positive.max()) * 1e-6)))


def _default_bins(ndim: int) -> int:
    return 2 if ndim == 4 else 4


def plan_grid(
    bounds: tuple[np.ndarray, np.ndarray] | None,
    n: int,
    chunk_shape: float | Sequence[float] | None,
    bin_shape: float | Sequence[float] | None,
    ndim: int,
) -> ChunkGrid:
    """The chunk grid of a new store: shapes (given or default), origin and grid shape (§5.2).

    Raises
    ------
    InvalidInputError
        For non-positive or non-dividing shapes, or a missing chunk shape without data.
    """
    if chunk_shape is None and bounds is None:
        raise InvalidInputError("chunk_shape is required to write a store without vertices")
    chunk = (
        default_chunk_shape(bounds[0], bounds[1], n)
        if chunk_shape is None and bounds is not None
        else per_axis(chunk_shape, ndim, "chunk_shape")  # type: ignore[arg-type]
    )
    bins = (
        np.full(ndim, _default_bins(ndim), dtype=np.int64)
        if bin_shape is None
        else bins_per_chunk(chunk, per_axis(bin_shape, ndim, "bin_shape"))
    )
    if bounds is None:
        first = last = np.zeros(ndim, dtype=np.int64)
    else:
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
    if len(names) != ndim or len(units_t) != ndim:
        raise InvalidInputError(f"axis_names and axis_units need {ndim} entries")
    if options.custom_metadata is not None:
        extra = {**(extra or {}), "custom_metadata": options.custom_metadata}
    sharded = bool(options.shard_shape(ndim))  # several chunks per shard: format 1.1 (§3.3)
    return RootMetadata(
        version=SHARDED_VERSION if sharded else BASE_VERSION,
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
    if options.block_rows < 1:
        raise InvalidInputError(f"rows_per_block must be positive, got {options.block_rows}")
    return options
