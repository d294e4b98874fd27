"""Box queries over point clouds: the row runs a box needs, the row blocks holding them, and
the rows the exact half-open test keeps (spec §8; arrays in, arrays out).

The steps of a box query:

* :func:`box_chunks`: the occupied chunks the box meets, and those it covers whole.
* :func:`box_runs`: per chunk, the rows of the bins the box meets (from the dense per-bin
  fragment ranges, spec §6.6), as merged runs flagged with the faces of the box that cut
  their bins (none for the bins it covers and the chunks it covers whole).
* :func:`block_slots`: the distinct row blocks of ``R`` rows those runs touch, in order,
  and where each run's rows start once the blocks are decoded back to back.
* :func:`slot_spans`: where the stored row blocks of some of those slots lie in their
  shards, as the fewest byte spans (blocks of a chunk stored back to back are one span).
* :func:`turn_spans`: those spans cut by groups of blocks, so that a local read can be
  shared by two threads, each reading and decoding a group at a time.
* :func:`select_rows`: which decoded rows the query returns: the rows of each run that
  pass the tests of the faces cutting it (``lo <= p`` or ``p < hi`` along an axis,
  compared as float64), so every row returned has ``lo <= p < hi`` on every axis.
* :func:`slots_holding`: the slots holding some of the rows kept (the blocks the other
  columns decode).
* :func:`take_rows`: the kept rows of a column, gathered.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.binning import bin_edges
from zarr_vectors.kernels.kernel_args import as_int64

__all__ = [
    "block_slots",
    "box_chunks",
    "box_runs",
    "select_rows",
    "slot_spans",
    "slots_holding",
    "take_rows",
    "turn_spans",
]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bool = npt.NDArray[np.bool_]


def box_chunks(coords: I64, origin: I64, chunk_shape: F64, lo: F64, hi: F64) -> tuple[I64, Bool]:
    """The chunks the box ``[lo, hi)`` meets, and which of them it covers whole.

    Chunk ``c`` spans ``[(c + origin) * C, (c + origin + 1) * C)`` on every axis (spec §5).

    Parameters
    ----------
    coords
        ``(k, D)`` zarr chunk indices.
    origin
        ``(D,)`` ``chunk_grid_origin``.
    chunk_shape
        ``(D,)`` float64 ``C``.
    lo, hi
        ``(D,)`` float64 box bounds (possibly infinite).

    Returns
    -------
    picked, covered
        Positions in ``coords`` of the chunks the box meets (ascending), and whether it
        covers each of them.
    """
    # One layout for every caller: occupied chunk coordinates come C- or F-ordered, and
    # each layout was a separate compilation (a first query after zv.warmup() compiled).
    return _box_chunks(as_int64(coords), origin, chunk_shape, lo, hi)


@njit
def _box_chunks(coords: I64, origin: I64, chunk_shape: F64, lo: F64, hi: F64) -> tuple[I64, Bool]:
    k, ndim = coords.shape
    picked = np.empty(k, np.int64)
    covered = np.empty(k, np.bool_)
    m = 0
    for i in range(k):
        meets = True
        covers = True
        for d in range(ndim):
            lower = np.float64(coords[i, d] + origin[d]) * chunk_shape[d]
            upper = np.float64(coords[i, d] + origin[d] + 1) * chunk_shape[d]
            meets = meets and lower < hi[d] and lo[d] < upper
            covers = covers and lo[d] <= lower and upper <= hi[d]
        if meets:
            picked[m], covered[m] = i, covers
            m += 1
    return picked[:m], covered[:m]


def box_runs(
    cells: F64,
    chunk_shape: F64,
    bin_shape: F64,
    bins: I64,
    lo: F64,
    hi: F64,
    covered: Bool,
    counts: I64,
    table_row: I64,
    starts: I64,
    sizes: I64,
) -> tuple[I64, I64, I64, I64, I64]:
    """Row runs of the bins the box ``[lo, hi)`` meets, chunk by chunk, in row order.

    Bin ``j`` of a chunk along axis ``d`` spans ``[e_j, e_{j+1})`` with
    ``e_j = c*C_d + j*B_d`` (``j < bins_d``) and ``e_{bins_d} = (c+1)*C_d`` (spec §5, the
    edges of :meth:`~zarr_vectors.format.grid.ChunkGrid.chunk_bin_edges`). A bin is met when
    it overlaps the box on every axis. Along an axis, its points can lie below the box only
    when ``e_j < lo_d`` (the box's lower face cuts it) and above only when ``hi_d < e_{j+1}``;
    a run records the faces that cut its bins, and only those are tested (the points of a
    bin lie inside its edges, spec §5).

    Parameters
    ----------
    cells
        ``(k, D)`` float64 absolute chunk indices ``c`` (zarr index plus grid origin).
    chunk_shape, bin_shape
        ``(D,)`` float64 ``C`` and ``B``.
    bins
        ``(D,)`` bins per chunk per axis.
    lo, hi
        ``(D,)`` float64 box bounds.
    covered
        ``(k,)`` chunks the box covers whole: one untested run ``[0, counts[i])``.
    counts
        ``(k,)`` rows of each chunk.
    table_row
        ``(k,)`` the row of ``starts`` and ``sizes`` holding the chunk's bins (ignored for
        covered chunks).
    starts, sizes
        ``(t, prod(bins))`` first row and row count of every bin (C order).

    Returns
    -------
    chunk, start, stop, faces_lo, faces_hi
        ``(m,)`` per run: the chunk's position in ``cells``, its rows ``[start, stop)``, and
        bit masks of the axes ``d`` whose test ``lo_d <= p_d`` (``faces_lo``) or
        ``p_d < hi_d`` (``faces_hi``) its rows need (zero: every row is kept). Runs are
        non-empty, in chunk order and, within a chunk, ascending and non-overlapping;
        adjacent runs with the same masks are merged.
    """
    return _box_runs(
        cells, chunk_shape, bin_shape, bins, lo, hi, covered, counts, table_row, starts, sizes
    )


@njit
def _axis_sides(
    cells: F64, chunk_shape: F64, bin_shape: F64, bins: I64, lo: F64, hi: F64, i: int
) -> tuple[Bool, Bool, Bool]:
    """``(D, max bins)`` flags of the bins of chunk ``i`` along each axis: met, and cut by
    the box's lower face (``e_j < lo``) or by its upper face (``hi < e_{j+1}``)."""
    ndim = bins.shape[0]
    width = 0
    for d in range(ndim):
        width = max(width, bins[d])
    meets = np.zeros((ndim, width), np.bool_)
    cut_lo = np.zeros((ndim, width), np.bool_)
    cut_hi = np.zeros((ndim, width), np.bool_)
    for d in range(ndim):
        for j in range(bins[d]):
            e0, e1 = bin_edges(cells[i, d], chunk_shape[d], bin_shape[d], j, bins[d])
            meets[d, j] = e0 < hi[d] and lo[d] < e1
            cut_lo[d, j] = not lo[d] <= e0
            cut_hi[d, j] = not e1 <= hi[d]
    return meets, cut_lo, cut_hi


