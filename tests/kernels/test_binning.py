"""Kernels of zarr_vectors.kernels.binning and .sorting against their numpy twins and spec rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.kernels import naive
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels import (
    _threads,
    assign_chunks_and_bins,
    bin_coords,
    bounds_and_nonfinite,
    chunk_and_bin_destinations,
    chunk_coords,
    counting_sort,
    destinations_of_positions,
    points_in_box,
    scatter_rows,
    sort_by_chunk_and_bin,
)
from zarr_vectors.kernels import binning as kb
from zarr_vectors.kernels import sorting as ks

Array = npt.NDArray[Any]

# (chunk size, bin size) per axis; non-dyadic sizes exercise the float64 corrections.
SHAPES = [
    (0.3, 0.1),
    (0.7, 0.35),
    (1e-3, 2.5e-4),
    (1e-3, 1e-3),
    (12.5, 2.5),
    (1.0, 0.25),
    (0.1, 0.1 / 3),
    (100.0, 12.5),
]
CENTERS = [0.0, -7.3, 1000.0, 5.0e5, -4.2e6]  # 5e5: UTM easting
METHODS = ["dense+fused", "dense+two_level", "sparse+fused", "sparse+two_level"]
SETTINGS = settings(max_examples=60, deadline=None)
FEWER = settings(SETTINGS, max_examples=examples(20, 60))
"""Properties that check a whole pipeline per example: a part of the sample by default."""


class Cloud:
    """Random vertices crowded onto chunk and bin edges."""

    def __init__(self, positions: Array, chunk: Array, bin_: Array, bpc: Array) -> None:
        self.positions = positions
        self.chunk = chunk
        self.bin = bin_
        self.bpc = bpc


@st.composite
def clouds(draw: st.DrawFn, max_n: int = 80) -> Cloud:
    dim = draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    n = draw(st.integers(0, max_n))
    pairs = [draw(st.sampled_from(SHAPES)) for _ in range(dim)]
    center = draw(st.sampled_from(CENTERS))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    chunk = np.array([c for c, _ in pairs])
    bin_ = np.array([b for _, b in pairs])
    bpc = np.round(chunk / bin_).astype(np.int64)
    assert np.all(np.abs(chunk / bin_ - bpc) <= 1e-9)
    k = rng.integers(-6, 6, size=(n, dim)) + np.round(center / chunk)
    b = rng.integers(0, bpc, size=(n, dim))
    edge = (k * chunk + b * bin_).astype(dtype)  # bin edge e_b (b = 0: chunk edge)
    below = np.nextafter(edge, dtype(-np.inf))
    above = np.nextafter(edge, dtype(np.inf))
    inside = (k * chunk + rng.uniform(0, 1, size=(n, dim)) * chunk).astype(dtype)
    kind = rng.integers(0, 4, size=(n, dim))
    positions = np.choose(kind, [edge, below, above, inside]).astype(dtype)
    return Cloud(positions, chunk, bin_, bpc)


def grid_of(chunks: Array, dim: int) -> tuple[Array, Array]:
    if len(chunks) == 0:
        return np.zeros(dim, np.int64), np.ones(dim, np.int64)
    lo = chunks.min(axis=0) - 1
    return lo, chunks.max(axis=0) - lo + 2


# --------------------------------------------------------------------------- chunk / bin


@SETTINGS
@given(clouds())
def test_chunk_coords_matches_naive_and_half_open(cloud: Cloud) -> None:
    got = chunk_coords(cloud.positions, cloud.chunk)
    np.testing.assert_array_equal(got, naive.chunk_coords(cloud.positions, cloud.chunk))
    assert got.dtype == np.int64
    assert got.shape == cloud.positions.shape
    p = cloud.positions.astype(np.float64)
    assert np.all(got * cloud.chunk <= p)
    assert np.all(p < (got + 1).astype(np.float64) * cloud.chunk)


@SETTINGS
@given(clouds())
def test_bin_coords_matches_naive_and_half_open(cloud: Cloud) -> None:
    chunks = chunk_coords(cloud.positions, cloud.chunk)
    got = bin_coords(cloud.positions, chunks, cloud.chunk, cloud.bin, cloud.bpc)
    want = naive.bin_coords(cloud.positions, chunks, cloud.chunk, cloud.bin, cloud.bpc)
    np.testing.assert_array_equal(got, want)
    assert np.all((got >= 0) & (got < cloud.bpc))
    p = cloud.positions.astype(np.float64)
    base = chunks.astype(np.float64) * cloud.chunk
    lower = base + got.astype(np.float64) * cloud.bin
    upper = np.where(
        got + 1 == cloud.bpc,
        (chunks + 1).astype(np.float64) * cloud.chunk,
        base + (got + 1).astype(np.float64) * cloud.bin,
    )
    assert np.all(lower <= p)
    assert np.all(p < upper)


@SETTINGS
@given(clouds())
def test_assign_matches_chunk_and_bin_coords(cloud: Cloud) -> None:
    dim = cloud.positions.shape[1]
    chunks = chunk_coords(cloud.positions, cloud.chunk)
    bins = bin_coords(cloud.positions, chunks, cloud.chunk, cloud.bin, cloud.bpc)
    lo, shape = grid_of(chunks, dim)
    chunk_flat, bin_flat = assign_chunks_and_bins(
        cloud.positions, cloud.chunk, cloud.bin, cloud.bpc, lo, shape
    )
    want = naive.assign_chunks_and_bins(
        cloud.positions, cloud.chunk, cloud.bin, cloud.bpc, lo, shape
    )
    np.testing.assert_array_equal(chunk_flat, want[0])
    np.testing.assert_array_equal(bin_flat, want[1])
    np.testing.assert_array_equal(np.array(np.unravel_index(chunk_flat, shape)).T + lo, chunks)
    np.testing.assert_array_equal(np.array(np.unravel_index(bin_flat, cloud.bpc)).T, bins)


@SETTINGS
@given(clouds(), st.integers(0, 5))
def test_assign_into_longer_out_arrays(cloud: Cloud, spare: int) -> None:
    chunks = chunk_coords(cloud.positions, cloud.chunk)
    lo, shape = grid_of(chunks, cloud.positions.shape[1])
    n = cloud.positions.shape[0]
    out = (np.full(n + spare, -7, np.int64), np.full(n + spare, -7, np.int64))
    got = assign_chunks_and_bins(
        cloud.positions, cloud.chunk, cloud.bin, cloud.bpc, lo, shape, out=out
    )
    want = naive.assign_chunks_and_bins(
        cloud.positions, cloud.chunk, cloud.bin, cloud.bpc, lo, shape
    )
    for array, values, expected in zip(out, got, want, strict=True):
        assert n == 0 or np.shares_memory(values, array)
        np.testing.assert_array_equal(values, expected)
        assert (array[n:] == -7).all()


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ((np.zeros(2, np.int64), np.zeros(3, np.int64)), "length >= 3"),
        ((np.zeros(3, np.int32), np.zeros(3, np.int64)), "int64"),
        ((np.zeros(6, np.int64)[::2], np.zeros(3, np.int64)), "C-contiguous"),
        (tuple([np.zeros(3, np.int64)] * 2), "overlap"),
    ],
)
def test_assign_rejects_unusable_out_arrays(out: tuple[np.ndarray, ...], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        assign_chunks_and_bins(np.zeros((3, 2)), [1, 1], [1, 1], [1, 1], [0, 0], [1, 1], out=out)


def test_assign_rejects_out_arrays_over_the_positions() -> None:
    positions = np.zeros((4, 2))
    alias = positions.reshape(-1).view(np.int64)
    with pytest.raises(InvalidInputError, match="overlap the positions"):
        assign_chunks_and_bins(
            positions, [1, 1], [1, 1], [1, 1], [0, 0], [1, 1], out=(alias[:4], alias[4:])
        )


@SETTINGS
@given(clouds())
def test_float32_equals_float64_conversion(cloud: Cloud) -> None:
    p32 = cloud.positions.astype(np.float32)
    p64 = p32.astype(np.float64)
    c32 = chunk_coords(p32, cloud.chunk)
    np.testing.assert_array_equal(c32, chunk_coords(p64, cloud.chunk))
    np.testing.assert_array_equal(
        bin_coords(p32, c32, cloud.chunk, cloud.bin, cloud.bpc),
        bin_coords(p64, c32, cloud.chunk, cloud.bin, cloud.bpc),
    )
    lo, shape = grid_of(c32, p32.shape[1])
    a32 = assign_chunks_and_bins(p32, cloud.chunk, cloud.bin, cloud.bpc, lo, shape)
    a64 = assign_chunks_and_bins(p64, cloud.chunk, cloud.bin, cloud.bpc, lo, shape)
    np.testing.assert_array_equal(a32[0], a64[0])
    np.testing.assert_array_equal(a32[1], a64[1])


@pytest.mark.parametrize("size", [0.3, 0.7, 0.1, 1e-3, 12.5, 1.0])
@pytest.mark.parametrize("n_chunk", [-1000, -7, -3, -1, 0, 1, 2, 7, 499, 10**6])
def test_vertex_on_chunk_edge_goes_to_that_chunk(size: float, n_chunk: int) -> None:
    on = np.float64(n_chunk) * size
    below = np.nextafter(on, -np.inf)
    p = np.array([[on], [below]])
    np.testing.assert_array_equal(chunk_coords(p, [size]), [[n_chunk], [n_chunk - 1]])
    grid_lo = [n_chunk - 1]
    chunk_flat, bin_flat = assign_chunks_and_bins(p, [size], [size], [1], grid_lo, [2])
    np.testing.assert_array_equal(chunk_flat, [1, 0])
    np.testing.assert_array_equal(bin_flat, [0, 0])


def test_division_guess_is_corrected_both_ways() -> None:
    size = 0.1
    # floor(p / C) rounds up across an integer: p just below N*C, p / C == N.
    ns = np.arange(-500, 500)
    below = np.nextafter(ns * size, -np.inf)
    too_high = np.floor(below / size) == ns
    assert too_high.any()
    np.testing.assert_array_equal(
        chunk_coords(below[too_high, None], [size])[:, 0], ns[too_high] - 1
    )
    # floor(p / C) rounds down below an integer: p exactly N*C, p / C < N.
    on = ns * 0.3
    too_low = np.floor(on / 0.3) < ns
    assert too_low.any()
    np.testing.assert_array_equal(chunk_coords(on[too_low, None], [0.3])[:, 0], ns[too_low])


def test_reciprocal_guess_is_corrected() -> None:
    # The kernels guess floor(p * (1 / C)); near chunk edges that is off by one both ways.
    size = 0.3
    ns = np.arange(-3000, 3000)
    edges = ns * size
    p = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
    guess = np.floor(p * (1.0 / size))
    got = chunk_coords(p[:, None], [size])[:, 0]
    assert (guess != got).any()
    np.testing.assert_array_equal(got, naive.chunk_coords(p[:, None], [size])[:, 0])


def test_index_limit_checked_exactly_near_two_to_52() -> None:
    size = 3.0
    ok = np.nextafter(2.0**52 * size, 0.0)
    assert ok / size < 2.0**52
    assert chunk_coords([[ok]], [size])[0, 0] == naive.chunk_coords(np.array([[ok]]), [size])[0, 0]
    with pytest.raises(InvalidInputError, match="too large"):
        chunk_coords([[2.0**52 * size]], [size])


def test_bin_guess_is_corrected() -> None:
    # Bin edges c*C + b*B with C = 0.7, B = 0.1: the division guess is often off by one.
    chunk, bin_ = 0.7, 0.1
    c = np.repeat(np.arange(-50, 50), 7)
    b = np.tile(np.arange(7), 100)
    edges = c * chunk + b * bin_
    p = np.concatenate([edges, np.nextafter(edges, -np.inf)])[:, None]
    chunks = chunk_coords(p, [chunk])
    got = bin_coords(p, chunks, [chunk], [bin_], [7])
    np.testing.assert_array_equal(got, naive.bin_coords(p, chunks, [chunk], [bin_], [7]))
    guess = np.clip(np.floor((p - chunks * chunk) / bin_), 0, 6).astype(np.int64)
    assert (guess != got).any()
    on_edge = got[: len(edges), 0]
    in_chunk = chunks[: len(edges), 0] == c
    np.testing.assert_array_equal(on_edge[in_chunk], b[in_chunk])


def test_bin_edges_of_one_chunk() -> None:
    # C = 1, B = 0.25: edges 0, .25, .5, .75 of chunk 0 and 1.0 of chunk 1.
    p = np.array([[0.0], [0.2499], [0.25], [0.5], [0.75], [0.9999], [1.0], [-0.25], [-1e-9]])
    chunks = chunk_coords(p, [1.0])
    np.testing.assert_array_equal(chunks[:, 0], [0, 0, 0, 0, 0, 0, 1, -1, -1])
    bins = bin_coords(p, chunks, [1.0], [0.25], [4])
    np.testing.assert_array_equal(bins[:, 0], [0, 0, 1, 2, 3, 3, 0, 3, 3])


# --------------------------------------------------------------------------- fast path


@st.composite
def long_clouds(draw: st.DrawFn, max_n: int = 80) -> Cloud:
    """Clouds crowded onto edges, some over several blocks of the fast kernel."""
    cloud = draw(clouds(max_n=max_n))
    repeat = draw(st.sampled_from([1, 1, 13]))  # 13 x 80 rows > one block of 512
    cloud.positions = np.tile(cloud.positions, (repeat, 1))
    return cloud


def _grid(cloud: Cloud) -> tuple[Any, ...]:
    dim = cloud.positions.shape[1]
    lo, shape = grid_of(chunk_coords(cloud.positions, cloud.chunk), dim)
    pos, sizes, bpc, lo, shape = kb.grid_arguments(
        cloud.positions, cloud.chunk, cloud.bin, cloud.bpc, lo, shape
    )
    return pos, sizes, bpc, lo, shape


@SETTINGS
@given(long_clouds(), st.booleans())
def test_fast_assignment_matches_naive(cloud: Cloud, as_cells: bool) -> None:
    """The block kernel gives every row the chunk and bin of the numpy twin (cells and
    their counts, or flat chunk and bin numbers), in 1 to 4 dimensions, at any distance
    from the origin."""
    pos, sizes, bpc, lo, shape = _grid(cloud)
    axes = kb.fast_axes(sizes, bpc, lo, shape)
    assert axes is not None  # every cloud's grid suits the fast kernel
    n, n_bins = pos.shape[0], int(np.prod(bpc))
    n_cells = int(np.prod(shape)) * n_bins
    as_cells = as_cells and n_cells <= 2**22  # a count per cell (wide 4-D grids have more)
    chunk_flat, bin_flat = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    counts = np.zeros(n_cells if as_cells else 0, np.int64)
    outputs = (chunk_flat, bin_flat[:0] if as_cells else bin_flat, counts)
    assert kb._assign_fast(pos, axes, *outputs)
    want_chunk, want_bin = naive.assign_chunks_and_bins(
        cloud.positions, cloud.chunk, cloud.bin, cloud.bpc, lo, shape
    )
    if as_cells:
        cells = want_chunk * n_bins + want_bin
        np.testing.assert_array_equal(chunk_flat, cells)
        np.testing.assert_array_equal(counts, np.bincount(cells, minlength=counts.shape[0]))
    else:
        np.testing.assert_array_equal(chunk_flat, want_chunk)
        np.testing.assert_array_equal(bin_flat, want_bin)


def _guess_misses(p: Array, chunk: float, bin_: float, bpc: int) -> set[str]:
    """Which of the fast kernel's guesses miss the exact chunk or bin of ``p``, and how."""
    chunks = naive.chunk_coords(p[:, None], np.array([chunk]))[:, 0]
    bins = naive.bin_coords(p[:, None], chunks[:, None], [chunk], [bin_], [bpc])[:, 0]
    chunk_guess = np.floor(p * (1.0 / chunk))
    bin_guess = np.clip(np.floor((p - chunks * chunk) * (1.0 / bin_)), 0, bpc - 1)
    pairs = [("chunk", chunk_guess, chunks), ("bin", bin_guess, bins)]
    return {
        f"{name} {way}"
        for name, g, t in pairs
        for way in ("high", "low")
        if ((g > t) if way == "high" else (g < t)).any()
    }


