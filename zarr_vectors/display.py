"""Building blocks of the plain-text and HTML summaries shown in notebooks.

:class:`~zarr_vectors.VectorStore` and :class:`~zarr_vectors.QueryResult` gather what to
show; this module formats plain values (numbers, shapes, dtypes, names) and renders
sections of rows as one self-contained HTML ``<table>``: inline styles only, no class, script
or external resource, and every string passes through :func:`html.escape`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Section",
    "column_spec",
    "format_bytes",
    "format_count",
    "format_grid",
    "format_number",
    "format_vector",
    "name_list",
    "render_html",
]

_TABLE_STYLE = (
    "border-collapse:collapse;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
    "font-size:12px;line-height:1.35;margin:2px 0"
)
_CELL_STYLE = "text-align:left;padding:1px 8px;border:none;vertical-align:top"
_HEAD_STYLE = f"{_CELL_STYLE};font-weight:600;color:#555"
_SECTION_STYLE = (
    f"{_CELL_STYLE};font-weight:600;border-top:1px solid #bbb;background:rgba(127,127,127,0.08)"
)
_TITLE_STYLE = f"{_CELL_STYLE};font-weight:700;font-size:13px;padding-bottom:3px"


@dataclass(frozen=True, slots=True)
class Section:
    """A titled block of rows; every row is a tuple of cell texts.

    ``header`` (optional) names the columns. A row shorter than the widest row of the table
    has its last cell stretched over the remaining columns.
    """

    title: str
    rows: list[tuple[str, ...]] = field(default_factory=list)
    header: tuple[str, ...] | None = None


def render_html(title: str, sections: Sequence[Section]) -> str:
    """One self-contained HTML table: a title row, then each section's title and rows."""
    width = max(
        [2]
        + [len(row) for s in sections for row in s.rows]
        + [len(s.header) for s in sections if s.header]
    )
    lines = [
        f'<table style="{_TABLE_STYLE}">',
        f'<tr><th colspan="{width}" style="{_TITLE_STYLE}">{_esc(title)}</th></tr>',
    ]
    for section in sections:
        lines.append(
            f'<tr><th colspan="{width}" style="{_SECTION_STYLE}">{_esc(section.title)}</th></tr>'
        )
        if section.header:
            lines.append(_row(section.header, width, _HEAD_STYLE, "th"))
        lines.extend(_row(row, width, _CELL_STYLE, "td") for row in section.rows)
    lines.append("</table>")
    return "\n".join(lines)


def _row(cells: Sequence[str], width: int, style: str, tag: str) -> str:
    parts = []
    for j, cell in enumerate(cells):
        span = width - j if j == len(cells) - 1 and len(cells) < width else 1
        colspan = f' colspan="{span}"' if span > 1 else ""
        parts.append(f'<{tag}{colspan} style="{style}">{_esc(cell)}</{tag}>')
    return "<tr>" + "".join(parts) + "</tr>"


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def format_count(n: int | None) -> str:
    """``12,345``; ``"-"`` for None."""
    return "-" if n is None else f"{int(n):,}"


def format_bytes(n: int) -> str:
    """Bytes in binary units: ``"512 B"``, ``"1.5 KiB"``, ``"12.3 MiB"``."""
    size = float(n)
    if size < 1024:
        return f"{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        size /= 1024
        if size < 1024 or unit == "TiB":
            break
    return f"{size:.1f} {unit}"


def format_number(value: float) -> str:
    """A number to 6 significant digits, integers in full: ``2``, ``0.25``, ``3.14159``."""
    number = float(value)
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.6g}"


def format_vector(values: Iterable[float]) -> str:
    """``[1, 2.5, 3]``."""
    return "[" + ", ".join(format_number(v) for v in values) + "]"


def format_grid(shape: Iterable[int]) -> str:
    """``20 x 21 x 9``."""
    return " x ".join(str(int(s)) for s in shape)


def column_spec(dtype: Any, row_shape: Sequence[int]) -> str:
    """A column's dtype and per-row shape: ``"float32"``, ``"uint8[3]"``, ``"int64[2, 2]"``."""
    name = np.dtype(dtype).name
    return f"{name}[{', '.join(str(int(k)) for k in row_shape)}]" if len(row_shape) else name


def name_list(names: Sequence[str], limit: int = 8) -> str:
    """``a, b, c``, or the first ``limit`` names followed by ``… (n in all)``."""
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", … ({len(names)} in all)"
