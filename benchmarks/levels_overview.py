"""Overview latency of streamlines and many-chunk point clouds, and the reference's
``build_pyramid`` beside our levels (issue 37, "What to build" 5 and 7, "Done when" 4).

Usage: ``python -m benchmarks.levels_overview [--quick] [--streamlines N] [--points N]
[--point-chunk SIDE] [--repeat R] [--reference-points N] [--reference-streamlines N]
[--no-reference] [--dir DIR] [--json PATH]``.

Streamlines (:func:`benchmarks.objects.make_streamlines`, N x 100 vertices, chunks 50 mm,
bins 12.5 mm) are written without levels, with ``levels="auto"`` and with
``Levels(objects="coverage")``, alternating, each into a fresh directory; then
``build_levels`` adds ``"auto"`` levels to a store written without them. Times are medians
of ``--repeat``. Points (:func:`benchmarks._data.make_points`, chunk side
``--point-chunk``: 100 gives 1,000 chunks over the cube) are written once with
``levels="auto"``.

Overview: a fresh ``zv.open`` plus ``query(everything, max_vertices=100_000)``, each
store in a fresh child process (:func:`overview_child`): ``first`` is the first call in
that process (numba's one-time start-up included), ``cold`` the first call on the store
after a warm-up on another, tiny store (no handle, no cache of this store), ``warm`` the
median of ``--repeat`` further calls, each with a fresh open. Coverage: the coarse cells
(bins of the chosen level's ``bin_shape``) that level 0 occupies, and how many of them the
overview's vertices touch (the issue: "returns vertices from every occupied coarse cell
of the chosen level").

Reference: ``zarr-vectors`` 0.9.2 in its own virtualenv (:mod:`benchmarks.reference_env`)
writes the same points and streamlines with the same chunks, bins and codec, then
``build_pyramid(factors=[(2, 1)] * L)`` (L = the number of levels our ``"auto"`` built,
so the bins double per level as ours do), in :mod:`benchmarks.reference_pyramid`.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv
from benchmarks import objects
from benchmarks._data import ATTRIBUTE, CUBE, make_points, warm_up
from benchmarks._measure import log, median, run_child, run_reference, tree_size
from benchmarks._table import Row, format_table
from benchmarks.levels import BUDGET, OVERVIEW_TARGET
from benchmarks.reference_env import ensure_venv

LENGTH = 100
"""Vertices per streamline."""

CASES: dict[str, Any] = {
    "none": None,
    "auto": "auto",
    "coverage": zv.Levels(objects="coverage"),
}
"""The streamline writes: without levels, ``"auto"``, and ``"auto"`` with object sparsity."""


# -- coverage --------------------------------------------------------------------------------
def occupied_cells(positions: np.ndarray, bin_shape: tuple[float, ...]) -> np.ndarray:
    """The distinct coarse cells (``floor(p / bin_shape)`` per axis) that ``positions`` meet.

    Bins divide chunks and chunks start at multiples of the chunk shape (spec §5.2), so a
    bin of the level is the cell ``floor(p / bin_shape)``.

    Parameters
    ----------
    positions
        ``(n, D)`` vertices.
    bin_shape
        The level's bin shape.

    Returns
    -------
    numpy.ndarray
        ``(c, D)`` int64 cell indices, sorted, unique.
    """
    cells = np.floor(np.asarray(positions, np.float64) / np.asarray(bin_shape)).astype(np.int64)
    return np.unique(cells, axis=0) if cells.shape[0] else cells


def coverage(
    level0: np.ndarray, result: np.ndarray, bin_shape: tuple[float, ...]
) -> tuple[int, int]:
    """The coarse cells level 0 occupies, and how many of them ``result`` touches."""
    occupied = occupied_cells(level0, bin_shape)
    touched = occupied_cells(result, bin_shape)
    both = np.concatenate([occupied, touched])
    shared = occupied.shape[0] + touched.shape[0] - np.unique(both, axis=0).shape[0]
    return int(occupied.shape[0]), int(shared)


# -- overview in a fresh process -------------------------------------------------------------
EVERYTHING = (np.full(3, -np.inf), np.full(3, np.inf))


def _overview_once(path: str) -> tuple[float, Any]:
    start = time.perf_counter()
    result = zv.open(path).query(EVERYTHING, max_vertices=BUDGET)
    return time.perf_counter() - start, result


def warm_levels(directory: Path) -> None:
    """:func:`benchmarks._data.warm_up`, then the overview of tiny point and streamline
    stores with levels, so the kernels of the level path are compiled or loaded."""
    warm_up(str(directory))
    positions, values = make_points(20_000, 12345)
    zv.write_points(
        directory / "p.zv",
        positions,
        attributes={ATTRIBUTE: values},
        chunk_shape=CUBE / 2,
        levels=zv.Levels(count=2, per_bin=4),
        progress=False,
    )
    _write_lines(
        objects.make_streamlines(50, 20, 12345),
        directory / "l.zv",
        zv.Levels(count=2, objects="coverage"),
    )
    for name in ("p.zv", "l.zv"):
        zv.open(directory / name).query(EVERYTHING, max_vertices=BUDGET)


def overview_child(path: str, repeat: int, warm: bool) -> dict[str, Any]:
    """The overview of ``path`` in this (fresh) process: first (or cold) and warm times.

    Parameters
    ----------
    path
        The store.
    repeat
        Warm calls after the first.
    warm
        Warm up numba on a tiny store in a scratch directory first (``cold``); otherwise
        the first call pays numba's start-up (``first``).

    Returns
    -------
    dict
        ``first`` seconds, ``warm`` (list of seconds), the level read, its vertex count,
        the coverage ``(occupied, touched)`` of that level's cells, and the store's chunk
        count at level 0 and at the level read; ``error`` instead when the query fails.
    """
    if warm:
        scratch = tempfile.mkdtemp(prefix="zv-bench-warm-")
        try:
            warm_levels(Path(scratch))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    try:
        first, result = _overview_once(path)
    except zv.errors.InvalidInputError as error:
        return {"error": str(error).split(";")[0]}
    warm_times = [_overview_once(path)[0] for _ in range(repeat)]
    store = zv.open(path)
    info = {level.level: level for level in store.levels}[result.level]
    level0 = store.read(level=0).positions
    occupied, touched = coverage(level0, result.positions, info.bin_shape or ())
    return {
        "first": first,
        "warm": warm_times,
        "level": result.level,
        "vertices": len(result),
        "objects": info.object_count,
        "occupied": occupied,
        "touched": touched,
        "chunks": store.levels[0].chunk_count,
        "level_chunks": info.chunk_count,
        "levels": [(lv.level, lv.vertex_count, lv.object_count) for lv in store.levels],
    }


def _overview(path: Path, repeat: int) -> dict[str, Any]:
    """:func:`overview_child` in two fresh processes: without and with the warm-up."""
    args = [str(path), str(repeat)]
    first = run_child("benchmarks.levels_overview", "--overview-child", *args, "first")
    cold = run_child("benchmarks.levels_overview", "--overview-child", *args, "cold")
    return {**cold, "first_use": first.get("first"), "cold": cold.get("first")}


def _overview_rows(label: str, n: int, got: dict[str, Any]) -> list[Row]:
    """The rows of one store's overview."""
    if "error" in got:
        return [Row(f"{label}: overview", n, float("nan"), None, "s", got["error"], ok=False)]
    warm = median(got["warm"])
    detail = (
        f"level {got['level']}: {got['vertices']:,} vertices"
        + (f", {got['objects']:,} objects" if got.get("objects") else "")
        + f"; {got['chunks']:,} chunks at level 0, {got['level_chunks']:,} at it; "
        f"first use in a process {got['first_use'] * 1000:.0f} ms"
    )
    target = f"<= {OVERVIEW_TARGET * 1000:.0f} ms"
    cells = f"{got['touched']:,} of {got['occupied']:,} occupied level-{got['level']} cells"
    return [
        Row(
            f"{label}: overview cold",
            n,
            got["cold"],
            None,
            "s",
            detail,
            target=target,
            passed=got["cold"] <= OVERVIEW_TARGET,
            ok=got["vertices"] <= BUDGET,
        ),
        Row(
            f"{label}: overview warm",
            n,
            warm,
            None,
            "s",
            f"median of {len(got['warm'])}",
            target=target,
            passed=warm <= OVERVIEW_TARGET,
        ),
        Row(
            f"{label}: overview cells touched",
            n,
            float(got["touched"]),
            float(got["occupied"]),
            "cells",
            cells,
            target="all",
            passed=got["touched"] == got["occupied"],
        ),
    ]