def test_fast_assignment_corrects_chunk_and_bin_guesses_both_ways() -> None:
    """On and next to every bin edge of 100 chunks around the origin, for several chunk
    and bin sizes, the guesses floor(p / C) and floor((p - base) / B) miss by one in
    both directions (checked here); the single correction steps of the fast kernel
    give the numpy twin's chunk and bin."""
    misses: set[str] = set()
    for chunk, bin_ in [(0.3, 0.1), (1e-3, 2.5e-4), (12.5, 2.5), (0.7, 0.1)]:
        bpc = round(chunk / bin_)
        k, b = np.repeat(np.arange(-50, 50), bpc), np.tile(np.arange(bpc), 100)
        edges = k * chunk + b * bin_
        p = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
        positions = np.stack([p, p[::-1], np.roll(p, 7)], axis=1)
        args = (positions, [chunk] * 3, [bin_] * 3, [bpc] * 3, [-52] * 3, [104] * 3)
        want = naive.assign_chunks_and_bins(*args)
        pos, sizes, bpcs, lo, shape = kb.grid_arguments(*args)
        axes = kb.fast_axes(sizes, bpcs, lo, shape)
        assert axes is not None
        chunk_flat, bin_flat = np.empty(len(p), np.int64), np.empty(len(p), np.int64)
        assert kb._assign_fast(pos, axes, chunk_flat, bin_flat, bin_flat[:0])
        np.testing.assert_array_equal(chunk_flat, want[0])
        np.testing.assert_array_equal(bin_flat, want[1])
        misses |= _guess_misses(p, chunk, bin_, bpc)
    assert misses == {"chunk high", "chunk low", "bin high", "bin low"}


