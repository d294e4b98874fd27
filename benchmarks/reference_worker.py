"""The side-by-side timing protocol, and the worker that runs it on the reference library.

Run by ``benchmarks/side_by_side.py`` with the interpreter of the reference virtualenv
(``benchmarks/_reference_venv``, which holds ``zarr-vectors==0.9.2`` from PyPI)::

    python -I reference_worker.py run SPEC.json    # every case of one data set
    python -I reference_worker.py peak SPEC.json   # one write, reporting its peak RSS
    python -I reference_worker.py write SPEC.json STORE  # one write to STORE, its seconds

This file is standalone: it imports only the standard library and numpy at module level, and
the reference ``zarr_vectors`` only inside :class:`ReferenceLibrary`, in the worker process.
``side_by_side`` imports it for :func:`run_cases` and :func:`peak_write`, so both libraries
are timed by the same code; it passes its own adapter for ``zarr_vectors`` of this repository.

A library adapter has ``warm_up(directory)``, ``write(path)``, ``open(path)``,
``query(handle, box)``, ``read_all(handle)``, ``by_id(handle, ids)`` and ``answer(result)``
(the result as a dict of plain arrays: ``positions``, ``attr``, and where the library
returns them ``ids``, ``offsets``, ``faces``, ``edges``).

The spec (JSON) names the data set: ``kind``; ``data_dir`` (the ``.npy`` files:
``positions``, ``offsets``, ``v_<name>``, ``o_<name>``, ``links``, ``link_offsets``);
``attribute``; ``layout`` (``chunk``, ``bin``, ``bounds``, ``compression``); ``boxes``
(fraction label -> list of ``[lo, hi]``); ``id_sets``; ``repeat``, ``write_budget``,
``read_budget``, ``warm_budget``, ``timeout`` (seconds); and the paths ``store_dir``,
``answers_dir``, ``results`` and ``peak_store``.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import shutil
import signal
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "EXPECTED_VERSION",
    "CaseTimeout",
    "ReferenceLibrary",
    "guarded",
    "load_arrays",
    "peak_write",
    "repeat_back_to_back",
    "repeat_within",
    "run_cases",
    "timed",
]

T = TypeVar("T")

EXPECTED_VERSION = "0.9.2"
"""The reference release this worker drives; any other makes it refuse to run."""

Keep = Callable[[str, dict[str, np.ndarray]], None]


# -- timing ----------------------------------------------------------------------------------
def timed(func: Callable[[], T]) -> tuple[float, T]:
    """Run ``func`` once after an untimed garbage collection; return seconds and value.

    Parameters
    ----------
    func
        The call to time.

    Returns
    -------
    tuple of (float, object)
        Elapsed :func:`time.perf_counter` seconds and what ``func`` returned.
    """
    gc.collect()
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def timed_write(func: Callable[[], T]) -> tuple[float, T]:
    """:func:`timed` after flushing earlier writes to disk (as ``benchmarks._measure``)."""
    seconds, _, value = timed_write_cpu(func)
    return seconds, value


def cpu_seconds() -> tuple[float, float]:
    """User and system (kernel) CPU seconds this process has used so far, every thread."""
    usage = resource.getrusage(resource.RUSAGE_SELF)  # os.times() counts in 10 ms ticks
    return usage.ru_utime, usage.ru_stime


def timed_write_cpu(func: Callable[[], T]) -> tuple[float, tuple[float, float], T]:
    """:func:`timed` after flushing earlier writes to disk, with the user and system CPU
    seconds the write used.

    The CPU is the whole process's (every thread), from just after the flush to the end
    of the write; the system share is the kernel's work for the write: the page cache and
    the file system taking the bytes, and the page faults of fresh memory.
    """
    os.sync()
    gc.collect()
    user, system = cpu_seconds()
    start = time.perf_counter()
    value = func()
    seconds = time.perf_counter() - start
    end_user, end_system = cpu_seconds()
    return seconds, (end_user - user, end_system - system), value


def repeat_within(func: Callable[[], T], repeat: int, budget: float) -> tuple[list[float], T]:
    """Run ``func`` up to ``repeat`` times, stopping once one more run would pass ``budget``.

    Parameters
    ----------
    func
        The call to time (it always runs at least once).
    repeat
        The most runs.
    budget
        Seconds; no new run starts when the runs so far plus the last one's time exceed it.

    Returns
    -------
    tuple of (list of float, object)
        Every run's seconds and the last run's value.
    """
    times: list[float] = []
    while True:
        seconds, value = timed(func)
        times.append(seconds)
        if len(times) >= repeat or sum(times) + seconds > budget:
            return times, value


def repeat_back_to_back(func: Callable[[], T], repeat: int, budget: float) -> list[float]:
    """Run ``func`` up to ``repeat`` times in a row with the garbage collector off (as
    :mod:`timeit` does), stopping as :func:`repeat_within` does; every run's seconds.

    Unlike :func:`timed`, no collection runs between the calls, so the CPU caches hold
    what the previous call left there: the steady state of a loop of calls.
    """
    times: list[float] = []
    gc.collect()
    gc.disable()
    try:
        while True:
            start = time.perf_counter()
            func()
            times.append(time.perf_counter() - start)
            if len(times) >= repeat or sum(times) + times[-1] > budget:
                return times
    finally:
        gc.enable()


class CaseTimeout(Exception):
    """A case ran past its time limit."""


def guarded(seconds: float, func: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one case under a time limit, turning any failure into a record.

    Parameters
    ----------
    seconds
        The limit (``SIGALRM``; main thread only).
    func
        The case; returns its record.

    Returns
    -------
    dict
        The case's record, ``{"timeout": seconds}``, or ``{"error": "Type: message"}``.
    """

    def alarm(signum: int, frame: object) -> None:
        raise CaseTimeout(f"over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return func()
    except CaseTimeout:
        return {"timeout": seconds}
    # The worker's process boundary around a third-party library: whatever the reference
    # raises (its own ZVError, numcodecs or zarr errors, NotImplementedError...) is recorded
    # as that case's "n/a" with the message, and the other cases still run.
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- the cases -------------------------------------------------------------------------------
def _write_case(lib: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Write into fresh directories up to ``repeat`` times within the budget; query the last.

    No store is deleted here: the run removes its directory at the end, because creating
    files soon after deleting many is slow on some file systems (see ``benchmarks/README``).
    """
    times: list[float] = []
    cpu: list[tuple[float, float]] = []
    while True:
        path = os.path.join(spec["store_dir"], f"store-{len(times)}.zv")
        seconds, used, _ = timed_write_cpu(partial(lib.write, path))
        times.append(seconds)
        cpu.append(used)
        if len(times) >= spec["repeat"] or sum(times) + seconds > spec["write_budget"]:
            return {"times": times, "cpu": cpu, "store": path}


def _counts(answer: dict[str, np.ndarray]) -> dict[str, int]:
    """Rows and (where returned) objects of an answer, for the report."""
    out = {"rows": int(answer["positions"].shape[0])}
    if "ids" in answer:
        out["objects"] = int(np.unique(answer["ids"]).shape[0])
    return out


def _read_all_case(lib: Any, store: str, spec: dict[str, Any], keep: Keep) -> dict[str, Any]:
    """Open and read everything, best of the repeats (each a fresh open)."""
    times, result = repeat_within(
        lambda: lib.read_all(lib.open(store)), spec["repeat"], spec["read_budget"]
    )
    answer = lib.answer(result)
    del result
    keep("read-all", answer)
    return {"times": times, **_counts(answer)}


def _lookup_case(
    lib: Any,
    store: str,
    spec: dict[str, Any],
    keep: Keep,
    name: str,
    calls: list[Callable[[Any], Any]],
) -> dict[str, Any]:
    """Per call: a fresh open and the first call (cold), then repeats on that handle, each
    after a garbage collection (warm), then repeats back to back (steady)."""
    per_call: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        t_open, handle = timed(partial(lib.open, store))
        t_first, result = timed(partial(call, handle))
        answer = lib.answer(result)
        del result
        keep(f"{name}-{i}", answer)
        warm, _ = repeat_within(partial(call, handle), spec["repeat"], spec["warm_budget"])
        steady = repeat_back_to_back(partial(call, handle), spec["repeat"], spec["warm_budget"])
        per_call.append(
            {
                "open": t_open,
                "cold": t_open + t_first,
                "warm": warm,
                "steady": steady,
                **_counts(answer),
            }
        )
    return {"per_call": per_call}


def _query(lib: Any, box: tuple[np.ndarray, np.ndarray], handle: Any) -> Any:
    return lib.query(handle, box)


def _by_id(lib: Any, ids: np.ndarray, handle: Any) -> Any:
    return lib.by_id(handle, ids)


def _box_calls(lib: Any, boxes: list[Any]) -> list[Callable[[Any], Any]]:
    return [
        partial(_query, lib, (np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)))
        for lo, hi in boxes
    ]


def _id_calls(lib: Any, id_sets: list[Any]) -> list[Callable[[Any], Any]]:
    return [partial(_by_id, lib, np.asarray(ids, dtype=np.int64)) for ids in id_sets]


def run_cases(
    lib: Any,
    spec: dict[str, Any],
    keep: Keep,
    save: Callable[[dict[str, Any]], None] = lambda results: None,
    say: Callable[[str], None] = lambda message: None,
) -> dict[str, Any]:
    """Every case of one data set with one library, each under the spec's time limit.

    Parameters
    ----------
    lib
        The library adapter (see the module docstring).
    spec
        The data set's spec.
    keep
        Called with a name and the answer of every read, first query of every box and
        first read of every id set.
    save
        Called with the results so far after every case.
    say
        Progress messages.

    Returns
    -------
    dict
        Case name -> record (``times``, ``per_call``, ``store``...), or ``error`` /
        ``timeout`` / ``skipped``.
    """
    os.makedirs(spec["store_dir"], exist_ok=True)
    lib.warm_up(spec["store_dir"])
    limit = float(spec["timeout"])
    results: dict[str, Any] = {}
    say("write")
    results["write"] = guarded(limit, lambda: _write_case(lib, spec))
    save(results)
    store = results["write"].get("store")
    cases: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("read all", partial(_read_all_case, lib, store, spec, keep))
    ]
    for label, boxes in spec["boxes"].items():
        calls = _box_calls(lib, boxes)
        cases.append((f"box {label}", partial(_lookup_case, lib, store, spec, keep, label, calls)))
    if spec["id_sets"]:
        calls = _id_calls(lib, spec["id_sets"])
        cases.append(("by id", partial(_lookup_case, lib, store, spec, keep, "ids", calls)))
    for name, case in cases:
        say(name)
        results[name] = {"skipped": "the write failed"} if store is None else guarded(limit, case)
        save(results)
    return results


# -- peak memory -----------------------------------------------------------------------------
def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _peak_kb() -> int:
    hwm = _status_kb("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        return False
    hwm, rss = _status_kb("VmHWM"), _status_kb("VmRSS")
    return hwm is not None and rss is not None and hwm - rss < 1024


def peak_write(write: Callable[[str], object], path: str) -> dict[str, Any]:
    """Write once and report the resident memory it added (call in a fresh process).

    The peak (``VmHWM``) is reset to the current RSS first by writing ``5`` to
    ``/proc/self/clear_refs``; without that (not Linux) ``ru_maxrss`` is used.

    Parameters
    ----------
    write
        The write, given ``path``; everything it needs is already in memory.
    path
        Where to write.

    Returns
    -------
    dict
        ``before_kb`` (RSS before), ``peak_kb``, ``seconds`` and ``method``.
    """
    peak_before = _peak_kb()
    reset = _reset_peak()
    before = _status_kb("VmRSS") if reset else peak_before
    seconds, _ = timed_write(lambda: write(path))
    return {
        "before_kb": before,
        "peak_kb": _peak_kb(),
        "seconds": seconds,
        "method": "VmHWM reset via clear_refs" if reset else "ru_maxrss (no reset)",
    }


# -- the reference library -------------------------------------------------------------------
def load_arrays(directory: str) -> dict[str, np.ndarray]:
    """Every ``NAME.npy`` of ``directory`` by ``NAME``.

    Parameters
    ----------
    directory
        A data directory of the spec.

    Returns
    -------
    dict
        The arrays.
    """
    return {p.stem: np.load(p) for p in sorted(Path(directory).glob("*.npy"))}


_GEOMETRY = {
    "points": "point_cloud",
    "streamlines": "streamline",
    "mesh": "mesh",
    "skeletons": "skeleton",
}


def _first_objects(arrays: dict[str, np.ndarray], count: int) -> dict[str, np.ndarray]:
    """The first ``count`` objects (or rows, for points) of a data set: warm-up data."""
    if "offsets" not in arrays:
        return {k: v[:count] for k, v in arrays.items()}
    offsets = arrays["offsets"]
    stop = int(offsets[count])
    out = {
        "positions": arrays["positions"][:stop],
        "offsets": offsets[: count + 1],
    }
    out.update({k: v[:stop] for k, v in arrays.items() if k.startswith("v_")})
    out.update({k: v[:count] for k, v in arrays.items() if k.startswith("o_")})
    if "links" in arrays:
        out["links"] = arrays["links"][: int(arrays["link_offsets"][count])]
        out["link_offsets"] = arrays["link_offsets"][: count + 1]
    return out


class ReferenceLibrary:
    """The reference ``zarr-vectors`` through its public API (``zv.create``, ``add_*``,
    ``zv.open``, ``Dataset.read(bbox=...)``, ``level(0).objects[ids]``).

    Parameters
    ----------
    spec
        The data set's spec; its arrays are loaded from ``data_dir``.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        import zarr_vectors as zv

        where = Path(zv.__file__).resolve()
        if zv.__version__ != EXPECTED_VERSION or not where.is_relative_to(
            Path(sys.prefix).resolve()
        ):
            raise RuntimeError(f"expected zarr-vectors {EXPECTED_VERSION} in {sys.prefix}: {where}")
        self.zv: Any = zv  # the reference's module (typed loosely: it is not ours)
        self.kind: str = spec["kind"]
        self.attribute: str = spec["attribute"]
        self.layout: dict[str, Any] = spec["layout"]
        self.arrays = load_arrays(spec["data_dir"])
        # The reference takes streamlines as lists of arrays: split once, outside the timing.
        self._lines = self._split(self.arrays) if self.kind == "streamlines" else ([], {})

    @staticmethod
    def _split(
        a: dict[str, np.ndarray],
    ) -> tuple[list[np.ndarray], dict[str, list[np.ndarray]]]:
        """Positions and vertex attributes as one array per streamline."""
        cut = a["offsets"][1:-1]
        attrs = {k[2:]: np.split(v, cut) for k, v in a.items() if k.startswith("v_")}
        return np.split(a["positions"], cut), attrs

    def _schema(self) -> Any:
        chunk, bins = self.layout["chunk"], self.layout["bin"]
        subcells = {round(c / b) for c, b in zip(chunk, bins, strict=True)}
        if len(subcells) != 1:
            raise ValueError(f"chunk {chunk} is not a whole number of bins {bins} on every axis")
        lo, hi = self.layout["bounds"]
        return self.zv.Schema(
            bounds=(tuple(lo), tuple(hi)),
            kind=_GEOMETRY[self.kind],
            layout=self.zv.Layout(
                cell_size=tuple(chunk),
                subcells=subcells.pop(),
                compression=self.layout["compression"],
            ),
        )

    def _add(self, ds: Any, a: dict[str, np.ndarray]) -> None:
        """One ``add_*`` call with the arrays ``a``."""
        attrs = {k[2:]: v for k, v in a.items() if k.startswith("v_")}
        objs = {k[2:]: v for k, v in a.items() if k.startswith("o_")}
        if self.kind == "points":
            ds.add_points(a["positions"], attributes=attrs)
            return
        offsets = a["offsets"]
        owner = np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))
        if self.kind == "streamlines":
            lines, line_attrs = self._split(a) if a is not self.arrays else self._lines
            ds.add_polylines(lines, attributes=line_attrs, object_attributes=objs, streamlines=True)
        elif self.kind == "mesh":
            ds.add_mesh(
                a["positions"],
                a["links"],
                attributes=attrs,
                object_attributes=objs,
                object_ids=owner,
            )
        else:
            ds.add_graph(
                a["positions"],
                a["links"],
                attributes=attrs,
                object_attributes=objs,
                object_ids=owner,
                tree=True,
            )

    def write(self, path: str) -> None:
        """Create the store with the spec's layout and add the whole data set."""
        ds = self.zv.create(path, schema=self._schema())
        self._add(ds, self.arrays)

    def open(self, path: str) -> Any:
        """``zv.open(path)``."""
        return self.zv.open(path)

    def query(self, ds: Any, box: tuple[np.ndarray, np.ndarray]) -> Any:
        """``ds.read(bbox=box)``."""
        return ds.read(bbox=box)

    def read_all(self, ds: Any) -> Any:
        """``ds.read()``."""
        return ds.read()

    def by_id(self, ds: Any, ids: np.ndarray) -> Any:
        """``ds.level(0).objects[ids]`` (the reference's read by id)."""
        return ds.level(0).objects[[int(i) for i in ids]]

    def answer(self, result: Any) -> dict[str, np.ndarray]:
        """A ``ReadResult`` as plain arrays."""
        out = {"positions": np.asarray(result.positions)}
        values = result.attributes.get(self.attribute)
        if values is not None:
            out["attr"] = np.asarray(values)
        if result.part_objects is not None and self.kind == "streamlines":
            out["ids"] = np.asarray(result.part_objects, dtype=np.int64)
            lengths = [s.stop - s.start for s in result.parts]
            out["offsets"] = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
        for name in ("faces", "edges"):
            links = getattr(result, name)
            if links is not None:
                out[name] = np.asarray(links)
        return out

    def warm_up(self, directory: str) -> None:
        """Write, read, query and read by id a tiny store of the same kind (untimed)."""
        path = os.path.join(directory, "warm-up.zv")
        shutil.rmtree(path, ignore_errors=True)
        ds = self.zv.create(path, schema=self._schema())
        self._add(ds, _first_objects(self.arrays, 1000 if self.kind == "points" else 2))
        ds = self.zv.open(path)
        ds.read()
        lo, hi = (np.asarray(c, dtype=float) for c in self.layout["bounds"])
        ds.read(bbox=(lo, lo + (hi - lo) / 2))
        if self.kind == "streamlines":
            self.by_id(ds, np.array([0, 1]))

    def versions(self) -> dict[str, str]:
        """Versions of the reference and of what it runs on."""
        import zarr

        return {
            "zarr-vectors": self.zv.__version__,
            "numpy": np.__version__,
            "zarr": zarr.__version__,
            "python": sys.version.split()[0],
        }