# -- writes ----------------------------------------------------------------------------------
def _timed(func: Any) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def _write_lines(data: objects.ObjectSet, path: Path, levels: Any) -> None:
    frame = data.frame
    zv.write_polylines(
        path,
        (frame.positions, frame.offsets),
        kind="streamline",
        chunk_shape=objects.STREAMLINE_CHUNK,
        bin_shape=objects.STREAMLINE_BIN,
        attributes=frame.attributes,
        object_attributes=frame.object_attributes,
        levels=levels,
        progress=False,
    )


def streamline_writes(root: Path, n: int, repeat: int, seed: int) -> dict[str, list[float]]:
    """Alternating writes of every case of ``CASES`` and ``build_levels`` after a write
    without levels, each into a fresh directory (the stores stay in ``root``)."""
    data = objects.make_streamlines(n, LENGTH, seed)
    times: dict[str, list[float]] = {name: [] for name in [*CASES, "build"]}
    for r in range(repeat):
        for name, levels in CASES.items():
            path = root / f"lines-{name}.zarrvectors"
            shutil.rmtree(path, ignore_errors=True)
            times[name].append(_timed(lambda p=path, lv=levels: _write_lines(data, p, lv)))
        path = root / "lines-build.zarrvectors"
        shutil.rmtree(path, ignore_errors=True)
        _write_lines(data, path, None)
        times["build"].append(_timed(lambda p=path: zv.build_levels(p, progress=False)))
        log(f"levels_overview: streamline repeat {r + 1} of {repeat} done")
    return times


