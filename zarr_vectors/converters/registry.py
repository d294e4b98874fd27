"""The converters :func:`zarr_vectors.convert` knows: the built-in formats and plug-ins.

The built-in converters are registered here, in code, so that they are there in every
install (a source checkout on ``PYTHONPATH``, an editable install made before a format was
added, a wheel). Other distributions add formats through the entry-point group
:data:`ENTRY_POINT_GROUP`, read once, at the first lookup::

    [project.entry-points."zarr_vectors.converters"]
    xyz = "my_package.xyz:XYZ"

Each entry point names an object that satisfies :class:`~zarr_vectors.converters.Converter`.
A plug-in that cannot be loaded, is not a converter, or takes the name or a suffix of a
converter already registered is skipped with a warning naming it: one broken plug-in does
not take the other formats down.
"""

from __future__ import annotations

import importlib.metadata
import os
import warnings
from pathlib import Path

from zarr_vectors.converters.converter import Converter
from zarr_vectors.converters.csv import CSV
from zarr_vectors.converters.las import LAS
from zarr_vectors.converters.obj import OBJ
from zarr_vectors.converters.parquet import PARQUET
from zarr_vectors.converters.ply import PLY
from zarr_vectors.converters.stl import STL
from zarr_vectors.converters.swc import SWC
from zarr_vectors.converters.tck import TCK
from zarr_vectors.converters.trk import TRK
from zarr_vectors.converters.trx import TRX
from zarr_vectors.errors import InvalidInputError

__all__ = [
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "PluginWarning",
    "converter_for_path",
    "converters",
    "register",
    "registered",
]

ENTRY_POINT_GROUP = "zarr_vectors.converters"
"""The entry-point group other distributions declare their converters in."""

BUILT_IN: tuple[Converter, ...] = (PLY, OBJ, STL, SWC, TRK, TCK, TRX, LAS, CSV, PARQUET)
"""The converters zarr_vectors ships, in the order they are listed."""


class PluginWarning(UserWarning):
    """A converter plug-in was skipped (it failed to load, or is not a usable converter).

    Examples
    --------
    >>> from zarr_vectors.converters import PluginWarning
    >>> issubclass(PluginWarning, UserWarning)
    True
    """


class _Registry:
    """The registered converters by name, in the order they were registered."""

    def __init__(self, built_in: tuple[Converter, ...]) -> None:
        self.by_name: dict[str, Converter] = {}
        self.plugins_loaded = False
        for converter in built_in:
            self.add(converter)

    def conflict(self, converter: object) -> str | None:
        """Why ``converter`` cannot be registered, or None when it can."""
        if not isinstance(converter, Converter):
            return (
                f"{converter!r} is not a converter (it needs name, suffixes, extra, kinds, "
                "import_file and export_store)"
            )
        if converter.name in self.by_name:
            return f"the format name {converter.name!r} is taken"
        taken = {s: c.name for c in self.by_name.values() for s in c.suffixes}
        clash = [s for s in converter.suffixes if s.lower() in taken]
        if clash:
            return f"the suffix {clash[0]!r} is taken by {taken[clash[0].lower()]}"
        return None

    def add(self, converter: Converter) -> None:
        reason = self.conflict(converter)
        if reason is not None:
            raise InvalidInputError(
                f"cannot register {converter!r}: {reason}; give it another name or suffixes"
            )
        self.by_name[converter.name] = converter

    def load_plugins(self) -> None:
        """Register the converters of :data:`ENTRY_POINT_GROUP`, once."""
        if self.plugins_loaded:
            return
        self.plugins_loaded = True
        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            self._load(entry)

    def _load(self, entry: importlib.metadata.EntryPoint) -> None:
        where = f"converter plug-in {entry.name!r} ({entry.value})"
        try:
            converter = entry.load()
        except (ImportError, AttributeError) as exc:
            _skip(where, f"it failed to load: {exc}")
            return
        reason = self.conflict(converter)
        if reason is not None:
            _skip(where, reason)
            return
        self.by_name[converter.name] = converter


def _skip(where: str, reason: str) -> None:
    warnings.warn(
        f"{where} skipped: {reason}; fix or uninstall the package that declares it",
        PluginWarning,
        stacklevel=4,
    )


_REGISTRY = _Registry(BUILT_IN)


def converters() -> tuple[Converter, ...]:
    """Every registered converter: the built-in ones, plug-ins, then those registered.

    Returns
    -------
    tuple of Converter
        In the order they were registered.

    Examples
    --------
    >>> from zarr_vectors.converters import converters
    >>> [c.name for c in converters()][:4]
    ['ply', 'obj', 'stl', 'swc']
    """
    _REGISTRY.load_plugins()
    return tuple(_REGISTRY.by_name.values())


def registered(name: str) -> Converter:
    """The converter of the format ``name`` (any case).

    Raises
    ------
    InvalidInputError
        When no converter has that name (listing the names there are).

    Examples
    --------
    >>> from zarr_vectors.converters import registered
    >>> registered("LAS").suffixes
    ('.las', '.laz')
    >>> registered("vtk")
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.InvalidInputError: unknown format 'vtk'; known formats: ply, obj, ...
    """
    found = {c.name: c for c in converters()}.get(name.lower())
    if found is None:
        known = ", ".join(c.name for c in converters())
        raise InvalidInputError(f"unknown format {name!r}; known formats: {known}")
    return found


def converter_for_path(path: str | os.PathLike[str]) -> Converter | None:
    """The converter whose suffixes hold the suffix of ``path`` (any case), or None.

    Examples
    --------
    >>> from zarr_vectors.converters import converter_for_path
    >>> converter_for_path("survey.LAZ").name
    'las'
    >>> converter_for_path("cells.zarrvectors") is None
    True
    """
    suffix = Path(os.fspath(path)).suffix.lower()
    return next((c for c in converters() if suffix in c.suffixes), None)


def register(converter: Converter) -> None:
    """Add ``converter`` to the registry (a plug-in that has no entry point, or a test's).

    Raises
    ------
    InvalidInputError
        When it is not a :class:`~zarr_vectors.converters.Converter`, or its name or one of
        its suffixes is already registered.

    Examples
    --------
    >>> from zarr_vectors.converters import register, registered
    >>> register(registered("ply"))
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.InvalidInputError: cannot register ...: the format name 'ply' is taken; ...
    """
    _REGISTRY.load_plugins()
    _REGISTRY.add(converter)
