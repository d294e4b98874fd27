"""The keyword arguments every writer shares: their names, their checks, where and how a
writer writes (``mode``, the destination) and the ``append_*`` function of each kind.

Everything here runs before a destination is touched, so bad input never changes a store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from zarr_vectors._deprecation import warn_renamed
from zarr_vectors._progress import ProgressOption
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.store.destination import check_overwrite
from zarr_vectors.store.io import StoreLike, resolve_store
from zarr_vectors.write._inputs import type_name
from zarr_vectors.write._new_store import check_options, shape_values
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "WRITE_MODES",
    "WRITE_SETTINGS",
    "Destination",
    "WriteSettings",
    "OBJECT_COLUMNS",
    "ObjectAppendArgs",
    "ObjectColumns",
    "ObjectWriteArgs",
    "WriteMode",
    "append_function",
    "check_append_settings",
    "split_object_arguments",
    "check_settings",
    "destination",
    "new_store_destination",
    "register_append",
    "with_units",
]


WriteMode = Literal["w-", "w", "a"]
"""How a writer treats its destination, in zarr-python's words (see :func:`destination`)."""

WRITE_MODES: tuple[str, ...] = ("w-", "w", "a")


class WriteSettings(TypedDict, total=False):
    """The settings every one-shot writer takes by keyword (documented on each writer)."""

    chunk_shape: float | Sequence[float] | None
    bin_shape: float | Sequence[float] | None
    units: str | Sequence[str] | None
    mode: WriteMode
    overwrite: bool | None
    options: WriteOptions | None
    progress: ProgressOption
    storage_options: Mapping[str, Any] | None


class ObjectColumns(TypedDict, total=False):
    """The per-object arguments every object writer and ``append_*`` function takes."""

    object_ids: Any
    attributes: Mapping[str, Any] | None
    object_attributes: Mapping[str, Any] | None
    groups: Mapping[Any, Sequence[int]] | None
    group_attributes: Mapping[str, Any] | None


class ObjectWriteArgs(ObjectColumns, WriteSettings, total=False):
    """The keyword arguments every one-shot object writer takes besides its own."""


class ObjectAppendArgs(ObjectColumns, total=False):
    """The keyword arguments every ``append_*`` object function takes besides its own."""

    progress: ProgressOption


WRITE_SETTINGS = frozenset(WriteSettings.__annotations__)
OBJECT_COLUMNS = frozenset(ObjectColumns.__annotations__)


