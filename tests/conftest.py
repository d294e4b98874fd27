"""Shared fixtures: the store kinds every round-trip test runs on, and a loopback S3 server."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import settings
from zarr.storage import FsspecStore, LocalStore, MemoryStore, ZipStore

from tests import s3server
from tests.helpers import THOROUGH
from tests.s3server import LoopbackS3
from zarr_vectors.kernels._jit import set_kernel_mode

# The suite runs the kernels' machine code even for small inputs (a first use runs their
# Python source, zarr_vectors.kernels._jit); ZV_KERNEL_MODE=python or auto runs it the
# other way (tests/kernels passes either way).
set_kernel_mode(os.environ.get("ZV_KERNEL_MODE", "compiled"))

# The long run's profile: properties that take ``max_examples=examples(default, thorough)``
# run their full sample under ``pytest --hypothesis-profile=thorough`` (or
# HYPOTHESIS_PROFILE=thorough); the others run as their own settings say.
settings.register_profile(THOROUGH, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# tests/data holds the golden stores: ~19,600 directories and no test. Left to pytest, each
# worker walked them all looking for tests and conftest files (~25 s of a run's collection).
collect_ignore = ["data"]

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


def _s3(server: LoopbackS3) -> StoreFactory:
    """An ``FsspecStore`` the caller built, with the server and credentials in its options."""
    prefix = server.fresh_prefix()
    options = server.storage_options()

    def make(name: str) -> tuple[Any, Callable[[], Any]]:
        url = f"s3://{prefix}/{name}"
        return FsspecStore.from_url(url, storage_options=options), lambda: FsspecStore.from_url(
            url, storage_options=options, read_only=True
        )

    return make


def _s3_url(server: LoopbackS3) -> StoreFactory:
    """A bare ``s3://bucket/key`` URL: the server and credentials come from the environment."""
    prefix = server.fresh_prefix()

    def make(name: str) -> tuple[Any, Callable[[], Any]]:
        url = f"s3://{prefix}/{name}"
        return url, lambda: url

    return make


LOCAL_KINDS = ("memory", "local", "path", "zip")
"""The store kinds of :func:`store_factory`: those of this process and its file system."""

STORE_KINDS = (*LOCAL_KINDS, "s3", "s3-url")
"""Every store kind, object storage included: those of :func:`backend_factory`."""


def _factory(kind: str, request: pytest.FixtureRequest, tmp: Path) -> StoreFactory:
    if kind.startswith("s3"):
        server: LoopbackS3 = request.getfixturevalue("s3")
        return _s3(server) if kind == "s3" else _s3_url(server)
    kinds = {"memory": _memory, "local": _local, "path": _path, "zip": _zip}
    return kinds[kind](tmp)


@pytest.fixture(params=LOCAL_KINDS)
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """Each local store kind, as a factory of (write store, read store).

    For tests of large stores (a million points): every request to the loopback S3 server
    costs milliseconds, so they run on the kinds without one.
    """
    return _factory(request.param, request, tmp_path)


@pytest.fixture(
    params=[
        pytest.param(kind, marks=pytest.mark.slow if kind == "s3-url" else ())
        for kind in STORE_KINDS
    ]
)
def backend_factory(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """Every store kind the library supports, S3 included, as :func:`store_factory` does.

    The S3 kinds write under a key prefix of their own in the loopback server's bucket:
    ``"s3"`` is an ``FsspecStore`` built with explicit options, ``"s3-url"`` a bare
    ``s3://bucket/key`` string that finds the server and credentials in the environment.
    The default run reaches ``"s3-url"`` through the object round trips of
    tests/test_backends.py (which name their backends); here it runs with ``-m slow``.
    """
    return _factory(request.param, request, tmp_path)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackS3]:
    """moto's S3 server on the loopback interface, with an empty bucket, for the session."""
    with s3server.running(tmp_path_factory.mktemp("aws-config")) as server:
        yield server


@pytest.fixture
def s3(
    s3_server: LoopbackS3, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> LoopbackS3:
    """The loopback S3 server, with the ``AWS_*`` environment pointing at it for this test.

    A bare ``s3://bucket/key`` URL then reaches the loopback server with fake credentials;
    nothing reaches the real network. Use :meth:`LoopbackS3.fresh_prefix` for the keys.
    """
    config = tmp_path_factory.getbasetemp() / "aws-config-empty"
    config.mkdir(exist_ok=True)
    s3server.apply(monkeypatch, s3server.environment(s3_server, config))
    return s3_server


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    """A ``distributed.Client`` of a 2-worker ``LocalCluster`` (processes), one per test
    process (each xdist worker), shared by the modules that run there.

    Starting a cluster costs seconds, and its workers' first tasks load the kernels again;
    a test whose subject is not the cluster's own start passes ``client.scheduler.address``
    as ``scheduler_address=`` instead. (tests/parallel/test_failures.py kills workers: it
    has a cluster of its own.)
    """
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as connected,
    ):
        yield connected


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded random generator."""
    return np.random.default_rng(12345)


@pytest.fixture
def private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tempfile.mkdtemp()`` in the examples makes directories under the test's tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path
