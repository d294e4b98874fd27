"""TRK, TCK and TRX tractograms to and from streamline stores (extra ``tracts``).

Import (``zv.convert("tracts.trk", "tracts.zarrvectors")``)
    Streamlines are written by :func:`~zarr_vectors.write_polylines` with
    ``kind="streamline"``, in RAS+ millimetres (nibabel's RASMM space; TRX positions are
    already in it), with ``axis_units="millimeter"`` and ``coordinate_system="RAS"``.
    Per-point data (TRK scalars, TRX dpv) become vertex attributes, per-streamline data
    (TRK properties, TRX dps) object attributes, TRX groups store groups and TRX dpg group
    attributes (a dpg that only some groups have is filled with NaN, or 0 for integers, in
    the others, and left out again on export). A column of one value per row is stored
    1-D. Names that are not attribute names (spec §9.4) are made so (``"FA value"`` →
    ``"FA_value"``) and the file's names are restored on export.

    The header is kept in the root ``custom_metadata.tractogram``: ``source_format``; for
    TRK and TRX the voxel space ``voxel_to_rasmm``, ``dimensions``, ``voxel_sizes``,
    ``voxel_order`` (a header whose grid is not valid, e.g. zero dimensions, is not kept);
    for TCK the header's text fields ``tck_fields`` (and a TCK ``step_size`` becomes the
    root key ``step_size``).

    Option ``group_by="key"``: one more group per distinct value of the per-streamline
    column ``key``, named ``key_value`` (e.g. ``bundle_3``).

Export (``zv.convert("tracts.zarrvectors", "out.trk")``)
    Options: ``ids=[...]`` exports those streamlines in that order, ``group="name"`` the
    streamlines of a group (a subset keeps the groups that still have members);
    ``reference="t1.nii.gz"`` (TRK, TRX) takes the header's voxel space from a NIfTI or
    MGH image, a TRK or a TRX file. Without it the space kept at import is used, and
    without one a 1 mm grid aligned with RAS+ that covers the store's bounds is built
    (identity affine, shifted to whole millimetres when coordinates are negative).
    ``dtype="float16" | "float32" | "float64"`` (TRX): positions dtype, default float32.

    TRK writes every column as float32 (its only type) and holds no groups; TCK holds
    positions only (attributes and groups are not written); TRX keeps dtypes, groups and
    dpg (a ``.``, ``/`` or ``\\`` in a name, which TRX member names cannot hold, is written
    ``_``), and must be named ``*.trx`` or ``*.zip`` (trx-python writes no other name). A file
    is written beside ``dst`` and moved over it at the end, so a failed export leaves an
    existing file as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from zarr_vectors.converters import _tract_io as tract_io
from zarr_vectors.converters._common import atomic_output
from zarr_vectors.converters._tract_export import kept_header, store_tracts, tract_space
from zarr_vectors.converters._tract_import import add_label_groups, write_store
from zarr_vectors.converters._tract_io import Tracts
from zarr_vectors.converters.converter import FileConverter, ImportTarget
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError

__all__ = ["tract_converter"]

_READERS: dict[str, Callable[[Path], Tracts]] = {
    "trk": tract_io.read_trk,
    "tck": tract_io.read_tck,
    "trx": tract_io.read_trx,
}


def _import_tracts(name: str, src: Path, target: ImportTarget, options: Mapping[str, Any]) -> None:
    """Write the tractogram file ``src`` (TRK, TCK or TRX) into a new streamline store.

    A tractogram without vertices gets 10 mm chunks unless ``chunk_shape`` is given;
    option ``group_by``: a per-streamline column whose distinct values form groups.

    Raises
    ------
    InvalidInputError
        When the file is damaged or not of the format, or for a bad option.
    """
    tracts = _READERS[name](src)
    if options.get("group_by") is not None:
        add_label_groups(tracts, str(options["group_by"]))
    write_store(tracts, name, target)


def _export_tracts(
    name: str, store: VectorStore, dst: Path, overwrite: bool, options: Mapping[str, Any]
) -> None:
    """Write the streamlines of ``store`` (3-D) into the TRK, TCK or TRX file ``dst``.

    Options ``ids``, ``group``; ``reference`` (TRK, TRX); ``dtype`` (TRX): see the module.

    Raises
    ------
    InvalidInputError
        For a bad option, a store that is not 3-D, or data the format cannot hold.
    ObjectNotFoundError
        When ``ids`` or ``group`` names what the store does not have.
    """
    if store.ndim != 3:
        raise InvalidInputError(f"{name} files hold 3-D streamlines; the store is {store.ndim}-D")
    dtype = str(options.get("dtype", "float32"))
    if dtype not in tract_io.TRX_DTYPES:
        raise InvalidInputError(
            f"dtype must be one of {', '.join(tract_io.TRX_DTYPES)}, got {dtype!r}"
        )
    if name == "trx" and dst.suffix.lower() not in (".trx", ".zip"):
        raise InvalidInputError(f"a TRX file must be named *.trx or *.zip, got {dst.name}")
    kept = kept_header(store)
    tracts = store_tracts(store, kept, options.get("ids"), options.get("group"))
    space = None if name == "tck" else tract_space(store, kept, options.get("reference"))
    with atomic_output(dst) as tmp:
        if space is None:
            tract_io.write_tck(tracts, tmp, dst)
        elif name == "trk":
            tract_io.write_trk(tracts, space, tmp, dst)
        else:
            tract_io.write_trx(tracts, space, tmp, dtype, dst)


def tract_converter(name: str, export_options: tuple[str, ...]) -> FileConverter:
    """The converter of the tractogram format ``name`` (suffix ``.name``): import takes the
    option ``group_by``, export ``ids``, ``group`` and ``export_options``."""
    return FileConverter(
        name,
        (f".{name}",),
        "tracts",
        ("streamline",),
        _import_tracts,
        _export_tracts,
        ("group_by",),
        ("ids", "group", *export_options),
    )
