"""The index log: numbered, immutable JSON entries, each the root of one index version and
the actions of the commit that made it.

``<index>/log/00000000000000000000.json`` is version 0. A new version is committed by
creating the next file with put-if-absent, so a commit is atomic, never overwrites, and
of two writers racing for one version exactly one wins. Files an entry references are
written before the entry, under unique names; until the entry exists they are invisible.
"""

from __future__ import annotations

import json
import logging
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from lakeseek.exceptions import (
    CommitFailedError,
    CommitOutcomeUnknownError,
    IndexCorruptError,
    IndexLogUnreadableError,
    IndexNotFoundError,
    LakeseekError,
    one_line,
)
from lakeseek.format.actions import Action
from lakeseek.format.root import Root
from lakeseek.io import FileStatus, Storage, storage_failures
from lakeseek.kinds import decode_content

LOG_DIR = "log"
_SUFFIX = ".json"
_ENTRY_NAME = re.compile(r"([0-9]{20})\.json")  # ASCII digits: \d would take any script's
LAST_VERSION = 10**20 - 1  # the largest number of 20 digits


def is_entry_name(name: str) -> bool:
    """Whether ``name`` is a log entry's: 20 ASCII digits, ``.json``."""
    return _ENTRY_NAME.fullmatch(name) is not None


logger = logging.getLogger("lakeseek")


@dataclass(frozen=True)
class LogEntry:
    """One committed version as the log tells it: what the commit did."""

    version: int
    operation: str
    timestamp_ms: int
    actions: tuple[dict, ...]  # each {"action": name, ...}: see lakeseek.format.actions


# Listings of the log ``latest`` takes when every entry it listed was vacuumed before it read it.
LISTINGS = 3


class IndexLog:
    def __init__(self, storage: Storage, index_dir: str) -> None:
        self.storage = storage
        self.index_dir = index_dir
        self.log_dir = f"{index_dir}/{LOG_DIR}"

    def entry_path(self, version: int) -> str:
        return f"{self.log_dir}/{version:020d}{_SUFFIX}"

    def versions(self) -> list[int]:
        """The committed versions: entries named exactly as commits name them (20 digits)."""
        return sorted(self.listing())

    def listing(self) -> dict[int, FileStatus]:
        """The committed versions' entries (one LIST): their sizes and times tell an index
        deleted and created again at the same place from the one before."""
        found = {}
        for status in self.storage.list_files(self.log_dir, recursive=False):
            match = _ENTRY_NAME.fullmatch(status.path.rsplit("/", 1)[-1])  # see is_entry_name
            if match:
                found[int(match.group(1))] = status
        return found

    def latest(self) -> Root:
        """The newest version that reads whole. Newer entries that do not (truncated, forged,
        or holding another version's root) are skipped with a warning naming them: queries
        stay exact on the older version (files changed since are read), and the next commit,
        numbered past them, makes the log whole again (``lakeseek refresh --mode full``)."""
        for _ in range(LISTINGS):
            versions = self.versions()
            if not versions:
                raise IndexNotFoundError(f"no lakeseek index at {self.storage.shown(self.index_dir)}")
            damaged = []
            for version in reversed(versions):
                try:
                    root = self.read(version)
                except IndexNotFoundError:
                    continue  # vacuumed since the listing: a newer version exists
                except IndexCorruptError as error:
                    damaged.append(str(error))
                    continue
                if damaged:
                    repair = self.removal(versions[-1]) or "run `lakeseek refresh --mode full` to repair"
                    logger.warning(
                        "%s; using version %d, the newest whole one (%s)", "; ".join(damaged), version, repair
                    )
                return root
            if damaged:
                break
            # Every entry listed was vacuumed since: the versions committed after the listing remain.
        if not damaged:
            shown = self.storage.shown(self.index_dir)
            raise IndexNotFoundError(f"no lakeseek index at {shown} (its log was emptied meanwhile)")
        raise IndexLogUnreadableError(
            f"every entry of the index log {self.log_dir} is damaged ({damaged[0]}): "
            f"remove the directory {self.index_dir} and create the index again"
        )

    def removal(self, version: int) -> str | None:
        """The way past a damaged entry numbered ``version`` when no commit can number past it
        (the last number a 20-digit name holds); None when a commit can."""
        return f"remove {self.entry_path(version)}: no version is numbered past it" if version >= LAST_VERSION else None

    def roots(self) -> dict[int, Root]:
        """Every version that reads whole, by number (damaged entries left out)."""
        found = {}
        for version in self.versions():
            try:
                found[version] = self.read(version)
            except (IndexCorruptError, IndexNotFoundError):  # damaged, or vacuumed since the listing
                continue
        return found

    def next_version(self, base: Root) -> int:
        """The number a commit on top of ``base`` takes: the next one, or past the damaged
        entries above ``base``. If an entry above it reads whole, another writer committed
        since: the next number then, so the commit fails and the writer starts again."""
        if base.version >= LAST_VERSION:
            raise LakeseekError(
                f"the index log {self.log_dir} is at version {base.version}, the last a 20-digit name holds: "
                f"no commit can follow it (remove {self.entry_path(base.version)} if lakeseek did not write it)"
            )
        above = [version for version in self.versions() if version > base.version]
        for version in above:
            try:
                self.read(version)
            except IndexNotFoundError:
                return base.version + 1  # vacuumed since the listing: a newer version exists
            except IndexCorruptError:
                continue
            return base.version + 1
        past = (above[-1] if above else base.version) + 1
        if past <= LAST_VERSION:
            return past
        # A damaged entry holds the last number a name has: the first number free of them, which
        # stays the newest whole version (the damaged ones above are skipped with a warning).
        number = base.version + 1
        while number in above:
            number += 1
        return number

    def read(self, version: int) -> Root:
        return self._read(version)[0]

    def _read(self, version: int) -> tuple[Root, dict]:
        path = self.entry_path(version)
        try:
            data = self.storage.read(path)
        except FileNotFoundError as error:
            raise IndexNotFoundError(f"index version {version} not found at {path}") from error
        body = decode_entry(data, path)
        root = Root.from_json(body, decode_content)
        if root.version != version:
            raise IndexCorruptError(f"index log entry {path} holds version {root.version}, not {version}")
        return root, body

    def history(self, since: int = -1) -> list[LogEntry]:
        """What each readable version after ``since`` did, oldest first (damaged entries left out)."""
        found = []
        for version in self.versions():
            if version <= since:
                continue
            try:
                root, body = self._read(version)
            except (IndexCorruptError, IndexNotFoundError):  # damaged, or vacuumed since the listing
                continue
            actions = body.get("actions")
            listed = tuple(a for a in actions if isinstance(a, dict)) if isinstance(actions, list) else ()
            found.append(LogEntry(version, root.operation, root.timestamp_ms, listed))
        return found

    def commit(self, root: Root, actions: Sequence[Action] = (), owner: str = "") -> None:
        """Commit ``root`` (made by ``actions``) as its version, or raise CommitFailedError if
        that version exists."""
        body = {**root.to_json(), "actions": [action.describe() for action in actions]}
        path = self.entry_path(root.version)
        if create_entry(self.storage, path, encode_entry(body), owner):
            return
        # A directory holds its name (no writer's entry). An entry gone since was another
        # writer's, which a vacuum has removed as older than the versions it keeps.
        if self.storage.is_dir(path):
            raise IndexCorruptError(
                f"index log entry {path} is a directory: it holds version {root.version}'s "
                "place, so no commit can be made; remove it, then run the operation again"
            )
        raise CommitFailedError(f"another writer committed index version {root.version} first")


