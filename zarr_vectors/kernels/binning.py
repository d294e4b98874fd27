"""Chunk and bin assignment and box tests (spec §5, spec §8); the sorts are in
:mod:`zarr_vectors.kernels.sorting`.

Private ``_name`` functions are numba kernels compiled with the project policy
(:func:`zarr_vectors.kernels._jit.njit`, IEEE float64, no fast-math). Public functions
are thin wrappers: they validate dtype, shape and contiguity, call a kernel and turn
the kernel's status code into :class:`~zarr_vectors.errors.InvalidInputError`.
Arrays in, arrays out: no I/O here.

Chunk index of a coordinate ``p`` on an axis with chunk size ``C`` (spec §5): the
integer ``c`` with ``c*C <= p < (c+1)*C`` evaluated in float64 (float32 input is
converted to float64 first). Local bin: the largest ``b`` in ``[0, bpc-1]`` with
``c*C + b*B <= p``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels._checks import int_array
from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels._threads import over_row_slices

__all__ = [
    "assign_rows",
    "bounds_and_nonfinite",
    "chunk_coords",
    "bin_coords",
    "assign_chunks_and_bins",
    "bin_edges",
    "fast_axes",
    "first_failure",
    "grid_arguments",
    "points_in_box",
    "raise_position_status",
    "result_arrays",
]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Positions = npt.NDArray[np.floating[Any]]

# Kernel status codes (first bad row is returned next to the code).
_OK = 0
_BAD_VALUE = 1  # non-finite, or |p / C| too large
_OUTSIDE_GRID = 3

_NO_COUNTS = np.zeros(0, np.int64)
"""The ``counts`` of :func:`_assign` that asks for flat chunk and bin indices."""

# |p / C| must stay below 2**52 so that chunk indices are exact float64 integers.
_MAX_INDEX = 2.0**52
# Below this, |p * (1 / C)| proves |p / C| < 2**52 without a division.
_NEAR_MAX_INDEX = 2.0**52 * (1.0 - 2.0**-20)

# The fast assignment (_assign_fast): rows copied per block into per-axis float64
# columns, so the arithmetic runs in SIMD lanes; chunk guesses only below this index.
_FAST_BLOCK = 512
_FAST_INDEX_LIMIT = 2.0**40


# --------------------------------------------------------------------------- kernels


@njit
def _chunk_index(p: float, size: float, inv: float) -> float:
    # First guess from a multiplication by 1 / size (a division costs several times
    # more), then walk against the exact edges q*size <= p < (q+1)*size.
    q = np.floor(p * inv)
    while q * size > p:
        q -= 1.0
    while (q + 1.0) * size <= p:
        q += 1.0
    return q  # type: ignore[no-any-return]


@njit
def _index_too_large(p: float, size: float, inv: float) -> bool:
    # |p / size| >= 2**52 (also NaN and inf); the division only near the limit.
    guess = abs(p * inv)
    if guess < _NEAR_MAX_INDEX:
        return False
    return not abs(p / size) < _MAX_INDEX


@njit
def _bin_index(p: float, c: float, size: float, bin_size: float, inv_bin: float, bpc: int) -> int:
    # First guess from a multiplication by 1 / bin_size, then walk against the exact
    # edges. The common case is tested without data-dependent branches (random bins
    # would mispredict).
    base = c * size
    top = float(bpc - 1)
    b = min(max(np.floor((p - base) * inv_bin), 0.0), top)
    e_lo = -np.inf if b == 0.0 else base + b * bin_size
    e_hi = np.inf if b == top else base + (b + 1.0) * bin_size
    if e_lo > p or e_hi <= p:
        while b > 0.0 and base + b * bin_size > p:
            b -= 1.0
        while b < top and base + (b + 1.0) * bin_size <= p:
            b += 1.0
    return int(b)


@njit
def bin_edges(c: float, size: float, bin_size: float, b: int, bpc: int) -> tuple[float, float]:
    """Edges ``[e_b, e_{b+1})`` on one axis of local bin ``b`` of chunk ``c`` (spec §5.3):
    ``e_b = c*C + b*B`` and ``e_bpc = (c+1)*C``, in float64. A vertex of the bin lies in
    ``e_b <= p < e_{b+1}``; bin 0 starts and bin ``bpc - 1`` ends at the chunk's edges."""
    base = c * size
    e0 = base + float(b) * bin_size
    e1 = (c + 1.0) * size if b == bpc - 1 else base + float(b + 1) * bin_size
    return e0, e1


