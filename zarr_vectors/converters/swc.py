"""SWC neuron morphologies (plain text, no extra needed) ↔ skeleton stores.

An SWC file has one node per line, ``id type x y z radius parent``, ``#`` starting a comment
line and ``parent = -1`` marking a root. Ids are any distinct integers, in any order.

Import: one file holds one neuron, usually one tree. Each tree (each root with its
descendants) becomes one skeleton object, ids 0, 1, ... in the order of the roots in the
file, so a file of several trees gives several objects. Nodes keep their file order inside
their tree. Coordinates are float64 (``dtype="float32"`` for float32); the radius is float64
in ``radius``, the type int32 in ``swc_type`` and the file's node id int64 in ``swc_id``
(``keep_ids=False`` drops it). A line without seven columns, a number that does not parse,
an id used twice, a parent that is no node's id, and a cycle of parents are errors naming
the line.

Export writes every skeleton of the store (or ``ids=[...]``, in that order) into one file,
tree after tree, nodes renumbered 1..n. A tree whose stored node order already puts every
parent before its children keeps that order (an SWC file read in keeps its lines); another
is written in depth-first order from its root. Numbers are written with the fewest digits
that read back to the same value of their dtype. A store without ``radius`` gets radius 1,
one without ``swc_type`` type 0 (undefined).

Options
-------
Import: ``dtype`` (``"float64"`` or ``"float32"``), ``keep_ids`` (bool).
Export: ``ids`` (object ids to write).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors._version import __version__
from zarr_vectors.converters._common import atomic_output, check_options, read_selection, text_of
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.geometry.graphs import write_skeletons
from zarr_vectors.store.io import StoreLike

__all__ = ["SwcNodes", "export_store", "import_file", "parse_swc", "swc_text"]

IMPORT_OPTIONS = ("dtype", "keep_ids")
EXPORT_OPTIONS = ("ids",)
_COLUMNS = 7


@dataclass(frozen=True, slots=True)
class SwcNodes:
    """The nodes of an SWC file, in file order.

    Attributes
    ----------
    ids, types, parents
        ``(n,)`` int64 node id, structure type and parent id (-1 for a root).
    positions
        ``(n, 3)`` float64 coordinates.
    radius
        ``(n,)`` float64 radii.
    lines
        ``(n,)`` int64 line number (1-based) of each node, for messages.
    """

    ids: np.ndarray
    types: np.ndarray
    positions: np.ndarray
    radius: np.ndarray
    parents: np.ndarray
    lines: np.ndarray


def _integer(token: str, where: str) -> int:
    try:
        return int(token)
    except ValueError:
        pass
    try:
        value = float(token)
    except ValueError:
        raise InvalidInputError(f"{where}: {token!r} is not an integer") from None
    if not value.is_integer():
        raise InvalidInputError(f"{where}: {token!r} is not an integer")
    return int(value)


def _number(token: str, where: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise InvalidInputError(f"{where}: {token!r} is not a number") from None


def parse_swc(text: str, source: str = "SWC") -> SwcNodes:
    """The nodes of SWC text, checked for column count and number syntax.

    Parameters
    ----------
    text
        The file's text.
    source
        Name of the file, for messages.

    Raises
    ------
    InvalidInputError
        For a line without seven columns or with a number that does not parse (naming
        the line).
    """
    ints: list[tuple[int, int, int]] = []
    floats: list[tuple[float, float, float, float]] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = stripped.split()
        where = f"{source} line {number}"
        if len(parts) != _COLUMNS:
            raise InvalidInputError(
                f"{where}: expected 7 columns (id type x y z radius parent), got {len(parts)}"
            )
        ints.append(
            (_integer(parts[0], where), _integer(parts[1], where), _integer(parts[6], where))
        )
        floats.append(tuple(_number(p, where) for p in parts[2:6]))  # type: ignore[arg-type]
        lines.append(number)
    int_table = np.array(ints, dtype=np.int64).reshape(-1, 3)
    float_table = np.array(floats, dtype=np.float64).reshape(-1, 4)
    return SwcNodes(
        ids=int_table[:, 0],
        types=int_table[:, 1],
        positions=float_table[:, :3],
        radius=float_table[:, 3],
        parents=int_table[:, 2],
        lines=np.array(lines, dtype=np.int64),
    )


def parent_rows(nodes: SwcNodes, source: str = "SWC") -> np.ndarray:
    """``(n,)`` row of each node's parent (-1 for a root).

    Raises
    ------
    InvalidInputError
        For an id used twice, a parent that is no node's id, or a cycle (naming a line).
    """
    if nodes.ids.shape[0] == 0:
        return np.empty(0, dtype=np.int64)
    order = np.argsort(nodes.ids, kind="stable")
    sorted_ids = nodes.ids[order]
    twice = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
    if twice.shape[0]:
        row = int(max(order[twice[0]], order[twice[0] + 1]))
        raise InvalidInputError(
            f"{source} line {nodes.lines[row]}: node id {nodes.ids[row]} is used twice"
        )
    is_root = nodes.parents == -1
    slot = np.minimum(np.searchsorted(sorted_ids, nodes.parents), order.shape[0] - 1)
    known = is_root | (sorted_ids[slot] == nodes.parents)
    if not known.all():
        row = int(np.flatnonzero(~known)[0])
        raise InvalidInputError(
            f"{source} line {nodes.lines[row]}: parent {nodes.parents[row]} of node "
            f"{nodes.ids[row]} is not the id of any node (roots have parent -1)"
        )
    parents = np.where(is_root, -1, order[slot])
    _check_acyclic(parents, nodes, source)
    return parents


def _root_of(parents: np.ndarray) -> np.ndarray:
    """Each node's root by pointer doubling (a node on a cycle ends on the cycle)."""
    n = parents.shape[0]
    jump = np.where(parents < 0, np.arange(n), parents)
    steps = 1
    while steps < n:
        jump = jump[jump]
        steps *= 2
    return jump


