"""Column types of a CSV file in a CSVW metadata file beside it (W3C "CSV on the Web").

CSV text carries no types. Export writes, beside ``points.csv``, the file
``points.csv-metadata.json`` (the name CSVW tools look for) naming the XML Schema datatype of
each column (``float`` for float32, ``double`` for float64, ``unsignedByte`` for uint8,
...); import reads it, so a CSV round trip keeps the dtypes. A CSV without it is read as
before, with types inferred from the text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors._version import __version__
from zarr_vectors.errors import InvalidInputError

__all__ = ["XSD_DATATYPES", "dtypes_of", "metadata_path", "metadata_text"]

CSVW_CONTEXT = "http://www.w3.org/ns/csvw"

XSD_DATATYPES = {
    "bool": "boolean",
    "int8": "byte",
    "int16": "short",
    "int32": "int",
    "int64": "long",
    "uint8": "unsignedByte",
    "uint16": "unsignedShort",
    "uint32": "unsignedInt",
    "uint64": "unsignedLong",
    "float32": "float",
    "float64": "double",
}
"""numpy dtype name -> CSVW (XML Schema) datatype. ``float16``, which has none, is written
as ``{"base": "float", "dc:title": "float16"}``."""

_READ_DATATYPES = {
    **{xsd: np.dtype(name) for name, xsd in XSD_DATATYPES.items()},
    "integer": np.dtype(np.int64),
    "number": np.dtype(np.float64),
}
"""CSVW datatype -> numpy dtype on import (other datatypes leave the column to inference)."""


def metadata_path(csv: Path) -> Path:
    """``points.csv-metadata.json`` for ``points.csv``: where CSVW tools look for it."""
    return csv.with_name(f"{csv.name}-metadata.json")


def _datatype(dtype: np.dtype) -> str | dict[str, str]:
    if dtype.name in XSD_DATATYPES:
        return XSD_DATATYPES[dtype.name]
    if dtype == np.float16:
        return {"base": "float", "dc:title": "float16"}
    raise InvalidInputError(f"a column of dtype {dtype} cannot be written to CSV")


def metadata_text(csv_name: str, dtypes: Mapping[str, np.dtype]) -> str:
    """The CSVW metadata of the CSV file ``csv_name`` whose columns have ``dtypes``, in order."""
    columns = [
        {"name": name, "titles": name, "datatype": _datatype(dtype)}
        for name, dtype in dtypes.items()
    ]
    doc = {
        "@context": CSVW_CONTEXT,
        "url": csv_name,
        "dc:creator": f"zarr_vectors {__version__}",
        "tableSchema": {"columns": columns},
    }
    return json.dumps(doc, indent=2) + "\n"


def _column_title(column: Mapping[str, Any]) -> str | None:
    titles = column.get("titles", column.get("name"))
    if isinstance(titles, list) and titles:
        titles = titles[0]
    return titles if isinstance(titles, str) else None


def _dtype_of(datatype: Any) -> np.dtype | None:
    if isinstance(datatype, dict):
        title = datatype.get("dc:title")
        if title == "float16":
            return np.dtype(np.float16)
        datatype = datatype.get("base")
    if isinstance(datatype, str):
        return _READ_DATATYPES.get(datatype)
    return None


def _columns(doc: Any, where: Path) -> list[Any]:
    schema = doc.get("tableSchema") if isinstance(doc, dict) else None
    columns = schema.get("columns") if isinstance(schema, dict) else None
    if not isinstance(columns, list) or not all(isinstance(c, dict) for c in columns):
        raise InvalidInputError(
            f"{where} has no tableSchema.columns list; fix it, or remove it to read the CSV "
            "with inferred types"
        )
    return columns


def dtypes_of(csv: Path) -> dict[str, np.dtype]:
    """The dtype of each column the CSVW metadata beside ``csv`` types ({} without the file).

    Columns of datatypes without a numpy dtype (``string``, ``date``...) are left out.

    Raises
    ------
    InvalidInputError
        When the metadata file is not JSON or has no ``tableSchema.columns`` list.
    """
    where = metadata_path(csv)
    if not where.is_file():
        return {}
    try:
        doc = json.loads(where.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(
            f"{where} is not CSVW metadata JSON ({exc}); fix it, or remove it to read the CSV "
            "with inferred types"
        ) from exc
    found: dict[str, np.dtype] = {}
    for column in _columns(doc, where):
        title, dtype = _column_title(column), _dtype_of(column.get("datatype"))
        if title is not None and dtype is not None and not column.get("virtual", False):
            found[title] = dtype
    return found
