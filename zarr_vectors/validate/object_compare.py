"""Whole-level comparisons of an object level with level 0 (spec §4.3.3, §11.6):
``L5.object_ids_same`` (object count, object attributes, groups) and the recomputation of
``L5.object_coarsening_reproduced``.
"""

from __future__ import annotations

import numpy as np

from zarr_vectors.format.names import GROUPINGS, OBJECT_ATTRIBUTES, OBJECT_INDEX
from zarr_vectors.query import ObjectReader
from zarr_vectors.result import QueryResult
from zarr_vectors.validate.context import Context
from zarr_vectors.validate.object_rules import REPRODUCERS, Coarsened, Recipe, offsets_of

__all__ = ["compare_globals", "reproduce", "same_array"]


def same_array(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Equal dtype, shape and bytes (NaN equals NaN of the same bits).

    Examples
    --------
    >>> same_array(np.array([np.nan]), np.array([np.nan])), same_array(np.ones(2), np.ones(3))
    (True, False)
    """
    if a is None or b is None:
        return a is b
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _groupings(reader: ObjectReader) -> np.ndarray | None:
    level = reader.reader
    if level.document(f"{level.base}/{GROUPINGS}/zarr.json") is None:
        return None
    return level.read_globals([GROUPINGS])[0]


def compare_globals(ctx: Context, base: ObjectReader, level: ObjectReader, number: int) -> None:
    """``L5.object_ids_same``: the level's object count, object attributes (and ids) and
    groups equal level 0's value for value."""
    fail = ctx.fail
    if level.n_objects != base.n_objects:
        fail(
            "L5.object_ids_same",
            f"{number}/{OBJECT_INDEX}/zarr.json",
            f"level {number} indexes {level.n_objects} objects, level 0 {base.n_objects}",
        )
        return
    names = sorted(set(base.object_attribute_names) | set(level.object_attribute_names))
    for name in names:
        known = name in base.object_attribute_names and name in level.object_attribute_names
        if not known or not same_array(base.object_attribute(name), level.object_attribute(name)):
            fail(
                "L5.object_ids_same",
                f"{number}/{OBJECT_ATTRIBUTES}/{name}",
                f"object attribute {name!r} of level {number} is not level 0's",
            )
    if not same_array(base.external_ids(), level.external_ids()):
        fail(
            "L5.object_ids_same",
            f"{number}/{OBJECT_ATTRIBUTES}",
            "object ids differ from level 0's",
        )
    same_groups = base.group_names() == level.group_names() and same_array(
        _groupings(base), _groupings(level)
    )
    ours, theirs = base.group_attributes(), level.group_attributes()
    same_groups &= ours.keys() == theirs.keys() and all(
        same_array(ours[n], theirs[n]) for n in ours
    )
    if not same_groups:
        fail("L5.object_ids_same", f"{number}/{GROUPINGS}", "groups differ from level 0's")


def reproduce(method: str, base: QueryResult, stored: QueryResult, recipe: Recipe) -> str | None:
    """Recompute a level from level 0 and compare it with the stored level.

    Parameters
    ----------
    method
        The level's ``coarsening.method``.
    base, stored
        Every object of level 0 and of the level, in id order.
    recipe
        The level's grid, kept objects and method parameters.

    Returns
    -------
    str or None
        None when ``method`` has no entry in :data:`REPRODUCERS`; ``""`` when the level is
        the recomputed one; else what differs.

    Raises
    ------
    InvalidInputError
        When level 0 cannot be coarsened (a skeleton that is no forest, a link between
        two objects: the L4 checks of level 0 report it).

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.kernels import CoarseGrid
    >>> line = zv.QueryResult(positions=np.array([[0.5], [0.7], [5.0]], np.float32),
    ...                       offsets=np.array([0, 3]))
    >>> recipe = Recipe(CoarseGrid((8.0,), (4.0,), (0,)), np.ones(1, bool))
    >>> coarse = zv.QueryResult(positions=line.positions[[0, 2]], offsets=np.array([0, 2]))
    >>> reproduce("runs", line, coarse, recipe)
    ''
    >>> reproduce("runs", line, line, recipe)
    "the objects' vertex counts are not those recomputed from level 0"
    """
    recompute = REPRODUCERS.get(method)
    if recompute is None:
        return None
    want = recompute(base, recipe)
    if not np.array_equal(offsets_of(stored), want.offsets):
        return "the objects' vertex counts are not those recomputed from level 0"
    if not same_array(stored.positions, want.positions):
        return "the vertices are not those recomputed from level 0"
    for name, values in base.attributes.items():
        if not same_array(stored.attributes.get(name), values[want.source]):
            return f"vertex attribute {name!r} is not carried from the source vertices"
    if want.links is None or want.link_source is None:
        return ""
    return _links_problem(base, stored, want, recipe)


def _links_problem(base: QueryResult, stored: QueryResult, want: Coarsened, recipe: Recipe) -> str:
    """Whether the stored links and their attributes are the recomputed ones, compared as
    sets of rows: a read returns a level's links in chunk order, not in link order, and an
    undirected edge in the orientation its storage gives (spec §10.5)."""
    assert want.links is not None
    assert want.link_source is not None
    links = stored.faces if stored.faces is not None else stored.edges
    found = np.zeros((0, want.links.shape[1]), np.int64) if links is None else links
    names = sorted(set(base.link_attributes) | set(stored.link_attributes))
    ours = [base.link_attributes[n][want.link_source] for n in names if n in base.link_attributes]
    theirs = [stored.link_attributes[n] for n in names if n in stored.link_attributes]
    if len(ours) != len(names) or len(theirs) != len(names):
        return "the link attributes are not level 0's"
    if recipe.within == "component" and not recipe.directed:  # stored as §10.5 orders them
        found, wanted = np.sort(found, axis=1), np.sort(want.links, axis=1)
    else:
        wanted = want.links
    found_order, want_order = _link_order(found), _link_order(wanted)
    if not same_array(found[found_order].astype(np.int64), wanted[want_order]):
        return "the links are not those recomputed from level 0"
    for name, a, b in zip(names, theirs, ours, strict=True):
        if not same_array(a[found_order], b[want_order]):
            return f"link attribute {name!r} is not carried from the level-0 links"
    return ""


def _link_order(links: np.ndarray) -> np.ndarray:
    """The order sorting the rows of ``links`` lexicographically."""
    if not links.shape[0]:
        return np.zeros(0, np.int64)
    return np.lexsort(links.T[::-1]).astype(np.int64)
