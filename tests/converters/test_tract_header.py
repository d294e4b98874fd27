"""The voxel space of tractogram headers (zarr_vectors.converters._tract_header)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.converters import tract_files as tf
from zarr_vectors.converters._tract_header import Space, space_of_bounds, space_of_reference
from zarr_vectors.errors import InvalidInputError

nibabel = pytest.importorskip("nibabel")


def test_from_affine_matches_nibabel() -> None:
    affine = np.array([[0, 0, -1.5, 80], [2.0, 0, 0, -100], [0, 1.25, 0, -70], [0, 0, 0, 1]])
    space = Space.from_affine(affine, [64, 80, 96])
    np.testing.assert_allclose(space.voxel_sizes, nibabel.affines.voxel_sizes(affine))
    assert space.voxel_order == "".join(nibabel.aff2axcodes(affine))
    assert space.dimensions == (64, 80, 96)


def test_json_round_trip_and_errors() -> None:
    space = Space.from_affine(tf.AFFINE_LAS, tf.DIMS)
    again = Space.from_json(space.to_json())
    np.testing.assert_array_equal(again.affine, space.affine)
    assert (again.dimensions, again.voxel_sizes, again.voxel_order) == (
        space.dimensions,
        space.voxel_sizes,
        space.voxel_order,
    )
    doc = space.to_json()
    del doc["dimensions"]
    with pytest.raises(InvalidInputError, match="lacks 'dimensions'"):
        Space.from_json(doc)
    with pytest.raises(InvalidInputError, match="4x4"):
        Space.from_json({**space.to_json(), "voxel_to_rasmm": [[1, 0], [0, 1]]})
    with pytest.raises(InvalidInputError, match="singular"):
        Space.from_affine(np.diag([1.0, 0.0, 1.0, 1.0]), tf.DIMS)
    with pytest.raises(InvalidInputError, match="dimensions"):
        Space.from_affine(np.eye(4), [0, 10, 10])


@pytest.mark.parametrize(
    ("lo", "hi", "origin", "dims"),
    [
        ((0.0, 2.0, 0.5), (10.0, 20.2, 30.0), (0, 0, 0), (11, 22, 31)),
        ((-3.5, 1.0, -0.25), (4.0, 1.0, 0.25), (-4, 0, -1), (9, 2, 3)),
    ],
)
def test_space_of_bounds(
    lo: tuple[float, ...], hi: tuple[float, ...], origin: tuple[int, ...], dims: tuple[int, ...]
) -> None:
    space = space_of_bounds((lo, hi))
    np.testing.assert_array_equal(space.affine[:3, :3], np.eye(3))
    np.testing.assert_array_equal(space.affine[:3, 3], origin)
    assert space.dimensions == dims
    voxel_lo = np.asarray(lo) - origin
    voxel_hi = np.asarray(hi) - origin
    assert np.all(voxel_lo >= -0.5)
    assert np.all(voxel_hi < np.asarray(dims) - 0.5)


def test_space_of_bounds_without_vertices_or_too_large() -> None:
    assert space_of_bounds(None).dimensions == (1, 1, 1)
    with pytest.raises(InvalidInputError, match="reference="):
        space_of_bounds(((0.0, 0.0, 0.0), (1e6, 1.0, 1.0)))


def test_bad_references(tmp_path: Path) -> None:
    (tmp_path / "ref.txt").write_text("x")
    with pytest.raises(InvalidInputError, match="must be a NIfTI"):
        space_of_reference(tmp_path / "ref.txt")
    (tmp_path / "ref.trx").write_bytes(b"not a zip")
    with pytest.raises(InvalidInputError, match="not a readable TRX"):
        space_of_reference(tmp_path / "ref.trx")
    with zipfile.ZipFile(tmp_path / "nohdr.trx", "w") as archive:
        archive.writestr("offsets.uint32", b"")
    with pytest.raises(InvalidInputError, match="not a readable TRX"):
        space_of_reference(tmp_path / "nohdr.trx")
    (tmp_path / "ref.nii").write_bytes(b"\0" * 10)
    with pytest.raises(InvalidInputError, match="not a readable image"):
        space_of_reference(tmp_path / "ref.nii")
    nibabel.save(nibabel.Nifti1Image(np.zeros((4, 5), np.uint8), np.eye(4)), tmp_path / "flat.nii")
    with pytest.raises(InvalidInputError, match="3-D image"):
        space_of_reference(tmp_path / "flat.nii")
