"""The corpus harness's own rules: what counts as a hang, and a baseline that fails.

With an empty numba cache (a fresh checkout or path) the first read of the corpus compiled
its kernels inside the 20 s guard and was reported as a hang of the undamaged store, and
the next test then failed writing over the store that baseline had left. Compiling is not
hanging; a failed baseline reports its own failure again.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from numba.core import event as numba_event

import zarr_vectors as zv
from tests.corpus import harness
from tests.corpus.harness import Corpus, Outcome, attempt
from tests.corpus.stores import STORES


def _compiling_for(seconds: float) -> str:
    """Stand in for numba compiling a kernel for ``seconds`` (its compile events)."""
    with numba_event.trigger_event("numba:compile"):
        time.sleep(seconds)
    return "answer"


def test_time_spent_compiling_kernels_is_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness, "SECONDS", 0.1)
    value, outcome = attempt(lambda: _compiling_for(0.35))
    assert (value, outcome.category) == ("answer", "exact")


def test_a_run_longer_than_the_limit_outside_compiling_is_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(harness, "SECONDS", 0.1)
    began = time.perf_counter()

    def compiles_then_runs() -> str:
        _compiling_for(0.05)
        time.sleep(0.5)
        return "late"

    value, outcome = attempt(compiles_then_runs)
    assert (value, outcome.category) == (None, "hang")
    assert time.perf_counter() - began < 0.45  # stopped at the limit, not at the end


def test_a_failed_baseline_fails_again_the_same_way(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hung = Outcome("", "hang", "no answer")
    monkeypatch.setattr(harness, "answers", lambda root, reads: {"box": (None, hung)})
    monkeypatch.setitem(STORES, "tiny", lambda root: zv.write_points(root, np.ones((2, 3))))
    corpus = Corpus(tmp_path)
    for _ in range(2):  # the second time, not "already holds a Zarr Vectors store"
        with pytest.raises(AssertionError, match="does not read"):
            corpus.store("tiny")
