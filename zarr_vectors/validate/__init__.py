"""Validation of Zarr Vectors stores against the specification (spec §11).

Use :func:`validate`; it returns a :class:`ValidationReport` listing every finding with its
stable check id, severity and store path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from zarr_vectors._progress import progress_reporter
from zarr_vectors.errors import InvalidInputError, StoreNotFoundError
from zarr_vectors.store.io import StoreIO, StoreLike, resolve_store
from zarr_vectors.validate import consistency, geometry_claims, metadata, pyramid, structure
from zarr_vectors.validate.checks import CHECKS
from zarr_vectors.validate.context import Context, Progress
from zarr_vectors.validate.report import Problem, ValidationReport

__all__ = ["CHECKS", "Problem", "Progress", "ValidationReport", "validate"]

MAX_LEVEL = 5


def _geometry(ctx: Context) -> None:
    """L4: geometry claims and topology of the objects of level 0 (spec §11.5)."""
    geometry_claims.run(ctx)


_RUNNERS = (
    (1, structure.run),
    (2, metadata.run),
    (3, consistency.run),
    (4, _geometry),
    (5, pyramid.run),
)


def _check_arguments(level: object, sample: object) -> None:
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= MAX_LEVEL:
        raise InvalidInputError(f"level must be an integer from 1 to {MAX_LEVEL}, got {level!r}")
    if sample is not None and (
        isinstance(sample, bool) or not isinstance(sample, int) or sample < 1
    ):
        raise InvalidInputError(f"sample must be None or a positive integer, got {sample!r}")


def _describe(store: StoreLike) -> str:
    return os.fspath(store) if isinstance(store, str | os.PathLike) else str(store)


def validate(
    store: StoreLike,
    level: int = 2,
    *,
    sample: int | None = None,
    progress: Progress | bool | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> ValidationReport:
    """Check a store against the Zarr Vectors specification (spec §11).

    Levels are cumulative: level k runs L1 (structure), L2 (metadata), L3 (consistency of
    the chunk data), L4 (geometry claims) and L5 (pyramid) up to k, in this order, and
    stops after the first level that reports an *error* (warnings do not stop it).

    Parameters
    ----------
    store
        A local directory path, a ``.zip`` path, a URL, or a zarr ``Store``. The store is
        only read.
    level
        Highest level to run, 1 to 5.
    sample
        L3 only: check ``sample`` chunks per level instead of all of them. The chunks are
        chosen deterministically, evenly spaced over the occupied chunks in C order of
        their grid index (positions ``floor(i · m / sample)`` for ``i < sample`` among the
        ``m`` occupied chunks). Checks on ``vertex_counts``, on the totals and on the
        listing of shard keys still cover every chunk; ``bounding_box_exact`` then only
        verifies that the sampled vertices lie inside the bounding box. The report notes
        that it was sampled.
    progress
        Progress of L3 over the chunks of each level: None (default) draws a progress bar
        when standard error is a terminal or in Jupyter, True always, False never; a
        callable is called as ``progress(level, chunks_done, chunks_total)`` instead.
    storage_options
        URLs only: options of the fsspec filesystem, as for :func:`zarr_vectors.open`
        (e.g. ``{"anon": True}``, or ``{"endpoint_url": ..., "key": ..., "secret": ...}``).

    Returns
    -------
    ValidationReport
        Every finding; ``report.ok`` is true when there is no error. ``report.level`` is
        the last level that ran and ``report.checks_run`` the ids evaluated.

    Raises
    ------
    InvalidInputError
        When ``level`` or ``sample`` is out of range, ``store`` is not store-like, or
        ``storage_options`` come with a store that is not a URL.

    Notes
    -----
    A store that cannot be opened or read yields a report with the relevant L1 finding
    (e.g. ``L1.store_exists``) instead of an exception.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.ones((10, 3), dtype=np.float32), chunk_shape=10.0)
    >>> report = zv.validate(path, level=3)
    >>> report.ok, report.problems
    (True, [])
    >>> (path / "0" / "vertex_counts" / "zarr.json").unlink()   # damage the store
    >>> damaged = zv.validate(path, level=3)
    >>> damaged.ok, damaged.level
    (False, 1)
    """
    _check_arguments(level, sample)
    reporter = progress_reporter(progress)
    report = ValidationReport(store=_describe(store), level=1)
    try:
        resolved = resolve_store(store, mode="r", storage_options=storage_options)
    except StoreNotFoundError as exc:
        report.checks_run.append("L1.store_exists")
        report.add("L1.store_exists", CHECKS["L1.store_exists"], ".", str(exc))
        structure.interrupted_writes(report, store)
        return report
    io = StoreIO(resolved)
    try:
        ctx = Context(io, report, sample, reporter)
        for number, runner in _RUNNERS[:level]:
            report.level = number
            start = len(report.problems)
            runner(ctx)
            if ctx.errors_since(start):
                break
    finally:
        reporter.close()
        if resolved is not store:
            io.close()
    return report
