"""Parallel object writes give, byte for byte, the store of one write of all the objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from zarr.storage import LocalStore, MemoryStore

import zarr_vectors as zv
from tests.geometry import object_cases
from tests.geometry.object_cases import KINDS, files, keys
from tests.helpers import sample_sizes
from zarr_vectors.geometry import object_writer

pytest.importorskip("distributed")

HYPOTHESIS = settings(
    max_examples=2,
    deadline=None,
    derandomize=True,
    phases=[Phase.generate],  # each example runs on the cluster: no time to shrink
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _partitions(case: dict[str, Any]) -> list[dict[str, Any]]:
    return [object_cases.arguments(case, a, b) for a, b in object_cases.batches(case) if b > a]


def _settings(case: dict[str, Any]) -> dict[str, Any]:
    extra = {"directed": case["directed"]} if case["kind"] == "graph" else {}
    return {"chunk_shape": 10.0, "options": case["options"], **extra}


@pytest.mark.parametrize("kind", KINDS)
def test_parallel_gives_the_one_shot_store(
    client: Any, tmp_path_factory: pytest.TempPathFactory, kind: str
) -> None:
    @HYPOTHESIS
    @given(case=object_cases.cases(kind))
    def check(case: dict[str, Any]) -> None:
        tmp = tmp_path_factory.mktemp("o")
        object_cases.write(tmp / "one", case, 0, len(case["objects"]))
        zv.write_objects_parallel(
            tmp / "par", kind, _partitions(case), client=client, **_settings(case)
        )
        assert files(tmp / "par") == files(tmp / "one")
        assert sorted(p.name for p in tmp.iterdir()) == ["one", "par"]
        one, par = zv.open(tmp / "one"), zv.open(tmp / "par")
        ids = np.arange(len(case["objects"])) if case["ids"] is None else case["ids"]
        got = par.read_objects(ids[::-1])
        np.testing.assert_array_equal(got.positions, np.concatenate(case["objects"][::-1]))
        box = ([0.0] * one.ndim, [12.0] * one.ndim)
        want, got = one.query(box), par.query(box)
        np.testing.assert_array_equal(got.positions, want.positions)
        np.testing.assert_array_equal(got.object_ids, want.object_ids)

    check()


def test_far_apart_meshes_need_int64_face_references(client: Any, tmp_path: Path) -> None:
    strip = np.array([[0.2, 0.2], [1.5, 0.3], [0.4, 1.6], [1.7, 1.8]])
    faces = np.array([[0, 1, 2], [1, 3, 2]])
    far = strip + 2.0e5
    vertices = np.concatenate([strip, far])
    labels = np.repeat([0, 1], 4)
    both = np.concatenate([faces, faces + 4])
    zv.write_mesh(tmp_path / "one", vertices, both, vertex_objects=labels, chunk_shape=1.0)
    parts = [
        {"positions": strip, "faces": faces},
        {"positions": far, "faces": faces},
    ]
    zv.write_objects_parallel(tmp_path / "par", "mesh", parts, chunk_shape=1.0, client=client)
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert '"int64"' in (tmp_path / "par" / "0" / "links" / "0" / "zarr.json").read_text()


def test_a_store_object_with_scratch_space(client: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    lines = [np.cumsum(rng.normal(0, 2, (15, 3)), axis=0) for _ in range(20)]
    one, par = LocalStore(tmp_path / "one"), LocalStore(tmp_path / "par")
    zv.write_polylines(one, lines, kind="streamline", chunk_shape=5.0)
    with pytest.raises(zv.InvalidInputError, match="scratch"):
        zv.write_objects_parallel(par, "streamline", [lines], chunk_shape=5.0, client=client)
    zv.write_objects_parallel(
        par,
        "streamline",
        [lines[:7], lines[7:8], lines[8:]],
        chunk_shape=5.0,
        scratch=tmp_path / "scratch",
        client=client,
    )
    assert keys(par) == keys(one)
    assert list((tmp_path / "scratch").iterdir()) == []


def test_bad_partitions_are_refused_and_nothing_is_left(client: Any, tmp_path: Path) -> None:
    line = np.array([[0.0, 0, 0], [1, 1, 1]])
    run = {"chunk_shape": 4.0, "client": client}
    dest = tmp_path / "s"
    with pytest.raises(zv.InvalidInputError, match="NaN or infinite"):
        zv.write_objects_parallel(dest, "polyline", [[line], [line * np.nan]], **run)
    with pytest.raises(zv.InvalidInputError, match="ids"):
        zv.write_objects_parallel(
            dest, "polyline", [{"polylines": [line], "object_ids": [3]}] * 2, **run
        )
    with pytest.raises(zv.InvalidInputError, match="bad batch"):
        zv.write_objects_parallel(dest, "polyline", [{"polylines": [line], "colour": 1}], **run)
    with pytest.raises(zv.InvalidInputError, match="set once"):
        zv.write_objects_parallel(dest, "polyline", [{"polylines": [line], "bin_shape": 1}], **run)
    with pytest.raises(zv.InvalidInputError, match="kind"):
        zv.write_objects_parallel(dest, "points", [[line]], **run)
    with pytest.raises(zv.InvalidInputError, match="at least one partition"):
        zv.write_objects_parallel(dest, "polyline", [], **run)
    with pytest.raises(zv.InvalidInputError, match="in-memory"):
        zv.write_objects_parallel(MemoryStore(), "polyline", [[line]], scratch=tmp_path, **run)
    assert list(tmp_path.iterdir()) == []


def test_parallel_levels_are_the_one_shot_levels(client: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    walks = [np.cumsum(rng.normal(0, 2, (int(rng.integers(2, 30)), 3)), axis=0) for _ in range(20)]
    levels = zv.Levels(count=2, objects="coverage", objects_per_cell=2)
    zv.write_polylines(tmp_path / "one", walks, chunk_shape=8.0, levels=levels, progress=False)
    parts = [{"polylines": walks[:8]}, {"polylines": walks[8:]}]
    zv.write_objects_parallel(
        tmp_path / "par", "polyline", parts, chunk_shape=8.0, client=client, levels=levels
    )
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert len(zv.open(tmp_path / "par").levels) == 3


LEVEL_KINDS = [kind for kind in KINDS if object_writer(kind).levels is not None]


def _levels(kind: str) -> st.SearchStrategy[zv.Levels]:
    """A count with every object sparsity the kind allows, or ``"auto"`` with a small
    target (a bounding level by coverage when the coarsening stalls)."""
    rules: list[dict[str, Any]] = [{}, {"objects": "coverage", "objects_per_cell": 1}]
    if kind in ("polyline", "streamline"):
        rules.append({"objects": "length", "objects_kept": 3})
    counted = st.builds(
        lambda count, rule: zv.Levels(count=count, **rule),
        st.integers(1, 3),
        st.sampled_from(rules),
    )
    return st.one_of(counted, st.builds(lambda t: zv.Levels(target=t), st.integers(1, 40)))


@pytest.mark.filterwarnings("ignore:built .* levels of detail")
@pytest.mark.parametrize("examples", sample_sizes(2, 12))
@pytest.mark.parametrize("kind", LEVEL_KINDS)
def test_parallel_levels_of_every_kind_are_the_one_shot_levels(
    client: Any, tmp_path_factory: pytest.TempPathFactory, kind: str, examples: int
) -> None:
    built: list[int] = []

    @settings(HYPOTHESIS, max_examples=examples)
    @given(case=object_cases.cases(kind), levels=_levels(kind))
    def check(case: dict[str, Any], levels: zv.Levels) -> None:
        tmp = tmp_path_factory.mktemp("lv")
        object_cases.write(tmp / "one", case, 0, len(case["objects"]), levels=levels)
        zv.write_objects_parallel(
            tmp / "par", kind, _partitions(case), client=client, levels=levels, **_settings(case)
        )
        assert files(tmp / "par") == files(tmp / "one")
        assert sorted(p.name for p in tmp.iterdir()) == ["one", "par"]  # no spill left
        built.append(len(zv.open(tmp / "par").levels))

    check()
    assert max(built) > 1  # a coarse level was compared
