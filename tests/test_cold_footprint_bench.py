"""benchmarks.cold_footprint: cachegrind's summary read right, a query's counts made from
two children's totals, and the children's work itself (run here without valgrind)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks import cold_footprint

SUMMARY = """\
==19229== Cachegrind, a cache and branch-prediction profiler
==19229== I   refs:      6,752,183,147
==19229== I1  misses:       78,041,265
==19229== LLi misses:          264,192
==19229== I1  miss rate:          1.16%
==19229== D   refs:      2,979,406,960  (1,993,370,213 rd   + 986,036,747 wr)
==19229== D1  misses:      120,603,095  (  106,154,036 rd   +  14,449,059 wr)
==19229== LLd misses:       11,021,140  (    9,540,163 rd   +   1,480,977 wr)
==19229== LL refs:         198,644,360  (  184,195,301 rd   +  14,449,059 wr)
"""


def test_the_summary_gives_every_count_of_the_table() -> None:
    assert cold_footprint.parse_summary(SUMMARY) == {
        "instructions": 6_752_183_147,
        "L1 instruction misses": 78_041_265,
        "last-level instruction misses": 264_192,
        "L1 data misses": 120_603_095,
        "last-level data misses": 11_021_140,
    }


def test_a_query_counts_what_its_child_ran_beyond_the_baseline() -> None:
    totals = {"instructions": 6_752_183_147, "L1 data misses": 120_603_095}
    baseline = {"instructions": 6_151_459_481, "L1 data misses": 111_770_552}
    assert cold_footprint.per_query(totals, baseline, 20) == {
        "instructions": pytest.approx(30_036_183.3),
        "L1 data misses": pytest.approx(441_627.15),
    }


def test_the_children_run_the_boxes_on_a_store_answering_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(In the test run's kernel mode: compiling every kernel is the benchmark's business.)"""
    monkeypatch.setattr(cold_footprint, "set_kernel_mode", lambda mode: mode)
    assert cold_footprint._prepare(str(tmp_path))
    for mode in ("none", "ours", "floor"):
        cold_footprint._child(mode, str(tmp_path), 1)


def test_without_valgrind_it_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert cold_footprint.main([]) == 2
    assert "apt-get install valgrind" in capsys.readouterr().out
