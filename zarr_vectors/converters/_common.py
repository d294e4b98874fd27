"""Helpers shared by the format modules: options, safe output files, attribute columns."""

from __future__ import annotations

import keyword
import os
import re
import stat
import uuid
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.result import QueryResult

__all__ = [
    "atomic_output",
    "check_options",
    "encoding_option",
    "flag_option",
    "join_columns",
    "names_option",
    "read_selection",
    "safe_name",
    "split_columns",
    "text_of",
]

_NUMBERED = re.compile(r"(.+)_(0|[1-9][0-9]*)")
_NOT_WORD = re.compile(r"[^A-Za-z0-9_]")


def check_options(fmt: str, options: Mapping[str, Any], allowed: Collection[str]) -> None:
    """Raise unless every key of ``options`` is one the format ``fmt`` understands.

    Raises
    ------
    InvalidInputError
        Naming the unknown options and the known ones.
    """
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise InvalidInputError(
            f"unknown option(s) {', '.join(unknown)} for {fmt}; its options: {known}"
        )


def names_option(value: Any, option: str, what: str) -> list[str]:
    """The option ``option``, a list of names (``what`` says of what, for the message).

    Raises
    ------
    InvalidInputError
        When ``value`` is a single string or holds something other than strings.
    """
    if isinstance(value, str) or not all(isinstance(c, str) for c in value):
        raise InvalidInputError(f"{option} must be a list of {what}, got {value!r}")
    return list(value)


def flag_option(options: Mapping[str, Any], name: str, default: bool) -> bool:
    """The option ``name``, true or false (``default`` when not given).

    Raises
    ------
    InvalidInputError
        For a value that is not a bool.
    """
    value = options.get(name, default)
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be true or false, got {value!r}")
    return value


def encoding_option(options: Mapping[str, Any]) -> str:
    """The option ``encoding``: ``"binary"`` (default) or ``"ascii"``.

    Raises
    ------
    InvalidInputError
        For another value.
    """
    encoding = options.get("encoding", "binary")
    if encoding not in ("binary", "ascii"):
        raise InvalidInputError(f"encoding must be 'binary' or 'ascii', got {encoding!r}")
    return str(encoding)


NEW_FILE_MODE = 0o666
"""Permissions asked for a new file; the process umask removes bits, as for ``open()``."""


def _new_file_beside(path: Path) -> Path:
    """Create an empty, unique temporary file beside ``path`` (same suffix), with the mode
    ``open()`` would give (:data:`NEW_FILE_MODE` less the umask), unlike ``mkstemp``'s 0600.
    """
    while True:
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial{path.suffix}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, NEW_FILE_MODE)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp


@contextmanager
def atomic_output(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (same suffix); move it to ``path`` on success.

    The file is created with the permissions of any new file (0666 less the umask), so an
    export is as readable as a file written by ``open()``; a file it replaces keeps its
    permissions (as when ``open()`` truncates it). A failed write removes the temporary
    file and leaves an existing ``path`` as it was. A symbolic link is kept: the file it
    points to is replaced.

    Raises
    ------
    InvalidInputError
        When ``path`` (or what it links to) exists and is not a regular file: a directory,
        a device such as ``/dev/stdout``, a named pipe (they would be replaced by a file).
    """
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_file():
        raise InvalidInputError(
            f"{path} is not a regular file (a directory, a device or a pipe); give the path "
            "of a file to write"
        )
    tmp = _new_file_beside(target)
    try:
        yield tmp
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def read_selection(store: VectorStore, ids: Any) -> QueryResult:
    """Every object of an object store (``ids`` None), or the objects ``ids`` in that order."""
    if ids is None:
        return store.read()
    return store.read_objects(ids)


def split_columns(columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One-dimensional columns: an ``(n, K)`` attribute ``a`` becomes ``a_0 ... a_{K-1}``.

    Raises
    ------
    InvalidInputError
        When a split column would take the name of another column.
    """
    out: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        parts = (
            {name: values}
            if values.ndim == 1
            else {f"{name}_{k}": values[:, k] for k in range(values.shape[1])}
        )
        for part, column in parts.items():
            if part in out:
                raise InvalidInputError(f"two attributes would both be written as {part!r}")
            out[part] = column
    return out


def _numbered_groups(names: list[str]) -> dict[str, list[str]]:
    """``{base: [base_0, ..., base_{K-1}]}`` for every complete numbered run with K >= 2."""
    found: dict[str, dict[int, str]] = {}
    for name in names:
        match = _NUMBERED.fullmatch(name)
        if match:
            found.setdefault(match.group(1), {})[int(match.group(2))] = name
    groups: dict[str, list[str]] = {}
    for base, members in found.items():
        if base in names or len(members) < 2 or sorted(members) != list(range(len(members))):
            continue
        groups[base] = [members[k] for k in range(len(members))]
    return groups


def join_columns(columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Undo :func:`split_columns`: columns ``a_0 ... a_{K-1}`` (K >= 2, one dtype, no ``a``)
    become one ``(n, K)`` attribute ``a``, placed where ``a_0`` was."""
    names = list(columns)
    groups = {
        base: members
        for base, members in _numbered_groups(names).items()
        if len({columns[m].dtype for m in members}) == 1
    }
    first_of = {members[0]: base for base, members in groups.items()}
    grouped = {m for members in groups.values() for m in members}
    out: dict[str, np.ndarray] = {}
    for name in names:
        if name in first_of:
            base = first_of[name]
            out[base] = np.stack([columns[m] for m in groups[base]], axis=1)
        elif name not in grouped:
            out[name] = columns[name]
    return out


def safe_name(raw: str) -> str:
    """An attribute name from a file's column name: characters other than ASCII letters,
    digits and ``_`` become ``_``; a leading digit, a Python keyword or the reserved prefix
    ``zv_`` gets an extra ``_`` (``"Refl dB"`` → ``"Refl_dB"``, ``"1st"`` → ``"_1st"``)."""
    name = _NOT_WORD.sub("_", raw)
    if not name or name[0].isdigit() or name.startswith("zv_"):
        name = f"_{name}"
    if keyword.iskeyword(name):
        name = f"{name}_"
    return name


def text_of(values: np.ndarray) -> np.ndarray:
    """Each number as the shortest text that reads back to the same value of its dtype."""
    if values.dtype.kind == "b":
        return values.astype(np.uint8).astype(str)
    return np.asarray(values).astype(str)