@njit
def _box_runs(
    cells: F64,
    chunk_shape: F64,
    bin_shape: F64,
    bins: I64,
    lo: F64,
    hi: F64,
    covered: Bool,
    counts: I64,
    table_row: I64,
    starts: I64,
    sizes: I64,
) -> tuple[I64, I64, I64, I64, I64]:
    k, ndim = cells.shape
    n_bins = sizes.shape[1]
    cap = 0
    for i in range(k):
        cap += 1 if covered[i] else n_bins
    out = np.empty((5, cap), np.int64)  # chunk, start, stop, lower faces, upper faces
    found = np.empty((4, n_bins), np.int64)  # start, stop, lower faces, upper faces
    index = np.empty(ndim, np.int64)
    m = 0
    for i in range(k):
        if covered[i]:
            if counts[i] > 0:
                out[0, m], out[1, m], out[2, m], out[3, m], out[4, m] = i, 0, counts[i], 0, 0
                m += 1
            continue
        meets, cut_lo, cut_hi = _axis_sides(cells, chunk_shape, bin_shape, bins, lo, hi, i)
        row = table_row[i]
        n = 0
        ordered = True
        for f in range(n_bins):
            rest = f
            for d in range(ndim - 1, -1, -1):
                index[d] = rest % bins[d]
                rest //= bins[d]
            met = True
            faces_lo = np.int64(0)
            faces_hi = np.int64(0)
            for d in range(ndim):
                met = met and meets[d, index[d]]
                faces_lo |= np.int64(cut_lo[d, index[d]]) << d
                faces_hi |= np.int64(cut_hi[d, index[d]]) << d
            if not met or sizes[row, f] <= 0:
                continue
            found[0, n], found[1, n] = starts[row, f], starts[row, f] + sizes[row, f]
            found[2, n], found[3, n] = faces_lo, faces_hi
            if n and found[0, n] < found[0, n - 1]:
                ordered = False
            n += 1
        # int() and bool(): literal 0 and True arguments compiled _stable_order twice
        order = _stable_order(found[0], int(n), bool(ordered))
        for q in range(n):
            j = order[q]
            a, b, t_lo, t_hi = found[0, j], found[1, j], found[2, j], found[3, j]
            if (
                m
                and out[0, m - 1] == i
                and out[2, m - 1] == a
                and out[3, m - 1] == t_lo
                and out[4, m - 1] == t_hi
            ):
                out[2, m - 1] = b
                continue
            out[0, m], out[1, m], out[2, m], out[3, m], out[4, m] = i, a, b, t_lo, t_hi
            m += 1
    return (
        out[0, :m].copy(),
        out[1, :m].copy(),
        out[2, :m].copy(),
        out[3, :m].copy(),
        out[4, :m].copy(),
    )


