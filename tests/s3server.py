"""An S3-compatible server on the loopback interface (moto), for the object-storage tests.

The server runs in a thread of the test process for the whole session; tests reach it
the way users reach S3 — an ``s3://bucket/key`` URL and the usual ``AWS_*`` environment
variables — through :func:`environment`, which also keeps every AWS client off the real
network (no instance metadata, no shared config or credential files, no proxy).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

BUCKET = "zarr-vectors-tests"
"""The bucket every test writes into, each under its own key prefix."""

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"


@dataclass(frozen=True)
class LoopbackS3:
    """Where the loopback server listens."""

    endpoint: str
    """``http://127.0.0.1:PORT``."""
    bucket: str = BUCKET

    def storage_options(self) -> dict[str, object]:
        """fsspec options naming the server and credentials explicitly (no environment)."""
        return {
            "endpoint_url": self.endpoint,
            "key": ACCESS_KEY,
            "secret": SECRET_KEY,
            "client_kwargs": {"region_name": REGION},
        }

    def fresh_prefix(self) -> str:
        """A key prefix no other test uses: ``bucket/t<hex>``."""
        return f"{self.bucket}/t{uuid.uuid4().hex[:12]}"


def environment(server: LoopbackS3, config_dir: Path) -> dict[str, str | None]:
    """Environment variables that point S3 clients at ``server`` (None: unset the variable).

    ``config_dir`` is an empty directory: the shared AWS config and credential files are
    looked up there, so a developer's own profile cannot redirect or sign the requests.
    """
    return {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": server.endpoint,
        "AWS_ENDPOINT_URL_S3": server.endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(config_dir / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(config_dir / "credentials"),
        "AWS_PROFILE": None,
        "AWS_SESSION_TOKEN": None,
        "AWS_SECURITY_TOKEN": None,
        "AWS_ROLE_ARN": None,
        "AWS_WEB_IDENTITY_TOKEN_FILE": None,
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None,
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": None,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def apply(patch: pytest.MonkeyPatch, variables: dict[str, str | None]) -> None:
    """Set (or, for None, unset) environment variables through ``patch``."""
    for name, value in variables.items():
        if value is None:
            patch.delenv(name, raising=False)
        else:
            patch.setenv(name, value)


@contextmanager
def running(config_dir: Path) -> Iterator[LoopbackS3]:
    """Start moto's S3 server on a free loopback port, create the bucket, stop it at the end.

    ``config_dir`` is as for :func:`environment`, which is in force while the bucket is made.
    """
    from moto.server import ThreadedMotoServer

    werkzeug = logging.getLogger("werkzeug")
    level = werkzeug.level
    werkzeug.setLevel(logging.WARNING)  # one access-log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        loopback = LoopbackS3(endpoint=f"http://{host}:{port}")
        with pytest.MonkeyPatch.context() as patch:
            apply(patch, environment(loopback, config_dir))
            _create_bucket(loopback)
        yield loopback
    finally:
        server.stop()
        werkzeug.setLevel(level)


def _create_bucket(server: LoopbackS3) -> None:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
    )
    client.create_bucket(Bucket=server.bucket)
    client.close()
