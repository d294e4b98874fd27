"""The benchmarks' steady-state timer (runs back to back, no collection between them) and
the allocator they settle before timing floors."""

from __future__ import annotations

import gc
import json
import os
import platform
import subprocess
import sys
from types import SimpleNamespace

import pytest

from benchmarks import _measure
from benchmarks._measure import REPO_ROOT, back_to_back


def test_runs_repeat_times_within_the_budget() -> None:
    calls: list[int] = []
    times = back_to_back(lambda: calls.append(1), 7, 10.0)
    assert len(times) == len(calls) == 7
    assert all(t >= 0 for t in times)


def test_stops_before_a_run_that_would_pass_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(_measure, "time", SimpleNamespace(perf_counter=lambda: now[0]))

    def takes_two_seconds() -> None:
        now[0] += 2.0

    assert back_to_back(takes_two_seconds, 50, 5.0) == [2.0, 2.0]  # a third: 6 s > 5 s
    assert back_to_back(takes_two_seconds, 50, 0.0) == [2.0]  # at least one run


def test_collects_once_before_the_runs_only() -> None:
    collections: list[str] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            collections.append(phase)

    gc.callbacks.append(seen)
    try:
        back_to_back(lambda: collections.append("run"), 3, 10.0)
    finally:
        gc.callbacks.remove(seen)
    assert collections == ["start", "run", "run", "run"]


_FLOOR_ROUNDS = """
import json, resource
from benchmarks._measure import settle_allocator
SIZES = (1_200_000, 1_600_000, 400_000, 1_600_000)  # the skeleton floor's arrays

def faults_of_a_round():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [bytearray(n) for n in SIZES]
    after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    del blocks
    return after - before

before = [faults_of_a_round() for _ in range(4)]
settle_allocator()
after = [faults_of_a_round() for _ in range(4)]
print(json.dumps([before, after]))
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc's dynamic mmap threshold",
)
def test_a_settled_allocator_reuses_the_memory_of_floor_sized_arrays() -> None:
    # glibc's own defaults: a MALLOC_*_ variable (dask's LocalCluster exports
    # MALLOC_TRIM_THRESHOLD_ into the test process) fixes the thresholds for good.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.pop("GLIBC_TUNABLES", None)
    out = subprocess.run(
        [sys.executable, "-c", _FLOOR_ROUNDS],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    before, after = json.loads(out.stdout)
    assert before[-1] > 500  # a fresh process faults the floor's ~4.8 MB in every round
    assert after[-1] < 50  # settled: the rounds after the first reuse the heap
