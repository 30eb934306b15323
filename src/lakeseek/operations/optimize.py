"""``optimize``: compact an index (quick: what refreshes added; full: everything, tombstones dropped)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from lakeseek.commits.transaction import DEFAULT_COMMIT_TRIES
from lakeseek.engine.runner import Engine, runner_for
from lakeseek.exceptions import InvalidArgumentError
from lakeseek.format.actions import CompactFiles, LineageStartsWith, Transaction
from lakeseek.format.root import Root
from lakeseek.index import Index
from lakeseek.kinds import kind_named
from lakeseek.location import LakeLike
from lakeseek.operations.protocol import LazyRunner, Operation, existing, operation, require_active

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakeseek.engine.progress import ProgressCallback

OptimizeMode = Literal["quick", "full"]


def optimize_index(
    source: LakeLike,
    mode: OptimizeMode = "quick",
    *,
    index: str | None = None,
    name: str | None = None,
    spark: SparkSession | None = None,
    engine: Engine | None = None,
    progress: ProgressCallback | None = None,
    commit_tries: int = DEFAULT_COMMIT_TRIES,
    storage_options: Mapping[str, object] | None = None,
) -> Index:
    """Compact the index.

    - ``quick``: merge what refreshes added (the sorted kind: each column's increments into
      one; in this process by default).
    - ``full``: fold everything into the main index (the sorted kind: the paper's Algorithm 2,
      rewriting only index files whose key range receives entries), drop tombstoned entries
      and compact the lineage (on Spark by default).
    """
    if mode not in ("quick", "full"):
        raise InvalidArgumentError(f"unknown optimize mode {mode!r}: use quick or full")
    location = existing(source, index, name, storage_options)
    chosen: Engine = engine or ("local" if mode == "quick" else "spark")
    runner = LazyRunner(lambda: runner_for(chosen, spark, progress))
    with operation(location, f"optimize {mode}", commit_tries) as op:
        root = op.transact(lambda base: _optimize(op, base, mode, runner))
    return Index(location, root)


def _optimize(op: Operation, base: Root, mode: str, runner: LazyRunner) -> Transaction | None:
    location = op.location
    active = require_active(base, location)
    lineage = base.lineage
    job = op.job(base.schema, base.partition_columns, runner)
    change = kind_named(base.kind).optimize(job, base.content, mode, lineage.removed)
    actions = list(change.actions) if change else []
    requirements = [active, *change.requirements] if change else [active]
    if mode == "full":
        # The kind dropped the tombstoned files' entries (or held none): the lineage forgets them.
        if change is None and len(lineage.parts) == 1 and not lineage.removed:
            return None
        compacted = op.lineage_part(lineage.indexed(location.storage, location.index_dir), lineage.pending_files)
        actions.append(CompactFiles(len(lineage.parts), compacted, lineage.removed))
        requirements.append(LineageStartsWith(lineage.parts, lineage.removed))
    elif change is None:
        return None
    return Transaction(f"optimize {mode}", tuple(actions), tuple(requirements))
