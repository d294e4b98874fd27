"""Input partitions of a parallel point write: what each task loads, checked as ``write_points``.

A partition is a positions array (anything ``numpy.asarray`` takes), a mapping with
``"positions"`` and optionally ``"attributes"`` and ``"object_ids"``, the path of a ``.npy``
file (positions) or ``.npz`` file (``positions``, optionally ``object_ids``, every other key
an attribute), a block of a dask array, or a partition of a dask dataframe. The coordinator
only describes partitions (:func:`submit_loads`); the data is read, converted and checked in
the tasks (:func:`load_points`), exactly as :func:`~zarr_vectors.write_points` checks its
input.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE
from zarr_vectors.parallel._cluster import Tasks
from zarr_vectors.write import inputs, new_store

__all__ = [
    "ColumnTypes",
    "Loaded",
    "Schema",
    "load_points",
    "submit_loads",
]

ColumnTypes = dict[str, tuple[np.dtype[Any], tuple[int, ...]]]
Schema = tuple[np.dtype[Any], int, ColumnTypes]
"""``(position dtype, D, {column: (dtype, row shape)})`` of a partition after conversion."""

_BATCH_KEYS = {"positions", "attributes", "object_ids"}
_FRAME_AXES = ("x", "y", "z", "w")


@dataclass(frozen=True, slots=True)
class Loaded:
    """A partition's checked columns (on a worker) and what the coordinator needs of it.

    Attributes
    ----------
    positions
        ``(n, D)`` positions, converted as :func:`~zarr_vectors.write_points` converts them.
    columns
        Attribute columns, then ``object_id`` when the partition has object ids.
    lo, hi
        Per-axis minimum and maximum of the positions (float64; meaningless when ``n = 0``).
    """

    positions: np.ndarray
    columns: dict[str, np.ndarray]
    lo: np.ndarray
    hi: np.ndarray

    @property
    def schema(self) -> Schema:
        """The partition's column types."""
        types = {k: (v.dtype, tuple(v.shape[1:])) for k, v in self.columns.items()}
        return self.positions.dtype, int(self.positions.shape[1]), types


def _dask_array(partitions: Any) -> bool:
    if "dask.array" not in sys.modules:
        return False
    da = require("dask.array", extra="distributed", purpose="dask array input")
    return isinstance(partitions, da.Array)


def _dask_frame(partitions: Any) -> bool:
    if "dask.dataframe" not in sys.modules:
        return False
    dd = require("dask.dataframe", extra="distributed", purpose="dask dataframe input")
    return isinstance(partitions, dd.DataFrame)


def submit_loads(
    tasks: Tasks,
    partitions: Any,
    names: tuple[str, ...] | None,
    axis_names: tuple[str, ...] | None,
) -> list[Any]:
    """Start one task per partition that loads and checks it; return their futures.

    Parameters
    ----------
    tasks
        The write's tasks.
    partitions
        A list of partitions, a dask array (its blocks along axis 0) or a dask dataframe.
    names
        Attribute names to keep (None: every attribute a partition has).
    axis_names
        Position columns of a dataframe (default: ``x, y`` and ``z``, ``w`` when present).

    Raises
    ------
    InvalidInputError
        When ``partitions`` is none of these.
    """
    if _dask_array(partitions):
        if partitions.ndim != 2:
            raise InvalidInputError(
                f"a dask array of positions must have shape (n, D), got {partitions.shape}"
            )
        blocks = partitions.rechunk({1: -1}).to_delayed().ravel().tolist()
        raw = tasks.compute(blocks)
    elif _dask_frame(partitions):
        raw = tasks.compute(partitions.to_delayed())
    elif isinstance(partitions, Sequence) and not isinstance(partitions, str | bytes):
        raw = list(partitions)
    else:
        raise InvalidInputError(
            "partitions must be a list (of arrays, mappings or .npy/.npz paths), a dask "
            f"array or a dask dataframe, got {type(partitions).__name__}"
        )
    if not raw:
        raise InvalidInputError("nothing to write: give at least one partition")
    # In-memory partitions travel inside their load task (see Tasks.submit).
    return [
        tasks.submit(f"load-{k}", load_points, part, names, axis_names)
        for k, part in enumerate(raw)
    ]


