"""``python -m benchmarks.concurrency``: one appender and several readers at the same time.

Issue 40's acceptance run. One process appends batches of points to a store in a loop while
reader processes query and read it, each in three ways: a handle opened fresh for every
read, a long-lived handle (opened again only after a ``StoreChangedError``), and a
long-lived handle opened with ``refresh=True``. Every batch ``k`` carries the attribute
``batch = k`` and is generated from a seed, so every answer is checked exactly against the
version of the store it claims (the handle's ``commit`` serial: version ``v`` holds batches
``0 .. v - 1``). Outcomes, counted per reader mode:

- ``opened``: the answer of the version the handle opened;
- ``newer``: a ``refresh=True`` handle answered from a version after the one it opened;
- ``changed``: ``StoreChangedError``;
- ``busy``: an open during an in-place append (S3: the root lacks ``zarr_vectors_version``
  until the append commits, spec §2.4) raised ``NotAZarrVectorsStoreError``;
- ``wrong``: an answer that is not exactly the version the handle claims (must be 0);
- ``corrupt``: a ``FormatError`` (``CorruptChunkError``...) on the intact store (must be 0);
- ``error``: any other exception (must be 0).

Usage::

    python -m benchmarks.concurrency --duration 300 --readers 3
    python -m benchmarks.concurrency --duration 60 --backend s3   # loopback moto server
    python -m benchmarks.concurrency --cost    # what the version check adds to a read

``--cost`` prints, per backend, the median time of the version check made after each data
read (:meth:`StoreIO.check_version`) beside a warm query of a small box and a full read of the
same store.

The exit status is 1 when a wrong answer, a false corruption error or another error was
counted, or the appender failed.
"""

from __future__ import annotations

import argparse
import collections
import logging
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from typing import Any

import boto3
import numpy as np
from moto.server import ThreadedMotoServer
from zarr.storage import FsspecStore

import zarr_vectors as zv

EXTENT = 100.0
BOX = (np.array([20.0, 20.0, 20.0]), np.array([70.0, 70.0, 70.0]))
MODES = ("fresh", "long-lived", "refresh")
OUTCOMES = ("opened", "newer", "changed", "busy", "wrong", "corrupt", "error")
_BUCKET = "zv-concurrency"
_FAILURES = (
    zv.ZarrVectorsError,
    OSError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    RuntimeError,
)
"""What a reader counts as an error (every error of ours subclasses one of the builtins)."""


def batch(k: int, base: int, size: int) -> np.ndarray:
    """The positions of batch ``k`` (batch 0 is the first write)."""
    rng = np.random.default_rng(1000 + k)
    return rng.uniform(0, EXTENT, (base if k == 0 else size, 3)).astype(np.float32)


def _attributes(k: int, n: int) -> dict[str, np.ndarray]:
    return {"batch": np.full(n, k, np.int32)}


class Expected:
    """The exact answers of every version, built as versions are met."""

    def __init__(self, base: int, size: int) -> None:
        self.base, self.size = base, size
        self.full: list[int] = []  # rows per batch
        self.boxed: list[np.ndarray] = []  # sorted in-box positions per batch

    def _grow(self, version: int) -> None:
        while len(self.full) < version:
            pos = batch(len(self.full), self.base, self.size)
            inside = np.all((pos >= BOX[0]) & (pos < BOX[1]), axis=1)
            self.full.append(len(pos))
            self.boxed.append(pos[inside])

    def check(self, version: int, found: zv.QueryResult, boxed: bool) -> bool:
        """Whether ``found`` is exactly version ``version``'s answer (batches 0..v-1)."""
        self._grow(version)
        ids = np.asarray(found.attributes["batch"])
        if ids.size and (ids.min() < 0 or ids.max() >= version):
            return False
        counts = np.bincount(ids, minlength=version) if ids.size else np.zeros(version, int)
        for k in range(version):
            want = len(self.boxed[k]) if boxed else self.full[k]
            if counts[k] != want:
                return False
        if not boxed:
            return True
        for k in range(version):
            got = np.asarray(found.positions)[ids == k]
            if not np.array_equal(_sorted(got), _sorted(self.boxed[k])):
                return False
        return True


