"""TRX tractograms (via trx-python, extra ``tracts``) ↔ streamline stores: see
:mod:`~zarr_vectors.converters.tractograms` for what import and export keep, and the options.
"""

from __future__ import annotations

from zarr_vectors.converters.tractograms import tract_converter

__all__ = ["TRX"]

TRX = tract_converter("trx", ("reference", "dtype"))
"""TRX tractograms (trx-python, extra ``tracts``)."""
