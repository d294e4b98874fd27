"""The "Examples" sections of ``zarr_vectors.converters`` run as doctests."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

import zarr_vectors.converters
import zarr_vectors.converters.converter
import zarr_vectors.converters.registry


@pytest.mark.parametrize(
    "module",
    [
        zarr_vectors.converters,
        zarr_vectors.converters.converter,
        zarr_vectors.converters.registry,
    ],
    ids=lambda m: m.__name__,
)
def test_examples_run(module: ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0
    assert result.failed == 0


def test_every_public_name_has_examples() -> None:
    for name in zarr_vectors.converters.__all__:
        value = getattr(zarr_vectors.converters, name)
        if isinstance(value, str):
            continue  # a constant: documented where it is defined
        assert "Examples\n" in (value.__doc__ or ""), name
