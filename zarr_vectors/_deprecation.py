"""Old spellings of the public API: warn once per call, naming the new spelling."""

from __future__ import annotations

import warnings


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is a deprecated spelling of ``new``.

    Parameters
    ----------
    old, new
        The deprecated and the current spelling, as a user would write them
        (``"overwrite=True"``, ``'mode="w"'``).
    stacklevel
        Passed to :func:`warnings.warn`; the default points at the caller's caller.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_renamed("overwrite=True", 'mode="w"')
    >>> print(caught[0].message)
    overwrite=True is deprecated; use mode="w" instead
    """
    warnings.warn(
        f"{old} is deprecated; use {new} instead", DeprecationWarning, stacklevel=stacklevel
    )
