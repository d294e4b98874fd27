"""Result rows and the plain-text table (standard library only)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["COLUMNS", "Row", "format_seconds", "format_table", "size_label"]

COLUMNS = (
    "case",
    "n",
    "zarr_vectors",
    "floor (numpy)",
    "ours/floor",
    "target",
    "status",
    "ok",
    "detail",
)


@dataclass
class Row:
    """One line of the table.

    Attributes
    ----------
    case
        What was measured, e.g. ``"write"`` or ``"query 1% warm"``.
    n
        Number of points of the data set.
    ours
        zarr_vectors' value, in ``unit``; None when not measured.
    floor
        The numpy floor's value, in ``unit``; None when there is none.
    unit
        ``"s"`` (seconds), ``"B"`` (bytes) or ``"x input"`` (multiple of the input bytes).
    detail
        Free text shown in the last column.
    target
        The goal stated in the issue, as text (empty when none).
    passed
        Whether ``ours`` meets ``target``; None when there is no target.
    ok
        Whether the results agreed with the brute-force reference; None when not checked.
    extra
        Raw numbers kept in the JSON output only.
    label
        Text of the ``n`` cell when ``n`` alone does not describe the data set (objects:
        ``"1e4 x 100"``); empty for :func:`size_label` of ``n``.
    """

    case: str
    n: int
    ours: float | None
    floor: float | None
    unit: str
    detail: str = ""
    target: str = ""
    passed: bool | None = None
    ok: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    @property
    def ratio(self) -> float | None:
        """``ours / floor``, or None when either is missing or the floor is zero."""
        if self.ours is None or not self.floor:
            return None
        return self.ours / self.floor

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON-ready dict (with the ratio)."""
        return {**asdict(self), "ratio": self.ratio}

    def cells(self) -> tuple[str, ...]:
        """The row's cells, formatted, in :data:`COLUMNS` order."""
        status = "" if self.passed is None else ("PASS" if self.passed else "FAIL")
        ok = "" if self.ok is None else ("ok" if self.ok else "FAIL")
        ratio = self.ratio
        return (
            self.case,
            self.label or size_label(self.n),
            format_value(self.ours, self.unit),
            format_value(self.floor, self.unit),
            "" if ratio is None else f"{ratio:.2f}x",
            self.target,
            status,
            ok,
            self.detail,
        )


def size_label(n: int) -> str:
    """``1e6`` for powers of ten, ``1,234,567`` otherwise.

    Parameters
    ----------
    n
        A point count.

    Returns
    -------
    str
        The label.
    """
    text = str(n)
    if n >= 10 and text.strip("0") == "1":
        return f"1e{len(text) - 1}"
    return f"{n:,}"


def format_seconds(seconds: float) -> str:
    """Seconds as ``850 us``, ``12.3 ms`` or ``1.23 s``.

    Parameters
    ----------
    seconds
        A duration.

    Returns
    -------
    str
        The formatted duration.
    """
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.2f} s"


def format_value(value: float | None, unit: str) -> str:
    """A cell value with its unit; empty for None.

    Parameters
    ----------
    value
        The number.
    unit
        ``"s"``, ``"B"`` or another unit appended after the number.

    Returns
    -------
    str
        The formatted cell.
    """
    if value is None:
        return ""
    if unit == "s":
        return format_seconds(value)
    if unit == "B":
        return f"{value / 1e6:.2f} MB"
    return f"{value:.2f}{unit}" if unit.startswith("x") else f"{value:.3g} {unit}"


def format_table(rows: list[Row]) -> str:
    """The rows as an aligned plain-text table with a header and a rule.

    Parameters
    ----------
    rows
        The rows, in print order.

    Returns
    -------
    str
        The table, without a trailing newline.
    """
    return align_table(COLUMNS, [row.cells() for row in rows])


def align_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Cells as left-aligned columns under a header and a rule of dashes.

    Parameters
    ----------
    header
        The column titles.
    rows
        One tuple of cell texts per row, as many as ``header``.

    Returns
    -------
    str
        The table, without a trailing newline.
    """
    cells = [header, *rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]

    def line(values: tuple[str, ...]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(c) for c in cells[1:])])