def create_entry(storage: Storage, path: str, data: bytes, owner: str = "") -> bool:
    """Create a log entry with put-if-absent: True once ``path`` holds ``data``, False when
    another writer's entry holds it. A put whose answer was lost is judged by what the place
    holds: a store that wrote the entry and answered a retry "exists" made this commit, and one
    that never answered made it if the entry is there, while an empty place may still be
    filled by the put (CommitOutcomeUnknownError). Entries are never equal across commits:
    each holds its commit's time and operation."""
    try:
        storage.put_if_absent(path, data, owner)
        return True
    except FileExistsError:
        return _holds(storage, path) == data
    except storage_failures() as error:
        held = _holds(storage, path)
        if held is None:
            reason = one_line(error)
            raise CommitOutcomeUnknownError(
                f"the commit of log entry {storage.shown(path)} got no answer ({reason}), and whether it was "
                "made is not known yet: its files are kept; see `lakeseek history`, and run the operation "
                "again if it is not there"
            ) from error
        return held == data


def _holds(storage: Storage, path: str) -> bytes | None:
    """What the log entry at ``path`` holds now; None when nothing (or it cannot be read)."""
    try:
        return storage.read(path)
    except storage_failures():  # not found, a directory, or unreadable (OSError covers the first two)
        return None


def encode_entry(body: dict) -> bytes:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return json.dumps({"crc32": zlib.crc32(canonical.encode()), "entry": body}, sort_keys=True).encode()


def decode_entry(data: bytes, path: str) -> dict:
    try:
        wrapper = json.loads(data)
        body = wrapper["entry"]
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        valid = zlib.crc32(canonical.encode()) == wrapper["crc32"]
    except (ValueError, KeyError, TypeError, RecursionError) as error:  # JSON nested too deep: damage too
        raise IndexCorruptError(f"index log entry {path} is truncated or corrupt") from error
    if not valid:
        raise IndexCorruptError(f"index log entry {path} is corrupt (checksum mismatch)")
    return body
