"""Tractogram files to and from memory: TRK and TCK through nibabel, TRX through trx-python.

Every reader returns, and every writer takes, a :class:`Tracts`: streamlines in RAS+
millimetres as one ``(n, 3)`` array and ``m + 1`` offsets, with the per-point,
per-streamline and per-group data under the names the file uses.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.converters._tract_header import Space, trk_space
from zarr_vectors.errors import InvalidInputError

__all__ = [
    "TRX_DTYPES",
    "Tracts",
    "read_tck",
    "read_trk",
    "read_trx",
    "write_tck",
    "write_trk",
    "write_trx",
]

TRX_DTYPES = ("float16", "float32", "float64")
"""Position dtypes a TRX file may be written with."""

_TCK_STRUCTURAL = frozenset(
    {"magic_number", "count", "datatype", "file", "endianness", "nb_streamlines", "voxel_to_rasmm"}
)
_TRX_FORBIDDEN = str.maketrans({".": "_", "/": "_", "\\": "_"})


@dataclass(slots=True)
class Tracts:
    """A tractogram in memory.

    Attributes
    ----------
    positions
        ``(n, 3)`` vertices in RAS+ mm; streamline k owns ``positions[offsets[k]:offsets[k+1]]``.
    offsets
        ``(m + 1,)`` int64.
    dpv, dps
        Per-point and per-streamline columns by name: ``(n,)``/``(m,)`` for one value,
        ``(n, k)``/``(m, k)`` for k.
    groups
        Streamline indices of each group, by name.
    dpg
        Per-group data: ``{group: {name: (k,) values}}``.
    space
        The voxel grid of the file's header, or None (TCK).
    fields
        TCK header key-value pairs other than the structural ones.
    """

    positions: np.ndarray
    offsets: np.ndarray
    dpv: dict[str, np.ndarray] = field(default_factory=dict)
    dps: dict[str, np.ndarray] = field(default_factory=dict)
    groups: dict[str, np.ndarray] = field(default_factory=dict)
    dpg: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    space: Space | None = None
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def n_streamlines(self) -> int:
        """``m``, the number of streamlines."""
        return int(self.offsets.shape[0] - 1)


@contextmanager
def _library_errors(
    path: Path, action: str, errors: tuple[type[BaseException], ...]
) -> Iterator[None]:
    """Re-raise the listed library errors as :class:`InvalidInputError` naming ``path``."""
    try:
        yield
    except errors as exc:
        raise InvalidInputError(f"{path}: {action} failed: {exc}") from exc


def _nibabel(purpose: str) -> tuple[Any, tuple[type[BaseException], ...]]:
    """``nibabel.streamlines`` and the errors its readers and writers raise on bad data."""
    streamlines = require("nibabel.streamlines", extra="tracts", purpose=purpose)
    files = require("nibabel.streamlines.tractogram_file", extra="tracts", purpose=purpose)
    errors = (files.HeaderError, files.DataError, ValueError, EOFError, struct.error)
    return streamlines, errors


def _column(values: Any, rows: int) -> np.ndarray:
    """``(rows,)`` for one value per row, ``(rows, k)`` for several."""
    arr = np.array(values)
    if arr.ndim != 2:
        arr = arr.reshape(rows, -1) if rows else arr.reshape(0, 1)
    return arr[:, 0].copy() if arr.shape[1] == 1 else arr


def _two_d(values: np.ndarray) -> np.ndarray:
    """``(rows, k)``: a 1-D column as one value per row."""
    return values.reshape(values.shape[0], -1)


def _flat(sequence: Any, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The rows and ``m + 1`` offsets of a nibabel ArraySequence (in element order)."""
    lengths = np.asarray(sequence._lengths, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    data = np.asarray(sequence.get_data())
    if width is not None:
        data = data.reshape(-1, width)
    return data, offsets


def _sequence(array_sequence: Any, rows: np.ndarray, offsets: np.ndarray) -> Any:
    """A nibabel ArraySequence over ``rows`` cut at ``offsets`` (no copy)."""
    sequence = array_sequence()
    sequence._data = rows
    sequence._offsets = offsets[:-1]
    sequence._lengths = np.diff(offsets)
    return sequence


def _check_count(path: Path, declared: Any, found: int) -> None:
    """Raise when the header's streamline count (0: not recorded) is not ``found``."""
    expected = int(declared or 0)
    if expected and expected != found:
        raise InvalidInputError(
            f"{path} declares {expected} streamlines but holds {found}: it is truncated or damaged"
        )


def _from_nibabel(path: Path, loaded: Any) -> Tracts:
    """The streamlines and per-point/per-streamline data of a loaded TRK or TCK file."""
    tractogram = loaded.tractogram
    positions, offsets = _flat(tractogram.streamlines, 3)
    n, m = positions.shape[0], offsets.shape[0] - 1
    _check_count(path, loaded.header.get("nb_streamlines"), m)
    return Tracts(
        positions=positions,
        offsets=offsets,
        dpv={str(k): _column(_flat(v)[0], n) for k, v in tractogram.data_per_point.items()},
        dps={str(k): _column(v, m) for k, v in tractogram.data_per_streamline.items()},
    )


def read_trk(path: Path) -> Tracts:
    """A TRK file: streamlines in RAS+ mm, scalars, properties and the header's space."""
    streamlines, errors = _nibabel("reading .trk files")
    # a truncated streamline makes nibabel build an array on too short a buffer: TypeError
    with _library_errors(path, "reading it as TRK", (*errors, TypeError)):
        loaded = streamlines.TrkFile.load(str(path), lazy_load=False)
    tracts = _from_nibabel(path, loaded)
    tracts.space = _lenient(lambda: trk_space(loaded.header))
    return tracts


def read_tck(path: Path) -> Tracts:
    """A TCK file: streamlines (RAS+ mm) and the header's key-value text fields."""
    streamlines, errors = _nibabel("reading .tck files")
    with _library_errors(path, "reading it as TCK", errors):
        loaded = streamlines.TckFile.load(str(path), lazy_load=False)
    tracts = _from_nibabel(path, loaded)
    tracts.fields = {
        str(k): str(v)
        for k, v in loaded.header.items()
        if k not in _TCK_STRUCTURAL and not str(k).startswith("_")
    }
    return tracts


def _lenient(make: Callable[[], Space]) -> Space | None:
    """The space ``make()`` returns, or None when the header's grid is not valid."""
    try:
        return make()
    except InvalidInputError:
        return None


@contextmanager
def _writable_copy(path: Path) -> Iterator[Path]:
    """``path``, or a temporary copy of it when it is read-only.

    trx-python maps the members of an uncompressed TRX read-write (``np.memmap`` mode
    ``r+``), which fails on a file the user may not write (shared datasets).
    """
    if os.access(path, os.W_OK):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="zarr-vectors-trx-") as scratch:
        copy = Path(scratch) / "input.trx"
        shutil.copyfile(path, copy)
        yield copy


