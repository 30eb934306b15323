"""Leases: a running operation's claim on the files it writes before it commits.

An operation writes ``_leases/<operation id>.json`` before anything else and deletes it
when it ends. Nothing waits on a lease (writers never block each other or readers); a
lease only tells vacuum which uncommitted files belong to work still in progress. A
lease is dead when it has expired, or when its process is gone from this host: then its
uncommitted files are debris, which the next operation (or ``vacuum``, or ``cancel``)
removes. ``cancel`` deletes leases outright; a cancelled operation that is still running
finds its lease gone and does not commit.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass

from lakeseek.io import Storage

LEASE_DIR = "_leases"
LEASE_TTL_MS = 6 * 3600 * 1000


@dataclass(frozen=True)
class Lease:
    operation_id: str
    operation: str
    host: str
    pid: int
    started_ms: int
    expires_ms: int

    def is_alive(self, now_ms: int | None = None) -> bool:
        if (now_ms or _now_ms()) > self.expires_ms:
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


class Leases:
    def __init__(self, storage: Storage, index_dir: str) -> None:
        self.storage = storage
        self.directory = f"{index_dir}/{LEASE_DIR}"

    def path(self, operation_id: str) -> str:
        return f"{self.directory}/{operation_id}.json"

    def acquire(self, operation_id: str, operation: str) -> Lease:
        now = _now_ms()
        lease = Lease(operation_id, operation, socket.gethostname(), os.getpid(), now, now + LEASE_TTL_MS)
        # Atomic, so that vacuum never reads a half-written lease of a live operation as a dead one.
        self.storage.put_if_absent(self.path(operation_id), json.dumps(asdict(lease)).encode(), operation_id)
        return lease

    def holds(self, lease: Lease) -> bool:
        return self.storage.is_file(self.path(lease.operation_id))

    def release(self, operation_id: str) -> None:
        self.storage.delete_file(self.path(operation_id))

    def all(self) -> list[Lease]:
        """Every lease; an unreadable one (its writer died mid-write) counts as expired."""
        found = []
        for status in self.storage.list_files(self.directory, recursive=False):
            name = status.path.rsplit("/", 1)[-1]
            if not name.endswith(".json"):
                continue
            try:
                found.append(Lease(**json.loads(self.storage.read(status.path))))
            except (ValueError, TypeError, FileNotFoundError):
                found.append(Lease(name[: -len(".json")], "unknown", "", 0, 0, 0))
        return found


def _now_ms() -> int:
    return int(time.time() * 1000)
