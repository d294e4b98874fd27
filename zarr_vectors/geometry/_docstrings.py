"""Parameter documentation the writers share, written once and put into their docstrings.

A writer's docstring names a shared block on a line of its own (``{write_settings}``); the
decorator :func:`shared_docs` replaces it by the block, indented as the line is (a method's
docstring is indented further), so ``help()``, the API reference and the doctests see the
whole docstring.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from typing import TypeVar

__all__ = ["SHARED_DOCS", "shared_docs"]

F = TypeVar("F", bound=Callable[..., object])

SHARED_DOCS: dict[str, str] = {
    "units": """\
    units
        Unit of the coordinates: one name for every axis (``"micrometer"``) or one per
        axis; UDUNITS-2 names are recommended. Default: ``"unknown"`` (or
        ``options.axis_units``).""",
    "storage_options": """\
    storage_options
        URLs only: options of the fsspec filesystem (for S3: ``endpoint_url``, ``key``,
        ``secret``, ``anon``...), as for :func:`zarr_vectors.open`.""",
    "store": """\
    store
        Destination (a path, a ``.zip`` path, a URL or a zarr store).""",
    "positions": """\
    positions
        ``(n, D)`` vertex coordinates, D = 2, 3 or 4.""",
    "chunk_bin": """\
    chunk_shape, bin_shape
        Chunk and bin size per axis (one number for all axes), as for
        :func:`zarr_vectors.write_points`.""",
    "store_settings": """\
    {units}
    mode
        ``"w-"`` (default): create the store, refusing an existing one; ``"w"``: replace
        an existing Zarr Vectors store (never anything else); ``"a"``: add to an existing
        store of the kind, as the ``append_*`` functions do (it keeps its own chunk and
        bin shapes, units and options, so those are not given then).
    overwrite
        Deprecated: ``overwrite=True`` is ``mode="w"`` (and warns).
    options
        Less common settings (:class:`~zarr_vectors.WriteOptions`).
    progress
        Progress bar over the chunks written: None (default) on a terminal or in Jupyter,
        True always, False never, or a callable ``progress(stage, done, total)``.
    {storage_options}""",
    "object_columns": """\
    object_ids
        The id of each object (distinct integers), in the order of the objects. Reads
        and queries use and return these ids. Default: the labels of ``vertex_objects``
        (for the kinds that take it), else ``0..m-1``.
    attributes
        Per-vertex columns (one row per vertex, in input order; a skeleton's ``swc_id``,
        if given, must be integers).
    object_attributes
        Per-object columns (one row per object, in the order of the objects).
    groups
        ``{name_or_id: [object ids]}``: bundles, tracts, cell types...
    group_attributes
        Per-group columns (one row per group, in the order of ``groups``).""",
    "append_progress": """\
    progress
        Progress bars over the chunks written and merged: None (default) on a terminal or
        in Jupyter, True always, False never, or a callable ``progress(stage, done, total)``.""",
    "append_raises": """\
    Raises
    ------
    InvalidInputError
        For malformed input or input that does not match the store; nothing changes then.
    ConcurrentWriteError
        When another writer committed meanwhile without taking turns (spec §12.3); nothing
        changes then.""",
    "example_setup": """\
    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "example.zarr\"""",
    "write_raises": """\
    Raises
    ------
    InvalidInputError
        For malformed input, before anything is written.
    StoreExistsError
        When the destination holds data and ``mode`` is ``"w-"``.""",
}
SHARED_DOCS["object_settings"] = "\n".join(
    SHARED_DOCS[name] for name in ("object_columns", "chunk_bin", "store_settings")
)
"""Shared blocks of parameter documentation, by the name a docstring gives them."""


def shared_docs(func: F) -> F:
    """Put the :data:`SHARED_DOCS` blocks ``func``'s docstring names into it.

    Examples
    --------
    >>> @shared_docs
    ... def write(store):
    ...     '''Write.
    ...
    ...     Parameters
    ...     ----------
    ...     {append_progress}
    ...     '''
    >>> "Progress bars over the chunks written and merged" in write.__doc__
    True
    """
    doc, before = func.__doc__ or "", None
    while doc != before:  # a block may name other blocks
        before = doc
        doc = _BLOCK.sub(_block, doc)
    func.__doc__ = doc
    return func


_BLOCK = re.compile(r"^( *)\{(\w+)\}$", re.M)
"""A line naming a shared block: its indentation and the block's name."""


def _block(match: re.Match[str]) -> str:
    indent, name = match.groups()
    if name not in SHARED_DOCS:
        return match.group(0)
    return textwrap.indent(textwrap.dedent(SHARED_DOCS[name]), indent)
