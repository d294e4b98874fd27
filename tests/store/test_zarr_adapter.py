"""The one module that touches zarr-python's private ``zarr.core`` (store/zarr_adapter.py).

When zarr-python moves past :data:`ZARR_VERSIONS_CHECKED`, ``test_zarr_is_a_checked_version``
fails on purpose. Check again, against the new release: that ``zarr.core.sync.sync`` still
runs a coroutine to completion on zarr's loop thread and returns its value (and re-raises its
errors); that ``zarr.core.buffer`` still exports ``Buffer``, ``BufferPrototype`` and
``default_buffer_prototype`` with ``prototype.buffer.from_bytes`` and ``Buffer.to_bytes``
(the tests below); that the store tests (``tests/store``) and the golden stores pass. Then
widen the range, and switch to a public home of each name if zarr-python offers one.
"""

from __future__ import annotations

import pytest
import zarr
from zarr.storage import MemoryStore

from zarr_vectors.store import zarr_adapter
from zarr_vectors.store.zarr_adapter import (
    ZARR_VERSIONS_CHECKED,
    Buffer,
    BufferPrototype,
    default_buffer_prototype,
    sync,
)


def _major_minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def test_zarr_is_a_checked_version() -> None:
    low, high = ZARR_VERSIONS_CHECKED
    assert low <= _major_minor(zarr.__version__) < high, (
        f"zarr-python {zarr.__version__} is outside the versions store/zarr_adapter.py was "
        f"checked against ({low} to {high}, exclusive): see this module's docstring"
    )


def test_sync_runs_a_store_coroutine_and_returns_its_value() -> None:
    store = MemoryStore()
    prototype = default_buffer_prototype()
    assert isinstance(prototype, BufferPrototype)
    sync(store.set("key", prototype.buffer.from_bytes(b"zarr vectors")))
    got = sync(store.get("key", prototype))
    assert isinstance(got, Buffer)
    assert got.to_bytes() == b"zarr vectors"


def test_sync_reraises_the_coroutines_error() -> None:
    async def fail() -> None:
        raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        sync(fail())


def test_only_the_adapter_names_zarr_core() -> None:
    assert set(zarr_adapter.__all__) == {
        "ZARR_VERSIONS_CHECKED",
        "Buffer",
        "BufferPrototype",
        "default_buffer_prototype",
        "sync",
    }
