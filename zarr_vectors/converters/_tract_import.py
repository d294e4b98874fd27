"""Tractograms into streamline stores: names, groups and the kept header (see
:mod:`zarr_vectors.converters.tractograms`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.converters._common import safe_name
from zarr_vectors.converters._tract_io import Tracts
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import is_valid_name
from zarr_vectors.geometry._pipeline import WriteOptions
from zarr_vectors.geometry.polylines import write_polylines
from zarr_vectors.store.io import StoreLike

__all__ = ["KEPT", "add_label_groups", "write_store"]

KEPT = "tractogram"
"""The key under the root ``custom_metadata`` that keeps the file's header."""

_EMPTY_CHUNK_MM = 10.0  # chunk side of a store of a tractogram without vertices


def _label(value: Any) -> str:
    """A group-name part for a column value: ``3`` for 3.0, else the value's text."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def add_label_groups(tracts: Tracts, key: str) -> None:
    """One group per distinct value of the per-streamline column ``key``."""
    column = tracts.dps.get(key)
    if column is None:
        raise InvalidInputError(
            f"group_by={key!r} is not a per-streamline column; columns: {sorted(tracts.dps)}"
        )
    if column.ndim != 1:
        raise InvalidInputError(f"group_by={key!r} has {column.shape[1]} values per streamline")
    labels, inverse = np.unique(column, return_inverse=True)
    for j, label in enumerate(labels):
        name = f"{key}_{_label(label.item())}"
        if name in tracts.groups:
            raise InvalidInputError(f"group_by={key!r}: the file has a group {name!r} already")
        tracts.groups[name] = np.flatnonzero(inverse == j)


def _safe_names(names: list[str]) -> dict[str, str]:
    """An attribute name (spec §9.4) for each of ``names``, distinct, kept when valid."""
    out: dict[str, str] = {}
    taken = {n for n in names if is_valid_name(n)}
    for name in names:
        if is_valid_name(name):
            out[name] = name
            continue
        base = safe_name(name)[:240]
        safe, k = base, 2
        while safe in taken:
            safe, k = f"{base}_{k}", k + 1
        taken.add(safe)
        out[name] = safe
    return out


def _group_columns(
    tracts: Tracts, names: dict[str, str]
) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """dpg as group attribute columns (one row per group) and the groups each lacks."""
    groups = list(tracts.groups)
    columns: dict[str, np.ndarray] = {}
    absent: dict[str, list[str]] = {}
    for key, safe in names.items():
        rows = [tracts.dpg.get(g, {}).get(key) for g in groups]
        present = [np.asarray(r).reshape(-1) for r in rows if r is not None]
        if len({r.shape for r in present}) != 1:
            raise InvalidInputError(f"dpg {key!r} has a different length in different groups")
        dtype = np.result_type(*present)
        fill = np.nan if dtype.kind in "fc" else 0
        column = np.full((len(groups), present[0].shape[0]), fill, dtype=dtype)
        for j, row in enumerate(rows):
            if row is not None:
                column[j] = np.asarray(row).reshape(-1)
        columns[safe] = column[:, 0] if column.shape[1] == 1 else column
        missing = [g for g, row in zip(groups, rows, strict=True) if row is None]
        if missing:
            absent[safe] = missing
    return columns, absent


def _metadata(
    tracts: Tracts, fmt: str, renamed: dict[str, dict[str, str]], absent: dict[str, list[str]]
) -> dict[str, Any]:
    """Root keys of the store: ``coordinate_system``, the kept header, a TCK step size."""
    kept: dict[str, Any] = {"source_format": fmt}
    if tracts.space is not None:
        kept.update(tracts.space.to_json())
    if tracts.fields:
        kept["tck_fields"] = dict(tracts.fields)
    names = {kind: {s: o for o, s in m.items() if s != o} for kind, m in renamed.items()}
    if any(names.values()):
        kept["names"] = {kind: m for kind, m in names.items() if m}
    if absent:
        kept["dpg_absent"] = absent
    metadata: dict[str, Any] = {"coordinate_system": "RAS", "custom_metadata": {KEPT: kept}}
    step = _positive_number(tracts.fields.get("step_size"))
    if step is not None:
        metadata["step_size"] = step
    return metadata


def _positive_number(text: str | None) -> float | None:
    """``text`` as a finite positive number, or None."""
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and np.isfinite(value) and value > 0 else None


def write_store(
    tracts: Tracts, fmt: str, dst: StoreLike, overwrite: bool, chunk_shape: Any, bin_shape: Any
) -> None:
    """Write ``tracts``, read from a ``fmt`` file, as a streamline store at ``dst``.

    Raises
    ------
    InvalidInputError
        For data the store cannot hold (before anything is written).
    """
    dpg_keys = list(dict.fromkeys(k for data in tracts.dpg.values() for k in data))
    renamed = {
        "dpv": _safe_names(list(tracts.dpv)),
        "dps": _safe_names(list(tracts.dps)),
        "dpg": _safe_names(dpg_keys),
    }
    group_columns, absent = _group_columns(tracts, renamed["dpg"])
    if chunk_shape is None and tracts.positions.shape[0] == 0:
        chunk_shape = _EMPTY_CHUNK_MM
    write_polylines(
        dst,
        (tracts.positions, tracts.offsets),
        kind="streamline",
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        attributes={renamed["dpv"][k]: v for k, v in tracts.dpv.items()},
        object_attributes={renamed["dps"][k]: v for k, v in tracts.dps.items()},
        groups={name: members.tolist() for name, members in tracts.groups.items()} or None,
        group_attributes=group_columns or None,
        mode="w" if overwrite else "w-",
        options=WriteOptions(axis_units="millimeter"),
        metadata=_metadata(tracts, fmt, renamed, absent),
    )
