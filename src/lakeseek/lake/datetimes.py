"""Dates and timestamps of lake files as Spark 4 reads them (see docs/predicates.md, "Datetime encodings").

Two encodings read differently by pyarrow and by Spark:

* **INT96 timestamps** (Spark's default ``spark.sql.parquet.outputTimestampType``, Impala,
  Hive, old writers). pyarrow reads them as nanoseconds, which wrap outside 1677-2262;
  Spark reads microseconds of a ``TIMESTAMP`` (with time zone). lakeseek reads them as
  microseconds (:data:`INT96_UNIT`) and records such columns as ``timestamp[us, UTC]``.
* **Julian-rebased values** of files Spark wrote on the hybrid Julian calendar (Spark 2.x,
  or Spark 3/4 with ``spark.sql.parquet.datetimeRebaseModeInWrite`` /
  ``int96RebaseModeInWrite`` = ``LEGACY``). Spark reads them back rebased to the proleptic
  Gregorian calendar, deciding per file as ``DataSourceUtils.datetimeRebaseSpec`` /
  ``int96RebaseSpec`` do: a file with ``org.apache.spark.version`` below 3.0.0 (3.1.0 for
  INT96) or with the key ``org.apache.spark.legacyDateTime`` (``legacyINT96``) is rebased;
  a file with a later version and no such key is not; a file without Spark's version
  follows ``datetimeRebaseModeInRead`` (Spark 4's default: CORRECTED, no rebase).
  Dates are rebased with Spark's day formula (``RebaseDateTime.rebaseJulianToGregorianDays``,
  a function of the day number); ``TIMESTAMP`` values (INT96, and INT64 adjusted to UTC;
  never ``TIMESTAMP_NTZ``) with ``rebaseJulianToGregorianMicros`` in the file's
  ``org.apache.spark.timeZone`` (else the local time zone, as Spark uses the JVM's): exact
  arithmetic for UTC and fixed offsets, Spark's own switch table (read from the Spark jars)
  for other zones.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import re
import zipfile
import zoneinfo
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from lakeseek.exceptions import LakeseekError
from lakeseek.lake.rows import concat_rows

log = logging.getLogger("lakeseek")

INT96_UNIT = "us"
SPARK_VERSION_KEY = b"org.apache.spark.version"
LEGACY_DATETIME_KEY = b"org.apache.spark.legacyDateTime"
LEGACY_INT96_KEY = b"org.apache.spark.legacyINT96"
TIME_ZONE_KEY = b"org.apache.spark.timeZone"
# RebaseDateTime.lastSwitchJulianDay: days from here on are the same on both calendars.
LAST_SWITCH_JULIAN_DAY = -141427  # 1582-10-15
# RebaseDateTime.lastSwitchJulianTs: the last switch of every time zone's table (1900-01-01 UTC).
LAST_SWITCH_JULIAN_MICROS = -2208988800 * 1_000_000
MICROS_PER_DAY = 86_400_000_000
# Up to this many files a query's dataset keeps their footers (read once); beyond, reads them twice.
CACHED_FOOTERS = 1_000
_UNIT_MICROS = {"s": 1_000_000, "ms": 1_000, "us": 1}
_UTC_NAMES = {
    "utc", "gmt", "uct", "ut", "z", "zulu", "universal", "greenwich", "gmt0",
    "etc/utc", "etc/gmt", "etc/uct", "etc/universal", "etc/zulu", "etc/greenwich", "etc/gmt0",
    "etc/gmt+0", "etc/gmt-0", "gmt+0", "gmt-0",
}  # fmt: skip
_CUSTOM_ZONE = re.compile(r"GMT([+-])(\d{1,2})(?::?(\d{2}))?")  # java.util.TimeZone's custom ids
_ETC_GMT = re.compile(r"Etc/GMT([+-])(\d{1,2})")


@functools.cache
def parquet_format(*, coalesce_reads: bool = True) -> ds.ParquetFileFormat:
    """The Parquet format lakeseek reads lake files with: INT96 as microseconds, as Spark does.
    ``coalesce_reads``: fetch a file's column chunks in a few large ranged reads, ahead of
    decoding (pyarrow's pre-buffering), which an object store's per-request latency pays for;
    on a local file system it costs a scan of small row groups more than it saves."""
    return ds.ParquetFileFormat(
        read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit=INT96_UNIT),
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=coalesce_reads),
    )


def open_parquet(file: pa.NativeFile) -> pq.ParquetFile:
    """One lake file, INT96 read as microseconds."""
    return pq.ParquetFile(file, coerce_int96_timestamp_unit=INT96_UNIT)


def spark_arrow_schema(file: pq.ParquetFile) -> pa.Schema:
    """The file's Arrow schema with its columns as Spark types them: INT96 as ``TIMESTAMP``
    (``timestamp[us, UTC]``), not pyarrow's time-zone-less timestamp, and the types only the
    Arrow schema stored in the file names as the Parquet column Spark reads (:func:`spark_read_type`)."""
    schema = file.schema_arrow
    for position, field in enumerate(schema):
        if spark_read_type(field.type) != field.type:
            schema = schema.set(position, field.with_type(spark_read_type(field.type)))
    for name in _top_level_columns(file.metadata, "INT96"):
        position = schema.get_field_index(name)
        if position >= 0:
            schema = schema.set(position, schema.field(position).with_type(pa.timestamp(INT96_UNIT, tz="UTC")))
    return schema


def spark_read_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type Spark reads a column pyarrow wrote as ``arrow_type`` as, where lakeseek reads
    it so too: a 32- or 64-bit decimal is a DECIMAL as any other (Arrow's kernels lack them)."""
    if pa.types.is_decimal32(arrow_type) or pa.types.is_decimal64(arrow_type):
        return pa.decimal128(arrow_type.precision, arrow_type.scale)
    return arrow_type


def _top_level_columns(metadata: pq.FileMetaData, physical_type: str | None = None) -> Iterator[str]:
    schema = metadata.schema
    names = set(schema.to_arrow_schema().names)
    for i in range(len(schema)):
        column = schema.column(i)
        wanted = physical_type is None or column.physical_type == physical_type
        if wanted and column.path in names and column.max_repetition_level == 0:
            yield column.path


# -- which files Spark rebases ----------------------------------------------------------------------
@dataclass(frozen=True)
class Rebase:
    """How Spark rebases the values of one file: Julian day numbers of ``days`` columns and
    Julian micros of ``micros`` columns (TIMESTAMP: INT96 or adjusted to UTC) in ``time_zone``."""

    days: tuple[str, ...]
    micros: tuple[str, ...]
    time_zone: str

    def apply(self, table: pa.Table) -> pa.Table:
        """``table`` (columns of the file, by name) with Spark's proleptic Gregorian values."""
        for names, convert in ((self.days, _rebase_days_array), (self.micros, self._rebase_micros_array)):
            for name in names:
                position = table.schema.get_field_index(name)
                if position >= 0:
                    column = table.column(position)
                    chunks = [convert(chunk) for chunk in column.chunks]
                    table = table.set_column(position, table.field(position), pa.chunked_array(chunks, column.type))
        return table

    def _rebase_micros_array(self, array: pa.Array) -> pa.Array:
        scale = _UNIT_MICROS.get(array.type.unit)
        if scale is None:  # nanoseconds: Spark reads no such TIMESTAMP column
            raise LakeseekError(f"cannot rebase nanosecond timestamps of a legacy Spark file ({array.type})")
        raw = array.cast(pa.int64())
        values = raw.fill_null(0).to_numpy(zero_copy_only=False) * scale
        rebased = rebase_julian_micros(values, self.time_zone) // scale
        return pa.array(rebased, pa.int64(), mask=raw.is_null().to_numpy(zero_copy_only=False)).cast(array.type)


def _rebase_days_array(array: pa.Array) -> pa.Array:
    raw = array.cast(pa.int32())
    values = raw.fill_null(0).to_numpy(zero_copy_only=False)
    rebased = rebase_julian_days(values)
    return pa.array(rebased, pa.int32(), mask=raw.is_null().to_numpy(zero_copy_only=False)).cast(array.type)


def file_rebase(metadata: pq.FileMetaData) -> Rebase | None:
    """How Spark 4 (default settings) rebases this file's top-level date and timestamp columns,
    or None when it reads them as they are."""
    pairs = metadata.metadata or {}
    version = pairs.get(SPARK_VERSION_KEY)
    if version is None:  # not written by Spark: datetimeRebaseModeInRead, CORRECTED by default
        return None
    text = version.decode("utf-8", "replace")
    legacy_datetime = text < "3.0.0" or LEGACY_DATETIME_KEY in pairs
    legacy_int96 = text < "3.1.0" or LEGACY_INT96_KEY in pairs
    if not (legacy_datetime or legacy_int96):
        return None
    days: list[str] = []
    micros: list[str] = []
    schema = metadata.schema
    names = set(_top_level_columns(metadata))
    for i in range(len(schema)):
        column = schema.column(i)
        if column.path not in names:
            continue
        kind = column.logical_type.type
        if column.physical_type == "INT96":
            if legacy_int96:
                micros.append(column.path)  # no statistics: every value may need it
        elif kind == "DATE" and legacy_datetime:
            if _may_be_below(metadata, i, LAST_SWITCH_JULIAN_DAY):
                days.append(column.path)
        elif kind == "TIMESTAMP" and legacy_datetime and column.physical_type == "INT64":
            logical = json.loads(column.logical_type.to_json())
            scale = {"milliseconds": 1_000, "microseconds": 1}.get(logical.get("timeUnit"), 0)
            if not logical.get("isAdjustedToUTC"):  # TIMESTAMP_NTZ: never rebased
                continue
            if not scale or _may_be_below(metadata, i, LAST_SWITCH_JULIAN_MICROS // scale):
                micros.append(column.path)
    if not (days or micros):
        return None
    zone = pairs.get(TIME_ZONE_KEY)
    return Rebase(tuple(days), tuple(micros), zone.decode() if zone else local_time_zone())


def _may_be_below(metadata: pq.FileMetaData, column: int, bound: int) -> bool:
    """Whether some value of the column may be below ``bound`` (raw), by the row groups' statistics."""
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        statistics = row_group.column(column).statistics
        if row_group.num_rows == 0:
            continue
        if statistics is None:
            return True
        if statistics.has_min_max:
            if statistics.min_raw < bound:
                return True
        elif not (statistics.has_null_count and statistics.null_count == row_group.num_rows):
            return True
    return False


def local_time_zone() -> str:
    """The time zone Spark's JVM defaults to on this machine (it rebases files that record none in it)."""
    zone = os.environ.get("TZ", "").lstrip(":")
    if zone:
        return zone
    try:
        return Path("/etc/timezone").read_text().strip() or "UTC"
    except OSError:
        pass
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return "UTC"
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else "UTC"


# -- the arithmetic -------------------------------------------------------------------------------------
def rebase_julian_days(days: np.ndarray) -> np.ndarray:
    """Spark's ``rebaseJulianToGregorianDays``: a day number of the hybrid (Julian before
    1582-10-15) calendar to the proleptic Gregorian day of the same year, month and day
    (a Julian 29 February a Gregorian year lacks becomes 1 March)."""
    days = np.asarray(days, dtype=np.int64)
    result = days.copy()
    old = days < LAST_SWITCH_JULIAN_DAY
    if old.any():
        year, month, day = _julian_civil(days[old])
        result[old] = _gregorian_days(year, month) + day - 1
    return result.astype(np.int32)


def _julian_civil(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(astronomical year, month, day) on the Julian calendar of days since 1970-01-01."""
    c = days + 2440588 + 32082  # the Julian day number, shifted
    d = (4 * c + 3) // 1461
    e = c - (1461 * d) // 4
    m = (5 * e + 2) // 153
    day = e - (153 * m + 2) // 5 + 1
    month = m + 3 - 12 * (m // 10)
    year = d - 4800 + m // 10
    return year, month, day


def _gregorian_days(year: np.ndarray, month: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of the first of ``month`` of (astronomical) ``year``, proleptic Gregorian."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * np.where(month > 2, month - 3, month + 9) + 2) // 5
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def rebase_julian_micros(micros: np.ndarray, time_zone: str) -> np.ndarray:
    """Spark's ``rebaseJulianToGregorianMicros(timeZone, micros)``."""
    micros = np.asarray(micros, dtype=np.int64)
    result = micros.copy()
    old = micros < LAST_SWITCH_JULIAN_MICROS
    if not old.any():
        return result
    table = _rebase_table(time_zone)
    values = micros[old]
    rebased = np.empty_like(values)
    fallback = np.ones(len(values), dtype=bool)
    if table is not None:
        switches, diffs = table
        in_table = values >= switches[0]
        index = np.searchsorted(switches, values[in_table], side="right") - 1
        rebased[in_table] = values[in_table] + diffs[index]
        fallback = ~in_table
    if fallback.any():
        # Spark computes these with java.util.TimeZone and java.time: the same Julian local
        # date-time as a proleptic Gregorian one. Exact here only for a fixed offset; a zone's
        # offsets before its table (local years before 1) depend on the JVM's time zone data.
        offset = _fixed_offset_micros(time_zone)
        if offset is None:
            raise LakeseekError(
                f"a legacy (Julian calendar) Spark file holds timestamps in time zone '{time_zone}' that "
                "lakeseek cannot rebase exactly as Spark does (local times before the year 1, a zone Spark's "
                "rebase tables lack, or no Spark jars to read them from); rewrite the file with Spark 3+ "
                "in the CORRECTED rebase mode"
            )
        day, time = np.divmod(values[fallback] + offset, MICROS_PER_DAY)
        rebased[fallback] = rebase_julian_days(day).astype(np.int64) * MICROS_PER_DAY + time - offset
    result[old] = rebased
    return result


def _fixed_offset_micros(time_zone: str) -> int | None:
    """The offset of a zone java.util.TimeZone and java.time agree is fixed, in micros; None otherwise.

    Like ``java.util.TimeZone.getTimeZone``, an id that is no zone at all means GMT."""
    if time_zone.lower() in _UTC_NAMES:
        return 0
    custom = _CUSTOM_ZONE.fullmatch(time_zone)
    if custom:
        sign = -1 if custom.group(1) == "-" else 1
        return sign * (int(custom.group(2)) * 3600 + int(custom.group(3) or 0) * 60) * 1_000_000
    etc = _ETC_GMT.fullmatch(time_zone)
    if etc:  # POSIX sign: Etc/GMT+5 is five hours behind
        return (-1 if etc.group(1) == "+" else 1) * int(etc.group(2)) * 3600 * 1_000_000
    try:
        zoneinfo.ZoneInfo(time_zone)
    except Exception:  # no zone at all (ZoneInfoNotFoundError, ValueError): java.util.TimeZone says GMT
        return 0
    return None


@functools.lru_cache(maxsize=64)
def _rebase_table(time_zone: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Spark's Julian-to-Gregorian switch table of ``time_zone`` (micros), None for fixed
    offsets (exact arithmetic) or a zone it lacks."""
    if _fixed_offset_micros(time_zone) is not None:
        return None
    tables = _spark_tables()
    record = tables.get(time_zone)
    if record is None:
        return None
    switches, diffs = record
    return np.asarray(switches, dtype=np.int64) * 1_000_000, np.asarray(diffs, dtype=np.int64) * 1_000_000


@functools.lru_cache(maxsize=1)
def _spark_tables() -> dict[str, tuple[list[int], list[int]]]:
    """``julian-gregorian-rebase-micros.json`` from the Spark jars (PySpark's, or $SPARK_HOME's)."""
    name = "julian-gregorian-rebase-micros.json"
    for jar in _spark_jar_candidates():
        try:
            with zipfile.ZipFile(jar) as archive:
                if name in archive.namelist():
                    records = json.loads(archive.read(name))
                    return {r["tz"]: (r["switches"], r["diffs"]) for r in records}
        except (OSError, zipfile.BadZipFile, ValueError, KeyError):
            continue
    log.warning("lakeseek: Spark's rebase table (%s) was not found in the Spark jars", name)
    return {}


def _spark_jar_candidates() -> list[Path]:
    directories = []
    home = os.environ.get("SPARK_HOME")
    if home:
        directories.append(Path(home) / "jars")
    try:
        spec = importlib.util.find_spec("pyspark")
    except (ValueError, ImportError):
        spec = None
    if spec is not None and spec.origin:
        directories.append(Path(spec.origin).parent / "jars")
    jars = []
    for directory in directories:
        jars += sorted(directory.glob("spark-sql-api_*.jar")) + sorted(directory.glob("spark-catalyst_*.jar"))
    return jars


# -- datasets -------------------------------------------------------------------------------------------
def spark_view(dataset: ds.FileSystemDataset) -> ds.FileSystemDataset | RebasedDataset:
    """``dataset`` whose rows are Spark's: itself, or, when some of its files hold values Spark
    rebases, a dataset that reads those files rebased (then filters them)."""
    if not any(pa.types.is_date(f.type) or pa.types.is_timestamp(f.type) for f in dataset.schema):
        return dataset
    fragments = list(dataset.get_fragments())
    read = functools.partial(_footer, keep=len(fragments) <= CACHED_FOOTERS)
    if len(fragments) > 1:
        with ThreadPoolExecutor(min(16, len(fragments))) as pool:
            rebases = list(pool.map(lambda fragment: file_rebase(read(fragment)), fragments))
    else:
        rebases = [file_rebase(read(fragment)) for fragment in fragments]
    if not any(rebases):
        return dataset
    return RebasedDataset(dataset, fragments, rebases)


def _footer(fragment: ds.ParquetFileFragment, keep: bool) -> pq.FileMetaData:
    """The fragment's footer: kept in it when ``keep`` (the scan then reads it no more), else read
    apart (footers of many files would take much memory kept, so a scan reads them again)."""
    if keep:
        fragment.ensure_complete_metadata()
        return fragment.metadata
    return pq.read_metadata(fragment.path, filesystem=fragment.filesystem)


class _RebasedFragment:
    """A lake file read whole, rebased, then filtered and projected."""

    def __init__(self, fragment: ds.ParquetFileFragment, rebase: Rebase, schema: pa.Schema) -> None:
        self.fragment = fragment
        self.rebase = rebase
        self.schema = schema
        self.path = fragment.path

    def to_table(self, columns=None, filter=None, schema=None, **_) -> pa.Table:
        table = self.rebase.apply(self.fragment.to_table(schema=schema or self.schema))
        if filter is not None:
            table = table.filter(filter)
        return table if columns is None else table.select(list(columns))


class RebasedDataset:
    """The part of ``pyarrow.dataset.Dataset`` lakeseek uses (``schema``, ``to_table``,
    ``to_batches``, ``get_fragments``), over files some of which Spark rebases."""

    def __init__(self, dataset: ds.FileSystemDataset, fragments: list, rebases: list[Rebase | None]) -> None:
        self.schema = dataset.schema
        self._plain = ds.FileSystemDataset(
            [f for f, r in zip(fragments, rebases, strict=True) if r is None], dataset.schema, dataset.format,
            dataset.filesystem,
        )  # fmt: skip
        self._fragments = [
            f if r is None else _RebasedFragment(f, r, dataset.schema) for f, r in zip(fragments, rebases, strict=True)
        ]
        self.files = dataset.files

    def get_fragments(self, filter=None) -> Iterator:
        return iter(self._fragments)

    def to_batches(self, columns=None, filter=None, **kwargs) -> Iterator[pa.RecordBatch]:
        yield from self._plain.to_batches(columns=columns, filter=filter, **kwargs)
        for fragment in self._fragments:
            if isinstance(fragment, _RebasedFragment):
                yield from fragment.to_table(columns=columns, filter=filter).to_batches()

    def to_table(self, columns=None, filter=None, **kwargs) -> pa.Table:
        parts = [self._plain.to_table(columns=columns, filter=filter, **kwargs)]
        parts += [
            f.to_table(columns=columns, filter=filter) for f in self._fragments if isinstance(f, _RebasedFragment)
        ]
        return concat_rows(parts)

    def count_rows(self, filter=None) -> int:
        return self.to_table(filter=filter).num_rows


__all__ = ["INT96_UNIT", "Rebase", "RebasedDataset", "file_rebase", "parquet_format", "spark_view"]