@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e300, 5.0])
def test_fast_assignment_gives_rows_it_cannot_place_to_the_exact_kernel(bad: float) -> None:
    """A non-finite, huge or off-grid value anywhere (here in the second block) makes the
    fast kernel give up with the counts untouched; assign_rows then reports that row."""
    rng = np.random.default_rng(3)
    positions = rng.uniform(0, 2, size=(700, 3))
    positions[600, 1] = bad
    grid = kb.grid_arguments(positions, [1.0] * 3, [0.25] * 3, [4] * 3, [0] * 3, [2] * 3)[1:]
    axes = kb.fast_axes(*grid)
    assert axes is not None
    cells, counts = np.empty(700, np.int64), np.zeros(8 * 64, np.int64)
    assert not kb._assign_fast(positions, axes, cells, cells[:0], counts)
    assert not counts.any()
    status, row = kb.assign_rows(positions, grid, (cells, cells[:0], counts))
    assert (status, row) == kb._assign(positions, *grid[0], *grid[1:], cells, cells[:0], counts)
    assert row == 600
    assert status != 0


def test_fast_axes_only_where_one_correction_step_is_exact() -> None:
    """The fast kernel is used for grids whose chunk indices and float64 spacing keep
    every guess within one step; not for far grids, bins finer than the float64 spacing
    there, or more cells than float64 counts exactly."""
    sizes = (np.full(3, 1.0), np.full(3, 0.25))
    bpc, lo, shape = np.full(3, 4), np.zeros(3, np.int64), np.full(3, 10)
    table = kb.fast_axes(sizes, bpc, lo, shape)
    assert table is not None
    assert table.shape == (9, 3)
    table = kb.fast_axes((sizes[0][:2], sizes[1][:2]), bpc[:2], lo[:2], shape[:2])
    assert table is not None
    assert table.shape == (9, 2)
    assert kb.fast_axes(sizes, bpc, np.full(3, 2**39), shape) is None
    assert kb.fast_axes(sizes, bpc, np.full(3, 2**38), shape) is not None
    fine = (np.full(3, 1.0), np.full(3, 2.0**-20))  # bins 2**-20 at index 2**38: spacing 2**-14
    assert kb.fast_axes(fine, np.full(3, 2**20), np.full(3, 2**38), shape) is None
    assert kb.fast_axes(sizes, np.full(3, 2**17), lo, np.full(3, 2**2)) is None  # 2**57 cells


