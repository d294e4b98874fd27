"""Corruption corpus of the data files: every array and document that is not a ``zarr.json``,
of every kind, under every damage of :data:`tests.corpus.damages.DAMAGES`.

Each case damages one file of a tiny store and asserts that every read path (``read``, box,
clipped box, sphere, by id, group, the global arrays, ``to_dask``) raises one of our errors
or returns exactly the undamaged answer, with no ``MemoryError``, allocation over 1 GiB or
hang, and that ``validate(level=3)`` reports an error with a check id whenever a read raised
or differed. The default run takes a deterministic sample (every array of every store once,
the damages rotated over them); ``pytest -m slow tests/corpus`` runs the whole corpus (minutes), and
``python -m tests.corpus.harness`` prints its table.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator

import numpy as np
import pytest

import zarr_vectors as zv
from tests.corpus import harness
from tests.corpus.damages import DAMAGES
from tests.corpus.harness import Case, Corpus, cases, describe
from tests.corpus.stores import STORES


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return Corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture
def traced() -> Iterator[None]:
    """Measure every allocation (the sample only watches the resident set, which is cheaper)."""
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def unexpected(found: list[Case]) -> list[str]:
    """The failing cases no entry of :data:`NEEDS_FORMAT_1_2` covers."""
    return [describe(c) for c in found if c.failures() and c.expected is None]


def sample(corpus: Corpus, store: str) -> list[Case]:
    """One damage per file of ``store``, rotated so every damage meets every kind."""
    offset = list(STORES).index(store)
    found = []
    for i, file in enumerate(corpus.files(store).values()):
        for k in range(len(DAMAGES)):  # the next damage that applies to this file
            case = corpus.run(store, file, DAMAGES[(i + offset + k) % len(DAMAGES)])
            if case is not None:
                found.append(case)
                break
    return found


@pytest.mark.parametrize("store", list(STORES))
def test_sampled_damages_give_our_error_or_the_right_answer(corpus: Corpus, store: str) -> None:
    found = sample(corpus, store)
    assert len(found) == len(corpus.files(store))
    assert not unexpected(found), "\n".join(unexpected(found))


@pytest.mark.slow  # the whole corpus takes minutes: pytest -m slow tests/corpus
@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
@pytest.mark.parametrize("store", list(STORES))
def test_every_damage_gives_our_error_or_the_right_answer(
    corpus: Corpus, traced: None, store: str, damage: object
) -> None:
    found = cases(corpus, store, damage)  # type: ignore[arg-type]
    assert found
    assert not unexpected(found), "\n".join(unexpected(found))
    stale = [c.name for c in found if c.expected is not None and not c.failures()]
    assert not stale, f"cases marked 'needs format 1.2' now pass; unmark them: {stale}"


def test_every_array_of_every_store_is_in_the_corpus(corpus: Corpus) -> None:
    """The corpus damages a file of each array and document (``zarr.json`` excluded)."""
    for store in STORES:
        root = corpus.store(store)
        arrays = {
            p.relative_to(root).as_posix().split("/c/")[0]
            for p in root.rglob("*")
            if p.is_file() and p.name != "zarr.json"
        }
        assert set(corpus.files(store)) == arrays
    graph = set(corpus.files("graph"))
    for family in ("link_attributes/e", "cross_chunk_link_attributes/e", "groupings_attributes/w"):
        assert f"0/{family}" in graph


def _raise(exc: BaseException) -> None:
    raise exc


def test_the_harness_tells_each_outcome(monkeypatch: pytest.MonkeyPatch, traced: None) -> None:
    monkeypatch.setattr(harness, "SECONDS", 0.2)
    outcomes = {
        "exact": lambda: 1,
        "raised": lambda: _raise(zv.CorruptChunkError("damaged")),
        "foreign": lambda: _raise(IndexError("index 9 is out of bounds")),
        "memory": lambda: _raise(MemoryError()),
        "hang": lambda: time.sleep(5),
        "huge": lambda: np.empty(harness.HUGE + 1, np.uint8),  # never touched
    }
    for category, call in outcomes.items():
        assert harness.attempt(call)[1].category == category
    assert harness.judge((np.zeros(2), harness.Outcome("read", "exact")), np.ones(2)).category == (
        "wrong"
    )
    assert harness.same({"a": (np.arange(3), None)}, {"a": (np.arange(3), None)})
    assert not harness.same(np.arange(3), np.arange(3).astype(np.int32))
