"""S3 without credentials: our error saying what to do, not botocore's (issue 40, item 4).

Before, ``zarr-vectors validate s3://...`` with no credentials configured ended in
botocore's ``NoCredentialsError``, which the CLI printed as a bug. The loopback server of
``tests/s3server.py`` stands in for S3 (no request leaves the machine; the request is
refused before it is sent, when it cannot be signed).
"""

from __future__ import annotations

import pytest

import zarr_vectors as zv
from tests.s3server import LoopbackS3
from zarr_vectors.cli import main

s3fs = pytest.importorskip("s3fs")


@pytest.fixture
def anonymous(s3: LoopbackS3, monkeypatch: pytest.MonkeyPatch) -> str:
    """A URL on the loopback server, with no credentials anywhere (environment, files)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    # A filesystem cached by an earlier test holds that test's credentials.
    monkeypatch.setattr(s3fs.S3FileSystem, "cachable", False)
    return f"s3://{s3.fresh_prefix()}/store.zv"


def test_open_without_credentials_is_a_store_access_error(anonymous: str) -> None:
    with pytest.raises(zv.StoreAccessError, match="storage_options") as raised:
        zv.open(anonymous)
    assert isinstance(raised.value, PermissionError)
    assert anonymous in str(raised.value)


def test_validate_without_credentials_reports_what_to_do(anonymous: str) -> None:
    """validate reports an unreadable store as a finding (it raises for bad arguments only)."""
    report = zv.validate(anonymous)
    assert not report.ok
    assert "storage_options" in str(report.problems[0])


def test_cli_validate_without_credentials_says_what_to_do(
    anonymous: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not the "this is a bug" line of an unexpected exception."""
    code = main(["validate", anonymous])
    out, err = capsys.readouterr()
    assert code != 0
    assert "storage_options" in out
    assert "bug" not in (out + err).lower()


def test_cli_info_without_credentials_says_what_to_do(
    anonymous: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["info", anonymous])
    out, err = capsys.readouterr()
    assert code != 0
    assert "storage_options" in err
    assert "bug" not in (out + err).lower()
