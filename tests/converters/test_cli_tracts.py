"""``zarr-vectors convert`` with TRK, TCK and TRX files, end to end through ``cli.main``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from tests.converters import tract_files as tf
from zarr_vectors.cli import main

pytest.importorskip("trx.trx_file_memmap")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_trk_in_and_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = tf.random_lines(11, 6)
    labels = np.array([[0], [1], [0], [2], [1], [0]], np.float32)
    tf.write_trk(
        tmp_path / "in.trk",
        lines,
        data_per_point={"fa": tf.per_point(lines, 1, 1)},
        data_per_streamline={"bundle": labels},
    )
    store = str(tmp_path / "s.zarrvectors")
    code, out, _ = _run(
        capsys,
        "convert",
        str(tmp_path / "in.trk"),
        store,
        "--chunk-shape",
        "20",
        "-o",
        "group_by=bundle",
    )
    assert code == 0
    assert "streamline, 6 objects" in out
    opened = zv.open(store)
    assert opened.chunk_shape == (20.0, 20.0, 20.0)
    assert {k: v.tolist() for k, v in opened.groups.items()} == {
        "bundle_0": [0, 2, 5],
        "bundle_1": [1, 4],
        "bundle_2": [3],
    }
    code, out, _ = _run(capsys, "convert", store, str(tmp_path / "out.trk"), "-o", "ids=[3,1]")
    assert code == 0
    assert "out.trk" in out
    back = tf.load_nibabel(tmp_path / "out.trk")
    np.testing.assert_array_equal(back.header["voxel_to_rasmm"], tf.AFFINE_LAS)
    np.testing.assert_array_equal(back.tractogram.data_per_streamline["bundle"][:, 0], [2, 1])
    expected = np.concatenate([lines[3], lines[1]])
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(
        tf.nib_flat(back.streamlines)[0],
        expected,
        rtol=0,
        atol=8 * np.finfo(np.float32).eps * scale,
    )


def test_tck_in_and_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = tf.random_lines(12, 4)
    tf.write_tck(tmp_path / "in.tck", lines, {"method": "iFOD2"})
    store = str(tmp_path / "s.zarrvectors")
    assert _run(capsys, "convert", str(tmp_path / "in.tck"), store)[0] == 0
    code, _, _ = _run(capsys, "convert", store, str(tmp_path / "out.tck"))
    assert code == 0
    back = tf.load_nibabel(tmp_path / "out.tck")
    np.testing.assert_array_equal(tf.nib_flat(back.streamlines)[0], tf.flat(lines)[0])
    assert back.header["method"] == "iFOD2"


def test_trx_in_and_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    positions, offsets = tf.flat(tf.random_lines(13, 5))
    tf.write_trx(
        tmp_path / "in.trx",
        positions,
        offsets,
        dps={"len": np.diff(offsets).astype(np.uint16)},
        groups={"af": np.array([1, 3])},
    )
    store = str(tmp_path / "s.zarrvectors")
    assert _run(capsys, "convert", str(tmp_path / "in.trx"), store)[0] == 0
    out = str(tmp_path / "out.trx")
    code, _, _ = _run(capsys, "convert", store, out, "-o", "dtype=float16", "-o", "group=af")
    assert code == 0
    back = tf.load_trx(Path(out))
    assert back["positions"].dtype == np.float16
    expected = np.concatenate(
        [positions[offsets[1] : offsets[2]], positions[offsets[3] : offsets[4]]]
    )
    np.testing.assert_array_equal(back["positions"], expected.astype(np.float16))
    np.testing.assert_array_equal(back["dps"]["len"].ravel(), np.diff(offsets)[[1, 3]])
    assert {k: v.tolist() for k, v in back["groups"].items()} == {"af": [0, 1]}


def test_a_damaged_file_exits_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.trx").write_bytes(b"not a zip")
    code, _, err = _run(
        capsys, "convert", str(tmp_path / "bad.trx"), str(tmp_path / "s.zarrvectors")
    )
    assert code == 2
    assert "bad.trx" in err
    assert "reading it as TRX" in err
    assert not (tmp_path / "s.zarrvectors").exists()
