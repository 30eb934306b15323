"""Which storage backend serves a location: by its URI scheme.

A backend registers the schemes it serves with one line (``register_storage``); a location
with no scheme, ``file:`` or a Windows drive letter is local; ``s3``/``s3a``, ``gs``,
``az``/``azure``/``abfs``/``abfss`` are object stores (:mod:`lakeseek.io.object_store`); any
other scheme that pyarrow knows is served by :class:`Storage` over pyarrow's file system
(reads and listings work; commits need a backend with an atomic put-if-absent).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlparse

import pyarrow.fs as pafs

from lakeseek.exceptions import LakeseekError
from lakeseek.io.azure import open_azure
from lakeseek.io.gcs import open_gcs
from lakeseek.io.local import open_local
from lakeseek.io.s3 import open_s3
from lakeseek.io.storage import Storage

StorageOptions = Mapping[str, object]
StorageOpener = Callable[[str, StorageOptions | None], tuple[Storage, str]]
"""A location (a URI of the backend's scheme) and storage options -> (its storage, the
file-system path in it). The opener should give the same Storage for the same bucket (or
host) and options, so its counters and caches are shared."""

_BACKENDS: dict[str, StorageOpener] = {}
_ARROW_STORAGES: dict[tuple[str, str], Storage] = {}


@dataclass(frozen=True)
class Address:
    """A storage location as plain data any process can open again (a Spark executor, for
    the tasks of a job): its URI and the storage options it was opened with."""

    uri: str
    options: Mapping[str, object] = field(default_factory=dict)

    def open(self) -> tuple[Storage, str]:
        return storage_for(self.uri, self.options)


def register_storage(scheme: str, opener: StorageOpener) -> None:
    """Serve locations of ``scheme`` (``memory``, ``s3``...) with ``opener``."""
    _BACKENDS[scheme.lower()] = opener


def storage_for(location: str, storage_options: StorageOptions | None = None) -> tuple[Storage, str]:
    """The storage holding ``location`` (a local path or a URI) and its file-system path.
    ``storage_options`` configure an object store (see its backend's module)."""
    scheme = urlparse(location).scheme.lower()
    if scheme in _BACKENDS:
        return _BACKENDS[scheme](location, storage_options)
    if storage_options:
        raise LakeseekError(f"storage options are for object stores; {location} is not in one")
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


for _scheme in ("s3", "s3a"):
    register_storage(_scheme, open_s3)
register_storage("gs", open_gcs)
for _scheme in ("az", "azure", "abfs", "abfss"):
    register_storage(_scheme, open_azure)
