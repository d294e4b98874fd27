"""TrackVis TRK tractograms (via nibabel, extra ``tracts``) ↔ streamline stores: see
:mod:`~zarr_vectors.converters.tractograms` for what import and export keep, and the options.
"""

from __future__ import annotations

from zarr_vectors.converters.tractograms import tract_converter

__all__ = ["TRK"]

TRK = tract_converter("trk", ("reference",))
"""TrackVis TRK tractograms (nibabel, extra ``tracts``)."""
