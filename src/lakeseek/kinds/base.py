"""What a kind of index is: how it builds, changes and answers, behind one interface.

An index has one kind (``sorted``: the exact value -> file index). The rest of lakeseek
knows a kind only through :class:`IndexKind` (build, refresh and optimize as work that ends
in log actions) and :class:`KindReader` (what one version can answer for a condition on a
column, at what estimated cost, and the answer). Everything around it is shared: the log and
its commits, the lineage and the lake's freshness, the planner's AND/OR and cost choice, the
Spark front ends. A new kind is a module (or package) here and one :func:`register_kind` line.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from lakeseek.cost import Cost, Estimate, LakeSize
from lakeseek.engine.runner import Runner
from lakeseek.exceptions import LakeseekError
from lakeseek.format.actions import Action, Requirement
from lakeseek.format.lineage import Lineage
from lakeseek.format.root import IndexContent, Root
from lakeseek.io import Address, Storage

if TYPE_CHECKING:
    from lakeseek.sources.base import LakeSource

# A location is a data file and one of its row groups: ``file_id << LOCATION_SHIFT | row_group``
# (row group 0 when the index does not tell row groups apart).
LOCATION_SHIFT = 32
# The columns of the entries a kind gives for located keys (KindReader.locate): what
# ``locate`` joins with the lineage.
KEY = "key"
FILE_ID = "file_id"
ROW_GROUP = "row_group"
# The column of rows a kind carries (Lookup.rows) naming the data file they came from (its id).
ROW_FILE = "__lakeseek_file_id"
# What repairs a damaged index file, for the lines ``status`` prints.
REPAIR = "`lakeseek refresh --mode full` rebuilds the index"


# -- what the planner asks ------------------------------------------------------------------------
@dataclass(frozen=True)
class Values:
    """The column equals one of ``values`` (bound literals of the column's type: Python values
    that ``pyarrow.scalar(value, column_type)`` takes; dates and timestamps may be their Arrow
    storage numbers); None stands for IS NULL."""

    column: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Range:
    """The column is between two bounds (None: unbounded) of the column's type; never NULL."""

    column: str
    low: Any = None
    high: Any = None
    low_inclusive: bool = True
    high_inclusive: bool = True


@dataclass(frozen=True)
class Pattern:
    """The column (a string) matches the LIKE ``pattern``."""

    column: str
    pattern: str


Condition = Values | Range | Pattern


@dataclass(frozen=True)
class Lookup:
    """A lookup a kind offers for a condition: what it should cost and leave, and the lookup
    itself, which returns the sorted distinct locations (a numpy int64 array, see
    ``LOCATION_SHIFT``) of the indexed files that may match. Locations of files removed or
    rewritten since they were indexed may be among them: the planner drops them."""

    column: str
    estimate: Estimate
    run: Callable[[], np.ndarray]
    # A kind that carries rows (covering): the index's rows that may match, with the lake
    # columns asked for and ``ROW_FILE`` (their data file's id); None when it lacks a column.
    rows: Callable[[list[str]], pa.Table | None] | None = None


@dataclass(frozen=True)
class Hypothesis:
    """A lookup of an index not built yet, as the data files' own statistics describe it
    (``explain --what-if``): the condition, the files the index would cover, and what their
    statistics say of the column."""

    condition: Condition
    files: int
    keys: int  # the values looked up (an IN's members); 0 for a range, a pattern or IS NULL alone
    bounded: float  # files whose bounds (and NULL counts) admit a match: the min/max floor
    holding: float  # files expected to hold a match
    entries: float  # non-NULL values of the column over the files
    key_bytes: float  # bytes of one value of the column
    row_bytes: float  # bytes of one row of the columns the index would store


