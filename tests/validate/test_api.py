"""validate(): arguments, stopping after a level, sampling, unreadable and damaged stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.codecs import ZstdCodec
from zarr.storage import LocalStore, MemoryStore

from tests.helpers import write_layout_v_store
from tests.validate import stores as s
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.validate import validate
from zarr_vectors.validate.consistency import sample_positions


@pytest.mark.parametrize(("level", "sample"), [(0, None), (6, None), (True, None), (2, 0)])
def test_bad_arguments_raise(level: object, sample: object) -> None:
    with pytest.raises(InvalidInputError):
        validate(MemoryStore(), level=level, sample=sample)  # type: ignore[arg-type]


def test_not_a_store_raises() -> None:
    with pytest.raises(InvalidInputError):
        validate(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["missing", "empty", "not-a.zip"])
def test_unopenable_stores_are_reported(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    if name == "empty":
        path.mkdir()
    elif name == "not-a.zip":
        path.write_bytes(b"this is not a zip file")
    report = validate(path, level=3)
    assert report.ids() == {"L1.store_exists"}
    assert not report.ok
    assert report.level == 1
    assert report.checks_run == ["L1.store_exists"]
    assert report.problems[0].path == "."


def test_interrupted_write_is_incomplete() -> None:
    store = s.point_store()
    s.edit(store, "zarr.json", lambda d: d.__setitem__("attributes", {}))
    report = validate(store, level=3)
    assert "L1.root_complete" in report.ids()


def test_errors_stop_after_their_level_warnings_do_not() -> None:
    broken = s.legacy_point_store()  # format 1.2: level groups mirror their metadata
    s.delete(broken, "0/.zattrs")
    report = validate(broken, level=5)
    assert report.level == 1
    assert all(c.startswith("L1.") for c in report.checks_run)

    warned = s.legacy_point_store()
    s.write_json(warned, "metadata.json", "not an object")
    report = validate(warned, level=3)
    assert report.ok
    assert report.level == 3
    assert report.ids() == {"L1.metadata_json"}
    assert any(c.startswith("L3.") for c in report.checks_run)


def test_sample_positions_are_even_and_distinct() -> None:
    assert sample_positions(10, None).tolist() == list(range(10))
    assert sample_positions(10, 20).tolist() == list(range(10))
    picks = sample_positions(10, 3).tolist()
    assert picks == [0, 3, 6]
    many = sample_positions(1000, 7)
    assert many[0] == 0
    assert len(set(many.tolist())) == 7
    assert np.all(np.diff(many) > 0)


def test_sampling_reads_only_the_chosen_chunks() -> None:
    store = s.point_store()
    last, n = s.occupied(store)[-1]
    s.edit_rows(store, "0/vertices", lambda r: r.__setitem__((0, 0), np.nan), (last, n))
    full = validate(store, level=3)
    assert "L3.vertices_finite" in full.ids()
    assert not full.notes
    sampled = validate(store, level=3, sample=1)
    assert sampled.ok
    assert any("1 of 5 occupied chunks" in note for note in sampled.notes)
    assert "notes" in sampled.to_json()
    assert "note:" in sampled.summary()
    first = s.point_store()
    s.edit_rows(first, "0/vertices", lambda r: r.__setitem__((0, 0), np.nan))
    assert "L3.vertices_finite" in validate(first, level=3, sample=1).ids()


def test_progress_reports_every_chunk_read() -> None:
    store = s.point_store()
    calls: list[tuple[int, int, int]] = []
    assert validate(store, level=3, progress=lambda *a: calls.append(a)).ok
    n = len(s.occupied(store))
    assert calls
    assert calls[-1] == (0, n, n)
    assert [c[1] for c in calls] == sorted(c[1] for c in calls)
    calls.clear()
    validate(store, level=3, sample=2, progress=lambda *a: calls.append(a))
    assert calls[-1] == (0, 2, 2)


def test_sampled_bounding_box_is_checked_for_containment() -> None:
    store = s.point_store()

    def raise_min(attrs: dict[str, object]) -> None:
        box = attrs["bounding_box"]
        assert isinstance(box, dict)
        box["min"][0] += 1e-6  # the smallest x (in chunk 0 or 1) is now outside

    s.edit_root(store, raise_min)
    assert "L3.bounding_box_exact" in validate(store, level=3).ids()
    report = validate(store, level=3, sample=3)  # chunks 0, 1 and 3 of 5
    assert report.notes
    assert "L3.bounding_box_exact" in report.ids()


def test_arrays_written_by_zarr_python_with_other_codecs_validate() -> None:
    """A spec-valid shard layout written by zarr-python itself (zstd inner chunks)."""
    store = s.legacy_point_store()  # format 1.2, which an edit can declare 1.1
    shape = tuple(s.read_json(store, "0/vertices/zarr.json")["shape"])
    chunks = s.occupied(store)
    rows = {g: s.get_rows(store, "0/vertices", g, n) for g, n in chunks}
    s.delete_prefix(store, "0/vertices/")
    array = zarr.create_array(
        store,
        name="0/vertices",
        shape=shape,
        dtype="float64",
        chunks=(1, 1, 1, s.ROWS_PER_BLOCK, 3),
        shards=(1, 1, 1, shape[3], 3),
        compressors=ZstdCodec(),
        fill_value=0.0,
        attributes={"zv_array": "vertices"},
        config={"write_empty_chunks": True},
    )
    for g, n in chunks:
        array[(*g, slice(0, n))] = rows[g]
    placed = validate(store, level=3)  # format 1.2: zarr-python writes no place records
    assert placed.ids() == {"L2.inner_codecs_default", "L3.chunk_place"}
    s.edit_root(store, lambda a: a.update(zarr_vectors_version="1.1"))
    report = validate(store, level=3)
    assert report.ok, report.summary()
    assert report.ids() == {"L2.inner_codecs_default"}
    g, n = chunks[0]
    key = s.shard_key(store, "0/vertex_fragments", g).replace("vertex_fragments", "vertices") + "/0"
    raw = bytearray(s.get(store, key))
    raw[5] ^= 0xFF  # inside the first zstd frame
    s.put(store, key, bytes(raw))
    assert "L3.shard_index" in validate(store, level=3).ids()


def test_truncated_shard_file_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "cloud.zv"
    s.write(str(path), s.points())
    shard = next((path / "0" / "vertices" / "c").rglob("*"), None)
    files = sorted(p for p in (path / "0" / "vertices" / "c").rglob("*") if p.is_file())
    assert shard is not None
    files[0].write_bytes(files[0].read_bytes()[:10])
    report = validate(LocalStore(path, read_only=True), level=3)
    assert "L3.shard_index" in report.ids()


# -- robustness ---------------------------------------------------------------------------


def _damage(store: MemoryStore, rng: np.random.Generator) -> None:
    keys = s.io(store).list_prefix("")
    key = keys[int(rng.integers(len(keys)))]
    raw = bytearray(s.get(store, key))
    action = int(rng.integers(5))
    if action == 0 and raw:
        for _ in range(int(rng.integers(1, 8))):
            raw[int(rng.integers(len(raw)))] = int(rng.integers(256))
    elif action == 1:
        del raw[int(rng.integers(len(raw) + 1)) :]
    elif action == 2:
        s.delete(store, key)
        return
    elif action == 3:
        raw = bytearray(rng.integers(0, 256, int(rng.integers(0, 64))).astype(np.uint8).tobytes())
    else:
        raw += bytes(rng.integers(0, 256, 9).astype(np.uint8))
    s.put(store, key, bytes(raw))


@pytest.mark.parametrize("seed", range(40))
def test_random_damage_never_crashes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    store = s.point_store()
    for _ in range(1 + seed % 3):
        _damage(store, rng)
    report = validate(store, level=5)
    assert report.level >= 1
    for problem in report.problems:
        assert problem.check_id in report.checks_run


@pytest.mark.parametrize(
    "doc",
    [
        b"[]",
        b"null",
        b'{"zarr_format": 3, "node_type": "group", "attributes": []}',
        b'{"zarr_format": 3, "node_type": "group", "attributes": {"zarr_vectors_version": 1}}',
        b"\xff\xfe",
        b"[" * 100_000,
    ],
)
def test_hostile_root_documents(doc: bytes) -> None:
    store = s.point_store()
    s.put(store, "zarr.json", doc)
    report = validate(store, level=5)
    assert not report.ok


def test_hostile_metadata_values_do_not_crash() -> None:
    values: list[object] = [None, True, 1.5, -1, "x", [], {}, [1, "a"], {"a": [1]}, 1e308]
    keys = ["spatial_dims", "chunk_shape", "bounding_box", "multiscales", "chunk_grid_origin"]
    for key in keys:
        for value in values:
            store = s.point_store()
            s.edit_root(store, lambda a, k=key, v=value: a.__setitem__(k, v))
            validate(store, level=5)
    for path in ("0/vertices", "0/vertex_fragments", "0/vertex_counts", "0/attributes/v"):
        for member in ("shape", "data_type", "codecs", "chunk_grid", "fill_value", "attributes"):
            for value in values:
                store = s.point_store()
                s.edit_array(store, path, lambda d, m=member, v=value: d.__setitem__(m, v))
                validate(store, level=5)


class _UnlistableStore(MemoryStore):
    """A store whose chunk keys cannot be listed (listing fails below ``.../c/``)."""

    def list_prefix(self, prefix: str):  # type: ignore[no-untyped-def,override]
        if "/c/" in prefix:
            raise OSError("listing is not supported here")
        return super().list_prefix(prefix)


def test_store_without_listing() -> None:
    written = MemoryStore()
    s.write(written, s.points())
    store = _UnlistableStore(store_dict=written._store_dict)
    report = validate(store, level=3)
    assert report.ok, report.summary()
    assert any("cannot be listed" in note for note in report.notes)
    s.delete(written, s.shard_key(written, "0/attributes/a", s.first_chunk(written)[0]))
    assert "L3.shard_present" in validate(store, level=3).ids()


def test_a_zarr_vectors_09_store_gets_one_clear_l1_error(tmp_path: Path) -> None:
    report = validate(write_layout_v_store(tmp_path / "v09.zv"), level=5)
    assert [p.check_id for p in report.problems] == ["L1.foreign_layout"]
    message = report.problems[0].message
    assert "zarr-vectors 0.9.x" in message
    assert "layout V" in message
    assert "zv.convert(src, dst)" in message


def test_a_chunk_shape_with_no_dimension_count_says_numbers_not_none() -> None:
    store = s.point_store()
    s.edit_root(store, lambda d: d.update(spatial_dims="three", chunk_shape="big"))
    report = validate(store, level=1)
    messages = [p.message for p in report.problems if p.check_id == "L1.chunk_shape"]
    assert messages
    assert all("None" not in m.split(", got")[0] for m in messages)
    assert "one per spatial axis" in messages[0]


def test_a_missing_chunk_shape_is_reported_once_as_a_missing_key() -> None:
    store = s.point_store()
    s.edit_root(store, lambda d: d.pop("chunk_shape"))
    report = validate(store, level=1)
    ids = [p.check_id for p in report.problems]
    assert "L1.root_required_keys" in ids
    assert "L1.chunk_shape" not in ids


def test_validate_a_killed_fresh_write_says_interrupted_write_and_how_to_clear_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cloud.zv"
    s.write(str(path), s.points())
    (path / "zarr.json").unlink()  # killed before the root metadata, written last
    report = validate(path, level=3)
    (problem,) = [p for p in report.problems if p.check_id == "L1.root_zarr_json"]
    assert "interrupted write" in problem.message
    assert 'mode="w"' in problem.message


@pytest.mark.parametrize("dims", [0, 7, "three", None])
def test_an_invalid_spatial_dims_is_reported_as_such_not_as_a_chunk_shape_of_n_numbers(
    dims: object,
) -> None:
    store = s.point_store()
    s.edit_root(store, lambda d: d.update(spatial_dims=dims))
    report = validate(store, level=2)
    assert "L2.spatial_dims_valid" in report.ids()
    assert not {"L1.chunk_shape", "L1.base_bin_shape"} & report.ids()
