"""``python -m benchmarks.remote``: reads over S3 on loopback with injected per-request latency.

An S3 server (moto) runs on 127.0.0.1 in this process. A 1e6-point store (three float32
attributes) and a 10,000-streamline store are written locally and uploaded to it; every read
then goes through an ``FsspecStore`` (s3fs) wrapped in
:class:`~benchmarks._latency.LatencyStore`, which delays every request by the simulated
round-trip time and counts requests, *waves* (requests that had to wait for an earlier
answer) and bytes. With latency ``L`` a read costs about ``waves * L`` plus the transfer, so
the table shows that a query costs a constant number of round trips, beside a naive reader
that fetches one chunk after another with zarr-python. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

import zarr_vectors as zv
from benchmarks._data import brute_force, canonical_rows, make_points, same_rows
from benchmarks._data import make_boxes as point_boxes
from benchmarks._latency import LatencyStore
from benchmarks._measure import log
from benchmarks.objects import make_boxes as object_boxes
from benchmarks.objects import make_streamlines

if TYPE_CHECKING:
    import zarr

BUCKET = "zv-bench"
_KEY = _SECRET = "bench"
_REGION = "us-east-1"
NAIVE = "naive 1% box, chunk by chunk"
_POOL = 64  # s3fs/aiobotocore keep 10 connections by default; a query sends more at once


@dataclass
class Result:
    """One measured case at one latency (the last repeat's request log, the median time)."""

    case: str
    latency: float
    requests: int
    waves: int
    seconds: float
    nbytes: int
    ok: bool | None
    detail: str = ""


def _serve(ports: Any, stop: Any) -> None:
    """Child process: run moto's S3 server on a free loopback port until ``stop`` is set."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # an access-log line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    ports.put(server.get_host_and_port())
    stop.wait()
    server.stop()


@contextmanager
def loopback_s3() -> Iterator[dict[str, Any]]:
    """Run moto's S3 server on 127.0.0.1 with one bucket; yield the s3fs options reaching it.

    The server runs in a child process, so its request handling does not compete with the
    reader for this process's interpreter lock.
    """
    for name, value in {
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "NO_PROXY": "127.0.0.1,localhost",
    }.items():
        os.environ[name] = value
    context = multiprocessing.get_context("spawn")
    ports, stop = context.Queue(), context.Event()
    child = context.Process(target=_serve, args=(ports, stop), daemon=True)
    child.start()
    try:
        host, port = ports.get(timeout=60)
        options: dict[str, Any] = {
            "endpoint_url": f"http://{host}:{port}",
            "key": _KEY,
            "secret": _SECRET,
            "client_kwargs": {"region_name": _REGION},
            "config_kwargs": {"max_pool_connections": _POOL},
        }
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=options["endpoint_url"],
            aws_access_key_id=_KEY,
            aws_secret_access_key=_SECRET,
            region_name=_REGION,
        )
        client.create_bucket(Bucket=BUCKET)
        client.close()
        yield options
    finally:
        stop.set()
        child.join(timeout=30)


def upload(options: dict[str, Any], local: str, name: str) -> Any:
    """Copy a local store directory to ``s3://BUCKET/name``; return a read-only FsspecStore."""
    import s3fs
    from zarr.storage import FsspecStore

    fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
    for directory, _, files in os.walk(local):
        for file in files:
            path = os.path.join(directory, file)
            key = os.path.relpath(path, local).replace(os.sep, "/")
            fs.put_file(path, f"{BUCKET}/{name}/{key}")
    return FsspecStore.from_url(f"s3://{BUCKET}/{name}", storage_options=options, read_only=True)


def measure(
    case: str,
    inner: Any,
    latency: float,
    repeat: int,
    run: Callable[[LatencyStore], Any],
    check: Callable[[Any], tuple[bool, str]],
    prepare: Callable[[LatencyStore], None] | None = None,
) -> Result:
    """Time ``run`` on a fresh latency wrapper ``repeat`` times (median), log its requests.

    ``prepare`` (untimed, not logged) runs first on the same wrapper: it opens the store for
    the warm cases. ``check`` judges each answer after the clock and the log have stopped.
    """
    times: list[float] = []
    ok, detail = True, ""
    summary = None
    for _ in range(repeat):
        store = LatencyStore(inner, latency)
        if prepare is not None:
            prepare(store)
        store.log.reset()
        start = time.perf_counter()
        found = run(store)
        times.append(time.perf_counter() - start)
        summary = store.log.summary()
        good, detail = check(found)
        ok = ok and good
    assert summary is not None
    return Result(
        case,
        latency,
        summary.requests,
        summary.waves,
        statistics.median(times),
        summary.nbytes,
        ok,
        detail,
    )


# -- point cloud ---------------------------------------------------------------------


@dataclass
class PointData:
    """A point store on S3, its input (for the checks) and the boxes queried."""

    label: str
    positions: np.ndarray
    value: np.ndarray
    store: Any
    box1: tuple[np.ndarray, np.ndarray]
    box25: tuple[np.ndarray, np.ndarray]


def write_points(
    options: dict[str, Any], n: int, seed: int, tmp: str, chunk: float | None = None
) -> PointData:
    """Write ``n`` points with three attributes locally (default layout, or cubic chunks of
    side ``chunk``), upload them, and pick the boxes."""
    positions, value = make_points(n, seed)
    rng = np.random.default_rng(seed + 1)
    attributes = {
        "value": value,
        "a1": rng.random(n, dtype=np.float32),
        "a2": rng.random(n, dtype=np.float32),
    }
    name = f"points-{chunk or 'default'}.zarrvectors"
    local = os.path.join(tmp, name)
    zv.write_points(local, positions, attributes=attributes, chunk_shape=chunk)
    store = upload(options, local, name)
    label = f"points {n:.0e}".replace("e+0", "e") + (f", {chunk:g}-unit chunks" if chunk else "")
    boxes = point_boxes(0.01, 1, seed)[0], point_boxes(0.25, 1, seed)[0]
    return PointData(label, positions, value, store, *boxes)


def _check(data: PointData, found: zv.QueryResult, box: tuple[np.ndarray, np.ndarray]) -> bool:
    return same_rows(found, canonical_rows(*brute_force(data.positions, data.value, box)))


def _array(group: zarr.Group, path: str) -> zarr.Array[Any]:
    """The zarr array at ``path`` in ``group`` (a group there is an error)."""
    import zarr

    found = group[path]
    if not isinstance(found, zarr.Array):
        raise TypeError(f"{path} is not an array")
    return found


def naive_box(store: LatencyStore, box: tuple[np.ndarray, np.ndarray]) -> zv.QueryResult:
    """A 1% box read one chunk at a time with zarr-python (the contrast to a batched read).

    The chunks the box meets come from ``vertex_counts``; each chunk's rows of each column
    are then read with ``array[i, j, k, :n]``, one after another, and filtered.
    """
    import zarr

    from zarr_vectors.format.metadata import RootMetadata

    group = zarr.open_group(store, mode="r", zarr_format=3)
    root = RootMetadata.from_json(dict(group.attrs))
    counts = np.asarray(_array(group, "0/vertex_counts")[...])
    names = ["vertices", *(f"attributes/{a}" for a in ("value", "a1", "a2"))]
    arrays = [_array(group, f"0/{name}") for name in names]
    size = np.asarray(root.chunk_shape)
    origin = np.asarray(root.chunk_grid_origin)
    lo, hi = box
    first = np.maximum(np.floor(lo / size).astype(np.int64) - origin, 0)
    last = np.minimum(np.floor(hi / size).astype(np.int64) - origin, np.asarray(counts.shape) - 1)
    columns: list[list[np.ndarray]] = [[] for _ in names]
    for chunk in np.ndindex(*(last - first + 1)):
        cell = tuple(int(c) for c in np.asarray(chunk) + first)
        n = int(counts[cell])
        if n == 0:
            continue
        index: tuple[int | slice, ...] = (*cell, slice(0, n))
        rows = [np.asarray(a[index]) for a in arrays]
        keep = np.all((rows[0] >= lo) & (rows[0] < hi), axis=1)
        for column, found in zip(columns, rows, strict=True):
            column.append(found[keep])
    positions, *values = [np.concatenate(c) for c in columns]
    attributes = dict(zip(["value", "a1", "a2"], values, strict=True))
    return zv.QueryResult(positions=positions, attributes=attributes)


def point_cases(data: PointData, latency: float, repeat: int, full: bool) -> list[Result]:
    """The point-cloud cases at one latency (with ``full`` False: the 1% boxes only)."""
    box1, box25 = data.box1, data.box25
    held: dict[str, Any] = {}

    def rows_in(box: tuple[np.ndarray, np.ndarray]) -> Callable[[Any], tuple[bool, str]]:
        def check(found: zv.QueryResult) -> tuple[bool, str]:
            return _check(data, found, box), f"{found.positions.shape[0]:,} rows"

        return check

    def opened(store: LatencyStore) -> None:
        held["store"] = zv.open(store)
        held["store"].query(box1)

    def everything(found: zv.QueryResult) -> tuple[bool, str]:
        rows = found.positions.shape[0]
        return rows == data.positions.shape[0], f"{rows:,} rows"

    specs: list[tuple[str, Callable[[LatencyStore], Any], Any, Any]] = [
        ("open + 1% box", lambda store: zv.open(store).query(box1), rows_in(box1), None),
        ("1% box warm", lambda _: held["store"].query(box1), rows_in(box1), opened),
        ("open + 25% box", lambda store: zv.open(store).query(box25), rows_in(box25), None),
        ("open + read all", lambda store: zv.open(store).read(), everything, None),
        (NAIVE, lambda store: naive_box(store, box1), rows_in(box1), None),
    ]
    return [
        measure(f"{data.label}: {name}", data.store, latency, repeat, run, check, prepare)
        for name, run, check, prepare in specs
        if full or name in ("open + 1% box", NAIVE)
    ]


# -- streamlines ---------------------------------------------------------------------


@dataclass
class LineData:
    positions: np.ndarray
    offsets: np.ndarray
    store: Any
    ids: list[np.ndarray]
    box1: tuple[np.ndarray, np.ndarray]


def write_streamlines(options: dict[str, Any], count: int, seed: int, tmp: str) -> LineData:
    data = make_streamlines(count, 100, seed)
    local = os.path.join(tmp, "streamlines.zarrvectors")
    data.write(local)
    store = upload(options, local, "streamlines.zarrvectors")
    rng = np.random.default_rng(seed)
    ids = [rng.choice(count, size=min(100, count), replace=False) for _ in range(2)]
    frame = data.frame
    return LineData(frame.positions, frame.offsets, store, ids, object_boxes(0.01, 1, seed)[0])


def _same_objects(data: LineData, found: zv.QueryResult, ids: np.ndarray) -> bool:
    assert found.offsets is not None
    parts = [data.positions[data.offsets[i] : data.offsets[i + 1]] for i in ids]
    return bool(
        np.array_equal(found.positions, np.concatenate(parts))
        and np.array_equal(np.diff(found.offsets), [p.shape[0] for p in parts])
    )


def line_cases(data: LineData, latency: float, repeat: int) -> list[Result]:
    """The streamline cases at one latency."""
    held: dict[str, Any] = {}
    first, second = data.ids

    def same(ids: np.ndarray) -> Callable[[Any], tuple[bool, str]]:
        def check(found: zv.QueryResult) -> tuple[bool, str]:
            return _same_objects(data, found, ids), f"{len(ids)} streamlines"

        return check

    def opened(store: LatencyStore) -> None:
        held["store"] = zv.open(store)
        held["store"].read_objects(first)

    def meeting(found: zv.QueryResult) -> tuple[bool, str]:
        assert found.object_ids is not None
        assert found.offsets is not None
        ids = _objects_meeting(data, data.box1)
        order = np.argsort(found.object_ids, kind="stable")
        whole = zv.QueryResult(
            positions=np.concatenate(
                [found.positions[found.offsets[i] : found.offsets[i + 1]] for i in order]
            )
            if order.size
            else found.positions,
            offsets=np.concatenate(
                [[0], np.cumsum(np.diff(np.asarray(found.offsets))[order])]
            ).astype(np.int64),
        )
        good = np.array_equal(np.sort(found.object_ids), ids) and _same_objects(data, whole, ids)
        return bool(good), f"{ids.shape[0]:,} streamlines"

    n = f"{data.offsets.shape[0] - 1:,}"
    bench = data.store
    return [
        measure(
            f"streamlines {n}: open + 100 by id",
            bench,
            latency,
            repeat,
            lambda store: zv.open(store).read_objects(first),
            same(first),
        ),
        measure(
            f"streamlines {n}: 100 by id warm",
            bench,
            latency,
            repeat,
            lambda _: held["store"].read_objects(second),
            same(second),
            opened,
        ),
        measure(
            f"streamlines {n}: open + 1% box",
            bench,
            latency,
            repeat,
            lambda store: zv.open(store).query(data.box1),
            meeting,
        ),
    ]


def _objects_meeting(data: LineData, box: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    inside = np.all((data.positions >= box[0]) & (data.positions < box[1]), axis=1)
    owner = np.repeat(np.arange(data.offsets.shape[0] - 1), np.diff(data.offsets))
    return np.unique(owner[inside])


# -- table -----------------------------------------------------------------------------


def _size(nbytes: int) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def format_table(results: list[Result]) -> str:
    """The results as a plain-text table; ``+RTTs`` compares each case with its 0 ms run."""
    at_zero = {r.case: r.seconds for r in results if r.latency == 0}
    head = ("case", "latency", "requests", "waves", "wall", "wall/RTT", "+RTTs", "bytes", "ok")
    rows = [(*head, "detail")]
    for r in results:
        base = at_zero.get(r.case)
        rows.append(
            (
                r.case,
                f"{r.latency * 1e3:g} ms",
                f"{r.requests:,}",
                str(r.waves),
                f"{r.seconds * 1e3:.0f} ms",
                f"{r.seconds / r.latency:.1f}" if r.latency else "",
                f"{(r.seconds - base) / r.latency:.1f}" if r.latency and base is not None else "",
                _size(r.nbytes),
                "ok" if r.ok else "FAIL",
                r.detail,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


FOOTNOTES = (
    "S3 = moto's server on 127.0.0.1 (a child process), read through zarr's FsspecStore (s3fs, "
    f"{_POOL} pooled connections); latency = a sleep added to every request by a store wrapper.",
    "waves = requests that had to wait for an earlier answer, plus one: requests sent together "
    "share a wave. wall/RTT ~ waves + (transfer and server time) / RTT; +RTTs = (wall - wall "
    "of the same case at 0 ms) / RTT, the time the latency added, in round trips (~ waves).",
    "moto handles a request in several ms of its own CPU (2 shared cores), so wall times at "
    "0 ms measure mostly the server, not this library.",
    "requests, waves, bytes: the last repeat; wall: the median of the repeats. bytes = payloads "
    "received (HTTP overhead not counted).",
    "naive = zarr-python reading each chunk's rows of each column (array[i, j, k, :n]) one after "
    "another: at least one wave per chunk and column (zarr reads a sharded chunk's index "
    "before its rows unless it reads the whole shard).",
    "ok = the rows (points) or objects (streamlines) equal a brute-force numpy reference.",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.remote", description=__doc__)
    parser.add_argument("--points", type=float, default=1e6, help="points (default 1e6)")
    parser.add_argument("--streamlines", type=int, default=10_000, help="streamlines x 100")
    parser.add_argument("--latencies", default="0,20", help="ms per request (default 0,20)")
    parser.add_argument("--repeat", type=int, default=3, help="repeats per case (median)")
    parser.add_argument(
        "--fine-chunk",
        type=float,
        default=125.0,
        help="side of the chunks of a second point store, many chunks per 1%% box "
        "(default 125: 512 chunks; 0 skips it)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    latencies = [float(x) / 1e3 for x in args.latencies.split(",")]
    started = time.perf_counter()
    with loopback_s3() as options, tempfile.TemporaryDirectory(prefix="zv-bench-") as tmp:
        log(f"points: write {int(args.points):,} locally and upload")
        stores = [(write_points(options, int(args.points), args.seed, tmp), True)]
        if args.fine_chunk:
            log(f"points: the same with {args.fine_chunk:g}-unit chunks")
            fine = write_points(options, int(args.points), args.seed, tmp, args.fine_chunk)
            stores.append((fine, False))
        log(f"streamlines: write {args.streamlines:,} x 100 locally and upload")
        lines = write_streamlines(options, args.streamlines, args.seed, tmp)
        results: list[Result] = []
        for latency in latencies:
            log(f"latency {latency * 1e3:g} ms: points")
            for points, full in stores:
                results += point_cases(points, latency, args.repeat, full)
            log(f"latency {latency * 1e3:g} ms: streamlines")
            results += line_cases(lines, latency, args.repeat)
    print(
        f"zarr_vectors remote reads; {os.cpu_count()} CPUs; total run time "
        f"{time.perf_counter() - started:.0f} s\n"
    )
    print(format_table(results))
    print()
    for k, note in enumerate(FOOTNOTES, 1):
        print(f"[{k}] {note}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