def load_points(
    raw: Any, names: tuple[str, ...] | None, axis_names: tuple[str, ...] | None
) -> Loaded:
    """Read a partition and check it as :func:`~zarr_vectors.write_points` checks its input.

    Raises
    ------
    InvalidInputError
        For a partition that is not valid input, or lacks a named attribute.
    """
    if isinstance(raw, str | os.PathLike):
        raw = _read_file(Path(raw))
    elif hasattr(raw, "columns") and hasattr(raw, "to_numpy"):
        raw = _frame_batch(raw, axis_names)
    if isinstance(raw, Mapping):
        unknown = set(raw) - _BATCH_KEYS
        if unknown or "positions" not in raw:
            raise InvalidInputError(
                "a partition mapping holds 'positions' and optionally 'attributes' and "
                f"'object_ids'; got keys {sorted(raw)}"
            )
        positions, attributes, object_ids = (
            raw["positions"],
            raw.get("attributes"),
            raw.get("object_ids"),
        )
    else:
        positions, attributes, object_ids = raw, None, None
    pos = inputs.positions(positions)
    n = pos.shape[0]
    lo, hi = new_store.check_finite(pos)
    columns = inputs.attributes(_selected(attributes, names), n)
    ids = inputs.integer_ids(object_ids, n)
    if ids is not None:
        columns[OBJECT_ID_ATTRIBUTE] = ids
    return Loaded(pos, columns, lo, hi)


def _selected(attributes: Mapping[str, Any] | None, names: tuple[str, ...] | None) -> Any:
    if names is None:
        return attributes
    given = dict(inputs.mapping(attributes, "attributes"))
    missing = [name for name in names if name not in given]
    if missing:
        raise InvalidInputError(
            f"a partition lacks the attributes {missing} (it has {sorted(given)})"
        )
    return {name: given[name] for name in names}


def _read_file(path: Path) -> Any:
    """Positions of a ``.npy`` file, or the batch mapping of a ``.npz`` file."""
    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False)
    if path.suffix != ".npz":
        raise InvalidInputError(f"{path}: a partition file must be .npy or .npz")
    with np.load(path, allow_pickle=False) as archive:
        if "positions" not in archive.files:
            raise InvalidInputError(f"{path}: a .npz partition needs a 'positions' array")
        batch: dict[str, Any] = {
            "positions": archive["positions"],
            "attributes": {
                k: archive[k] for k in archive.files if k not in ("positions", "object_ids")
            },
        }
        if "object_ids" in archive.files:
            batch["object_ids"] = archive["object_ids"]
    return batch


def _frame_batch(frame: Any, axis_names: tuple[str, ...] | None) -> dict[str, Any]:
    """The batch mapping of a dataframe: position columns, ``object_id``, attributes."""
    columns = [str(c) for c in frame.columns]
    axes = list(axis_names or _leading_axes(columns))
    if len(axes) < 2 or any(a not in columns for a in axes):
        raise InvalidInputError(
            f"a dataframe partition needs the position columns {axes if axis_names else 'x, y'}"
            f" (then z, w); it has {columns}"
        )
    rest = [c for c in columns if c not in axes and c != OBJECT_ID_ATTRIBUTE]
    batch: dict[str, Any] = {
        "positions": frame[axes].to_numpy(),
        "attributes": {c: frame[c].to_numpy() for c in rest},
    }
    if OBJECT_ID_ATTRIBUTE in columns:
        batch["object_ids"] = frame[OBJECT_ID_ATTRIBUTE].to_numpy()
    return batch


def _leading_axes(columns: list[str]) -> list[str]:
    """``x, y``, then ``z`` and ``w`` as long as the dataframe has them."""
    axes = []
    for axis in _FRAME_AXES:
        if axis not in columns:
            break
        axes.append(axis)
    return axes
