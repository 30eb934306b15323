"""Format ``"lakeseek"`` on the JVM: Spark's own Parquet scan, pruned by the index from Python.

A Python data source pays a Python planning round trip and a Python task per query, and
Spark gives it every column of every row (its API has no column pruning). So where it can,
:func:`lakeseek.spark.register` loads a small JVM data source instead (``java/lakeseek``):
the lake becomes Spark's ordinary Parquet relation (its listing, partition discovery,
column pruning and vectorized reader) whose file index, per query, asks the index which
files may match. The question goes back to this Python driver through py4j (a callback,
as ``foreachBatch`` uses), where :class:`IndexPlanner` answers it in a process that is
already running, with lakeseek imported: about 10 ms for a 1,000-file lake.

The jar is compiled on first use against the running PySpark's jars with ``javac`` and
cached under ``~/.cache/lakeseek``. Without a JDK, or on Spark Connect (no py4j), the
Python data source stays the ``lakeseek`` format.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import datasource as spark_filters

from lakeseek.engine.runner import LocalRunner
from lakeseek.exceptions import LakeseekError
from lakeseek.io import Stamp
from lakeseek.lake.formats import PARQUET
from lakeseek.sources.base import LakeSource
from lakeseek.spark import PYTHON_FORMAT
from lakeseek.spark.dataframes import GREGORIAN_SAFE, spark_schema
from lakeseek.spark.datasource import open_source_index, open_source_lake
from lakeseek.spark.filters import Both, Either, Pushed, conjunction, usable
from lakeseek.spark.scan import plan_scan

log = logging.getLogger("lakeseek")
JAVA_SOURCES = Path(__file__).parent / "java"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
REFUSED = "\1"  # Planner.REFUSED: the scan must not run, and why


def install(spark: SparkSession) -> bool:
    """Make ``lakeseek`` the JVM data source on ``spark``; False (and a log line) where it cannot be."""
    gateway = getattr(spark.sparkContext, "_gateway", None) if _is_classic(spark) else None
    if gateway is None:
        log.info("lakeseek: no py4j gateway (Spark Connect?): the Python data source serves 'lakeseek'")
        return False
    jar = compiled_jar()
    if jar is None:
        return False
    from py4j.protocol import Py4JError
    from pyspark.java_gateway import ensure_callback_server_started

    try:
        ensure_callback_server_started(gateway)
        spark._jsparkSession.sessionState().resourceLoader().addJar(str(jar))
        spark._jvm.lakeseek.DefaultSource.use(IndexPlanner(spark._jvm))
        spark._jvm.lakeseek.WeightSample.install(spark._jsparkSession)
    except Py4JError as error:
        log.warning("lakeseek: the JVM data source did not load (%s): the Python one serves 'lakeseek'", error)
        return False
    return True


def _is_classic(spark: SparkSession) -> bool:
    try:
        return spark._jsparkSession is not None
    except Exception:  # Spark Connect sessions have no JVM session attribute
        return False


# -- the jar -------------------------------------------------------------------------------------
def spark_jars() -> Path:
    """The jars of the Spark PySpark runs: $SPARK_HOME's, else the ones bundled with pyspark."""
    import pyspark

    home = os.environ.get("SPARK_HOME")
    return Path(home) / "jars" if home else Path(pyspark.__file__).parent / "jars"


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lakeseek"


def compiled_jar() -> Path | None:
    """The jar of ``java/lakeseek`` built for this Spark, compiled now if not cached; None without javac."""
    import pyspark

    sources = sorted(JAVA_SOURCES.glob("lakeseek/*.java"))
    digest = hashlib.sha256(f"{pyspark.__version__} {spark_jars()}".encode())
    for source in sources:
        digest.update(source.read_bytes())
    jar = cache_dir() / f"lakeseek-spark-{pyspark.__version__}-{digest.hexdigest()[:16]}.jar"
    if jar.exists():
        return jar
    javac = _javac()
    if javac is None:
        log.warning("lakeseek: no javac found (install a JDK): the slower Python data source serves 'lakeseek'")
        return None
    try:
        _compile(javac, sources, jar)
    except (OSError, subprocess.CalledProcessError) as error:
        detail = error.stderr.strip() if isinstance(error, subprocess.CalledProcessError) else error
        log.warning("lakeseek: could not build the JVM data source, the Python one serves 'lakeseek':\n%s", detail)
        return None
    return jar


