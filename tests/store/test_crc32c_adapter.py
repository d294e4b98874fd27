"""The one module that loads google-crc32c's private C extension (store/crc32c_adapter.py).

When google-crc32c moves past :data:`CRC32C_VERSIONS_CHECKED`,
``test_google_crc32c_is_a_checked_version`` fails on purpose. Check again, against the new
release: that ``google_crc32c._crc32c`` is still a shared library exporting
``uint32_t crc32c_value(const uint8_t *data, size_t size)`` that returns what
``google_crc32c.value`` returns (the test below), that ``google_crc32c.implementation`` still
says ``"c"`` when the extension is built, and that ``tests/store/test_native_blocks.py`` and
``tests/kernels/test_row_blocks.py`` pass. Then widen the range.
"""

from __future__ import annotations

import ctypes
import importlib.metadata

import google_crc32c
import pytest

from zarr_vectors.store.crc32c_adapter import CRC32C_VERSIONS_CHECKED, crc32c_function_address


def _major_minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def test_google_crc32c_is_a_checked_version() -> None:
    version = importlib.metadata.version("google-crc32c")
    low, high = CRC32C_VERSIONS_CHECKED
    assert low <= _major_minor(version) < high, (
        f"google-crc32c {version} is outside the versions store/crc32c_adapter.py was "
        f"checked against ({low} to {high}, exclusive): see this module's docstring"
    )


def test_the_c_function_computes_what_google_crc32c_computes() -> None:
    if google_crc32c.implementation != "c":
        pytest.skip("google-crc32c runs without its C extension here")
    address = crc32c_function_address()
    assert address is not None
    function = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t)(address)
    for data in (b"", b"zarr vectors row block", bytes(range(256)) * 17):
        assert function(data, len(data)) == google_crc32c.value(data)


def test_no_c_extension_means_no_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(google_crc32c, "implementation", "python")
    assert crc32c_function_address() is None
