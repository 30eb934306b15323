"""Local (POSIX) storage: paths of this machine's file system.

Its put-if-absent is link(2) of a fully written, fsynced temporary file (atomic, and it
fails when the name is taken), and a file's version token is its inode and inode change
time, which every write moves and ``utime`` cannot set back (docs/freshness.md).
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Callable, Iterator
from functools import lru_cache

import pyarrow.fs as pafs

from lakeseek.io.storage import IOStats, Stamp, Storage, parent


class LocalStorage(Storage):
    is_local = True

    def __init__(self) -> None:
        super().__init__(pafs.LocalFileSystem(), "file")

    def uri(self, path: str) -> str:
        return "file://" + path

    def walk_files(
        self, directory: str, skip_dir: Callable[[str], bool], skip_file: Callable[[str], bool]
    ) -> dict[str, Stamp]:
        """See :meth:`Storage.walk_files`. Lists the lake on every query, so it costs one pass
        over the entries: a ``scandir`` walk and one ``stat`` per file (pyarrow's listing makes
        the same calls but drops the inode and ctime)."""
        self._count(IOStats.add_list)
        try:
            top = os.stat(directory)
        except FileNotFoundError:
            return {}
        found: dict[str, Stamp] = {}
        # Each directory (as a prefix of relative paths: "" or "a/b/") with the (device, inode)
        # of itself and of the directories above it: a symlink back to one of them would loop
        # forever, so it is not entered.
        pending = [("", frozenset([(top.st_dev, top.st_ino)]))]
        is_file, is_dir = stat.S_ISREG, stat.S_ISDIR
        while pending:
            prefix, ancestors = pending.pop()
            for name, info in _scan(f"{directory}/{prefix}"):
                mode = info.st_mode
                if is_file(mode):
                    if not skip_file(name):
                        found[prefix + name] = Stamp(info.st_size, info.st_mtime_ns, local_version(info))
                elif is_dir(mode) and (info.st_dev, info.st_ino) not in ancestors and not skip_dir(name):
                    pending.append((f"{prefix}{name}/", ancestors | {(info.st_dev, info.st_ino)}))
        return found

    def put_if_absent(self, path: str, data: bytes, owner: str = "") -> None:
        directory = parent(path)
        os.makedirs(directory, exist_ok=True)
        # Named after its owner (an operation id) so that a crash's leftover can be attributed and vacuumed.
        temporary = os.path.join(directory, f".tmp-{owner}-{uuid.uuid4().hex}")
        with open(temporary, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temporary, path)  # fails with FileExistsError when the name is taken
        finally:
            os.unlink(temporary)
        self._count(IOStats.add_write, len(data))


def local_version(status: os.stat_result) -> str:
    """The version token of a local file: ``<inode>-<ctime in ns>``."""
    return f"{status.st_ino}-{status.st_ctime_ns}"


def open_local(location: str) -> tuple[Storage, str]:
    """A local path, or a ``file:`` URI taken literally as Hadoop (and so Spark) takes it:
    ``#`` and ``?`` are part of the name, not a fragment or a query."""
    if location.startswith("file:"):
        rest = location[len("file:") :]
        location = "/" + rest[2:].partition("/")[2] if rest.startswith("//") else rest
    return _local_storage(), os.path.abspath(os.path.expanduser(location)).rstrip("/") or "/"


@lru_cache(maxsize=1)
def _local_storage() -> LocalStorage:
    return LocalStorage()


# Where scandir takes an open directory, each entry's stat is relative to it (no lookup of
# the whole path per file): about 15% off the listing every query makes.
_SCAN_BY_FD = os.scandir in os.supports_fd and hasattr(os, "O_DIRECTORY")


def _scan(directory: str) -> Iterator[tuple[str, os.stat_result]]:
    """The entries of a local directory with their stats, symlinks followed (as pyarrow's
    listing and Hadoop's do). Entries removed meanwhile, broken symlinks, and a directory
    removed meanwhile list as nothing: their files are gone."""
    try:
        handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY) if _SCAN_BY_FD else None
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        with os.scandir(directory if handle is None else handle) as listing:
            for entry in listing:
                try:
                    yield entry.name, entry.stat()
                except FileNotFoundError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return
    finally:
        if handle is not None:
            os.close(handle)
