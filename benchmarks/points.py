"""In-process point-cloud cases: write, bounding-box queries and full read, each beside numpy.

The numpy floor stores the same two arrays with :func:`numpy.save`, reads them back with
:func:`numpy.load` and answers a box by a brute-force filter over every row. Validation at
L3, in full and on a sample of the chunks, is set beside the full read of the same store.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import partial

import numpy as np

import zarr_vectors as zv
from benchmarks._data import (
    ATTRIBUTE,
    Box,
    brute_force,
    canonical_rows,
    column_filter,
    make_boxes,
    make_points,
    same_rows,
)
from benchmarks._measure import log, median, median_time, timed, timed_write, tree_size
from benchmarks._table import Row, format_seconds

__all__ = [
    "QUERY_FRACTIONS",
    "VALIDATE_SAMPLE",
    "VALIDATE_TARGET",
    "WRITE_TARGET",
    "WARM_QUERY_TARGET",
    "Written",
    "run_points",
]

QUERY_FRACTIONS = (0.01, 0.25)
"""Box volumes, as fractions of the cube's volume."""

WRITE_TARGET = (10_000_000, 1.5)
"""The issue's write goal: this many points with one attribute in under this many seconds."""

WARM_QUERY_TARGET = (0.01, 0.015)
"""The issue's query goal: a warm query of a box of this volume fraction in under this time."""

VALIDATE_TARGET = (10_000_000, 2.0)
"""The issue's validation goal: L3 of this many points in at most this multiple of a read."""

VALIDATE_SAMPLE = 0.1
"""Share of the occupied chunks the sampled validation checks (the count is rounded up)."""


@dataclass(frozen=True)
class Written:
    """The arrays of one data set and where they were written.

    Attributes
    ----------
    positions
        ``(n, 3)`` float32 input coordinates.
    attribute
        ``(n,)`` float32 input attribute.
    store
        Path of the zarr_vectors store.
    npy
        Paths of the positions and attribute ``.npy`` files.
    """

    positions: np.ndarray
    attribute: np.ndarray
    store: str
    npy: tuple[str, str]

    @property
    def n(self) -> int:
        """Number of points."""
        return int(self.positions.shape[0])

    def load_npy(self) -> tuple[np.ndarray, np.ndarray]:
        """Both arrays read back from their ``.npy`` files."""
        return np.load(self.npy[0]), np.load(self.npy[1])


def _write_ours(path: str, positions: np.ndarray, attribute: np.ndarray) -> None:
    zv.write_points(path, positions, attributes={ATTRIBUTE: attribute})


def _write_npy(paths: tuple[str, str], positions: np.ndarray, attribute: np.ndarray) -> None:
    np.save(paths[0], positions)
    np.save(paths[1], attribute)


def _bench_write(n: int, seed: int, repeat: int, tmp: str) -> tuple[list[Row], Written]:
    """Time ``write_points`` and ``np.save`` of the same arrays, alternating, ``repeat`` times.

    Every store stays until the run's directory goes (deleting many files slows the file
    creations that follow on some file systems, see ``benchmarks/README``); the last pair
    is queried.
    """
    positions, attribute = make_points(n, seed)
    ours: list[float] = []
    floor: list[float] = []
    written: Written | None = None
    for i in range(repeat):
        store = os.path.join(tmp, f"store-{i}.zv")
        npy_dir = os.path.join(tmp, f"npy-{i}")
        os.mkdir(npy_dir)
        npy = (os.path.join(npy_dir, "positions.npy"), os.path.join(npy_dir, "attribute.npy"))
        ours.append(timed_write(partial(_write_ours, store, positions, attribute))[0])
        floor.append(timed_write(partial(_write_npy, npy, positions, attribute))[0])
        written = Written(positions, attribute, store, npy)
    assert written is not None
    t_ours, t_floor = median(ours), median(floor)
    mpts = n / 1e6
    limit_n, limit_s = WRITE_TARGET
    write = Row(
        "write",
        n,
        t_ours,
        t_floor,
        "s",
        detail=f"{mpts / t_ours:.1f} vs {mpts / t_floor:.1f} M points/s; median of {repeat}",
        target=f"< {limit_s} s" if n == limit_n else "",
        passed=(t_ours < limit_s) if n == limit_n else None,
        extra={"ours_all": ours, "floor_all": floor},
    )
    store_bytes, store_files = tree_size(written.store)
    npy_bytes = sum(tree_size(p)[0] for p in written.npy)
    size = Row(
        "size on disk",
        n,
        store_bytes,
        npy_bytes,
        "B",
        detail=f"{store_bytes:,} B in {store_files} files vs {npy_bytes:,} B in 2 .npy files",
        extra={"store_files": store_files, "npy_files": 2},
    )
    return [write, size], written


