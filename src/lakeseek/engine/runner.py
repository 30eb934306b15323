"""Where the tasks of a lakeseek job run: on Spark, or in this process.

Jobs are lists of independent tasks (plain, picklable arguments in; JSON-able results
out). :class:`SparkRunner` runs one Spark partition per task through ``mapInArrow``,
so any cluster whose executors have lakeseek installed can run them.
:class:`LocalRunner` runs them here, one after another: for small changes (a refresh of
a few files, a quick optimize) where starting Spark would cost more than the work.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal, Protocol

import pyarrow as pa

from lakeseek.exceptions import DataFileChangedError, InvalidArgumentError, SparkJobError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakeseek.engine.progress import ProgressCallback

Engine = Literal["spark", "local"]


class Runner(Protocol):
    # Tasks that run at once: jobs split their work into at least this many tasks.
    parallelism: int

    def run(self, label: str, tasks: list, function: Callable[..., list[dict]]) -> list[dict]: ...


class LocalRunner:
    parallelism = 1

    def run(self, label: str, tasks: list, function: Callable[..., list[dict]]) -> list[dict]:
        return [result for task in tasks for result in function(*task)]


class SparkRunner:
    def __init__(self, spark: SparkSession, progress: ProgressCallback | None = None) -> None:
        self.spark = spark
        self.progress = progress

    @property
    def parallelism(self) -> int:
        return self.spark.sparkContext.defaultParallelism

    def run(self, label: str, tasks: list, function: Callable[..., list[dict]]) -> list[dict]:
        if not tasks:
            return []
        from lakeseek.engine.progress import tracked

        def run_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                for task_number in batch.column(0).to_pylist():
                    results = function(*tasks[task_number])
                    yield pa.RecordBatch.from_pydict({"result": [json.dumps(r) for r in results]})

        with spark_errors(), tracked(self.spark, label, self.progress):
            numbered = self.spark.range(0, len(tasks), 1, numPartitions=len(tasks))
            rows = numbered.mapInArrow(run_partition, "result string").collect()
        return [json.loads(row["result"]) for row in rows]


def runner_for(engine: Engine, spark: SparkSession | None = None, progress: ProgressCallback | None = None) -> Runner:
    if engine == "local":
        return LocalRunner()
    if engine != "spark":
        raise InvalidArgumentError(f"engine must be 'spark' or 'local', not {engine!r}")
    from lakeseek.engine.session import default_session

    return SparkRunner(spark or default_session(), progress)


@contextmanager
def spark_errors() -> Iterator[None]:
    """Spark's failures as one-line :class:`SparkJobError` s."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        yield
    except (PySparkException, Py4JError) as error:
        message = _spark_message(error)
        changed = f"{DataFileChangedError.__module__}.{DataFileChangedError.__name__}: "
        if message.startswith(changed):
            # A task found a data file changed under it: the build runs again, as on the driver.
            raise DataFileChangedError(message[len(changed) :]) from error
        raise SparkJobError(message) from error


# The last line of a Python traceback: the exception raised, "module.Name: message".
_RAISED = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Invalid|Exit|Interrupt)(?:: .*)?")


def _spark_message(error: Exception) -> str:
    text = str(error)
    lines = text.strip().splitlines()
    for line in reversed(lines):
        if "lakeseek" in line and "Error" in line:
            return line.strip()
    first = lines[0] if lines else type(error).__name__
    # A task's Python exception: Spark's first line ends in a colon, the traceback follows.
    raised = next((line for line in reversed(lines) if _RAISED.fullmatch(line)), None)
    if raised is not None and first.rstrip().endswith(":"):
        return f"Spark job failed: {first.rstrip()} {raised}"
    return f"Spark job failed: {first}"
