"""The index log: numbered, immutable JSON entries, each the root of one index version.

``<index>/log/00000000000000000000.json`` is version 0. A new version is committed by
creating the next file with put-if-absent, so a commit is atomic, never overwrites, and
of two writers racing for one version exactly one wins. Files an entry references are
written before the entry, under unique names; until the entry exists they are invisible.
"""

from __future__ import annotations

import json
import zlib

from lakeseek.exceptions import CommitFailedError, IndexCorruptError, IndexNotFoundError
from lakeseek.format.root import Root
from lakeseek.io import Storage

LOG_DIR = "log"
_SUFFIX = ".json"


class IndexLog:
    def __init__(self, storage: Storage, index_dir: str) -> None:
        self.storage = storage
        self.index_dir = index_dir
        self.log_dir = f"{index_dir}/{LOG_DIR}"

    def entry_path(self, version: int) -> str:
        return f"{self.log_dir}/{version:020d}{_SUFFIX}"

    def versions(self) -> list[int]:
        found = []
        for status in self.storage.list_files(self.log_dir, recursive=False):
            name = status.path.rsplit("/", 1)[-1]
            stem = name[: -len(_SUFFIX)]
            if name.endswith(_SUFFIX) and stem.isdigit():
                found.append(int(stem))
        return sorted(found)

    def delete(self, version: int) -> None:
        self.storage.delete_file(self.entry_path(version))

    def latest(self) -> Root:
        versions = self.versions()
        if not versions:
            raise IndexNotFoundError(f"no lakeseek index at {self.index_dir}")
        return self.read(versions[-1])

    def read(self, version: int) -> Root:
        path = self.entry_path(version)
        try:
            data = self.storage.read(path)
        except FileNotFoundError as error:
            raise IndexNotFoundError(f"index version {version} not found at {path}") from error
        return Root.from_json(decode_entry(data, path))

    def commit(self, root: Root, owner: str = "") -> None:
        """Commit ``root`` as its version, or raise CommitFailedError if that version exists."""
        try:
            self.storage.put_if_absent(self.entry_path(root.version), encode_entry(root.to_json()), owner)
        except FileExistsError as error:
            raise CommitFailedError(f"another writer committed index version {root.version} first") from error


def encode_entry(body: dict) -> bytes:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return json.dumps({"crc32": zlib.crc32(canonical.encode()), "entry": body}, sort_keys=True).encode()


def decode_entry(data: bytes, path: str) -> dict:
    try:
        wrapper = json.loads(data)
        body = wrapper["entry"]
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        valid = zlib.crc32(canonical.encode()) == wrapper["crc32"]
    except (ValueError, KeyError, TypeError) as error:
        raise IndexCorruptError(f"index log entry {path} is truncated or corrupt") from error
    if not valid:
        raise IndexCorruptError(f"index log entry {path} is corrupt (checksum mismatch)")
    return body
