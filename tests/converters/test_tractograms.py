"""TRK, TCK and TRX files to and from streamline stores (zarr_vectors.converters.tractograms).

Files are built in the tests with nibabel (TRK, TCK) or member by member (TRX), and what
comes back is compared with what nibabel and trx-python read.
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.converters import tract_files as tf
from zarr_vectors.errors import InvalidInputError, ObjectNotFoundError

memmap = pytest.importorskip("trx.trx_file_memmap")
nibabel = pytest.importorskip("nibabel")


def _float32_close(a: np.ndarray, b: np.ndarray) -> None:
    """Equal up to a few float32 ulps of the largest coordinate (one affine each way)."""
    assert a.shape == b.shape
    scale = max(float(np.abs(a).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(a, b, rtol=0, atol=8 * np.finfo(np.float32).eps * scale)


def _trk_case(tmp_path: Path, m: int = 12) -> tuple[Path, dict[str, Any]]:
    lines = tf.random_lines(1, m)
    dpp = {"fa": tf.per_point(lines, 2, 1), "rgb": tf.per_point(lines, 3, 3)}
    rng = np.random.default_rng(4)
    dps = {
        "bundle": rng.integers(0, 3, (m, 1)).astype(np.float32),
        "w": rng.random((m, 2)).astype(np.float32),
    }
    path = tmp_path / "in.trk"
    tf.write_trk(path, lines, data_per_point=dpp, data_per_streamline=dps)
    return path, {"lines": lines, "dpp": dpp, "dps": dps}


def _trx_case(tmp_path: Path, compress: bool = False) -> tuple[Path, dict[str, Any]]:
    lines = tf.random_lines(5, 9)
    positions, offsets = tf.flat(lines)
    n, m = positions.shape[0], offsets.shape[0] - 1
    rng = np.random.default_rng(6)
    case = {
        "positions": positions.astype(np.float16),
        "offsets": offsets,
        "dpv": {
            "fa": rng.random(n).astype(np.float32),
            "rgb": rng.integers(0, 256, (n, 3)).astype(np.uint8),
        },
        "dps": {"label": rng.integers(-5, 5, m).astype(np.int16), "kept": rng.random(m) > 0.5},
        "groups": {"cst left": np.array([7, 2, 4]), "af": np.array([0, 1]), "none": np.array([])},
        "dpg": {
            "cst left": {"color": np.array([1.0, 0.0, 0.0], np.float32), "n": np.array([3])},
            "af": {"color": np.array([0.0, 1.0, 0.0], np.float32)},
        },
    }
    path = tmp_path / "in.trx"
    tf.write_trx(
        path,
        case["positions"],
        offsets,
        dpv=case["dpv"],
        dps=case["dps"],
        groups=case["groups"],
        dpg=case["dpg"],
        compress=compress,
    )
    return path, case


# -- TRK ------------------------------------------------------------------------------------


def test_trk_import_equals_what_nibabel_reads(tmp_path: Path) -> None:
    path, _ = _trk_case(tmp_path)
    store = zv.convert(path, tmp_path / "s.zarrvectors")
    got = store.read()
    ref = tf.load_nibabel(path).tractogram
    positions, offsets = tf.nib_flat(ref.streamlines)
    np.testing.assert_array_equal(got.positions, positions)
    np.testing.assert_array_equal(got.offsets, offsets)
    np.testing.assert_array_equal(
        got.attributes["fa"], tf.nib_flat(ref.data_per_point["fa"])[0][:, 0]
    )
    np.testing.assert_array_equal(got.attributes["rgb"], tf.nib_flat(ref.data_per_point["rgb"])[0])
    np.testing.assert_array_equal(
        got.object_attributes["bundle"], ref.data_per_streamline["bundle"][:, 0]
    )
    np.testing.assert_array_equal(got.object_attributes["w"], ref.data_per_streamline["w"])
    kept = store.metadata["custom_metadata"]["tractogram"]
    assert kept["source_format"] == "trk"
    np.testing.assert_array_equal(kept["voxel_to_rasmm"], tf.AFFINE_LAS)
    assert kept["dimensions"] == list(tf.DIMS)
    assert kept["voxel_sizes"] == [2.0, 2.0, 2.0]
    assert kept["voxel_order"] == "LAS"
    assert store.axis_units == ("millimeter",) * 3
    assert store.metadata["coordinate_system"] == "RAS"
    assert zv.validate(tmp_path / "s.zarrvectors", level=4).ok


def test_trk_round_trip_keeps_header_and_data(tmp_path: Path) -> None:
    path, _ = _trk_case(tmp_path)
    zv.convert(path, tmp_path / "s.zarrvectors")
    out = zv.convert(tmp_path / "s.zarrvectors", tmp_path / "out.trk")
    assert out == tmp_path / "out.trk"
    before, after = tf.load_nibabel(path), tf.load_nibabel(out)
    for key in ("voxel_to_rasmm", "dimensions", "voxel_sizes", "voxel_order"):
        np.testing.assert_array_equal(after.header[key], before.header[key])
    _float32_close(tf.nib_flat(after.streamlines)[0], tf.nib_flat(before.streamlines)[0])
    np.testing.assert_array_equal(
        tf.nib_flat(after.streamlines)[1], tf.nib_flat(before.streamlines)[1]
    )
    for key in ("fa", "rgb"):
        np.testing.assert_array_equal(
            tf.nib_flat(after.tractogram.data_per_point[key])[0],
            tf.nib_flat(before.tractogram.data_per_point[key])[0],
        )
    for key in ("bundle", "w"):
        np.testing.assert_array_equal(
            after.tractogram.data_per_streamline[key], before.tractogram.data_per_streamline[key]
        )


def test_trk_export_writes_every_column_as_float32(tmp_path: Path) -> None:
    lines = tf.random_lines(2, 4)
    zv.write_polylines(
        tmp_path / "s.zarrvectors",
        lines,
        kind="streamline",
        attributes={"count": np.arange(sum(map(len, lines)), dtype=np.int32)},
        object_attributes={"flag": np.array([True, False, True, True])},
    )
    out = zv.convert(tmp_path / "s.zarrvectors", tmp_path / "out.trk")
    back = tf.load_nibabel(out).tractogram
    assert tf.nib_flat(back.data_per_point["count"])[0].dtype == np.float32
    np.testing.assert_array_equal(
        tf.nib_flat(back.data_per_point["count"])[0][:, 0], np.arange(sum(map(len, lines)))
    )
    np.testing.assert_array_equal(back.data_per_streamline["flag"][:, 0], [1, 0, 1, 1])


# -- TCK ------------------------------------------------------------------------------------


def test_tck_round_trip_keeps_positions_and_fields(tmp_path: Path) -> None:
    lines = tf.random_lines(7, 15)
    fields = {"step_size": "0.5", "method": "iFOD2", "total_count": "100"}
    tf.write_tck(tmp_path / "in.tck", lines, fields)
    store = zv.convert(tmp_path / "in.tck", tmp_path / "s.zarrvectors")
    got = store.read()
    positions, offsets = tf.flat(lines)
    np.testing.assert_array_equal(got.positions, positions)
    np.testing.assert_array_equal(got.offsets, offsets)
    assert store.metadata["step_size"] == 0.5
    assert store.metadata["custom_metadata"]["tractogram"]["tck_fields"] == fields
    out = zv.convert(tmp_path / "s.zarrvectors", tmp_path / "out.tck")
    back = tf.load_nibabel(out)
    np.testing.assert_array_equal(tf.nib_flat(back.streamlines)[0], positions)
    np.testing.assert_array_equal(tf.nib_flat(back.streamlines)[1], offsets)
    assert {k: back.header[k] for k in fields} == fields


def test_tck_export_of_a_trk_store_writes_positions_only(tmp_path: Path) -> None:
    path, case = _trk_case(tmp_path)
    zv.convert(path, tmp_path / "s.zarrvectors")
    out = zv.convert(tmp_path / "s.zarrvectors", tmp_path / "out.tck")
    back = tf.load_nibabel(out)
    assert not back.tractogram.data_per_point
    assert not back.tractogram.data_per_streamline
    _float32_close(tf.nib_flat(back.streamlines)[0], tf.flat(case["lines"])[0])


# -- TRX ------------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True], ids=["stored", "deflated"])
def test_trx_import_keeps_dtypes_groups_and_dpg(tmp_path: Path, compress: bool) -> None:
    path, case = _trx_case(tmp_path, compress)
    store = zv.convert(path, tmp_path / "s.zarrvectors")
    got = store.read()
    np.testing.assert_array_equal(got.positions, case["positions"].astype(np.float32))
    np.testing.assert_array_equal(got.offsets, case["offsets"])
    for key, values in case["dpv"].items():
        assert got.attributes[key].dtype == values.dtype
        np.testing.assert_array_equal(got.attributes[key], values)
    for key, values in case["dps"].items():
        assert got.object_attributes[key].dtype == values.dtype
        np.testing.assert_array_equal(got.object_attributes[key], values)
    assert list(store.groups) == ["af", "cst left", "none"]  # sorted: TRX groups have no order
    for name, members in case["groups"].items():
        np.testing.assert_array_equal(store.groups[name], np.sort(members))
    columns = store.group_attributes
    np.testing.assert_array_equal(columns["color"][:2], [[0, 1, 0], [1, 0, 0]])
    assert np.isnan(columns["color"][2]).all()
    np.testing.assert_array_equal(columns["n"], [0, 3, 0])
    kept = store.metadata["custom_metadata"]["tractogram"]
    assert kept["dpg_absent"] == {"color": ["none"], "n": ["af", "none"]}
    np.testing.assert_array_equal(kept["voxel_to_rasmm"], tf.AFFINE_LAS)


def test_a_read_only_trx_is_read_from_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, case = _trx_case(tmp_path)
    seen: list[str] = []
    load = memmap.load

    def spy(name: str) -> Any:
        seen.append(name)
        return load(name)

    monkeypatch.setattr(memmap, "load", spy)
    monkeypatch.setattr(os, "access", lambda p, mode: mode != os.W_OK)  # "read-only"
    got = zv.convert(path, tmp_path / "s.zarrvectors").read()
    assert len(seen) == 1
    assert Path(seen[0]) != path
    assert not Path(seen[0]).exists()  # the copy is removed
    np.testing.assert_array_equal(got.positions, case["positions"].astype(np.float32))
    np.testing.assert_array_equal(got.object_attributes["label"], case["dps"]["label"])


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_trx_round_trip(tmp_path: Path, dtype: str) -> None:
    path, case = _trx_case(tmp_path)
    zv.convert(path, tmp_path / "s.zarrvectors")
    out = zv.convert(tmp_path / "s.zarrvectors", tmp_path / "out.trx", dtype=dtype)
    back = tf.load_trx(out)
    assert back["positions"].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back["positions"], case["positions"])
    np.testing.assert_array_equal(back["offsets"], case["offsets"])
    np.testing.assert_array_equal(back["affine"], tf.AFFINE_LAS)
    assert back["dims"] == tf.DIMS
    for key, values in case["dpv"].items():
        assert back["dpv"][key].dtype == values.dtype
        np.testing.assert_array_equal(back["dpv"][key].reshape(values.shape), values)
    for key, values in case["dps"].items():
        assert back["dps"][key].dtype == values.dtype
        np.testing.assert_array_equal(back["dps"][key].reshape(values.shape), values)
    assert {k: sorted(v.tolist()) for k, v in back["groups"].items()} == {
        k: sorted(v.tolist()) for k, v in case["groups"].items()
    }
    assert {g: {k: v.ravel().tolist() for k, v in d.items()} for g, d in back["dpg"].items()} == {
        g: {k: v.ravel().tolist() for k, v in d.items()} for g, d in case["dpg"].items()
    }


@settings(max_examples=10, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=8),
    seed=st.integers(0, 2**16),
    n_groups=st.integers(0, 3),
)
def test_trx_export_then_import_is_exact(
    tmp_path_factory: pytest.TempPathFactory, lengths: list[int], seed: int, n_groups: int
) -> None:
    tmp = tmp_path_factory.mktemp("trx")
    rng = np.random.default_rng(seed)
    lines = [rng.uniform(-100, 100, (k, 3)).astype(np.float32) for k in lengths]
    m = len(lines)
    groups = {f"g{j}": sorted(set(rng.integers(0, m, 3).tolist())) for j in range(n_groups)}
    zv.write_polylines(
        tmp / "a.zarrvectors",
        lines,
        kind="streamline",
        attributes={"t": rng.random(sum(lengths))},
        object_attributes={"k": rng.integers(0, 9, (m, 2)).astype(np.uint16)},
        groups=groups or None,
    )
    zv.convert(tmp / "a.zarrvectors", tmp / "a.trx")
    back = zv.convert(tmp / "a.trx", tmp / "b.zarrvectors").read()
    first = zv.open(tmp / "a.zarrvectors").read()
    np.testing.assert_array_equal(back.positions, first.positions)
    np.testing.assert_array_equal(back.offsets, first.offsets)
    np.testing.assert_array_equal(back.attributes["t"], first.attributes["t"])
    np.testing.assert_array_equal(back.object_attributes["k"], first.object_attributes["k"])
    assert {k: v.tolist() for k, v in zv.open(tmp / "b.zarrvectors").groups.items()} == groups


def test_trk_to_trx_and_back_gives_an_equal_store(tmp_path: Path) -> None:
    path, _ = _trk_case(tmp_path)
    first = zv.convert(path, tmp_path / "a.zarrvectors", group_by="bundle")
    zv.convert(tmp_path / "a.zarrvectors", tmp_path / "a.trx")
    second = zv.convert(tmp_path / "a.trx", tmp_path / "b.zarrvectors")
    a, b = first.read(), second.read()
    np.testing.assert_array_equal(b.positions, a.positions)
    np.testing.assert_array_equal(b.offsets, a.offsets)
    for key in a.attributes:
        np.testing.assert_array_equal(b.attributes[key], a.attributes[key])
    for key in a.object_attributes:
        np.testing.assert_array_equal(b.object_attributes[key], a.object_attributes[key])
    assert {k: v.tolist() for k, v in second.groups.items()} == {
        k: v.tolist() for k, v in first.groups.items()
    }
    kept_a = first.metadata["custom_metadata"]["tractogram"]
    kept_b = second.metadata["custom_metadata"]["tractogram"]
    for key in ("voxel_to_rasmm", "dimensions", "voxel_sizes", "voxel_order"):
        assert kept_b[key] == kept_a[key]


# -- options ----------------------------------------------------------------------------------


def test_group_by_forms_a_group_per_label(tmp_path: Path) -> None:
    path, case = _trk_case(tmp_path)
    store = zv.convert(path, tmp_path / "s.zarrvectors", group_by="bundle")
    labels = case["dps"]["bundle"][:, 0]
    expected = {f"bundle_{int(v)}": np.flatnonzero(labels == v).tolist() for v in np.unique(labels)}
    assert {k: v.tolist() for k, v in store.groups.items()} == expected
    some = next(iter(expected))
    np.testing.assert_array_equal(store.query(group=some).object_ids, expected[some])


@pytest.mark.parametrize(
    ("key", "message"), [("nope", "not a per-streamline column"), ("w", "2 values")]
)
def test_group_by_needs_a_one_value_column(tmp_path: Path, key: str, message: str) -> None:
    path, _ = _trk_case(tmp_path)
    with pytest.raises(InvalidInputError, match=message):
        zv.convert(path, tmp_path / "s.zarrvectors", group_by=key)
    assert not (tmp_path / "s.zarrvectors").exists()


def test_export_subsets_by_ids_and_by_group(tmp_path: Path) -> None:
    path, case = _trx_case(tmp_path)
    zv.convert(path, tmp_path / "s.zarrvectors")
    positions, offsets = case["positions"].astype(np.float32), case["offsets"]
    back = tf.load_trx(zv.convert(tmp_path / "s.zarrvectors", tmp_path / "ids.trx", ids=[7, 2]))
    np.testing.assert_array_equal(
        back["positions"],
        np.concatenate([positions[offsets[7] : offsets[8]], positions[offsets[2] : offsets[3]]]),
    )
    np.testing.assert_array_equal(back["dps"]["label"].ravel(), case["dps"]["label"][[7, 2]])
    assert {k: sorted(v.tolist()) for k, v in back["groups"].items()} == {"cst left": [0, 1]}
    assert set(back["dpg"]) == {"cst left"}
    back = tf.load_trx(zv.convert(tmp_path / "s.zarrvectors", tmp_path / "g.trx", group="af"))
    np.testing.assert_array_equal(back["positions"], positions[offsets[0] : offsets[2]])
    assert {k: v.tolist() for k, v in back["groups"].items()} == {"af": [0, 1]}


def test_export_subset_errors(tmp_path: Path) -> None:
    path, _ = _trx_case(tmp_path)
    zv.convert(path, tmp_path / "s.zarrvectors")
    with pytest.raises(InvalidInputError, match="not both"):
        zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trx", ids=[1], group="af")
    with pytest.raises(ObjectNotFoundError):
        zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trx", ids=[99])
    with pytest.raises(ObjectNotFoundError):
        zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trx", group="missing")
    assert not (tmp_path / "o.trx").exists()


def test_reference_image_sets_the_trk_header(tmp_path: Path) -> None:
    affine = np.diag([1.5, 1.5, 3.0, 1.0])
    affine[:3, 3] = [-90, -100, -80]
    image = nibabel.Nifti1Image(np.zeros((120, 140, 60), np.uint8), affine)
    nibabel.save(image, tmp_path / "t1.nii.gz")
    path, case = _trk_case(tmp_path)
    zv.convert(path, tmp_path / "s.zarrvectors")
    out = zv.convert(
        tmp_path / "s.zarrvectors", tmp_path / "o.trk", reference=str(tmp_path / "t1.nii.gz")
    )
    back = tf.load_nibabel(out)
    np.testing.assert_array_equal(back.header["voxel_to_rasmm"], affine)
    np.testing.assert_array_equal(back.header["dimensions"], [120, 140, 60])
    np.testing.assert_array_equal(back.header["voxel_sizes"], [1.5, 1.5, 3.0])
    assert back.header["voxel_order"] == b"RAS"
    _float32_close(tf.nib_flat(back.streamlines)[0], tf.flat(case["lines"])[0])


@pytest.mark.parametrize("kind", ["trk", "trx"])
def test_reference_tractogram_sets_the_header(tmp_path: Path, kind: str) -> None:
    affine = np.diag([-1.25, 1.25, 1.25, 1.0])
    affine[:3, 3] = [80, -90, -70]
    ref = tmp_path / f"ref.{kind}"
    lines = tf.random_lines(3, 2)
    if kind == "trk":
        tf.write_trk(ref, lines, affine=affine, dims=(128, 150, 110), voxel_order="LAS")
    else:
        tf.write_trx(ref, *tf.flat(lines), affine=affine, dims=(128, 150, 110))
    zv.write_polylines(tmp_path / "s.zarrvectors", lines, kind="streamline")
    back = tf.load_trx(
        zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trx", reference=str(ref))
    )
    np.testing.assert_array_equal(back["affine"], affine)
    assert back["dims"] == (128, 150, 110)


def test_header_from_bounds_covers_every_streamline(tmp_path: Path) -> None:
    lines = tf.random_lines(9, 20, low=-40.0, high=25.0)
    zv.write_polylines(tmp_path / "s.zarrvectors", lines, kind="streamline")
    back = tf.load_nibabel(zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trk"))
    affine = back.header["voxel_to_rasmm"]
    np.testing.assert_array_equal(affine[:3, :3], np.eye(3))
    np.testing.assert_array_equal(back.header["voxel_sizes"], [1, 1, 1])
    vertices = tf.flat(lines)[0]
    voxels = vertices - affine[:3, 3]
    assert np.all(voxels >= -0.5)
    assert np.all(voxels < np.asarray(back.header["dimensions"]) - 0.5)
    _float32_close(tf.nib_flat(back.streamlines)[0], vertices)


def test_names_that_are_not_attribute_names_come_back(tmp_path: Path) -> None:
    lines = tf.random_lines(3, 5)
    tf.write_trk(
        tmp_path / "in.trk",
        lines,
        data_per_point={"FA value": tf.per_point(lines, 1, 1), "class": tf.per_point(lines, 2, 1)},
        data_per_streamline={"1st": np.ones((5, 1), np.float32)},
    )
    store = zv.convert(tmp_path / "in.trk", tmp_path / "s.zarrvectors")
    assert sorted(store.attribute_names) == ["FA_value", "class_"]
    assert store.object_attribute_names == ["_1st"]
    back = tf.load_nibabel(zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trk"))
    assert set(back.tractogram.data_per_point) == {"FA value", "class"}
    assert set(back.tractogram.data_per_streamline) == {"1st"}


def test_empty_tractogram_round_trips(tmp_path: Path) -> None:
    tf.write_trk(tmp_path / "in.trk", [])
    store = zv.convert(tmp_path / "in.trk", tmp_path / "s.zarrvectors")
    assert store.object_count == 0
    back = tf.load_nibabel(zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trk"))
    assert len(back.streamlines) == 0
    np.testing.assert_array_equal(back.header["voxel_to_rasmm"], tf.AFFINE_LAS)
    assert tf.load_trx(zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trx"))[
        "offsets"
    ].tolist() == [0]


# -- errors -----------------------------------------------------------------------------------


def _damaged(tmp_path: Path, kind: str) -> Path:
    if kind == "garbage.trk":
        (tmp_path / kind).write_bytes(b"x" * 2000)
    elif kind == "garbage.tck":
        (tmp_path / kind).write_bytes(b"not a tck\nEND\n")
    elif kind == "garbage.trx":
        (tmp_path / kind).write_bytes(b"not a zip")
    elif kind == "truncated.trk":
        path, _ = _trk_case(tmp_path)
        (tmp_path / kind).write_bytes(path.read_bytes()[:1200])
    elif kind == "truncated.tck":
        tf.write_tck(tmp_path / "in.tck", tf.random_lines(1, 6))
        data = (tmp_path / "in.tck").read_bytes()
        (tmp_path / kind).write_bytes(data[: len(data) - 5])
    elif kind == "bad-offsets.trx":  # the last offset is past the vertex count
        positions, offsets = tf.flat(tf.random_lines(1, 3))
        tf.write_trx(tmp_path / kind, positions[:-1], offsets)
    elif kind == "no-header.trx":
        with zipfile.ZipFile(tmp_path / kind, "w") as archive:
            archive.writestr("positions.3.float32", np.zeros(3, np.float32).tobytes())
    return tmp_path / kind


@pytest.mark.parametrize(
    "kind",
    [
        "garbage.trk",
        "garbage.tck",
        "garbage.trx",
        "truncated.trk",
        "truncated.tck",
        "bad-offsets.trx",
        "no-header.trx",
    ],
)
def test_damaged_files_raise_invalid_input_naming_the_file(tmp_path: Path, kind: str) -> None:
    path = _damaged(tmp_path, kind)
    with pytest.raises(InvalidInputError, match=re.escape(kind)):
        zv.convert(path, tmp_path / "s.zarrvectors")
    assert not (tmp_path / "s.zarrvectors").exists()


def test_a_failed_export_leaves_the_existing_file(tmp_path: Path) -> None:
    lines = tf.random_lines(2, 3)
    n = sum(map(len, lines))
    zv.write_polylines(
        tmp_path / "s.zarrvectors",
        lines,
        kind="streamline",
        attributes={f"a{k}": np.zeros(n, np.float32) for k in range(11)},  # TRK holds 10
    )
    (tmp_path / "o.trk").write_bytes(b"keep me")
    with pytest.raises(InvalidInputError, match=rf"^{re.escape(str(tmp_path / 'o.trk'))}: "):
        zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trk", mode="w")
    assert (tmp_path / "o.trk").read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.trk", "s.zarrvectors"]


@pytest.mark.parametrize(
    ("dst", "options", "message"),
    [
        ("o.trk", {"dtype": "float16"}, "unknown option"),
        ("o.tck", {"reference": "x.nii"}, "unknown option"),
        ("o.trx", {"dtype": "int8"}, "dtype must be"),
        ("o.trk", {"reference": "missing.nii"}, "not a file"),
    ],
)
def test_bad_export_options(
    tmp_path: Path, dst: str, options: dict[str, Any], message: str
) -> None:
    zv.write_polylines(tmp_path / "s.zarrvectors", tf.random_lines(1, 2), kind="streamline")
    with pytest.raises(InvalidInputError, match=message):
        zv.convert(tmp_path / "s.zarrvectors", tmp_path / dst, **options)


def test_bad_import_option(tmp_path: Path) -> None:
    path, _ = _trk_case(tmp_path)
    with pytest.raises(InvalidInputError, match="unknown option"):
        zv.convert(path, tmp_path / "s.zarrvectors", dtype="float16")


def test_a_2d_store_or_a_trx_with_another_suffix_is_refused(tmp_path: Path) -> None:
    zv.write_polylines(tmp_path / "flat.zarrvectors", [np.ones((2, 2))], kind="streamline")
    with pytest.raises(InvalidInputError, match="3-D"):
        zv.convert(tmp_path / "flat.zarrvectors", tmp_path / "o.trk")
    zv.write_polylines(tmp_path / "s.zarrvectors", tf.random_lines(1, 2), kind="streamline")
    with pytest.raises(InvalidInputError, match=r"\*\.trx"):
        zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.dat", format="trx")


def test_trx_names_cannot_hold_dots_or_slashes(tmp_path: Path) -> None:
    lines = tf.random_lines(8, 3)
    zv.write_polylines(
        tmp_path / "s.zarrvectors", lines, kind="streamline", groups={"a.b": [0], "c/d": [1, 2]}
    )
    back = tf.load_trx(zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trx"))
    assert {k: v.tolist() for k, v in back["groups"].items()} == {"a_b": [0], "c_d": [1, 2]}
    zv.write_polylines(
        tmp_path / "t.zarrvectors", lines, kind="streamline", groups={"a.b": [0], "a_b": [1]}
    )
    with pytest.raises(InvalidInputError, match="not distinct"):
        zv.convert(tmp_path / "t.zarrvectors", tmp_path / "t.trx")


def test_trx_refuses_a_streamline_without_vertices(tmp_path: Path) -> None:
    lines = [np.ones((2, 3), np.float32), np.zeros((0, 3), np.float32), np.ones((3, 3))]
    zv.write_polylines(tmp_path / "s.zarrvectors", lines, kind="streamline")
    with pytest.raises(InvalidInputError, match="streamline 1 has no vertex"):
        zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trx")
    back = tf.load_trx(zv.convert(tmp_path / "s.zarrvectors", tmp_path / "o.trx", ids=[0, 2]))
    assert back["offsets"].tolist() == [0, 2, 5]
