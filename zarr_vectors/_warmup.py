"""``zv.warmup()``: compile (or load from numba's cache) the kernels of the common paths.

A fresh environment has an empty numba cache. Small first calls run the kernels' Python
source (:mod:`zarr_vectors.kernels._jit`), but a large first write or query compiles its
kernels, some seconds in all, inside the call that needs them. :func:`warmup` pays that
up front, at a moment of the caller's choosing: it writes, opens, queries, reads and
validates a small point cloud and a small streamline store in a temporary directory with
every kernel call running machine code, and reports how long that took and how much of it
was compiling. Later processes load the machine code from the cache (``NUMBA_CACHE_DIR``,
else ``__pycache__`` beside the package's sources or, where those are read-only, the
user's cache directory) in well under a second. :func:`demo_warmup` compiles only what
``zarr-vectors demo`` runs, so that a newcomer's first command waits for those alone.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.dataset import open as open_store
from zarr_vectors.geometry import write_points, write_polylines
from zarr_vectors.kernels import CompileLog, set_kernel_mode
from zarr_vectors.validate import validate
from zarr_vectors.write.levels import Levels

__all__ = ["WarmupReport", "demo_warmup", "warmup"]


@dataclasses.dataclass(frozen=True)
class WarmupReport:
    """What :func:`warmup` did.

    Attributes
    ----------
    seconds
        Its whole time.
    compiled
        Kernels numba compiled (0: every one was loaded from its cache).
    compile_seconds
        The time of those compilations.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> print(zv.WarmupReport(seconds=0.4, compiled=0, compile_seconds=0.0))
    kernels loaded from numba's cache in 0.4 s
    >>> print(zv.WarmupReport(seconds=21.0, compiled=30, compile_seconds=19.5))
    compiled 30 kernels in 19.5 s (warm-up 21.0 s in all; later runs load them from numba's cache)
    """

    seconds: float
    compiled: int
    compile_seconds: float

    def __str__(self) -> str:
        if self.compiled == 0:
            return f"kernels loaded from numba's cache in {self.seconds:.1f} s"
        return (
            f"compiled {self.compiled} kernels in {self.compile_seconds:.1f} s "
            f"(warm-up {self.seconds:.1f} s in all; later runs load them from numba's cache)"
        )


def _demo_round_trip(directory: Path, rng: np.random.Generator) -> np.ndarray:
    """What ``zarr-vectors demo`` does: float32 points with a float32 and a uint8 attribute
    written, queried and validated; returns the positions."""
    positions = rng.uniform(0, 100, (2000, 3)).astype(np.float32)
    attributes = {
        "value": rng.random(2000, dtype=np.float32),
        "label": rng.integers(0, 12, 2000).astype(np.uint8),
    }
    path = directory / "points.zarrvectors"
    write_points(path, positions, chunk_shape=50.0, bin_shape=12.5, attributes=attributes)
    open_store(path).query(([10.0, 20.0, 30.0], [60.0, 70.0, 80.0]))
    validate(path, level=3)
    return positions


def _points_round_trip(directory: Path, rng: np.random.Generator) -> None:
    """The demo's points, also read whole; a write with the default chunk shape, levels
    and float64 points."""
    positions = _demo_round_trip(directory, rng)
    open_store(directory / "points.zarrvectors").read()
    write_points(directory / "points-default.zarrvectors", positions)  # the default chunk shape
    _levels_round_trip(directory / "points-levels.zarrvectors", write_points, positions)
    _float64_round_trip(directory / "points-float64.zarrvectors", positions.astype(np.float64))


def _float64_round_trip(path: Path, positions: np.ndarray) -> None:
    """Float64 points (numpy's default dtype, what most callers pass) with a float64
    attribute: write, query, read; and a write with the default chunk shape."""
    write_points(
        path, positions, chunk_shape=50.0, bin_shape=12.5, attributes={"v": positions[:, 0]}
    )
    store = open_store(path)
    store.query(([10.0, 20.0, 30.0], [60.0, 70.0, 80.0]))
    store.read()
    write_points(path.with_suffix(".default"), positions)


def _streamlines_round_trip(directory: Path, rng: np.random.Generator) -> None:
    """Float32 streamlines with vertex and object attributes: write, query, read by id;
    a write with the default chunk shape."""
    steps = rng.normal(0, 1, (20, 50, 3))
    starts = rng.uniform(20, 80, (20, 1, 3))
    vertices = (starts + np.cumsum(steps, axis=1)).reshape(-1, 3).astype(np.float32)
    offsets = np.arange(21, dtype=np.int64) * 50
    path = directory / "streamlines.zarrvectors"
    write_polylines(
        path,
        (vertices, offsets),
        kind="streamline",
        chunk_shape=50.0,
        bin_shape=12.5,
        attributes={"fa": rng.random(len(vertices), dtype=np.float32)},
        object_attributes={"weight": rng.random(20, dtype=np.float32)},
    )
    store = open_store(path)
    store.query(([30.0, 30.0, 30.0], [70.0, 70.0, 70.0]))
    store.read_objects([0, 5, 19])
    validate(path, level=3)
    write_polylines(
        directory / "streamlines-default.zarrvectors", (vertices, offsets), kind="streamline"
    )
    _levels_round_trip(
        directory / "streamlines-levels.zarrvectors",
        lambda *args, **options: write_polylines(*args, kind="streamline", **options),
        (vertices, offsets),
    )


def _levels_round_trip(path: Path, write: Callable[..., Any], data: Any) -> None:
    """Two levels of detail written with the data, then a vertex-budget query and a box
    query at level 1 (the overview a notebook asks for first)."""
    write(path, data, chunk_shape=50.0, bin_shape=12.5, levels=Levels(count=2, target=1))
    store = open_store(path)
    everything = ([-1e3] * 3, [1e3] * 3)
    store.query(everything, max_vertices=store.vertex_count - 1)  # a coarse level
    store.query(([30.0, 30.0, 30.0], [70.0, 70.0, 70.0]), level=1)


def warmup() -> WarmupReport:
    """Compile (or load from numba's cache) the kernels that writing, querying, reading and
    validating float32 point clouds and streamlines use, levels of detail included, and
    those of writing, querying and reading float64 point clouds.

    Run it once in a fresh environment (``zarr-vectors warmup`` does the same): the
    machine code goes to numba's cache, so no later process compiles these kernels. It
    writes only to a temporary directory, removed at the end. Other geometry kinds and
    dtypes (float64 streamlines, meshes, graphs) compile their own kernels at first use.

    Returns
    -------
    WarmupReport
        Its time, and the kernels compiled (none when the cache held them all).

    Examples
    --------
    The call compiles about 45 kernel signatures in a fresh environment (a minute on two
    cores), so the test suite does not run this example; ``tests/test_first_use.py`` runs
    :func:`warmup` on an empty cache and checks that the first use compiles nothing after it.

    >>> import zarr_vectors as zv
    >>> report = zv.warmup()  # doctest: +SKIP
    >>> report.compiled  # kernels compiled: 0 when numba's cache held them all  # doctest: +SKIP
    0
    """
    return _compile_through(_points_round_trip, _streamlines_round_trip)


def demo_warmup() -> WarmupReport:
    """:func:`warmup` of the kernels ``zarr-vectors demo`` runs only: writing, querying and
    validating float32 points (19 kernel signatures to compile in a fresh environment,
    where :func:`warmup` compiles 45).

    Returns
    -------
    WarmupReport
        Its time, and the kernels compiled (none when the cache held them all).
    """
    return _compile_through(_demo_round_trip)


def _compile_through(*round_trips: Callable[[Path, np.random.Generator], Any]) -> WarmupReport:
    """Run ``round_trips`` in a temporary directory with every kernel call compiled."""
    begin = time.perf_counter()
    previous = set_kernel_mode("compiled")
    try:
        with CompileLog() as log, tempfile.TemporaryDirectory(prefix="zv-warmup-") as tmp:
            rng = np.random.default_rng(0)
            for round_trip in round_trips:
                round_trip(Path(tmp), rng)
    finally:
        set_kernel_mode(previous)
    return WarmupReport(time.perf_counter() - begin, log.count, log.seconds)