@njit
def _bounds_and_nonfinite(positions: Positions) -> tuple[F64, F64, int]:
    if 1 <= positions.shape[1] <= 4:
        lo, hi, finite = _bounds_up_to_4d(positions)
        if finite:
            return lo, hi, 0
    return _bounds_of_finite_rows(positions)


@njit
def _bounds_up_to_4d(positions: Positions) -> tuple[F64, F64, bool]:
    # Bounds of every row in the input's own precision (exact: min and max only pick),
    # kept in registers: a loop over per-axis arrays runs several times slower. Axes past
    # D repeat the last one. ``x - x`` is 0 for finite x and NaN otherwise (no fast-math),
    # so the flags all stay 0 exactly when every value is finite; otherwise the bounds
    # are not used.
    n, dim = positions.shape
    a1, a2, a3 = min(1, dim - 1), min(2, dim - 1), min(3, dim - 1)
    top = positions.dtype.type(np.inf)
    lo0 = lo1 = lo2 = lo3 = top
    hi0 = hi1 = hi2 = hi3 = -top
    f0 = f1 = f2 = f3 = positions.dtype.type(0)
    for i in range(n):
        v0, v1, v2, v3 = positions[i, 0], positions[i, a1], positions[i, a2], positions[i, a3]
        f0 += v0 - v0
        f1 += v1 - v1
        f2 += v2 - v2
        f3 += v3 - v3
        lo0, hi0 = min(lo0, v0), max(hi0, v0)
        lo1, hi1 = min(lo1, v1), max(hi1, v1)
        lo2, hi2 = min(lo2, v2), max(hi2, v2)
        lo3, hi3 = min(lo3, v3), max(hi3, v3)
    # rows lo, hi: np.array of a list added 0.2 s to the kernel's compile time
    bounds = np.empty((2, 4), np.float64)
    bounds[0, 0], bounds[0, 1], bounds[0, 2], bounds[0, 3] = lo0, lo1, lo2, lo3
    bounds[1, 0], bounds[1, 1], bounds[1, 2], bounds[1, 3] = hi0, hi1, hi2, hi3
    finite = f0 == 0 and f1 == 0 and f2 == 0 and f3 == 0
    return bounds[0, :dim].copy(), bounds[1, :dim].copy(), finite


@njit
def _bounds_of_finite_rows(positions: Positions) -> tuple[F64, F64, int]:
    n, dim = positions.shape
    lo = np.empty(dim, np.float64)  # not np.full: 0.2 s more to compile
    hi = np.empty(dim, np.float64)
    for d in range(dim):
        lo[d], hi[d] = np.inf, -np.inf
    bad = 0
    for i in range(n):
        row_bad = 0
        for d in range(dim):
            if not np.isfinite(positions[i, d]):
                row_bad += 1
        if row_bad:
            bad += row_bad
            continue
        for d in range(dim):
            v = np.float64(positions[i, d])
            lo[d] = min(lo[d], v)
            hi[d] = max(hi[d], v)
    return lo, hi, bad


@njit
def _chunk_coords(positions: Positions, chunk_shape: F64) -> tuple[I64, int, int]:
    n, dim = positions.shape
    out = np.empty((n, dim), np.int64)
    inv = 1.0 / chunk_shape
    for i in range(n):
        for d in range(dim):
            p = np.float64(positions[i, d])
            if _index_too_large(p, chunk_shape[d], inv[d]):
                return out, _BAD_VALUE, i
            out[i, d] = int(_chunk_index(p, chunk_shape[d], inv[d]))
    return out, _OK, -1


@njit
def _bin_coords(
    positions: Positions, chunks: I64, chunk_shape: F64, bin_shape: F64, bpc: I64
) -> tuple[I64, int, int]:
    n, dim = positions.shape
    out = np.empty((n, dim), np.int64)
    inv_bin = 1.0 / bin_shape
    for i in range(n):
        for d in range(dim):
            p = np.float64(positions[i, d])
            if not np.isfinite(p):
                return out, _BAD_VALUE, i
            c = np.float64(chunks[i, d])
            out[i, d] = _bin_index(p, c, chunk_shape[d], bin_shape[d], inv_bin[d], bpc[d])
    return out, _OK, -1