@njit
def _stable_order(keys: I64, n: int, ordered: bool) -> I64:
    """``np.argsort(keys[:n], kind="stable")`` (``arange(n)`` when ``ordered``), by a
    bottom-up merge sort: numba's own ``argsort`` and ``arange`` took 2 s to compile."""
    order = np.empty(n, np.int64)
    for i in range(n):
        order[i] = i
    if ordered:
        return order
    spare = np.empty(n, np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j >= hi or (i < mid and keys[order[i]] <= keys[order[j]]):
                    spare[k] = order[i]
                    i += 1
                else:
                    spare[k] = order[j]
                    j += 1
        order, spare = spare, order
        width *= 2
    return order


def block_slots(chunk: I64, start: I64, stop: I64, rows_per_block: int) -> tuple[I64, I64, I64]:
    """The row blocks the runs touch, and where each run's rows land once they are decoded.

    Parameters
    ----------
    chunk, start, stop
        Runs as :func:`box_runs` returns them (non-empty; ascending and non-overlapping
        within a chunk, chunks in order).
    rows_per_block
        ``R``.

    Returns
    -------
    slot_chunk, slot_block, run_row
        Per distinct (chunk, block) in run order, its chunk and block number; per run, the
        row of its first row in the blocks decoded back to back (slot ``s`` holds rows
        ``[s*R, (s+1)*R)``).
    """
    return _block_slots(chunk, start, stop, rows_per_block)


@njit
def _block_slots(chunk: I64, start: I64, stop: I64, r: int) -> tuple[I64, I64, I64]:
    m = chunk.shape[0]
    cap = 0
    for q in range(m):
        cap += (stop[q] - 1) // r - start[q] // r + 1
    slot_chunk = np.empty(cap, np.int64)
    slot_block = np.empty(cap, np.int64)
    run_row = np.empty(m, np.int64)
    n = 0
    for q in range(m):
        first, last = start[q] // r, (stop[q] - 1) // r
        shared = n > 0 and slot_chunk[n - 1] == chunk[q] and slot_block[n - 1] == first
        run_row[q] = ((n - 1) if shared else n) * r + start[q] - first * r
        for b in range(first + 1 if shared else first, last + 1):
            slot_chunk[n], slot_block[n] = chunk[q], b
            n += 1
    return slot_chunk[:n], slot_block[:n], run_row


def select_rows(
    positions: npt.NDArray[Any],
    run_row: I64,
    run_len: I64,
    faces_lo: I64,
    faces_hi: I64,
    lo: F64,
    hi: F64,
    out: I64 | None = None,
) -> I64:
    """Rows of ``positions`` the query keeps, ascending within each run, runs in order.

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 decoded rows.
    run_row, run_len
        ``(m,)`` first row (in ``positions``) and length of every run.
    faces_lo, faces_hi
        ``(m,)`` bit masks (see :func:`box_runs`): a row of the run is kept when
        ``lo_d <= p_d`` on every axis ``d`` of ``faces_lo`` and ``p_d < hi_d`` on every
        axis of ``faces_hi`` (compared as float64; NaN fails every test).
    lo, hi
        ``(D,)`` float64 box bounds.
    out
        Where to write the rows (at least ``run_len.sum()`` int64 entries); default a new
        array.

    Returns
    -------
    numpy.ndarray
        int64 row numbers into ``positions`` (the start of ``out`` when given).
    """
    if out is None:
        out = np.empty(int(run_len.sum()), dtype=np.int64)
    positions = np.ascontiguousarray(positions)
    flat = positions.reshape(-1)
    n = _select_rows(positions, flat, run_row, run_len, faces_lo, faces_hi, lo, hi, out)
    if n < 0:
        raise InvalidInputError("select_rows: out is shorter than the runs")
    return out[:n]


_TILE = 2048
"""Rows tested per vectorised step of :func:`_select_run_3d`."""


@njit
def _select_rows(
    positions: npt.NDArray[Any],
    flat: npt.NDArray[Any],
    run_row: I64,
    run_len: I64,
    faces_lo: I64,
    faces_hi: I64,
    lo: F64,
    hi: F64,
    out: I64,
) -> int:
    total = 0
    for q in range(run_row.shape[0]):
        total += run_len[q]
    if total > out.shape[0]:
        return -1
    ndim = positions.shape[1]
    axes = np.empty(2 * ndim, np.int64)
    bounds = np.empty(2 * ndim, np.float64)
    lower = np.empty(2 * ndim, np.bool_)
    mask = np.empty(_TILE if ndim == 3 else 0, np.bool_)
    n: int = np.int64(0)  # type: ignore[assignment]  # a literal 0 compiled _select_run_3d twice
    for q in range(run_row.shape[0]):
        first, stop = run_row[q], run_row[q] + run_len[q]
        if ndim == 3 and (faces_lo[q] or faces_hi[q]):
            n = _select_run_3d(flat, first, stop, faces_lo[q], faces_hi[q], lo, hi, mask, out, n)
            continue
        checks = 0
        for d in range(ndim):
            if faces_lo[q] >> d & 1:
                axes[checks], bounds[checks], lower[checks] = d, lo[d], True
                checks += 1
            if faces_hi[q] >> d & 1:
                axes[checks], bounds[checks], lower[checks] = d, hi[d], False
                checks += 1
        if checks == 0:
            for i in range(first, stop):
                out[n] = i
                n += 1
        elif checks == 1:
            d, bound = axes[0], bounds[0]
            if lower[0]:
                for i in range(first, stop):
                    out[n] = i
                    n += bound <= np.float64(positions[i, d])
            else:
                for i in range(first, stop):
                    out[n] = i
                    n += np.float64(positions[i, d]) < bound
        else:
            for i in range(first, stop):
                inside = True
                for c in range(checks):
                    p = np.float64(positions[i, axes[c]])
                    inside &= (bounds[c] <= p) if lower[c] else (p < bounds[c])
                out[n] = i
                n += inside
    return n


@njit
def _select_run_3d(
    flat: npt.NDArray[Any],
    first: int,
    stop: int,
    faces_lo: int,
    faces_hi: int,
    lo: F64,
    hi: F64,
    mask: Bool,
    out: I64,
    n: int,
) -> int:
    """:func:`_select_rows` of one run of 3-D rows (``flat`` is the rows' C-order
    values), a tile at a time: the tests in a loop the compiler vectorises, then the kept
    rows. An axis whose face is not tested passes (even NaN, as in the general loop)."""
    a0, a1, a2 = lo[0], lo[1], lo[2]
    b0, b1, b2 = hi[0], hi[1], hi[2]
    u0, u1, u2 = (faces_lo & 1) == 0, (faces_lo & 2) == 0, (faces_lo & 4) == 0
    v0, v1, v2 = (faces_hi & 1) == 0, (faces_hi & 2) == 0, (faces_hi & 4) == 0
    for t0 in range(first, stop, _TILE):
        t1 = min(t0 + _TILE, stop)
        tile = flat[3 * t0 : 3 * t1]  # indexed from 0 with a constant stride: vectorised
        for j in range(t1 - t0):
            x = np.float64(tile[3 * j])
            y = np.float64(tile[3 * j + 1])
            z = np.float64(tile[3 * j + 2])
            mask[j] = (
                ((a0 <= x) | u0)
                & ((x < b0) | v0)
                & ((a1 <= y) | u1)
                & ((y < b1) | v1)
                & ((a2 <= z) | u2)
                & ((z < b2) | v2)
            )
        for j in range(t1 - t0):
            out[n] = t0 + j
            n += mask[j]
    return n


def slot_spans(
    slot_chunk: I64, slot_block: I64, wanted: I64, first: I64, entries: I64
) -> tuple[I64, I64, I64, I64, I64, int]:
    """The byte spans holding the stored row blocks of slots ``wanted``, read back to back.

    Parameters
    ----------
    slot_chunk, slot_block
        ``(s,)`` per slot, its chunk (a row of ``first``) and block number.
    wanted
        ``(k,)`` slots to fetch, ascending.
    first
        ``(c + 1,)`` ascending: the entries of chunk ``i``'s blocks are rows
        ``first[i] : first[i + 1]`` of ``entries``.
    entries
        ``(t, 2)`` shard index entries ``(offset, nbytes)`` of every block; negative for a
        block not stored.

    Returns
    -------
    starts, lengths, span_chunk, span_start, span_stop, bad
        Per wanted slot, where its stored block lies once the spans are read back to back;
        per span, its chunk and bytes ``[span_start, span_stop)`` of the chunk's shard
        (one span per run of blocks of a chunk stored back to back, in slot order); and
        the position in ``wanted`` of the first slot whose block is not stored (its
        entry is negative, or its block is beyond the chunk's entries), else -1 (the
        other outputs are then empty).
    """
    return _slot_spans(slot_chunk, slot_block, wanted, first, entries)


@njit
def _slot_spans(
    slot_chunk: I64, slot_block: I64, wanted: I64, first: I64, entries: I64
) -> tuple[I64, I64, I64, I64, I64, int]:
    k = wanted.shape[0]
    starts = np.empty(k, np.int64)
    lengths = np.empty(k, np.int64)
    span_chunk = np.empty(k, np.int64)
    span_start = np.empty(k, np.int64)
    span_stop = np.empty(k, np.int64)
    m = 0
    total = 0
    for i in range(k):
        s = wanted[i]
        c, b = slot_chunk[s], slot_block[s]
        row = first[c] + b
        if b < 0 or row >= first[c + 1]:
            return starts[:0], lengths[:0], span_chunk[:0], span_start[:0], span_stop[:0], i
        offset, nbytes = entries[row, 0], entries[row, 1]
        if offset < 0 or nbytes < 0:
            return starts[:0], lengths[:0], span_chunk[:0], span_start[:0], span_stop[:0], i
        if m == 0 or span_chunk[m - 1] != c or span_stop[m - 1] != offset:
            span_chunk[m], span_start[m], span_stop[m] = c, offset, offset
            m += 1
        starts[i] = total
        lengths[i] = nbytes
        span_stop[m - 1] = offset + nbytes
        total += nbytes
    return starts, lengths, span_chunk[:m], span_start[:m], span_stop[:m], -1


def turn_spans(
    starts: I64,
    lengths: I64,
    span_chunk: I64,
    span_start: I64,
    span_stop: I64,
    per_turn: int,
) -> tuple[I64, I64, I64, I64]:
    """The spans of :func:`slot_spans` cut into turns of ``per_turn`` blocks each.

    Turn ``t`` holds blocks ``[t * per_turn, (t + 1) * per_turn)`` (the last fewer), which
    lie back to back in the read buffer from ``starts[t * per_turn]``. Its bytes are the
    pieces ``turn_piece[t] : turn_piece[t + 1]``: bytes ``[piece_start, piece_stop)`` of
    the shard of chunk ``piece_chunk``, the spans the turn's blocks lie in, the first and
    last cut at the turn's ends. Read back to back, the pieces of every turn in turn order
    are the spans in order.

    Parameters
    ----------
    starts, lengths
        ``(k,)`` where each block lies in the buffer the spans are read into, back to back
        (as :func:`slot_spans` returns them).
    span_chunk, span_start, span_stop
        ``(m,)`` the spans (as :func:`slot_spans` returns them).
    per_turn
        Blocks per turn, at least 1.

    Returns
    -------
    turn_piece, piece_chunk, piece_start, piece_stop : numpy.ndarray
        ``(turns + 1,)`` int64 offsets into the ``(p,)`` int64 pieces.

    Raises
    ------
    InvalidInputError
        When ``per_turn`` is below 1, or the blocks do not lie back to back in the spans.
    """
    if per_turn < 1:
        raise InvalidInputError(f"per_turn must be at least 1, not {per_turn}")
    turn_piece, chunk, start, stop, ok = _turn_spans(
        starts, lengths, span_chunk, span_start, span_stop, per_turn
    )
    if not ok:
        raise InvalidInputError("turn_spans: the blocks do not lie back to back in the spans")
    return turn_piece, chunk, start, stop


@njit
def _turn_spans(
    starts: I64,
    lengths: I64,
    span_chunk: I64,
    span_start: I64,
    span_stop: I64,
    per_turn: int,
) -> tuple[I64, I64, I64, I64, bool]:
    k, m = starts.shape[0], span_chunk.shape[0]
    turns = (k + per_turn - 1) // per_turn
    turn_piece = np.zeros(turns + 1, np.int64)
    chunk = np.empty(m + turns, np.int64)
    start = np.empty(m + turns, np.int64)
    stop = np.empty(m + turns, np.int64)
    p, s, base, pos = 0, 0, 0, 0  # span s lies from ``base`` in the buffer
    for t in range(turns):
        turn_piece[t] = p
        last = min(k, (t + 1) * per_turn) - 1
        end = starts[last] + lengths[last]
        if starts[t * per_turn] != pos or end < pos:
            return turn_piece, chunk[:0], start[:0], stop[:0], False
        while pos < end:
            while s < m and base + span_stop[s] - span_start[s] <= pos:
                base += span_stop[s] - span_start[s]
                s += 1
            if s == m:
                return turn_piece, chunk[:0], start[:0], stop[:0], False
            upto = min(end, base + span_stop[s] - span_start[s])
            chunk[p] = span_chunk[s]
            start[p] = span_start[s] + pos - base
            stop[p] = span_start[s] + upto - base
            p += 1
            pos = upto
    turn_piece[turns] = p
    return turn_piece, chunk[:p], start[:p], stop[:p], True


def slots_holding(rows: I64, n_slots: int, rows_per_block: int) -> I64:
    """The slots (of ``rows_per_block`` rows each, fewer than ``n_slots``) holding any of
    the ascending ``rows``, ascending."""
    return _slots_holding(rows, n_slots, rows_per_block)


@njit
def _slots_holding(rows: I64, n_slots: int, r: int) -> I64:
    out = np.empty(n_slots, np.int64)
    m = 0
    first = 0  # rows before ``first`` lie in earlier slots
    for s in range(n_slots):
        # the first row at or past the slot's end, by bisection (numba's np.searchsorted
        # added 0.66 s to the kernel's compile time)
        stop, hi = first, rows.shape[0]
        while stop < hi:
            mid = (stop + hi) >> 1
            if rows[mid] < (s + 1) * r:
                stop = mid + 1
            else:
                hi = mid
        if stop > first:
            out[m] = s
            m += 1
            first = stop
    return out[:m]


def take_rows(rows: npt.NDArray[Any], keep: I64) -> npt.NDArray[Any]:
    """``numpy.take(rows, keep, axis=0)``, by a kernel for rows of three values (3-D
    positions: about twice as fast), else by numpy.

    Raises
    ------
    IndexError
        When a row number is out of range.
    """
    if rows.ndim != 2 or rows.shape[1] != 3 or not rows.flags.c_contiguous:
        return np.take(rows, keep, axis=0)
    out = np.empty((keep.shape[0], 3), dtype=rows.dtype)
    if _take_rows3(rows, keep, out) >= 0:
        raise IndexError(f"take_rows: a row number is outside [0, {rows.shape[0]})")
    return out


@njit
def _take_rows3(rows: npt.NDArray[Any], keep: I64, out: npt.NDArray[Any]) -> int:
    n = rows.shape[0]
    for j in range(keep.shape[0]):
        i = keep[j]
        if i < 0 or i >= n:
            return j
        out[j, 0] = rows[i, 0]
        out[j, 1] = rows[i, 1]
        out[j, 2] = rows[i, 2]
    return -1
