"""A fuzz test of the command line's argument handling: whatever a user types, no traceback
reaches them (issue 34). Each example runs ``main(argv)`` in-process, in a scratch folder
holding a small store of each kind, files of each format (good and bad), a directory and
missing paths, with stdout and stderr captured."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.helpers import examples
from zarr_vectors.cli import DEBUG_ENV, main

PATHS = [
    "p.zv", "m.zv", "s.zv", "p.csv", "m.obj", "s.swc", "bad.ply", "bad.csv", "bad.las",
    "empty.obj", "notes.txt", "folder", "folder.ply", "missing.zv", "missing/nothere.ply",
    "out.csv", "out.parquet", "out.ply", "out.obj", "out.stl", "out.las", "out.swc",
    "out.trk", "out.zv", "out.zip", "folder/out.csv",
]  # fmt: skip
"""Names in the scratch folder: stores, files good and bad, a directory, missing paths."""

ODD = [
    "", "-", "--", "0", "-1", "1.5", "nan", "inf", "1e309", "1,2", "1,,2", "abc", "é",
    "9" * 40, "=", "x=1", "ids=[1,2]", "ids=[]", "columns=\"x\"", "columns=[\"x\",\"q\"]",
    "dtype=float16", "encoding=ascii", "split_objects=1", "object_id=a", "delimiter=;;",
    "dtypes={\"x\":\"int8\"}", "dtypes={\"x\":\"nope\"}", "scale=0", "group=g",
]  # fmt: skip
"""Values a user might type, well or badly."""

FLAGS = {
    "info": ["--json"],
    "validate": ["--json", "--level", "--sample"],
    "convert": ["--format", "--overwrite", "--chunk-shape", "--bin-shape", "-o", "--option"],
}
"""The flags of each subcommand fuzzed (``demo`` writes large stores; ``--debug`` shows
tracebacks on purpose)."""
VALUES = {
    "--level": ["1", "3", "5", "6", "x"],
    "--sample": ["1", "0", "x"],
    "--format": ["csv", "ply", "obj", "las", "swc", "trk", "CSV", "nope", ""],
    "--chunk-shape": ["10", "0", "-1", "nan", "1,2", "1,2,3", "x"],
    "--bin-shape": ["5", "0", "1,2,3", "inf"],
    "-o": [
        "ids=[3]",
        "ids=[1,2]",
        'ids="x"',
        "split_objects=false",
        'split_objects="no"',
        "encoding=binary",
        "encoding=ascii",
        "compression=none",
        "compression=zip",
        'attributes=["a"]',
        'attributes=["q"]',
        'columns=["x","y"]',
        "columns=3",
        "dtype=float32",
        "dtype=int8",
        "keep_ids=true",
        "scale=0.5",
        "scale=-1",
        "offset=[0,0,0]",
        "point_format=99",
        'version="9.9"',
        'group_by="a"',
        'object_property="a"',
        "merge_vertices=false",
        'delimiter=";"',
        'object_id="a"',
        'winding_order="x"',
        "closed_surface=true",
        "allow_degenerate=true",
        'reference="p.zv"',
        "colour=red",
        "=1",
        "1=2",
        "x",
    ],
}
VALUES["--option"] = VALUES["-o"]


def _scratch(base: Path) -> None:
    """The files and stores :data:`PATHS` names (``out.*`` and ``missing*`` are left out)."""
    rng = np.random.default_rng(0)
    zv.write_points(base / "p.zv", rng.uniform(0, 20, (50, 3)), chunk_shape=10.0,
                    attributes={"a": np.arange(50, dtype=np.uint8)})  # fmt: skip
    zv.write_mesh(base / "m.zv", np.eye(3), [[0, 1, 2]], vertex_objects=[3, 3, 3])
    zv.write_skeletons(base / "s.zv", [[0, 0, 0], [1, 0, 0.0]], parents=[-1, 0])
    (base / "p.csv").write_text("x,y,z,a\n1,2,3,4\n5,6,7,8\n")
    (base / "m.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\no a\nf 1 2 3\n")
    (base / "s.swc").write_text("1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n")
    (base / "bad.ply").write_text("ply\nformat ascii 1.0\nelement vertex 2\nend_header\n1\n")
    (base / "bad.csv").write_text('x,y\n1,\n"2\n')
    (base / "bad.las").write_bytes(b"LASF" + bytes(300))
    (base / "empty.obj").write_text("")
    (base / "notes.txt").write_text("not a store\n")
    (base / "folder").mkdir()
    (base / "folder.ply").mkdir()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fuzz")
    _scratch(base)
    return base


@contextlib.contextmanager
def _user_shell(folder: Path) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """Run in ``folder`` with stdout and stderr captured and no debug variable set."""
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.chdir(folder),
        mock.patch.dict(os.environ),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        os.environ.pop(DEBUG_ENV, None)
        yield out, err


def _flag_with_value(command: str) -> st.SearchStrategy[list[str]]:
    def pair(flag: str) -> st.SearchStrategy[list[str]]:
        if flag in ("--json", "--overwrite"):
            return st.just([flag])
        values = VALUES.get(flag, ODD)
        return st.lists(st.sampled_from(values), min_size=0, max_size=1).map(lambda v: [flag, *v])

    return st.sampled_from(FLAGS[command]).flatmap(pair)


def _free_form(command: str) -> st.SearchStrategy[list[str]]:
    """Any mix of paths, odd values, flags and text (mostly usage errors)."""
    token = st.one_of(
        st.sampled_from(PATHS).map(lambda p: [p]),
        st.sampled_from(ODD).map(lambda v: [v]),
        _flag_with_value(command),
        st.text(max_size=6).map(lambda t: [t]),
    )
    return st.lists(token, max_size=6).map(lambda parts: [a for part in parts for a in part])


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    """An argument list: a real subcommand (or not), then mostly its positional arguments
    (paths, sometimes odd values) and a few of its flags; sometimes anything at all."""
    command = draw(st.sampled_from([*FLAGS, "nope"]))
    if command == "nope":
        return [command, *draw(st.lists(st.sampled_from(ODD + PATHS), max_size=3))]
    if draw(st.integers(0, 4)) == 0:
        return [command, *draw(_free_form(command))]
    place = st.one_of(st.sampled_from(PATHS), st.sampled_from(PATHS), st.sampled_from(ODD))
    count = 2 if command == "convert" else 1
    positional = draw(st.lists(place, min_size=count, max_size=count))
    flags = draw(st.lists(_flag_with_value(command), max_size=3))
    return [command, *positional, *[arg for flag in flags for arg in flag]]


def _run(folder: Path, argv: list[str]) -> tuple[int | str | None, str, str]:
    with _user_shell(folder) as (out, err):
        try:
            code: int | str | None = main(argv)
        except SystemExit as exc:  # argparse: usage errors (2), --help (0)
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@settings(
    max_examples=examples(75, 300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=argvs())
def test_no_traceback_ever_reaches_a_user(scratch: Path, argv: list[str]) -> None:
    code, out, err = _run(scratch, argv)
    assert "Traceback" not in out + err, argv
    assert "failed unexpectedly" not in err, (argv, err)
    assert code in (0, 1, 2), (argv, code, err)
    if code == 2:
        assert err.startswith(("zarr-vectors: error: ", "usage: zarr-vectors")), (argv, err)
    assert "=True" not in err, (argv, err)


@pytest.mark.parametrize(
    "argv",
    [
        ["convert", "missing/nothere.ply", "out.zarrvectors"],
        ["convert", "m.zv", "folder"],
        ["convert", "m.zv", "out.ply", "-o", "ids=[99]"],
        ["convert", "p.csv", "p.zv"],
        ["convert", "bad.csv", "new.zv"],
        ["convert", "bad.las", "new.zv"],
        ["convert", "bad.ply", "new.zv"],
        ["convert", "empty.obj", "new.zv"],
        ["convert", "folder.ply", "new.zv"],
        ["info", "notes.txt"],
        ["info", "folder"],
    ],
)
def test_known_mistakes_get_one_line(tmp_path: Path, argv: list[str]) -> None:
    # a folder of its own: the fuzzed commands share the module's scratch folder, and one
    # that converts a file into the empty "folder" (allowed: an empty directory may be
    # replaced) made "info folder" succeed here
    _scratch(tmp_path)
    code, out, err = _run(tmp_path, argv)
    assert code == 2
    assert out == ""
    assert err.startswith("zarr-vectors: error: ")
    assert "Traceback" not in err
    assert "failed unexpectedly" not in err
