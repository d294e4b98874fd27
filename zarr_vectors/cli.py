"""The ``zarr-vectors`` command: ``demo``, ``warmup``, ``info``, ``validate``, ``convert``,
``build-levels`` and ``serve``.

This is the only boundary where any failure is caught and turned into a message and an
exit code (0 success or valid, 1 invalid store, 2 unreadable store or bad usage, 3 an
unexpected error: a bug, reported in one line; ``--debug`` or the environment variable
``ZARR_VECTORS_DEBUG=1`` show its traceback). Messages speak in the command's flags
(``--overwrite``, ``--format``, ``-o KEY=VALUE``), not in the library's keywords. A reader
that closes the pipe early (``zarr-vectors validate --json STORE | head``) ends the
command quietly with exit code 141, as ``SIGPIPE`` would; Ctrl-C ends it with 130.

``validate`` prints its report (also for exit code 2) and exits with

* 0 when the report holds no error (warnings allowed);
* 2 when the path holds no readable Zarr Vectors root: an error of ``L1.store_exists``
  (missing path, no key at all, a file that cannot be opened as a store) or of
  ``L1.root_zarr_json`` (no root ``zarr.json``, or one that is not a Zarr v3 group), the
  stores that ``info`` cannot open either (:data:`UNREADABLE_CHECKS`);
* 1 for any other error: the store was found and is damaged or violates the spec.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv
from zarr_vectors import converters
from zarr_vectors._progress import wants_progress
from zarr_vectors._warmup import demo_warmup
from zarr_vectors.display import format_bytes
from zarr_vectors.errors import StoreExistsError, ZarrVectorsError
from zarr_vectors.format.version import upgrade_hint
from zarr_vectors.kernels import CompileLog
from zarr_vectors.precomputed import NEUROGLANCER_CLIENT
from zarr_vectors.precomputed.links import SELECTED_SEGMENTS, selection_notes
from zarr_vectors.store.target import interrupted_write_note
from zarr_vectors.update import UPGRADE_VERSION
from zarr_vectors.write import WriteMode

__all__ = ["main"]

EXIT_OK, EXIT_INVALID, EXIT_UNREADABLE, EXIT_BUG = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 128 + 13
"""As a shell reports a command killed by ``SIGPIPE`` (signal 13)."""
EXIT_INTERRUPTED = 128 + 2
"""As a shell reports a command killed by ``SIGINT`` (signal 2, Ctrl-C)."""

DEBUG_ENV = "ZARR_VECTORS_DEBUG"
"""Set to a non-empty value other than ``0`` to show the traceback of an unexpected error."""

FLAGS = {
    "format": "--format",
    "mode": "--overwrite",
    "overwrite": "--overwrite",
    "chunk_shape": "--chunk-shape",
    "bin_shape": "--bin-shape",
}
"""The library keywords that are flags of ``convert`` (``mode="w"`` is ``--overwrite``)."""
CONVERT_OPTIONS = frozenset(
    name
    for converter in (*converters.registry.BUILT_IN, converters.ZARR_VECTORS_V)
    if isinstance(converter, converters.FileConverter)
    for name in (*converter.import_options, *converter.export_options)
)
"""The format options ``convert`` takes as ``-o KEY=VALUE``: those the built-in converters
(and the import of zarr-vectors 0.9 stores) declare."""
_KEYWORD = re.compile(r"(?<![\w-])(?<!-o )([a-z_][a-z0-9_]*)=(True\b|False\b|(?![^\s,;)]))?")
"""``name=`` then ``True``, ``False`` or no value (a hint), or another value (kept for options)."""
_MODE_W = re.compile(r"""(?<![\w-])mode=(["'])w\1""")
"""``mode="w"``, what ``--overwrite`` asks for."""
_BARE_FLAG = re.compile(r"(?<![\w-])(chunk_shape|bin_shape)(?![\w=])")
"""A flag's keyword named without ``=`` (``chunk_shape is required``)."""

UNREADABLE_CHECKS = frozenset({"L1.store_exists", "L1.root_zarr_json"})
"""Check ids whose error means there is no readable store to validate (exit code 2)."""


def _disk_usage(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


DEMO_STORE = "zarr-vectors-demo.zarrvectors"
"""The demo's store, written inside ``--dir`` (default: the current directory)."""


def _warmup_line(report: zv.WarmupReport) -> str:
    """The demo's first line: the time of its warm-up (:func:`demo_warmup`), which its
    timings leave out."""
    if report.compiled:
        return (
            f"compiling the demo's kernels, first run only: {report.seconds:.1f} s "
            "(`zarr-vectors warmup` compiles those of the other common paths)"
        )
    return f"kernels loaded from numba's cache (compiled by an earlier run): {report.seconds:.1f} s"


def _compiling_note(log: CompileLog) -> str:
    """`` (N s of it compiling kernels)`` when a timed step compiled some, else nothing."""
    return f" ({log.seconds:.3f} s of it compiling kernels)" if log.count else ""


def _demo(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if directory.exists() and not directory.is_dir():
        raise StoreExistsError(
            f"--dir {args.dir} is a file: give a directory to write the sample store in"
        )
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / DEMO_STORE
    n = args.points
    rng = np.random.default_rng(42)
    print(f"zarr-vectors {zv.__version__} demo: a synthetic nuclei table of {n:,} cells")
    print(f"  {_warmup_line(demo_warmup())}")
    centres = rng.uniform(0, 1000, size=(20, 3))
    positions = (centres[rng.integers(0, 20, n)] + rng.normal(0, 60, (n, 3))).clip(0, 1000)
    positions = positions.astype(np.float32)
    volume = rng.lognormal(5, 0.4, n).astype(np.float32)
    cell_type = rng.integers(0, 12, n).astype(np.uint8)
    with CompileLog() as compiling:
        t0 = time.perf_counter()
        zv.write_points(
            out,
            positions,
            chunk_shape=250.0,
            bin_shape=62.5,
            attributes={"volume": volume, "cell_type": cell_type},
            mode="w",
        )
        t_write = time.perf_counter() - t0
    nbytes, nfiles = _disk_usage(out)
    print(
        f"  wrote {out} in {t_write:.3f} s ({n / t_write / 1e6:.1f} M points/s): "
        f"{format_bytes(nbytes)} in {nfiles} files{_compiling_note(compiling)}"
    )
    store = zv.open(out)
    print(
        f"  opened: {store.kind}, {store.vertex_count:,} vertices in "
        f"{store.chunk_count} chunks of {list(store.chunk_shape)}, bins {list(store.bin_shape)}"
    )
    centre = centres[0]
    box = ((centre - 100).round().tolist(), (centre + 100).round().tolist())
    with CompileLog() as compiling:
        t0 = time.perf_counter()
        hits = store.query(box)
        t_query = time.perf_counter() - t0
    truth = int(np.all((positions >= box[0]) & (positions < box[1]), axis=1).sum())
    print(
        f"  bbox query [{box[0]}, {box[1]}) -> {len(hits):,} points in "
        f"{t_query * 1e3:.1f} ms (brute force agrees: {len(hits) == truth})"
        f"{_compiling_note(compiling)}"
    )
    with CompileLog() as compiling:
        t0 = time.perf_counter()
        report = zv.validate(out, level=3)
        t_validate = time.perf_counter() - t0
    print(
        f"  validate (level 3): {'valid' if report.ok else 'INVALID'} "
        f"({len(report.problems)} problems) in {t_validate * 1e3:.1f} ms"
        f"{_compiling_note(compiling)}"
    )
    for problem in report.problems:
        print(f"    {problem}")
    return EXIT_OK if report.ok and len(hits) == truth else EXIT_INVALID


def _warmup(args: argparse.Namespace) -> int:
    print(zv.warmup())
    return EXIT_OK


def _storage_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``--storage-option KEY=VALUE`` pairs, or None when none was given."""
    return dict(args.storage_option) if args.storage_option else None


def _info(args: argparse.Namespace) -> int:
    store = zv.open(args.store, storage_options=_storage_options(args))
    doc: dict[str, Any] = {
        "kind": store.kind,
        "ndim": store.ndim,
        "axis_names": list(store.axis_names),
        "axis_units": list(store.axis_units),
        "chunk_shape": list(store.chunk_shape),
        "bin_shape": list(store.bin_shape),
        "grid_shape": list(store.grid_shape),
        "bounds": None if store.bounds is None else [list(b) for b in store.bounds],
        "vertex_count": store.vertex_count,
        "chunk_count": store.chunk_count,
        "attributes": store.attribute_names,
    }
    if store.is_object_store:
        doc["object_count"] = store.object_count
        doc["object_attributes"] = store.object_attribute_names
    version = store.metadata["zarr_vectors_version"]
    doc["format"] = version
    if (hint := upgrade_hint(version)) is not None:
        doc["upgrade"] = hint
    if (note := interrupted_write_note(args.store)) is not None:
        doc["interrupted_write"] = note
    if args.json:
        # the spec's metadata names of kind and ndim, kept for scripts that read them
        doc |= {"geometry_type": store.kind, "spatial_dims": store.ndim}
        print(json.dumps(doc, indent=2))
    else:
        width = max(len(k) for k in doc)
        for key, value in doc.items():
            print(f"{key:<{width}}  {value}")
    return EXIT_OK


def _run_validation(args: argparse.Namespace) -> zv.ValidationReport:
    """Validate, with a progress bar on stderr when it is a terminal (and JSON is not piped)."""
    json_out = sys.stdout if args.json else None
    progress = wants_progress(sys.stderr, json_out=json_out)
    return zv.validate(
        args.store,
        level=args.level,
        sample=args.sample,
        progress=progress,
        storage_options=_storage_options(args),
    )


def _validation_exit_code(report: zv.ValidationReport) -> int:
    """0 valid, 2 when no readable store was found (:data:`UNREADABLE_CHECKS`), else 1."""
    if any(problem.check_id in UNREADABLE_CHECKS for problem in report.errors):
        return EXIT_UNREADABLE
    return EXIT_OK if report.ok else EXIT_INVALID


def _validate(args: argparse.Namespace) -> int:
    report = _run_validation(args)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.summary())
    code = _validation_exit_code(report)
    if code == EXIT_UNREADABLE:
        print(f"zarr-vectors: error: {args.store} is not a readable store", file=sys.stderr)
    return code


def _option(text: str) -> tuple[str, Any]:
    """An argparse type: ``KEY=VALUE``, the value parsed as JSON when it is JSON, else text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def _shape(text: str) -> float | list[float]:
    """An argparse type: one number for every axis, or one per axis separated by commas."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas: {text!r}") from exc
    return values[0] if len(values) == 1 else values


def _convert(args: argparse.Namespace) -> int:
    options = dict(args.option or [])
    if args.chunk_shape is not None:
        options["chunk_shape"] = args.chunk_shape
    if args.bin_shape is not None:
        options["bin_shape"] = args.bin_shape
    options["progress"] = wants_progress(sys.stderr)
    t0 = time.perf_counter()
    mode: WriteMode = "w" if args.overwrite else "w-"
    out = zv.convert(args.src, args.dst, format=args.format, mode=mode, **options)
    elapsed = time.perf_counter() - t0
    if isinstance(out, zv.VectorStore):
        count = out.object_count if out.is_object_store else out.vertex_count
        what = "objects" if out.is_object_store else "vertices"
        print(f"wrote {args.dst}: {out.kind}, {count:,} {what} in {elapsed:.2f} s")
    else:
        print(f"wrote {out} in {elapsed:.2f} s")
    return EXIT_OK


def _format_list(suffixes: bool = False) -> str:
    """The registered formats (``PLY, OBJ, ...``; with ``suffixes``, ``ply (.ply), ...``)."""
    found = converters.converters()
    if not suffixes:
        return ", ".join(c.name.upper() for c in found)
    return ", ".join(f"{c.name} ({', '.join(c.suffixes)})" for c in found)


def _positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


DEBUG_HELP = f"show the traceback of an unexpected error (also: {DEBUG_ENV}=1)"


def _debug_flag(parser: argparse.ArgumentParser) -> None:
    """``--debug`` after the subcommand too (it does not reset one given before it)."""
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)


def _storage_option_flag(parser: argparse.ArgumentParser) -> None:
    """``--storage-option KEY=VALUE``, repeatable: the fsspec options of a URL store."""
    parser.add_argument(
        "--storage-option",
        type=_option,
        action="append",
        metavar="KEY=VALUE",
        help="URLs only: an fsspec filesystem option, e.g. anon=true or endpoint_url=... "
        "(VALUE is parsed as JSON when it is JSON); repeat for several",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zarr-vectors", description="Zarr Vectors Format stores: write, inspect, validate."
    )
    parser.add_argument("--version", action="version", version=zv.__version__)
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="write a sample point cloud, query it, validate it",
        description="Compile the kernels it runs first (reported apart, first run only; "
        "`zarr-vectors warmup` compiles those of every common path), then write a sample "
        f"point cloud as DIR/{DEMO_STORE}, query it and validate it, timing each step.",
    )
    demo.add_argument(
        "--dir",
        default=".",
        help=f"directory to write the sample store {DEMO_STORE} in (created if missing; "
        "that store is replaced if present); default: the current directory",
    )
    demo.add_argument(
        "--points", type=_positive_int, default=1_000_000, help="number of points (at least 1)"
    )
    demo.set_defaults(run=_demo)
    warmup = sub.add_parser(
        "warmup",
        help="compile the numba kernels once, so later runs do not (a fresh environment)",
        description="Compile the numba kernels that writing, querying, reading and "
        "validating point clouds and streamlines use, and store them in numba's cache "
        "(NUMBA_CACHE_DIR, else beside the package's sources or, where those are read-only, "
        "in the user's cache directory), so that no later process "
        "compiles them. Run it once after installing, e.g. in a CI job or a cluster image. "
        "It writes only to a temporary directory.",
    )
    warmup.set_defaults(run=_warmup)
    info = sub.add_parser("info", help="describe a store")
    info.add_argument("store")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    _storage_option_flag(info)
    _debug_flag(info)
    info.set_defaults(run=_info)
    validate = sub.add_parser(
        "validate",
        help="check a store against the spec (exit 0 valid, 1 invalid, 2 unreadable)",
        description="Check a store against the spec. Exit code 0 valid, 1 invalid, 2 no "
        "readable store at STORE (missing, empty, no root zarr.json group) or bad usage. "
        "A progress bar over the chunks is drawn on stderr when it is a terminal.",
    )
    validate.add_argument("store")
    validate.add_argument(
        "--level",
        type=int,
        default=2,
        choices=range(1, 6),
        help="highest level, cumulative: 1 structure, 2 metadata (default), 3 chunk data, "
        "4 geometry, 5 pyramid",
    )
    validate.add_argument(
        "--sample",
        type=_positive_int,
        metavar="K",
        help="level 3: read only K evenly spaced occupied chunks per level (default: all)",
    )
    validate.add_argument(
        "--json", action="store_true", help="machine-readable report on stdout, nothing else"
    )
    _storage_option_flag(validate)
    _debug_flag(validate)
    validate.set_defaults(run=_validate)
    convert = sub.add_parser(
        "convert",
        help=f"convert a file ({_format_list()}) into a store, or a store into a file",
        description="Convert SRC into DST. When SRC is a file of a known format it is written "
        "into a new store at DST; otherwise SRC is a store and DST the file to write. The "
        f"format comes from the file's suffix unless --format names it: {_format_list(True)} "
        "(other packages add formats through the entry-point group zarr_vectors.converters). "
        "A CSV export writes its column types beside it (NAME.csv-metadata.json, CSVW), "
        "read back on import. "
        "Progress bars are drawn on stderr when it is a terminal. Exit code 0 done, 2 "
        "error or bad usage (an existing DST is left as it was), 3 a bug.",
    )
    convert.add_argument("src")
    convert.add_argument("dst")
    convert.add_argument("--format", help="format name (default: from the file's suffix)")
    convert.add_argument("--overwrite", action="store_true", help="replace DST if it exists")
    convert.add_argument(
        "--chunk-shape", type=_shape, metavar="X[,Y,...]", help="import: chunk shape"
    )
    convert.add_argument("--bin-shape", type=_shape, metavar="X[,Y,...]", help="import: bin shape")
    convert.add_argument(
        "-o",
        "--option",
        type=_option,
        action="append",
        metavar="KEY=VALUE",
        help="a format-specific option (VALUE is parsed as JSON when it is JSON)",
    )
    _debug_flag(convert)
    convert.set_defaults(run=_convert)
    _build_levels_parser(sub)
    _object_order_parser(sub)
    _upgrade_parser(sub)
    _serve_parser(sub)
    return parser


def _upgrade_parser(sub: Any) -> None:
    """``zarr-vectors upgrade STORE``: a store of format 1.0 to 1.2 raised to 1.3, the newest
    format that needs no data re-encoded (later ones are read and appended to as they are)."""
    upgrade = sub.add_parser(
        "upgrade",
        help=f"raise a store of format 1.0 to 1.2 to format {UPGRADE_VERSION}, in place",
        description=f"Rewrite a store of format 1.0, 1.1 or 1.2 as a format "
        f"{UPGRADE_VERSION} store (plain Zarr v3: named dimensions, no .zattrs or "
        "metadata.json; 1.0 and 1.1 stores also get place records and checksummed global "
        "arrays), with the same answers, committed as a new version (a failed upgrade "
        "leaves the store as it was). A current store is left unchanged. Exit code 0 "
        "done, 2 error.",
    )
    upgrade.add_argument("store")
    upgrade.add_argument(
        "--dry-run", action="store_true", help="print what would change, write nothing"
    )
    _debug_flag(upgrade)
    upgrade.set_defaults(run=_upgrade)


def _upgrade(args: argparse.Namespace) -> int:
    print(f"{args.store}: {zv.upgrade(args.store, dry_run=args.dry_run)}")
    return EXIT_OK


def _serve_parser(sub: Any) -> None:
    """``zarr-vectors serve STORE``: the store to Neuroglancer, until Ctrl-C or SIGTERM."""
    serve = sub.add_parser(
        "serve",
        help="serve a store to Neuroglancer (precomputed sources) until Ctrl-C",
        description="Serve STORE on 127.0.0.1 as Neuroglancer precomputed sources computed "
        "on the fly (point clouds as point annotations), print a Neuroglancer link with one "
        "layer per source (the link is only printed), log one line per request on stderr, "
        "and run until Ctrl-C or SIGTERM (exit code 130). Skeleton and mesh layers select "
        f"the store's object ids (the first {SELECTED_SEGMENTS:,} when there are more, said "
        "on a line of its own). Exit code 2 when the store cannot be opened "
        "or served, or the port is taken.",
    )
    serve.add_argument("store")
    serve.add_argument(
        "--port", type=_port, default=0, help="TCP port on 127.0.0.1 (default: a free one)"
    )
    serve.add_argument(
        "--client",
        default=NEUROGLANCER_CLIENT,
        metavar="URL",
        help=f"the Neuroglancer client the link opens (default: {NEUROGLANCER_CLIENT})",
    )
    serve.add_argument("--quiet", action="store_true", help="no line per request on stderr")
    _debug_flag(serve)
    serve.set_defaults(run=_serve)


def _port(text: str) -> int:
    """An argparse type: a TCP port, 0 to 65535."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return port


def _serve(args: argparse.Namespace) -> int:
    log = None if args.quiet else sys.stderr
    with _terminate_as_interrupt(), zv.serve(args.store, port=args.port, log=log) as server:
        names = ", ".join(server.sources)
        print(f"serving {args.store} at {server.url}/ ({names}); Ctrl-C stops")
        print(f"Neuroglancer: {server.neuroglancer_link(args.client)}")
        for note in selection_notes(server.sources):
            print(note)
        sys.stdout.flush()
        server.wait()
    return EXIT_OK


def _interrupt(signum: int, frame: object) -> None:
    """A signal handler that raises :class:`KeyboardInterrupt`, as Ctrl-C does."""
    raise KeyboardInterrupt


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM (``kill``, a service manager stopping the command) is
    handled as Ctrl-C: the server closes, the command says so and exits 130. Only the main
    thread can set a handler; elsewhere SIGTERM is left as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _build_levels_parser(sub: Any) -> None:
    """``zarr-vectors build-levels STORE``: levels of detail of a store (spec §4.3)."""
    build = sub.add_parser(
        "build-levels",
        help="add levels of detail to a store (format 1.3)",
        description="Add levels of detail (coarser copies for overviews, spec §4.3) to a "
        "point-cloud store (read one chunk at a time) or an object store, built again when "
        "it has some (--levels 0 removes them), and commit them as a new version (a failed "
        "build leaves the store as it was). The levels are those the kind's "
        "write_*(..., levels=...) writes. Exit code 0 done, 2 error.",
    )
    build.add_argument("store")
    build.add_argument(
        "--levels",
        type=_level_count,
        default="auto",
        help="'auto' (default: until a level holds at most --target points), a number, "
        "or 0 to remove the levels",
    )
    build.add_argument("--method", choices=("sample", "aggregate"), default="sample")
    build.add_argument(
        "--target", type=_positive_int, default=100_000, help="points of the coarsest level"
    )
    build.add_argument(
        "--per-bin", type=_positive_int, default=256, help="sample: points per coarse bin"
    )
    build.add_argument(
        "--objects",
        choices=("coverage", "length"),
        default=None,
        help="object stores: keep a subset of the objects at coarse levels (default: all)",
    )
    build.add_argument(
        "--objects-per-cell", type=_positive_int, default=4, help="coverage: per coarse bin"
    )
    build.add_argument(
        "--objects-kept", type=_positive_int, default=1000, help="length: objects kept"
    )
    build.add_argument(
        "--memory-budget",
        type=_positive_int,
        default=256 * 2**20,
        help="bytes of working memory: a batch of objects or chunks read back",
    )
    _debug_flag(build)
    build.set_defaults(run=_build_levels)


def _level_count(text: str) -> int | str:
    """An argparse type: ``auto``, 0 or an integer of at least 1."""
    return "auto" if text == "auto" else 0 if text.strip() == "0" else _positive_int(text)


def _build_levels(args: argparse.Namespace) -> int:
    levels = zv.Levels(
        count=args.levels,
        method=args.method,
        target=args.target,
        per_bin=args.per_bin,
        objects=args.objects,
        objects_per_cell=args.objects_per_cell,
        objects_kept=args.objects_kept,
    )
    built = zv.build_levels(args.store, levels, memory_budget=args.memory_budget)
    if built == 0:
        print(f"{args.store}: no levels of detail (level 0 only)")
    else:
        print(f"{args.store}: {built} level{'' if built == 1 else 's'} of detail built")
    return EXIT_OK


def _object_order_parser(sub: Any) -> None:
    """``zarr-vectors build-object-order STORE``: a point cloud's object-ordered copy
    (spec §9.15) added, or removed with ``--drop``."""
    build = sub.add_parser(
        "build-object-order",
        help="add the object-ordered copy to a point cloud with object ids (format 1.7)",
        description="Add to a point-cloud store whose points carry object ids a copy of its "
        "points sorted by object id (spec §9.15), so reads by id decode a few small row "
        "blocks; built again when it has one, removed with --drop. Built out of core, "
        "within --memory-budget; committed as a new version (a failed build leaves the "
        "store as it was). The store gets the bytes of a write with "
        "WriteOptions(object_order=True). Exit code 0 done, 2 error.",
    )
    build.add_argument("store")
    build.add_argument(
        "--drop", action="store_true", help="remove the copy instead (format 1.7 becomes 1.6)"
    )
    build.add_argument(
        "--memory-budget",
        type=_positive_int,
        default=256 * 2**20,
        help="bytes of working memory for the build",
    )
    _debug_flag(build)
    build.set_defaults(run=_object_order)


def _object_order(args: argparse.Namespace) -> int:
    if args.drop:
        dropped = zv.drop_object_order(args.store)
        print(f"{args.store}: " + ("copy removed" if dropped else "no copy to remove"))
        return EXIT_OK
    zv.build_object_order(args.store, memory_budget=args.memory_budget)
    print(f"{args.store}: object-ordered copy built")
    return EXIT_OK


def in_flags(message: str, typed: Sequence[str] = ()) -> str:
    """``message`` with the library's keywords as the command's flags.

    ``mode="w"`` becomes ``--overwrite``, ``format=`` ``--format``, ``chunk_shape``
    ``--chunk-shape``, a format option ``columns=[...]`` ``-o columns=[...]`` (``=True`` and
    ``=False`` as JSON ``=true`` and ``=false``). A flag's keyword with a value
    (``chunk_shape=[1.0, 2.0]``, a value shown), other keywords (``start=3`` in a report of
    stored values) and the arguments the user ``typed`` (a file named ``ids=3``) are kept.
    """
    if not typed:
        message = _MODE_W.sub(FLAGS["mode"], message)
        return _BARE_FLAG.sub(lambda m: FLAGS[m.group(1)], _KEYWORD.sub(_flag, message))
    pattern = "|".join(re.escape(t) for t in sorted(set(typed), key=len, reverse=True) if t)
    if not pattern:
        return in_flags(message)
    parts = re.split(f"({pattern})", message)
    return "".join(part if k % 2 else in_flags(part) for k, part in enumerate(parts))


def _flag(match: re.Match[str]) -> str:
    """The flag or ``-o`` option of a ``name=`` hint (see :func:`in_flags`)."""
    name, value = match.group(1), match.group(2)
    if name in FLAGS and value is not None:
        return FLAGS[name] if value in ("", "True") else match.group(0)
    if name in CONVERT_OPTIONS:
        return f"-o {name}=" + (value or "").lower()
    return match.group(0)


def _error(message: str) -> None:
    print(f"zarr-vectors: error: {message}", file=sys.stderr)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _debugging(args: argparse.Namespace) -> bool:
    """``--debug``, or the environment variable :data:`DEBUG_ENV` set (not to ``0``)."""
    return bool(getattr(args, "debug", False)) or os.environ.get(DEBUG_ENV, "0") not in ("", "0")


def _report_bug(exc: Exception, args: argparse.Namespace) -> int:
    """One line for an exception the command did not expect: what failed, that it is a bug."""
    _error(
        f"{args.command} failed unexpectedly: {type(exc).__name__}: {_one_line(str(exc))} -- "
        f"this is a bug in zarr-vectors {zv.__version__}; please report it with the command "
        f"line (rerun with --debug or {DEBUG_ENV}=1 to see the traceback)"
    )
    return EXIT_BUG


def _quiet_broken_pipe() -> int:
    """After the reader of stdout went away (``... | head``): send what is left in stdout's
    buffer to the null device, so that Python's flush at exit does not fail again, and exit
    as a process ended by ``SIGPIPE``."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # a stdout with no file descriptor (captured in tests)
        pass
    return EXIT_BROKEN_PIPE


def _run(args: argparse.Namespace) -> int:
    """Run the subcommand and flush stdout (a closed pipe shows here, not at exit)."""
    code: int = args.run(args)
    sys.stdout.flush()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = _parser().parse_args(argv)
    typed = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(args)
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except (ZarrVectorsError, OSError) as exc:
        _error(in_flags(str(exc), typed))
        return EXIT_UNREADABLE
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:  # the CLI boundary: no traceback reaches a user (one line)
        if _debugging(args):
            raise
        return _report_bug(exc, args)


if __name__ == "__main__":
    sys.exit(main())
