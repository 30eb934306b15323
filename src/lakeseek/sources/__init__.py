"""Lake sources, chosen by what a lake's location holds: a table format's log, or else a
directory of Parquet files. A source registers itself with :func:`register_source`."""

from __future__ import annotations

from collections.abc import Callable

from lakeseek.io import Storage, storage_for
from lakeseek.sources import table_formats
from lakeseek.sources.base import LakeSchema, LakeSource, Snapshot
from lakeseek.sources.directory import DirectorySource

# Whether a lake's root holds a lake of this source (one storage call or two).
Detector = Callable[[Storage, str], bool]
SourceOpener = Callable[[Storage, str], LakeSource]

_SOURCES: list[tuple[str, Detector, SourceOpener]] = []


def register_source(name: str, detect: Detector, opener: SourceOpener) -> None:
    """Open lakes that ``detect`` recognises with ``opener``. Sources registered later are
    asked first; a lake no source recognises is a directory of Parquet files."""
    _SOURCES.insert(0, (name, detect, opener))


def open_source(location: str) -> LakeSource:
    """The lake at ``location`` (a local path or a URI), as its source reads it."""
    storage, root = storage_for(location)
    for _, detect, opener in _SOURCES:
        if detect(storage, root):
            return opener(storage, root)
    return DirectorySource(storage, root)


register_source("iceberg", table_formats.is_iceberg, table_formats.refuse("Apache Iceberg"))
register_source("hudi", table_formats.is_hudi, table_formats.refuse("Apache Hudi"))
register_source("delta", table_formats.is_delta, table_formats.refuse("Delta Lake"))

__all__ = ["DirectorySource", "LakeSchema", "LakeSource", "Snapshot", "open_source", "register_source"]
