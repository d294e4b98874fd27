"""zarr-python's private modules, reached from this module only.

zarr-python says ``zarr.core`` "should not be imported directly by 3rd-party code", and
it may change without notice between releases. The store layer needs three things that
only ``zarr.core`` offers today:

- :func:`sync`: run a coroutine on zarr's own event loop thread, so that zarr's async
  stores (local, memory, zip, fsspec) are driven the way zarr drives them;
- :class:`Buffer` and :class:`BufferPrototype`: the types of the Store API's ``get``;
- :func:`default_buffer_prototype`: the CPU buffers the Store API reads into and writes from.

Every other module imports them from here. ``tests/store/test_zarr_adapter.py`` pins the
zarr-python versions this module was checked against (:data:`ZARR_VERSIONS_CHECKED`) and
says what to check again when zarr-python moves on.
"""

from __future__ import annotations

from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype
from zarr.core.sync import sync

__all__ = [
    "ZARR_VERSIONS_CHECKED",
    "Buffer",
    "BufferPrototype",
    "default_buffer_prototype",
    "sync",
]

ZARR_VERSIONS_CHECKED: tuple[tuple[int, int], tuple[int, int]] = ((3, 1), (3, 2))
"""zarr-python releases this module was checked against: ``[3.1, 3.2)`` (last: 3.1.6)."""