def _check_acyclic(parents: np.ndarray, nodes: SwcNodes, source: str) -> None:
    roots = _root_of(parents)
    stuck = np.flatnonzero(parents[roots] >= 0)
    if stuck.shape[0]:
        row = int(roots[stuck[0]])
        raise InvalidInputError(
            f"{source} line {nodes.lines[row]}: node {nodes.ids[row]} is its own ancestor "
            "(the parent links form a cycle)"
        )


def tree_labels(parents: np.ndarray) -> np.ndarray:
    """``(n,)`` tree number of each node: 0, 1, ... in the order of the roots."""
    roots = _root_of(parents)
    root_rows = np.flatnonzero(parents < 0)
    rank = np.empty(parents.shape[0], dtype=np.int64)
    rank[root_rows] = np.arange(root_rows.shape[0])
    labels: np.ndarray = rank[roots]
    return labels


def import_file(
    fmt: str,
    src: Path,
    dst: StoreLike,
    *,
    overwrite: bool,
    chunk_shape: Any,
    bin_shape: Any,
    **options: Any,
) -> None:
    """Write the SWC file ``src`` as a skeleton store ``dst``: one object per tree.

    See the module docstring for the options.
    """
    check_options(fmt, options, IMPORT_OPTIONS)
    dtype = options.get("dtype", "float64")
    if dtype not in ("float64", "float32"):
        raise InvalidInputError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
    keep_ids = options.get("keep_ids", True)
    if not isinstance(keep_ids, bool):
        raise InvalidInputError(f"keep_ids must be true or false, got {keep_ids!r}")
    try:
        text = src.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{src} is not a text file: {exc}") from exc
    nodes = parse_swc(text, str(src))
    if nodes.ids.shape[0] == 0:
        raise InvalidInputError(f"{src} holds no node")
    parents = parent_rows(nodes, str(src))
    write_skeletons(
        dst,
        nodes.positions.astype(dtype),
        parents=parents,
        vertex_objects=tree_labels(parents),
        radius=nodes.radius,
        swc_type=nodes.types.astype(np.int32),
        attributes={"swc_id": nodes.ids} if keep_ids else None,
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        mode="w" if overwrite else "w-",
    )