def test_public_assignment_takes_the_fast_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """assign_chunks_and_bins and destinations_of_positions go through the fast kernel
    (and agree with the exact kernel alone)."""
    rng = np.random.default_rng(8)
    args = (rng.uniform(-3, 3, size=(1000, 3)), [1.0] * 3, [0.5] * 3, [2] * 3, [-3] * 3, [6] * 3)
    calls: list[int] = []
    fast = kb._assign_fast

    def counted(*a: Any) -> bool:
        calls.append(1)
        return bool(fast(*a))

    monkeypatch.setattr(kb, "_assign_fast", counted)
    got = (assign_chunks_and_bins(*args), destinations_of_positions(*args))
    assert len(calls) == 2
    monkeypatch.setattr(kb, "fast_axes", lambda *a: None)
    want = (assign_chunks_and_bins(*args), destinations_of_positions(*args))
    assert len(calls) == 2
    for g, w in zip([*got[0], *got[1]], [*want[0], *want[1]], strict=True):
        np.testing.assert_array_equal(g, w)


def test_assign_ravels_in_c_order() -> None:
    p = np.array([[2.5, 0.5, 1.75], [0.0, 1.0, 0.25]], dtype=np.float32)
    chunk_flat, bin_flat = assign_chunks_and_bins(
        p, [1.0, 1.0, 1.0], [0.5, 0.5, 0.25], [2, 2, 4], [0, 0, 0], [3, 2, 2]
    )
    # chunks (2, 0, 1) and (0, 1, 0); bins (1, 1, 3) and (0, 0, 1)
    np.testing.assert_array_equal(chunk_flat, [2 * 4 + 0 * 2 + 1, 0 * 4 + 1 * 2 + 0])
    np.testing.assert_array_equal(bin_flat, [1 * 8 + 1 * 4 + 3, 1])


def test_non_contiguous_positions() -> None:
    base = np.arange(24, dtype=np.float64).reshape(6, 4) * 0.37
    view = base[::2, ::2]
    assert not view.flags.c_contiguous
    np.testing.assert_array_equal(
        chunk_coords(view, [0.5, 0.5]), chunk_coords(view.copy(), [0.5, 0.5])
    )
    big_endian = base.astype(">f8")
    np.testing.assert_array_equal(
        chunk_coords(big_endian, [1.0] * 4), chunk_coords(base, [1.0] * 4)
    )


# --------------------------------------------------------------------------- bounds


