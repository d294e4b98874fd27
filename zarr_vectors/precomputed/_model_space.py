"""From a store's coordinates to Neuroglancer's: three float32 columns and nanometres.

Neuroglancer's skeleton and mesh formats hold 3-D ``float32`` vertices in a "stored model"
space and map them to nanometres with a 3x4 ``transform``. A store has 2 to 4 axes in units
named by UDUNITS-2 (or ``"unknown"``): a 2-D store is shown in the plane ``z = 0``; axes
past the third are not positions (the skeleton source shows them as vertex attributes).
An unknown unit is taken as nanometres, so the numbers are shown as stored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "NANOMETRES_PER_UNIT",
    "json_bytes",
    "nanometres_per_unit",
    "scale_of",
    "segment_id",
    "shown_dtype",
    "stored_positions",
    "transform_of",
]

NANOMETRES_PER_UNIT = {
    "angstrom": 0.1,
    "nanometer": 1.0,
    "nanometre": 1.0,
    "nm": 1.0,
    "micrometer": 1e3,
    "micrometre": 1e3,
    "micron": 1e3,
    "um": 1e3,
    "millimeter": 1e6,
    "millimetre": 1e6,
    "mm": 1e6,
    "centimeter": 1e7,
    "centimetre": 1e7,
    "cm": 1e7,
    "meter": 1e9,
    "metre": 1e9,
    "m": 1e9,
}

_DECIMAL = re.compile(r"0|[1-9][0-9]*")


def nanometres_per_unit(unit: str) -> float:
    """Nanometres in one ``unit``; 1.0 for ``"unknown"`` and any unit that is not a length."""
    return NANOMETRES_PER_UNIT.get(unit.strip().lower(), 1.0)


def scale_of(units: Sequence[str]) -> np.ndarray:
    """``(3,)`` nanometres per stored unit of the first three axes (1.0 for a missing axis)."""
    scale = np.ones(3, dtype=np.float64)
    for axis, unit in enumerate(units[:3]):
        scale[axis] = nanometres_per_unit(unit)
    return scale


def transform_of(units: Sequence[str]) -> list[float]:
    """The row-major 3x4 ``transform`` of an ``info``: a scale to nanometres, no shift."""
    matrix = np.zeros((3, 4), dtype=np.float64)
    matrix[:, :3] = np.diag(scale_of(units))
    return [float(v) for v in matrix.ravel()]


def stored_positions(positions: np.ndarray) -> np.ndarray:
    """``(n, 3)`` float32 little-endian positions: the first three columns, zeros for z in 2-D."""
    out = np.zeros((len(positions), 3), dtype="<f4")
    width = min(positions.shape[1], 3)
    out[:, :width] = positions[:, :width]
    return out


def shown_dtype(dtype: np.dtype[Any]) -> np.dtype[Any] | None:
    """The type Neuroglancer shows values of ``dtype`` as, None if it cannot show them.

    Its skeleton vertex attributes and number segment properties are ``float32`` or
    integers of at most 32 bits: floats become ``float32``, booleans ``uint8``, 64-bit
    integers ``float32`` (exact to 2**24, never wrapped); text and other types are not shown.
    """
    if dtype.kind == "b":
        return np.dtype("<u1")
    if dtype.kind == "f" or (dtype.kind in "iu" and dtype.itemsize > 4):
        return np.dtype("<f4")
    if dtype.kind in "iu":
        return dtype.newbyteorder("<")
    return None


def segment_id(path: str) -> int | None:
    """The segment id a file name spells in canonical decimal (``"17"``), else None."""
    if _DECIMAL.fullmatch(path) is None or len(path) > 20:
        return None
    value = int(path)
    return value if value < 2**64 else None


def json_bytes(document: dict[str, Any]) -> bytes:
    """A JSON document's UTF-8 bytes, keys in the order given."""
    return json.dumps(document, indent=1).encode("utf-8")