def _compile(javac: str, sources: list[Path], jar: Path) -> None:
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as work:
        classes = Path(work) / "classes"
        command = [javac, "--release", "17", "-nowarn", "-d", str(classes), "-cp", f"{spark_jars()}/*"]
        subprocess.run([*command, *map(str, sources)], capture_output=True, text=True, check=True)
        built = Path(work) / "lakeseek.jar"
        with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        os.replace(built, jar)  # atomic: a concurrent build or reader sees a whole jar or none


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


# -- the index side, called from the JVM ---------------------------------------------------------
class IndexPlanner:
    """Implements the Java interface ``lakeseek.Planner`` (see ``java/lakeseek/Planner.java``)."""

    class Java:
        implements: ClassVar[list[str]] = ["lakeseek.Planner"]

    def __init__(self, jvm: Any) -> None:
        self.jvm = jvm

    def schema(self, options: str) -> str:
        """:meth:`_schema`, or REFUSED and why (a one-line error in Spark, not the traceback
        of this call back)."""
        try:
            return self._schema(options)
        except LakeseekError as error:
            return REFUSED + str(error)

    def _schema(self, options: str) -> str:
        """The lake's data columns as Spark reads them now (:func:`lakeseek.spark.spark_schema`):
        Spark infers the partition columns from its own listing, with its own settings
        (``recursiveFileLookup``, ``basePath``, partition type inference). A lake whose own
        layout narrows scans (an OTree lake) is read without an index too.
        Returned as ``{"schema": ..., "options": ...}``: also the read options Spark's listing
        of the lake needs."""
        from pyspark.sql.types import StructType

        parsed = json.loads(options)
        try:
            index = open_source_index(parsed)
            lake, schema, partitions = index.lake, spark_schema(index), index.root.partition_columns
        except LakeseekError as error:
            try:
                lake = open_source_lake(parsed)
            except LakeseekError:
                raise error from None
            if not lake.prunes_itself:
                raise
            log.info("lakeseek: no usable index (%s): %s is read through its own layout", error, lake.shown_root)
            found = lake.discover(lake.snapshot().files, LocalRunner)
            schema, partitions = StructType.fromJson(json.loads(found.spark_schema)), found.partition_columns
        if lake.data_format is not PARQUET:
            raise LakeseekError(
                f"the lakeseek Spark format reads Parquet lakes through Spark's Parquet scan; read the "
                f"{lake.data_format.name} lake {lake.shown_root} with lakeseek.spark.to_spark"
            )
        # A directory's partition columns are Spark's to infer, with its settings; a table's are
        # typed as the table types them (Spark casts each directory name's text to that type).
        listed = lake.listed_by_spark
        data_columns = StructType([f for f in schema.fields if not listed or f.name not in set(partitions)])
        return json.dumps({"schema": data_columns.jsonValue(), "options": dict(lake.spark_listing_options)})

    def candidates(self, options: str, filters: Iterable[Any]) -> str | None:
        """The relative paths of the files that may match, NUL-separated; None to read every
        file Spark lists; REFUSED and why, when Spark's scan cannot read the lake's rows. A lake
        that is not the directory Spark lists (a table format's, whose directory holds files the
        table removed) always gets its files named."""
        try:
            return self._candidates(json.loads(options), filters)
        except LakeseekError as error:
            return REFUSED + str(error)

    def _candidates(self, options: dict, filters: Iterable[Any]) -> str | None:
        try:
            index = open_source_index(options)
        except LakeseekError as error:
            lake = open_source_lake(options)
            if not lake.prunes_itself:
                log.warning("lakeseek could not open the index (%s): every file of the lake is read", error)
            if lake.listed_by_spark:
                return None
            snapshot = lake.snapshot().files
            files = list(snapshot)
            if lake.prunes_itself and (pushed := self._pushed(filters, lake.discover(snapshot, LocalRunner).schema)):
                files = lake.prune(files, conjunction([found.bound for found in pushed]))
            _refuse_deleted_rows(lake, files, snapshot)
            lake.check_columns(files, snapshot)
            return "\0".join(files)
        pushed = self._pushed(filters, index.schema)
        if not pushed and index.lake.listed_by_spark:
            return None
        plan = plan_scan(index, [found.predicate for found in pushed])
        _refuse_deleted_rows(index.lake, plan.files, index.lake_state().files)
        index.lake.check_columns(plan.files, index.lake_state().files)
        misread = index.lake.spark_misread_partitions(plan.files)
        if misread is not None:
            raise LakeseekError(misread)
        return "\0".join(plan.files) if plan.index_used or not index.lake.listed_by_spark else None

    def _pushed(self, filters: Iterable[Any], schema: pa.Schema) -> list[Pushed]:
        converted = [spark_filter for jvm_filter in filters if (spark_filter := self.to_filter(jvm_filter))]
        return [found for spark_filter in converted if (found := usable(spark_filter, schema))]

    def to_filter(self, jvm_filter: Any) -> spark_filters.Filter | None:
        """A ``org.apache.spark.sql.sources.Filter`` as the Python data source API's filter."""
        kind = jvm_filter.getClass().getSimpleName()
        if kind in ("And", "Or"):
            left, right = self.to_filter(jvm_filter.left()), self.to_filter(jvm_filter.right())
            if left is None or right is None:
                return None
            return Both(left, right) if kind == "And" else Either(left, right)
        if kind == "Not":
            child = self.to_filter(jvm_filter.child())
            return None if child is None else spark_filters.Not(child)
        python_class = getattr(spark_filters, kind, None)
        if not (isinstance(python_class, type) and issubclass(python_class, spark_filters.Filter)):
            return None  # AlwaysTrue, AlwaysFalse: nothing for the index
        attribute = column_path(jvm_filter.attribute())
        if kind in ("IsNull", "IsNotNull"):
            return python_class(attribute)
        values = [self.to_value(value) for value in (jvm_filter.values() if kind == "In" else [jvm_filter.value()])]
        if any(value is _NO_VALUE for value in values):
            return None  # the filter stays with Spark alone
        return python_class(attribute, tuple(values)) if kind == "In" else python_class(attribute, values[0])

    def to_value(self, value: Any) -> Any:
        """A filter literal as the Python value the Python data source API gives for it
        (``_NO_VALUE`` for one it cannot be sure of).

        Dates and times go through Spark's own DateTimeUtils: a ``java.sql.Timestamp`` or
        ``Date`` is on the hybrid Julian calendar in the JVM's time zone, and only Spark's
        rebasing gives back the proleptic Gregorian UTC value the column holds; but Spark made
        one of a day the hybrid calendar lacks (1582-10-05 to 14) another day, so none before
        the Gregorian calendar is sure. Python holds the years 1 to 9999 only."""
        if not hasattr(value, "getClass"):
            return bytes(value) if isinstance(value, bytearray) else value  # py4j converted it
        utils = self.jvm.org.apache.spark.sql.catalyst.util.DateTimeUtils
        kind = value.getClass().getName()
        try:
            if kind == "java.sql.Timestamp":
                converted = _EPOCH + dt.timedelta(microseconds=utils.fromJavaTimestamp(value))
                return converted if converted.date() >= GREGORIAN_SAFE else _NO_VALUE
            if kind == "java.time.Instant":
                return _EPOCH + dt.timedelta(microseconds=utils.instantToMicros(value))
            if kind == "java.time.LocalDateTime":
                return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=utils.localDateTimeToMicros(value))
            if kind == "java.sql.Date":
                converted = dt.date(1970, 1, 1) + dt.timedelta(days=utils.fromJavaDate(value))
                return converted if converted >= GREGORIAN_SAFE else _NO_VALUE
            if kind == "java.time.LocalDate":
                return dt.date(1970, 1, 1) + dt.timedelta(days=utils.localDateToDays(value))
        except OverflowError:  # DATE '+10000-01-01', DATE '-0044-03-15'
            return _NO_VALUE
        return value  # a JVM object spark_literal does not take: the filter stays with Spark alone


_NO_VALUE = object()


def _refuse_deleted_rows(lake: LakeSource, files: list[str], stamps: Mapping[str, Stamp]) -> None:
    """Spark's Parquet scan reads every row of a file: a lake that deleted rows of one of the
    files to read (a Delta table's deletion vectors) cannot be read by it, and is refused."""
    losing = [path for path in files if lake.deleted_rows(path, stamps.get(path)) is not None]
    if losing:
        raise LakeseekError(
            f"the lakeseek Spark format reads files through Spark's Parquet scan, which cannot leave out the rows "
            f"{lake.shown_root} deleted from {len(losing)} of them ({lake.shown(losing[0])}, ...: deletion vectors); "
            f"read it with format '{PYTHON_FORMAT}' or lakeseek.spark.to_spark"
        )


def column_path(name: str) -> tuple[str, ...]:
    """A pushed filter's column name as its parts: ``a.b`` is ``("a", "b")``, ```a.b``` is ``("a.b",)``."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(name):
        char = name[i]
        if char == "`":
            if quoted and name[i + 1 : i + 2] == "`":
                current.append("`")
                i += 1
            else:
                quoted = not quoted
        elif char == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return tuple(parts)
