"""Shared fixtures: the store kinds every round-trip test runs on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import LocalStore, MemoryStore, ZipStore

StoreFactory = Callable[[str], tuple[Any, Callable[[], Any]]]
"""name -> (store to write into, function returning a store to read from)."""


def _memory(_: Path) -> StoreFactory:
    def make(name: str) -> tuple[Any, Callable[[], Any]]:
        store = MemoryStore()
        return store, lambda: store

    return make


def _local(tmp: Path) -> StoreFactory:
    def make(name: str) -> tuple[Any, Callable[[], Any]]:
        return LocalStore(tmp / name), lambda: LocalStore(tmp / name, read_only=True)

    return make


def _path(tmp: Path) -> StoreFactory:
    def make(name: str) -> tuple[Any, Callable[[], Any]]:
        return str(tmp / name), lambda: str(tmp / name)

    return make


def _zip(tmp: Path) -> StoreFactory:
    def make(name: str) -> tuple[Any, Callable[[], Any]]:
        path = tmp / f"{name}.zip"
        return ZipStore(path, mode="w"), lambda: ZipStore(path, mode="r")

    return make


@pytest.fixture(params=["memory", "local", "path", "zip"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """Each store kind the library supports, as a factory of (write store, read store)."""
    kinds = {"memory": _memory, "local": _local, "path": _path, "zip": _zip}
    return kinds[request.param](tmp_path)


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded random generator."""
    return np.random.default_rng(12345)
