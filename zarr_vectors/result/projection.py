"""Which coordinate columns a conversion or a plot uses: ``axes=`` by index or by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zarr_vectors.errors import InvalidInputError

__all__ = ["axis_label", "resolve_axes"]


def resolve_axes(
    axes: Sequence[int | str] | None,
    names: Sequence[str],
    default: tuple[int, ...],
    *,
    lengths: tuple[int, ...] = (2, 3),
) -> tuple[int, ...]:
    """Column indices of ``axes`` (indices or axis names), or ``default`` when None.

    Parameters
    ----------
    axes
        Axis indices (``(0, 2)``) or names (``("x", "z")``), or None.
    names
        The axis names of the data, one per coordinate column.
    default
        What None stands for.
    lengths
        The numbers of axes allowed.

    Raises
    ------
    InvalidInputError
        For an unknown name, an index out of range, a repeated axis or a wrong count.
    """
    if axes is None:
        return default
    if isinstance(axes, str | bytes) or not isinstance(axes, Sequence):
        raise InvalidInputError(f"axes must be a sequence of axis indices or names, got {axes!r}")
    picked = tuple(_axis_index(a, names) for a in axes)
    if len(picked) not in lengths:
        allowed = " or ".join(str(n) for n in lengths)
        raise InvalidInputError(f"axes must name {allowed} axes, got {len(picked)}")
    if len(set(picked)) != len(picked):
        raise InvalidInputError(f"axes must be distinct, got {list(axes)}")
    return picked


def _axis_index(axis: Any, names: Sequence[str]) -> int:
    if isinstance(axis, str):
        if axis not in names:
            raise InvalidInputError(f"no axis named {axis!r}; axes: {list(names)}")
        return list(names).index(axis)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise InvalidInputError(f"an axis is an index or a name, got {axis!r}")
    if not 0 <= axis < len(names):
        raise InvalidInputError(f"axis {axis} is out of range for {len(names)}-D data")
    return axis


def axis_label(name: str, unit: str | None) -> str:
    """``"x (micrometer)"``, or the bare name when the unit is unknown."""
    return name if unit in (None, "", "unknown") else f"{name} ({unit})"