def chunk_lookup_estimate(hypothesis: Hypothesis, chunk_rows: int, entry_bytes: float) -> Estimate:
    """Entries sorted by key in chunks of ``chunk_rows`` (sorted, covering): a chunk per value
    looked up, or the chunks of the entries a range, a pattern or IS NULL spans (the files
    holding a match's share of the entries); the files holding a match are left."""
    if hypothesis.keys:
        chunks = float(hypothesis.keys)
    else:
        share = hypothesis.holding / max(hypothesis.files, 1)
        chunks = max(1.0, math.ceil(share * hypothesis.entries / chunk_rows))
    per_chunk = min(chunk_rows, max(hypothesis.entries, 1.0)) * entry_bytes
    return Estimate(hypothesis.holding, Cost(chunks, chunks * per_chunk))


class KindReader(ABC):
    """One version of an index, read on demand. Its caches are its own and shared by every
    handle on the version, so its methods must be safe to call from several threads.

    A file of the index that is missing or damaged must raise ``IndexCorruptError``: the
    query then reads every file (and says why), never fewer. Any other error fails the query.
    """

    # Whether locations tell row groups apart (else every location's row group is 0).
    row_groups: bool = False
    # Whether its lookups can give the rows themselves (Lookup.rows: a covering kind).
    carries_rows: bool = False

    @abstractmethod
    def lookup(self, condition: Condition, indexed: LakeSize) -> Lookup | str:
        """The lookup for ``condition`` over ``indexed`` files, or why there is none."""

    def key_type(self, column: str, column_type: pa.DataType) -> pa.DataType:
        """The type :meth:`locate` takes and gives keys of ``column`` in."""
        return column_type

    def locate(self, column: str, keys: pa.Array) -> tuple[pa.Table, bool] | None:
        """``(key, file_id[, row_group])`` entries for distinct non-NULL ``keys`` (of
        :meth:`key_type`), and whether they are exact: False when a key stands for several
        values, so the files named may not hold the value asked for. None: this kind cannot
        locate keys (every file is read)."""
        return None

    def entry_files(self, column: str) -> list[str] | None:
        """Paths (in the index directory) of Parquet files of ``(key, file_id)`` rows covering
        the column, which another engine can join with keys; None where the kind has none."""
        return None

    def row_files(self, column: str) -> tuple[list[str], tuple[str, ...]] | None:
        """Paths (in the index directory) of Parquet files holding the indexed files' rows,
        sorted by ``column``, with the lake columns every one of them carries (plus ``ROW_FILE``),
        which another engine can scan instead of the lake; None where the kind carries no rows.
        The files are checked to be the ones the root names now (the engine does not check),
        IndexCorruptError when one is not."""
        return None

    def problems(self) -> list[str]:
        """One line per damaged file of this version, each with its repair."""
        return []


# -- what operations ask ------------------------------------------------------------------------
@dataclass(frozen=True)
class OperationFiles:
    """Where one operation writes index files: names under ``data/<operation id>/`` (see
    docs/format.md), so that files of an operation that never commits are known and vacuumed."""

    storage: Storage
    index_dir: str
    operation_id: str
    storage_options: Mapping[str, object] = field(default_factory=dict)

    @property
    def index(self) -> Address:
        """The index directory as plain data, for tasks to open wherever they run."""
        return Address(self.storage.uri(self.index_dir), dict(self.storage_options))

    @property
    def data_dir(self) -> str:
        """The operation's directory for index files, relative to the index directory."""
        return f"data/{self.operation_id}"

    @property
    def scratch_dir(self) -> str:
        """Where the operation's tasks may spill, relative to the index directory; deleted when it ends."""
        return f"_tmp/{self.operation_id}"


@dataclass(frozen=True)
class Job:
    """What a kind's build work runs over: the lake, its schema, where to write, and where its
    tasks run (in this process, or on Spark, which starts when a kind first asks for ``runner``)."""

    source: LakeSource
    files: OperationFiles
    schema: pa.Schema
    partition_columns: tuple[str, ...]
    make_runner: Callable[[], Runner]

    @property
    def runner(self) -> Runner:
        return self.make_runner()

    @property
    def storage(self) -> Storage:
        return self.files.storage


