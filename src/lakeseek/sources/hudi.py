"""An Apache Hudi copy-on-write table (a location holding ``.hoodie/``) as a
lake source.

The lake is the base file of each file group's latest slice, as the ``hudi`` package
(hudi-rs) reads the timeline, not a listing of the location (which holds every older base
file too). The version is the latest completed instant and a digest of every completed
one: checking it costs one LIST of the active timeline. Hudi keeps partition columns in its base
files, so the lake has no partition columns of its own; its ``_hoodie_*`` meta columns are
read like any other, as Spark's Parquet reader reads them.

Not read yet, and refused rather than read wrong: merge-on-read tables whose slices have log
files (their rows are the base file merged with the logs).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Mapping

import pyarrow as pa

from lakeseek.engine.runner import Runner
from lakeseek.exceptions import LakeNotFoundError, UnsupportedLakeError
from lakeseek.io import Stamp, Storage
from lakeseek.lake.files import plain_schema
from lakeseek.sources.base import LakeSchema, LakeSource, Snapshot, table_errors, table_library

TIMELINE = ".hoodie"
PROPERTIES = "hoodie.properties"
# A completed instant: <instant time>.<action>, without the .requested and .inflight suffixes;
# in timeline layout 2 (Hudi 1.x), <requested time>_<completion time>.<action>. Every action
# counts: a rollback or restore changes the files as a commit does.
_COMPLETED = re.compile(r"([0-9]{8,})\.(?!inflight$)([a-z]+)")  # a commit's own inflight file is <time>.inflight
_COMPLETED_V2 = re.compile(r"[0-9]{8,}_([0-9]{8,})\.([a-z]+)")


def is_hudi(storage: Storage, root: str) -> bool:
    # A LIST, like the other sources' checks, rather than a HEAD of hoodie.properties: opening
    # a lake on an object store then makes no HEAD at all.
    return storage.is_dir(f"{root}/{TIMELINE}")


class HudiSource(LakeSource):
    name = "hudi"

    def __init__(self, storage: Storage, root: str) -> None:
        super().__init__(storage, root)
        self._layout: tuple[tuple[int, int], str | None] | None = None  # hoodie.properties' size and time, its timeline

    @property
    def default_home(self) -> str:
        # hudi-rs reads every top-level directory but the table formats' own (.hoodie,
        # _delta_log, metadata) as a partition, _lakeseek included; Hudi's writers and cleaners
        # touch only their own files under .hoodie.
        return f"{self.root}/{TIMELINE}/lakeseek"

    def version(self, known: str | None = None) -> str | None:
        """The latest completed instant time (layout 2: the latest completion time), then a
        crc32 of the names of every completed instant of the active timeline.

        The set, not only the latest: in layout 1 an instant is named by the time it was
        requested, so a writer that started earlier and finished later (two writers, a table
        service) completes an instant older than the latest, and a rollback removes one. Either
        changes the table's files without a newer instant. So the whole active timeline is
        listed (Hudi archives older instants: it stays small), not only what follows ``known``."""
        completed: list[str] = []
        latest: str | None = None
        properties = None
        for status in self.storage.list_files(f"{self.root}/{TIMELINE}", recursive=False):
            name = status.path.rsplit("/", 1)[-1]
            if name == PROPERTIES:
                properties = (status.size, status.mtime_ns)
            found = _COMPLETED.fullmatch(name)
            if found:
                completed.append(name)
                latest = max(latest or found[1], found[1])
        timeline = self._timeline(properties)
        if timeline is not None:
            completed, latest = [], None
            for status in self.storage.list_files(f"{self.root}/{TIMELINE}/{timeline}", recursive=False):
                name = status.path.rsplit("/", 1)[-1]
                found = _COMPLETED_V2.fullmatch(name)
                if found:
                    completed.append(name)
                    latest = max(latest or found[1], found[1])
        if latest is None:
            raise LakeNotFoundError(f"no Hudi table at {self.shown_root}: its timeline holds no completed commit")
        return f"{latest}.{zlib.crc32(chr(10).join(sorted(completed)).encode()):08x}"

    def _timeline(self, properties: tuple[int, int] | None) -> str | None:
        """The directory below ``.hoodie/`` of a layout 2 timeline, None for layout 1, as the
        table's properties (whose size and time are ``properties``) say."""
        if properties is None:
            return None
        if self._layout is None or self._layout[0] != properties:
            settings = {}
            for line in self.storage.read(f"{self.root}/{TIMELINE}/{PROPERTIES}").decode("utf-8").splitlines():
                key, _, value = line.partition("=")
                if not line.startswith(("#", "!")):
                    settings[key.strip()] = value.strip()
            layout_two = settings.get("hoodie.timeline.layout.version", "1") == "2"
            self._layout = (properties, settings.get("hoodie.timeline.path", "timeline") if layout_two else None)
        return self._layout[1]

    def _table(self):
        hudi = table_library(self, "hudi", "an Apache Hudi")
        builder = hudi.HudiTableBuilder.from_base_uri(self.root if self.storage.is_local else self.uri)
        options = dict(getattr(self.storage, "object_store_config", {}))
        return (builder.with_storage_options(options) if options else builder).build()

    def snapshot(self, *, exclude: str | None = None) -> Snapshot:
        version = self.version()
        with table_errors(self, Exception):  # hudi-rs's HudiCoreError is not importable
            slices = self._table().get_file_slices()
        files = {}
        for file_slice in slices:
            if file_slice.has_log_files():
                raise UnsupportedLakeError(
                    f"Hudi table {self.shown_root} has log files (merge-on-read): lakeseek does not read them yet "
                    "(a compaction writes them into base files)"
                )
            # A base file is written once: path and size are its identity.
            files[file_slice.base_file_relative_path()] = Stamp(file_slice.base_file_size, 0, "")
        return Snapshot(files, version)

    def discover(self, files: Mapping[str, Stamp], runner: Callable[[], Runner]) -> LakeSchema:
        """The table's schema, its ``_hoodie_*`` meta columns included."""
        with table_errors(self, Exception):
            return LakeSchema.of(plain_schema(pa.schema(self._table().get_schema_with_meta_fields())))
