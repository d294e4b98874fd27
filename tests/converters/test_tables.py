"""CSV and Parquet tables ↔ point clouds (zarr_vectors.converters.tables)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zarr_vectors as zv

_names = (f"t{k}" for k in itertools.count())


def _cloud(path: Path, n: int = 300) -> dict[str, np.ndarray]:
    """A point cloud with one attribute of every kind; returns what was written."""
    rng = np.random.default_rng(7)
    data = {
        "positions": rng.uniform(-50, 50, (n, 3)).astype(np.float32),
        "idx": np.arange(n, dtype=np.int64),
        "i8": rng.integers(-128, 128, n).astype(np.int8),
        "u16": rng.integers(0, 65535, n).astype(np.uint16),
        "f32": rng.normal(0, 1e6, n).astype(np.float32),
        "f64": rng.normal(0, 1, n) * 10.0 ** rng.integers(-200, 200, n),
        "flag": rng.random(n) < 0.5,
        "vec": rng.normal(0, 1, (n, 3)).astype(np.float32),
        "ids": rng.integers(-5, 5, n).astype(np.int32),
    }
    attributes = {k: v for k, v in data.items() if k not in ("positions", "ids")}
    zv.write_points(
        path, data["positions"], chunk_shape=25.0, attributes=attributes, object_ids=data["ids"]
    )
    return data


def _check_same_cloud(data: dict[str, np.ndarray], store: zv.VectorStore) -> None:
    found = store.read()
    order = np.argsort(found.attributes["idx"])
    np.testing.assert_array_equal(found.positions[order], data["positions"])
    assert found.positions.dtype == data["positions"].dtype
    for name in ("idx", "i8", "u16", "f32", "f64", "flag", "vec"):
        got = found.attributes[name][order]
        assert got.dtype == data[name].dtype, name
        np.testing.assert_array_equal(got, data[name], err_msg=name)
    assert found.vertex_object_ids is not None
    np.testing.assert_array_equal(found.vertex_object_ids[order], data["ids"])


def test_parquet_round_trip_is_exact_with_dtypes(tmp_path: Path) -> None:
    data = _cloud(tmp_path / "a.zv")
    out = zv.convert(tmp_path / "a.zv", tmp_path / "a.parquet")
    assert out == tmp_path / "a.parquet"
    back = zv.convert(tmp_path / "a.parquet", tmp_path / "b.zv")
    assert isinstance(back, zv.VectorStore)
    assert back.axis_names == ("x", "y", "z")
    _check_same_cloud(data, back)


def test_parquet_file_has_one_column_per_axis_and_component(tmp_path: Path) -> None:
    data = _cloud(tmp_path / "a.zv", n=50)
    zv.convert(tmp_path / "a.zv", tmp_path / "a.pq", compression="none")
    table = pq.read_table(tmp_path / "a.pq")
    assert table.column_names == [
        "x", "y", "z", "f32", "f64", "flag", "i8", "idx", "u16", "vec_0", "vec_1", "vec_2",
        "object_id",
    ]  # fmt: skip
    order = np.argsort(table.column("idx").to_numpy())
    np.testing.assert_array_equal(table.column("y").to_numpy()[order], data["positions"][:, 1])
    np.testing.assert_array_equal(table.column("vec_2").to_numpy()[order], data["vec"][:, 2])
    assert table.schema.field("u16").type == pa.uint16()
    np.testing.assert_array_equal(table.column("object_id").to_numpy()[order], data["ids"])


def test_csv_round_trip_is_exact_given_the_dtypes(tmp_path: Path) -> None:
    data = _cloud(tmp_path / "a.zv")
    zv.convert(tmp_path / "a.zv", tmp_path / "a.csv")
    dtypes = dict.fromkeys(("x", "y", "z", "f32", "vec_0", "vec_1", "vec_2"), "float32")
    dtypes |= {"i8": "int8", "u16": "uint16", "object_id": "int32"}
    back = zv.convert(tmp_path / "a.csv", tmp_path / "b.zv", dtypes=dtypes)
    assert isinstance(back, zv.VectorStore)
    _check_same_cloud(data, back)


def test_csv_round_trip_keeps_dtypes(tmp_path: Path) -> None:
    data = _cloud(tmp_path / "a.zv")
    zv.convert(tmp_path / "a.zv", tmp_path / "a.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.csv-metadata.json", "a.zv"]
    back = zv.convert(tmp_path / "a.csv", tmp_path / "b.zv")
    assert isinstance(back, zv.VectorStore)
    _check_same_cloud(data, back)


def test_parquet_import_writes_the_object_ordered_copy_when_asked(tmp_path: Path) -> None:
    """``object_order=True``: the store of ``WriteOptions(object_order=True)`` (spec §9.15)."""
    data = _cloud(tmp_path / "a.zv", n=30)
    zv.convert(tmp_path / "a.zv", tmp_path / "a.parquet")
    zv.convert(tmp_path / "a.parquet", tmp_path / "b.zv", object_order=True)
    store = zv.open(tmp_path / "b.zv")
    assert (tmp_path / "b.zv" / "0" / "object_order").is_dir()
    assert store.metadata["zarr_vectors_version"] == "1.7"
    wanted = np.unique(data["ids"])[:2]
    assert np.isin(store.read_objects(wanted).vertex_object_ids, wanted).all()
    assert len(store.read_objects(wanted)) == np.isin(data["ids"], wanted).sum()


def test_csv_metadata_is_csvw(tmp_path: Path) -> None:
    _cloud(tmp_path / "a.zv", n=5)
    zv.convert(tmp_path / "a.zv", tmp_path / "a.csv")
    doc = json.loads((tmp_path / "a.csv-metadata.json").read_text())
    assert doc["@context"] == "http://www.w3.org/ns/csvw"
    assert doc["url"] == "a.csv"
    columns = doc["tableSchema"]["columns"]
    header = (tmp_path / "a.csv").read_text().splitlines()[0]
    assert [f'"{c["titles"]}"' for c in columns] == header.split(",")
    types = {c["name"]: c["datatype"] for c in columns}
    assert types["x"] == "float"
    assert types["f64"] == "double"
    assert types["u16"] == "unsignedShort"
    assert types["flag"] == "boolean"
    assert types["object_id"] == "int"


def test_csv_round_trip_keeps_half_floats(tmp_path: Path) -> None:
    half = np.array([0.5, -2.0, 65504.0], np.float16)
    zv.write_points(tmp_path / "a.zv", np.eye(3), attributes={"h": half, "i": np.arange(3)})
    zv.convert(tmp_path / "a.zv", tmp_path / "a.csv")
    zv.convert(tmp_path / "a.csv", tmp_path / "b.zv")
    found = zv.open(tmp_path / "b.zv").read()
    order = np.argsort(found.attributes["i"])
    assert found.attributes["h"].dtype == np.float16
    np.testing.assert_array_equal(found.attributes["h"][order], half)


def test_dtypes_option_wins_over_the_csv_metadata(tmp_path: Path) -> None:
    _cloud(tmp_path / "a.zv", n=20)
    zv.convert(tmp_path / "a.zv", tmp_path / "a.csv")
    zv.convert(tmp_path / "a.csv", tmp_path / "b.zv", dtypes={"u16": "int64"})
    found = zv.open(tmp_path / "b.zv").read()
    assert found.attributes["u16"].dtype == np.int64
    assert found.attributes["i8"].dtype == np.int8


@pytest.mark.parametrize(
    ("text", "message"),
    [("{not json", "is not CSVW metadata JSON"), ('{"tableSchema": {}}', "no tableSchema")],
)
def test_bad_csv_metadata_is_named(tmp_path: Path, text: str, message: str) -> None:
    _write(tmp_path / "a.csv", "x,y\n1,2\n")
    _write(tmp_path / "a.csv-metadata.json", text)
    with pytest.raises(zv.InvalidInputError, match=message) as info:
        zv.convert(tmp_path / "a.csv", tmp_path / "b.zv")
    assert "a.csv-metadata.json" in str(info.value)
    assert "remove it" in str(info.value)
    assert not (tmp_path / "b.zv").exists()


def test_csv_metadata_of_other_tools_types_what_it_can(tmp_path: Path) -> None:
    _write(tmp_path / "a.csv", "x,y,label,n\n1,2,cell,3\n")
    columns = [
        {"titles": ["x"], "datatype": "number"},
        {"name": "y", "datatype": {"base": "float"}},
        {"titles": "label", "datatype": "string"},
        {"titles": "n", "datatype": "unsignedByte"},
        {"name": "extra", "virtual": True, "datatype": "int"},
    ]
    _write(tmp_path / "a.csv-metadata.json", json.dumps({"tableSchema": {"columns": columns}}))
    zv.convert(tmp_path / "a.csv", tmp_path / "b.zv")
    found = zv.open(tmp_path / "b.zv").read()
    assert found.positions.dtype == np.float64  # float64 x with float32 y
    assert found.attributes["n"].dtype == np.uint8
    assert list(found.attributes) == ["n"]


def test_csv_metadata_is_replaced_only_with_overwrite(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "a.zv", np.zeros((2, 3), np.float32))
    metadata = _write(tmp_path / "a.csv-metadata.json", "mine\n")
    with pytest.raises(zv.StoreExistsError, match=r"a\.csv-metadata\.json exists; pass mode=\"w\""):
        zv.convert(tmp_path / "a.zv", tmp_path / "a.csv")
    assert metadata.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv-metadata.json", "a.zv"]
    zv.convert(tmp_path / "a.zv", tmp_path / "a.csv", mode="w")
    assert json.loads(metadata.read_text())["url"] == "a.csv"


def test_csv_without_dtypes_keeps_values(tmp_path: Path) -> None:
    data = _cloud(tmp_path / "a.zv", n=100)
    zv.convert(tmp_path / "a.zv", tmp_path / "a.csv")
    (tmp_path / "a.csv-metadata.json").unlink()  # a CSV with no type information
    back = zv.convert(tmp_path / "a.csv", tmp_path / "b.zv")
    assert isinstance(back, zv.VectorStore)
    found = back.read()
    order = np.argsort(found.attributes["idx"])
    assert found.attributes["f32"].dtype == np.float64  # CSV carries no type
    np.testing.assert_array_equal(found.attributes["f32"][order].astype(np.float32), data["f32"])
    np.testing.assert_array_equal(found.attributes["f64"][order], data["f64"])
    np.testing.assert_array_equal(found.attributes["u16"][order], data["u16"])
    np.testing.assert_array_equal(found.positions[order].astype(np.float32), data["positions"])


_finite64 = st.floats(allow_nan=False, allow_infinity=False)
_finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=15, deadline=None)
@given(
    f64=hnp.arrays(np.float64, 6, elements=_finite64),
    f32=hnp.arrays(np.float32, 6, elements=_finite32),
    ints=hnp.arrays(np.int64, 6),
)
def test_csv_numbers_read_back_exactly(
    tmp_path_factory: pytest.TempPathFactory, f64: np.ndarray, f32: np.ndarray, ints: np.ndarray
) -> None:
    tmp = tmp_path_factory.mktemp(next(_names))
    positions = np.stack([np.arange(6.0), np.zeros(6)], axis=1)
    attributes = {"a": f64, "b": f32, "c": ints, "idx": np.arange(6)}
    zv.write_points(tmp / "s.zv", positions, chunk_shape=10.0, attributes=attributes)
    zv.convert(tmp / "s.zv", tmp / "s.csv")
    back = zv.convert(tmp / "s.csv", tmp / "t.zv", dtypes={"b": "float32"})
    assert isinstance(back, zv.VectorStore)
    found = back.read()
    order = np.argsort(found.attributes["idx"])
    for name, values in attributes.items():
        got = found.attributes[name][order]
        assert got.dtype == values.dtype
        np.testing.assert_array_equal(got, values)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_csv_import_chooses_columns(tmp_path: Path) -> None:
    src = _write(
        tmp_path / "cells.csv",
        "lon,lat,name,cell type,score,object_id\n"
        "1.5,2.5,a,3,0.25,10\n"
        "-1,4,b,1,,11\n"
        "7,8,c,2,1e300,10\n",
    )
    store = zv.convert(src, tmp_path / "c.zv", columns=["lon", "lat"])
    assert isinstance(store, zv.VectorStore)
    assert store.axis_names == ("lon", "lat")
    assert sorted(store.attribute_names) == ["cell_type", "score"]
    found = store.read()
    order = np.argsort(found.attributes["cell_type"])
    np.testing.assert_array_equal(found.positions[order], [[-1, 4], [7, 8], [1.5, 2.5]])
    np.testing.assert_array_equal(found.attributes["score"][order], [np.nan, 1e300, 0.25])
    assert found.vertex_object_ids is not None
    np.testing.assert_array_equal(found.vertex_object_ids[order], [11, 10, 10])
    # export writes the axis names back as the position columns
    zv.convert(tmp_path / "c.zv", tmp_path / "out.csv")
    table = pacsv.read_csv(tmp_path / "out.csv")
    assert table.column_names == ["lon", "lat", "cell_type", "score", "object_id"]


def test_csv_defaults_to_x_y_without_z(tmp_path: Path) -> None:
    src = _write(tmp_path / "p.csv", "y,x,w\n1,2,3\n4,5,6\n")
    store = zv.convert(src, tmp_path / "p.zv")
    assert isinstance(store, zv.VectorStore)
    assert store.ndim == 2
    found = store.read()
    order = np.argsort(found.attributes["w"])
    np.testing.assert_array_equal(found.positions[order], [[2, 1], [5, 4]])


def test_attributes_option_selects_columns(tmp_path: Path) -> None:
    src = _write(tmp_path / "p.csv", "x,y,z,a,b\n1,2,3,4,5\n")
    store = zv.convert(src, tmp_path / "p.zv", attributes=["b"])
    assert isinstance(store, zv.VectorStore)
    assert store.attribute_names == ["b"]


@pytest.mark.parametrize(
    ("text", "options", "message"),
    [
        ("x,y,z,n\n1,2,3,\n4,5,6,7\n", {}, "empty cells"),
        ("a,b\n1,2\n", {}, "position column"),
        ("x,y,z,name\n1,2,3,q\n", {"attributes": ["name"]}, "not numbers"),
        ("x,y,z,object_id\n1,2,3,0.5\n", {}, "integers"),
        ("x,y,z\n1,2,3\n", {"colour": 1}, "unknown option"),
        ("x,y,z\n1,2,3\n", {"dtypes": {"x": "no such type"}}, "dtypes"),
        ("x,y,z\n1,2\n", {}, "cannot read as CSV"),
    ],
)
def test_bad_csv_input_is_refused_clearly(
    tmp_path: Path, text: str, options: dict[str, object], message: str
) -> None:
    src = _write(tmp_path / "bad.csv", text)
    with pytest.raises(zv.InvalidInputError, match=message):
        zv.convert(src, tmp_path / "bad.zv", **options)
    assert not (tmp_path / "bad.zv").exists()


def test_mesh_store_exports_its_vertices_with_object_ids(tmp_path: Path) -> None:
    vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5], [6, 5, 5], [5, 6, 5.0]])
    zv.write_mesh(
        tmp_path / "m.zv",
        vertices,
        [[0, 1, 2], [3, 5, 4]],
        vertex_objects=[4, 4, 4, 9, 9, 9],
        attributes={"q": np.arange(6, dtype=np.int16)},
    )
    zv.convert(tmp_path / "m.zv", tmp_path / "m.parquet")
    table = pq.read_table(tmp_path / "m.parquet")
    order = np.argsort(table.column("q").to_numpy())
    np.testing.assert_array_equal(table.column("object_id").to_numpy()[order], [4, 4, 4, 9, 9, 9])
    xyz = np.stack([table.column(a).to_numpy() for a in "xyz"], axis=1)
    np.testing.assert_array_equal(xyz[order], vertices)


def test_failed_export_leaves_the_old_file(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "a.zv", np.zeros((2, 3)), attributes={"x": np.ones(2)})
    old = _write(tmp_path / "a.csv", "old\n")
    with pytest.raises(zv.InvalidInputError, match="name of another column"):
        zv.convert(tmp_path / "a.zv", old, mode="w")
    assert old.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.zv"]


def test_parquet_compression_is_checked(tmp_path: Path) -> None:
    zv.write_points(tmp_path / "a.zv", np.zeros((2, 3)))
    with pytest.raises(zv.InvalidInputError, match="compression must be one of zstd"):
        zv.convert(tmp_path / "a.zv", tmp_path / "a.parquet", compression="zip")
    zv.convert(tmp_path / "a.zv", tmp_path / "a.parquet", compression="gzip")
    assert (
        pq.ParquetFile(tmp_path / "a.parquet").metadata.row_group(0).column(0).compression == "GZIP"
    )


_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64"]  # fmt: skip


@settings(max_examples=15, deadline=None)
@given(
    dtypes=st.lists(st.sampled_from(_DTYPES), min_size=1, max_size=4),
    position_dtype=st.sampled_from(["float32", "float64"]),
    data=st.data(),
)
def test_csv_round_trip_keeps_every_dtype(
    tmp_path_factory: pytest.TempPathFactory,
    dtypes: list[str],
    position_dtype: str,
    data: st.DataObject,
) -> None:
    tmp = tmp_path_factory.mktemp(next(_names))
    attributes = {
        f"a{k}": data.draw(hnp.arrays(np.dtype(dt), 5, elements={"allow_nan": False}))
        for k, dt in enumerate(dtypes)
    }
    attributes["idx"] = np.arange(5, dtype=np.int64)
    positions = np.stack([np.arange(5.0), np.zeros(5), np.ones(5)], axis=1).astype(position_dtype)
    zv.write_points(tmp / "s.zv", positions, chunk_shape=10.0, attributes=attributes)
    zv.convert(tmp / "s.zv", tmp / "s.csv")
    zv.convert(tmp / "s.csv", tmp / "t.zv")
    found = zv.open(tmp / "t.zv").read()
    order = np.argsort(found.attributes["idx"])
    assert found.positions.dtype == positions.dtype
    np.testing.assert_array_equal(found.positions[order], positions)
    for name, values in attributes.items():
        got = found.attributes[name][order]
        assert got.dtype == values.dtype, name
        np.testing.assert_array_equal(got, values, err_msg=name)
