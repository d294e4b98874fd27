"""benchmarks.cold_open's split of a cold query: parts that do not overlap, add up to the
whole, and leave the timed functions as they were."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import zarr_vectors as zv
from benchmarks import cold_open
from benchmarks.objects import make_boxes
from zarr_vectors.kernels._jit import Kernel


def test_a_call_inside_a_timed_call_counts_once_in_the_outer_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [0.0]  # a clock the calls move on by hand
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    clock = cold_open._Outermost()
    calls = SimpleNamespace()

    def inner() -> None:
        now[0] += 2.0

    def outer() -> None:
        now[0] += 1.0
        calls.inner()

    calls.inner, calls.outer = inner, outer
    with clock.timing(calls, "inner", "inner"):
        with clock.timing(calls, "outer", lambda args: "outer"):
            calls.outer()
        calls.inner()
    assert calls.inner is inner  # put back when the scope ends
    assert dict(clock.seconds) == {"outer": 3.0, "inner": 2.0}


def test_the_split_of_a_cold_box_adds_up_and_restores_what_it_timed(tmp_path: Path) -> None:
    path, check = cold_open.skeleton_case(str(tmp_path))
    box = make_boxes(0.01, 5, 0)[0]
    before = [
        getattr(owner, name)
        for owner, name in [*((o, n) for _, o, n in cold_open._SPLIT), (Kernel, "__call__")]
    ]
    answers: list[bool] = []
    found = cold_open._split(lambda: answers.append(check(zv.open(path).query(box), box)), 2)
    after = [getattr(owner, name) for owner, name in [*((o, n) for _, o, n in cold_open._SPLIT)]]
    assert after == before[:-1]
    assert Kernel.__call__ is before[-1]
    assert answers == [True, True]
    assert set(found) == {cold_open._FILES, cold_open._DECODE, cold_open._KERNELS, cold_open._REST}
    for part in (cold_open._FILES, cold_open._DECODE, cold_open._KERNELS):
        assert all(seconds > 0 for seconds in found[part]), part  # a cold box does each
    assert all(seconds > 0 for seconds in found[cold_open._REST])  # no part counted twice