# -- the worker ------------------------------------------------------------------------------
def _save_answer(directory: str) -> Keep:
    os.makedirs(directory, exist_ok=True)

    def keep(name: str, answer: dict[str, np.ndarray]) -> None:
        np.savez(os.path.join(directory, f"{name}.npz"), **answer)  # type: ignore[arg-type]

    return keep


def _run(spec: dict[str, Any]) -> None:
    lib = ReferenceLibrary(spec)
    began = time.perf_counter()
    head = {"versions": lib.versions()}

    def save(results: dict[str, Any]) -> None:
        report = {**head, "seconds": time.perf_counter() - began, "cases": results}
        Path(spec["results"]).write_text(json.dumps(report, indent=1))

    def say(message: str) -> None:
        print(f"[reference] {spec['label']}: {message}", file=sys.stderr, flush=True)

    run_cases(lib, spec, _save_answer(spec["answers_dir"]), save, say)


def _peak(spec: dict[str, Any]) -> None:
    lib = ReferenceLibrary(spec)
    lib.warm_up(os.path.dirname(spec["peak_store"]))
    print(json.dumps(peak_write(lib.write, spec["peak_store"])))


def _write(spec: dict[str, Any], store: str) -> None:
    lib = ReferenceLibrary(spec)
    seconds, _ = timed_write(lambda: lib.write(store))
    print(json.dumps({"seconds": seconds}))


def main(argv: list[str]) -> int:
    """``run SPEC``, ``peak SPEC`` or ``write SPEC STORE`` (see the module docstring).

    Parameters
    ----------
    argv
        The command-line arguments after the script name.

    Returns
    -------
    int
        0, or 2 for a bad command line.
    """
    commands = {"run": 2, "peak": 2, "write": 3}
    if not argv or commands.get(argv[0]) != len(argv):
        usage = "usage: reference_worker.py {run,peak} SPEC.json | write SPEC.json STORE"
        print(usage, file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[1]).read_text())
    if argv[0] == "write":
        _write(spec, argv[2])
    else:
        (_run if argv[0] == "run" else _peak)(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
