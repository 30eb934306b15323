"""An OTree lake's metadata: its log, revisions, files and their blocks (docs/format.md §14).

The lake is a directory: data files under ``data/``, and ``_lakeseek_layout/log/`` holding
numbered JSON entries, each the whole state of one version (the schema, the revisions, every
live file with its blocks and column bounds). Entries are created with put-if-absent, so of
two writers racing for a version exactly one wins and the other rebases and tries again; a
data file becomes part of the lake only when an entry names it, so a failed or retried task
leaves invisible files, never half a write.
"""

from __future__ import annotations

import base64
import re
import time
from dataclasses import dataclass, field, replace
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from lakeseek.commits.log import create_entry, decode_entry, encode_entry, is_entry_name
from lakeseek.exceptions import CommitFailedError, IndexCorruptError, LakeNotFoundError, LayoutCorruptError
from lakeseek.format import values
from lakeseek.io import FileStatus, Storage
from lakeseek.layout.transforms import Transformation
from lakeseek.lru import LRU, named

LAYOUT_DIR = "_lakeseek_layout"
DATA_DIR = "data"
SCRATCH_DIR = f"{LAYOUT_DIR}/scratch"  # a Spark write's spills, removed when it ends
FORMAT = "lakeseek-layout"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Revision:
    """A space: the layout columns' transformations and the cube size. A write whose values
    fit a revision adds to it; one that does not opens a new revision."""

    id: int
    cube_size: int
    transformations: tuple[Transformation, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(t.column for t in self.transformations)

    def to_json(self) -> dict:
        return {"id": self.id, "cube_size": self.cube_size, "columns": [t.to_json() for t in self.transformations]}

    @classmethod
    def from_json(cls, data: dict) -> Revision:
        return cls(data["id"], data["cube_size"], tuple(Transformation.from_json(t) for t in data["columns"]))


@dataclass(frozen=True)
class Block:
    """The rows of one cube in one file: their lowest weight, the cube's maximum weight when
    written (stored int32 domain: every row of the block has ``min_weight <= w <= max_weight``)
    and how many there are."""

    cube: str
    min_weight: int
    max_weight: int
    rows: int


@dataclass(frozen=True)
class LayoutFile:
    path: str  # relative to the lake's root
    size: int
    rows: int
    revision: int
    blocks: tuple[Block, ...]
    # Per column: [lowest, highest, NULLs] in the column's storage values (see stored_value).
    statistics: dict = field(default_factory=dict)
    written_ms: int = 0

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "size": self.size,
            "rows": self.rows,
            "revision": self.revision,
            "blocks": [[b.cube, b.min_weight, b.max_weight, b.rows] for b in self.blocks],
            "statistics": self.statistics,
            "written_ms": self.written_ms,
        }

    @classmethod
    def from_json(cls, data: dict) -> LayoutFile:
        path = data["path"]
        # The layout writes its files in its data folder: an entry naming one elsewhere (`../`)
        # is damaged or forged, and no read, rewrite or delete may follow it.
        if not isinstance(path, str) or not _DATA_FILE.fullmatch(path):
            raise ValueError(f"it names {path!r}, which is not a file of the layout's {DATA_DIR} folder")
        blocks = tuple(Block(c, int(low), int(high), int(n)) for c, low, high, n in data["blocks"])
        return cls(path, data["size"], data["rows"], data["revision"], blocks, data["statistics"], data["written_ms"])


_DATA_FILE = re.compile(rf"{DATA_DIR}/[A-Za-z0-9_=-][A-Za-z0-9_.=-]*")


@dataclass(frozen=True, eq=False)
class LayoutState:
    """One version of an OTree lake (compared by identity: parsed once per entry, see
    ``_PARSED``, and what is derived from it is kept by it)."""

    version: int
    schema: pa.Schema
    revisions: tuple[Revision, ...]
    files: dict[str, LayoutFile]
    operation: str = "write"
    timestamp_ms: int = 0
    checksum: int = 0  # of the entry read (see encode_entry); 0 for a state not read from the log

    @property
    def token(self) -> str:
        """The version as a lake source names it: the number and the entry's checksum, so a lake
        deleted and written again (its versions restart) is not taken for the one before."""
        return f"{self.version}:{self.checksum}"

    def revision(self, revision_id: int) -> Revision:
        return next(r for r in self.revisions if r.id == revision_id)

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files.values())

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "version": self.version,
            "operation": self.operation,
            "timestamp_ms": self.timestamp_ms,
            "schema": values.serialize_schema(self.schema),
            "revisions": [r.to_json() for r in self.revisions],
            "files": [f.to_json() for f in sorted(self.files.values(), key=lambda f: f.path)],
        }

    @classmethod
    def from_json(cls, data: dict, where: str) -> LayoutState:
        if data.get("format") != FORMAT or data.get("format_version") != FORMAT_VERSION:
            raise LayoutCorruptError(
                f"{where} is not a lakeseek layout entry of format version {FORMAT_VERSION} "
                f"(found {data.get('format')!r} {data.get('format_version')!r})"
            )
        try:
            files = [LayoutFile.from_json(f) for f in data["files"]]
            return cls(
                data["version"],
                values.deserialize_schema(data["schema"]),
                tuple(Revision.from_json(r) for r in data["revisions"]),
                {f.path: f for f in files},
                data["operation"],
                data["timestamp_ms"],
            )
        except (KeyError, TypeError, ValueError) as error:
            raise LayoutCorruptError(f"{where} is not a whole layout entry ({error})") from error


