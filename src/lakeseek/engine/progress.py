"""Progress of the Spark jobs a lakeseek operation runs, for the CLI's progress bar."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

# (label, tasks completed, tasks known so far)
ProgressCallback = Callable[[str, int, int], None]


@contextmanager
def tracked(spark: SparkSession, label: str, callback: ProgressCallback | None) -> Iterator[None]:
    """Report the tasks of the Spark jobs started inside this block to ``callback``."""
    if callback is None:
        yield
        return
    context = spark.sparkContext
    group = f"lakeseek-{uuid.uuid4().hex}"
    context.setJobGroup(group, label)
    stop = threading.Event()

    def report() -> None:
        tracker = context.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        callback(label, done, total)

    def poll() -> None:
        while not stop.wait(0.3):
            report()

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        report()
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)