def read_trx(path: Path) -> Tracts:
    """A TRX file: positions, dpv, dps, groups, dpg and the header's space.

    A read-only file is read from a temporary copy (see :func:`_writable_copy`).
    """
    memmap = require("trx.trx_file_memmap", extra="tracts", purpose="reading .trx files")
    errors = (ValueError, KeyError, EOFError, zipfile.BadZipFile, struct.error)
    with _writable_copy(path) as readable:
        with _library_errors(path, "reading it as TRX", errors):
            trx = memmap.load(str(readable))
        try:
            return _trx_tracts(path, trx)
        finally:
            trx.close()


def _trx_tracts(path: Path, trx: Any) -> Tracts:
    header = trx.header
    n, m = int(header["NB_VERTICES"]), int(header["NB_STREAMLINES"])
    space = _lenient(lambda: Space.from_affine(header["VOXEL_TO_RASMM"], header["DIMENSIONS"]))
    if n == 0 or m == 0:  # trx-python loads no array of a file without vertices
        return Tracts(np.zeros((0, 3), np.float32), np.zeros(m + 1, np.int64), space=space)
    offsets = np.append(np.asarray(trx.streamlines._offsets, dtype=np.int64), n)
    lengths = np.asarray(trx.streamlines._lengths, dtype=np.int64)  # from the file's last offset
    if offsets[0] != 0 or lengths.shape != (m,) or np.any(np.diff(offsets) != lengths):
        raise InvalidInputError(
            f"{path}: the TRX offsets do not cut its {n} vertices into {m} streamlines"
        )
    # a TRX's groups are files of a folder, in no order: sort them by name
    groups = {str(k): np.array(trx.groups[k], dtype=np.int64) for k in sorted(trx.groups)}
    for name, members in groups.items():
        if members.size and (members.min() < 0 or members.max() >= m):
            raise InvalidInputError(f"{path}: TRX group {name!r} lists streamlines beyond {m}")
    return Tracts(
        positions=np.array(trx.streamlines._data).reshape(n, 3),
        offsets=offsets,
        dpv={str(k): _column(v._data, n) for k, v in trx.data_per_vertex.items()},
        dps={str(k): _column(v, m) for k, v in trx.data_per_streamline.items()},
        groups=groups,
        dpg={
            str(g): {str(k): np.array(v).reshape(-1) for k, v in data.items()}
            for g, data in trx.data_per_group.items()
        },
        space=space,
    )


