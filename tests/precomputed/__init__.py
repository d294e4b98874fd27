"""Tests of the Neuroglancer precomputed sources, their server and a headless browser."""
