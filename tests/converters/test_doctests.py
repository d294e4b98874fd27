"""Every public name of ``zarr_vectors.converters`` has an "Examples" section (they run as
doctests in ``tests/test_docstring_examples.py``, with every module of the package)."""

from __future__ import annotations

import zarr_vectors.converters


def test_every_public_name_has_examples() -> None:
    for name in zarr_vectors.converters.__all__:
        value = getattr(zarr_vectors.converters, name)
        if isinstance(value, str):
            continue  # a constant: documented where it is defined
        assert "Examples\n" in (value.__doc__ or ""), name
