"""LAS/LAZ files ↔ point clouds (zarr_vectors.converters.las)."""

from __future__ import annotations

from pathlib import Path

import laspy
import numpy as np
import pytest

import zarr_vectors as zv

N = 500


def _survey(path: Path) -> laspy.LasData:
    """A georeferenced LAS 1.2 point format 3 file with bit fields and extra bytes."""
    rng = np.random.default_rng(11)
    header = laspy.LasHeader(point_format=3, version="1.2")
    header.scales = np.array([0.01, 0.01, 0.001])
    header.offsets = np.array([500_000.0, 4_000_000.0, -100.0])
    header.add_extra_dims(
        [
            laspy.ExtraBytesParams("amplitude", "f4", description="echo amplitude"),
            laspy.ExtraBytesParams(
                "Refl dB", "u2", scales=np.array([0.5]), offsets=np.array([-3.0])
            ),
            laspy.ExtraBytesParams("tilt", "3i2"),
        ]
    )
    las = laspy.LasData(header)
    las.x = rng.uniform(500_000, 502_000, N)
    las.y = rng.uniform(4_000_000, 4_001_000, N)
    las.z = rng.uniform(-50, 300, N)
    las.intensity = rng.integers(0, 65535, N).astype(np.uint16)
    las.return_number = rng.integers(1, 8, N).astype(np.uint8)
    las.number_of_returns = rng.integers(1, 8, N).astype(np.uint8)
    las.classification = rng.integers(0, 32, N).astype(np.uint8)
    las.synthetic = rng.integers(0, 2, N).astype(np.uint8)
    las.scan_angle_rank = rng.integers(-90, 90, N).astype(np.int8)
    las.gps_time = rng.permutation(N) * 0.25 + 1e8
    las.red = rng.integers(0, 65535, N).astype(np.uint16)
    las.green = rng.integers(0, 65535, N).astype(np.uint16)
    las.amplitude = rng.normal(0, 1, N).astype(np.float32)
    las["Refl dB"] = rng.integers(0, 200, N) * 0.5 - 3.0
    las.tilt = rng.integers(-1000, 1000, (N, 3)).astype(np.int16)
    las.write(str(path))
    return laspy.read(str(path))


def _by_time(las: laspy.LasData) -> np.ndarray:
    return np.argsort(np.asarray(las.gps_time))


@pytest.mark.parametrize("suffix", [".las", ".laz"])
def test_round_trip_gives_the_same_integers(tmp_path: Path, suffix: str) -> None:
    original = _survey(tmp_path / "survey.las")
    store = zv.convert(tmp_path / "survey.las", tmp_path / "s.zv")
    assert isinstance(store, zv.VectorStore)
    out = zv.convert(tmp_path / "s.zv", tmp_path / f"out{suffix}")
    with laspy.open(str(out)) as reader:
        assert reader.header.are_points_compressed == (suffix == ".laz")
    back = laspy.read(str(out))
    assert back.header.point_format.id == 3
    assert str(back.header.version) == "1.2"
    np.testing.assert_array_equal(back.header.scales, original.header.scales)
    np.testing.assert_array_equal(back.header.offsets, original.header.offsets)
    assert list(back.point_format.dimension_names) == list(original.point_format.dimension_names)
    a, b = _by_time(original), _by_time(back)
    for name in original.point_format.dimension_names:
        np.testing.assert_array_equal(np.asarray(back[name])[b], np.asarray(original[name])[a])
    tilt = back.point_format.dimension_by_name("tilt")
    assert tilt.type_str() == "3i2"
    assert back.point_format.dimension_by_name("amplitude").description == "echo amplitude"


def test_import_keeps_scaled_coordinates_and_dimension_dtypes(tmp_path: Path) -> None:
    original = _survey(tmp_path / "survey.las")
    store = zv.convert(tmp_path / "survey.las", tmp_path / "s.zv")
    assert isinstance(store, zv.VectorStore)
    found = store.read()
    assert found.positions.dtype == np.float64
    order = np.argsort(found.attributes["gps_time"])
    a = _by_time(original)
    xyz = np.stack([np.asarray(original.x), np.asarray(original.y), np.asarray(original.z)], 1)
    np.testing.assert_array_equal(found.positions[order], xyz[a])
    assert found.attributes["classification"].dtype == np.uint8
    assert found.attributes["intensity"].dtype == np.uint16
    assert found.attributes["scan_angle_rank"].dtype == np.int8
    assert found.attributes["tilt"].shape == (N, 3)
    np.testing.assert_array_equal(found.attributes["Refl_dB"][order], original["Refl dB"][a])
    assert "X" not in found.attributes
    report = zv.validate(tmp_path / "s.zv", level=3)
    assert report.ok, report.problems
    record = store.metadata["custom_metadata"]["las"]
    assert record["point_format"] == 3
    assert record["scales"] == [0.01, 0.01, 0.001]
    assert [e["name"] for e in record["extra_dimensions"]] == ["amplitude", "Refl dB", "tilt"]


def test_attributes_option_chooses_dimensions(tmp_path: Path) -> None:
    _survey(tmp_path / "survey.las")
    store = zv.convert(tmp_path / "survey.las", tmp_path / "s.zv", attributes=["intensity", "tilt"])
    assert isinstance(store, zv.VectorStore)
    assert sorted(store.attribute_names) == ["intensity", "tilt"]
    with pytest.raises(zv.InvalidInputError, match="no dimension colour"):
        zv.convert(tmp_path / "survey.las", tmp_path / "t.zv", attributes=["colour"])