@dataclass(frozen=True)
class Change:
    """A kind's part of a commit: actions, and what they need of the version they commit on."""

    actions: tuple[Action, ...]
    requirements: tuple[Requirement, ...] = ()


def check_options(kind: str, options: Mapping[str, Any], known: tuple[str, ...]) -> None:
    """A LakeseekError naming the first of ``options`` the ``kind`` does not have."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise LakeseekError(f"the {kind} index has no option {unknown[0]!r} (its options: {', '.join(known)})")


def check_whole_number(option: str, value: object, low: int, high: int) -> None:
    """A LakeseekError unless ``value`` is an int (not a bool) from ``low`` to ``high``."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise LakeseekError(f"{option} must be a whole number from {low:,} to {high:,}, not {value!r}")


class IndexKind(ABC):
    """A kind of index: its options, its part of the root, its build and upkeep, its reader."""

    name: ClassVar[str]
    # Whether its readers carry rows (KindReader.carries_rows: a covering kind).
    carries_rows: ClassVar[bool] = False

    @abstractmethod
    def configure(self, options: Mapping[str, Any]) -> Any:
        """The kind's build settings from ``create_index``'s kind options (a LakeseekError
        naming a bad or unknown one). :meth:`build` gets them; the kind keeps them in its part
        of the root (as ``config``, which :meth:`config_of` gives back for a full refresh)."""

    @abstractmethod
    def check_columns(self, names: list[str], schema: pa.Schema, partition_columns: tuple[str, ...]) -> list[str]:
        """The columns behind ``names`` (as Spark resolves them:
        :func:`lakeseek.expressions.binding.resolve_column`), or UnsupportedColumnError naming
        one this kind cannot index."""

    @abstractmethod
    def decode(self, raw: dict) -> IndexContent:
        """Its part of a root from JSON (IndexCorruptError or ValueError when malformed)."""

    @abstractmethod
    def reader(self, storage: Storage, index_dir: str, root: Root) -> KindReader: ...

    @abstractmethod
    def build(self, job: Job, config: Any, columns: list[str], files: Lineage) -> IndexContent:
        """An index of ``columns`` over ``files`` (create, and a full refresh)."""

    @abstractmethod
    def add_columns(self, job: Job, content: IndexContent, columns: list[str], files: Lineage) -> Change:
        """``columns`` added over ``files`` (the files every other column covers)."""

    @abstractmethod
    def add_files(self, job: Job, content: IndexContent, files: Lineage) -> Change:
        """``files`` (numbered, new or rewritten since) indexed for every column (an incremental refresh)."""

    def optimize(self, job: Job, content: IndexContent, mode: str, removed: frozenset[int]) -> Change | None:
        """Compaction: ``quick`` merges what refreshes added; ``full`` must also drop every entry
        of the tombstoned files ``removed``. None: nothing to do."""
        return None

    def complete(self, content: IndexContent, previous: IndexContent | None, files: OperationFiles) -> IndexContent:
        """The part about to be committed, with what derives from it written (a summary of
        several index files, say); ``previous`` is the latest version's, to reuse."""
        return content

    def config_of(self, content: IndexContent) -> Any:
        return getattr(content, "config", None)

    def config_for(self, config: Any, schema: pa.Schema) -> Any:
        """``config`` for a build over a lake of ``schema`` (a full refresh's): without the
        columns it names that the lake no longer has (a table dropped them), each with a warning."""
        return config

    def stored_columns(self, config: Any, columns: list[str]) -> list[str]:
        """The lake columns an index of ``columns`` with ``config`` stores (the indexed ones)."""
        return list(columns)

    def what_if(self, config: Any, hypothesis: Hypothesis) -> Estimate | str:
        """What this kind's lookup for the hypothesis would read and leave (see
        :mod:`lakeseek.cost`), or why it would make none."""
        return f"the {self.name} kind makes no what-if estimate"
