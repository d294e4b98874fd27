"""Run every read path of a store and judge the answers against the undamaged store's.

A damaged store must give, on each read path, either an error of ours
(:class:`zarr_vectors.ZarrVectorsError`) or exactly the undamaged answer; never another
exception, a ``MemoryError``, an allocation over 1 GiB or a hang; and ``validate(level=3)``
must report an error with a check id whenever a read raised or differed.

Run ``python -m tests.corpus.harness [store...] [damage...] [--every-file]`` for every
failing case and the counts by category.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import resource
import shutil
import signal
import sys
import tempfile
import time
import tracemalloc
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numba.core import event as numba_event

import zarr_vectors as zv
from tests.corpus.damages import DAMAGES, Changes, Damage
from tests.corpus.stores import STORES
from zarr_vectors.validate import CHECKS

HUGE = 1 << 30
"""Allocations above this many bytes during one read are failures."""
SECONDS = 20.0
"""A read or a validation that runs longer than this, not counting the time numba spends
compiling kernels (the first use of a kernel in a fresh environment, with an empty numba
cache, compiles it inside the read: slow, but not a hang), hangs."""

BOX = ([2.0, 2.0, 2.0], [7.0, 7.0, 7.0])
SPHERE = ([6.0, 6.0, 6.0], 3.5)
TRIANGLE = [(1.0, 1.0), (11.0, 2.0), (4.0, 10.0)]
"""A polygon on the (x, y) plane, with z in ``[3, 9)``."""

Read = Callable[[zv.VectorStore], Any]

POINT_READS: dict[str, Read] = {
    "read": lambda st: st.read(progress=False),
    "box": lambda st: st.query(BOX),
    "region": lambda st: st.query(zv.ball(*SPHERE)),
    "polygon": lambda st: st.query(zv.polygon(TRIANGLE, ranges={"z": (3.0, 9.0)})),
    "to_dask": lambda st: st.to_dask(BOX, chunks_per_block=2).compute(scheduler="sync"),
}
OBJECT_READS: dict[str, Read] = {
    "read": lambda st: st.read(progress=False),
    "box": lambda st: st.query(BOX),
    "box_clipped": lambda st: st.query(BOX, clip=True),
    "region": lambda st: st.query(zv.ball(*SPHERE)),
    "polygon": lambda st: st.query(zv.polygon(TRIANGLE, ranges={"z": (3.0, 9.0)})),
    "by_id": lambda st: st.read_objects(np.asarray(st.object_ids)[[-1, 0]]),
    "group": lambda st: st.query(group="first"),
    "globals": lambda st: (
        st.object_ids,
        st.groups,
        st.group_attributes,
        {name: st.object_attribute(name) for name in st.object_attribute_names},
    ),
}

FAILURES = ("wrong", "foreign", "memory", "huge", "hang", "silent")
"""Categories of failure: a wrong answer, an exception not ours, a ``MemoryError``, an
allocation over :data:`HUGE`, a hang, and a damaging case validation did not report."""


class Hang(BaseException):
    """A read ran longer than :data:`SECONDS` (a BaseException: no ``except`` swallows it)."""


@dataclass(frozen=True)
class Outcome:
    """What one read path did: ``exact``, ``raised`` (our error) or a failure category."""

    path: str
    category: str
    detail: str = ""


@dataclass(frozen=True)
class Expected:
    """Failures a later format fixes (``fnmatch`` patterns of store, file, damage)."""

    store: str
    file: str
    damage: str
    reason: str

    def covers(self, store: str, file: str, damage: str) -> bool:
        return all(
            fnmatch.fnmatchcase(value, pattern)
            for value, pattern in ((store, self.store), (file, self.file), (damage, self.damage))
        )


NEEDS_FORMAT_1_2: list[Expected] = []
"""Cases that give a wrong answer in the format the library writes: the damage, and why no
reader or validator can tell. None is left since format 1.2 stores every chunk of a global
array (spec §9.8.1): a deleted chunk of object, group or cross-chunk link attributes read as
the fill value, a valid value there, before."""


@dataclass(frozen=True)
class Case:
    """One damage of one file of one store, and what every read path and validation did."""

    store: str
    file: str
    damage: str
    outcomes: tuple[Outcome, ...]
    validation: Outcome

    @property
    def name(self) -> str:
        return f"{self.store}:{self.file}:{self.damage}"

    @property
    def damaging(self) -> bool:
        return any(o.category != "exact" for o in self.outcomes)

    def failures(self) -> list[Outcome]:
        found = [o for o in self.outcomes if o.category in FAILURES]
        if self.validation.category != "exact":
            found.append(self.validation)
        return found

    @property
    def expected(self) -> Expected | None:
        return next(
            (e for e in NEEDS_FORMAT_1_2 if e.covers(self.store, self.file, self.damage)), None
        )


# -- running --------------------------------------------------------------------------------


class _CompileClock(numba_event.Listener):
    """Seconds numba spends compiling while registered (outermost compilations, the one
    in progress included)."""

    def __init__(self) -> None:
        self.depth = 0
        self.began = 0.0
        self.done = 0.0

    def on_start(self, event: Any) -> None:
        if self.depth == 0:
            self.began = time.perf_counter()
        self.depth += 1

    def on_end(self, event: Any) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.done += time.perf_counter() - self.began

    def seconds(self) -> float:
        """Compiling time so far."""
        running = time.perf_counter() - self.began if self.depth else 0.0
        return self.done + running


@contextmanager
def guarded() -> Iterator[None]:
    """Turn warnings into errors and a run longer than :data:`SECONDS` into :class:`Hang`.

    Time numba spends compiling kernels does not count: when the alarm finds that the run
    has spent less than :data:`SECONDS` outside compilations, it is set again for the rest.
    """
    clock = _CompileClock()
    begin = time.perf_counter()

    def on_alarm(signum: int, frame: Any) -> None:
        running = time.perf_counter() - begin - clock.seconds()
        if running < SECONDS:
            signal.setitimer(signal.ITIMER_REAL, max(SECONDS - running, 0.01))
            return
        raise Hang(f"no answer after {SECONDS} s (compiling kernels not counted)")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    numba_event.register("numba:compile", clock)  # type: ignore[no-untyped-call]
    signal.setitimer(signal.ITIMER_REAL, SECONDS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        numba_event.unregister("numba:compile", clock)  # type: ignore[no-untyped-call]


def _peak_rss() -> int:
    """The process's largest resident set so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def attempt(call: Callable[[], Any]) -> tuple[Any, Outcome]:
    """Run ``call`` guarded; its value and an outcome (``exact`` means "returned").

    Allocations are measured with :mod:`tracemalloc` when it is tracing (exact, but it
    doubles the time), else by the growth of the peak resident set (cheap; misses memory
    allocated and never touched).
    """
    tracing = tracemalloc.is_tracing()
    if tracing:
        tracemalloc.reset_peak()
    rss = _peak_rss()
    try:
        with guarded():
            value = call()
    except Hang as exc:
        return None, Outcome("", "hang", str(exc))
    except MemoryError as exc:
        return None, Outcome("", "memory", repr(exc)[:200])
    except zv.ZarrVectorsError as exc:
        return None, Outcome("", "raised", type(exc).__name__)
    except Exception as exc:  # noqa: BLE001 - every other exception is the finding
        return None, Outcome("", "foreign", f"{type(exc).__name__}: {exc}"[:300])
    peak = tracemalloc.get_traced_memory()[1] if tracing else _peak_rss() - rss
    if peak > HUGE:
        return value, Outcome("", "huge", f"{peak / 2**30:.1f} GiB allocated")
    return value, Outcome("", "exact")


