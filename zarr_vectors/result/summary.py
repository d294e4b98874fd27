"""The text and HTML summaries of a :class:`~zarr_vectors.QueryResult` (its repr)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from zarr_vectors.display import (
    Section,
    column_spec,
    format_bytes,
    format_count,
    format_number,
    format_vector,
    render_html,
)

if TYPE_CHECKING:
    from zarr_vectors.result.query_result import QueryResult

__all__ = ["attribute_rows", "result_html", "result_text"]

_ROLES = (("vertex", "attributes"), ("object", "object_attributes"), ("link", "link_attributes"))


def _bounds(result: QueryResult) -> tuple[np.ndarray, np.ndarray] | None:
    if not len(result):
        return None
    return result.positions.min(axis=0), result.positions.max(axis=0)


def _units(result: QueryResult) -> tuple[str, ...]:
    return result.axis_units or ("unknown",) * result.ndim


def _links(result: QueryResult) -> tuple[str, int] | None:
    if result.faces is not None:
        return "faces", int(result.faces.shape[0])
    if result.edges is not None:
        return "edges", int(result.edges.shape[0])
    return None


def attribute_rows(result: QueryResult) -> list[tuple[str, str, str]]:
    """``(role, name, column spec)`` of every vertex, object and link attribute."""
    return [
        (role, name, column_spec(values.dtype, values.shape[1:]))
        for role, member in _ROLES
        for name, values in getattr(result, member).items()
    ]


def _headline(result: QueryResult) -> str:
    axes = ", ".join(result.coordinate_names)
    units = set(_units(result)) - {"unknown"}
    unit = f" in {', '.join(sorted(units))}" if units else ""
    parts = []
    if result.object_count is not None:
        parts.append(f"{format_count(result.object_count)} objects")
    parts.append(f"{format_count(len(result))} vertices ({result.positions.dtype})")
    links = _links(result)
    if links is not None:
        parts.append(f"{format_count(links[1])} {links[0]}")
    if result.object_count is None and result.vertex_object_ids is not None:
        parts.append("with object ids")
    if result.level:
        parts.append(f"from level {result.level}")
    return f"{result.kind}, {result.ndim}-D ({axes}{unit}): " + ", ".join(parts)


def result_text(result: QueryResult) -> str:
    """A few lines: kind and counts, bounds, attributes by role."""
    lines = [f"<QueryResult {_headline(result)}"]
    bounds = _bounds(result)
    lines.append(
        "  empty"
        if bounds is None
        else f"  bounds {format_vector(bounds[0])} .. {format_vector(bounds[1])}"
    )
    rows = attribute_rows(result)
    for role, _ in _ROLES:
        mine = [f"{name} {spec}" for r, name, spec in rows if r == role]
        if mine:
            lines.append(f"  {role} attributes: {', '.join(mine)}")
    return "\n".join(lines) + ">"


def _nbytes(result: QueryResult) -> int:
    arrays = [
        result.positions,
        result.vertex_object_ids,
        result.object_ids,
        result.offsets,
        result.edges,
        result.faces,
        *result.attributes.values(),
        *result.object_attributes.values(),
        *result.link_attributes.values(),
    ]
    return sum(int(a.nbytes) for a in arrays if a is not None)


def result_html(result: QueryResult) -> str:
    """A compact HTML table: counts, one row per axis with its bounds, the attributes."""
    counts = Section("contents")
    counts.rows.append(("vertices", f"{format_count(len(result))} ({result.positions.dtype})"))
    if result.object_count is not None:
        counts.rows.append(("objects", format_count(result.object_count)))
    links = _links(result)
    if links is not None:
        counts.rows.append((links[0], format_count(links[1])))
    if result.object_count is None and result.vertex_object_ids is not None:
        counts.rows.append(("object ids", f"per vertex ({result.vertex_object_ids.dtype})"))
    if result.level:
        counts.rows.append(("level", str(result.level)))
    counts.rows.append(("memory", format_bytes(_nbytes(result))))
    axes = Section("axes", header=("axis", "unit", "min", "max"))
    bounds = _bounds(result)
    for d, (name, unit) in enumerate(zip(result.coordinate_names, _units(result), strict=True)):
        lo, hi = ("-", "-") if bounds is None else tuple(format_number(b[d]) for b in bounds)
        axes.rows.append((name, "-" if unit == "unknown" else unit, lo, hi))
    sections = [counts, axes]
    rows = attribute_rows(result)
    if rows:
        sections.append(Section("attributes", rows=list(rows), header=("of", "name", "dtype")))
    return render_html(f"QueryResult: {result.kind}, {result.ndim}-D", sections)