def _sorted(rows: np.ndarray) -> np.ndarray:
    return rows[np.lexsort(rows.T[::-1])] if len(rows) else rows


def _version(handle: zv.VectorStore) -> int:
    return int(handle.metadata["commit"]["serial"])


def _open(store: str, options: dict[str, Any] | None, refresh: bool) -> zv.VectorStore:
    return zv.open(store, storage_options=options, refresh=refresh)


def appender(
    store: str, options: dict[str, Any] | None, args: argparse.Namespace, stop_at: float
) -> None:
    """Append batches 1, 2, ... until ``stop_at``; print how many."""
    k = 1
    while time.time() < stop_at:
        pos = batch(k, args.base, args.batch)
        target: Any = store if options is None else zv_store(store, options)
        zv.append_points(target, pos, attributes=_attributes(k, len(pos)), progress=False)
        k += 1
        time.sleep(args.pause)
    print(f"appender: {k - 1} appends", file=sys.stderr)


def zv_store(url: str, options: dict[str, Any]) -> Any:
    """A writable fsspec store for ``url`` (appends take a store, not storage options)."""
    return FsspecStore.from_url(url, storage_options=options, read_only=False)


def reader(
    store: str,
    options: dict[str, Any] | None,
    args: argparse.Namespace,
    stop_at: float,
    seed: int,
    results: Any,
) -> None:
    """Read in every mode in turn until ``stop_at``; put the outcome counts on ``results``."""
    rng = np.random.default_rng(seed)
    expected = Expected(args.base, args.batch)
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    handles: dict[str, zv.VectorStore | None] = {"long-lived": None, "refresh": None}
    opened: dict[str, int] = {}
    while time.time() < stop_at:
        mode = MODES[int(rng.integers(0, len(MODES)))]
        boxed = bool(rng.integers(0, 2))
        try:
            handle = handles.get(mode)
            if handle is None:
                handle = _open(store, options, refresh=mode == "refresh")
                opened[mode] = _version(handle)
                if mode != "fresh":
                    handles[mode] = handle
            found = handle.query(BOX) if boxed else handle.read()
            version = _version(handle)  # a refresh handle may have moved on
            ok = expected.check(version, found, boxed)
            if not ok:
                counts[mode, "wrong"] += 1
            else:
                counts[mode, "newer" if version > opened[mode] else "opened"] += 1
            if mode == "refresh":
                opened[mode] = version
        except zv.StoreChangedError:
            counts[mode, "changed"] += 1
            if mode != "fresh":
                handles[mode] = None
        except zv.NotAZarrVectorsStoreError:
            counts[mode, "busy"] += 1
        except zv.FormatError:
            counts[mode, "corrupt"] += 1
            traceback.print_exc()
        except _FAILURES:  # counted and shown: the run must see every failure
            counts[mode, "error"] += 1
            traceback.print_exc()
    results.put(dict(counts))


def _loopback_s3() -> tuple[Any, dict[str, Any]]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    options = {
        "endpoint_url": f"http://{host}:{port}",
        "key": "bench",
        "secret": "bench",
        "client_kwargs": {"region_name": "us-east-1"},
    }
    boto3.client(
        "s3",
        endpoint_url=options["endpoint_url"],
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        region_name="us-east-1",
    ).create_bucket(Bucket=_BUCKET)
    return server, options


