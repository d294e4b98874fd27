"""Where writes go: zip files swapped in whole, object storage changed behind an uncommitted root.

A write that fails after it has started writing (here: an error raised where the root
metadata would be committed) must leave a zip file as it was, and must leave a store on
S3 that opens as incomplete (spec §2.4), never as a wrong complete store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import ZipStore

import zarr_vectors as zv
from tests.s3server import LoopbackS3
from zarr_vectors.errors import NotAZarrVectorsStoreError, StoreExistsError
from zarr_vectors.geometry import points
from zarr_vectors.update import point_append

POINTS = np.random.default_rng(1).uniform(0, 40, (300, 3))
MORE = np.random.default_rng(2).uniform(-10, 50, (100, 3))


def _fail(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError("the writer stops here")


def test_a_failed_zip_overwrite_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cloud.zip"
    zv.write_points(path, POINTS, chunk_shape=20.0)
    before = path.read_bytes()
    monkeypatch.setattr(points, "commit_points", _fail)
    with pytest.raises(RuntimeError, match="stops here"):
        zv.write_points(path, MORE, chunk_shape=20.0, mode="w")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["cloud.zip"]  # no staging file left


def test_an_existing_zip_needs_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "cloud.zip"
    zv.write_points(path, POINTS, chunk_shape=20.0)
    before = path.read_bytes()
    with pytest.raises(StoreExistsError, match='mode="w"'):
        zv.write_points(path, MORE, chunk_shape=20.0)
    with pytest.raises(StoreExistsError, match='mode="w"'):
        zv.write_points(ZipStore(path, mode="w"), MORE, chunk_shape=20.0)
    assert path.read_bytes() == before
    zv.write_points(ZipStore(path, mode="w"), MORE, chunk_shape=20.0, mode="w")
    assert zv.open(path).vertex_count == len(MORE)


def test_a_written_zip_store_reads_back_through_the_same_object(tmp_path: Path) -> None:
    """Reopening a write-mode ZipStore would truncate its file: it is read in read mode."""
    store = ZipStore(tmp_path / "cloud.zip", mode="w")
    zv.write_points(store, POINTS, chunk_shape=20.0)
    assert zv.open(store).vertex_count == len(POINTS)
    assert zv.validate(store, level=3).ok
    assert zv.open(tmp_path / "cloud.zip").vertex_count == len(POINTS)


def test_an_interrupted_append_on_s3_opens_as_incomplete(
    s3: LoopbackS3, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"s3://{s3.fresh_prefix()}/cloud"
    zv.write_points(url, POINTS, chunk_shape=20.0)
    monkeypatch.setattr(point_append, "commit_points", _fail)
    with pytest.raises(RuntimeError, match="stops here"):
        zv.append_points(url, MORE, progress=False)
    with pytest.raises(NotAZarrVectorsStoreError, match="interrupted write"):
        zv.open(url)
    report = zv.validate(url)
    assert not report.ok
