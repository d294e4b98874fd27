"""Format layer: spec constants, metadata models and byte layouts (no zarr, no numba).

Submodules
----------
fragments
    Fragment-index blob v1 "ZVFG" codec (spec §6).
manifest
    Object manifest blobs and the object_index data/offsets container (spec §7).
"""
