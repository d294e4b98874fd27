"""Small tractograms written with nibabel, and TRX files written byte by byte, for the tests."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

streamlines = pytest.importorskip("nibabel.streamlines")

AFFINE_LAS = np.array(
    [[-2.0, 0.0, 0.0, 90.0], [0.0, 2.0, 0.0, -126.0], [0.0, 0.0, 2.0, -72.0], [0, 0, 0, 1]]
)
"""A 2 mm LAS grid of 91 x 109 x 91 voxels (MNI-like)."""
DIMS = (91, 109, 91)


def random_lines(seed: int, m: int, low: float = -60.0, high: float = 60.0) -> list[np.ndarray]:
    """``m`` random walks of 2..20 float32 points inside ``[low, high]`` mm."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(m):
        n = int(rng.integers(2, 21))
        start = rng.uniform(low + 10, high - 10, 3)
        walk = start + np.cumsum(rng.normal(0, 1.0, (n, 3)), axis=0)
        lines.append(np.clip(walk, low, high).astype(np.float32))
    return lines


def per_point(lines: list[np.ndarray], seed: int, k: int) -> list[np.ndarray]:
    """One ``(n_i, k)`` float32 block per streamline."""
    rng = np.random.default_rng(seed)
    return [rng.random((len(line), k)).astype(np.float32) for line in lines]


def write_trk(
    path: Path,
    lines: list[np.ndarray],
    *,
    data_per_point: dict[str, Any] | None = None,
    data_per_streamline: dict[str, Any] | None = None,
    affine: np.ndarray = AFFINE_LAS,
    dims: tuple[int, int, int] = DIMS,
    voxel_order: str = "LAS",
) -> None:
    """A TRK file of ``lines`` (RAS+ mm) with the header of ``affine`` and ``dims``."""
    tractogram = streamlines.Tractogram(
        lines,
        data_per_point=data_per_point or {},
        data_per_streamline=data_per_streamline or {},
        affine_to_rasmm=np.eye(4),
    )
    sizes = np.sqrt((affine[:3, :3] ** 2).sum(axis=0))
    header = {
        streamlines.Field.VOXEL_TO_RASMM: affine,
        streamlines.Field.DIMENSIONS: dims,
        streamlines.Field.VOXEL_SIZES: sizes,
        streamlines.Field.VOXEL_ORDER: voxel_order,
    }
    streamlines.TrkFile(tractogram, header=header).save(str(path))


def write_tck(path: Path, lines: list[np.ndarray], fields: dict[str, str] | None = None) -> None:
    """A TCK file of ``lines`` with the extra header ``fields``."""
    tractogram = streamlines.Tractogram(lines, affine_to_rasmm=np.eye(4))
    streamlines.TckFile(tractogram, header=dict(fields or {})).save(str(path))


def flat(lines: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices, offsets)`` of a list of streamlines."""
    offsets = np.concatenate([[0], np.cumsum([len(line) for line in lines])]).astype(np.int64)
    vertices = np.concatenate(lines) if lines else np.zeros((0, 3), np.float32)
    return vertices, offsets


def _member(prefix: str, name: str, values: np.ndarray) -> tuple[str, bytes]:
    arr = np.asarray(values)
    dtype = "bit" if arr.dtype == bool else arr.dtype.name
    width = "" if arr.ndim == 1 or arr.shape[1] == 1 else f".{arr.shape[1]}"
    little = arr.astype(arr.dtype.newbyteorder("<"))
    return f"{prefix}{name}{width}.{dtype}", little.tobytes()


def write_trx(
    path: Path,
    positions: np.ndarray,
    offsets: np.ndarray,
    *,
    dpv: dict[str, np.ndarray] | None = None,
    dps: dict[str, np.ndarray] | None = None,
    groups: dict[str, np.ndarray] | None = None,
    dpg: dict[str, dict[str, np.ndarray]] | None = None,
    affine: np.ndarray = AFFINE_LAS,
    dims: tuple[int, int, int] = DIMS,
    compress: bool = False,
) -> None:
    """A TRX zip written member by member from the TRX specification (not with trx-python)."""
    header = {
        "VOXEL_TO_RASMM": np.asarray(affine).tolist(),
        "DIMENSIONS": list(dims),
        "NB_VERTICES": int(positions.shape[0]),
        "NB_STREAMLINES": int(offsets.shape[0] - 1),
    }
    members = [("header.json", json.dumps(header).encode())]
    members.append(_member("", "positions", positions))
    members.append(("offsets.uint64", offsets.astype("<u8").tobytes()))
    members += [_member("dpv/", k, v) for k, v in (dpv or {}).items()]
    members += [_member("dps/", k, v) for k, v in (dps or {}).items()]
    members += [_member("groups/", k, v.astype(np.uint32)) for k, v in (groups or {}).items()]
    for group, data in (dpg or {}).items():
        members += [_member(f"dpg/{group}/", k, v.reshape(1, -1)) for k, v in data.items()]
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        for name, data in members:
            archive.writestr(name, data)


def load_trx(path: Path) -> dict[str, Any]:
    """Everything of a TRX file as plain arrays, read with trx-python."""
    memmap = pytest.importorskip("trx.trx_file_memmap")
    trx = memmap.load(str(path))
    try:
        n = int(trx.header["NB_VERTICES"])
        return {
            "affine": np.array(trx.header["VOXEL_TO_RASMM"]),
            "dims": tuple(int(d) for d in trx.header["DIMENSIONS"]),
            "positions": np.array(trx.streamlines._data),
            "offsets": np.append(np.array(trx.streamlines._offsets, dtype=np.int64), n),
            "dpv": {k: np.array(v._data) for k, v in trx.data_per_vertex.items()},
            "dps": {k: np.array(v) for k, v in trx.data_per_streamline.items()},
            "groups": {k: np.array(v) for k, v in trx.groups.items()},
            "dpg": {
                g: {k: np.array(v) for k, v in d.items()} for g, d in trx.data_per_group.items()
            },
        }
    finally:
        trx.close()


def load_nibabel(path: Path) -> Any:
    """A TRK or TCK file read by nibabel (streamlines in RAS+ mm)."""
    return streamlines.load(str(path))


def nib_flat(sequence: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, offsets)`` of a nibabel ArraySequence."""
    return flat([np.asarray(s) for s in sequence])
