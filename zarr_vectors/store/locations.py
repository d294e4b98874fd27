"""Where a store is: a local path, a ``.zip`` path, a URL or a zarr Store, resolved to a
zarr-python 3 store (:func:`resolve_store`), with the local directory behind it if any
(:func:`local_root`) and the errors of its backend told as ours (:func:`access_errors`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from zarr.abc.store import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
)
from zarr.storage import FsspecStore, LocalStore, ZipStore

from zarr_vectors._optional import require
from zarr_vectors.errors import (
    InvalidInputError,
    MissingDependencyError,
    StoreAccessError,
    StoreNotFoundError,
)
from zarr_vectors.store.commit import describe_leftovers, recover
from zarr_vectors.store.links import LocalTree
from zarr_vectors.store.local_files import read_local
from zarr_vectors.store.zarr_adapter import (
    Buffer,
    BufferPrototype,
    default_buffer_prototype,
)

__all__ = [
    "SafeLocalStore",
    "StoreLike",
    "access_errors",
    "local_destination",
    "local_path_of",
    "local_root",
    "resolve_store",
    "url_store",
]


StoreLike = str | os.PathLike[str] | Store
"""What the public API accepts as a store: a local path, a ``.zip`` path, a URL or a Store."""


def resolve_store(
    store: StoreLike, *, mode: str, storage_options: Mapping[str, Any] | None = None
) -> Store:
    """Turn a store-like value into a zarr ``Store``.

    Parameters
    ----------
    store
        A local directory path (str or path-like), a path ending in ``.zip`` (a
        :class:`zarr.storage.ZipStore`), a URL with a protocol such as ``s3://`` (an
        ``FsspecStore``, see :func:`url_store`), or any zarr ``Store`` instance (used as is,
        but for a closed write-mode ``ZipStore``, which is read through a read-mode one:
        reopening it to write would truncate the file).
    mode
        ``"r"`` to read or ``"w"`` to write.
    storage_options
        URLs only: options of the fsspec filesystem (for S3: ``endpoint_url``, ``key``,
        ``secret``, ``anon``...); without them the usual environment and configuration
        files supply credentials.

    Returns
    -------
    zarr.abc.store.Store
        The store to use.

    Raises
    ------
    StoreNotFoundError
        When reading a local path that does not exist.
    InvalidInputError
        When the value is not a store-like object, or ``storage_options`` come with
        something other than a URL.
    MissingDependencyError
        When a URL's filesystem package (``s3fs`` for ``s3://``) is not installed.
    """
    text = local_path_of(os.fspath(store)) if isinstance(store, str | os.PathLike) else None
    if storage_options is not None and (text is None or "://" not in text):
        raise InvalidInputError("storage_options apply to URLs (such as s3://...) only")
    if isinstance(store, Store):
        return _readable(store) if mode == "r" else store
    if text is None:
        raise InvalidInputError(
            f"store must be a path, a URL or a zarr Store, got {type(store).__name__}"
        )
    if "://" in text:
        return url_store(text, mode=mode, storage_options=storage_options)
    path = Path(text)
    if mode == "r" and not path.exists():
        _missing(path, text)
    if path.suffix == ".zip":
        return ZipStore(path, mode="r" if mode == "r" else "w")
    return SafeLocalStore(path, read_only=(mode == "r"))


_URL_PACKAGES = {"s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3")}
"""URL protocol -> (package fsspec needs for it, zarr-vectors extra that installs it)."""


def url_store(url: str, *, mode: str, storage_options: Mapping[str, Any] | None) -> Store:
    """Open a URL (``s3://bucket/key``, ``gs://...``, ``memory://...``) as an ``FsspecStore``.

    Raises
    ------
    MissingDependencyError
        When fsspec, or the package of the URL's protocol (``s3fs``: the ``s3`` extra), is
        not installed.
    InvalidInputError
        For a protocol fsspec does not know, or options its filesystem does not take.
    """
    protocol = url.split("://", 1)[0].lower()
    package, extra = _URL_PACKAGES.get(protocol, ("fsspec", None))
    require(package, extra=extra, purpose=f"opening {protocol}:// URLs")
    try:
        return FsspecStore.from_url(
            url, storage_options=dict(storage_options or {}), read_only=(mode == "r")
        )
    except ImportError as exc:  # fsspec names the package the protocol needs
        raise MissingDependencyError(f"opening {url!r} needs another package: {exc}") from exc
    except (ValueError, TypeError) as exc:  # unknown protocol, unknown option
        raise InvalidInputError(f"cannot open {url!r}: {exc}") from exc


def _credential_errors() -> tuple[type[BaseException], ...]:
    """botocore's errors for requests without (complete) credentials; none when botocore
    was never imported (no S3 request was made), so it is not imported here."""
    module = sys.modules.get("botocore.exceptions")
    if module is None:
        return ()
    return (module.NoCredentialsError, module.PartialCredentialsError)


@contextlib.contextmanager
def access_errors(store: Store) -> Iterator[None]:
    """Turn a request refused for lack of credentials into :class:`StoreAccessError`.

    Raises
    ------
    StoreAccessError
        When a request to object storage found no credentials (botocore's
        ``NoCredentialsError``, which reached the CLI as a bug report before).
    """
    try:
        yield
    except _credential_errors() as exc:
        where = _url_of(store)
        raise StoreAccessError(
            f"cannot read or write {where}: {exc}. Configure credentials for it (for S3: "
            "the environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "~/.aws/credentials, or AWS_PROFILE); from Python, the storage_options of "
            "zv.open, zv.validate and the writers can also carry them (key and secret), or "
            "anon set to True for a public bucket"
        ) from exc


def _url_of(store: Store) -> str:
    """``s3://bucket/key`` of an ``FsspecStore`` (for messages); other stores as text."""
    if isinstance(store, FsspecStore):
        protocol = store.fs.protocol
        name = protocol[0] if isinstance(protocol, tuple | list) else protocol
        return f"{name}://{store.path}"
    return str(store)


def _missing(path: Path, text: str) -> None:
    """Put back a store an interrupted commit left aside, else raise for a missing path.

    Raises
    ------
    StoreNotFoundError
        When no store is there, naming what an interrupted write left beside it.
    """
    absolute = Path(os.path.abspath(path))
    if recover(absolute) and path.exists():
        return
    left = describe_leftovers(absolute)
    if left is None:
        raise StoreNotFoundError(f"no store at {text!r}: the path does not exist")
    raise StoreNotFoundError(
        f"no store at {text!r}: the path does not exist, but {left}; or write it again "
        'with mode="w"'
    )


def _readable(store: Store) -> Store:
    """A caller's store as read: a closed write-mode ``ZipStore`` as a read-mode one
    (reopening it would truncate it), a plain ``LocalStore`` as a :class:`SafeLocalStore`."""
    if isinstance(store, ZipStore) and not store._is_open and store._zmode == "w":
        return ZipStore(store.path, mode="r")
    if type(store) is LocalStore:
        return SafeLocalStore(store.root, read_only=True)
    return store


class SafeLocalStore(LocalStore):
    """A zarr ``LocalStore`` whose reads follow the link rule of spec §12.4.

    zarr-python reads global arrays through the store; zarr's own ``LocalStore`` would wait
    on a FIFO, follow any link, and take a directory for a missing chunk (fill values).
    Here every read goes through :class:`~zarr_vectors.store.links.LocalTree`: a regular
    file is read, a missing one is None, anything else raises ``FormatError``.
    """

    def __init__(self, root: Path | str, *, read_only: bool = False) -> None:
        super().__init__(root, read_only=read_only)
        self._tree = LocalTree(os.fspath(self.root))

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        """The bytes at ``key`` (or a range of them), None when the key does not exist."""
        if prototype is None:
            prototype = default_buffer_prototype()
        if not self._is_open:
            await self._open()
        raw = await asyncio.to_thread(_read_request, self._tree, key, byte_range)
        return None if raw is None else prototype.buffer.from_bytes(raw)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        """:meth:`get` of each ``(key, byte range)``."""
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))


