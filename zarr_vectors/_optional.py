"""Optional dependencies: import one, or say which extra installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from zarr_vectors.errors import MissingDependencyError

__all__ = ["require"]


def require(module: str, *, extra: str | None, purpose: str) -> ModuleType:
    """Import an optional dependency, or say which extra installs it.

    Parameters
    ----------
    module
        Module to import (``"nibabel"``).
    extra
        The zarr-vectors extra that installs it (``"tracts"``), or None.
    purpose
        What it is needed for, for the message (``"reading .trk files"``).

    Raises
    ------
    MissingDependencyError
        When the module cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        hint = f"pip install 'zarr-vectors[{extra}]'" if extra else f"pip install {module}"
        raise MissingDependencyError(
            f"{purpose} needs the {module.split('.')[0]} package: {hint}"
        ) from exc
