"""Validation of user input shared by every writer, and the grid it implies (spec §5).

Everything here runs before a destination is touched, so bad input never changes a store.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import numpy as np

from zarr_vectors._deprecation import warn_renamed
from zarr_vectors._progress import ProgressOption
from zarr_vectors._version import __version__
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid, bins_per_chunk
from zarr_vectors.format.metadata import DEFAULT_AXIS_NAMES, RootMetadata
from zarr_vectors.format.names import RESERVED_ATTRIBUTE_NAMES, check_name
from zarr_vectors.format.version import FORMAT_VERSION
from zarr_vectors.kernels import bounds_and_nonfinite, chunk_coords
from zarr_vectors.store.destination import check_overwrite
from zarr_vectors.store.io import StoreLike, resolve_store
from zarr_vectors.write._chunk_shapes import check_chunk_count, default_chunk_shape
from zarr_vectors.write.options import DEFAULT_COMPRESSION, WriteOptions

_FLOAT32_EXACT = 2**24

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
    "array",
    "check_append_settings",
    "split_object_arguments",
    "attributes",
    "cast_columns",
    "cast_to",
    "check_finite",
    "check_options",
    "check_settings",
    "column",
    "destination",
    "new_store_destination",
    "flag",
    "integer_ids",
    "mapping",
    "number",
    "per_axis",
    "plan_grid",
    "positions",
    "register_append",
    "root_metadata",
    "shape_values",
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


def _type_name(value: Any) -> str:
    return type(value).__name__


def array(values: Any, what: str) -> np.ndarray:
    """``values`` as a numpy array, or an error naming ``what`` (e.g. a ragged list).

    Raises
    ------
    InvalidInputError
        When numpy cannot make one array of ``values``.
    """
    if isinstance(values, str | bytes | Mapping):
        raise InvalidInputError(
            f"{what} must be an array of numbers, got a {_type_name(values)} ({values!r:.60})"
        )
    try:
        return np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(
            f"{what} must be an array of numbers (rows of equal length); "
            f"numpy could not make one array of it: {exc}"
        ) from exc


def mapping(values: Any, what: str) -> Mapping[Any, Any]:
    """``values`` (a mapping, or None for none) checked to be a mapping; an object with
    ``keys()`` and ``items()`` (a dataframe: its columns) is taken as one.

    Raises
    ------
    InvalidInputError
        For a list, an array or anything else that is not a mapping.
    """
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return values
    if callable(getattr(values, "items", None)) and callable(getattr(values, "keys", None)):
        return dict(values.items())  # a mapping that is not a Mapping (a dataframe...)
    raise InvalidInputError(
        f"{what} must be a mapping (dict) of name to array, e.g. "
        f"{{'intensity': values}}, got a {_type_name(values)}"
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def number(value: Any, what: str) -> float:
    """A real number (not a bool, not a string) as a float.

    Raises
    ------
    InvalidInputError
        Naming ``what`` and the type given.
    """
    if not _is_number(value):
        raise InvalidInputError(f"{what} must be a number, got {value!r} ({_type_name(value)})")
    return float(value)


def flag(value: Any, what: str) -> bool:
    """``True`` or ``False`` (numpy bools too).

    Raises
    ------
    InvalidInputError
        For anything else (``"yes"``, 1, None...).
    """
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(
            f"{what} must be True or False, got {value!r} ({_type_name(value)})"
        )
    return bool(value)


def shape_values(value: Any, what: str) -> np.ndarray:
    """A shape setting (``chunk_shape``, ``bin_shape``): one positive finite number or a
    sequence of them, as a 0-d or 1-d float64 array; the count of axes is checked later
    (:func:`per_axis`).

    Raises
    ------
    InvalidInputError
        For strings, bools, mappings, non-numbers, and numbers that are not positive and
        finite, naming ``what``.
    """
    expected = f"{what} must be one positive finite number or a sequence of them (one per axis)"
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf" and value.ndim <= 1:
        items = value.reshape(-1).tolist()
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        items = list(value)
    else:
        items = [value]
    if not items or not all(_is_number(v) for v in items):
        hint = "; pass a number, not a string" if isinstance(value, str | bytes) else ""
        raise InvalidInputError(f"{expected}, got {value!r} ({_type_name(value)}){hint}")
    arr = np.asarray(items, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise InvalidInputError(f"{expected}, got {value!r}")
    scalar = not isinstance(value, Sequence | np.ndarray) or (
        isinstance(value, np.ndarray) and value.ndim == 0
    )
    return arr.reshape(()) if scalar else arr


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
            f"options must be a zarr_vectors.WriteOptions, got a {_type_name(options)}"
        )
    return check_options(with_units(options, units), kind)


def positions(values: Any, what: str = "positions") -> np.ndarray:
    """``(n, D)`` coordinates: float32/float64 kept, other numbers as float32 when exact.

    Raises
    ------
    InvalidInputError
        Naming ``what``, for another shape, non-numbers or integers float32 cannot hold.
    """
    arr = array(values, what)
    if arr.ndim != 2 or arr.shape[1] not in (2, 3, 4):
        raise InvalidInputError(
            f"{what} must have shape (n, D) with D = 2, 3 or 4, got shape {arr.shape}"
        )
    if arr.dtype.kind not in "iuf":
        raise InvalidInputError(f"{what} must be numbers, got dtype {arr.dtype}")
    if arr.dtype == np.float64 or arr.dtype == np.float32:
        return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))
    as32 = arr.astype(np.float32)
    if arr.dtype.kind in "iu" and arr.size and np.abs(arr).max() > _FLOAT32_EXACT:
        raise InvalidInputError(
            f"integer {what} up to {np.abs(arr).max()} are not exact in float32; "
            f"pass {what}.astype(np.float64)"
        )
    return np.ascontiguousarray(as32)


def check_finite(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo, hi, bad = bounds_and_nonfinite(positions)
    if bad:
        row = int(np.flatnonzero(~np.isfinite(positions).all(axis=1))[0])
        raise InvalidInputError(
            f"positions hold {bad} NaN or infinite values (first at row {row}: "
            f"{positions[row].tolist()})"
        )
    return lo, hi


def column(name: str, values: Any, n: int, what: str = "attribute") -> np.ndarray:
    """One named column of ``n`` rows, shape ``(n,)`` or ``(n, K)``, numeric or bool.

    Raises
    ------
    InvalidInputError
        Naming ``what`` and ``name``, for another dtype or shape.
    """
    arr = array(values, f"{what} {name!r}")
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(f"{what} {name!r} must be numeric or bool, got {arr.dtype}")
    if arr.ndim not in (1, 2) or arr.shape[0] != n or (arr.ndim == 2 and arr.shape[1] < 1):
        raise InvalidInputError(
            f"{what} {name!r} must have shape ({n},) or ({n}, K), got {arr.shape}"
        )
    return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))


def attributes(
    values: Mapping[str, Any] | None,
    n: int,
    *,
    what: str = "attribute",
    reserved: frozenset[str] = RESERVED_ATTRIBUTE_NAMES,
) -> dict[str, np.ndarray]:
    """Validate named columns of ``n`` rows each (names per spec §9.4).

    Raises
    ------
    InvalidInputError
        For unsafe or reserved names, non-numeric dtypes or wrong lengths.
    """
    out: dict[str, np.ndarray] = {}
    for name, column_values in mapping(values, f"{what.replace(' ', '_')}s").items():
        check_name(name, what)
        if name in reserved:
            raise InvalidInputError(f"{what} name {name!r} is reserved by the format")
        out[name] = column(name, column_values, n, what)
    return out


def cast_to(values: np.ndarray, dtype: np.dtype[Any], expression: str, holder: str) -> np.ndarray:
    """``values`` as ``dtype`` when numpy casts it safely (``float32`` to ``float64``,
    ``int16`` to ``int32``...); a cast that can lose values is refused.

    Parameters
    ----------
    values
        The caller's array.
    dtype
        The dtype ``holder`` stores.
    expression
        How the caller names the array (``"positions"``, ``"attributes['w']"``), for the
        ``.astype`` the message suggests.
    holder
        What fixes the dtype (``"the store"``, ``"the first batch"``).

    Raises
    ------
    InvalidInputError
        For a cast that is not safe, with the ``.astype(...)`` that does it on purpose.
    """
    if values.dtype == dtype:
        return values
    if np.can_cast(values.dtype, dtype, "safe"):
        return values.astype(dtype)
    raise InvalidInputError(
        f"{expression} is {values.dtype} but {holder} holds {dtype}; {values.dtype} to "
        f"{dtype} can lose values, so it is not done implicitly: pass "
        f"{expression}.astype(np.{dtype.name}) to store them as {dtype}"
    )


def cast_columns(
    columns: dict[str, np.ndarray],
    stored: Mapping[str, tuple[np.dtype[Any], tuple[int, ...]]],
    what: str,
    holder: str,
) -> dict[str, np.ndarray]:
    """Columns fitted to the names, row shapes and dtypes ``holder`` stores (safe casts
    only, :func:`cast_to`).

    Parameters
    ----------
    columns
        Validated columns by name (:func:`attributes`).
    stored
        ``(dtype, row shape)`` of every column ``holder`` stores, by name.
    what
        The argument holding the columns (``"attributes"``), for messages.
    holder
        What fixes the columns (``"the store"``, ``"the first batch"``).

    Raises
    ------
    InvalidInputError
        Naming the argument: for missing or extra names, another row shape, or a cast
        that can lose values.
    """
    if set(columns) != set(stored):
        missing = sorted(set(stored) - set(columns))
        extra = sorted(set(columns) - set(stored))
        raise InvalidInputError(
            f"{what} must have the names {holder} has, {sorted(stored)}: "
            f"missing {missing}, not in {holder} {extra}"
        )
    out: dict[str, np.ndarray] = {}
    for name, (dtype, row_shape) in stored.items():
        values = columns[name]
        expression = f"{what}[{name!r}]"
        if tuple(values.shape[1:]) != tuple(row_shape):
            raise InvalidInputError(
                f"{expression} has rows of shape {tuple(values.shape[1:])}, {holder} "
                f"{tuple(row_shape)}"
            )
        out[name] = cast_to(values, dtype, expression, holder)
    return out


def integer_ids(object_ids: Any, n: int) -> np.ndarray | None:
    """Validate ``n`` integer ids (any integer dtype, kept); None passes through."""
    if object_ids is None:
        return None
    ids = array(object_ids, "object_ids")
    if ids.dtype.kind not in "iu" or ids.shape != (n,):
        raise InvalidInputError(
            f"object_ids must be integers of shape ({n},), got {ids.dtype} {ids.shape}"
        )
    return np.ascontiguousarray(ids, dtype=ids.dtype.newbyteorder("="))


def per_axis(value: float | Sequence[float], ndim: int, what: str) -> np.ndarray:
    """``(ndim,)`` float64 from one number for every axis or one per axis.

    Raises
    ------
    InvalidInputError
        As :func:`shape_values`, or for another count of numbers than ``ndim``.
    """
    arr = shape_values(value, what)
    arr = np.full(ndim, float(arr)) if arr.ndim == 0 else arr
    if arr.shape != (ndim,):
        raise InvalidInputError(
            f"{what} must be one number or {ndim} positive finite numbers (one per axis), "
            f"got {value!r}"
        )
    return arr


def _default_bins(ndim: int) -> int:
    return 2 if ndim == 4 else 4


def plan_grid(
    bounds: tuple[np.ndarray, np.ndarray] | None,
    n: int,
    chunk_shape: float | Sequence[float] | None,
    bin_shape: float | Sequence[float] | None,
    ndim: int,
    sample: np.ndarray | None = None,
) -> ChunkGrid:
    """The chunk grid of a new store: shapes (given or default), origin and grid shape (§5.2).

    Without ``chunk_shape`` the default (:func:`default_chunk_shape`) is measured on
    ``sample``, rows of the points (:func:`~zarr_vectors.kernels.sampling.sample_rows`).

    Raises
    ------
    InvalidInputError
        For non-positive or non-dividing shapes, or a missing chunk shape without data.
    """
    if chunk_shape is None and bounds is None:
        raise InvalidInputError("chunk_shape is required to write a store without vertices")
    if chunk_shape is not None:
        chunk = per_axis(chunk_shape, ndim, "chunk_shape")
    elif bounds is not None and sample is not None:
        chunk = default_chunk_shape(sample, n, bounds)
    else:
        raise InvalidInputError("the default chunk shape needs a sample of the points")
    bins = (
        np.full(ndim, _default_bins(ndim), dtype=np.int64)
        if bin_shape is None
        else bins_per_chunk(chunk, per_axis(bin_shape, ndim, "bin_shape"))
    )
    if bounds is None:
        first = last = np.zeros(ndim, dtype=np.int64)
    else:
        if chunk_shape is not None:  # the default aims at 50,000 points per chunk
            check_chunk_count(bounds, chunk, n)
        span = chunk_coords(np.stack(bounds), chunk)
        first, last = span[0], span[1]
    origin = np.minimum(first, 0)
    return ChunkGrid(chunk, chunk / bins, bins, origin, last - origin + 1)


def root_metadata(
    kind: str,
    grid: ChunkGrid,
    options: WriteOptions,
    bounds: tuple[np.ndarray, np.ndarray] | None,
    extra: dict[str, Any] | None = None,
) -> RootMetadata:
    """Root metadata of a new store of geometry ``kind`` (spec §3)."""
    ndim = grid.ndim
    names = options.axis_names or DEFAULT_AXIS_NAMES[:ndim]
    units = options.axis_units
    units_t = (units,) * ndim if isinstance(units, str) else tuple(units)
    if len(names) != ndim:
        raise InvalidInputError(
            f"axis_names need {ndim} entries (the data have {ndim} axes), got {names!r}"
        )
    if len(units_t) != ndim:
        raise InvalidInputError(
            f"units (axis_units) need 1 or {ndim} entries (the data have {ndim} axes), "
            f"got {units!r}"
        )
    if options.custom_metadata is not None:
        extra = {**(extra or {}), "custom_metadata": options.custom_metadata}
    if options.shard_chunks is not None:
        options.shard_shape(ndim)  # refuses a shard shape of another dimension
    return RootMetadata(
        version=FORMAT_VERSION,  # every new store (§3.3); appends keep their base's
        geometry_type=kind,
        chunk_shape=tuple(float(c) for c in grid.chunk_shape),
        base_bin_shape=tuple(float(b) for b in grid.bin_shape),
        chunk_grid_origin=tuple(int(o) for o in grid.origin),
        axis_names=tuple(names),
        axis_units=units_t,
        bounding_box=None
        if bounds is None
        else (tuple(float(v) for v in bounds[0]), tuple(float(v) for v in bounds[1])),
        extra={**(extra or {}), "software": f"zarr_vectors {__version__}"},
    )


def check_options(options: WriteOptions | None, kind: str) -> WriteOptions:
    """The options with the defaults of ``kind`` filled in.

    Raises
    ------
    InvalidInputError
        For settings that cannot be written.
    """
    options = (options or WriteOptions()).with_kind_defaults(kind)
    rows = options.block_rows
    if not isinstance(rows, int | np.integer) or isinstance(rows, bool) or rows < 1:
        raise InvalidInputError(
            f"rows_per_block must be a positive int, got {rows!r} ({_type_name(rows)})"
        )
    if options.compression not in (None, DEFAULT_COMPRESSION):
        raise InvalidInputError(
            f"compression must be {DEFAULT_COMPRESSION!r} or None, got {options.compression!r}"
        )
    names: Any = options.axis_names
    if names is not None and (
        isinstance(names, str) or not all(isinstance(a, str) and a for a in names)
    ):
        raise InvalidInputError(
            f"axis_names must be a sequence of one name per axis, e.g. ('x', 'y', 'z'), "
            f"got {names!r}"
        )
    return options
