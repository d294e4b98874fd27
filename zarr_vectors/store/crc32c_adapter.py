"""google-crc32c's C function ``crc32c_value``, reached from this module only.

The native block codec (:mod:`zarr_vectors.store.native_blocks`) checks the CRC32C of
every row block inside numba kernels, through the C function of google-crc32c's private
extension module ``google_crc32c._crc32c`` loaded with ctypes. That module is not part of
google-crc32c's API; ``tests/store/test_crc32c_adapter.py`` pins the google-crc32c
versions this was checked against (:data:`CRC32C_VERSIONS_CHECKED`) and says what to check
again when google-crc32c moves on. Without the C extension, blocks are checked one by one
through google-crc32c's Python API.
"""

from __future__ import annotations

import ctypes
import importlib

import google_crc32c

__all__ = ["CRC32C_VERSIONS_CHECKED", "crc32c_function_address"]

CRC32C_VERSIONS_CHECKED: tuple[tuple[int, int], tuple[int, int]] = ((1, 5), (2, 0))
"""google-crc32c releases this module was checked against: ``[1.5, 2.0)`` (last: 1.9.0)."""


def crc32c_function_address() -> int | None:
    """Address of the C function ``uint32_t crc32c_value(const uint8_t *data, size_t size)``.

    Returns
    -------
    int or None
        The function's address, None when google-crc32c runs without its C extension or
        the extension does not export the function.
    """
    if getattr(google_crc32c, "implementation", None) != "c":
        return None
    try:
        library = ctypes.CDLL(importlib.import_module("google_crc32c._crc32c").__file__)
        address = ctypes.cast(library.crc32c_value, ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError, TypeError):
        return None
    return address or None