def _measure_box(
    data: Written, box: Box, repeat: int, loaded: tuple[np.ndarray, np.ndarray]
) -> dict[str, float]:
    """Every timing of one box, and whether our results equal the brute-force rows."""
    expected = canonical_rows(*brute_force(data.positions, data.attribute, box))
    t_open, store = timed(lambda: zv.open(data.store))
    t_cold, result = timed(lambda: store.query(box))
    ok = same_rows(result, expected)
    store = zv.open(data.store)
    store.query(box)  # this handle's first query; the repeats below are warm
    t_warm, result = median_time(lambda: store.query(box), repeat)
    ok = ok and same_rows(result, expected)
    return {
        "open": t_open,
        "cold": t_open + t_cold,
        "warm": t_warm,
        "load": timed(data.load_npy)[0],
        "filter": median_time(lambda: brute_force(*loaded, box), repeat)[0],
        "columns": median_time(lambda: column_filter(*loaded, box), repeat)[0],
        "rows": expected.shape[0],
        "ok": ok,
    }


def _bench_box_fraction(
    data: Written,
    fraction: float,
    boxes: list[Box],
    repeat: int,
    loaded: tuple[np.ndarray, np.ndarray],
) -> list[Row]:
    """Cold and warm queries of the boxes (medians over the boxes), checked against numpy."""
    per_box = [_measure_box(data, box, repeat, loaded) for box in boxes]

    def med(key: str) -> float:
        return median([m[key] for m in per_box])

    def worst(key: str) -> str:
        return format_seconds(max(m[key] for m in per_box))

    ok = all(m["ok"] for m in per_box)
    label = f"{fraction:.0%}"
    cold_row = Row(
        f"query {label} cold",
        data.n,
        med("cold"),
        med("load") + med("filter"),
        "s",
        ok=ok,
        detail=(
            f"fresh zv.open {format_seconds(med('open'))} + first query; worst box "
            f"{worst('cold')}; floor = np.load {format_seconds(med('load'))} + filter "
            f"{format_seconds(med('filter'))}"
        ),
        extra={"per_box": per_box},
    )
    frac_t, limit = WARM_QUERY_TARGET
    has_target = fraction == frac_t
    warm_row = Row(
        f"query {label} warm",
        data.n,
        med("warm"),
        med("filter"),
        "s",
        ok=ok,
        target=f"< {limit * 1e3:.0f} ms" if has_target else "",
        passed=(med("warm") < limit) if has_target else None,
        detail=(
            f"median of {repeat} repeats, median over {len(boxes)} boxes; worst box "
            f"{worst('warm')}; ~{int(med('rows')):,} rows/box; per-column numpy mask "
            f"{format_seconds(med('columns'))}"
        ),
    )
    return [cold_row, warm_row]


def _bench_read(data: Written, repeat: int) -> Row:
    """Open and read the whole store, beside ``np.load`` of both files."""
    ours, floor = [], []
    result: zv.QueryResult | None = None
    for _ in range(repeat):
        t, result = timed(lambda: zv.open(data.store).read())
        ours.append(t)
        floor.append(timed(data.load_npy)[0])
    assert result is not None
    ok = same_rows(result, canonical_rows(data.positions, data.attribute))
    return Row(
        "full read",
        data.n,
        median(ours),
        median(floor),
        "s",
        ok=ok,
        detail=f"zv.open(path).read() vs np.load x2; median of {repeat}",
        extra={"ours_all": ours, "floor_all": floor},
    )


