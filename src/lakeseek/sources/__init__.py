"""Lake sources, chosen by what a lake's location holds: a Delta, Iceberg or Hudi table's log,
or else a directory of Parquet files (of CSV or JSON lines files when named so). A source
registers itself with :func:`register_source`."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lakeseek.exceptions import LakeNotFoundError, LakeseekError
from lakeseek.io import Storage, storage_for
from lakeseek.sources.base import LakeSchema, LakeSource, Snapshot
from lakeseek.sources.delta import DeltaSource, is_delta
from lakeseek.sources.directory import DIRECTORY_SOURCES, DirectorySource
from lakeseek.sources.hudi import HudiSource, is_hudi
from lakeseek.sources.iceberg import CATALOG_SCHEME, IcebergSource, is_iceberg, open_catalog_table

# Whether a lake's root holds a lake of this source (one storage call or two).
Detector = Callable[[Storage, str], bool]
SourceOpener = Callable[[Storage, str], LakeSource]

_SOURCES: list[tuple[str, Detector, SourceOpener]] = []
# URI schemes that name tables rather than places (``iceberg://CATALOG/NAMESPACE.TABLE``):
# scheme -> (the source's name, what opens a location of that scheme).
_TABLE_SCHEMES: dict[str, tuple[str, Callable[[str, Mapping[str, object] | None], LakeSource]]] = {}


def register_source(name: str, detect: Detector, opener: SourceOpener) -> None:
    """Open lakes that ``detect`` recognises with ``opener``. Sources registered later are
    asked first; a lake no source recognises is a directory of Parquet files."""
    _SOURCES.insert(0, (name, detect, opener))


def register_table_scheme(
    scheme: str, source_format: str, opener: Callable[[str, Mapping[str, object] | None], LakeSource]
) -> None:
    """Open locations ``<scheme>://...`` (a table in a catalog) with ``opener``, as a lake of
    ``source_format``."""
    _TABLE_SCHEMES[scheme] = (source_format, opener)


def open_lake(
    location: str, storage_options: Mapping[str, object] | None = None, *, source_format: str | None = None
) -> LakeSource:
    """The lake at ``location`` (a local path or a URI), as its source reads it: the source
    ``source_format`` names (``directory`` of Parquet files, ``csv``, ``json``, ``delta``,
    ``iceberg``, ``hudi``, or one registered since), else the one that recognises the location
    (a table format's log), else a directory of Parquet files. ``storage_options`` configure
    its object store (see :mod:`lakeseek.io`). A table in a catalog is named by a URI of its
    own scheme: ``iceberg://CATALOG/NAMESPACE.TABLE``.

    Every function that takes a lake's location takes the lake this returns too: opened so,
    with a ``source_format``, it is read as that source."""
    scheme = location.partition("://")[0] if "://" in location else ""
    if scheme in _TABLE_SCHEMES:
        table_format, opener = _TABLE_SCHEMES[scheme]
        if source_format not in (None, table_format):
            raise LakeseekError(f"{location} is a {table_format} table, not a {source_format} lake")
        source = opener(location, storage_options)
        source.storage_options = dict(storage_options or {})
        return source
    storage, root = storage_for(location, storage_options)
    if source_format is None:
        source = next((opener(storage, root) for _, detect, opener in _SOURCES if detect(storage, root)), None)
        source = source or DirectorySource(storage, root)
    elif source_format in DIRECTORY_SOURCES:
        source = DIRECTORY_SOURCES[source_format](storage, root)
    else:
        sources = {name: (detect, opener) for name, detect, opener in _SOURCES}
        if source_format not in sources:
            known = ", ".join(sorted([*DIRECTORY_SOURCES, *sources]))
            raise LakeseekError(f"unknown lake source format {source_format!r} in this process (known: {known})")
        detect, opener = sources[source_format]
        if not detect(storage, root):
            raise LakeNotFoundError(f"no {source_format} table at {storage.uri(root)}")
        source = opener(storage, root)
    source.storage_options = dict(storage_options or {})
    return source


register_source("iceberg", is_iceberg, IcebergSource)
register_table_scheme(CATALOG_SCHEME, IcebergSource.name, open_catalog_table)
register_source("hudi", is_hudi, HudiSource)
register_source("delta", is_delta, DeltaSource)

__all__ = [
    "DirectorySource",
    "LakeSchema",
    "LakeSource",
    "Snapshot",
    "open_lake",
    "register_source",
    "register_table_scheme",
]