def run(args: argparse.Namespace) -> int:
    """Run the appender and readers for ``args.duration`` seconds; print the table."""
    server = None
    with tempfile.TemporaryDirectory(prefix="zv-concurrency-") as scratch:
        if args.backend == "s3":
            server, options = _loopback_s3()
            store: str = f"s3://{_BUCKET}/cloud.zv"
            zv.write_points(
                zv_store(store, options),
                batch(0, args.base, args.batch),
                chunk_shape=args.chunk,
                attributes=_attributes(0, args.base),
                progress=False,
            )
            given: dict[str, Any] | None = options
        else:
            store = os.path.join(scratch, "cloud.zv")
            zv.write_points(
                store,
                batch(0, args.base, args.batch),
                chunk_shape=args.chunk,
                attributes=_attributes(0, args.base),
                progress=False,
            )
            given = None
        context = multiprocessing.get_context("spawn")  # not fork: zarr's event loop thread
        results = context.Queue()
        stop_at = time.time() + args.duration
        writer = context.Process(target=appender, args=(store, given, args, stop_at))
        readers = [
            context.Process(target=reader, args=(store, given, args, stop_at, seed, results))
            for seed in range(args.readers)
        ]
        for p in (writer, *readers):
            p.start()
        totals: collections.Counter[tuple[str, str]] = collections.Counter()
        for _ in readers:
            totals.update(results.get(timeout=args.duration + 600))
        for p in (writer, *readers):
            p.join(timeout=600)
        final = zv.open(store, storage_options=given)
        versions = _version(final)
        if server is not None:
            server.stop()
    _print_table(args, totals, versions)
    bad = sum(totals[m, o] for m in MODES for o in ("wrong", "corrupt", "error"))
    return 1 if bad or writer.exitcode != 0 else 0


def _print_table(
    args: argparse.Namespace, totals: collections.Counter[tuple[str, str]], versions: int
) -> None:
    print(
        f"{args.backend}: {args.duration:g} s, 1 appender ({versions - 1} appends of "
        f"{args.batch} points to {args.base}), {args.readers} readers"
    )
    print(f"| mode | {' | '.join(OUTCOMES)} | reads |")
    print(f"|---|{'---|' * (len(OUTCOMES) + 1)}")
    for mode in MODES:
        row = [totals[mode, o] for o in OUTCOMES]
        print(f"| {mode} | {' | '.join(str(v) for v in row)} | {sum(row)} |")
    row = [sum(totals[m, o] for m in MODES) for o in OUTCOMES]
    print(f"| all | {' | '.join(str(v) for v in row)} | {sum(row)} |")


def _median_seconds(call: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure_cost(args: argparse.Namespace) -> int:
    """Print what the version check costs beside a small warm query and a full read."""
    small = (np.array([40.0, 40.0, 40.0]), np.array([45.0, 45.0, 45.0]))
    print("| backend | version check | warm query, small box | full read |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="zv-concurrency-") as scratch:
        server, options = _loopback_s3()
        try:
            targets = {
                "local": (os.path.join(scratch, "cost.zv"), None),
                "s3 (loopback)": (f"s3://{_BUCKET}/cost.zv", options),
            }
            for name, (store, given) in targets.items():
                written: Any = store if given is None else zv_store(store, given)
                zv.write_points(
                    written,
                    batch(0, args.base, args.batch),
                    chunk_shape=args.chunk,
                    attributes=_attributes(0, args.base),
                    progress=False,
                )
                handle = zv.open(store, storage_options=given)
                handle.query(small)
                check = _median_seconds(handle._check_version, args.repeat)
                query = _median_seconds(lambda h=handle: h.query(small), args.repeat)
                read = _median_seconds(handle.read, max(3, args.repeat // 10))
                cells = (f"{check * 1e3:.3f} ms", f"{query * 1e3:.2f} ms", f"{read * 1e3:.1f} ms")
                print(f"| {name} | {' | '.join(cells)} |")
        finally:
            server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.concurrency", description=__doc__)
    parser.add_argument("--duration", type=float, default=300.0, help="seconds (default 300)")
    parser.add_argument("--readers", type=int, default=3, help="reader processes (default 3)")
    parser.add_argument("--base", type=int, default=20_000, help="points first written")
    parser.add_argument("--batch", type=int, default=500, help="points per append")
    parser.add_argument("--pause", type=float, default=0.2, help="seconds between appends")
    parser.add_argument("--chunk", type=float, default=25.0, help="chunk side")
    parser.add_argument("--backend", choices=("local", "s3"), default="local")
    parser.add_argument("--cost", action="store_true", help="measure the version check")
    parser.add_argument("--repeat", type=int, default=50, help="--cost: repeats (default 50)")
    args = parser.parse_args(argv)
    return measure_cost(args) if args.cost else run(args)


if __name__ == "__main__":
    sys.exit(main())
