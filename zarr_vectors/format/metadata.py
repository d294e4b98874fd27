"""Root and level metadata models with their JSON form (spec §3, §4).

The models are frozen dataclasses that do no I/O: the store layer moves the JSON, these
classes build and parse it. ``from_json`` is strict: a document that does not satisfy the
rules a reader depends on raises :class:`~zarr_vectors.errors.MetadataError`; the validator
(spec §11) reports the finer rules with check ids.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any

from zarr_vectors.errors import MetadataError
from zarr_vectors.format.levels import LEVEL_SCHEDULE, check_coarsening
from zarr_vectors.format.names import GEOMETRY_TYPES
from zarr_vectors.format.version import (
    BASE_VERSION,
    LEVELS_VERSION,
    at_least,
    check_readable_version,
)

__all__ = ["CORE_ROOT_KEYS", "DEFAULT_AXIS_NAMES", "LevelEntry", "LevelMetadata", "RootMetadata"]

DEFAULT_AXIS_NAMES = ("x", "y", "z", "w")
CORE_ROOT_KEYS = frozenset(
    {
        "zarr_vectors_version",
        "geometry_type",
        "spatial_dims",
        "chunk_shape",
        "base_bin_shape",
        "chunk_grid_origin",
        "axis_units",
        "bounding_box",
        "multiscales",
        LEVEL_SCHEDULE,
    }
)
"""Root keys modelled by :class:`RootMetadata` fields; the others go to ``extra`` (spec §3.1)."""


def _numbers(value: Any, ndim: int) -> tuple[float, ...] | None:
    """``value`` as floats when it is a list of ``ndim`` JSON numbers (no booleans), else
    None (a loop, not generators: read for every open)."""
    if not isinstance(value, list) or len(value) != ndim:
        return None
    for v in value:
        if not isinstance(v, int | float) or isinstance(v, bool):
            return None
    return tuple(map(float, value))


def _floats(doc: dict[str, Any], key: str, ndim: int) -> tuple[float, ...]:
    value = doc.get(key)
    out = _numbers(value, ndim)
    if out is None:
        raise MetadataError(f"{key} must be a list of {ndim} numbers, got {value!r}")
    for v in out:
        if not (math.isfinite(v) and v > 0):
            raise MetadataError(f"{key} must hold {ndim} positive finite numbers, got {value!r}")
    return out


def _ints(doc: dict[str, Any], key: str, ndim: int, default: int | None = None) -> tuple[int, ...]:
    value = doc.get(key)
    if value is None and default is not None:
        return (default,) * ndim
    if (
        not isinstance(value, list)
        or len(value) != ndim
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise MetadataError(f"{key} must be a list of {ndim} integers, got {value!r}")
    return tuple(value)


def _count(doc: dict[str, Any], key: str) -> int:
    value = doc.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MetadataError(f"level metadata {key} must be a non-negative integer, got {value!r}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelEntry:
    """One entry of ``multiscales[0].datasets``: a level's bins and sparsity (spec §3.2).

    Examples
    --------
    >>> entry = LevelEntry(level=1, bin_ratio=(2, 2), bin_shape=(10.0, 10.0))
    >>> entry.to_json()["coordinateTransformations"][1]
    {'type': 'translation', 'translation': [5.0, 5.0]}
    """

    level: int
    bin_ratio: tuple[int, ...]
    bin_shape: tuple[float, ...]
    object_sparsity: float = 1.0

    def to_json(self) -> dict[str, Any]:
        """The JSON form of the entry, with its descriptive transforms (spec §3.2)."""
        return {
            "path": str(self.level),
            "level": self.level,
            "bin_ratio": list(self.bin_ratio),
            "bin_shape": list(self.bin_shape),
            "object_sparsity": self.object_sparsity,
            "coordinateTransformations": [
                {"type": "scale", "scale": [float(r) for r in self.bin_ratio]},
                {"type": "translation", "translation": [b / 2 for b in self.bin_shape]},
            ],
        }

    @classmethod
    def from_json(cls, doc: Any, ndim: int) -> LevelEntry:
        """Parse an entry, raising :class:`MetadataError` when malformed (spec §3.2)."""
        if not isinstance(doc, dict):
            raise MetadataError(f"a multiscales datasets entry must be an object, got {doc!r}")
        level = doc.get("level")
        if not isinstance(level, int) or isinstance(level, bool) or level < 0:
            raise MetadataError(f"datasets level must be a non-negative integer, got {level!r}")
        if doc.get("path") != str(level):
            raise MetadataError(f"datasets path must be {str(level)!r}, got {doc.get('path')!r}")
        ratio = _ints(doc, "bin_ratio", ndim)
        if min(ratio) < 1:
            raise MetadataError(f"bin_ratio must hold integers >= 1, got {list(ratio)}")
        return cls(
            level=level,
            bin_ratio=ratio,
            bin_shape=_floats(doc, "bin_shape", ndim),
            object_sparsity=_sparsity(doc),
        )


def _sparsity(doc: dict[str, Any]) -> float:
    sparsity = doc.get("object_sparsity", 1.0)
    if not isinstance(sparsity, int | float) or isinstance(sparsity, bool) or not 0 < sparsity <= 1:
        raise MetadataError(f"object_sparsity must be in (0, 1], got {sparsity!r}")
    return float(sparsity)


def _strategy(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise MetadataError(f"sparsity_strategy must be a string, got {value!r}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class RootMetadata:
    """Root group attributes of a store (spec §3).

    ``bounding_box`` is the inclusive ``(min, max)`` of the level-0 vertices, or None for a
    store without vertices. ``levels`` are the ``datasets`` entries of the levels above 0
    (spec §4.3); :meth:`with_levels` sets them with the version they need. ``schedule`` is
    the ``level_schedule`` the levels were built with (spec §3.1, §4.3.1), as stored: None
    when the store has no levels or does not record it; its users parse it
    (:func:`~zarr_vectors.format.levels.check_schedule`).
    """

    geometry_type: str
    chunk_shape: tuple[float, ...]
    base_bin_shape: tuple[float, ...]
    chunk_grid_origin: tuple[int, ...]
    axis_names: tuple[str, ...]
    axis_units: tuple[str, ...]
    bounding_box: tuple[tuple[float, ...], tuple[float, ...]] | None
    version: str = BASE_VERSION
    extra: dict[str, Any] = field(default_factory=dict)
    levels: tuple[LevelEntry, ...] = ()
    schedule: Any = None

    @property
    def spatial_dims(self) -> int:
        """``D``, the number of spatial axes."""
        return len(self.chunk_shape)

    def with_levels(
        self, levels: tuple[LevelEntry, ...], schedule: dict[str, Any] | None = None
    ) -> RootMetadata:
        """This root listing ``levels`` above 0; with any, format 1.3 or later (spec §3.3)
        and the ``schedule`` they were built with (None: the one it records); without any,
        no schedule."""
        version = at_least(self.version, LEVELS_VERSION) if levels else self.version
        kept = (self.schedule if schedule is None else schedule) if levels else None
        return replace(self, levels=tuple(levels), version=version, schedule=kept)

    def to_json(self) -> dict[str, Any]:
        """The JSON document of the root attributes (spec §3)."""
        ndim = self.spatial_dims
        bbox = None
        if self.bounding_box is not None:
            bbox = {"min": list(self.bounding_box[0]), "max": list(self.bounding_box[1])}
        units = self.axis_units[0] if len(set(self.axis_units)) == 1 else list(self.axis_units)
        axes = []
        for name, unit in zip(self.axis_names, self.axis_units, strict=True):
            axis: dict[str, Any] = {"name": name, "type": "space"}
            if unit != "unknown":
                axis["unit"] = unit
            axes.append(axis)
        level0 = LevelEntry(level=0, bin_ratio=(1,) * ndim, bin_shape=self.base_bin_shape)
        datasets = [entry.to_json() for entry in (level0, *self.levels)]
        return {
            "zarr_vectors_version": self.version,
            "geometry_type": self.geometry_type,
            "spatial_dims": ndim,
            "chunk_shape": list(self.chunk_shape),
            "base_bin_shape": list(self.base_bin_shape),
            "chunk_grid_origin": list(self.chunk_grid_origin),
            "axis_units": units,
            "bounding_box": bbox,
            "multiscales": [
                {
                    "version": "0.5",
                    "name": "zarr_vectors",
                    "type": "zarr_vectors_multiscale",
                    "axes": axes,
                    "datasets": datasets,
                }
            ],
            **({} if self.schedule is None else {LEVEL_SCHEDULE: self.schedule}),
            **self.extra,
        }

    @classmethod
    def from_json(cls, doc: Any) -> RootMetadata:
        """Parse root attributes, raising :class:`MetadataError` on anything a reader needs."""
        if not isinstance(doc, dict) or "zarr_vectors_version" not in doc:
            raise MetadataError("root attributes lack 'zarr_vectors_version'")
        check_readable_version(doc["zarr_vectors_version"])
        geometry_type = doc.get("geometry_type")
        if geometry_type not in GEOMETRY_TYPES:
            raise MetadataError(
                f"geometry_type must be one of {', '.join(GEOMETRY_TYPES)}, got {geometry_type!r}"
            )
        ndim = doc.get("spatial_dims")
        if not isinstance(ndim, int) or isinstance(ndim, bool) or not 1 <= ndim <= 4:
            raise MetadataError(f"spatial_dims must be an integer from 1 to 4, got {ndim!r}")
        chunk_shape = _floats(doc, "chunk_shape", ndim)
        bin_shape = _floats(doc, "base_bin_shape", ndim) if "base_bin_shape" in doc else chunk_shape
        origin = _ints(doc, "chunk_grid_origin", ndim, default=0)
        return cls(
            version=doc["zarr_vectors_version"],
            geometry_type=geometry_type,
            chunk_shape=chunk_shape,
            base_bin_shape=bin_shape,
            chunk_grid_origin=origin,
            axis_names=_axis_names(doc, ndim),
            axis_units=_axis_units(doc.get("axis_units", "unknown"), ndim),
            bounding_box=_bounding_box(doc.get("bounding_box"), ndim),
            extra={k: v for k, v in doc.items() if k not in CORE_ROOT_KEYS},
            levels=_coarse_levels(doc, ndim),
            schedule=doc.get(LEVEL_SCHEDULE),
        )


def _coarse_levels(doc: dict[str, Any], ndim: int) -> tuple[LevelEntry, ...]:
    """The ``datasets`` entries after the first, strictly ascending levels >= 1 (spec §3.2)."""
    multiscales = doc.get("multiscales")
    first = multiscales[0] if isinstance(multiscales, list) and multiscales else None
    datasets = first.get("datasets") if isinstance(first, dict) else None
    if not isinstance(datasets, list):
        return ()
    entries = tuple(LevelEntry.from_json(entry, ndim) for entry in datasets[1:])
    numbers = [0, *(entry.level for entry in entries)]
    if any(b <= a for a, b in itertools.pairwise(numbers)):
        raise MetadataError(f"multiscales datasets levels must ascend from 0, got {numbers}")
    return entries


def _axis_names(doc: dict[str, Any], ndim: int) -> tuple[str, ...]:
    try:
        axes = doc["multiscales"][0]["axes"]
        names = tuple(str(a["name"]) for a in axes)
    except (KeyError, IndexError, TypeError) as exc:
        raise MetadataError("multiscales[0].axes is missing or malformed") from exc
    if len(names) != ndim:
        raise MetadataError(f"multiscales[0].axes has {len(names)} axes, spatial_dims is {ndim}")
    return names


def _axis_units(value: Any, ndim: int) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) * ndim
    if isinstance(value, list) and len(value) == ndim and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise MetadataError(f"axis_units must be a string or a list of {ndim} strings, got {value!r}")


def _bounding_box(value: Any, ndim: int) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MetadataError(f"bounding_box must be an object with min and max, got {value!r}")
    lo = _plain_floats(value.get("min"), ndim, "bounding_box.min")
    hi = _plain_floats(value.get("max"), ndim, "bounding_box.max")
    if any(a > b for a, b in zip(lo, hi, strict=True)):
        raise MetadataError(f"bounding_box min {list(lo)} exceeds max {list(hi)}")
    return lo, hi


def _plain_floats(value: Any, ndim: int, what: str) -> tuple[float, ...]:
    out = _numbers(value, ndim)
    if out is None:
        raise MetadataError(f"{what} must be a list of {ndim} numbers, got {value!r}")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelMetadata:
    """Attributes of a resolution level group (spec §4)."""

    level: int
    bin_ratio: tuple[int, ...]
    bin_shape: tuple[float, ...]
    vertex_count: int
    chunk_count: int
    object_sparsity: float = 1.0
    object_count: int | None = None
    coarsening: dict[str, Any] | None = None
    kept_object_count: int | None = None
    sparsity_strategy: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON document of the level attributes (spec §4)."""
        doc: dict[str, Any] = {
            "level": self.level,
            "bin_ratio": list(self.bin_ratio),
            "bin_shape": list(self.bin_shape),
            "object_sparsity": self.object_sparsity,
            "vertex_count": self.vertex_count,
            "chunk_count": self.chunk_count,
        }
        if self.object_count is not None:
            doc["object_count"] = self.object_count
        if self.coarsening is not None:
            doc["coarsening"] = self.coarsening
        if self.kept_object_count is not None:
            doc["kept_object_count"] = self.kept_object_count
        if self.sparsity_strategy is not None:
            doc["sparsity_strategy"] = self.sparsity_strategy
        return doc

    def entry(self) -> LevelEntry:
        """This level's ``multiscales`` datasets entry (spec §3.2)."""
        return LevelEntry(
            level=self.level,
            bin_ratio=self.bin_ratio,
            bin_shape=self.bin_shape,
            object_sparsity=self.object_sparsity,
        )

    @classmethod
    def from_json(cls, doc: Any, ndim: int) -> LevelMetadata:
        """Parse level attributes, raising :class:`MetadataError` when malformed."""
        if not isinstance(doc, dict):
            raise MetadataError("level attributes are missing")
        level = doc.get("level")
        if not isinstance(level, int) or isinstance(level, bool) or level < 0:
            raise MetadataError(f"level must be a non-negative integer, got {level!r}")
        object_count = doc.get("object_count")
        kept = doc.get("kept_object_count")
        coarsening = doc.get("coarsening")
        if coarsening is not None:
            if level == 0:
                raise MetadataError("level 0 must not hold coarsening (spec §4.1)")
            coarsening = check_coarsening(coarsening)
        return cls(
            level=level,
            bin_ratio=_ints(doc, "bin_ratio", ndim),
            bin_shape=_floats(doc, "bin_shape", ndim),
            vertex_count=_count(doc, "vertex_count"),
            chunk_count=_count(doc, "chunk_count"),
            object_sparsity=_sparsity(doc),
            object_count=None if object_count is None else _count(doc, "object_count"),
            coarsening=coarsening,
            kept_object_count=None if kept is None else _count(doc, "kept_object_count"),
            sparsity_strategy=_strategy(doc.get("sparsity_strategy")),
        )