@njit
def _assign(
    positions: Positions,
    chunk_shape: F64,
    bin_shape: F64,
    bpc: I64,
    grid_lo: I64,
    grid_shape: I64,
    chunk_flat: I64,
    bin_flat: I64,
    counts: I64,
) -> tuple[int, int]:
    # The outputs are allocated by the caller (a stream reuses them from slice to slice);
    # what their first touch costs depends on the machine: numpy asks for huge pages,
    # numba's allocator does not (huge pages were the cheaper on an earlier machine and
    # 4x the dearer on the 2026-11-27 one, measured).
    # With counts (a table of one count per cell: chunk * bins per chunk + bin), each
    # row's cell goes to chunk_flat and is counted, and bin_flat is not written (one loop
    # for both: a shared per-row function returning a tuple runs four times slower).
    n, dim = positions.shape
    inv = 1.0 / chunk_shape
    inv_bin = 1.0 / bin_shape
    as_cells = counts.shape[0] > 0
    n_bins = 1
    for d in range(dim):
        n_bins *= bpc[d]
    for i in range(n):
        cf = 0
        bf = 0
        for d in range(dim):
            p = np.float64(positions[i, d])
            if _index_too_large(p, chunk_shape[d], inv[d]):
                return _BAD_VALUE, i
            c = _chunk_index(p, chunk_shape[d], inv[d])
            g = int(c) - grid_lo[d]
            if g < 0 or g >= grid_shape[d]:
                return _OUTSIDE_GRID, i
            cf = cf * grid_shape[d] + g
            bf = bf * bpc[d] + _bin_index(p, c, chunk_shape[d], bin_shape[d], inv_bin[d], bpc[d])
        if as_cells:
            cell = cf * n_bins + bf
            chunk_flat[i] = cell
            counts[cell] += 1
        else:
            chunk_flat[i] = cf
            bin_flat[i] = bf
    return _OK, -1


@njit
def _axis_fast(
    p: float,
    size: float,
    inv: float,
    lo: float,
    hi: float,
    bin_size: float,
    inv_bin: float,
    top: float,
) -> tuple[float, float, bool]:
    # _chunk_index and _bin_index with one correction step each way instead of loops,
    # written without branches so a block of rows runs in SIMD lanes. Exact (the same
    # chunk and bin) where the guesses are off by at most one: see fast_axes. ok is
    # False for a value the fast path cannot place (non-finite, huge, outside the grid).
    x = p * inv
    q = np.floor(x)
    q = q - (q * size > p)
    q = q + ((q + 1.0) * size <= p)
    ok = (abs(x) < _FAST_INDEX_LIMIT) & (q >= lo) & (q < hi)
    base = q * size
    b = min(max(np.floor((p - base) * inv_bin), 0.0), top)
    b = b - ((b > 0.0) & (base + b * bin_size > p))
    b = b + ((b < top) & (base + (b + 1.0) * bin_size <= p))
    return q - lo, b, ok


@njit
def _place_block(block: F64, m: int, axes: F64, chunks: F64, bins: F64) -> bool:
    # Flat chunk (over the grid) and bin numbers of the m rows in the (D, m) columns of
    # block, as float64, into chunks[:m] and bins[:m]; False if a row needs _assign.
    # axes[k, d] holds, for axis d, (size, 1 / size, first grid chunk, end of the grid,
    # bin size, 1 / bin size, last bin, grid chunks, bins per chunk) for k = 0 .. 8.
    # Axis by axis over the block: each inner loop has one store pattern and no branch,
    # so it runs in SIMD lanes.
    ok = True
    for i in range(m):
        chunks[i] = 0.0
        bins[i] = 0.0
    for d in range(block.shape[0]):
        size, inv, lo, hi = axes[0, d], axes[1, d], axes[2, d], axes[3, d]
        bin_size, inv_bin, top = axes[4, d], axes[5, d], axes[6, d]
        grid_chunks, bins_per_chunk = axes[7, d], axes[8, d]
        for i in range(m):
            c, b, placed = _axis_fast(block[d, i], size, inv, lo, hi, bin_size, inv_bin, top)
            ok = ok & placed
            chunks[i] = chunks[i] * grid_chunks + c
            bins[i] = bins[i] * bins_per_chunk + b
    return ok