@SETTINGS
@given(clouds(), st.data())
def test_bounds_matches_naive(cloud: Cloud, data: st.DataObject) -> None:
    p = cloud.positions.copy()
    if p.size:
        mask = data.draw(st.lists(st.booleans(), min_size=p.size, max_size=p.size))
        bad = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        p[np.array(mask).reshape(p.shape) & (np.arange(p.size).reshape(p.shape) % 3 == 0)] = bad
    lo, hi, n_bad = bounds_and_nonfinite(p)
    want_lo, want_hi, want_bad = naive.bounds_and_nonfinite(p)
    np.testing.assert_array_equal(lo, want_lo)
    np.testing.assert_array_equal(hi, want_hi)
    assert n_bad == want_bad == int((~np.isfinite(p)).sum())
    assert lo.dtype == hi.dtype == np.float64


def test_bounds_of_empty_and_all_nonfinite() -> None:
    lo, hi, n_bad = bounds_and_nonfinite(np.zeros((0, 3), np.float32))
    assert lo.tolist() == [np.inf] * 3
    assert hi.tolist() == [-np.inf] * 3
    assert n_bad == 0
    lo, hi, n_bad = bounds_and_nonfinite(np.array([[np.nan, 1.0], [2.0, np.inf], [3.0, 4.0]]))
    assert lo.tolist() == [3.0, 4.0]
    assert hi.tolist() == [3.0, 4.0]
    assert n_bad == 2


@pytest.mark.parametrize("dim", [1, 3, 6])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bounds_with_and_without_nonfinite_values(dim: int, dtype: type) -> None:
    """Up to four axes a fast pass runs first and hands rows with NaN or inf to the exact
    loop; more axes take the loop alone: every case equals the naive twin."""
    rng = np.random.default_rng(dim)
    p = rng.uniform(-1e6, 1e6, size=(300, dim)).astype(dtype)
    for bad in (None, np.inf, -np.inf, np.nan):
        q = p.copy()
        if bad is not None:
            q[rng.integers(0, 300, 4), rng.integers(0, dim, 4)] = bad
        lo, hi, n_bad = bounds_and_nonfinite(q)
        want_lo, want_hi, want_bad = naive.bounds_and_nonfinite(q)
        np.testing.assert_array_equal(lo, want_lo)
        np.testing.assert_array_equal(hi, want_hi)
        assert n_bad == want_bad == int((~np.isfinite(q)).sum())


# --------------------------------------------------------------------------- sorting


@SETTINGS
@given(st.lists(st.integers(0, 9), max_size=200), st.integers(0, 5))
def test_counting_sort_matches_naive(keys_list: list[int], extra: int) -> None:
    keys = np.array(keys_list, dtype=np.int64)
    n_keys = 10 + extra
    perm, offsets = counting_sort(keys, n_keys)
    want_perm, want_offsets = naive.counting_sort(keys, n_keys)
    np.testing.assert_array_equal(perm, want_perm)
    np.testing.assert_array_equal(offsets, want_offsets)
    np.testing.assert_array_equal(np.sort(perm), np.arange(len(keys)))
    for k in range(n_keys):
        rows = perm[offsets[k] : offsets[k + 1]]
        assert np.all(keys[rows] == k)
        assert np.all(np.diff(rows) > 0)  # stable
    destination, same_offsets = counting_sort(keys, n_keys, destination=True)
    np.testing.assert_array_equal(same_offsets, want_offsets)
    np.testing.assert_array_equal(destination[want_perm], np.arange(len(keys)))