def _read_request(tree: LocalTree, key: str, request: ByteRequest | None) -> bytes | None:
    """Read a zarr byte request of a local store's file (see :class:`SafeLocalStore`)."""
    if isinstance(request, OffsetByteRequest):
        whole = read_local(tree, key, None)
        return None if whole is None else whole[request.offset :]
    if isinstance(request, RangeByteRequest):
        return read_local(tree, key, (request.start, request.end))
    if isinstance(request, SuffixByteRequest):
        return read_local(tree, key, -request.suffix)
    return read_local(tree, key, None)


def local_path_of(text: str) -> str:
    """``file://`` URLs name local paths; other text is returned unchanged."""
    return text[len("file://") :] if text.startswith("file://") else text


def local_destination(store: StoreLike) -> Path | None:
    """The local path a store-like value names (a directory or a ``.zip``), else None."""
    if isinstance(store, str | os.PathLike):
        text = local_path_of(os.fspath(store))
        if "://" not in text:
            return Path(text)
    return None


def local_root(store: Store) -> Path | None:
    """Return the directory of a :class:`LocalStore`, or None for other stores."""
    if not isinstance(store, LocalStore):
        return None
    root = store.root  # already a Path in zarr 3: not parsed again (called per request)
    return root if isinstance(root, Path) else Path(root)