def split_object_arguments(
    arguments: Mapping[str, Any], writer: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(columns, settings)``: an object writer's keyword arguments split by kind.

    Raises
    ------
    InvalidInputError
        Naming an unknown keyword and the ones there are.
    """
    unknown = sorted(set(arguments) - WRITE_SETTINGS - OBJECT_COLUMNS)
    if unknown:
        raise InvalidInputError(
            f"{writer}() got an unexpected keyword argument {unknown[0]!r}; its keyword "
            f"arguments are its own and {', '.join(sorted(WRITE_SETTINGS | OBJECT_COLUMNS))}"
        )
    columns = {k: v for k, v in arguments.items() if k in OBJECT_COLUMNS}
    return columns, {k: v for k, v in arguments.items() if k in WRITE_SETTINGS}


_APPENDERS: dict[str, Callable[..., None]] = {}
"""The ``append_*`` function of each object kind (and points), by kind, as registered."""


@dataclass(frozen=True, slots=True)
class Destination:
    """Where a writer writes and how: the resolved ``store`` and ``mode``."""

    store: StoreLike
    mode: str

    @property
    def overwrite(self) -> bool:
        """Whether an existing Zarr Vectors store is replaced (``mode="w"``)."""
        return self.mode == "w"


def destination(
    store: StoreLike,
    mode: Any,
    overwrite: Any,
    storage_options: Mapping[str, Any] | None,
    *,
    stacklevel: int = 4,
) -> Destination:
    """Resolve a writer's ``mode``, its deprecated ``overwrite`` and ``storage_options``.

    ``"w-"`` refuses an existing store, ``"w"`` replaces a Zarr Vectors store (never
    anything else), ``"a"`` appends to one. ``overwrite=True`` is the old spelling of
    ``mode="w"`` and warns; ``overwrite=False`` says what the default says.
    ``storage_options`` reach the fsspec filesystem of a URL.

    Raises
    ------
    InvalidInputError
        For another mode, an ``overwrite`` that is not a bool or contradicts ``mode``, or
        ``storage_options`` with something other than a URL.
    """
    if mode not in WRITE_MODES:
        raise InvalidInputError(
            f"mode must be 'w-' (create; refuse an existing store), 'w' (replace a store) "
            f"or 'a' (append), got {mode!r}"
        )
    if overwrite is not None and check_overwrite(overwrite):
        warn_renamed("overwrite=True", 'mode="w"', stacklevel=stacklevel)
        if mode == "a":
            raise InvalidInputError("overwrite=True contradicts mode='a'; pass mode='w' alone")
        mode = "w"
    if storage_options is not None:
        store = resolve_store(store, mode="w", storage_options=storage_options)
    return Destination(store, str(mode))


def new_store_destination(
    store: StoreLike,
    mode: Any,
    overwrite: Any,
    storage_options: Mapping[str, Any] | None,
    writer: str,
) -> Destination:
    """:func:`destination` for a writer that only writes whole stores (``"w-"``, ``"w"``).

    Raises
    ------
    InvalidInputError
        As :func:`destination`, and for ``mode="a"``, naming what appends instead.
    """
    target = destination(store, mode, overwrite, storage_options, stacklevel=5)
    if target.mode == "a":
        raise InvalidInputError(
            f"{writer} writes a new store (mode 'w-' or 'w'); to add to a store, call "
            "append_* (or write_*(..., mode='a')) once per batch"
        )
    return target


def check_append_settings(**given: Any) -> None:
    """Raise unless every setting a store fixes is left out of an append (``mode="a"``).

    Raises
    ------
    InvalidInputError
        Naming the settings given.
    """
    named = [name for name, value in given.items() if value is not None]
    if named:
        raise InvalidInputError(
            f"mode='a' keeps the store's own settings; do not pass {', '.join(named)}"
        )


def register_append(kinds: Iterable[str], append: Callable[..., None]) -> None:
    """Record ``append`` as what a writer of any of ``kinds`` runs with ``mode="a"``."""
    for kind in kinds:
        _APPENDERS[kind] = append


def append_function(kind: str) -> Callable[..., None]:
    """The ``append_*`` function registered for ``kind`` (see :func:`register_append`)."""
    return _APPENDERS[kind]


def _units(units: Any) -> str | tuple[str, ...]:
    if isinstance(units, str) and units:
        return units
    if (
        isinstance(units, Sequence)
        and not isinstance(units, str | bytes)
        and units
        and all(isinstance(u, str) and u for u in units)
    ):
        return tuple(units)
    raise InvalidInputError(
        "units must be one unit name for every axis (e.g. 'micrometer') or a sequence of "
        f"one name per axis (e.g. ('nanometer', 'nanometer', 'micrometer')), got {units!r}"
    )


def with_units(options: WriteOptions | None, units: Any) -> WriteOptions | None:
    """``options`` with the axis units of a writer's ``units=`` argument (None: unchanged).

    Raises
    ------
    InvalidInputError
        For units that are not strings, or ``units=`` and ``options.axis_units`` that
        disagree.
    """
    if units is None:
        return options
    value = _units(units)
    if options is None:
        return WriteOptions(axis_units=value)
    given = options.axis_units
    if (given if isinstance(given, str) else tuple(given)) not in ("unknown", value):
        raise InvalidInputError(
            f"units={units!r} and options.axis_units={options.axis_units!r} disagree; "
            "give the units once (units=)"
        )
    return dataclasses.replace(options, axis_units=value)


def check_settings(
    kind: str,
    *,
    chunk_shape: Any = None,
    bin_shape: Any = None,
    overwrite: Any = False,
    options: Any = None,
    units: Any = None,
) -> WriteOptions:
    """Check the settings every writer shares, before any data is looked at, and return
    the options with ``units`` and the defaults of ``kind`` filled in.

    Raises
    ------
    InvalidInputError
        Naming the setting and the expected type: a shape given as a string, a bool or a
        list of non-numbers, a shape that is not positive and finite, ``overwrite`` that is
        not a bool, ``options`` that are not :class:`WriteOptions`, units that are not
        strings.
    """
    for value, what in ((chunk_shape, "chunk_shape"), (bin_shape, "bin_shape")):
        if value is not None:
            shape_values(value, what)
    check_overwrite(overwrite)
    if options is not None and not isinstance(options, WriteOptions):
        raise InvalidInputError(
            f"options must be a zarr_vectors.WriteOptions, got a {type_name(options)}"
        )
    return check_options(with_units(options, units), kind)
