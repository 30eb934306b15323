"""lakeseek: needle-in-a-haystack lookups on Parquet data lakes, through an index stored in the lake.

``create_index`` builds an index with Spark; ``open_index`` opens one for lookups, which
need no Spark, and ``open_indexes`` every index of a lake, each query going through the
cheapest. ``refresh_index``, ``optimize_index``, ``delete_index``, ``restore_index``,
``vacuum_index``, ``cancel_operations`` and ``list_indexes`` manage their life.
"""

from __future__ import annotations

from lakeseek import layout  # noqa: F401 (registers the OTree lake source)
from lakeseek.commits.log import LogEntry
from lakeseek.exceptions import (
    CommitFailedError,
    CommitOutcomeUnknownError,
    DataFileChangedError,
    DataFileError,
    IncompatibleSchemaError,
    IndexAlreadyExistsError,
    IndexCorruptError,
    IndexFormatError,
    IndexLogUnreadableError,
    IndexNotFoundError,
    InvalidArgumentError,
    LakeMetadataError,
    LakeNotFoundError,
    LakeseekError,
    OperationCancelledError,
    PredicateError,
    PredicateParseError,
    PredicateTypeError,
    SparkJobError,
    UnknownColumnError,
    UnsupportedColumnError,
    UnsupportedLakeError,
    UnsupportedPredicateError,
    UnsupportedStorageError,
)
from lakeseek.format.root import ColumnStatus
from lakeseek.index import Index, IndexStatus, list_indexes, open_index
from lakeseek.indexes import IndexSet, open_indexes
from lakeseek.kinds import register_kind
from lakeseek.operations import (
    VacuumResult,
    cancel_operations,
    create_index,
    delete_index,
    optimize_index,
    refresh_index,
    restore_index,
    vacuum_index,
)
from lakeseek.planning import Explanation, Fallback, Plan
from lakeseek.planning.what_if import IndexSpec, WhatIf
from lakeseek.sources import open_lake, register_source
from lakeseek.what_if import WhatIfReport, imagine_indexes

__version__ = "0.2.0"

__all__ = [
    "ColumnStatus",
    "CommitFailedError",
    "CommitOutcomeUnknownError",
    "DataFileChangedError",
    "DataFileError",
    "Explanation",
    "Fallback",
    "IncompatibleSchemaError",
    "Index",
    "IndexAlreadyExistsError",
    "IndexCorruptError",
    "IndexLogUnreadableError",
    "IndexFormatError",
    "IndexNotFoundError",
    "IndexSet",
    "IndexSpec",
    "IndexStatus",
    "LakeNotFoundError",
    "LakeseekError",
    "LogEntry",
    "OperationCancelledError",
    "Plan",
    "PredicateError",
    "PredicateParseError",
    "PredicateTypeError",
    "SparkJobError",
    "UnknownColumnError",
    "UnsupportedColumnError",
    "UnsupportedLakeError",
    "InvalidArgumentError",
    "LakeMetadataError",
    "UnsupportedPredicateError",
    "UnsupportedStorageError",
    "VacuumResult",
    "WhatIf",
    "WhatIfReport",
    "__version__",
    "cancel_operations",
    "create_index",
    "delete_index",
    "imagine_indexes",
    "list_indexes",
    "open_index",
    "open_indexes",
    "open_lake",
    "optimize_index",
    "refresh_index",
    "register_kind",
    "register_source",
    "restore_index",
    "vacuum_index",
]