def _chunks(count: int) -> str:
    """``"1 chunk"``, ``"1,000 chunks"``."""
    return f"{count:,} chunk" + ("" if count == 1 else "s")


def _time_validations(
    store: str, repeat: int, sample: int
) -> tuple[list[float], list[float], zv.ValidationReport, zv.ValidationReport]:
    """Time L3 validation in full and with ``sample`` chunks, alternating, ``repeat`` times."""
    full: list[float] = []
    part: list[float] = []
    full_report: zv.ValidationReport | None = None
    part_report: zv.ValidationReport | None = None
    for _ in range(repeat):
        t, full_report = timed(lambda: zv.validate(store, 3))
        full.append(t)
        t, part_report = timed(lambda: zv.validate(store, 3, sample=sample))
        part.append(t)
    assert full_report is not None
    assert part_report is not None
    return full, part, full_report, part_report


def _bench_validate(data: Written, repeat: int, t_read: float) -> list[Row]:
    """Validate the store at L3, in full and on a sample, beside its full read of this run."""
    chunks = zv.open(data.store).chunk_count
    sample = math.ceil(chunks * VALIDATE_SAMPLE)
    zv.validate(data.store, 3, sample=1)  # untimed: compiles or loads the validator's kernels
    full, part, full_report, part_report = _time_validations(data.store, repeat, sample)
    t_full, t_part = median(full), median(part)
    to_read = t_full / t_read
    limit_n, limit_x = VALIDATE_TARGET
    has_target = data.n == limit_n
    full_row = Row(
        "validate L3",
        data.n,
        t_full,
        None,
        "s",
        ok=full_report.ok,
        target=f"≤ {limit_x:g}x read" if has_target else "",
        passed=(to_read <= limit_x) if has_target else None,
        detail=(
            f"{to_read:.2f}x full read ({format_seconds(t_read)}, same store, this run); "
            f"{_chunks(chunks)}; median of {repeat}"
        ),
        extra={"ours_all": full, "read": t_read, "ratio_to_read": to_read, "chunks": chunks},
    )
    checked = min(sample, chunks)
    sample_row = Row(
        f"validate L3 --sample {VALIDATE_SAMPLE:.0%}",
        data.n,
        t_part,
        None,
        "s",
        ok=part_report.ok,
        detail=(
            f"{t_part / t_full:.2f}x full validation; sample={sample}: {checked:,} of "
            f"{_chunks(chunks)} ({checked / chunks:.0%}); median of {repeat}"
        ),
        extra={"ours_all": part, "sample": sample, "chunks": chunks, "notes": part_report.notes},
    )
    return [full_row, sample_row]


def run_points(n: int, *, seed: int, repeat: int, boxes: int, tmp: str) -> list[Row]:
    """All in-process cases for ``n`` points.

    Parameters
    ----------
    n
        Number of points.
    seed
        Seed of the data and of the boxes.
    repeat
        Repeats of each write, warm query, filter, full read and validation (medians
        reported).
    boxes
        Number of boxes per volume fraction.
    tmp
        An empty scratch directory (the caller deletes it).

    Returns
    -------
    list of Row
        Write, size on disk, cold and warm queries per fraction, full read, validation at
        L3 in full and on a sample of the chunks.
    """
    log(f"n={n:,}: write x{repeat}")
    rows, data = _bench_write(n, seed, repeat, tmp)
    loaded = data.load_npy()
    for fraction in QUERY_FRACTIONS:
        log(f"n={n:,}: {boxes} boxes of {fraction:.0%}, {repeat} repeats")
        rows += _bench_box_fraction(
            data, fraction, make_boxes(fraction, boxes, seed), repeat, loaded
        )
    log(f"n={n:,}: full read x{repeat}")
    read = _bench_read(data, repeat)
    rows.append(read)
    assert read.ours is not None
    log(f"n={n:,}: validate L3, full and --sample {VALIDATE_SAMPLE:.0%}, x{repeat}")
    rows += _bench_validate(data, repeat, read.ours)
    return rows