def _write_rows(label: str, n: int, root: Path, times: dict[str, list[float]]) -> list[Row]:
    """Write times against the write without levels, and storage against level 0."""
    wall = {name: median(runs) for name, runs in times.items()}
    level0, files0 = tree_size(root / "lines-none.zarrvectors")
    rows = [Row(f"{label}: write, no levels", n, wall["none"], None, "s", f"{files0} files")]
    for name, case in (
        ("auto", "write, auto"),
        ("coverage", "write, auto + coverage"),
        ("build", "build_levels auto after write"),
    ):
        rows.append(
            Row(f"{label}: {case}", n, wall[name], wall["none"], "s", extra={"runs": times[name]})
        )
    for name in ("auto", "coverage"):
        size, files = tree_size(root / f"lines-{name}.zarrvectors")
        rows.append(
            Row(
                f"{label}: size {name} / level 0",
                n,
                float(size),
                float(level0),
                "B",
                f"{files} files, level 0 alone {files0}",
            )
        )
    return rows


def point_store(root: Path, n: int, chunk: float, seed: int) -> tuple[Path, float]:
    """``n`` points written once with ``levels="auto"`` and chunk side ``chunk``."""
    positions, values = make_points(n, seed)
    path = root / "points-auto.zarrvectors"
    seconds = _timed(
        lambda: zv.write_points(
            path,
            positions,
            attributes={ATTRIBUTE: values},
            chunk_shape=chunk,
            levels="auto",
            progress=False,
        )
    )
    return path, seconds


# -- the reference's build_pyramid -----------------------------------------------------------
def _reference_spec(
    kind: str,
    arrays: dict[str, np.ndarray],
    where: Path,
    layout: tuple[float, float],
    factors: list[int],
    repeat: int,
) -> Path:
    """Save the arrays and the spec :mod:`benchmarks.reference_pyramid` reads."""
    data = where / f"{kind}-data"
    data.mkdir(parents=True, exist_ok=True)
    for name, values in arrays.items():
        np.save(data / f"{name}.npy", values)
    side = CUBE if kind == "points" else objects.SIDE
    spec = {
        "kind": kind,
        "data_dir": str(data),
        "attribute": ATTRIBUTE if kind == "points" else "fa",
        "layout": {
            "chunk": [layout[0]] * 3,
            "bin": [layout[1]] * 3,
            "bounds": [[0.0] * 3, [side] * 3],
            "compression": "auto",
        },
        "store": str(where / f"{kind}-reference.zv"),
        "factors": [[float(f), 1.0] for f in factors],
        "repeat": repeat,
    }
    path = where / f"{kind}-spec.json"
    path.write_text(json.dumps(spec))
    return path


