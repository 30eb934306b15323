"""Lake sources, chosen by what a lake's location holds: a table format's log, or else a
directory of Parquet files. A source registers itself with :func:`register_source`."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lakeseek.exceptions import LakeseekError
from lakeseek.io import Storage, storage_for
from lakeseek.sources import table_formats
from lakeseek.sources.base import LakeSchema, LakeSource, Snapshot
from lakeseek.sources.delta import DeltaSource, is_delta
from lakeseek.sources.directory import DirectorySource

# Whether a lake's root holds a lake of this source (one storage call or two).
Detector = Callable[[Storage, str], bool]
SourceOpener = Callable[[Storage, str], LakeSource]

_SOURCES: list[tuple[str, Detector, SourceOpener]] = []


def register_source(name: str, detect: Detector, opener: SourceOpener) -> None:
    """Open lakes that ``detect`` recognises with ``opener``. Sources registered later are
    asked first; a lake no source recognises is a directory of Parquet files."""
    _SOURCES.insert(0, (name, detect, opener))


def open_source(
    location: str, storage_options: Mapping[str, object] | None = None, *, source_format: str | None = None
) -> LakeSource:
    """The lake at ``location`` (a local path or a URI), as its source reads it: the source
    ``source_format`` names, else the one that recognises the location (a table format's log),
    else a directory of files. ``storage_options`` configure its object store (see
    :mod:`lakeseek.io`)."""
    storage, root = storage_for(location, storage_options)
    if source_format is None:
        source = next((opener(storage, root) for _, detect, opener in _SOURCES if detect(storage, root)), None)
        source = source or DirectorySource(storage, root)
    elif source_format == DirectorySource.name:
        source = DirectorySource(storage, root)
    else:
        openers = {name: opener for name, _, opener in _SOURCES}
        if source_format not in openers:
            known = ", ".join(sorted([DirectorySource.name, *openers]))
            raise LakeseekError(f"unknown lake source format {source_format!r} in this process (known: {known})")
        source = openers[source_format](storage, root)
    source.storage_options = dict(storage_options or {})
    return source


register_source("iceberg", table_formats.is_iceberg, table_formats.refuse("Apache Iceberg"))
register_source("hudi", table_formats.is_hudi, table_formats.refuse("Apache Hudi"))
register_source("delta", is_delta, DeltaSource)

__all__ = ["DirectorySource", "LakeSchema", "LakeSource", "Snapshot", "open_source", "register_source"]
