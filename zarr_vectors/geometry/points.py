"""Point clouds: validate the input and write it (spec §10, point_cloud).

Everything is checked before the destination is touched, so bad input never changes an
existing store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from zarr_vectors._version import __version__
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid, bins_per_chunk
from zarr_vectors.format.metadata import DEFAULT_AXIS_NAMES, LevelMetadata, RootMetadata
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE, RESERVED_ATTRIBUTE_NAMES, check_name
from zarr_vectors.geometry._pipeline import WriteOptions, commit_root, write_point_level
from zarr_vectors.kernels import bounds_and_nonfinite, chunk_coords
from zarr_vectors.store.io import StoreLike
from zarr_vectors.store.target import write_target

__all__ = ["default_chunk_shape", "write_points"]

_TARGET_POINTS_PER_CHUNK = 50_000
_FLOAT32_EXACT = 2**24


def _positions(values: Any) -> np.ndarray:
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


def _check_finite(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo, hi, bad = bounds_and_nonfinite(positions)
    if bad:
        row = int(np.flatnonzero(~np.isfinite(positions).all(axis=1))[0])
        raise InvalidInputError(
            f"positions hold {bad} NaN or infinite values (first at row {row}: "
            f"{positions[row].tolist()})"
        )
    return lo, hi


def _column(name: str, values: Any, n: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(f"attribute {name!r} must be numeric or bool, got {arr.dtype}")
    if arr.ndim not in (1, 2) or arr.shape[0] != n or (arr.ndim == 2 and arr.shape[1] < 1):
        raise InvalidInputError(
            f"attribute {name!r} must have shape ({n},) or ({n}, K), got {arr.shape}"
        )
    return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))


def _attributes(attributes: Mapping[str, Any] | None, n: int) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, values in (attributes or {}).items():
        check_name(name)
        if name in RESERVED_ATTRIBUTE_NAMES:
            raise InvalidInputError(f"attribute name {name!r} is reserved; use object_ids=")
        out[name] = _column(name, values, n)
    return out


def _object_ids(object_ids: Any, n: int) -> np.ndarray | None:
    if object_ids is None:
        return None
    ids = np.asarray(object_ids)
    if ids.dtype.kind not in "iu" or ids.shape != (n,):
        raise InvalidInputError(
            f"object_ids must be integers of shape ({n},), got {ids.dtype} {ids.shape}"
        )
    return np.ascontiguousarray(ids, dtype=ids.dtype.newbyteorder("="))


def _per_axis(value: float | Sequence[float], ndim: int, what: str) -> np.ndarray:
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


def _grid(
    lo: np.ndarray, hi: np.ndarray, chunk: np.ndarray, bins: np.ndarray, empty: bool
) -> ChunkGrid:
    if empty:
        first = last = np.zeros(chunk.shape[0], dtype=np.int64)
    else:
        span = chunk_coords(np.stack([lo, hi]), chunk)
        first, last = span[0], span[1]
    origin = np.minimum(first, 0)
    return ChunkGrid(chunk, chunk / bins, bins, origin, last - origin + 1)


def write_points(
    store: StoreLike,
    positions: Any,
    *,
    chunk_shape: float | Sequence[float] | None = None,
    bin_shape: float | Sequence[float] | None = None,
    attributes: Mapping[str, Any] | None = None,
    object_ids: Any = None,
    overwrite: bool = False,
    options: WriteOptions | None = None,
) -> None:
    """Write a point cloud store.

    Parameters
    ----------
    store
        Destination: a local directory path (the default kind), a ``.zip`` path, a URL, or
        any zarr-python 3 store (``LocalStore``, ``MemoryStore``, ``ZipStore``,
        ``FsspecStore``).
    positions
        ``(n, D)`` coordinates, ``D`` = 2, 3 or 4. float32 and float64 are stored as
        given; other numbers are stored as float32 when that is exact. Negative
        coordinates are allowed (spec §5, ``chunk_grid_origin``).
    chunk_shape
        Size of a spatial chunk per axis (one number for all axes), in coordinate units.
        Default: :func:`default_chunk_shape` (about 50,000 points per chunk).
    bin_shape
        Size of a bin, the spatial index unit inside a chunk; must divide ``chunk_shape``.
        Default: ``chunk_shape / 4`` per axis (``/ 2`` in 4-D).
    attributes
        Per-vertex attributes: name → array of ``n`` rows, shape ``(n,)`` or ``(n, K)``, any
        numeric or bool dtype. Names are Python identifiers.
    object_ids
        Optional ``(n,)`` integer object id of each point (any integer dtype, kept).
    overwrite
        Replace an existing store at the destination.
    options
        Less common settings (:class:`WriteOptions`).

    Raises
    ------
    InvalidInputError
        For NaN/infinite coordinates, wrong shapes or dtypes, attribute length mismatches,
        bad names, non-positive or non-dividing chunk/bin shapes. Raised before anything
        is written.
    StoreExistsError
        When the destination holds data and ``overwrite`` is false.
    """
    options = options or WriteOptions()
    pos = _positions(positions)
    n, ndim = pos.shape
    lo, hi = _check_finite(pos)
    columns = _attributes(attributes, n)
    ids = _object_ids(object_ids, n)
    if ids is not None:
        columns[OBJECT_ID_ATTRIBUTE] = ids
    if chunk_shape is None and n == 0:
        raise InvalidInputError("chunk_shape is required to write an empty point cloud")
    chunk = (
        default_chunk_shape(lo, hi, n)
        if chunk_shape is None
        else _per_axis(chunk_shape, ndim, "chunk_shape")
    )
    bins = (
        np.full(ndim, _default_bins(ndim), dtype=np.int64)
        if bin_shape is None
        else bins_per_chunk(chunk, _per_axis(bin_shape, ndim, "bin_shape"))
    )
    grid = _grid(lo, hi, chunk, bins, empty=(n == 0))
    root = _root_metadata(grid, options, None if n == 0 else (lo, hi))
    if options.rows_per_block < 1:
        raise InvalidInputError(f"rows_per_block must be positive, got {options.rows_per_block}")
    with write_target(store, overwrite=overwrite) as io:
        stats = write_point_level(io, 0, (pos, columns), grid, options, (lo, hi))
        level = LevelMetadata(
            level=0,
            bin_ratio=(1,) * ndim,
            bin_shape=tuple(float(b) for b in grid.bin_shape),
            vertex_count=stats.vertex_count,
            chunk_count=stats.chunk_count,
        )
        commit_root(
            io,
            root,
            level,
            {"geometry_type": "point_cloud", "vertex_count": n, "chunk_count": stats.chunk_count},
        )


def _root_metadata(
    grid: ChunkGrid, options: WriteOptions, bounds: tuple[np.ndarray, np.ndarray] | None
) -> RootMetadata:
    ndim = grid.ndim
    names = options.axis_names or DEFAULT_AXIS_NAMES[:ndim]
    units = options.axis_units
    units_t = (units,) * ndim if isinstance(units, str) else tuple(units)
    if len(names) != ndim or len(units_t) != ndim:
        raise InvalidInputError(f"axis_names and axis_units need {ndim} entries")
    return RootMetadata(
        geometry_type="point_cloud",
        chunk_shape=tuple(float(c) for c in grid.chunk_shape),
        base_bin_shape=tuple(float(b) for b in grid.bin_shape),
        chunk_grid_origin=tuple(int(o) for o in grid.origin),
        axis_names=tuple(names),
        axis_units=units_t,
        bounding_box=None
        if bounds is None
        else (tuple(float(v) for v in bounds[0]), tuple(float(v) for v in bounds[1])),
        extra={"software": f"zarr_vectors {__version__}"},
    )