@njit
def _assign_fast(
    positions: Positions, axes: F64, chunk_flat: I64, bin_flat: I64, counts: I64
) -> bool:
    # _assign where fast_axes holds, block by block. False when a row needs _assign,
    # which then redoes the rows: the outputs are then partly written, the counts
    # untouched (rows are counted once all are placed).
    n, dim = positions.shape
    as_cells = counts.shape[0] > 0
    n_bins = 1.0
    for d in range(dim):
        n_bins *= axes[8, d]
    block = np.empty((dim, _FAST_BLOCK))
    chunks = np.empty(_FAST_BLOCK)
    bins = np.empty(_FAST_BLOCK)
    for start in range(0, n, _FAST_BLOCK):
        m = min(_FAST_BLOCK, n - start)
        for d in range(dim):
            for i in range(m):
                block[d, i] = positions[start + i, d]
        if not _place_block(block, m, axes, chunks, bins):
            return False
        if as_cells:
            for i in range(m):
                chunk_flat[start + i] = np.int64(chunks[i] * n_bins + bins[i])
        else:
            for i in range(m):
                chunk_flat[start + i] = np.int64(chunks[i])
                bin_flat[start + i] = np.int64(bins[i])
    if as_cells:
        for i in range(n):
            counts[chunk_flat[i]] += 1
    return True


@njit
def _points_in_box(positions: Positions, lo: F64, hi: F64) -> npt.NDArray[np.bool_]:
    n, dim = positions.shape
    out = np.empty(n, np.bool_)
    for i in range(n):
        inside = True
        for d in range(dim):
            p = np.float64(positions[i, d])
            if not (lo[d] <= p < hi[d]):
                inside = False
                break
        out[i] = inside
    return out


# --------------------------------------------------------------------------- validation


