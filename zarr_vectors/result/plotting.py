"""Drawing a :class:`~zarr_vectors.QueryResult` with matplotlib (the ``plot`` extra).

This module sits in the geometry layer, beside the result it draws, so that
:meth:`QueryResult.plot` is a thin method; matplotlib is imported only when a plot is made.

What is drawn: point clouds as a scatter, polylines and streamlines as line segments between
consecutive vertices of each object (a clipped result: its ``edges``), graphs and skeletons as
their edges, meshes as filled triangles, either in a 2-D projection on two axes or on 3-D axes.
Every axis has the same scale and is labelled with its name and unit. Results larger than
``max_points`` are drawn from a random sample (fixed seed), and the title says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.display import format_count
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.result.projection import axis_label, resolve_axes
from zarr_vectors.result.shapes import link_objects, polyline_links

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from zarr_vectors.result.query_result import QueryResult

__all__ = ["MAX_POINTS", "color_values", "plot_result"]

MAX_POINTS = 200_000
"""Default largest number of points, segments or triangles drawn before sampling."""

_SEED = 0
_PURPOSE = "QueryResult.plot"


@dataclass(frozen=True, slots=True)
class _Drawing:
    """What to draw: ``points`` ``(n, k)``, or ``segments``/``triangles`` ``(n, 2|3, k)``."""

    shape: str
    coords: np.ndarray
    values: np.ndarray | None
    note: str


def plot_result(
    result: QueryResult,
    *,
    axes: Sequence[int | str] | None = None,
    color_by: str | None = None,
    ax: Axes | None = None,
    max_points: int = MAX_POINTS,
    cmap: str = "viridis",
    figsize: tuple[float, float] | None = None,
    **style: Any,
) -> Axes:
    """Draw a query result and return the matplotlib axes.

    Parameters
    ----------
    result
        What to draw.
    axes
        Two axes (indices or names) for a 2-D projection, three for 3-D axes. Default: the
        axes of ``ax`` when it is given (2-D: the first two, 3-D: the first three); else
        ``(0, 1)`` for 2-D data and ``(0, 1, 2)`` (3-D axes) for 3-D and 4-D data.
    color_by
        Name of a one-column vertex attribute, link attribute (graph edges, mesh faces) or
        object attribute — looked up in that order — or ``"object_id"``. Segments take the
        mean of their two ends' vertex values, triangles of their three corners'. A colorbar
        is added. None draws everything in one colour.
    ax
        Axes to draw into (3-D axes for three ``axes``); by default a new figure is made.
    max_points
        Largest number of points, segments or triangles drawn. Above it a random sample is
        drawn — whole objects for polylines, graphs and skeletons — and the title says how
        much is shown.
    cmap
        Colormap name for ``color_by``.
    figsize
        Size in inches of the new figure (when ``ax`` is None).
    **style
        Passed on to ``scatter`` or to the line or polygon collection (``s=``, ``alpha=``,
        ``linewidths=``...), overriding the defaults.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn into.

    Raises
    ------
    MissingDependencyError
        When matplotlib is not installed.
    InvalidInputError
        For an unknown or multi-column ``color_by``, bad ``axes``, ``axes`` that do not match
        ``ax``, or ``max_points < 1``.
    """
    plt = require("matplotlib.pyplot", extra="plot", purpose=_PURPOSE)
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 1:
        raise InvalidInputError(f"max_points must be a positive integer, got {max_points!r}")
    cols = _plot_axes(result, axes, ax)
    colours = color_values(result, color_by)
    drawing = _drawing(result, cols, colours, max_points)
    target: Any = ax
    if target is None:
        figure = plt.figure(figsize=figsize)
        target = figure.add_subplot(projection="3d" if len(cols) == 3 else None)
    artist = _draw(target, drawing, cmap, style)
    _frame(target, result, cols, drawing)
    if colours is not None and artist is not None:
        three = len(cols) == 3
        target.figure.colorbar(
            artist,
            ax=target,
            label=color_by,
            shrink=0.7 if three else 1.0,
            pad=0.16 if three else 0.04,
        )
    target.set_title(_title(result, drawing), fontsize="medium")
    return cast("Axes", target)


def _plot_axes(result: QueryResult, axes: Sequence[int | str] | None, ax: Any) -> tuple[int, ...]:
    three = None if ax is None else getattr(ax, "name", "") == "3d"
    if three is None:
        default = (0, 1) if result.ndim == 2 else (0, 1, 2)
    elif three and result.ndim < 3:
        raise InvalidInputError(f"3-D axes cannot show {result.ndim}-D data")
    else:
        default = (0, 1, 2) if three else (0, 1)
    cols = resolve_axes(axes, result.coordinate_names, default)
    if three is not None and (len(cols) == 3) != three:
        raise InvalidInputError(
            f"axes={list(axes or ())} names {len(cols)} axes, but ax is "
            f"{'a 3-D' if three else 'a 2-D'} axes"
        )
    return cols


def color_values(result: QueryResult, name: str | None) -> tuple[str, np.ndarray] | None:
    """``(level, values)`` for ``color_by=name``: level is vertex, link or object.

    Raises
    ------
    InvalidInputError
        When ``name`` is not a one-column numeric attribute of the result nor ``object_id``.
    """
    if name is None:
        return None
    tables = (
        ("vertex", result.attributes),
        ("link", result.link_attributes),
        ("object", result.object_attributes),
    )
    found = [(level, table[name]) for level, table in tables if name in table]
    if not found and name == "object_id":
        if result.object_ids is not None:
            found = [("object", result.object_ids)]
        elif result.vertex_object_ids is not None:
            found = [("vertex", result.vertex_object_ids)]
    if not found:
        known = [n for _, table in tables for n in table]
        if result.object_ids is not None or result.vertex_object_ids is not None:
            known.append("object_id")
        raise InvalidInputError(
            f"color_by={name!r} is not an attribute of this result; choose one of {known}"
        )
    level, values = found[0]
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype.kind not in "biuf":
        raise InvalidInputError(
            f"color_by needs a numeric attribute with one column; {name!r} is "
            f"{values.dtype} with rows of shape {values.shape[1:]}"
        )
    return level, values.astype(np.float64)


def _sample(n: int, limit: int) -> np.ndarray:
    """Sorted random rows (fixed seed) when ``n > limit``, else every row."""
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(_SEED).choice(n, limit, replace=False))


def _sample_objects(owner: np.ndarray, limit: int) -> np.ndarray:
    """Mask of the items of whole random objects, as many objects as fit in ``limit`` items."""
    if owner.shape[0] <= limit:
        return np.ones(owner.shape[0], dtype=bool)
    objects, sizes = np.unique(owner, return_counts=True)
    order = np.random.default_rng(_SEED).permutation(objects.shape[0])
    fits = np.cumsum(sizes[order]) <= limit
    fits[0] = True  # at least one object, even one larger than the limit
    return np.isin(owner, objects[order[fits]])


def _drawing(
    result: QueryResult,
    cols: tuple[int, ...],
    colours: tuple[str, np.ndarray] | None,
    limit: int,
) -> _Drawing:
    """The sampled items to draw, in painting order (see :func:`_depth_order`)."""
    coords = np.asarray(result.positions[:, list(cols)], dtype=np.float64)
    kind = geometry_kind(result.kind)
    if not kind.has_objects:
        rows = _sample(coords.shape[0], limit)
        rows = rows[_depth_order(result, cols, rows[:, None])]
        values = None if colours is None else colours[1][rows]
        return _Drawing("points", coords[rows], values, _note(rows.shape[0], len(result), "points"))
    links, owner = _links(result)
    if kind.faces:
        keep = np.zeros(links.shape[0], dtype=bool)
        keep[_sample(links.shape[0], limit)] = True
        note = _note(int(keep.sum()), links.shape[0], "faces")
    else:
        keep = _sample_objects(owner, limit)
        shown = np.unique(owner[keep]).shape[0]
        note = _note(shown, np.unique(owner).shape[0], "objects")
    values = None if colours is None else _link_values(colours, links, owner)[keep]
    links = links[keep]
    order = _depth_order(result, cols, links)
    shape = "triangles" if links.shape[1] == 3 else "segments"
    return _Drawing(shape, coords[links[order]], None if values is None else values[order], note)


def _depth_order(result: QueryResult, cols: tuple[int, ...], items: np.ndarray) -> np.ndarray:
    """Painting order of a 2-D projection: ascending mean coordinate on the first axis left
    out, so the items seen from its positive side come last (drawn on top)."""
    hidden = [d for d in range(result.ndim) if d not in cols]
    if len(cols) == 3 or not hidden or not items.shape[0]:
        return np.arange(items.shape[0])
    depth = np.asarray(result.positions[:, hidden[0]], dtype=np.float64)[items].mean(axis=1)
    return np.argsort(depth, kind="stable")


def _links(result: QueryResult) -> tuple[np.ndarray, np.ndarray]:
    """Segments or triangles as vertex rows ``(n, 2|3)``, and the object of each."""
    n = len(result)
    offsets = result.offsets
    kind = geometry_kind(result.kind)
    if kind.ordered and result.edges is None:
        if offsets is None:
            offsets = np.array([0, n], dtype=np.int64)
        chain = polyline_links(offsets)
        return chain, link_objects(chain, np.asarray(offsets, dtype=np.int64))
    width = kind.link_width
    source = result.faces if width == 3 else result.edges
    links = np.empty((0, width), np.int64) if source is None else np.asarray(source, np.int64)
    if offsets is None:
        return links, np.arange(links.shape[0])
    return links, link_objects(links, np.asarray(offsets, dtype=np.int64))


def _link_values(
    colours: tuple[str, np.ndarray], links: np.ndarray, owner: np.ndarray
) -> np.ndarray:
    level, values = colours
    if level == "vertex":
        return np.asarray(values[links].mean(axis=1))
    return np.asarray(values[owner] if level == "object" else values)


def _note(shown: int, total: int, what: str) -> str:
    if shown == total:
        return ""
    return f"showing {format_count(shown)} of {format_count(total)} {what} (random sample)"


def _draw(ax: Any, drawing: _Drawing, cmap: str, style: dict[str, Any]) -> Any:
    """Add the drawing to ``ax``; return the artist carrying the colour values (or None)."""
    three = drawing.coords.shape[-1] == 3
    if drawing.shape == "points":
        return _scatter(ax, drawing, cmap, style, three)
    colours: dict[str, Any] = {} if drawing.values is not None else _plain(drawing.shape)
    if drawing.shape == "segments":
        defaults = {"linewidths": 0.8, **colours}
        collection = _collection(
            "mpl_toolkits.mplot3d.art3d" if three else "matplotlib.collections",
            "Line3DCollection" if three else "LineCollection",
            drawing.coords,
            {**defaults, **style},
        )
    else:
        defaults = {"linewidths": 0.2, "edgecolors": (0.1, 0.1, 0.1, 0.35), **colours}
        if three and drawing.values is None:
            defaults["shade"] = True
        collection = _collection(
            "mpl_toolkits.mplot3d.art3d" if three else "matplotlib.collections",
            "Poly3DCollection" if three else "PolyCollection",
            drawing.coords,
            {**defaults, **style},
        )
    if drawing.values is not None:
        collection.set_array(drawing.values)
        collection.set_cmap(cmap)
        collection.set_clim(*_limits(drawing.values))
    if three:
        ax.add_collection3d(collection)
    else:
        ax.add_collection(collection)
    return collection if drawing.values is not None else None


def _plain(shape: str) -> dict[str, Any]:
    return {"colors": "C0"} if shape == "segments" else {"facecolors": "C0"}


def _collection(module: str, name: str, coords: np.ndarray, kwargs: dict[str, Any]) -> Any:
    artists = require(module, extra="plot", purpose=_PURPOSE)
    return getattr(artists, name)(list(coords) if name == "Poly3DCollection" else coords, **kwargs)


def _scatter(ax: Any, drawing: _Drawing, cmap: str, style: dict[str, Any], three: bool) -> Any:
    n = drawing.coords.shape[0]
    defaults: dict[str, Any] = {"s": float(np.clip(20_000 / max(n, 1), 0.3, 16.0))}
    defaults["linewidths"] = 0
    if drawing.values is None:
        defaults["color"] = "C0"
    else:
        lo, hi = _limits(drawing.values)
        defaults |= {"c": drawing.values, "cmap": cmap, "vmin": lo, "vmax": hi}
    artist = ax.scatter(*drawing.coords.T, **{**defaults, **style})
    return artist if drawing.values is not None else None


def _limits(values: np.ndarray) -> tuple[float, float]:
    if not values.shape[0]:
        return 0.0, 1.0
    return float(values.min()), float(values.max())


def _frame(ax: Any, result: QueryResult, cols: tuple[int, ...], drawing: _Drawing) -> None:
    """Equal scale on every axis, limits around the drawn data, labels with units."""
    names = result.coordinate_names
    units = result.axis_units or ("unknown",) * result.ndim
    labels = [axis_label(names[c], units[c]) for c in cols]
    flat = drawing.coords.reshape(-1, len(cols))
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    if len(cols) == 2:
        if flat.shape[0]:
            ax.update_datalim(np.stack([flat.min(axis=0), flat.max(axis=0)]))
        ax.set_aspect("equal", adjustable="datalim")
        ax.autoscale_view()
        return
    lo = flat.min(axis=0) if flat.shape[0] else np.zeros(3)
    hi = flat.max(axis=0) if flat.shape[0] else np.ones(3)
    span = hi - lo
    pad = np.where(span > 0, span * 0.03, np.maximum(np.abs(lo) * 0.01, 0.5))
    lo, hi = lo - pad, hi + pad
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_zlim(lo[2], hi[2])
    ax.set_zlabel(labels[2])
    ax.set_box_aspect(tuple(hi - lo))
    _thin_ticks(ax, hi - lo)


def _thin_ticks(ax: Any, spans: np.ndarray) -> None:
    """Fewer ticks on the short sides of equal-scale 3-D axes, so their labels do not overlap."""
    ticker = require("matplotlib.ticker", extra="plot", purpose=_PURPOSE)
    for axis, span in zip((ax.xaxis, ax.yaxis, ax.zaxis), spans, strict=True):
        bins = int(np.clip(round(6 * span / spans.max()), 1, 6))
        axis.set_major_locator(ticker.MaxNLocator(nbins=bins, steps=[1, 2, 2.5, 5, 10]))


def _title(result: QueryResult, drawing: _Drawing) -> str:
    parts = []
    if result.object_count is not None:
        parts.append(_plural(result.object_count, "object"))
    parts.append(_plural(len(result), "vertex", "vertices"))
    title = f"{result.kind}: {', '.join(parts)}"
    return f"{title}\n{drawing.note}" if drawing.note else title


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{format_count(n)} {one if n == 1 else many or one + 's'}"