@st.composite
def chunk_bin_keys(draw: st.DrawFn) -> tuple[Array, Array, int]:
    n = draw(st.integers(0, 300))
    n_bins = draw(st.sampled_from([1, 2, 8, 64, 81]))
    spread = draw(st.sampled_from([1, 5, 100, 10**9]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ids = rng.integers(0, spread, size=rng.integers(1, 20))
    chunk_flat = rng.choice(ids, size=n).astype(np.int64)
    bin_flat = rng.integers(0, n_bins, size=n).astype(np.int64)
    return chunk_flat, bin_flat, n_bins


def check_sorted_groups(
    result: tuple[Array, Array, Array, Array], chunk_flat: Array, bin_flat: Array, n_bins: int
) -> None:
    perm, occupied, chunk_offsets, bin_offsets = result
    n = len(chunk_flat)
    m = len(occupied)
    np.testing.assert_array_equal(np.sort(perm), np.arange(n))
    assert chunk_offsets.shape == (m + 1,)
    assert bin_offsets.shape == (m, n_bins + 1)
    assert chunk_offsets[0] == 0
    assert chunk_offsets[-1] == n
    for j in range(m):
        rows = perm[chunk_offsets[j] : chunk_offsets[j + 1]]
        assert len(rows) > 0
        assert np.all(chunk_flat[rows] == occupied[j])
        assert bin_offsets[j, 0] == 0
        assert bin_offsets[j, -1] == len(rows)
        for b in range(n_bins):
            in_bin = rows[bin_offsets[j, b] : bin_offsets[j, b + 1]]
            assert np.all(bin_flat[in_bin] == b)
            assert np.all(np.diff(in_bin) > 0)  # stable


@SETTINGS
@given(chunk_bin_keys(), st.sampled_from(["auto", *METHODS]))
def test_sort_by_chunk_and_bin_matches_naive(keys: tuple[Array, Array, int], method: str) -> None:
    chunk_flat, bin_flat, n_bins = keys
    if method.startswith("dense"):
        chunk_flat = chunk_flat % 100_003  # a forced dense table spans 0..max(chunk_flat)
    got = ks._sort_by_chunk_and_bin(chunk_flat, bin_flat, n_bins, method)
    want = naive.sort_by_chunk_and_bin(chunk_flat, bin_flat, n_bins)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == np.int64
    check_sorted_groups(got, chunk_flat, bin_flat, n_bins)


@pytest.mark.parametrize(("slack", "cells"), [(0, 0), (0, 2**40), (2**40, 0)])
def test_sort_auto_strategies(monkeypatch: pytest.MonkeyPatch, slack: int, cells: int) -> None:
    monkeypatch.setattr(ks, "_DENSE_SLACK", slack)
    monkeypatch.setattr(ks, "_FUSED_CELLS", cells)
    rng = np.random.default_rng(5)
    chunk_flat = rng.choice(np.array([3, 7**9, 12, 4]), size=500).astype(np.int64)
    bin_flat = rng.integers(0, 27, size=500).astype(np.int64)
    got = sort_by_chunk_and_bin(chunk_flat, bin_flat, 27)
    for g, w in zip(got, naive.sort_by_chunk_and_bin(chunk_flat, bin_flat, 27), strict=True):
        np.testing.assert_array_equal(g, w)
    check_sorted_groups(got, chunk_flat, bin_flat, 27)


@SETTINGS
@given(chunk_bin_keys(), st.sampled_from(["auto", *METHODS]), st.booleans())
def test_destinations_match_naive_and_invert_the_sort(
    keys: tuple[Array, Array, int], method: str, reuse: bool
) -> None:
    chunk_flat, bin_flat, n_bins = keys
    if method.startswith("dense"):
        chunk_flat = chunk_flat % 100_003
    want = naive.chunk_and_bin_destinations(chunk_flat, bin_flat, n_bins)
    perm = ks._sort_by_chunk_and_bin(chunk_flat, bin_flat, n_bins, method)[0]
    given_ids = chunk_flat.copy()
    got = ks._sort_by_chunk_and_bin(
        given_ids, bin_flat, n_bins, method, destination=True, reuse=reuse
    )
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == np.int64
    np.testing.assert_array_equal(got[0][perm], np.arange(len(perm)))
    if not reuse:
        np.testing.assert_array_equal(given_ids, chunk_flat)  # input left alone


def test_public_destinations_reuse_the_chunk_array() -> None:
    chunk_flat = np.array([5, 2, 5, 2, 9], np.int64)
    bin_flat = np.array([1, 0, 0, 1, 0], np.int64)
    dest, occupied, _, _ = chunk_and_bin_destinations(chunk_flat, bin_flat, 2, reuse=True)
    assert dest is chunk_flat
    np.testing.assert_array_equal(dest, [3, 0, 2, 1, 4])
    np.testing.assert_array_equal(occupied, [2, 5, 9])


_FORCED_CELLS = 2**20
"""Largest grid (chunks x bins) the property forces the cell counts on: a table of that many
cells per row slice stays small; a wider grid keeps the kernel's own bounded choice."""

# hypothesis found it: float32 positions near -4.2e6 on 1e-3 chunks span ~500 chunks per
# axis, so forcing the cell counts on the whole grid (~8e9 cells) asked for 28-60 GiB.
_WIDE = Cloud(
    np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.5]]),
    np.array([1e-3] * 3),
    np.array([2.5e-4] * 3),
    np.array([4, 4, 4]),
)


@FEWER
@given(clouds(max_n=150), st.booleans(), st.integers(0, 3))
@example(_WIDE, True, 3)
def test_destinations_of_positions_match_naive(cloud: Cloud, by_cells: bool, spare: int) -> None:
    """Cell counts (a small grid) or assignment then sort (a wide one): the naive twins'
    destinations and offsets, written into ``out[0]``."""
    dim = cloud.positions.shape[1]
    lo, shape = grid_of(chunk_coords(cloud.positions, cloud.chunk), dim)
    args = (cloud.positions, cloud.chunk, cloud.bin, cloud.bpc, lo, shape)
    n, n_bins = cloud.positions.shape[0], int(np.prod(cloud.bpc))
    n_cells = float(np.prod(shape.astype(np.float64))) * n_bins
    force = n_cells <= _FORCED_CELLS
    want = naive.chunk_and_bin_destinations(*naive.assign_chunks_and_bins(*args), n_bins)
    out = (np.full(n + spare, -7, np.int64), np.full(n + spare, -7, np.int64))
    with pytest.MonkeyPatch.context() as patch:
        if force:  # by_cells: the cell counts, else the sort; a wide grid: the kernel's choice
            patch.setattr(ks, "_CELL_SLACK", 10**12 if by_cells else 0)
            patch.setattr(ks, "chunk_and_bin_destinations", _refused if by_cells else _allowed)
        got = destinations_of_positions(*args, out=out)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == np.int64
    assert n == 0 or np.shares_memory(got[0], out[0])
    assert (out[0][n:] == -7).all()


