"""What the repr and the notebook display of a :class:`~zarr_vectors.VectorStore` show.

:func:`gather` reads only metadata documents (root, levels, array ``zarr.json`` files) and the
size of the stored keys; :func:`store_text` and :func:`store_html` format the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zarr_vectors.display import (
    Section,
    column_spec,
    format_bytes,
    format_count,
    format_grid,
    format_number,
    format_vector,
    name_list,
    render_html,
)
from zarr_vectors.errors import MetadataError, ZarrVectorsError
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import (
    FRAGMENT_ATTRIBUTES,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    LINK_ATTRIBUTES,
    OBJECT_ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
)
from zarr_vectors.format.version import upgrade_hint
from zarr_vectors.store.io import StoreIO

if TYPE_CHECKING:
    from zarr_vectors.read import LevelReader

__all__ = [
    "LevelInfo",
    "StoreInfo",
    "gather",
    "level_paths",
    "read_levels",
    "store_html",
    "store_text",
]


@dataclass(frozen=True, slots=True)
class LevelInfo:
    """One resolution level named by the root ``multiscales`` block (spec §3.2, §4).

    What :attr:`VectorStore.levels <zarr_vectors.VectorStore.levels>` lists, read from the
    level group's metadata only (no vertex data). Fields the level's metadata does not give
    (a damaged level) are None.

    Attributes
    ----------
    level
        The level number: 0 holds the data as written, higher levels are coarser.
    path
        The level group's path in the store (``"0"``, ``"1"``...).
    bin_ratio, bin_shape
        The level's bin size as a multiple of ``base_bin_shape`` per axis, and in space.
    vertex_count, chunk_count
        Vertices of the level, and its non-empty chunks.
    object_count
        Objects of the level (object kinds; None for point clouds).
    object_sparsity
        The fraction of objects the level keeps (1.0: all of them).
    method
        How the level was coarsened (its ``coarsening`` method: ``"sample"``,
        ``"aggregate"``...); None at level 0.
    coarsening
        The level's whole ``coarsening`` record (method and parameters); None at level 0.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[0.0, 0.0], [1.0, 2.0], [7.0, 3.0]], chunk_shape=5.0,
    ...                 bin_shape=2.5)
    >>> (level0,) = zv.open(path).levels
    >>> level0.level, level0.vertex_count, level0.chunk_count, level0.method
    (0, 3, 2, None)
    >>> level0.bin_ratio, level0.bin_shape
    ((1, 1), (2.5, 2.5))
    >>> isinstance(level0, zv.LevelInfo)
    True
    """

    level: int
    path: str
    bin_shape: tuple[float, ...] | None
    vertex_count: int | None
    object_count: int | None
    bin_ratio: tuple[int, ...] | None = None
    chunk_count: int | None = None
    object_sparsity: float | None = None
    method: str | None = None
    coarsening: dict[str, Any] | None = field(default=None, compare=False)


@dataclass(slots=True)
class StoreInfo:
    """Everything a store summary shows; ``problem`` says what could not be read."""

    where: str
    root: RootMetadata
    vertex_count: int | None = None
    object_count: int | None = None
    chunk_count: int | None = None
    grid_shape: tuple[int, ...] | None = None
    columns: list[tuple[str, str, str]] = field(default_factory=list)
    groups: list[str] | None = None
    levels: list[LevelInfo] = field(default_factory=list)
    usage: tuple[int, int] | None = None
    problem: str | None = None


def gather(
    io: StoreIO,
    root: RootMetadata,
    reader: Callable[[], LevelReader],
    where: str,
    usage: Callable[[], tuple[int, int]],
) -> StoreInfo:
    """Collect a store's summary; a damaged store gives what could be read and the problem."""
    info = StoreInfo(where=where, root=root)
    try:
        level0 = reader()
        info.vertex_count = level0.meta.vertex_count
        info.object_count = level0.meta.object_count
        info.chunk_count = level0.meta.chunk_count
        info.grid_shape = tuple(int(g) for g in level0.grid.shape)
        info.columns = _columns(io, root, level0)
        info.groups = _group_names(io, level0.base)
        info.levels = read_levels(io, root)
        info.usage = usage()
    except (ZarrVectorsError, OSError) as exc:
        info.problem = f"{type(exc).__name__}: {exc}"
    return info


def level_paths(attrs: Any) -> list[tuple[int, str]]:
    """``(level, path)`` of every level the root attributes ``attrs`` list in
    ``multiscales[0].datasets``, by level number (``[(0, "0")]`` when unreadable)."""
    try:
        datasets = attrs["multiscales"][0]["datasets"]
        return sorted((int(d["level"]), str(d["path"])) for d in datasets)
    except (KeyError, IndexError, TypeError, ValueError):
        return [(0, "0")]


