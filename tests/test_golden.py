"""Golden stores of formats 1.0 to 1.6 are read forever; the writer rewrites the 1.6 stores
byte for byte (spec §13); those an earlier writer wrote differently (``earlier/``) are read
forever too.

There is a 1.0 store for point clouds and for every object kind (streamlines, graph,
skeletons, meshes), and 1.1 stores (several chunks per shard, §9.0.1) of points and
streamlines; ``1.2/`` holds the stores of the same inputs with place records (§9.0.2), as
this library wrote them until every new store became a 1.3 store; ``1.3/`` holds them as it
wrote them until every new store became a 1.4 store (plain Zarr v3, §2.3, §9.0.3), and point
clouds (and skeletons) with levels of detail (spec §4.3), one per point method; ``1.4/`` holds
them all as it wrote them until every new store became a 1.5 store (object kinds with the
codecs of §9.0.4), ``1.5/`` as it wrote them until every new store became a 1.6 store
(tiling fragment blobs of object kinds in the counts form of §6.8), ``1.6/`` as it writes them
now (graphs and skeletons with the zstd level 3 codecs of §9.0.4).
``tests/data/golden/make_golden.py`` describes the expected answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import google_crc32c
import numpy as np
import pytest
import zarr

import zarr_vectors as zv
from tests.data.golden import make_golden
from tests.helpers import raw_fragments, sorted_rows
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.format.place import CHUNK_TABLE_KEY, place_record

GOLDEN = Path(__file__).parent / "data" / "golden" / "1.0"
NAMES = sorted(make_golden.inputs())
GOLDEN_1_1 = Path(__file__).parent / "data" / "golden" / "1.1"
SHARDED_NAMES = sorted(make_golden.sharded_inputs())
GOLDEN_1_2 = Path(__file__).parent / "data" / "golden" / "1.2"
NAMES_1_2 = sorted(make_golden.inputs() | make_golden.sharded_inputs())
GOLDEN_1_3 = Path(__file__).parent / "data" / "golden" / "1.3"
"""Frozen since every new store became a 1.4 store (spec §3.3): read forever."""
GOLDEN_1_4 = Path(__file__).parent / "data" / "golden" / "1.4"
"""Frozen since every new store became a 1.5 store (spec §3.3): read forever."""
GOLDEN_1_5 = Path(__file__).parent / "data" / "golden" / "1.5"
"""Frozen since every new store became a 1.6 store (spec §3.3): read forever."""
NAMES_1_5 = sorted(p.name.removesuffix(".zarrvectors") for p in GOLDEN_1_5.glob("*.zarrvectors"))
GOLDEN_1_6 = Path(__file__).parent / "data" / "golden" / "1.6"
NAMES_1_6 = sorted(p.name.removesuffix(".zarrvectors") for p in GOLDEN_1_6.glob("*.zarrvectors"))
NAMES_1_4 = sorted(
    p.name.removesuffix(".zarrvectors")
    for p in GOLDEN_1_4.glob("*.zarrvectors")
    if p.name.removesuffix(".zarrvectors") not in make_golden.imported_inputs()  # new in 1.4
)
NAMES_1_3 = sorted(make_golden.level_inputs())
EARLIER = Path(__file__).parent / "data" / "golden" / "earlier"
NO_SCHEDULE = EARLIER / "1.3_no_schedule"
EARLIER_NAMES = sorted(p.name.removesuffix(".zarrvectors") for p in EARLIER.glob("*.zarrvectors"))


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _without_software(raw: bytes) -> object:
    doc = json.loads(raw)
    attrs = doc.get("attributes", doc)
    attrs.pop("software", None)
    attrs.pop("commit", None)  # a fresh id per commit (spec §3.1)
    return doc


def _check_points(store: zv.VectorStore, expected: np.lib.npyio.NpzFile) -> None:
    """Every vertex with its attributes and object id comes back (a multiset of rows)."""
    got = store.read()
    assert got.positions.dtype == expected["positions"].dtype
    columns_got = [got.positions]
    columns_exp = [expected["positions"]]
    for key in sorted(k for k in expected.files if k.startswith("attr_")):
        columns_got.append(got.attributes[key[5:]])
        columns_exp.append(expected[key])
    if "object_ids" in expected.files:
        assert got.vertex_object_ids is not None
        columns_got.append(got.vertex_object_ids)
        columns_exp.append(expected["object_ids"])
    np.testing.assert_array_equal(sorted_rows(*columns_got), sorted_rows(*columns_exp))


def _expected_object(expected: np.lib.npyio.NpzFile, k: int) -> dict[str, np.ndarray]:
    """Object k of the expected answer; links as rows of the object, canonical order."""
    a, b = (int(i) for i in expected["offsets"][k : k + 2])
    part = {"positions": expected["positions"][a:b]}
    part |= {key: expected[key][a:b] for key in expected.files if key.startswith("attr_")}
    part |= {key: expected[key][k] for key in expected.files if key.startswith("object_attr_")}
    if "links" in expected.files:
        links = expected["links"]
        mine = (links[:, 0] >= a) & (links[:, 0] < b)
        part["links"] = links[mine] - a
        part |= {key: expected[key][mine] for key in expected.files if key.startswith("link_attr_")}
    return part


def _got_object(got: zv.QueryResult, m: int, ordered: bool) -> dict[str, np.ndarray]:
    """Returned object m in the form of :func:`_expected_object`."""
    assert got.offsets is not None
    a, b = (int(i) for i in got.offsets[m : m + 2])
    part = {"positions": got.positions[a:b]}
    part |= {f"attr_{name}": values[a:b] for name, values in got.attributes.items()}
    part |= {f"object_attr_{name}": values[m] for name, values in got.object_attributes.items()}
    links = got.faces if got.faces is not None else got.edges
    if links is not None:
        mine = (links[:, 0] >= a) & (links[:, 0] < b)
        values = {name: v[mine] for name, v in got.link_attributes.items()}
        rows, values = make_golden.canonical_links(links[mine] - a, values, ordered)
        part["links"] = rows
        part |= {f"link_attr_{name}": v for name, v in values.items()}
    return part


def _assert_same(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], where: str) -> None:
    """Same keys, values and (but for link rows) dtypes."""
    assert sorted(got) == sorted(expected), where
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=f"{where}: {key}")
        if key != "links":
            assert np.asarray(got[key]).dtype == value.dtype, f"{where}: {key}"


def _check_objects(store: zv.VectorStore, expected: np.lib.npyio.NpzFile) -> None:
    """Each object, read by id, comes back exactly; so do the groups."""
    ids = expected["object_ids"]
    np.testing.assert_array_equal(store.object_ids, ids)
    ordered = store.kind != "graph" or bool(store.metadata.get("is_directed", False))
    wanted = ids[::-1]  # not storage order: results follow the requested ids
    got = store.read_objects(wanted)
    np.testing.assert_array_equal(got.object_ids, wanted)
    for m in range(len(wanted)):
        k = len(ids) - 1 - m
        part = _got_object(got, m, ordered)
        _assert_same(part, _expected_object(expected, k), f"object {ids[k]}")
        assert got.vertex_object_ids is not None
        assert np.all(got.vertex_object_ids[got.offsets[m] : got.offsets[m + 1]] == ids[k])
    for key in (k for k in expected.files if k.startswith("group_")):
        np.testing.assert_array_equal(store.query(group=key[6:]).object_ids, expected[key])


def _check_golden(directory: Path, name: str) -> zv.VectorStore:
    """The golden store ``name`` in ``directory`` reads back its expected answer and
    validates at level 4."""
    path = directory / f"{name}.zarrvectors"
    store = zv.open(path)
    with np.load(directory / f"{name}.expected.npz") as expected:
        if store.is_object_store:
            _check_objects(store, expected)
        else:
            _check_points(store, expected)
    report = zv.validate(path, level=4)
    assert report.ok, report
    return store


@pytest.mark.parametrize("name", NAMES)
def test_golden_store_reads_back_its_input(name: str) -> None:
    _check_golden(GOLDEN, name)


def test_the_earlier_writers_golden_stores_are_all_there() -> None:
    """The stores ``earlier/README.md`` lists (a lost one would skip its test silently)."""
    assert EARLIER_NAMES == [
        "graph_2d_edge_attributes",
        "skeletons_3d_swc",
        "streamlines_3d_groups",
        "streamlines_3d_sharded",
    ]


@pytest.mark.parametrize("name", EARLIER_NAMES)
def test_earlier_writers_golden_store_reads_back_its_input(name: str) -> None:
    """Golden stores as an earlier writer wrote them (``earlier/README.md``) stay readable."""
    store = _check_golden(EARLIER, name)
    fragments = zarr.open_array(EARLIER / f"{name}.zarrvectors" / "0" / "vertex_fragments")
    assert fragments.chunks[-1] == fragments.shape[-1], "one block per blob, as then written"
    assert store.is_object_store


@pytest.mark.parametrize("name", NAMES)
def test_expected_answer_matches_inputs(name: str) -> None:
    """The committed expected answer is the one ``make_golden`` derives from the inputs."""
    arrays = make_golden.expected(make_golden.inputs()[name])
    with np.load(GOLDEN / f"{name}.expected.npz") as committed:
        assert sorted(committed.files) == sorted(arrays)
        for key, value in arrays.items():
            np.testing.assert_array_equal(committed[key], value, err_msg=key)
            assert committed[key].dtype == np.asarray(value).dtype, key


def _assert_same_files(written: dict[str, bytes], golden: dict[str, bytes]) -> None:
    """The same files, byte for byte but for the ``software`` attribute of the root."""
    assert sorted(written) == sorted(golden)
    for key, raw in golden.items():
        if key in ("zarr.json", ".zattrs"):
            assert _without_software(written[key]) == _without_software(raw), key
        else:
            assert written[key] == raw, key


@pytest.mark.parametrize("name", NAMES_1_2)
def test_writer_reproduces_golden_bytes(name: str, tmp_path: Path) -> None:
    """The writer writes the 1.6 golden stores of the inputs of the 1.0 and 1.1 stores
    byte for byte."""
    path = tmp_path / f"{name}.zarrvectors"
    make_golden.write(path, (make_golden.inputs() | make_golden.sharded_inputs())[name])
    _assert_same_files(_files(path), _files(GOLDEN_1_6 / f"{name}.zarrvectors"))


@pytest.mark.parametrize("name", NAMES_1_2)
def test_golden_1_3_store_of_the_same_inputs_reads_back_its_input(name: str) -> None:
    store = _check_golden(GOLDEN_1_3, name)
    assert store.metadata["zarr_vectors_version"] == "1.3"


def _same_object_index(name: str) -> int:
    """Check that every ``object_index`` array of the 1.3 and 1.2 stores ``name`` holds the
    same values; the number of those arrays."""
    arrays = 0
    stores = [
        zarr.open_group(root / f"{name}.zarrvectors", mode="r") for root in (GOLDEN_1_3, GOLDEN_1_2)
    ]
    for level in sorted(k for k in stores[0].group_keys() if k.isdigit()):
        if f"{level}/object_index" not in stores[1]:
            continue
        for part in ("data", "offsets"):
            path = f"{level}/object_index/{part}"
            got, want = (np.asarray(s[path][...]) for s in stores)
            assert got.dtype == want.dtype, path
            assert np.array_equal(got, want), path
            arrays += 1
    return arrays


@pytest.mark.parametrize("name", NAMES_1_2)
def test_golden_1_3_differs_from_1_2_by_plain_zarr_only(name: str) -> None:
    """Every file of a 1.3 store is its 1.2 twin's but the root's version and commit, the
    ``dimension_names`` of every array ``zarr.json`` (§9.0.3), the ``.zattrs`` mirrors,
    which it does not have (§2.3), and the ``object_index`` arrays, now compressed (§9.8):
    the same values."""
    new, old = (
        _files(GOLDEN_1_3 / f"{name}.zarrvectors"),
        _files(GOLDEN_1_2 / f"{name}.zarrvectors"),
    )
    assert sorted(new) == sorted(k for k in old if not k.endswith(".zattrs"))
    named = _same_object_index(name)
    for key, raw in new.items():
        if "/object_index/" in key:
            continue
        if key == "zarr.json":
            got, want = _without_software(raw), _without_software(old[key])
            assert got["attributes"].pop("zarr_vectors_version") == "1.3"  # type: ignore[index]
            want["attributes"].pop("zarr_vectors_version")  # type: ignore[index]
            assert got == want
        elif raw != old[key]:
            doc = json.loads(raw)
            assert key.endswith("zarr.json"), key
            assert doc["node_type"] == "array", key
            assert len(doc.pop("dimension_names")) == len(doc["shape"]), key
            assert doc == json.loads(old[key]), key
            named += 1
    assert named == sum(1 for k, v in old.items() if k.endswith("zarr.json") and b'"array"' in v)


@pytest.mark.parametrize("name", NAMES_1_2)
def test_golden_1_2_store_reads_back_its_input(name: str) -> None:
    store = _check_golden(GOLDEN_1_2, name)
    assert store.metadata["zarr_vectors_version"] == "1.2"


def _frozen_source(name: str) -> Path:
    """The 1.0 or 1.1 golden store of the same inputs as the 1.2 store ``name``."""
    return (GOLDEN_1_1 if name in SHARDED_NAMES else GOLDEN) / f"{name}.zarrvectors"


@pytest.mark.parametrize("name", NAMES_1_2)
def test_golden_1_2_differs_from_1_0_and_1_1_by_place_records_only(name: str) -> None:
    """Every file of a 1.2 store is its 1.0 (or 1.1) twin's, but the root's version and the
    shards of per-chunk arrays, which gain their place record before the shard index."""
    new, old = _files(GOLDEN_1_2 / f"{name}.zarrvectors"), _files(_frozen_source(name))
    assert sorted(new) == sorted(old)
    placed = 0
    for key, raw in old.items():
        if key in ("zarr.json", ".zattrs"):
            assert (
                json.loads(new[key]).get("attributes", json.loads(new[key]))["zarr_vectors_version"]
                == "1.2"
            )
            continue
        if new[key] == raw:
            continue
        if key.endswith("zarr.json"):  # format 1.2: global arrays list their chunks (§9.8.1)
            new = {**new, key: _without_chunk_table(new, key)}
            if new[key] == raw:
                continue
        if "object_index/" in key:  # format 1.2: the object index gains its CRC32C (§9.8)
            assert _object_index_file(new[key], raw, key), key
            continue
        array = key.split("/c/")[0]
        meta = json.loads(new[f"{array}/zarr.json"])
        index = len(raw) - _index_nbytes(meta)
        assert new[key] == raw[:index] + place_record(key, meta["data_type"]) + raw[index:], key
        placed += 1
    assert placed > 0


def _without_chunk_table(files: dict[str, bytes], key: str) -> bytes:
    """The ``zarr.json`` at ``key`` without its chunk table, which must list the CRC32C each
    chunk of the array ends with, in chunk order (spec §9.8.1)."""
    doc = json.loads(files[key])
    table = doc.get("attributes", {}).pop(CHUNK_TABLE_KEY, None)
    if table is None:
        return files[key]
    prefix = key.removesuffix("zarr.json") + "c/"
    chunks = sorted((k for k in files if k.startswith(prefix)), key=_chunk_order)
    assert table == [int.from_bytes(files[k][-4:], "little") for k in chunks], key
    return json.dumps(doc, indent=2).encode()


def _chunk_order(key: str) -> list[int]:
    return [int(part) for part in key.rsplit("/c/", 1)[1].split("/")]


def _object_index_file(new: bytes, old: bytes, key: str) -> bool:
    """A 1.2 file of ``object_index`` is its 1.0 twin with the ``crc32c`` codec added: a
    chunk ends with its CRC32C, the ``zarr.json`` lists the codec."""
    if key.endswith("zarr.json"):
        doc = json.loads(new)
        assert [c["name"] for c in doc["codecs"]] == ["bytes", "crc32c"]
        doc["codecs"] = doc["codecs"][:1]
        return bool(doc == json.loads(old))
    return new == old + google_crc32c.value(old).to_bytes(4, "little")


def _index_nbytes(meta: dict[str, object]) -> int:
    """Bytes of the shard index (with its CRC32C) of a sharded array's ``zarr.json``."""
    codec = meta["codecs"][0]  # type: ignore[index]
    outer = meta["chunk_grid"]["configuration"]["chunk_shape"]  # type: ignore[index]
    inner = codec["configuration"]["chunk_shape"]
    blocks = int(np.prod([o // i for o, i in zip(outer, inner, strict=True)]))
    return 16 * blocks + 4


@pytest.mark.parametrize("name", NAMES_1_2)
def test_plain_zarr_reads_every_array_of_the_1_2_golden_stores_as_before(name: str) -> None:
    """zarr-python reads every array of a 1.2 store with the values of its 1.0 / 1.1 twin:
    place records are bytes the shard index never points at."""
    root = GOLDEN_1_2 / f"{name}.zarrvectors"
    arrays = [
        str(p.parent.relative_to(root))
        for p in sorted(root.rglob("zarr.json"))
        if json.loads(p.read_bytes())["node_type"] == "array"
    ]
    assert any(path.endswith("/vertices") for path in arrays)
    for path in arrays:
        got = zarr.open_array(root / path, mode="r")[...]
        want = zarr.open_array(_frozen_source(name) / path, mode="r")[...]
        np.testing.assert_array_equal(got, want, err_msg=path)


# -- format 1.1: several spatial chunks per shard (spec §9.0.1) ---------------------------


@pytest.mark.parametrize("name", SHARDED_NAMES)
def test_sharded_golden_store_reads_back_its_input(name: str) -> None:
    store = _check_golden(GOLDEN_1_1, name)
    assert store.metadata["zarr_vectors_version"] == "1.1"


@pytest.mark.parametrize("name", SHARDED_NAMES)
def test_sharded_golden_answer_is_the_unsharded_one(name: str) -> None:
    """The 1.1 store holds the same data as the 1.0 store of the same inputs."""
    source = make_golden.SHARDED[name][0]
    with (
        np.load(GOLDEN_1_1 / f"{name}.expected.npz") as sharded,
        np.load(GOLDEN / f"{source}.expected.npz") as plain,
    ):
        assert sorted(sharded.files) == sorted(plain.files)
        for key in plain.files:
            np.testing.assert_array_equal(sharded[key], plain[key], err_msg=key)


@pytest.mark.parametrize("name", SHARDED_NAMES)
def test_plain_zarr_reads_the_sharded_golden_rows(name: str) -> None:
    """zarr-python reads every chunk's rows of the 1.1 stores as the 1.0 store holds them."""
    source = make_golden.SHARDED[name][0]
    sharded = zarr.open_group(GOLDEN_1_1 / f"{name}.zarrvectors", mode="r")
    plain = zarr.open_group(GOLDEN / f"{source}.zarrvectors", mode="r")
    assert sharded["0/vertices"].shards[:3] == make_golden.SHARDED[name][1]
    counts = plain["0/vertex_counts"][...]
    np.testing.assert_array_equal(sharded["0/vertex_counts"][...], counts)
    for g in np.argwhere(counts > 0):
        n = int(counts[tuple(g)])
        for path in ("0/vertices", "0/vertex_fragments"):
            stop = n if path == "0/vertices" else None
            got = sharded[path][(*g.tolist(), slice(0, stop))]
            np.testing.assert_array_equal(got, plain[path][(*g.tolist(), slice(0, stop))])


@pytest.mark.parametrize("name", NAMES_1_3)
def test_writer_reproduces_golden_1_6_level_bytes(name: str, tmp_path: Path) -> None:
    """Levels of detail are a function of level 0 and their parameters (spec §4.3.1): the
    writer writes the 1.6 golden stores byte for byte."""
    path = tmp_path / f"{name}.zarrvectors"
    make_golden.write(path, make_golden.level_inputs()[name])
    _assert_same_files(_files(path), _files(GOLDEN_1_6 / f"{name}.zarrvectors"))


@pytest.mark.parametrize("name", NAMES_1_3)
def test_golden_1_3_store_reads_back_every_level(name: str) -> None:
    _check_levels(GOLDEN_1_3, name)
    asked = make_golden.level_inputs()[name]["levels"]
    assert zv.open(GOLDEN_1_3 / f"{name}.zarrvectors").metadata["level_schedule"] == (
        asked.to_schedule()
    )


@pytest.mark.parametrize("name", NAMES_1_3)
def test_golden_1_3_store_without_level_schedule_reads_back_every_level(name: str) -> None:
    """The 1.3 stores as written before the root recorded ``level_schedule``
    (``earlier/README.md``): read and validated forever."""
    _check_levels(NO_SCHEDULE, name)
    assert "level_schedule" not in zv.open(NO_SCHEDULE / f"{name}.zarrvectors").metadata


def _check_levels(directory: Path, name: str) -> None:
    path = directory / f"{name}.zarrvectors"
    store = _check_golden(directory, name)
    version = {GOLDEN_1_4: "1.4", GOLDEN_1_5: "1.5", GOLDEN_1_6: "1.6"}.get(directory, "1.3")
    assert store.metadata["zarr_vectors_version"] == version
    datasets = store.metadata["multiscales"][0]["datasets"]
    assert [d["level"] for d in datasets] == list(range(len(datasets)))
    assert len(datasets) == 1 + make_golden.level_inputs()[name]["levels"].count
    with np.load(directory / f"{name}.expected.npz") as expected:
        committed = {k: expected[k] for k in expected.files if k.startswith("level")}
    got = make_golden.level_arrays(path)
    assert sorted(got) == sorted(committed)
    for key, values in committed.items():
        assert got[key].dtype == values.dtype, key
        assert got[key].tobytes() == values.tobytes(), key
    report = zv.validate(path, level=5)
    assert report.ok, report
    assert any(c.endswith(("_rule", "_still_tree")) for c in report.checks_run)


IMPORTED_NAMES = sorted(make_golden.imported_inputs())


@pytest.mark.parametrize("name", IMPORTED_NAMES)
def test_golden_imported_levels_store_reads_back_every_level(name: str) -> None:
    """Levels of the method ``"imported"`` (spec §4.3.4) read back as committed, every
    object of every level, and validate at level 5 (the checks that apply to them run)."""
    path = GOLDEN_1_4 / f"{name}.zarrvectors"
    store = zv.open(path)
    assert [info.method for info in store.levels] == [None, "imported", "imported"]
    got = make_golden.object_level_arrays(path)
    found = store.read_objects(np.asarray(store.object_ids))
    got["level0_offsets"] = np.asarray(found.offsets, np.int64)
    got["level0_positions"] = found.positions
    with np.load(GOLDEN_1_4 / f"{name}.expected.npz") as expected:
        assert sorted(got) == sorted(expected.files)
        for key in expected.files:
            assert got[key].dtype == expected[key].dtype, key
            assert got[key].tobytes() == expected[key].tobytes(), key
    report = zv.validate(path, level=5)
    assert report.ok, report
    assert {"L5.object_ids_same", "L5.object_vertex_counts"} <= set(report.checks_run)


@pytest.mark.parametrize("name", IMPORTED_NAMES)
def test_the_import_reproduces_golden_imported_levels_bytes(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.zarrvectors"
    make_golden.write_imported(path, make_golden.imported_inputs()[name])
    _assert_same_files(_files(path), _files(GOLDEN_1_6 / f"{name}.zarrvectors"))


@pytest.mark.parametrize("name", NAMES_1_3)
def test_golden_1_4_store_reads_back_every_level(name: str) -> None:
    _check_levels(GOLDEN_1_4, name)


@pytest.mark.parametrize("name", NAMES_1_2)
def test_golden_1_4_store_of_the_same_inputs_reads_back_its_input(name: str) -> None:
    store = _check_golden(GOLDEN_1_4, name)
    assert store.metadata["zarr_vectors_version"] == "1.4"


def _codec_free(raw: bytes) -> object:
    """An array ``zarr.json`` without its inner codecs and shard lengths (what §9.0.4 changes)."""
    doc = json.loads(raw)
    doc["codecs"][0]["configuration"].pop("codecs")
    doc["codecs"][0]["configuration"].pop("chunk_shape")
    doc.pop("shape")
    doc["chunk_grid"]["configuration"].pop("chunk_shape")
    return doc


@pytest.mark.parametrize("name", NAMES_1_4)
def test_golden_1_4_differs_from_1_3_by_object_codecs_only(name: str) -> None:
    """A 1.4 store is its 1.3 twin but the root's version and commit and, for object kinds,
    the inner codecs of the per-chunk arrays (and the blob arrays' lengths, one block per
    blob, §9.0.4): every array holds the same values, and point clouds the same bytes."""
    new_root, old_root = GOLDEN_1_4 / f"{name}.zarrvectors", GOLDEN_1_3 / f"{name}.zarrvectors"
    new, old = _files(new_root), _files(old_root)
    got, want = _without_software(new.pop("zarr.json")), _without_software(old.pop("zarr.json"))
    assert got["attributes"].pop("zarr_vectors_version") == "1.4"  # type: ignore[index]
    assert want["attributes"].pop("zarr_vectors_version") == "1.3"  # type: ignore[index]
    assert got == want
    assert sorted(new) == sorted(old)
    changed = {k for k in new if new[k] != old[k]}
    if not zv.open(new_root).is_object_store:
        assert not changed
        return
    arrays = {k.rsplit("/c/", 1)[0] for k in changed if "/c/" in k}
    assert arrays
    assert all("object_index" not in a for a in arrays)
    for key in (k for k in changed if k.endswith("zarr.json")):
        assert _codec_free(new[key]) == _codec_free(old[key]), key
    groups = [zarr.open_group(root, mode="r") for root in (new_root, old_root)]
    for array in arrays:
        a, b = (np.asarray(g[array][...]) for g in groups)
        if array.endswith("fragments"):  # blobs: the same bytes, zeros after (§9.2)
            n = min(a.shape[-1], b.shape[-1])
            assert not a[..., n:].any(), array
            assert not b[..., n:].any(), array
            a, b = a[..., :n], b[..., :n]
        np.testing.assert_array_equal(a, b, err_msg=array)


# -- format 1.5: counts-form fragment blobs (spec §6.8) -----------------------------------


@pytest.mark.parametrize("name", NAMES_1_5)
def test_golden_1_5_differs_from_1_4_by_counts_blobs_only(name: str) -> None:
    """A 1.5 store is its 1.4 twin but the root's version and commit and, for object kinds,
    the fragment-blob arrays (counts-form blobs, their codec and length): every blob
    decodes to the same fragments, every other file is the same bytes."""
    new_root, old_root = GOLDEN_1_5 / f"{name}.zarrvectors", GOLDEN_1_4 / f"{name}.zarrvectors"
    new, old = _files(new_root), _files(old_root)
    got, want = _without_software(new.pop("zarr.json")), _without_software(old.pop("zarr.json"))
    assert got["attributes"].pop("zarr_vectors_version") == "1.5"  # type: ignore[index]
    assert want["attributes"].pop("zarr_vectors_version") == "1.4"  # type: ignore[index]
    assert got == want
    assert sorted(new) == sorted(old)
    changed = {k.rsplit("/c/", 1)[0].removesuffix("/zarr.json") for k in new if new[k] != old[k]}
    assert all(a.endswith(("/vertex_fragments", "/link_fragments")) for a in changed), changed
    if not zv.open(new_root).is_object_store:
        assert not changed
        return
    assert "0/vertex_fragments" in changed
    groups = [zarr.open_group(root, mode="r") for root in (new_root, old_root)]
    for array in sorted(changed):
        a, b = (np.asarray(g[array][...]) for g in groups)
        assert a.shape[:-1] == b.shape[:-1], array
        for blob_a, blob_b in zip(
            a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1]), strict=True
        ):
            if blob_b.any():
                ranges = [decode_dense_ranges(x) for x in (blob_a, blob_b)]
                for x, y in zip(*ranges, strict=True):
                    np.testing.assert_array_equal(x, y, err_msg=array)
            else:
                assert not blob_a.any(), array
    flags = np.asarray(groups[0]["0/vertex_fragments"][...])[..., 6]
    assert (flags & 1).any()  # level 0 holds counts-form blobs


def test_golden_1_5_object_store_reads_back_every_level() -> None:
    """A 1.5 object store with levels reads back as committed and validates at level 5."""
    _check_levels(GOLDEN_1_5, "skeletons_3d_thin_levels")


# -- format 1.6: zstd level 3 codecs of graphs and skeletons (spec §9.0.4) ------------------

_GRAPH_ARRAYS = ("/links/0", "/attributes/", "/object_index/", "/cross_chunk_links")
"""Arrays of graphs and skeletons whose Blosc settings 1.6 changes."""


def _blosc_settings(array_json: bytes) -> list[dict[str, object]]:
    """Every Blosc configuration in an array's ``zarr.json`` (inner codecs included)."""
    found: list[dict[str, object]] = []

    def walk(codecs: list[dict[str, object]]) -> None:
        for codec in codecs:
            conf = codec.get("configuration") or {}
            if codec["name"] == "blosc":
                found.append(conf)  # type: ignore[arg-type]
            walk(conf.get("codecs", []))  # type: ignore[union-attr, arg-type]

    walk(json.loads(array_json)["codecs"])
    return found


_RECORD_ARRAYS = ("0/vertex_fragments/", "0/link_fragments/", "0/fragment_attributes/object_id/")


def _same_fragments(new_root: Path, old_root: Path) -> None:
    """Every occupied level-0 chunk's record of the 1.6 store holds what the three arrays of
    its 1.5 twin hold (spec §6.9)."""
    groups = [zarr.open_group(root, mode="r") for root in (new_root, old_root)]
    counts = np.asarray(groups[0]["0/vertex_counts"][...])
    assert "vertex_fragments" not in groups[0]["0"]
    assert "fragment_records" not in groups[1]["0"]
    for g in map(tuple, np.argwhere(counts > 0).tolist()):
        got, want = (raw_fragments(group, g) for group in groups)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NAMES_1_6)
def test_golden_1_6_differs_from_1_5_by_graph_codecs_and_records_only(name: str) -> None:
    """A 1.6 store is its 1.5 twin but the root's version and commit, level 0's fragment
    record of object kinds (``fragment_records`` for ``vertex_fragments``,
    ``link_fragments`` and ``fragment_attributes/object_id``, the same fragments and
    owners) and, for graphs and skeletons, the Blosc level of ``links/0``, vertex
    attributes, ``object_index`` and ``cross_chunk_links`` (zstd 3): the same values,
    every other file the same bytes."""
    new_root, old_root = GOLDEN_1_6 / f"{name}.zarrvectors", GOLDEN_1_5 / f"{name}.zarrvectors"
    new, old = _files(new_root), _files(old_root)
    if any(k.startswith("0/fragment_records/") for k in new):
        _same_fragments(new_root, old_root)
        new = {k: v for k, v in new.items() if not k.startswith("0/fragment_records/")}
        old = {k: v for k, v in old.items() if not k.startswith(_RECORD_ARRAYS)}
        if "0/fragment_attributes/zarr.json" not in new:  # no opt-in fragment attribute
            old.pop("0/fragment_attributes/zarr.json")
    got, want = _without_software(new.pop("zarr.json")), _without_software(old.pop("zarr.json"))
    assert got["attributes"].pop("zarr_vectors_version") == "1.6"  # type: ignore[index]
    assert want["attributes"].pop("zarr_vectors_version") == "1.5"  # type: ignore[index]
    assert got == want
    assert sorted(new) == sorted(old)
    changed = {k.rsplit("/c/", 1)[0].removesuffix("/zarr.json") for k in new if new[k] != old[k]}
    graph = zv.open(new_root).metadata["geometry_type"] in ("graph", "skeleton")
    assert bool(changed) == graph, changed
    assert all(any(part in f"{a}/" for part in _GRAPH_ARRAYS) for a in changed), changed
    groups = [zarr.open_group(root, mode="r") for root in (new_root, old_root)]
    for array in sorted(changed):
        settings = _blosc_settings(new[f"{array}/zarr.json"])
        assert settings
        assert all(s["cname"] == "zstd" and s["clevel"] == 3 for s in settings)
        a, b = (np.asarray(g[array][...]) for g in groups)
        np.testing.assert_array_equal(a, b, err_msg=array)


def test_golden_1_6_object_store_reads_back_every_level() -> None:
    """A 1.6 object store with levels reads back as committed and validates at level 5."""
    _check_levels(GOLDEN_1_6, "skeletons_3d_thin_levels")
