"""The in-memory result of a read or a query (one shape for every geometry kind).

Besides the numpy arrays it holds, a :class:`QueryResult` converts to shapely geometries
(:meth:`~QueryResult.to_shapely`), to a table of columns (:meth:`~QueryResult.to_table`,
:meth:`~QueryResult.to_pandas`), draws itself with matplotlib (:meth:`~QueryResult.plot`) and
shows a summary in notebooks (``_repr_html_``). The work is done in the sibling modules
``shapes``, ``tables``, ``plotting`` and ``summary``; the methods here are thin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from zarr_vectors._deprecation import renamed_keywords, warn_renamed
from zarr_vectors.format.metadata import DEFAULT_AXIS_NAMES
from zarr_vectors.result.plotting import MAX_POINTS, plot_result
from zarr_vectors.result.shapes import to_shapely as shapely_geometries
from zarr_vectors.result.summary import result_html, result_text
from zarr_vectors.result.tables import to_pandas as data_frame
from zarr_vectors.result.tables import to_table as table_columns

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["QueryResult"]


def _inferred_kind(result: QueryResult) -> str:
    """The kind the fields of ``result`` show: faces, edges, offsets or none of them."""
    if result.faces is not None:
        return "mesh"
    if result.edges is not None:
        return "graph"
    return "point_cloud" if result.offsets is None else "polyline"


@renamed_keywords(geometry_type="kind")
@dataclass(frozen=True, slots=True, repr=False)
class QueryResult:
    """What :meth:`VectorStore.read`, :meth:`~VectorStore.query` and
    :meth:`~VectorStore.read_objects` return: one GeoArrow-like shape for every kind.

    Attributes
    ----------
    positions
        ``(N, D)`` vertex coordinates, in the store's dtype.
    attributes
        Per-vertex attributes by name, each with one row per position.
    vertex_object_ids
        ``(N,)`` object id of each vertex, or None when the store has none.
    object_ids
        ``(M,)`` ids of the objects returned (object kinds), else None.
    offsets
        ``(M + 1,)``: object m owns rows ``offsets[m]:offsets[m+1]`` (traversal order for
        polylines), else None.
    edges
        ``(E, 2)`` row indices into ``positions`` (graphs: ``[u, v]``, ``[source, target]``
        when directed; skeletons: ``[child, parent]``; clipped polylines and streamlines:
        ``[r, r + 1]`` for the consecutive input vertices both kept, so an object that left
        the region and came back is not joined across the gap), else None (whole polylines:
        the consecutive rows of each object are linked). A read of whole objects of up to
        32,768 links returns them object by object (an edge belongs to the object of its
        first row), each object's in the same order whatever else the read holds; larger
        reads return them in storage order.
    faces
        ``(F, 3)`` row indices into ``positions`` (meshes, winding as written; ordered as
        ``edges``), else None.
    object_attributes
        Per-object attributes by name, one row per returned object.
    link_attributes
        Per-link attributes by name, one row per row of ``edges`` or ``faces``.
    axis_names
        Name of each coordinate column (a store's results carry its axis names), or None.
    axis_units
        Unit of each coordinate column (``"unknown"`` when not given), or None.
    kind
        The geometry kind (``"point_cloud"``, ``"streamline"``, ``"mesh"``...): the store's
        kind for the results of a store; when not given, inferred from the fields that are
        set: ``"mesh"`` when there are faces, ``"graph"`` when there are edges,
        ``"polyline"`` when there are offsets, else ``"point_cloud"``.
        (``geometry_type=`` is its deprecated name, and warns.)
    level
        The resolution level the result was read from (0: the data as written; see
        :attr:`VectorStore.levels <zarr_vectors.VectorStore.levels>`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> lines = [np.array([[0, 0, 0], [5, 5, 5.0]]), np.array([[20, 0, 0], [20, 9, 0.0]])]
    >>> zv.write_polylines(path, lines, chunk_shape=10.0, attributes={"fa": np.arange(4.0)})
    >>> result = zv.open(path).read()
    >>> result.kind, result.ndim, len(result), result.object_count
    ('polyline', 3, 4, 2)
    >>> result.offsets, result.attributes["fa"]
    (array([0, 2, 4]), array([0., 1., 2., 3.]))
    >>> result.coordinate_names
    ('x', 'y', 'z')

    A result can also be built by hand, e.g. to plot or convert your own arrays:

    >>> mine = zv.QueryResult(positions=np.zeros((2, 2)))
    >>> mine.kind, mine.ndim
    ('point_cloud', 2)
    """

    positions: np.ndarray
    attributes: dict[str, np.ndarray] = field(default_factory=dict)
    vertex_object_ids: np.ndarray | None = None
    object_ids: np.ndarray | None = None
    offsets: np.ndarray | None = None
    edges: np.ndarray | None = None
    faces: np.ndarray | None = None
    object_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    link_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    axis_names: tuple[str, ...] | None = None
    axis_units: tuple[str, ...] | None = None
    kind: str = ""
    level: int = 0

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", _inferred_kind(self))

    @property
    def ndim(self) -> int:
        """``D``, the number of coordinate columns."""
        return int(self.positions.shape[1])

    @property
    def geometry_type(self) -> str | None:
        """Deprecated spelling of :attr:`kind`."""
        warn_renamed("QueryResult.geometry_type", "QueryResult.kind", stacklevel=3)
        return self.kind

    @property
    def coordinate_names(self) -> tuple[str, ...]:
        """:attr:`axis_names`, or ``x, y, z, w`` (the first ``D``) when they are not known."""
        return self.axis_names if self.axis_names is not None else DEFAULT_AXIS_NAMES[: self.ndim]

    @property
    def object_count(self) -> int | None:
        """Number of objects returned, or None for point clouds."""
        return None if self.object_ids is None else int(self.object_ids.shape[0])

    def __len__(self) -> int:
        return int(self.positions.shape[0])

    def __repr__(self) -> str:
        return result_text(self)

    def _repr_html_(self) -> str:
        return result_html(self)

    def to_shapely(self, axes: Sequence[int | str] | None = None) -> np.ndarray:
        """Shapely geometries (an object array), built with shapely's vectorised constructors.

        Parameters
        ----------
        axes
            The coordinate axes to use, by index or name: 2 (planar) or 3 axes. Default:
            every axis for D <= 3 (3-D geometries keep z), the first two for meshes.
            4-D data needs ``axes``.

        Returns
        -------
        numpy.ndarray of shapely geometries
            * point clouds: one ``Point`` per vertex, in row order (aligned with
              :attr:`attributes`; ``shapely.multipoints(points)`` makes one ``MultiPoint``);
            * polylines and streamlines: one ``LineString`` per object, in object order
              (``LINESTRING EMPTY`` for an object with fewer than 2 vertices); a clipped
              result draws only its ``edges``: an object cut into several pieces is a
              ``MultiLineString`` of them, vertices linked to none are left out;
            * graphs and skeletons: one ``MultiLineString`` per object, one 2-point line per
              edge, in the order of :attr:`edges` (empty for an object without edges);
            * meshes: one triangle ``Polygon`` per face, in the order of :attr:`faces`
              (aligned with :attr:`link_attributes`), winding as stored.

        Raises
        ------
        InvalidInputError
            For bad ``axes``, or 4-D data without ``axes``.

        Examples
        --------
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> line = zv.QueryResult(positions=np.array([[0, 0], [1, 0], [1, 2.0]]),
        ...                       object_ids=np.array([0]), offsets=np.array([0, 3]))
        >>> [geometry.wkt for geometry in line.to_shapely()]
        ['LINESTRING (0 0, 1 0, 1 2)']
        >>> points = zv.QueryResult(positions=np.array([[0, 0, 1], [2, 3, 4.0]]))
        >>> [geometry.wkt for geometry in points.to_shapely(axes=["x", "y"])]
        ['POINT (0 0)', 'POINT (2 3)']
        """
        return shapely_geometries(self, axes)

    def to_table(self) -> dict[str, np.ndarray]:
        """One column per coordinate axis, per attribute column and the object id; no pandas.

        Returns
        -------
        dict of str to numpy.ndarray
            One row per vertex. Columns, in order: the axis names (:attr:`coordinate_names`);
            each vertex attribute, a ``(N, K)`` attribute as ``name[0]`` ... ``name[K-1]``
            (``name[i,j]`` for more dimensions); ``object_id`` when the vertices' object ids
            are known. Attribute columns share memory with the result.

        Raises
        ------
        InvalidInputError
            When two columns would get the same name (an attribute named like an axis).

        Examples
        --------
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> result = zv.QueryResult(positions=np.array([[0, 1, 2], [3, 4, 5.0]]),
        ...                         attributes={"rgb": np.array([[1, 2, 3], [4, 5, 6]])})
        >>> table = result.to_table()
        >>> list(table)
        ['x', 'y', 'z', 'rgb[0]', 'rgb[1]', 'rgb[2]']
        >>> table["rgb[1]"]
        array([2, 5])
        """
        return table_columns(self)

    def to_pandas(self) -> Any:
        """:meth:`to_table` as a ``pandas.DataFrame`` (needs the ``pandas`` extra).

        Raises
        ------
        MissingDependencyError
            When pandas is not installed.

        Examples
        --------
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> result = zv.QueryResult(positions=np.array([[0, 1], [3, 4.0]]),
        ...                         attributes={"size": np.array([7, 8])})
        >>> frame = result.to_pandas()
        >>> frame.columns.tolist(), frame.shape
        (['x', 'y', 'size'], (2, 3))
        """
        return data_frame(self)

    def plot(
        self,
        *,
        axes: Sequence[int | str] | None = None,
        color_by: str | None = None,
        ax: Axes | None = None,
        max_points: int = MAX_POINTS,
        cmap: str = "viridis",
        figsize: tuple[float, float] | None = None,
        **style: Any,
    ) -> Axes:
        """Draw the result with matplotlib (needs the ``plot`` extra).

        Points are a scatter, polylines and graph or skeleton edges line segments, meshes
        filled triangles; equal scale on every axis, axes labelled with names and units.
        See :func:`zarr_vectors.result.plotting.plot_result` for the parameters.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn into.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")   # no window: draw into memory
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> result = zv.QueryResult(positions=np.array([[0, 1], [3, 4], [5, 2.0]]),
        ...                         attributes={"size": np.array([1.0, 2.0, 3.0])})
        >>> ax = result.plot(color_by="size")
        >>> ax.get_xlabel(), ax.get_ylabel()
        ('x', 'y')
        >>> import matplotlib.pyplot as plt
        >>> plt.close("all")
        """
        return plot_result(
            self,
            axes=axes,
            color_by=color_by,
            ax=ax,
            max_points=max_points,
            cmap=cmap,
            figsize=figsize,
            **style,
        )

    @classmethod
    def empty(
        cls,
        ndim: int,
        dtype: Any,
        attributes: dict[str, tuple[Any, tuple[int, ...]]],
        object_id_dtype: Any | None,
    ) -> QueryResult:
        """A result with no vertex but the right dtypes and column shapes.

        Parameters
        ----------
        ndim
            ``D``, the number of coordinate columns.
        dtype
            The dtype of ``positions``.
        attributes
            Per attribute name, its ``(dtype, row shape)``: ``()`` for one value per vertex.
        object_id_dtype
            The dtype of ``vertex_object_ids``, or None for a result without them.

        Examples
        --------
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> none = zv.QueryResult.empty(3, np.float32, {"rgb": (np.uint8, (3,))}, None)
        >>> none.positions.shape, none.attributes["rgb"].shape, none.vertex_object_ids
        ((0, 3), (0, 3), None)
        """
        return cls(
            positions=np.empty((0, ndim), dtype=dtype),
            attributes={
                k: np.empty((0, *shape), dtype=dt) for k, (dt, shape) in attributes.items()
            },
            vertex_object_ids=None if object_id_dtype is None else np.empty(0, object_id_dtype),
        )