def read_levels(
    io: StoreIO, root: RootMetadata, paths: list[tuple[int, str]] | None = None
) -> list[LevelInfo]:
    """The levels the root ``multiscales[0].datasets`` lists, with their counts when readable.

    ``paths`` are the listed levels when already known (:func:`level_paths`), else the root
    ``zarr.json`` is read for them. Every level group's ``zarr.json`` is then read at once
    (one request wave). Sorted by level number (finest first).
    """
    if paths is None:
        doc = io.read_json("zarr.json")
        paths = level_paths(doc.get("attributes") if isinstance(doc, dict) else None)
    docs, _ = io.read_metadata([f"{path}/zarr.json" for _, path in paths])
    return [
        _level(root, level, path, found) for (level, path), found in zip(paths, docs, strict=True)
    ]


def _level(root: RootMetadata, level: int, path: str, doc: Any) -> LevelInfo:
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    try:
        meta = LevelMetadata.from_json(attrs, root.spatial_dims)
    except MetadataError:
        return LevelInfo(level, path, None, None, None)
    assert isinstance(attrs, dict)  # from_json refuses anything else
    coarsening = attrs.get("coarsening")
    coarsening = dict(coarsening) if isinstance(coarsening, dict) else None
    method = None if coarsening is None else coarsening.get("method")
    return LevelInfo(
        level,
        path,
        meta.bin_shape,
        meta.vertex_count,
        meta.object_count,
        bin_ratio=meta.bin_ratio,
        chunk_count=meta.chunk_count,
        object_sparsity=meta.object_sparsity,
        method=method if isinstance(method, str) else None,
        coarsening=coarsening,
    )


def _array_spec(io: StoreIO, path: str, leading: int) -> str:
    meta = io.read_json(f"{path}/zarr.json")
    if not isinstance(meta, dict) or "data_type" not in meta or "shape" not in meta:
        return "?"
    return column_spec(meta["data_type"], meta["shape"][leading:])


def _children(io: StoreIO, path: str) -> list[str]:
    return [n for n in io.list_dir(path) if n != "zarr.json"]


def _columns(io: StoreIO, root: RootMetadata, level0: LevelReader) -> list[tuple[str, str, str]]:
    """``(role, name, column spec)`` of the attributes of level 0, by role."""
    base = level0.base
    rows = [
        ("vertex", name, column_spec(*level0.column_spec(name))) for name in level0.attribute_names
    ]
    roles = [
        ("object", OBJECT_ATTRIBUTES, 1),
        (
            geometry_kind(root.geometry_type).link_name or "link",
            LINK_ATTRIBUTES,
            root.spatial_dims + 1,
        ),
        ("fragment", FRAGMENT_ATTRIBUTES, root.spatial_dims + 1),
        ("group", GROUPINGS_ATTRIBUTES, 1),
    ]
    if root.geometry_type == "point_cloud":
        roles = []
    for role, group, leading in roles:
        for name in _children(io, f"{base}/{group}"):
            if name != OBJECT_ID_ATTRIBUTE:
                rows.append((role, name, _array_spec(io, f"{base}/{group}/{name}", leading)))
    return rows


def _group_names(io: StoreIO, base: str) -> list[str] | None:
    meta = io.read_json(f"{base}/{GROUPINGS}/zarr.json")
    if not isinstance(meta, dict):
        return None
    attrs: dict[str, Any] = meta.get("attributes") or {}
    names = attrs.get("group_names")
    if isinstance(names, list):
        return [str(n) for n in names]
    count = attrs.get("num_groups")
    return [str(j) for j in range(count)] if isinstance(count, int) else []


def _axes_text(root: RootMetadata) -> str:
    units = sorted(set(root.axis_units) - {"unknown"})
    unit = f" in {', '.join(units)}" if units else ""
    return f"{root.spatial_dims}-D ({', '.join(root.axis_names)}{unit})"


def _counts_text(info: StoreInfo) -> str:
    parts = []
    if info.object_count is not None:
        parts.append(f"{format_count(info.object_count)} objects")
    parts.append(f"{format_count(info.vertex_count)} vertices")
    return ", ".join(parts) + f" in {format_count(info.chunk_count)} chunks"


def _bounds_text(root: RootMetadata) -> str:
    if root.bounding_box is None:
        return "empty (no vertices)"
    lo, hi = root.bounding_box
    return f"bounds {format_vector(lo)} .. {format_vector(hi)}"


def _usage_text(info: StoreInfo) -> str:
    if info.usage is None:
        return "-"
    return f"{format_bytes(info.usage[0])} in {format_count(info.usage[1])} keys"


def _levels_text(info: StoreInfo) -> str:
    return ", ".join(str(lv.level) for lv in info.levels) or "0"


