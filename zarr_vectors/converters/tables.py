"""CSV and Parquet tables of vertices, one row per vertex (via pyarrow, extra ``tables``).

Import (a table → a point cloud):

* the position columns are ``columns=`` (default ``x, y, z`` when all three exist, else
  ``x, y``); their names become the store's axis names;
* every other numeric or bool column becomes a per-vertex attribute with its dtype (or only
  the columns named by ``attributes=``); other columns (text, dates) are skipped. Columns
  ``a_0 ... a_{K-1}`` of one dtype become one ``(n, K)`` attribute ``a`` (as export writes
  them), and Parquet fixed-size list columns ``(n, K)`` attributes. Column names that are
  not identifiers are made safe (``"cell type"`` → ``cell_type``);
* an integer column named ``object_id`` (``object_id=`` renames it) gives the points'
  object ids; ``object_order=True`` adds the object-ordered copy of the points (spec §9.15,
  :class:`~zarr_vectors.WriteOptions` ``object_order``) for fast reads of scattered objects;
* a float column with empty cells reads them as NaN; an empty cell in an integer or bool
  column, or in a position column, is an error.

CSV text carries no types: export writes them beside ``points.csv`` in
``points.csv-metadata.json``, CSVW metadata (W3C "CSV on the Web"; see
:mod:`~zarr_vectors.converters._csvw`), which import reads when it is there. Without it,
numbers are read as int64, float64 or bool. ``dtypes=`` names column types, over the
metadata's (``dtypes={"x": "float32", "intensity": "uint16"}``). Floats are written with the
fewest digits that read back to the same value of their dtype (a float column of whole
numbers as ``1.0``, so that it reads back as floats), so a CSV round trip is exact, dtypes
included; a Parquet round trip is exact with its dtypes.

Export writes one row per vertex, in the store's storage order (chunk by chunk, not the
order of the original rows): the position columns named after the store's axes, every
attribute (an ``(n, K)`` attribute as ``name_0 ... name_{K-1}``) and the object id column
when the vertices have ids. Object stores (polylines, graphs, skeletons, meshes) export
their vertices the same way, with the id of the object of each vertex; their links are
not written.

Options
-------
Import: ``columns``, ``attributes``, ``object_id``, ``dtypes`` (CSV), ``delimiter`` (CSV).
Export: ``object_id`` (column name of the ids), ``compression`` (Parquet codec, default
``"zstd"``; ``"none"`` for none).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.converters import _csvw as csvw
from zarr_vectors.converters._common import (
    atomic_output,
    join_columns,
    names_option,
    safe_name,
    split_columns,
    text_of,
)
from zarr_vectors.converters.converter import ImportTarget
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.geometry import write_points
from zarr_vectors.write import WriteOptions

__all__ = ["EXPORT_OPTIONS", "IMPORT_OPTIONS", "export_table", "import_table"]

IMPORT_OPTIONS = ("columns", "attributes", "object_id", "dtypes", "delimiter", "object_order")
EXPORT_OPTIONS = ("object_id", "compression")
DEFAULT_OBJECT_ID = "object_id"
PARQUET_CODECS = ("zstd", "snappy", "gzip", "brotli", "lz4", "none")


def _arrow() -> ModuleType:
    return require("pyarrow", extra="tables", purpose="reading and writing CSV and Parquet")


def _read_csv(src: Path, dtypes: Any, delimiter: Any) -> Any:
    pa = _arrow()
    csv = require("pyarrow.csv", extra="tables", purpose="reading CSV tables")
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise InvalidInputError(f"delimiter must be one character, got {delimiter!r}")
    if not isinstance(dtypes, dict):
        raise InvalidInputError(f"dtypes must map column names to dtypes, got {dtypes!r}")
    try:
        given = {name: pa.from_numpy_dtype(np.dtype(dt)) for name, dt in dtypes.items()}
    except TypeError as exc:
        raise InvalidInputError(f"dtypes: {exc}") from exc
    stored = {name: pa.from_numpy_dtype(dt) for name, dt in csvw.dtypes_of(src).items()}
    types = stored | given
    half = [name for name, arrow_type in types.items() if arrow_type == pa.float16()]
    try:
        table = csv.read_csv(
            src,
            parse_options=csv.ParseOptions(delimiter=delimiter),
            convert_options=csv.ConvertOptions(
                column_types=types | dict.fromkeys(half, pa.float32())
            ),
        )
    except pa.ArrowInvalid as exc:
        raise InvalidInputError(f"{src}: cannot read as CSV: {exc}") from exc
    return _as_half_floats(table, half)


def _as_half_floats(table: Any, names: list[str]) -> Any:
    """``table`` with its columns ``names`` (read as float32: pyarrow's CSV reader has no
    half floats) cast to float16."""
    pa = _arrow()
    for name in names:
        if name in table.column_names:
            index = table.column_names.index(name)
            table = table.set_column(index, name, table.column(name).cast(pa.float16()))
    return table


def _read_parquet(src: Path) -> Any:
    pa = _arrow()
    parquet = require("pyarrow.parquet", extra="tables", purpose="reading Parquet tables")
    try:
        return parquet.read_table(src)
    except pa.ArrowInvalid as exc:
        raise InvalidInputError(f"{src}: cannot read as Parquet: {exc}") from exc


def _is_numeric(arrow_type: Any) -> bool:
    pa = _arrow()
    types = pa.types
    if types.is_fixed_size_list(arrow_type):
        return _is_numeric(arrow_type.value_type)
    return bool(
        types.is_integer(arrow_type)
        or types.is_floating(arrow_type)
        or types.is_boolean(arrow_type)
    )


def _column_array(table: Any, name: str) -> np.ndarray:
    """A numeric, bool or fixed-size-list column as numpy (nulls: NaN in floats, else error)."""
    pa = _arrow()
    column = table.column(name).combine_chunks()
    arrow_type = column.type
    if not _is_numeric(arrow_type):
        raise InvalidInputError(f"column {name!r} holds {arrow_type}, not numbers")
    if pa.types.is_fixed_size_list(arrow_type):
        if column.null_count or column.flatten().null_count:
            raise InvalidInputError(f"column {name!r} has empty cells")
        width = arrow_type.list_size
        return np.asarray(column.flatten().to_numpy(zero_copy_only=False)).reshape(-1, width)
    if column.null_count and not pa.types.is_floating(arrow_type):
        raise InvalidInputError(
            f"column {name!r} ({arrow_type}) has {column.null_count} empty cells; only "
            "float columns may have empty cells (read as NaN)"
        )
    return np.asarray(column.to_numpy(zero_copy_only=False))


def _position_columns(names: list[str], columns: Any) -> list[str]:
    if columns is None:
        columns = ["x", "y", "z"] if {"x", "y", "z"} <= set(names) else ["x", "y"]
    columns = names_option(columns, "columns", "column names")
    missing = [c for c in columns if c not in names]
    if missing:
        raise InvalidInputError(
            f"position column(s) {', '.join(missing)} not in the table; its columns: "
            f"{', '.join(names)} (choose them with columns=[...])"
        )
    return list(columns)


def _positions(table: Any, columns: list[str]) -> np.ndarray:
    arrays = [_column_array(table, c) for c in columns]
    if any(a.ndim != 1 for a in arrays):
        raise InvalidInputError("position columns must hold one number per row")
    dtype = np.result_type(*arrays)
    return np.stack([a.astype(dtype, copy=False) for a in arrays], axis=1)


def _attribute_names(table: Any, taken: set[str], chosen: Any) -> list[str]:
    names: list[str] = table.column_names
    if chosen is None:
        return [n for n in names if n not in taken and _is_numeric(table.schema.field(n).type)]
    chosen = names_option(chosen, "attributes", "column names")
    missing = [c for c in chosen if c not in names]
    if missing:
        raise InvalidInputError(f"attribute column(s) {', '.join(missing)} not in the table")
    return list(chosen)


def _attributes(table: Any, names: list[str]) -> dict[str, np.ndarray]:
    columns: dict[str, np.ndarray] = {}
    for name in names:
        key = safe_name(name)
        if key in columns:
            raise InvalidInputError(f"columns {name!r} and another both become {key!r}")
        columns[key] = _column_array(table, name)
    return join_columns(columns)


def _object_ids(table: Any, name: Any) -> np.ndarray | None:
    if not isinstance(name, str):
        raise InvalidInputError(f"object_id must be a column name, got {name!r}")
    if name not in table.column_names:
        return None
    ids = _column_array(table, name)
    if ids.dtype.kind not in "iu" or ids.ndim != 1:
        raise InvalidInputError(f"the object id column {name!r} must hold integers")
    return ids


def import_table(name: str, src: Path, target: ImportTarget, options: Mapping[str, Any]) -> None:
    """Write the table ``src`` (CSV or Parquet) as a point cloud store (see the module)."""
    if name == "csv":
        table = _read_csv(src, options.get("dtypes", {}), options.get("delimiter", ","))
    else:
        table = _read_parquet(src)
    columns = _position_columns(table.column_names, options.get("columns"))
    id_column = options.get("object_id", DEFAULT_OBJECT_ID)
    ids = _object_ids(table, id_column)
    taken = {*columns, id_column}
    names = _attribute_names(table, taken, options.get("attributes"))
    write_points(
        target.store,
        _positions(table, columns),
        attributes=_attributes(table, names),
        object_ids=ids,
        **target.write_keywords(),
        options=WriteOptions(
            axis_names=tuple(columns), object_order=bool(options.get("object_order", False))
        ),
    )


def _table_columns(store: VectorStore, id_column: Any) -> dict[str, np.ndarray]:
    if not isinstance(id_column, str) or not id_column:
        raise InvalidInputError(f"object_id must be a column name, got {id_column!r}")
    found = store.read()
    columns = {axis: found.positions[:, d] for d, axis in enumerate(store.axis_names)}
    for name, values in split_columns(found.attributes).items():
        if name in columns:
            raise InvalidInputError(f"attribute {name!r} has the name of another column")
        columns[name] = values
    if found.vertex_object_ids is not None:
        if id_column in columns:
            raise InvalidInputError(
                f"the object id column {id_column!r} has the name of another column "
                "(rename it with object_id=...)"
            )
        columns[id_column] = found.vertex_object_ids
    return columns


def _codec(name: Any) -> str:
    if name not in PARQUET_CODECS:
        raise InvalidInputError(f"compression must be one of {', '.join(PARQUET_CODECS)}")
    return str(name)


def _csv_column(values: np.ndarray) -> np.ndarray:
    """A float column whose finite values are all whole as text (``"1.0"``): pyarrow would
    write ``1``, which reads back as an integer column."""
    if values.dtype.kind != "f":
        return values
    finite = values[np.isfinite(values)]
    if finite.size and not np.array_equal(finite, np.round(finite)):
        return values
    return text_of(values)


def export_table(
    name: str, store: VectorStore, dst: Path, overwrite: bool, options: Mapping[str, Any]
) -> None:
    """Write the vertices of ``store``, one table row each, into ``dst`` (CSV or Parquet)."""
    pa = _arrow()
    if name == "csv":
        _check_metadata_free(dst, overwrite)
    columns = _table_columns(store, options.get("object_id", DEFAULT_OBJECT_ID))
    if name == "csv":
        _write_csv(columns, dst)
        return
    table = pa.table({name: pa.array(values) for name, values in columns.items()})
    parquet = require("pyarrow.parquet", extra="tables", purpose="writing Parquet")
    codec = _codec(options.get("compression", "zstd"))
    with atomic_output(dst) as tmp:
        parquet.write_table(table, tmp, compression=None if codec == "none" else codec)


def _check_metadata_free(dst: Path, overwrite: bool) -> None:
    """Refuse to replace the CSVW metadata file of ``dst`` without ``overwrite``."""
    metadata = csvw.metadata_path(dst)
    if metadata.exists() and not overwrite:
        raise StoreExistsError(f'{metadata} exists; pass mode="w" to replace it')


def _write_csv(columns: dict[str, np.ndarray], dst: Path) -> None:
    """Write ``columns`` as the CSV file ``dst`` and their dtypes as its CSVW metadata; both
    files appear together at the end, or neither."""
    pa = _arrow()
    csv = require("pyarrow.csv", extra="tables", purpose="writing CSV tables")
    dtypes = {name: values.dtype for name, values in columns.items()}
    texts = {name: _csv_column(values) for name, values in columns.items()}
    table = pa.table({name: pa.array(values) for name, values in texts.items()})
    metadata = csvw.metadata_text(dst.name, dtypes)
    with atomic_output(dst) as tmp, atomic_output(csvw.metadata_path(dst)) as tmp_metadata:
        csv.write_csv(table, tmp)
        tmp_metadata.write_text(metadata, encoding="utf-8")