def reads_of(kind: str) -> dict[str, Read]:
    return POINT_READS if kind == "point_cloud" else OBJECT_READS


def answers(root: Path, reads: dict[str, Read]) -> dict[str, tuple[Any, Outcome]]:
    """The value and outcome of every read path (each on a fresh handle)."""
    found = {}
    for name, read in reads.items():
        value, outcome = attempt(lambda read=read: read(zv.open(root)))
        found[name] = (value, dataclasses.replace(outcome, path=name))
    return found


def same(a: Any, b: Any) -> bool:
    """Exactly equal: arrays of the same dtype, shape and values (NaN equals NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and same(dataclasses.asdict(a), dataclasses.asdict(b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and bool(a == b)


def judge(found: tuple[Any, Outcome], baseline: Any) -> Outcome:
    value, outcome = found
    if outcome.category == "exact" and not same(value, baseline):
        return dataclasses.replace(
            outcome, category="wrong", detail="differs from the undamaged answer"
        )
    return outcome


def validation(root: Path, damaging: bool) -> Outcome:
    """``exact`` when validation behaved; else ``silent`` or the category of its failure."""
    report, outcome = attempt(lambda: zv.validate(root, level=3, progress=False))
    outcome = dataclasses.replace(outcome, path="validate")
    if outcome.category == "raised":
        return dataclasses.replace(
            outcome, category="foreign", detail=f"validate raised {outcome.detail}"
        )
    if outcome.category != "exact" or not damaging:
        return outcome
    if any(p.check_id in CHECKS for p in report.errors):
        return outcome
    return dataclasses.replace(outcome, category="silent", detail="no error reported")


@dataclass
class Corpus:
    """The undamaged stores, written once, and their answers."""

    where: Path
    baselines: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def store(self, name: str) -> Path:
        root = self.where / name
        if name not in self.baselines:
            shutil.rmtree(root, ignore_errors=True)  # left by a baseline that failed before
            STORES[name](root)
            reads = reads_of(zv.open(root).kind)
            found = answers(root, reads)
            bad = {k: o for k, (_, o) in found.items() if o.category != "exact"}
            assert not bad, f"the undamaged {name} store does not read: {bad}"
            self.baselines[name] = {k: v for k, (v, _) in found.items()}
        return root

    def files(self, name: str) -> dict[str, str]:
        """One file per array or document of store ``name`` (the middle one of each
        array's files in sorted order), by array; ``zarr.json`` files excluded."""
        return {array: keys[len(keys) // 2] for array, keys in self.all_files(name).items()}

    def all_files(self, name: str) -> dict[str, list[str]]:
        """Every file of store ``name`` but the ``zarr.json`` files, by array, sorted."""
        root = self.store(name)
        groups: dict[str, list[str]] = {}
        for p in sorted(root.rglob("*")):
            key = p.relative_to(root).as_posix()
            if p.is_file() and p.name != "zarr.json":
                groups.setdefault(key.split("/c/")[0], []).append(key)
        return groups

    def run(self, name: str, file: str, damage: Damage) -> Case | None:
        """Damage ``file`` of store ``name`` (put back afterwards); None when the damage
        does not apply."""
        root = self.store(name)
        changes = damage.changes(root, file)
        if changes is None:
            return None
        reads = reads_of(zv.open(root).kind)
        with damaged(root, changes):
            found = answers(root, reads)
            outcomes = tuple(judge(found[k], self.baselines[name][k]) for k in reads)
            damaging = any(o.category != "exact" for o in outcomes)
            checked = validation(root, damaging)
        return Case(name, file, damage.name, outcomes, checked)


@contextmanager
def damaged(root: Path, changes: Changes) -> Iterator[None]:
    """Apply ``changes`` to the store at ``root``; put every file back on exit."""
    saved = {key: (root / key).read_bytes() if (root / key).exists() else None for key in changes}
    made = []
    try:
        for key, raw in changes.items():
            file = root / key
            if raw is None:
                file.unlink()
                continue
            missing = [p for p in [file.parent, *file.parent.parents] if not p.exists()]
            file.parent.mkdir(parents=True, exist_ok=True)
            made += reversed(missing)
            file.write_bytes(raw)
        yield
    finally:
        for key, raw in saved.items():
            if raw is None:
                (root / key).unlink(missing_ok=True)
            else:
                (root / key).write_bytes(raw)
        for directory in reversed(made):
            directory.rmdir()


def cases(corpus: Corpus, name: str, damage: Damage, *, every_file: bool = False) -> list[Case]:
    """Every case of one store and one damage: one per array or document, or (``every_file``)
    one per stored file."""
    files = corpus.files(name).values()
    if every_file:
        files = [f for group in corpus.all_files(name).values() for f in group]
    found = []
    for file in files:
        case = corpus.run(name, file, damage)
        if case is not None:
            found.append(case)
    return found


def describe(case: Case) -> str:
    return f"{case.name}: " + "; ".join(
        f"{o.path} {o.category} {o.detail}".strip() for o in case.failures()
    )


def main(stores: list[str], damages: list[str], *, every_file: bool = False) -> None:
    """Print every failing case and the counts by category (of the given stores and
    damages, every one when none is given; ``every_file``: damage every stored file, not
    one per array)."""
    tracemalloc.start()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Corpus(Path(tmp))
        total, by_category, expected = 0, Counter[str](), 0
        for name in stores or STORES:
            for damage in [d for d in DAMAGES if not damages or d.name in damages]:
                for case in cases(corpus, name, damage, every_file=every_file):
                    total += 1
                    if not case.failures():
                        continue
                    if case.expected is not None:
                        expected += 1
                        continue
                    print(describe(case))
                    by_category.update({o.category for o in case.failures()})
        print(
            f"{total} cases; failing by category: {dict(by_category)}; needs format 1.2: {expected}"
        )


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--every-file"]
    main(
        [a for a in arguments if a in STORES],
        [a for a in arguments if a not in STORES],
        every_file="--every-file" in sys.argv,
    )
