"""Old spellings of the public API: warn once per call, naming the new spelling."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


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


def renamed_keywords(**renamed: str) -> Callable[[type[T]], type[T]]:
    """A class decorator: its constructor takes the old keyword names too, and warns.

    ``renamed`` maps an old keyword to the current one (``geometry_type="kind"``). The
    class keeps its own ``__init__`` (a dataclass keeps its generated one, its fields and
    its signature); the wrapper only renames the old keywords and warns.

    Examples
    --------
    >>> import dataclasses, warnings
    >>> @renamed_keywords(colour="color")
    ... @dataclasses.dataclass
    ... class Pen:
    ...     color: str = "black"
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     pen = Pen(colour="red")
    >>> pen.color, str(caught[0].message)
    ('red', 'Pen(colour=...) is deprecated; use Pen(color=...) instead')
    """

    def decorate(cls: type[T]) -> type[T]:
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self: T, *args: Any, **kwargs: Any) -> None:
            for old, new in renamed.items():
                if old not in kwargs:
                    continue
                warn_renamed(f"{cls.__name__}({old}=...)", f"{cls.__name__}({new}=...)")
                if new in kwargs:
                    raise TypeError(f"give {new}= only ({old}= is its deprecated name)")
                kwargs[new] = kwargs.pop(old)
            init(self, *args, **kwargs)

        cls.__init__ = __init__  # type: ignore[assignment, method-assign]
        return cls

    return decorate
