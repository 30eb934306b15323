"""Which storage backend serves a location: by its URI scheme.

A backend registers the schemes it serves with one line (``register_storage``); a location
with no scheme, ``file:`` or a Windows drive letter is local; any other scheme that pyarrow
knows is served by :class:`Storage` over pyarrow's file system (reads and listings work;
commits need a backend with an atomic put-if-absent).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlparse

import pyarrow.fs as pafs

from lakeseek.io.local import open_local
from lakeseek.io.storage import Storage

StorageOpener = Callable[[str], tuple[Storage, str]]
"""A location (a URI of the backend's scheme) -> (its storage, the file-system path in it)."""

_BACKENDS: dict[str, StorageOpener] = {}
_ARROW_STORAGES: dict[tuple[str, str], Storage] = {}


def register_storage(scheme: str, opener: StorageOpener) -> None:
    """Serve locations of ``scheme`` (``memory``, ``s3``...) with ``opener``. The opener
    should give the same Storage for the same bucket or host, so its counters and caches
    are shared."""
    _BACKENDS[scheme.lower()] = opener


def storage_for(location: str) -> tuple[Storage, str]:
    """The storage holding ``location`` (a local path or a URI) and its file-system path."""
    scheme = urlparse(location).scheme.lower()
    if scheme in _BACKENDS:
        return _BACKENDS[scheme](location)
    if scheme in ("", "file") or len(scheme) == 1:  # one letter: a Windows drive
        return open_local(location)
    return _open_arrow(location)


def _open_arrow(location: str) -> tuple[Storage, str]:
    parsed = urlparse(location)
    fs, path = pafs.FileSystem.from_uri(location)
    key = (parsed.scheme, parsed.netloc)
    if key not in _ARROW_STORAGES:
        _ARROW_STORAGES[key] = Storage(fs, parsed.scheme, parsed.netloc)
    return _ARROW_STORAGES[key], path.rstrip("/")