def _positions(positions: npt.ArrayLike, name: str = "positions") -> Positions:
    arr = np.asarray(positions)
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise InvalidInputError(f"{name} must have shape (n, D) with D >= 1, got {arr.shape}")
    if arr.dtype.kind != "f" or arr.dtype.itemsize not in (4, 8):
        raise InvalidInputError(f"{name} must be float32 or float64, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))


def _vector(value: npt.ArrayLike, dim: int, name: str, *, positive: bool = True) -> F64:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf" or arr.shape != (dim,):
        raise InvalidInputError(f"{name} must be {dim} real numbers, got {value!r}")
    out = np.ascontiguousarray(arr, dtype=np.float64)
    if positive and not bool(np.all(np.isfinite(out) & (out > 0))):
        raise InvalidInputError(f"{name} must be finite and > 0, got {out.tolist()}")
    return out


def _int_vector(value: npt.ArrayLike, dim: int, name: str, minimum: int | None) -> I64:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" or arr.shape != (dim,):
        raise InvalidInputError(f"{name} must be {dim} integers, got {value!r}")
    out = np.ascontiguousarray(arr, dtype=np.int64)
    if minimum is not None and bool(np.any(out < minimum)):
        raise InvalidInputError(f"{name} must be >= {minimum}, got {out.tolist()}")
    return out


def raise_position_status(status: int, row: int, positions: Positions) -> None:
    """Raise the :class:`InvalidInputError` of a kernel's ``(status, row)``, if not OK."""
    if status == _OK:
        return
    value = positions[row].tolist()
    if status == _BAD_VALUE and not bool(np.all(np.isfinite(positions[row]))):
        raise InvalidInputError(f"positions[{row}] = {value} is not finite")
    if status == _BAD_VALUE:
        raise InvalidInputError(f"positions[{row}] = {value} is too large for its chunk shape")
    raise InvalidInputError(f"positions[{row}] = {value} falls outside the chunk grid")


# --------------------------------------------------------------------------- public API


def bounds_and_nonfinite(positions: npt.ArrayLike) -> tuple[F64, F64, int]:
    """Per-axis bounds of the finite rows and the number of non-finite values.

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 vertex coordinates; ``n`` may be 0.

    Returns
    -------
    lo, hi : numpy.ndarray
        ``(D,)`` float64 inclusive minimum and maximum over rows whose values are all
        finite (``+inf`` / ``-inf`` when there is no such row).
    n_nonfinite : int
        Number of NaN or infinite values in ``positions``.

    Raises
    ------
    InvalidInputError
        If ``positions`` is not a 2-d float32/float64 array.
    """
    pos = _positions(positions)
    parts = over_row_slices(lambda a, b: _bounds_and_nonfinite(pos[a:b]), pos.shape[0])
    lo = np.minimum.reduce([part[0] for part in parts])
    hi = np.maximum.reduce([part[1] for part in parts])
    return lo, hi, sum(int(part[2]) for part in parts)


def chunk_coords(positions: npt.ArrayLike, chunk_shape: npt.ArrayLike) -> I64:
    """Chunk index of every vertex on every axis (spec §5).

    ``c = floor(p / C)`` in float64, corrected so that ``c*C <= p < (c+1)*C`` holds in
    float64 arithmetic. A vertex exactly on ``N*C`` goes to chunk ``N``.

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 finite coordinates.
    chunk_shape
        ``(D,)`` chunk size per axis, finite and > 0.

    Returns
    -------
    numpy.ndarray
        ``(n, D)`` int64 chunk indices.

    Raises
    ------
    InvalidInputError
        On wrong dtype or shape, non-finite coordinates or ``|p / C| >= 2**52``.
    """
    pos = _positions(positions)
    shape = _vector(chunk_shape, pos.shape[1], "chunk_shape")
    out, status, row = _chunk_coords(pos, shape)
    raise_position_status(status, row, pos)
    return out


def bin_coords(
    positions: npt.ArrayLike,
    chunks: npt.ArrayLike,
    chunk_shape: npt.ArrayLike,
    bin_shape: npt.ArrayLike,
    bins_per_chunk: npt.ArrayLike,
) -> I64:
    """Local bin of every vertex inside its chunk (spec §5).

    Bin edges of chunk ``c`` are ``e_b = c*C + b*B`` for ``b < bpc`` and
    ``e_bpc = (c+1)*C`` (float64); the local bin is the largest ``b`` in
    ``[0, bpc-1]`` with ``e_b <= p``.

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 finite coordinates.
    chunks
        ``(n, D)`` integer chunk indices, normally from :func:`chunk_coords`.
    chunk_shape, bin_shape
        ``(D,)`` chunk and bin sizes, finite and > 0.
    bins_per_chunk
        ``(D,)`` integer number of bins per chunk on each axis, >= 1.

    Returns
    -------
    numpy.ndarray
        ``(n, D)`` int64 local bin indices in ``[0, bins_per_chunk)``.

    Raises
    ------
    InvalidInputError
        On wrong dtypes or shapes or non-finite coordinates.
    """
    pos = _positions(positions)
    dim = pos.shape[1]
    ch = int_array(chunks, 2, "chunks")
    if ch.shape != pos.shape:
        raise InvalidInputError(f"chunks shape {ch.shape} != positions shape {pos.shape}")
    out, status, row = _bin_coords(
        pos,
        ch,
        _vector(chunk_shape, dim, "chunk_shape"),
        _vector(bin_shape, dim, "bin_shape"),
        _int_vector(bins_per_chunk, dim, "bins_per_chunk", 1),
    )
    raise_position_status(status, row, pos)
    return out


def assign_chunks_and_bins(
    positions: npt.ArrayLike,
    chunk_shape: npt.ArrayLike,
    bin_shape: npt.ArrayLike,
    bins_per_chunk: npt.ArrayLike,
    grid_lo: npt.ArrayLike,
    grid_shape: npt.ArrayLike,
    *,
    out: tuple[I64, I64] | None = None,
) -> tuple[I64, I64]:
    """Flat chunk and bin index of every vertex in one pass (spec §5).

    Grids that allow it (:func:`fast_axes`) are assigned by a kernel that runs blocks of
    rows in SIMD lanes, with the same results.

    Agrees exactly with :func:`chunk_coords` followed by :func:`bin_coords`.

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 finite coordinates.
    chunk_shape, bin_shape
        ``(D,)`` chunk and bin sizes, finite and > 0.
    bins_per_chunk
        ``(D,)`` integer bins per chunk, >= 1.
    grid_lo
        ``(D,)`` integer chunk index of the first grid chunk (the chunk grid origin).
    grid_shape
        ``(D,)`` integer number of grid chunks per axis, >= 1.
    out
        Two int64 arrays of at least ``n`` elements to write the results into (their
        first ``n`` elements are returned), e.g. kept between the slices of a stream so
        that no fresh memory is touched per slice; new arrays by default.

    Returns
    -------
    chunk_flat : numpy.ndarray
        ``(n,)`` int64 C-order ravel of ``chunk - grid_lo`` over ``grid_shape``.
    bin_flat : numpy.ndarray
        ``(n,)`` int64 C-order ravel of the local bin over ``bins_per_chunk``.

    Raises
    ------
    InvalidInputError
        On wrong dtypes or shapes, non-finite coordinates, or a vertex whose chunk is
        outside ``[grid_lo, grid_lo + grid_shape)``.
    """
    pos, sizes, bpc, lo, gshape = grid_arguments(
        positions, chunk_shape, bin_shape, bins_per_chunk, grid_lo, grid_shape
    )
    chunk_flat, bin_flat = result_arrays(out, pos)

    def work(a: int, b: int) -> tuple[int, int]:
        outputs = (chunk_flat[a:b], bin_flat[a:b], _NO_COUNTS)
        status, row = assign_rows(pos[a:b], (sizes, bpc, lo, gshape), outputs)
        return status, row + a

    status, row = first_failure(over_row_slices(work, pos.shape[0]))
    raise_position_status(status, row, pos)
    return chunk_flat, bin_flat


def grid_arguments(
    positions: npt.ArrayLike,
    chunk_shape: npt.ArrayLike,
    bin_shape: npt.ArrayLike,
    bins_per_chunk: npt.ArrayLike,
    grid_lo: npt.ArrayLike,
    grid_shape: npt.ArrayLike,
) -> tuple[Positions, tuple[F64, F64], I64, I64, I64]:
    """The arguments of :func:`assign_chunks_and_bins`, checked: the positions, the chunk
    and bin sizes, the bins per chunk, and the grid's first chunk and shape.

    Raises
    ------
    InvalidInputError
        As :func:`assign_chunks_and_bins` (bad values are found by the kernels).
    """
    pos = _positions(positions)
    dim = pos.shape[1]
    bpc = _int_vector(bins_per_chunk, dim, "bins_per_chunk", 1)
    gshape = _int_vector(grid_shape, dim, "grid_shape", 1)
    if int(np.prod(gshape.astype(object))) >= 2**63 or int(np.prod(bpc.astype(object))) >= 2**63:
        raise InvalidInputError("grid_shape or bins_per_chunk has too many cells for int64")
    sizes = (_vector(chunk_shape, dim, "chunk_shape"), _vector(bin_shape, dim, "bin_shape"))
    return pos, sizes, bpc, _int_vector(grid_lo, dim, "grid_lo", None), gshape


def fast_axes(sizes: tuple[F64, F64], bpc: I64, grid_lo: I64, grid_shape: I64) -> F64 | None:
    """The per-axis table of the fast assignment, or None where it may not be exact.

    The fast kernel corrects its guesses of a chunk (``floor(p * (1 / C))``) and of a bin
    by one step each way, where :func:`_chunk_index` and :func:`_bin_index` walk as far
    as needed; the two agree when no guess is off by more than one. That holds when the
    grid's chunk indices stay below 2**39 (a row inside has ``|p / C| < 2**40``, which
    the kernel checks, and its chunk guess is then within 2**-11 of ``p / C``) and the
    float64 spacing at the grid's farthest coordinate is at most a sixteenth of a bin
    (so rounding moves a bin guess by less than one bin); and chunk and bin numbers
    must be exact in float64. Rows outside the grid, or non-finite, make the kernel
    give up and the exact one run.

    Parameters
    ----------
    sizes, bpc, grid_lo, grid_shape
        As :func:`grid_arguments` returns them.

    Returns
    -------
    numpy.ndarray or None
        ``(9, D)`` float64 rows: chunk size, its reciprocal, first grid chunk, end of the
        grid, bin size, its reciprocal, last bin, grid chunks, bins per chunk.
    """
    chunk, bin_ = sizes
    lo = grid_lo.astype(np.float64)
    hi = lo + grid_shape
    far = np.maximum(np.abs(lo), np.abs(hi))
    cells = float(np.prod(grid_shape.astype(np.float64))) * float(np.prod(bpc.astype(np.float64)))
    if far.max() >= _FAST_INDEX_LIMIT / 2 or cells >= 2.0**53:
        return None
    if np.any(np.spacing(far * chunk) * 16.0 > bin_):
        return None
    return np.array(
        [chunk, 1.0 / chunk, lo, hi, bin_, 1.0 / bin_, bpc - 1, grid_shape, bpc], dtype=np.float64
    )


def assign_rows(
    positions: Positions,
    grid: tuple[tuple[F64, F64], I64, I64, I64],
    outputs: tuple[I64, I64, I64],
) -> tuple[int, int]:
    """Assign rows as :func:`_assign` does, through the fast kernel when the grid allows
    it (:func:`fast_axes`) and every row suits it.

    Parameters
    ----------
    positions
        ``(n, D)`` rows, checked by :func:`grid_arguments`.
    grid
        ``(sizes, bins per chunk, first grid chunk, grid shape)`` from :func:`grid_arguments`.
    outputs
        ``(chunk_flat, bin_flat, counts)`` as :func:`_assign` takes them.

    Returns
    -------
    tuple of int
        The kernel status and the first bad row (-1 when all are placed).
    """
    chunk_flat, bin_flat, counts = outputs
    sizes, bpc, lo, gshape = grid
    axes = fast_axes(sizes, bpc, lo, gshape)
    if axes is not None and _assign_fast(positions, axes, chunk_flat, bin_flat, counts):
        return _OK, -1
    status, row = _assign(positions, *sizes, bpc, lo, gshape, chunk_flat, bin_flat, counts)
    return int(status), int(row)


def result_arrays(out: tuple[I64, I64] | None, pos: np.ndarray) -> tuple[I64, I64]:
    """The first ``n`` elements of the caller's two int64 arrays, or two new arrays, for
    the ``n`` rows of ``pos``."""
    n = pos.shape[0]
    if out is None:
        return np.empty(n, np.int64), np.empty(n, np.int64)
    for array in out:
        if array.dtype != np.int64 or array.ndim != 1 or array.shape[0] < n:
            raise InvalidInputError(f"out arrays must be int64 of length >= {n}")
        if not array.flags.c_contiguous or not array.flags.writeable:
            raise InvalidInputError("out arrays must be C-contiguous and writeable")
        if np.may_share_memory(array, pos):
            raise InvalidInputError("out arrays must not overlap the positions")
    if np.may_share_memory(out[0], out[1]):
        raise InvalidInputError("the two out arrays must not overlap")
    return out[0][:n], out[1][:n]


def first_failure(results: list[tuple[int, int]]) -> tuple[int, int]:
    """The first ``(status, row)`` of row slices in order that is not OK."""
    return next(((s, r) for s, r in results if s != _OK), (_OK, -1))


def points_in_box(
    positions: npt.ArrayLike, lo: npt.ArrayLike, hi: npt.ArrayLike
) -> npt.NDArray[np.bool_]:
    """Half-open box membership ``lo_d <= p_d < hi_d`` for all axes (spec §8).

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 coordinates (compared as float64).
    lo, hi
        ``(D,)`` box bounds; may be ``-inf`` / ``+inf``.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` bool mask of the vertices inside the box. NaN coordinates are outside.

    Raises
    ------
    InvalidInputError
        On wrong dtypes or shapes, NaN bounds, or ``lo > hi`` on some axis.
    """
    pos = _positions(positions)
    dim = pos.shape[1]
    lo64 = _vector(lo, dim, "lo", positive=False)
    hi64 = _vector(hi, dim, "hi", positive=False)
    if bool(np.any(np.isnan(lo64) | np.isnan(hi64))):
        raise InvalidInputError(f"box bounds must not be NaN, got lo={lo64} hi={hi64}")
    if bool(np.any(lo64 > hi64)):
        raise InvalidInputError(f"box lo must be <= hi on every axis, got lo={lo64} hi={hi64}")
    return _points_in_box(pos, lo64, hi64)
