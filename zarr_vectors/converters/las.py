"""LAS and LAZ point clouds (via laspy with the lazrs backend, extra ``las``).

Import writes a point cloud: positions are the scaled coordinates ``x, y, z`` as float64
(LAS coordinates are large georeferenced numbers), and every point dimension except the
raw ``X, Y, Z`` (intensity, return_number, classification, gps_time, red/green/blue, extra
bytes...) becomes a vertex attribute with laspy's dtype (bit fields as uint8; scaled extra
bytes as float64; an extra-bytes array of K values as an ``(n, K)`` attribute), or only the
dimensions named by ``attributes=[...]``. Extra-bytes names that are not identifiers are
made safe (``"Refl dB"`` → ``Refl_dB``). The header's version, point format, scales and
offsets and the extra-bytes definitions are recorded under the root key
``custom_metadata["las"]``. The coordinate reference system and other VLRs are not kept.

Export writes the store's vertices (3-D) and attributes: those named like a dimension of
the point format go there (their values checked to fit), the others become extra-bytes
dimensions (as they were defined when recorded; bool as uint8, an ``(n, K)`` attribute as
``name_0 ...``). The point format, version, scales and offsets are the recorded ones, else
the smallest standard point format holding the most attribute names, scale 0.001 and an
offset of the minimum rounded down to a multiple of 1000; ``point_format=``, ``version=``,
``scale=`` and ``offset=`` override them. A round trip of a LAS file gives back the same
integer coordinates and dimension values. Points are written in the store's storage order
(chunk by chunk). ``.laz`` is compressed with lazrs.

Options
-------
Import: ``attributes`` (dimension names).
Export: ``point_format``, ``version``, ``scale``, ``offset`` (one number or three).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.converters._common import atomic_output, check_options, safe_name, split_columns
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.geometry._pipeline import WriteOptions
from zarr_vectors.geometry.points import write_points
from zarr_vectors.store.io import StoreLike

__all__ = ["export_store", "import_file", "smallest_point_format"]

IMPORT_OPTIONS = ("attributes",)
EXPORT_OPTIONS = ("point_format", "version", "scale", "offset")
STANDARD_FORMATS = (0, 1, 2, 3, 6, 7, 8)
"""Point formats chosen from on export (the others carry waveforms)."""
DEFAULT_SCALE = 0.001
_OFFSET_STEP = 1000.0
_RAW = ("X", "Y", "Z")


def _laspy(path: Path, what: str) -> ModuleType:
    laspy = require("laspy", extra="las", purpose=f"{what} LAS/LAZ point clouds")
    if path.suffix.lower() == ".laz":
        require("lazrs", extra="las", purpose=f"{what} compressed LAZ files")
    return laspy


def _read(src: Path) -> Any:
    """The LAS or LAZ file ``src`` read by laspy.

    Raises
    ------
    InvalidInputError
        For a damaged or truncated file: laspy raises ``LaspyException`` or ``ValueError``
        (a header whose offsets point past the end), lazrs a ``LazrsError`` (a
        ``RuntimeError``) for damaged compressed points.
    """
    laspy = _laspy(src, "reading")
    try:
        return laspy.read(src, laz_backend=laspy.LazBackend.Lazrs)
    except (laspy.errors.LaspyException, ValueError, EOFError) as exc:
        raise _unreadable(src, exc) from exc
    except RuntimeError as exc:
        if type(exc).__module__ != "lazrs":
            raise
        raise _unreadable(src, exc) from exc


def _unreadable(src: Path, exc: Exception) -> InvalidInputError:
    return InvalidInputError(
        f"{src} is not a readable LAS/LAZ file ({exc}); check that it is complete"
    )


def _dimension_names(las: Any, chosen: Any) -> list[str]:
    names = [n for n in las.point_format.dimension_names if n not in _RAW]
    if chosen is None:
        return names
    if isinstance(chosen, str) or not all(isinstance(c, str) for c in chosen):
        raise InvalidInputError(f"attributes must be a list of dimension names, got {chosen!r}")
    missing = [c for c in chosen if c not in names]
    if missing:
        raise InvalidInputError(
            f"no dimension {', '.join(missing)} in the file; it has {', '.join(names)}"
        )
    return list(chosen)


def _extra_definition(las: Any, name: str, attribute: str) -> dict[str, Any]:
    info = las.point_format.dimension_by_name(name)
    return {
        "name": name,
        "attribute": attribute,
        "type": info.type_str(),
        "description": info.description,
        "scales": None if info.scales is None else np.asarray(info.scales).tolist(),
        "offsets": None if info.offsets is None else np.asarray(info.offsets).tolist(),
    }


def _header_record(las: Any, extras: list[dict[str, Any]]) -> dict[str, Any]:
    header = las.header
    return {
        "version": str(header.version),
        "point_format": int(header.point_format.id),
        "scales": np.asarray(header.scales, dtype=np.float64).tolist(),
        "offsets": np.asarray(header.offsets, dtype=np.float64).tolist(),
        "extra_dimensions": extras,
    }


def import_file(
    fmt: str,
    src: Path,
    dst: StoreLike,
    *,
    overwrite: bool,
    chunk_shape: Any,
    bin_shape: Any,
    **options: Any,
) -> None:
    """Write the LAS/LAZ file ``src`` as a point cloud store ``dst``.

    See the module docstring for the options.
    """
    check_options(fmt, options, IMPORT_OPTIONS)
    las = _read(src)
    extra_names = set(las.point_format.extra_dimension_names)
    attributes: dict[str, np.ndarray] = {}
    extras: list[dict[str, Any]] = []
    for name in _dimension_names(las, options.get("attributes")):
        key = safe_name(name)
        if key in attributes:
            raise InvalidInputError(f"dimensions {name!r} and another both become {key!r}")
        attributes[key] = np.ascontiguousarray(np.asarray(las[name]))
        if name in extra_names:
            extras.append(_extra_definition(las, name, key))
    positions = np.stack([np.asarray(las.x), np.asarray(las.y), np.asarray(las.z)], axis=1)
    write_points(
        dst,
        positions.astype(np.float64),
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        attributes=attributes,
        mode="w" if overwrite else "w-",
        options=WriteOptions(custom_metadata={"las": _header_record(las, extras)}),
    )


# -- export ---------------------------------------------------------------------------------


def _standard_names(laspy: ModuleType, point_format: int) -> set[str]:
    return set(laspy.PointFormat(point_format).standard_dimension_names) - set(_RAW)


def smallest_point_format(laspy: ModuleType, names: set[str]) -> int:
    """The first of :data:`STANDARD_FORMATS` that holds the most of ``names``."""
    held = [len(names & _standard_names(laspy, pf)) for pf in STANDARD_FORMATS]
    return STANDARD_FORMATS[held.index(max(held))]


def _recorded(store: VectorStore) -> dict[str, Any]:
    custom = store.metadata.get("custom_metadata")
    record = custom.get("las") if isinstance(custom, dict) else None
    return record if isinstance(record, dict) else {}


def _triple(value: Any, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    arr = np.full(3, float(arr)) if arr.ndim == 0 else arr
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} must be one number or three, got {value!r}")
    return arr


def _header(laspy: ModuleType, store: VectorStore, positions: np.ndarray, options: Any) -> Any:
    record = _recorded(store)
    names = set(store.attribute_names)
    point_format = options.get("point_format", record.get("point_format"))
    if point_format is None:
        point_format = smallest_point_format(laspy, names)
    version = options.get("version", record.get("version"))
    if version is None:
        version = "1.2" if point_format < 6 else "1.4"
    try:
        header = laspy.LasHeader(point_format=int(point_format), version=str(version))
    except laspy.errors.LaspyException as exc:
        raise InvalidInputError(f"point format {point_format}, version {version}: {exc}") from exc
    header.scales = _triple(options.get("scale", record.get("scales", DEFAULT_SCALE)), "scale")
    low = positions.min(axis=0) if positions.shape[0] else np.zeros(3)
    default_offset = np.floor(low / _OFFSET_STEP) * _OFFSET_STEP
    header.offsets = _triple(options.get("offset", record.get("offsets", default_offset)), "offset")
    return header


def _raw_coordinates(positions: np.ndarray, header: Any) -> np.ndarray:
    raw = np.round((positions - header.offsets) / header.scales)
    limit = np.iinfo(np.int32)
    if raw.size and (raw.min() < limit.min or raw.max() > limit.max):
        raise InvalidInputError(
            "coordinates do not fit LAS 32-bit integers with this scale and offset; "
            "pass a larger scale= or an offset= near the data"
        )
    coordinates: np.ndarray = raw.astype(np.int32)
    return coordinates


def _fitted(name: str, values: np.ndarray, info: Any) -> np.ndarray:
    """``values`` cast to a standard dimension's type, refusing values that change."""
    low, high = info.min, info.max
    if values.size and (values.min() < low or values.max() > high):
        raise InvalidInputError(f"attribute {name!r} has values outside {low}..{high}")
    target = np.dtype(np.uint8 if info.dtype is None else info.dtype)
    cast: np.ndarray = values.astype(target)
    if not np.array_equal(cast, values):
        raise InvalidInputError(f"attribute {name!r} does not fit the LAS type {target}")
    return cast


