"""The voxel space of a tractogram: affine, dimensions, voxel sizes and voxel order.

TRK and TRX files carry the image grid their streamlines were tracked in. The store keeps
it (root ``custom_metadata.tractogram``, see :mod:`zarr_vectors.converters.tractograms`)
so that an exported file gets the header of the file that was imported.
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.errors import InvalidInputError

__all__ = ["Space", "space_of_bounds", "space_of_reference", "trk_space"]

_NIFTI_SUFFIXES = (".nii", ".nii.gz", ".mgz", ".mgh")
_MAX_DIMENSION = 65535  # TRK stores int16 and TRX uint16 dimensions


@dataclass(frozen=True, slots=True)
class Space:
    """A voxel grid in RAS+ millimetres.

    Attributes
    ----------
    affine
        ``(4, 4)`` float64: voxel indices (centres) to RAS+ mm (``VOXEL_TO_RASMM``).
    dimensions
        Voxels per axis.
    voxel_sizes
        Voxel size per axis, in mm.
    voxel_order
        Three-letter orientation code, e.g. ``"RAS"`` or ``"LPS"``.
    """

    affine: np.ndarray
    dimensions: tuple[int, int, int]
    voxel_sizes: tuple[float, float, float]
    voxel_order: str

    @classmethod
    def from_affine(cls, affine: Any, dimensions: Any) -> Space:
        """The space of ``affine`` and ``dimensions`` (voxel sizes and order from the affine)."""
        matrix = _affine(affine, "affine")
        sizes = np.sqrt(np.sum(matrix[:3, :3] ** 2, axis=0))
        return cls(matrix, _dimensions(dimensions), _triple(sizes), _axcodes(matrix))

    def to_json(self) -> dict[str, Any]:
        """The JSON form kept in the store."""
        return {
            "voxel_to_rasmm": self.affine.tolist(),
            "dimensions": list(self.dimensions),
            "voxel_sizes": list(self.voxel_sizes),
            "voxel_order": self.voxel_order,
        }

    @classmethod
    def from_json(cls, doc: Any) -> Space:
        """Parse :meth:`to_json`'s form.

        Raises
        ------
        InvalidInputError
            When a member is missing or malformed.
        """
        if not isinstance(doc, dict):
            raise InvalidInputError(f"a tractogram space must be an object, got {doc!r}")
        try:
            affine, dims = doc["voxel_to_rasmm"], doc["dimensions"]
            sizes, order = doc["voxel_sizes"], doc["voxel_order"]
        except KeyError as exc:
            raise InvalidInputError(f"the tractogram space lacks {exc.args[0]!r}") from exc
        if not isinstance(order, str) or len(order) != 3:
            raise InvalidInputError(f"voxel_order must be three letters, got {order!r}")
        return cls(_affine(affine, "voxel_to_rasmm"), _dimensions(dims), _triple(sizes), order)


def _affine(value: Any, what: str) -> np.ndarray:
    try:
        matrix = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be a 4x4 matrix of numbers") from exc
    if matrix.shape != (4, 4) or not np.all(np.isfinite(matrix)):
        raise InvalidInputError(f"{what} must be a 4x4 matrix of finite numbers, got {value!r}")
    if abs(np.linalg.det(matrix[:3, :3])) == 0.0:
        raise InvalidInputError(f"{what} is singular: {matrix.tolist()}")
    return matrix


def _dimensions(value: Any) -> tuple[int, int, int]:
    dims = np.asarray(value).reshape(-1)
    if dims.shape != (3,) or dims.dtype.kind not in "iuf" or np.any(dims != np.round(dims)):
        raise InvalidInputError(f"dimensions must be three integers, got {value!r}")
    if np.any(dims < 1) or np.any(dims > _MAX_DIMENSION):
        raise InvalidInputError(f"dimensions must lie in 1..{_MAX_DIMENSION}, got {value!r}")
    return int(dims[0]), int(dims[1]), int(dims[2])


def _triple(value: Any) -> tuple[float, float, float]:
    values = np.asarray(value, dtype=np.float64).reshape(-1)
    if values.shape != (3,) or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise InvalidInputError(f"voxel sizes must be three positive numbers, got {value!r}")
    return float(values[0]), float(values[1]), float(values[2])


def _axcodes(affine: np.ndarray) -> str:
    orientations = require("nibabel.orientations", extra="tracts", purpose="tractogram headers")
    codes = orientations.aff2axcodes(affine)
    if None in codes:
        raise InvalidInputError(f"cannot tell the axis directions of the affine {affine.tolist()}")
    return "".join(str(c) for c in codes)


def space_of_bounds(bounds: tuple[tuple[float, ...], tuple[float, ...]] | None) -> Space:
    """A 1 mm grid, axis-aligned with RAS+, whose voxels cover ``bounds``.

    The affine is the identity when every coordinate is non-negative, else a translation
    to a whole number of millimetres at or below the lowest coordinate, so voxel indices
    stay non-negative. Voxel centres are at whole millimetres (voxel ``i`` covers
    ``[i - 0.5, i + 0.5)`` mm from the origin).
    """
    affine = np.eye(4)
    if bounds is None:
        return Space(affine, (1, 1, 1), (1.0, 1.0, 1.0), "RAS")
    lo = np.asarray(bounds[0], dtype=np.float64)
    hi = np.asarray(bounds[1], dtype=np.float64)
    origin = np.minimum(np.floor(lo), 0.0)
    affine[:3, 3] = origin
    dims = np.ceil(hi - origin).astype(np.int64) + 1
    if np.any(dims > _MAX_DIMENSION):
        raise InvalidInputError(
            f"the streamlines span {(hi - lo).tolist()} mm: too large for a 1 mm header; "
            "pass reference= (a NIfTI, TRK or TRX file)"
        )
    return Space(affine, _dimensions(dims), (1.0, 1.0, 1.0), "RAS")


def space_of_reference(path: str | Path) -> Space:
    """The space of a reference file: a NIfTI (or other nibabel image), TRK or TRX file.

    Raises
    ------
    InvalidInputError
        When the file does not exist, has another format, or cannot be read.
    """
    where = Path(path)
    if not where.is_file():
        raise InvalidInputError(f"reference {where} is not a file")
    name = where.name.lower()
    if name.endswith(".trk"):
        return _trk_space(where)
    if name.endswith(".trx"):
        return _trx_space(where)
    if name.endswith(_NIFTI_SUFFIXES):
        return _image_space(where)
    raise InvalidInputError(
        f"reference {where} must be a NIfTI (.nii, .nii.gz), MGH (.mgz), TRK or TRX file"
    )


def trk_space(header: Any) -> Space:
    """The space of a nibabel TRK header (its own voxel sizes and voxel order kept)."""
    affine = _affine(header["voxel_to_rasmm"], "voxel_to_rasmm")
    order = header["voxel_order"]
    order = order.decode("latin-1") if isinstance(order, bytes) else str(order)
    sizes = _triple(header["voxel_sizes"])
    return Space(affine, _dimensions(header["dimensions"]), sizes, order or _axcodes(affine))


def _trk_space(path: Path) -> Space:
    streamlines = require("nibabel.streamlines", extra="tracts", purpose="reading .trk headers")
    tractogram_file = require(
        "nibabel.streamlines.tractogram_file", extra="tracts", purpose="reading .trk headers"
    )
    try:
        header = streamlines.TrkFile.load(str(path), lazy_load=True).header
    except (tractogram_file.HeaderError, ValueError, EOFError) as exc:
        raise InvalidInputError(f"reference {path} is not a readable TRK file: {exc}") from exc
    return trk_space(header)


def _trx_space(path: Path) -> Space:
    try:
        with zipfile.ZipFile(path) as archive, archive.open("header.json") as member:
            header = json.load(member)
        return Space.from_affine(header["VOXEL_TO_RASMM"], header["DIMENSIONS"])
    except (zipfile.BadZipFile, KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"reference {path} is not a readable TRX file: {exc}") from exc


def _image_space(path: Path) -> Space:
    nibabel = require("nibabel", extra="tracts", purpose="reading reference images")
    images = require("nibabel.filebasedimages", extra="tracts", purpose="reading reference images")
    try:
        image = nibabel.load(str(path))
        affine, shape = image.affine, image.shape
    except (images.ImageFileError, ValueError, EOFError) as exc:
        raise InvalidInputError(f"reference {path} is not a readable image: {exc}") from exc
    if affine is None or len(shape) < 3:
        raise InvalidInputError(f"reference {path} is not a 3-D image with an affine")
    space = Space.from_affine(affine, shape[:3])
    zooms = image.header.get_zooms()[:3]
    if len(zooms) == 3 and all(math.isfinite(z) and z > 0 for z in zooms):
        return Space(space.affine, space.dimensions, _triple(zooms), space.voxel_order)
    return space
