"""Leases: a running operation's claim on the files it writes before it commits.

An operation writes ``_leases/<operation id>.json`` before anything else and deletes it
when it ends. Nothing waits on a lease (writers never block each other or readers); a
lease only tells vacuum which uncommitted files belong to work still in progress. A
lease is dead when it has expired, or when its process is gone from this host: then its
uncommitted files are debris, which the next operation (or ``vacuum``, or ``cancel``)
removes. ``cancel`` deletes leases outright and commits a version saying so; a cancelled
operation that is still running finds its lease gone and does not commit. Leases are not
renewed: an operation must commit within a day (less a margin) of starting.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from dataclasses import asdict, dataclass

from lakeseek.io import Storage

LEASE_DIR = "_leases"
LEASE_TTL_MS = 24 * 3600 * 1000
# An operation commits only while its lease has this long left: vacuum, which takes the files
# of expired leases, cannot have taken its files between its last check and its commit.
COMMIT_MARGIN_MS = 3600 * 1000


# Operation ids are uuid4 hex strings: a lease file named otherwise is not lakeseek's, and
# no name read from storage ever reaches a path without matching this.
OPERATION_ID = re.compile(r"[0-9a-f]{32}")
_MAX_PID = 2**31 - 1


@dataclass(frozen=True)
class Lease:
    operation_id: str
    operation: str
    host: str
    pid: int
    started_ms: int
    expires_ms: int
    readable: bool = True  # False: the file is damaged; such a lease counts as expired

    def is_alive(self, now_ms: int | None = None) -> bool:
        if not self.readable or (now_ms or _now_ms()) > self.expires_ms:
            return False
        if self.host != socket.gethostname():
            return True  # another machine's process: trust the expiry
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    @classmethod
    def parse(cls, operation_id: str, data: bytes) -> Lease:
        """The lease in ``data``, checked field by field; a damaged one if anything is off
        (wrong types, a pid no process can have, another operation's id)."""
        try:
            raw = json.loads(data)
            fields = {
                "operation_id": raw["operation_id"],
                "operation": raw["operation"],
                "host": raw["host"],
                "pid": raw["pid"],
                "started_ms": raw["started_ms"],
                "expires_ms": raw["expires_ms"],
            }
        except (ValueError, KeyError, TypeError, RecursionError):  # JSON nested too deep: damaged too
            return cls.damaged(operation_id)
        texts = all(isinstance(fields[key], str) for key in ("operation_id", "operation", "host"))
        numbers = all(
            isinstance(fields[key], int) and not isinstance(fields[key], bool)
            for key in ("pid", "started_ms", "expires_ms")
        )
        if not (texts and numbers) or fields["operation_id"] != operation_id or not 0 < fields["pid"] <= _MAX_PID:
            return cls.damaged(operation_id)
        return cls(**fields)

    @classmethod
    def damaged(cls, operation_id: str) -> Lease:
        return cls(operation_id, "unknown", "", 0, 0, 0, readable=False)


class Leases:
    def __init__(self, storage: Storage, index_dir: str) -> None:
        self.storage = storage
        self.directory = f"{index_dir}/{LEASE_DIR}"

    def path(self, operation_id: str) -> str:
        if not OPERATION_ID.fullmatch(operation_id):
            raise ValueError(f"not an operation id: {operation_id!r}")
        return f"{self.directory}/{operation_id}.json"

    def acquire(self, operation_id: str, operation: str) -> Lease:
        now = _now_ms()
        lease = Lease(operation_id, operation, socket.gethostname(), os.getpid(), now, now + LEASE_TTL_MS)
        body = {key: value for key, value in asdict(lease).items() if key != "readable"}
        # Atomic, so that vacuum never reads a half-written lease of a live operation as a dead one.
        self.storage.put_if_absent(self.path(operation_id), json.dumps(body).encode(), operation_id)
        return lease

    def holds(self, lease: Lease) -> bool:
        return self.storage.is_file(self.path(lease.operation_id))

    def release(self, operation_id: str) -> None:
        self.storage.delete_file(self.path(operation_id))

    def all(self) -> list[Lease]:
        """Every lease, by the operation id its file is named after; a damaged one (its
        writer died mid-write, or it was tampered with) counts as expired."""
        found = []
        for name in self._names():
            operation_id = name.removesuffix(".json")
            if not (name.endswith(".json") and OPERATION_ID.fullmatch(operation_id)):
                continue
            try:
                found.append(Lease.parse(operation_id, self.storage.read(f"{self.directory}/{name}")))
            except FileNotFoundError:
                continue  # released meanwhile
        return found

    def strays(self) -> list[str]:
        """Files in the lease directory that are neither leases nor a lease being written:
        reported, never deleted (lakeseek did not write them)."""
        return [
            name
            for name in self._names()
            if not name.startswith(".tmp-")
            and not (name.endswith(".json") and OPERATION_ID.fullmatch(name.removesuffix(".json")))
        ]

    def _names(self) -> list[str]:
        try:
            statuses = self.storage.list_files(self.directory, recursive=False)
        except FileNotFoundError:
            return []  # another operation removed the directory while it was listed
        return [status.path.rsplit("/", 1)[-1] for status in statuses]


def _now_ms() -> int:
    return int(time.time() * 1000)