def _extra_params(laspy: ModuleType, name: str, values: np.ndarray) -> Any:
    dtype = values.dtype
    if dtype.kind == "b":
        dtype = np.dtype(np.uint8)
    elif dtype.kind == "f" and dtype.itemsize < 4:
        dtype = np.dtype(np.float32)
    return laspy.ExtraBytesParams(name=name, type=dtype.str.lstrip("<>=|"))


def _recorded_params(laspy: ModuleType, entry: Mapping[str, Any]) -> Any:
    return laspy.ExtraBytesParams(
        name=entry["name"],
        type=entry["type"],
        description=entry.get("description", ""),
        scales=None if entry.get("scales") is None else np.asarray(entry["scales"]),
        offsets=None if entry.get("offsets") is None else np.asarray(entry["offsets"]),
    )


def _columns(store: VectorStore, attributes: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """LAS dimension name → values: recorded extra bytes under their file names, others
    split into one-dimensional columns."""
    recorded = {e["attribute"]: e for e in _recorded(store).get("extra_dimensions", [])}
    whole = {recorded[k]["name"]: v for k, v in attributes.items() if k in recorded}
    rest = split_columns({k: v for k, v in attributes.items() if k not in recorded})
    return {**whole, **rest}


def _extra_dimensions(
    laspy: ModuleType, header: Any, store: VectorStore, columns: Mapping[str, np.ndarray]
) -> None:
    """Add to ``header`` an extra-bytes dimension for each column that is not standard."""
    recorded = {e["name"]: e for e in _recorded(store).get("extra_dimensions", [])}
    standard = _standard_names(laspy, header.point_format.id)
    names = [n for n in recorded if n in columns and n not in standard]
    names += [n for n in columns if n not in standard and n not in recorded]
    params = [
        _recorded_params(laspy, recorded[n])
        if n in recorded
        else _extra_params(laspy, n, columns[n])
        for n in names
    ]
    if params:
        header.add_extra_dims(params)


def _points(laspy: ModuleType, header: Any, raw: np.ndarray, columns: Any) -> Any:
    """The LAS data: raw coordinates and every column, standard values checked to fit."""
    las = laspy.LasData(
        header, points=laspy.ScaleAwarePointRecord.zeros(raw.shape[0], header=header)
    )
    las.X, las.Y, las.Z = raw[:, 0], raw[:, 1], raw[:, 2]
    standard = _standard_names(laspy, header.point_format.id)
    for name, values in columns.items():
        if name in standard:
            las[name] = _fitted(name, values, las.point_format.dimension_by_name(name))
        else:
            las[name] = values.astype(np.uint8) if values.dtype.kind == "b" else values
    return las


def export_store(
    fmt: str, store: VectorStore, dst: Path, *, overwrite: bool, **options: Any
) -> None:
    """Write the points of ``store`` into the LAS or LAZ file ``dst``.

    See the module docstring for the options.
    """
    check_options(fmt, options, EXPORT_OPTIONS)
    if store.spatial_dims != 3:
        raise InvalidInputError(f"LAS holds 3-D points; the store is {store.spatial_dims}-D")
    laspy = _laspy(dst, "writing")
    found = store.read()
    header = _header(laspy, store, found.positions, options)
    columns = _columns(store, found.attributes)
    _extra_dimensions(laspy, header, store, columns)
    raw = _raw_coordinates(found.positions.astype(np.float64), header)
    las = _points(laspy, header, raw, columns)
    compress = dst.suffix.lower() == ".laz"
    with atomic_output(dst) as tmp:
        las.write(
            str(tmp), do_compress=compress, laz_backend=laspy.LazBackend.Lazrs if compress else None
        )