def _level_lines(info: StoreInfo) -> list[str]:
    """One line per level above 0: its bin shape, counts and method."""
    lines = []
    for lv in info.levels[1:]:
        bins = "-" if lv.bin_shape is None else format_vector(lv.bin_shape)
        lines.append(
            f"  level {lv.level}: {format_count(lv.vertex_count)} vertices in "
            f"{format_count(lv.chunk_count)} chunks, bin_shape {bins}, {lv.method or '-'}"
        )
    return lines


def store_text(info: StoreInfo) -> str:
    """A few lines of plain text: kind, counts, bounds, grid, attributes, groups, size."""
    root = info.root
    lines = [
        f"<VectorStore {info.where}",
        f"  {root.geometry_type}, {_axes_text(root)}: {_counts_text(info)}",
        f"  {_bounds_text(root)}",
        f"  chunk_shape {format_vector(root.chunk_shape)}, bin_shape "
        f"{format_vector(root.base_bin_shape)}, grid "
        f"{'-' if info.grid_shape is None else format_grid(info.grid_shape)}, "
        f"levels {_levels_text(info)}",
    ]
    lines.extend(_level_lines(info))
    roles = dict.fromkeys(role for role, _, _ in info.columns)
    for role in roles:
        specs = [f"{name} {spec}" for r, name, spec in info.columns if r == role]
        lines.append(f"  {role} attributes: {', '.join(specs)}")
    if info.groups:
        lines.append(f"  groups ({len(info.groups)}): {name_list(info.groups)}")
    lines.append(f"  stored: {_usage_text(info)}")
    if (hint := upgrade_hint(root.version)) is not None:
        lines.append(f"  {hint}")
    if info.problem:
        lines.append(f"  could not read everything: {info.problem}")
    return "\n".join(lines) + ">"


def _overview(info: StoreInfo) -> Section:
    root = info.root
    section = Section("store")
    section.rows.append(("kind", root.geometry_type))
    section.rows.append(("dimensions", _axes_text(root)))
    if info.object_count is not None:
        section.rows.append(("objects", format_count(info.object_count)))
    section.rows.append(("vertices", format_count(info.vertex_count)))
    grid = "-" if info.grid_shape is None else format_grid(info.grid_shape)
    section.rows.append(("chunks", f"{format_count(info.chunk_count)} non-empty, grid {grid}"))
    section.rows.append(("levels", _levels_text(info)))
    section.rows.append(("stored", _usage_text(info)))
    section.rows.append(("format", f"Zarr Vectors {root.version}"))
    if (hint := upgrade_hint(root.version)) is not None:
        section.rows.append(("upgrade", hint))
    for key, value in root.extra.items():
        if isinstance(value, str | int | float | bool):
            section.rows.append((key, str(value)))
    if info.problem:
        section.rows.append(("could not read", info.problem))
    return section


def _axes(info: StoreInfo) -> Section:
    root = info.root
    section = Section("axes", header=("axis", "unit", "min", "max", "chunk", "bin", "grid"))
    for d, name in enumerate(root.axis_names):
        unit = root.axis_units[d]
        lo, hi = (
            ("-", "-")
            if root.bounding_box is None
            else (format_number(root.bounding_box[0][d]), format_number(root.bounding_box[1][d]))
        )
        section.rows.append(
            (
                name,
                "-" if unit == "unknown" else unit,
                lo,
                hi,
                format_number(root.chunk_shape[d]),
                format_number(root.base_bin_shape[d]),
                "-" if info.grid_shape is None else str(info.grid_shape[d]),
            )
        )
    return section


def _levels(info: StoreInfo) -> Section:
    header = ("level", "bin shape", "vertices", "chunks", "objects", "sparsity", "method")
    section = Section("levels", header=header)
    for lv in info.levels:
        bins = "-" if lv.bin_shape is None else format_vector(lv.bin_shape)
        sparsity = "-" if lv.object_sparsity is None else format_number(lv.object_sparsity)
        section.rows.append(
            (
                str(lv.level),
                bins,
                format_count(lv.vertex_count),
                format_count(lv.chunk_count),
                format_count(lv.object_count),
                sparsity,
                lv.method or "-",
            )
        )
    return section


def store_html(info: StoreInfo) -> str:
    """A compact self-contained HTML table of the same facts, one row per axis and attribute."""
    sections = [_overview(info), _axes(info)]
    if info.columns:
        sections.append(
            Section("attributes", rows=list(info.columns), header=("of", "name", "dtype"))
        )
    if info.groups:
        shown = info.groups[:20]
        rows: list[tuple[str, ...]] = [(str(j), name) for j, name in enumerate(shown)]
        if len(info.groups) > len(shown):
            rows.append(("…", f"{len(info.groups)} groups in all"))
        sections.append(Section(f"groups ({len(info.groups)})", rows=rows, header=("id", "name")))
    if len(info.levels) > 1:
        sections.append(_levels(info))
    return render_html(f"VectorStore: {info.where}", sections)
