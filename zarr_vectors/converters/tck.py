"""MRtrix TCK tractograms (via nibabel, extra ``tracts``) ↔ streamline stores: see
:mod:`~zarr_vectors.converters.tractograms` for what import and export keep, and the options.
"""

from __future__ import annotations

from zarr_vectors.converters.tractograms import tract_converter

__all__ = ["TCK"]

TCK = tract_converter("tck", ())
"""MRtrix TCK tractograms (nibabel, extra ``tracts``)."""