POINT_LAYOUT = (100.0, 25.0)
"""Chunk and bin side of the points both libraries write for the pyramid rows."""


def ratio_steps(path: Path) -> list[int]:
    """The per-level growth of our levels' bin ratio (levels that only thin are left out:
    the reference's factor 1 builds nothing)."""
    ratios = [int((level.bin_ratio or (1,))[0]) for level in zv.open(path).levels]
    return [b // a for a, b in itertools.pairwise(ratios) if b > a]


def _ours_beside(
    kind: str, n: int, root: Path, repeat: int, seed: int
) -> tuple[dict[str, Any], dict[str, np.ndarray], list[int]]:
    """Our write without levels, with ``"auto"`` and ``build_levels`` on the data the
    reference gets; the arrays saved for it and the bin-ratio steps of our levels."""
    if kind == "points":
        positions, values = make_points(n, seed)
        arrays = {"positions": positions, f"v_{ATTRIBUTE}": values}

        def write(path: Path, levels: Any) -> None:
            zv.write_points(
                path,
                positions,
                attributes={ATTRIBUTE: values},
                chunk_shape=POINT_LAYOUT[0],
                bin_shape=POINT_LAYOUT[1],
                levels=levels,
                progress=False,
            )
    else:
        data = objects.make_streamlines(n, LENGTH, seed)
        frame = data.frame
        arrays = {
            "positions": frame.positions,
            "offsets": frame.offsets,
            **{f"v_{k}": v for k, v in frame.attributes.items()},
            **{f"o_{k}": v for k, v in frame.object_attributes.items()},
        }

        def write(path: Path, levels: Any) -> None:
            _write_lines(data, path, levels)

    times: dict[str, list[float]] = {"none": [], "auto": [], "build": []}
    for _ in range(repeat):
        for name in ("none", "auto"):
            path = root / f"{kind}-ours-{name}.zarrvectors"
            shutil.rmtree(path, ignore_errors=True)
            times[name].append(
                _timed(lambda p=path, lv=name: write(p, None if lv == "none" else lv))
            )
        path = root / f"{kind}-ours-build.zarrvectors"
        shutil.rmtree(path, ignore_errors=True)
        write(path, None)
        times["build"].append(_timed(lambda p=path: zv.build_levels(p, progress=False)))
    auto = root / f"{kind}-ours-auto.zarrvectors"
    ours: dict[str, Any] = {name: median(runs) for name, runs in times.items()}
    ours["bytes0"] = tree_size(root / f"{kind}-ours-none.zarrvectors")[0]
    ours["bytes"], ours["files"] = tree_size(auto)
    ours["levels"] = [(lv.level, lv.vertex_count, lv.object_count) for lv in zv.open(auto).levels]
    return ours, arrays, ratio_steps(auto)


def pyramid_rows(
    kind: str, n: int, root: Path, repeat: int, seed: int, python: Path | None
) -> list[Row]:
    """Our levels beside the reference's ``build_pyramid`` on the same ``kind`` data."""
    ours, arrays, steps = _ours_beside(kind, n, root, repeat, seed)
    layout = (
        POINT_LAYOUT if kind == "points" else (objects.STREAMLINE_CHUNK, objects.STREAMLINE_BIN)
    )
    spec = _reference_spec(kind, arrays, root, layout, steps, repeat)
    ref: dict[str, Any] = {}
    if python is not None and steps:
        ref = run_reference(python, "reference_pyramid", str(spec))
    label = f"{kind} pyramid"
    ref_levels = [
        (i + 1, lv["vertex_count"], lv.get("object_count"))
        for i, lv in enumerate(ref.get("levels") or [])
    ]
    rows = [
        Row(
            f"{label}: write, no levels",
            n,
            ours["none"],
            ref.get("write"),
            "s",
            "floor column: the reference's write (level 0 only)",
        ),
        Row(
            f"{label}: write, auto levels",
            n,
            ours["auto"],
            None,
            "s",
            f"ours: levels (level, vertices, objects) {ours['levels']}",
        ),
        Row(
            f"{label}: build_levels vs build_pyramid",
            n,
            ours["build"],
            ref.get("pyramid"),
            "s",
            f"reference factors {[(s, 1) for s in steps]}: levels {ref_levels}",
        ),
        Row(
            f"{label}: size with levels",
            n,
            float(ours["bytes"]),
            None if not ref else float(ref["bytes"]),
            "B",
            f"ours {ours['bytes'] / ours['bytes0']:.3f}x of level 0, {ours['files']} files"
            + (
                ""
                if not ref
                else f"; reference {ref['bytes'] / ref['bytes_level0']:.3f}x of its "
                f"level 0, {ref['files']} files"
            ),
        ),
    ]
    if python is None:
        rows.append(
            Row(
                f"{label}: reference",
                n,
                None,
                None,
                "s",
                "skipped: no reference virtualenv (see --no-reference / network)",
            )
        )
    return rows


# -- main ------------------------------------------------------------------------------------
def reference_python(wanted: bool) -> Path | None:
    """The reference interpreter, or None when not wanted or it cannot be made (logged)."""
    if not wanted:
        return None
    try:
        return ensure_venv()
    except RuntimeError as error:
        log(f"levels_overview: no reference virtualenv: {error}")
        return None


def run(args: argparse.Namespace) -> list[Row]:
    """Every row: streamline writes and overview, point overview, the pyramids beside."""
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="zv-bench-overview-", dir=args.dir))
    rows: list[Row] = []
    try:
        warm_up(str(root))
        n = int(args.streamlines)
        times = streamline_writes(root, n, args.repeat, args.seed)
        lines = _write_rows("streamlines", n * LENGTH, root, times)
        for name in ("auto", "coverage"):
            got = _overview(root / f"lines-{name}.zarrvectors", args.repeat)
            lines += _overview_rows(f"streamlines {name}", n * LENGTH, got)
        rows += [dataclasses.replace(row, label=f"{n:,} x {LENGTH}") for row in lines]
        shutil.rmtree(root / "lines-build.zarrvectors", ignore_errors=True)
        if args.points:
            path, seconds = point_store(root, int(args.points), args.point_chunk, args.seed)
            log(f"levels_overview: points written with levels in {seconds:.1f} s")
            got = _overview(path, args.repeat)
            rows += _overview_rows(f"points, chunk {args.point_chunk:g}", int(args.points), got)
            shutil.rmtree(path, ignore_errors=True)
        python = reference_python(args.reference)
        for kind, n in (
            ("points", int(args.reference_points)),
            ("streamlines", int(args.reference_streamlines)),
        ):
            if n:
                rows += pyramid_rows(kind, n, root, args.repeat, args.seed, python)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


def main() -> None:
    """Parse the arguments, run, print the table (stdout) and progress (stderr)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="1e4 streamlines, 1e6 points (chunk 200), 3 repeats"
    )
    parser.add_argument("--streamlines", type=float, default=1e5)
    parser.add_argument("--points", type=float, default=1e7)
    parser.add_argument("--point-chunk", type=float, default=100.0)
    parser.add_argument(
        "--reference-points", type=float, default=1e6, help="pyramid rows' points; 0: none"
    )
    parser.add_argument(
        "--reference-streamlines",
        type=float,
        default=1e4,
        help="pyramid rows' streamlines; 0: none",
    )
    parser.add_argument("--no-reference", dest="reference", action="store_false")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=None, help="scratch parent (made if missing)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--overview-child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.overview_child is not None:
        path, repeat, mode = args.overview_child
        print(json.dumps(overview_child(path, int(repeat), mode == "cold")))
        return
    if args.quick:
        args.streamlines, args.points, args.point_chunk, args.repeat = 1e4, 1e6, 200.0, 3
        args.reference_points, args.reference_streamlines = 1e5, 2e3
    rows = run(args)
    print(format_table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps([row.to_json() for row in rows], default=str, indent=1))


if __name__ == "__main__":
    main()
