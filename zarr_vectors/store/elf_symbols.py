"""Addresses of functions a loaded ELF shared library defines but does not export.

C-Blosc 1.x keeps its shuffle functions internal (``blosc_internal_shuffle``,
``blosc_internal_bitshuffle``); a library that is not stripped still names them in its
symbol table (``.symtab``). :func:`function_addresses` reads that table from the library's
file and places the functions where the loader put the library, by the exported functions'
own addresses (which must all agree, else the file is not the library loaded). Linux and
other ELF systems only; None elsewhere or when anything does not match.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence

import numpy as np

__all__ = ["function_addresses"]

_SYMTAB, _FUNC = 2, 2
"""``SHT_SYMTAB`` (a section type) and ``STT_FUNC`` (a symbol type)."""
_SYMBOL = np.dtype(
    [
        ("name", "<u4"),
        ("info", "u1"),
        ("other", "u1"),
        ("section", "<u2"),
        ("value", "<u8"),
        ("size", "<u8"),
    ]
)
"""``Elf64_Sym``."""


def function_addresses(
    path: str, internal: Sequence[str], exported: Sequence[str]
) -> dict[str, int] | None:
    """Addresses in this process of the ``internal`` functions of the shared library at
    ``path``, or None.

    The library is loaded (``ctypes.CDLL``); its ``exported`` functions (at least two)
    place it: each one's address minus its symbol value must give the same load base.
    None when the file is not a little-endian 64-bit ELF library with a symbol table, a
    name is missing or not a defined function, or the bases disagree.

    Examples
    --------
    >>> function_addresses("/nonexistent", ["f"], ["g", "h"]) is None
    True
    """
    if len(exported) < 2:
        return None
    symbols = _function_symbols(path, {*internal, *exported})
    if symbols is None or not all(name in symbols for name in (*internal, *exported)):
        return None
    try:
        library = ctypes.CDLL(path)
        loaded = [ctypes.cast(getattr(library, n), ctypes.c_void_p).value for n in exported]
    except (OSError, AttributeError):
        return None
    bases = {
        address - symbols[name] for name, address in zip(exported, loaded, strict=True) if address
    }
    if len(bases) != 1 or len([a for a in loaded if a]) != len(exported):
        return None
    base = bases.pop()
    return {name: base + symbols[name] for name in internal}


def _function_symbols(path: str, names: set[str]) -> dict[str, int] | None:
    """Symbol values of the defined functions among ``names`` in the ELF file at
    ``path`` (its ``.symtab``), or None when it is not a readable ELF64 LE file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if data[:6] != b"\x7fELF\x02\x01" or len(data) < 64:
        return None
    found: dict[str, int] = {}
    try:
        (table,) = struct.unpack_from("<Q", data, 0x28)
        entry, count = struct.unpack_from("<HH", data, 0x3A)
        for i in range(count):
            section = table + i * entry
            if struct.unpack_from("<I", data, section + 4)[0] != _SYMTAB:
                continue
            offset, size = struct.unpack_from("<QQ", data, section + 24)
            (link,) = struct.unpack_from("<I", data, section + 40)
            (strings,) = struct.unpack_from("<Q", data, table + link * entry + 24)
            found.update(_named(data, offset, size // _SYMBOL.itemsize, strings, names))
    except (struct.error, ValueError):
        return None
    return found


def _named(data: bytes, offset: int, count: int, strings: int, names: set[str]) -> dict[str, int]:
    """``{name: value}`` of the defined functions of ``names`` in one symbol table."""
    symbols = np.frombuffer(data, dtype=_SYMBOL, count=count, offset=offset)
    keep = ((symbols["info"] & 0xF) == _FUNC) & (symbols["section"] != 0)
    wanted = {name.encode("ascii") for name in names}
    lengths = {len(name) for name in wanted}
    found: dict[str, int] = {}
    for symbol in symbols[keep]:
        start = strings + int(symbol["name"])
        for length in lengths:
            name = data[start : start + length + 1]
            if name[:-1] in wanted and name[-1:] == b"\0":
                found[name[:-1].decode("ascii")] = int(symbol["value"])
    return found
