"""Reading the chunk layout of an array ``zarr.json``: grid, sharding and codec chains (spec §9.0).

Inner codec chains: ``[bytes, crc32c]`` for blob arrays (required; from format 1.4 also
``[bytes, blosc, crc32c]``) and ``[bytes, blosc, crc32c]`` for numeric arrays (the library's
settings; other chains only draw a warning).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zarr_vectors.format.codecs import LZ4_BITSHUFFLE
from zarr_vectors.format.jsonutil import as_int_list

__all__ = [
    "grid_problem",
    "inner_chunk_shape",
    "inner_codecs",
    "is_blob_chain",
    "is_default_chain",
    "is_index_chain",
    "is_sharded",
    "regular_chunk_shape",
    "shard_chunks",
    "sharding_problems",
]


def _sharding_config(doc: dict[str, Any]) -> dict[str, Any] | None:
    codecs = doc.get("codecs")
    if not isinstance(codecs, list) or len(codecs) != 1 or not isinstance(codecs[0], dict):
        return None
    if codecs[0].get("name") != "sharding_indexed":
        return None
    conf = codecs[0].get("configuration")
    return conf if isinstance(conf, dict) else None


def is_sharded(doc: dict[str, Any]) -> bool:
    """Whether any codec of the array is ``sharding_indexed``."""
    codecs = doc.get("codecs")
    return isinstance(codecs, list) and any(
        isinstance(c, dict) and c.get("name") == "sharding_indexed" for c in codecs
    )


def regular_chunk_shape(doc: dict[str, Any]) -> list[int] | None:
    """The chunk shape of a ``regular`` chunk grid, else None."""
    grid = doc.get("chunk_grid")
    if not isinstance(grid, dict) or grid.get("name") != "regular":
        return None
    conf = grid.get("configuration")
    return as_int_list(conf.get("chunk_shape")) if isinstance(conf, dict) else None


def grid_problem(doc: dict[str, Any]) -> str | None:
    """Why the shape and chunk grid of an array ``zarr.json`` cannot be read, or None.

    The shape must be a list of integers ``>= 0`` and the grid ``regular`` with one chunk
    length ``>= 1`` per dimension (Zarr v3 core): a chunk length of 0 made readers divide
    by zero. Shared by the reader and the validator.
    """
    shape = as_int_list(doc.get("shape"))
    if shape is None or min(shape, default=0) < 0:
        return f"shape must be a list of integers >= 0, got {doc.get('shape')!r}"
    chunks = regular_chunk_shape(doc)
    if chunks is None or len(chunks) != len(shape) or min(chunks, default=1) < 1:
        return (
            f"chunk_grid must be regular with {len(shape)} chunk lengths >= 1, got "
            f"{doc.get('chunk_grid')!r}"
        )
    return None


def shard_chunks(doc: dict[str, Any], ndim: int) -> tuple[int, ...] | None:
    """``S``, spatial chunks per shard along each axis (spec §9.0.1); None if unreadable."""
    shape = regular_chunk_shape(doc)
    if shape is None or len(shape) < ndim or min(shape[:ndim], default=1) < 1:
        return None
    return tuple(shape[:ndim])


def inner_chunk_shape(doc: dict[str, Any]) -> list[int] | None:
    """The inner chunk (row block) shape of a sharded array, else None."""
    conf = _sharding_config(doc)
    return as_int_list(conf.get("chunk_shape")) if conf is not None else None


def inner_codecs(doc: dict[str, Any]) -> list[Any] | None:
    """The codec list inside the shards of a sharded array, else None."""
    conf = _sharding_config(doc)
    codecs = conf.get("codecs") if conf is not None else None
    return codecs if isinstance(codecs, list) else None


def _codec(item: Any, name: str) -> dict[str, Any] | None:
    """The configuration of codec ``item`` if it is named ``name`` ({} when absent)."""
    if not isinstance(item, dict) or item.get("name") != name:
        return None
    conf = item.get("configuration", {})
    return conf if isinstance(conf, dict) else None


def _without_crc(codecs: list[Any]) -> list[Any] | None:
    """The chain before its trailing ``crc32c`` codec; None when it does not end with one."""
    if codecs and _codec(codecs[-1], "crc32c") == {}:
        return codecs[:-1]
    return None


def _is_little_bytes(item: Any, *, optional: bool) -> bool:
    conf = _codec(item, "bytes")
    if conf is None:
        return False
    return conf.get("endian") == "little" or (optional and "endian" not in conf)


def is_index_chain(codecs: Any) -> bool:
    """``[bytes little, crc32c]``: the only shard index codecs of the spec."""
    return (
        isinstance(codecs, list)
        and len(codecs) == 2
        and _is_little_bytes(codecs[0], optional=False)
        and _codec(codecs[1], "crc32c") == {}
    )


def is_blob_chain(codecs: list[Any], *, compressed: bool = False) -> bool:
    """Inner codecs of a blob array: ``[bytes, crc32c]`` (spec §9.2), or from format 1.4
    (``compressed``) also ``[bytes, blosc, crc32c]`` with any Blosc settings (§9.0.4)."""
    chain = _without_crc(codecs)
    if chain is None or not chain or _codec(chain[0], "bytes") is None:
        return False
    return len(chain) == 1 or (compressed and len(chain) == 2 and _blosc_ok(chain[1]))


def _blosc_ok(item: Any) -> bool:
    """A Blosc codec whose settings a reader can use: a name, a level and a shuffle."""
    conf = _codec(item, "blosc")
    return (
        conf is not None
        and isinstance(conf.get("cname"), str)
        and isinstance(conf.get("clevel"), int)
        and conf.get("shuffle") in ("noshuffle", "shuffle", "bitshuffle")
    )


def is_default_chain(
    codecs: list[Any], itemsize: int, allowed: Sequence[dict[str, Any]] = (LZ4_BITSHUFFLE,)
) -> bool:
    """A library numeric chain ``[bytes, blosc, crc32c]`` with the Blosc settings of one of
    ``allowed`` (default: LZ4 level 5 with bit shuffle, spec §9.0; format 1.4 adds the zstd
    chains of §9.0.4, :func:`~zarr_vectors.format.codecs.library_chains`)."""
    chain = _without_crc(codecs)
    if chain is None or len(chain) != 2:
        return False
    if not _is_little_bytes(chain[0], optional=itemsize == 1):
        return False
    blosc = _codec(chain[1], "blosc")
    return blosc is not None and any(
        blosc == {"typesize": itemsize, **settings, "blocksize": 0} for settings in allowed
    )


def _separator(doc: dict[str, Any]) -> Any:
    encoding = doc.get("chunk_key_encoding")
    if not isinstance(encoding, dict) or encoding.get("name") != "default":
        return None
    conf = encoding.get("configuration", {})
    return conf.get("separator", "/") if isinstance(conf, dict) else None


def sharding_problems(doc: dict[str, Any], shape: tuple[int, ...] | None, ndim: int) -> list[str]:
    """What is wrong with the sharded layout of a per-chunk array (spec §9.0, §9.0.1).

    The shard may hold ``prod(S)`` spatial chunks (format 1.1); whether ``S`` is the
    same for every array of a level and allowed by the declared version is checked apart.
    """
    if shape is None:
        return []  # reported by the array's metadata check
    if len(shape) < ndim + 1:
        return [f"shape {list(shape)} has fewer than {ndim + 1} dimensions"]
    problems = []
    per_shard = shard_chunks(doc, ndim)
    shard = [*(per_shard or (1,) * ndim), *shape[ndim:]]
    if regular_chunk_shape(doc) != shard:
        problems.append(
            f"chunk_grid must be regular with chunk_shape {shard} (S_1..S_D ≥ 1, then N_A "
            "and the row shape)"
        )
    if _separator(doc) != "/":
        problems.append("chunk_key_encoding must be 'default' with separator '/'")
    conf = _sharding_config(doc)
    if conf is None:
        return [*problems, "codecs must be exactly one sharding_indexed codec"]
    inner = as_int_list(conf.get("chunk_shape"))
    if (
        inner is None
        or len(inner) != len(shape)
        or inner[:ndim] != [1] * ndim
        or inner[ndim + 1 :] != list(shape[ndim + 1 :])
        or inner[ndim] < 1
        or shape[ndim] % inner[ndim]
    ):
        problems.append(
            f"inner chunk_shape must be {[1] * ndim} + [R] + {list(shape[ndim + 1 :])} with R "
            f"dividing {shape[ndim]}, got {conf.get('chunk_shape')!r}"
        )
    if not is_index_chain(conf.get("index_codecs")):
        problems.append("index_codecs must be [bytes little, crc32c]")
    if conf.get("index_location", "end") != "end":
        problems.append("index_location must be 'end'")
    if not isinstance(conf.get("codecs"), list):
        problems.append("the sharding codec needs a codecs list")
    return problems