class LayoutLog:
    """The numbered entries of an OTree lake at ``root``."""

    def __init__(self, storage: Storage, root: str) -> None:
        self.storage = storage
        self.root = root
        self.log_dir = f"{root}/{LAYOUT_DIR}/log"

    def entry_path(self, version: int) -> str:
        return f"{self.log_dir}/{version:020d}.json"

    def exists(self) -> bool:
        return bool(self.versions())

    def listing(self) -> dict[int, FileStatus | None]:
        """The log's entries by version (one LIST); None for a directory named as an entry."""
        if not self.storage.is_dir(self.log_dir):
            return {}
        files, directories = self.storage.list_directory(self.log_dir)
        found: dict[int, FileStatus | None] = {int(name[:20]): None for name in directories if is_entry_name(name)}
        for status in files:
            name = status.path.rsplit("/", 1)[-1]
            if is_entry_name(name):
                found[int(name[:20])] = status
        return dict(sorted(found.items()))

    def versions(self) -> list[int]:
        return list(self.listing())

    def latest(self) -> LayoutState:
        listing = self.listing()
        if not listing:
            raise LakeNotFoundError(f"no lakeseek layout at {self.storage.uri(self.root)}")
        version, status = next(reversed(listing.items()))
        if status is None:  # read past, the layout would lose the rows that version added
            raise LayoutCorruptError(
                f"layout log entry {self.storage.shown(self.entry_path(version))} is a directory, not a file: "
                "the layout's newest version cannot be read (remove it to read the version before)"
            )
        return self.read(version, status)

    def read(self, version: int, status: FileStatus | None = None) -> LayoutState:
        """Version ``version``'s state; parsed once in this process when the listing's
        ``status`` of its entry is given (see ``_PARSED``)."""
        path = self.entry_path(version)
        key = None
        try:
            if status is not None:
                key = (id(self.storage), path, status.size, status.mtime_ns, self.storage.read_range(path, 0, HEAD))
                found = _PARSED.get(key)
                if found is not None:
                    return found
            data = self.storage.read(path)
        except FileNotFoundError as error:
            raise LakeNotFoundError(f"layout version {version} not found at {path}") from error
        try:
            body = decode_entry(data, path)
        except IndexCorruptError as error:
            raise LayoutCorruptError(str(error).replace("index log entry", "layout log entry", 1)) from error
        state = replace(LayoutState.from_json(body, path), checksum=_checksum(data))
        if state.version != version:
            raise LayoutCorruptError(f"layout log entry {path} holds version {state.version}, not {version}")
        if key is not None:
            _PARSED.put(key, state)
        return state

    def commit(self, state: LayoutState) -> None:
        """Create ``state``'s entry, or CommitFailedError when another writer took its version."""
        if not create_entry(self.storage, self.entry_path(state.version), encode_entry(state.to_json())):
            raise CommitFailedError(f"another writer committed layout version {state.version} first")


# An entry's first bytes hold the checksum of its body (see lakeseek.commits.log.encode_entry).
HEAD = 32
_CHECKSUM = re.compile(rb'\s*\{\s*"crc32"\s*:\s*(\d+)')


def _checksum(entry: bytes) -> int:
    found = _CHECKSUM.match(entry)
    return int(found.group(1)) if found else 0


# Log entries parsed in this process, the latest few, by their storage, path, listed size and
# modification time, and first bytes. An entry is created once (put-if-absent) and never
# rewritten, so its path names its content for as long as it exists; the rest tells a log
# deleted and written again at the same place (file times tick in milliseconds), by the
# checksum of the new entry's body.
_PARSED: LRU[LayoutState] = named("layout log entries", 8)


def now_ms() -> int:
    return int(time.time() * 1000)


# -- column bounds ------------------------------------------------------------------------------
def has_bounds(arrow_type: pa.DataType) -> bool:
    """Columns whose files record bounds: ordered types SQL compares exactly (no floats)."""
    if pa.types.is_floating(arrow_type):
        return False
    try:
        values.key_type_for(arrow_type, "")
    except Exception:
        return False
    return True


def storage_array(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Values in the form bounds compare them: dates and timestamps as their integers (in the
    column's unit), dictionaries decoded; everything else as it is."""
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    if pa.types.is_date(array.type) or pa.types.is_timestamp(array.type):
        array = array.cast(pa.int32() if pa.types.is_date32(array.type) else pa.int64())
    return array


def encode_bound(value: object) -> object:
    if isinstance(value, bytes):
        return {"b64": base64.b64encode(value).decode()}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    return value


def decode_bound(raw: object) -> object:
    if isinstance(raw, dict):
        return base64.b64decode(raw["b64"]) if "b64" in raw else Decimal(raw["decimal"])
    return raw


def file_statistics(table: pa.Table) -> dict:
    """Per column with bounds: ``[lowest, highest, NULLs]`` (lowest and highest None when the
    file holds no non-NULL value)."""
    found = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        if not has_bounds(column.type):
            continue
        extremes = pc.min_max(storage_array(column))
        low, high = extremes["min"].as_py(), extremes["max"].as_py()
        found[name] = [encode_bound(low), encode_bound(high), column.null_count]
    return found