def _refused(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the cell counts were not used")


_allowed = ks.chunk_and_bin_destinations


def test_destinations_of_positions_over_threaded_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of a cell keep input order across the row slices counted in threads."""
    monkeypatch.setattr(_threads, "_MIN_ROWS", 7)
    monkeypatch.setattr(_threads, "THREADS", 3)
    rng = np.random.default_rng(5)
    positions = rng.uniform(0, 2, size=(200, 2))
    positions[::3] = positions[0]  # many rows of one cell, in every slice
    args = (positions, [1.0, 1.0], [0.5, 0.25], [2, 4], [0, 0], [2, 2])
    want = naive.chunk_and_bin_destinations(*naive.assign_chunks_and_bins(*args), 8)
    for g, w in zip(destinations_of_positions(*args), want, strict=True):
        np.testing.assert_array_equal(g, w)
    positions[[150, 120], 1] = [np.nan, 5.0]  # the first bad row is reported, in any slice
    with pytest.raises(InvalidInputError, match=r"positions\[120\].*outside the chunk grid"):
        destinations_of_positions(*args)
    positions[60, 0] = np.inf
    with pytest.raises(InvalidInputError, match=r"positions\[60\].*not finite"):
        destinations_of_positions(*args)


def test_destinations_of_positions_of_no_rows() -> None:
    got = destinations_of_positions(
        np.zeros((0, 3)), [1, 1, 1], [1, 1, 1], [1, 1, 1], [0] * 3, [1] * 3
    )
    assert [a.shape for a in got] == [(0,), (0,), (1,), (0, 2)]


ROW_DTYPES = [np.float32, np.float64, np.int16, np.uint8, np.bool_, np.complex64, "V3"]


@SETTINGS
@given(
    st.integers(0, 60),
    st.sampled_from(ROW_DTYPES),
    st.sampled_from([(), (1,), (3,), (2, 5)]),
    st.integers(0, 2**32 - 1),
)
def test_scatter_rows_matches_naive(
    n: int, dtype: Any, row_shape: tuple[int, ...], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=n * int(np.prod(row_shape)) * np.dtype(dtype).itemsize)
    values = raw.astype(np.uint8).view(dtype).reshape((n, *row_shape))
    destination = rng.permutation(n)
    got = scatter_rows(values, destination)
    want = naive.scatter_rows(values, destination)
    assert got.dtype == values.dtype
    assert got.shape == values.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@SETTINGS
@given(st.integers(0, 40), st.integers(0, 5), st.integers(0, 2**32 - 1))
def test_scatter_rows_into_a_longer_out_array(n: int, spare: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.random((n, 3)).astype(np.float32)
    destination = rng.permutation(n)
    out = np.full((n + spare, 3), -1.0, np.float32)
    got = scatter_rows(values, destination, out=out)
    assert n == 0 or np.shares_memory(got, out)
    np.testing.assert_array_equal(got, naive.scatter_rows(values, destination))
    assert (out[n:] == -1.0).all()


@pytest.mark.parametrize(
    ("out", "message"),
    [
        (np.zeros((2, 2)), "at least 3"),
        (np.zeros((3, 3)), "shape"),
        (np.zeros((3, 2), np.float32), "float64"),
        (np.zeros((3, 4))[:, ::2], "C-contiguous"),
    ],
)
def test_scatter_rows_rejects_unusable_out(out: np.ndarray, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        scatter_rows(np.zeros((3, 2)), [0, 1, 2], out=out)


def test_scatter_rows_rejects_out_over_its_input() -> None:
    values = np.zeros((3, 2))
    with pytest.raises(InvalidInputError, match="overlap"):
        scatter_rows(values, [0, 1, 2], out=values)


def test_scatter_rows_of_non_contiguous_input() -> None:
    values = np.arange(40, dtype=np.float32).reshape(10, 4)[:, ::2]
    destination = np.arange(10)[::-1]
    np.testing.assert_array_equal(scatter_rows(values, destination), values[::-1])


@pytest.mark.parametrize(
    ("destination", "message"),
    [([0, 1], "length"), ([0, 3, 1], "outside"), ([0, -1, 1], "outside")],
)
def test_scatter_rows_rejects_bad_destinations(destination: list[int], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        scatter_rows(np.zeros((3, 2)), destination)


def test_sort_empty_input() -> None:
    empty = np.zeros(0, np.int64)
    perm, occupied, chunk_offsets, bin_offsets = sort_by_chunk_and_bin(empty, empty, 8)
    assert perm.shape == occupied.shape == (0,)
    assert chunk_offsets.tolist() == [0]
    assert bin_offsets.shape == (0, 9)


@FEWER
@given(clouds(max_n=150))
def test_pipeline_groups_vertices_by_chunk_and_bin(cloud: Cloud) -> None:
    dim = cloud.positions.shape[1]
    chunks = chunk_coords(cloud.positions, cloud.chunk)
    lo, shape = grid_of(chunks, dim)
    chunk_flat, bin_flat = assign_chunks_and_bins(
        cloud.positions, cloud.chunk, cloud.bin, cloud.bpc, lo, shape
    )
    n_bins = int(np.prod(cloud.bpc))
    result = sort_by_chunk_and_bin(chunk_flat, bin_flat, n_bins)
    check_sorted_groups(result, chunk_flat, bin_flat, n_bins)
    perm, occupied, chunk_offsets, _ = result
    # Each chunk's half-open box (spec §8) holds exactly that chunk's vertices (spec §5).
    for j, flat in enumerate(occupied):
        c = np.array(np.unravel_index(flat, shape)) + lo
        mask = points_in_box(cloud.positions, c * cloud.chunk, (c + 1).astype(float) * cloud.chunk)
        np.testing.assert_array_equal(
            np.flatnonzero(mask), np.sort(perm[chunk_offsets[j] : chunk_offsets[j + 1]])
        )


# --------------------------------------------------------------------------- boxes


@SETTINGS
@given(clouds(), st.data())
def test_points_in_box_matches_naive(cloud: Cloud, data: st.DataObject) -> None:
    dim = cloud.positions.shape[1]
    p = cloud.positions.astype(np.float64)
    pool = [-np.inf, np.inf, *p.ravel()[:20].tolist(), 0.0]
    a = np.array([data.draw(st.sampled_from(pool)) for _ in range(dim)])
    b = np.array([data.draw(st.sampled_from(pool)) for _ in range(dim)])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    got = points_in_box(cloud.positions, lo, hi)
    np.testing.assert_array_equal(got, naive.points_in_box(cloud.positions, lo, hi))
    assert got.dtype == np.bool_


def test_points_in_box_half_open_and_unbounded() -> None:
    p = np.array([[0.0, 0.0], [1.0, 0.5], [0.5, 1.0], [np.nan, 0.5], [-1e300, 0.5]])
    assert points_in_box(p, [0.0, 0.0], [1.0, 1.0]).tolist() == [True, False, False, False, False]
    assert points_in_box(p, [-np.inf, 0.0], [np.inf, 1.0]).tolist() == [
        True,
        True,
        False,
        False,
        True,
    ]
    assert not points_in_box(p, [0.5, 0.5], [0.5, 2.0]).any()  # lo == hi: empty


# --------------------------------------------------------------------------- errors


GOOD = np.zeros((3, 2))


@pytest.mark.parametrize(
    "call",
    [
        lambda: chunk_coords(np.zeros(3), [1.0]),  # ndim 1
        lambda: chunk_coords(np.zeros((2, 2, 2)), [1.0, 1.0]),  # ndim 3
        lambda: chunk_coords(np.zeros((3, 2), np.int64), [1.0, 1.0]),  # int dtype
        lambda: chunk_coords(np.zeros((3, 2), object), [1.0, 1.0]),  # object dtype
        lambda: chunk_coords(np.zeros((3, 2), np.float16), [1.0, 1.0]),
        lambda: chunk_coords(np.zeros((3, 0)), []),  # D = 0
        lambda: chunk_coords(GOOD, [1.0]),  # D mismatch
        lambda: chunk_coords(GOOD, [1.0, 0.0]),  # zero chunk
        lambda: chunk_coords(GOOD, [1.0, np.nan]),
        lambda: chunk_coords(GOOD, ["a", "b"]),
        lambda: chunk_coords(np.array([[0.0, np.nan]]), [1.0, 1.0]),
        lambda: chunk_coords(np.array([[0.0, np.inf]]), [1.0, 1.0]),
        lambda: chunk_coords(np.array([[0.0, 1e300]]), [1.0, 1e-3]),  # index beyond 2**52
        lambda: bin_coords(GOOD, np.zeros((3, 3), np.int64), [1, 1], [1, 1], [1, 1]),
        lambda: bin_coords(GOOD, np.zeros((3, 2)), [1, 1], [1, 1], [1, 1]),  # float chunks
        lambda: bin_coords(GOOD, np.zeros((3, 2), np.int64), [1, 1], [1, 1], [1, 0]),
        lambda: bin_coords(GOOD, np.zeros((3, 2), np.int64), [1, 1], [1, 1], [1.0, 1.0]),
        lambda: bin_coords(GOOD, np.zeros((3, 2), np.int64), [1, 1], [1, 1, 1], [1, 1]),
        lambda: assign_chunks_and_bins(GOOD, [1, 1], [1, 1], [1, 1], [0, 0], [1, 0]),
        lambda: assign_chunks_and_bins(GOOD, [1, 1], [1, 1], [1, 1], [0], [1, 1]),
        lambda: assign_chunks_and_bins(GOOD, [1, 1], [1, 1], [1, 1], [1, 0], [1, 1]),
        lambda: assign_chunks_and_bins(GOOD + 1.0, [1, 1], [1, 1], [1, 1], [0, 0], [1, 1]),
        lambda: assign_chunks_and_bins(GOOD - 1e-9, [1, 1], [1, 1], [1, 1], [0, 0], [1, 1]),
        lambda: assign_chunks_and_bins(GOOD, [1, 1], [1, 1], [2**40, 2**40], [0, 0], [1, 1]),
        lambda: destinations_of_positions(GOOD, [1, 1], [1, 1], [1, 1], [0, 0], [1, 0]),
        lambda: destinations_of_positions(GOOD + 1.0, [1, 1], [1, 1], [1, 1], [0, 0], [1, 1]),
        lambda: destinations_of_positions(GOOD, [1, 1], [1, 1], [2**40, 2**40], [0, 0], [1, 1]),
        lambda: counting_sort(np.array([0, 3, 1]), 3),
        lambda: counting_sort(np.array([0, -1]), 3),
        lambda: counting_sort(np.array([0.0, 1.0]), 3),
        lambda: counting_sort(np.zeros((2, 2), np.int64), 3),
        lambda: counting_sort(np.array([0, 1]), -1),
        lambda: counting_sort(np.array([0, 1]), 2.0),
        lambda: sort_by_chunk_and_bin(np.array([0, -1]), np.array([0, 0]), 1),
        lambda: sort_by_chunk_and_bin(np.array([0, 1]), np.array([0, 2]), 2),
        lambda: sort_by_chunk_and_bin(np.array([0, 1]), np.array([0, -1]), 2),
        lambda: sort_by_chunk_and_bin(np.array([0, 1]), np.array([0]), 2),
        lambda: sort_by_chunk_and_bin(np.array([0, 1]), np.array([0, 0]), 0),
        lambda: sort_by_chunk_and_bin(np.array([0.0]), np.array([0]), 1),
        lambda: points_in_box(GOOD, [1.0, 0.0], [0.0, 1.0]),  # lo > hi
        lambda: points_in_box(GOOD, [np.nan, 0.0], [1.0, 1.0]),
        lambda: points_in_box(GOOD, [0.0], [1.0]),
        lambda: bounds_and_nonfinite(np.zeros(4)),
        lambda: bounds_and_nonfinite(np.zeros((2, 2), np.int32)),
    ],
)
def test_invalid_input_raises(call: Any) -> None:
    with pytest.raises(InvalidInputError):
        call()


def test_error_messages_name_the_row() -> None:
    p = np.array([[0.5, 0.5], [0.5, np.nan]])
    with pytest.raises(InvalidInputError, match=r"positions\[1\].*not finite"):
        chunk_coords(p, [1.0, 1.0])
    with pytest.raises(InvalidInputError, match=r"positions\[0\].*outside the chunk grid"):
        assign_chunks_and_bins(p[:1] + 5, [1, 1], [1, 1], [1, 1], [0, 0], [2, 2])
    with pytest.raises(InvalidInputError, match=r"keys\[1\] = 7"):
        counting_sort(np.array([0, 7]), 3)


@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 6)), max_size=20))
def test_concat_ranges_equals_a_loop(pairs: list[tuple[int, int]]) -> None:
    from zarr_vectors.kernels import concat_ranges

    starts = np.array([p[0] for p in pairs], dtype=np.int64)
    sizes = np.array([p[1] for p in pairs], dtype=np.int64)
    expected = [row for s, n in pairs for row in range(s, s + n)]
    np.testing.assert_array_equal(concat_ranges(starts, sizes), np.array(expected, np.int64))
