"""Inputs of L3: the non-zero cells of ``vertex_counts`` and the grid index of shard keys."""

from __future__ import annotations

import re

import numpy as np

from zarr_vectors.store.arrays import nonzero_cells
from zarr_vectors.validate.context import STORE_ERRORS, Context

__all__ = ["parse_shard_key", "read_nonzero_counts"]

_INDEX = re.compile(r"0|[1-9][0-9]*")


def read_nonzero_counts(ctx: Context, path: str) -> tuple[np.ndarray, np.ndarray] | str:
    """Every non-zero cell of ``vertex_counts``, in C order of the grid index.

    Returns
    -------
    (cells, values) or str
        ``(m, D)`` int64 grid indices and their ``(m,)`` counts; a message when the array
        cannot be read.
    """
    try:
        cells, values = nonzero_cells(ctx.io, path)
    except STORE_ERRORS as exc:  # CorruptChunkError is a ValueError
        return f"{path} cannot be read ({type(exc).__name__}: {exc})"
    return cells.astype(np.int64), values.astype(np.int64)


def parse_shard_key(
    key: str, path: str, grid: tuple[int, ...], row_ndim: int
) -> tuple[int, ...] | None:
    """Grid index of the shard ``key`` of the array at ``path``; None for any other key.

    A shard key is ``<path>/c/<g_0>/.../<g_{D-1}>/0[/0...]`` with one trailing ``0`` per
    non-grid dimension (spec §2.2), and ``g`` inside the grid.
    """
    parts = key[len(path) + 3 :].split("/")
    ndim = len(grid)
    if not key.startswith(f"{path}/c/") or len(parts) != ndim + 1 + row_ndim:
        return None
    if any(p != "0" for p in parts[ndim:]) or not all(_INDEX.fullmatch(p) for p in parts[:ndim]):
        return None
    g = tuple(int(p) for p in parts[:ndim])
    return g if all(i < n for i, n in zip(g, grid, strict=True)) else None
