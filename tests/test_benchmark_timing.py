"""The benchmarks' steady-state timer: runs back to back, no collection between them."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest

from benchmarks import _measure
from benchmarks._measure import back_to_back


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