def depth_first_order(parents: np.ndarray) -> np.ndarray:
    """Rows of one tree in depth-first preorder from its root (children in row order)."""
    n = parents.shape[0]
    by_parent = np.argsort(parents, kind="stable")
    starts = np.searchsorted(parents[by_parent], np.arange(n + 1))
    roots = np.flatnonzero(parents < 0)
    order: list[int] = []
    stack = roots[::-1].tolist()
    while stack:
        row = stack.pop()
        order.append(row)
        stack.extend(by_parent[starts[row] : starts[row + 1]][::-1].tolist())
    return np.asarray(order, dtype=np.int64)


def _writing_order(parents: np.ndarray) -> np.ndarray:
    """The stored order when parents come before children, else depth-first order."""
    rows = np.arange(parents.shape[0])
    if np.all(parents < rows):
        return rows
    return depth_first_order(parents)


def _local_parents(edges: np.ndarray, start: int, count: int) -> np.ndarray:
    """``(count,)`` parent row (local to the object) of rows ``start:start+count``."""
    parents = np.full(count, -1, dtype=np.int64)
    mine = (edges[:, 0] >= start) & (edges[:, 0] < start + count)
    parents[edges[mine, 0] - start] = edges[mine, 1] - start
    return parents


def swc_text(
    positions: np.ndarray,
    radius: np.ndarray,
    types: np.ndarray,
    parents: np.ndarray,
    first_id: int = 1,
) -> str:
    """SWC lines of one tree whose rows are in writing order (parents before children)."""
    ids = np.arange(first_id, first_id + positions.shape[0])
    parent_ids = np.where(parents < 0, -1, parents + first_id)
    columns = [
        ids.astype(str),
        types.astype(str),
        *(text_of(positions[:, d]) for d in range(3)),
        text_of(radius),
        parent_ids.astype(str),
    ]
    return "".join(" ".join(row) + "\n" for row in zip(*columns, strict=True))


def _tree_parts(found: Any, k: int, first_id: int) -> str:
    start, stop = int(found.offsets[k]), int(found.offsets[k + 1])
    count = stop - start
    parents = _local_parents(found.edges, start, count)
    order = _writing_order(parents)
    new_row = np.empty(count, dtype=np.int64)
    new_row[order] = np.arange(count)
    old_parents = parents[order]
    ordered_parents = np.where(old_parents < 0, -1, new_row[np.maximum(old_parents, 0)])
    rows = start + order
    radius = found.attributes.get("radius")
    types = found.attributes.get("swc_type")
    return swc_text(
        found.positions[rows],
        np.ones(count) if radius is None else radius[rows],
        np.zeros(count, np.int64) if types is None else types[rows],
        ordered_parents,
        first_id,
    )


def export_store(
    fmt: str, store: VectorStore, dst: Path, *, overwrite: bool, **options: Any
) -> None:
    """Write the skeletons of ``store`` as one SWC file ``dst``.

    See the module docstring for the options.
    """
    check_options(fmt, options, EXPORT_OPTIONS)
    if store.spatial_dims != 3:
        raise InvalidInputError(f"SWC holds 3-D nodes; the store is {store.spatial_dims}-D")
    found = read_selection(store, options.get("ids"))
    if found.offsets is None or found.object_ids is None or found.edges is None:
        raise InvalidInputError(f"{store!r} returned no skeleton objects")
    parts = [
        f"# SWC written by zarr_vectors {__version__}\n",
        "# id type x y z radius parent\n",
    ]
    for k in range(found.object_ids.shape[0]):
        parts.append(f"# object {int(found.object_ids[k])}\n")
        parts.append(_tree_parts(found, k, int(found.offsets[k]) + 1))
    with atomic_output(dst) as tmp:
        tmp.write_text("".join(parts), encoding="utf-8")