def test_export_of_a_plain_point_cloud(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    xyz = rng.uniform([2500.0, -1700.0, 0.0], [2600.0, -1600.0, 50.0], (300, 3))
    attributes = {
        "intensity": rng.integers(0, 9999, 300).astype(np.uint16),
        "classification": rng.integers(0, 20, 300).astype(np.uint8),
        "temperature": rng.normal(20, 5, 300).astype(np.float32),
        "flag": rng.random(300) < 0.3,
        "normal": rng.normal(0, 1, (300, 3)),
        "idx": np.arange(300, dtype=np.uint32),
    }
    zv.write_points(tmp_path / "p.zv", xyz, attributes=attributes)
    zv.convert(tmp_path / "p.zv", tmp_path / "p.laz")
    back = laspy.read(str(tmp_path / "p.laz"))
    assert back.header.point_format.id == 0
    assert str(back.header.version) == "1.2"
    np.testing.assert_array_equal(back.header.scales, [0.001] * 3)
    np.testing.assert_array_equal(back.header.offsets, [2000.0, -2000.0, 0.0])
    order = np.asarray(back.idx)
    restored = np.empty((300, 3))
    restored[order] = np.stack([np.asarray(back.x), np.asarray(back.y), np.asarray(back.z)], 1)
    assert np.max(np.abs(restored - xyz)) <= 0.0005 + 1e-9
    for name in ("intensity", "classification", "temperature"):
        column = np.empty_like(attributes[name])
        column[order] = np.asarray(back[name])
        np.testing.assert_array_equal(column, attributes[name], err_msg=name)
    flag = np.empty(300, np.uint8)
    flag[order] = np.asarray(back.flag)
    np.testing.assert_array_equal(flag, attributes["flag"])
    normal_1 = np.empty(300)
    normal_1[order] = np.asarray(back.normal_1)
    np.testing.assert_array_equal(normal_1, attributes["normal"][:, 1])


def test_export_options_override_the_header(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "p.zv", [[1.0, 2.0, 3.0], [4.25, 5.5, 6.75]])
    zv.convert(
        tmp_path / "p.zv", tmp_path / "p.las", point_format=7, version="1.4", scale=0.25, offset=1
    )
    back = laspy.read(str(tmp_path / "p.las"))
    assert back.header.point_format.id == 7
    assert str(back.header.version) == "1.4"
    np.testing.assert_array_equal(np.sort(np.asarray(back.X)), [0, 13])


@pytest.mark.parametrize(
    ("attributes", "options", "message"),
    [
        ({"classification": np.array([3, 40], np.uint16)}, {}, "outside 0..31"),
        ({"return_number": np.array([1, 9], np.uint8)}, {}, "outside 0..7"),
        ({"intensity": np.array([1.5, 2.0])}, {}, "does not fit"),
        ({}, {"scale": 1e-9}, "do not fit LAS 32-bit integers"),
        ({}, {"scale": [1, 2]}, "one number or three"),
        ({}, {"colour": 1}, "unknown option"),
        ({}, {"point_format": 99}, "point format 99"),
    ],
)
def test_export_refuses_what_las_cannot_hold(
    tmp_path: Path, attributes: dict[str, np.ndarray], options: dict[str, object], message: str
) -> None:
    zv.write_points(tmp_path / "p.zv", [[0.0, 0, 0], [1e3, 1, 1]], attributes=attributes)
    (tmp_path / "p.las").write_bytes(b"old")
    with pytest.raises(zv.InvalidInputError, match=message):
        zv.convert(tmp_path / "p.zv", tmp_path / "p.las", mode="w", **options)
    assert (tmp_path / "p.las").read_bytes() == b"old"


def test_two_dimensional_stores_are_refused(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "flat.zv", [[0.0, 0.0]])
    with pytest.raises(zv.InvalidInputError, match="3-D"):
        zv.convert(tmp_path / "flat.zv", tmp_path / "flat.las")


def test_a_file_that_is_not_las_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.las").write_bytes(b"LASF" + b"\0" * 10)
    with pytest.raises(zv.InvalidInputError, match="not a readable LAS"):
        zv.convert(tmp_path / "bad.las", tmp_path / "bad.zv")
    assert not (tmp_path / "bad.zv").exists()


@pytest.mark.parametrize("suffix", ["las", "laz"])
def test_damaged_las_files_are_refused_clearly(tmp_path: Path, suffix: str) -> None:
    zv.write_points(tmp_path / "p.zv", np.arange(30.0).reshape(10, 3))
    zv.convert(tmp_path / "p.zv", tmp_path / f"good.{suffix}")
    data = (tmp_path / f"good.{suffix}").read_bytes()
    for n in [0, 4, 100, 230, len(data) // 2, len(data) - 7]:
        (tmp_path / f"cut.{suffix}").write_bytes(data[:n])
        with pytest.raises(zv.InvalidInputError, match="is not a readable LAS/LAZ file"):
            zv.convert(tmp_path / f"cut.{suffix}", tmp_path / "out.zv")
    (tmp_path / f"zeros.{suffix}").write_bytes(b"LASF" + bytes(300))
    with pytest.raises(zv.InvalidInputError, match="check that it is complete"):
        zv.convert(tmp_path / f"zeros.{suffix}", tmp_path / "out.zv")
    assert not (tmp_path / "out.zv").exists()
