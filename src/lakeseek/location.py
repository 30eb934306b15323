"""Where a lake and its indexes are: the lake's source, its index home, an index's name.

An index lives under its home (the source's default, ``SOURCE/_lakeseek``, unless given), in a directory of its
name. The home must keep index files out of what engines read as the lake's data, and the
lake out of what vacuum may delete.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from lakeseek.exceptions import LakeNotFoundError, LakeseekError
from lakeseek.io import Storage, storage_for
from lakeseek.sources import open_lake
from lakeseek.sources.base import LakeSource
from lakeseek.sources.directory import DIRECTORY_SOURCES, DirectorySource, is_hidden

DEFAULT_NAME = "default"
_VALID_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Location:
    """Where a lake and one of its indexes are: ``<home>/<name>``, home being the source's default unless given."""

    source: LakeSource
    home: str
    name: str

    @property
    def storage(self) -> Storage:
        return self.source.storage

    @property
    def lake_root(self) -> str:
        return self.source.root

    @property
    def index_dir(self) -> str:
        return f"{self.home}/{self.name}"

    def require_lake(self) -> None:
        if not self.source.exists():
            raise LakeNotFoundError(f"lake not found: {self.source.shown_root} is not a directory")


def index_names(storage: Storage, home: str) -> list[str]:
    """Names of the indexes (committed or not) under an index home."""
    return sorted(name for name in storage.list_dirs(home) if _VALID_NAME.fullmatch(name))


# A lake: its location (a local path or a URI), or the lake :func:`open_lake` opened.
LakeLike = str | LakeSource


def locate(
    source: LakeLike,
    index: str | None = None,
    name: str | None = None,
    *,
    existing: bool = True,
    storage_options: Mapping[str, object] | None = None,
) -> Location:
    """Where the lake at ``source`` and its index ``name`` are.

    ``index`` is the index home when it is not the source's default (``SOURCE/_lakeseek``). Without a ``name``,
    an existing index is chosen when the lake has just one (or one named "default").
    """
    if isinstance(source, LakeSource):
        if storage_options:
            raise LakeseekError("give storage_options to open_lake, which opened this lake, not here")
        lake = source
    else:
        lake = open_lake(source, storage_options)
    storage, lake_root = lake.storage, lake.root
    if index is None:
        home = lake.default_home
    else:
        index_storage, home = storage_for(index, storage_options)
        if index_storage is not storage:
            raise LakeseekError("the index must live on the same storage as the lake")
    if storage.is_local:  # a symlink must not smuggle the index into the lake, or the lake into it
        real_lake, real_home = os.path.realpath(lake_root), os.path.realpath(home)
    else:
        real_lake, real_home = lake_root, home
    _check_home(lake, real_lake, real_home)
    if name is None:
        name = _default_name(storage, home) if existing else DEFAULT_NAME
    if not _VALID_NAME.fullmatch(name):
        raise LakeseekError(f"invalid index name {name!r}: use letters, digits, '_', '-' and '.'")
    if _is_within(real_lake, f"{real_home}/{name}"):
        raise LakeseekError(
            f"the lake would be inside the index directory {home}/{name}, where vacuum deletes every file "
            "the index does not reference: choose another --index or --name"
        )
    return Location(lake, home, name)


def as_indexed(location: Location, source_format: str) -> Location:
    """``location`` with its lake read as the source its index was created on: a lake opened as
    a directory of Parquet files (by default, a directory is) is a directory of CSV or JSON
    files when its index says so. Any other difference is an error, never a wrong reading."""
    lake = location.source
    if lake.name == source_format:
        return location
    if lake.name == DirectorySource.name and source_format in DIRECTORY_SOURCES:
        reopened = DIRECTORY_SOURCES[source_format](lake.storage, lake.root)
        reopened.storage_options = lake.storage_options
        return dataclasses.replace(location, source=reopened)
    raise LakeseekError(
        f"index '{location.name}' was created on the lake as a {source_format} lake, "
        f"not a {lake.name} one: open {lake.shown_root} as {source_format} (--source-format {source_format}, "
        f"source_format={source_format!r})"
    )


def _check_home(lake: LakeSource, lake_root: str, home: str) -> None:
    """Refuse an index home inside the lake unless a hidden directory holds it.

    Only a hidden directory on its way (a component of its path relative to the lake that
    starts with '_' or '.', without '=', and is no Parquet summary name like '_metadata')
    keeps the index files out of what Spark, Trino, DuckDB and lakeseek read as data; and
    lakeseek's listing skips the home, so data files under it would vanish from queries.
    """
    if not _is_within(home, lake_root):
        return
    parts = [] if home == lake_root else home[len(lake_root) + 1 :].split("/")
    if any(is_hidden(part, directory=True) for part in parts):
        return
    harm = "Spark, Trino and DuckDB would read the index files as data"
    if any("=" in part for part in parts):
        harm = f"lakeseek would skip the data files under {'/'.join(parts)}, and {harm}"
    raise LakeseekError(
        f"the index home {home} is inside the lake {lake_root} and not under a hidden directory: {harm}; "
        f"use a directory whose name starts with '_' or '.' (like {lake.default_home}) or one outside the lake"
    )


def _is_within(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or below it."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _default_name(storage: Storage, home: str) -> str:
    names = [n for n in index_names(storage, home) if storage.is_dir(f"{home}/{n}/log")]
    if DEFAULT_NAME in names or not names:
        return DEFAULT_NAME
    if len(names) == 1:
        return names[0]
    raise LakeseekError(f"the lake has several indexes ({', '.join(names)}): choose one by name")
