"""One write path for every object kind: what a kind's writer takes, and how it writes.

Each per-kind module (:mod:`zarr_vectors.geometry`) declares, beside its ``write_*``
function, one :class:`KindWriter`: the names of its data arguments in positional order,
its own per-object keywords, its store-wide settings and its ``prepare_*`` function. The
one-shot writers, ``mode="a"`` and the ``append_*`` functions, :class:`ObjectWriter` and
the parallel object writer all bind their input by these names and write it with
:func:`write_kind`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zarr_vectors._deprecation import warn_renamed
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.store.io import StoreLike
from zarr_vectors.write import _writer_arguments as inputs
from zarr_vectors.write._objects import LevelBuilder, ObjectTable, write_objects
from zarr_vectors.write.imported_levels import ImportedLevels
from zarr_vectors.write.levels import Levels, level_settings

__all__ = ["KindWriter", "write_kind"]


@dataclass(frozen=True, slots=True)
class KindWriter:
    """What one kind's ``write_*`` function takes, declared once beside it.

    Attributes
    ----------
    writer
        The public writer's name (``"write_graph"``), for messages.
    kinds
        The kinds it writes; the first unless the store-wide ``kind`` names another.
    data
        Its data arguments, in positional order (``("positions", "edges")``).
    required
        The data arguments a batch must give.
    keywords
        Its own per-object keyword arguments (``vertex_objects``, ``edge_attributes``...);
        the per-object columns every object writer takes come on top.
    store_wide
        Its arguments a store keeps (``directed``, ``winding_order``...), given once per
        store: to ``prepare`` by keyword, never in a batch.
    prepare
        ``prepare(batch, **store_wide)``: the :class:`ObjectTable` of a batch given by name.
    renamed
        Deprecated names of data arguments, to the current ones (``{"vertices": "positions"}``).
    levels
        ``levels(settings)``: the builder of the kind's levels of detail (spec §4.3.3), or
        None when the kind's writer does not build them.
    """

    writer: str
    kinds: tuple[str, ...]
    data: tuple[str, ...]
    required: tuple[str, ...]
    keywords: tuple[str, ...]
    store_wide: tuple[str, ...]
    prepare: Callable[..., ObjectTable]
    renamed: Mapping[str, str] = field(default_factory=dict)
    levels: Callable[[Levels], LevelBuilder] | None = None

    @property
    def batch_names(self) -> frozenset[str]:
        """Every name a batch may give: data, own keywords and per-object columns."""
        return frozenset(self.data) | frozenset(self.keywords) | inputs.OBJECT_COLUMNS

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """A batch's arguments by name, from the ``write_*`` arguments after the store.

        Raises
        ------
        InvalidInputError
            For too many positional arguments, a name given twice, an unknown or
            missing argument.
        """
        if len(args) > len(self.data):
            raise InvalidInputError(
                f"bad batch for {self.writer}: it takes {len(self.data)} data arguments "
                f"({', '.join(self.data)}), got {len(args)}"
            )
        batch = dict(zip(self.data, args, strict=False))
        for name, value in kwargs.items():
            name = self._current_name(name)
            if name in batch:
                raise InvalidInputError(f"bad batch for {self.writer}: {name} is given twice")
            if name not in self.batch_names:
                raise InvalidInputError(
                    f"bad batch for {self.writer}: unexpected keyword argument {name!r}"
                )
            batch[name] = value
        missing = [name for name in self.required if batch.get(name) is None]
        if missing:
            raise InvalidInputError(
                f"bad batch for {self.writer}: missing {', '.join(missing)} "
                f"(its data arguments are {', '.join(self.data)})"
            )
        return batch

    def _current_name(self, name: str) -> str:
        new = self.renamed.get(name)
        if new is None:
            return name
        warn_renamed(f"{name}=", f"{new}=", stacklevel=6)
        return new


def write_kind(
    store: StoreLike,
    writer: KindWriter,
    batch: dict[str, Any],
    store_wide: Mapping[str, Any],
    arguments: Mapping[str, Any],
    levels: Any = None,
) -> None:
    """The one object write path: the body of every one-shot object writer
    (``write_graph``...), and what the appends and streaming writers write a batch with.

    Parameters
    ----------
    store
        The destination.
    writer
        The kind's writer.
    batch
        The objects: the writer's data and own per-object arguments, by name.
    store_wide
        The writer's arguments a store keeps (``directed``, ``winding_order``...), which
        an append takes from the store instead.
    arguments
        The writer's other keyword arguments: per-object columns
        (:class:`~zarr_vectors.write._writer_arguments.ObjectColumns`) and settings
        (:class:`~zarr_vectors.write._writer_arguments.WriteSettings`).
    levels
        Levels of detail to build (:func:`~zarr_vectors.write.levels.level_settings`), for
        kinds whose writer declares a builder.

    Raises
    ------
    InvalidInputError
        For an unknown setting or malformed input, before anything is written.
    StoreExistsError
        When the destination holds data and ``mode`` is ``"w-"``.
    """
    columns, settings = inputs.split_object_arguments(arguments, writer.writer)
    batch = {**batch, **columns}
    target = inputs.destination(
        store,
        settings.get("mode", "w-"),
        settings.get("overwrite"),
        settings.get("storage_options"),
        stacklevel=5,
    )
    builder = _level_builder(writer, levels)
    if target.mode == "a":
        if builder is not None:
            raise InvalidInputError(
                "levels= cannot be given with mode='a': an append keeps the store's settings"
            )
        inputs.check_append_settings(
            chunk_shape=settings.get("chunk_shape"),
            bin_shape=settings.get("bin_shape"),
            units=settings.get("units"),
            options=settings.get("options"),
        )
        append = inputs.append_function("objects")
        append(target.store, writer, batch, settings.get("progress"))
        return
    kind = str(store_wide.get("kind", writer.kinds[0]))
    chunk_shape, bin_shape = settings.get("chunk_shape"), settings.get("bin_shape")
    options = inputs.check_settings(
        kind,
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        options=settings.get("options"),
        units=settings.get("units"),
    )
    write_objects(
        target.store,
        writer.prepare(batch, **store_wide),
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        overwrite=target.overwrite,
        options=options,
        progress=settings.get("progress"),
        levels=builder,
        schedule=_schedule(levels),
    )


def _schedule(levels: Any) -> dict[str, Any] | None:
    """The ``level_schedule`` record of what ``levels`` asks for (spec §3.1), or None
    (also for levels given as they are, which follow no schedule)."""
    if isinstance(levels, ImportedLevels):
        return None
    settings = level_settings(levels)
    return None if settings is None else settings.to_schedule()


def _level_builder(writer: KindWriter, levels: Any) -> LevelBuilder | None:
    """The builder of the levels ``levels`` asks for, refusing kinds that have none
    (:class:`ImportedLevels` build themselves)."""
    if isinstance(levels, ImportedLevels):
        return levels
    settings = level_settings(levels)
    if settings is None:
        return None
    if writer.levels is None:
        raise InvalidInputError(
            f"{writer.writer} does not build levels of detail yet; write without levels="
        )
    return writer.levels(settings)