def write_trk(tracts: Tracts, space: Space, path: Path, shown: Path | None = None) -> None:
    """Write a TRK file in ``space``; every column is written as float32 (the format's type).

    Errors name ``shown`` (default ``path``): the destination when ``path`` is a scratch file.
    """
    streamlines, errors = _nibabel("writing .trk files")
    sequence = streamlines.ArraySequence
    offsets = tracts.offsets
    tractogram = streamlines.Tractogram(
        _sequence(sequence, tracts.positions, offsets),
        data_per_point={
            k: _sequence(sequence, _two_d(v).astype(np.float32), offsets)
            for k, v in tracts.dpv.items()
        },
        data_per_streamline={k: _two_d(v).astype(np.float32) for k, v in tracts.dps.items()},
        affine_to_rasmm=np.eye(4),
    )
    header = {
        "voxel_to_rasmm": space.affine,
        "dimensions": np.asarray(space.dimensions, dtype=np.int16),
        "voxel_sizes": np.asarray(space.voxel_sizes, dtype=np.float32),
        "voxel_order": space.voxel_order.encode("latin-1"),
    }
    with _library_errors(shown or path, "writing TRK", errors):
        streamlines.TrkFile(tractogram, header=header).save(str(path))


def write_tck(tracts: Tracts, path: Path, shown: Path | None = None) -> None:
    """Write a TCK file: positions and the text ``fields`` (TCK holds no other data).

    Errors name ``shown`` (default ``path``).
    """
    streamlines, errors = _nibabel("writing .tck files")
    tractogram = streamlines.Tractogram(
        _sequence(streamlines.ArraySequence, tracts.positions, tracts.offsets),
        affine_to_rasmm=np.eye(4),
    )
    with _library_errors(shown or path, "writing TCK", errors):
        streamlines.TckFile(tractogram, header=dict(tracts.fields)).save(str(path))


def _trx_names(names: list[str], what: str) -> list[str]:
    """Each name with the characters a TRX member name cannot hold (``. / \\``) made ``_``."""
    safe = [n.translate(_TRX_FORBIDDEN) for n in names]
    if "" in safe or len(set(safe)) != len(safe):
        raise InvalidInputError(f"the {what} names {names} are not distinct non-empty TRX names")
    return safe


def _check_trx_positions(tracts: Tracts, dtype: str) -> np.ndarray:
    """The positions in ``dtype``, after checking that trx-python can write them."""
    lengths = np.diff(tracts.offsets)
    if np.any(lengths == 0):
        raise InvalidInputError(
            f"streamline {int(np.flatnonzero(lengths == 0)[0])} has no vertex: trx-python "
            "cannot write empty streamlines (export the others with ids=)"
        )
    positions = tracts.positions.astype(dtype)
    if not np.all(np.isfinite(positions)):
        raise InvalidInputError(f"the positions overflow {dtype}; write them as float32")
    return positions


def _trx_file(memmap: Any, sequence: Any, tracts: Tracts, space: Space, dtype: str) -> Any:
    """An in-memory trx-python TrxFile of ``tracts`` (arrays shared, not copied)."""
    n, m = tracts.positions.shape[0], tracts.n_streamlines
    offsets = tracts.offsets.astype(np.uint64 if n >= 2**32 else np.uint32)
    trx = memmap.TrxFile()
    trx.header = {
        "VOXEL_TO_RASMM": space.affine.astype(np.float32),
        "DIMENSIONS": np.asarray(space.dimensions, dtype=np.uint16),
        "NB_VERTICES": n,
        "NB_STREAMLINES": m,
    }
    trx.streamlines = _sequence(sequence, _check_trx_positions(tracts, dtype), offsets)
    for name, safe in zip(tracts.dpv, _trx_names(list(tracts.dpv), "dpv"), strict=True):
        trx.data_per_vertex[safe] = _sequence(sequence, tracts.dpv[name], offsets)
    for name, safe in zip(tracts.dps, _trx_names(list(tracts.dps), "dps"), strict=True):
        trx.data_per_streamline[safe] = tracts.dps[name]
    for name, safe in zip(tracts.groups, _trx_names(list(tracts.groups), "group"), strict=True):
        trx.groups[safe] = tracts.groups[name].astype(np.uint32)
        data = tracts.dpg.get(name, {})
        if data:
            keys = _trx_names(list(data), "dpg")
            trx.data_per_group[safe] = {
                key: np.asarray(data[k]).reshape(1, -1) for k, key in zip(data, keys, strict=True)
            }
    return trx


def write_trx(
    tracts: Tracts, space: Space, path: Path, dtype: str, shown: Path | None = None
) -> None:
    """Write a TRX file with ``dtype`` positions; columns keep their dtypes.

    Names that hold ``.``, ``/`` or ``\\`` (which TRX member names cannot) are written with
    ``_`` instead. Errors name ``shown`` (default ``path``).
    """
    memmap = require("trx.trx_file_memmap", extra="tracts", purpose="writing .trx files")
    streamlines = require("nibabel.streamlines", extra="tracts", purpose="writing .trx files")
    trx = _trx_file(memmap, streamlines.ArraySequence, tracts, space, dtype)
    with _library_errors(shown or path, "writing TRX", (ValueError,)):
        memmap.save(trx, str(path))
