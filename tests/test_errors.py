"""The exception classes: each reachable at the top level and subclassing its builtin."""

from __future__ import annotations

import pytest

import zarr_vectors as zv
from zarr_vectors import errors


@pytest.mark.parametrize("name", errors.__all__)
def test_every_error_class_is_exported_at_the_top_level(name: str) -> None:
    assert getattr(zv, name) is getattr(errors, name)
    assert name in zv.__all__


@pytest.mark.parametrize("name", [n for n in errors.__all__ if n != "ZarrVectorsError"])
def test_every_error_class_subclasses_ours_and_a_builtin(name: str) -> None:
    cls = getattr(errors, name)
    assert issubclass(cls, errors.ZarrVectorsError)
    builtins = [base for base in cls.__mro__ if base.__module__ == "builtins"]
    assert any(
        base is not Exception and base is not BaseException and base is not object
        for base in builtins
    ), f"{name} subclasses no specific builtin"


def test_a_misplaced_chunk_is_a_corrupt_chunk() -> None:
    """Callers catching CorruptChunkError (or ValueError) also catch a shard file found at
    another chunk's key (spec §9.0.2)."""
    assert issubclass(errors.MisplacedChunkError, errors.CorruptChunkError)
    assert issubclass(errors.MisplacedChunkError, ValueError)
