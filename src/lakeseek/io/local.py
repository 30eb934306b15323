"""Local (POSIX) storage: paths of this machine's file system.

Its put-if-absent is link(2) of a fully written, fsynced temporary file (atomic, and it
fails when the name is taken), and a file's version token is its inode and inode change
time, which every write moves and ``utime`` cannot set back (docs/freshness.md).
"""

from __future__ import annotations

import os
import stat
import threading
import uuid
from collections.abc import Callable, Iterator
from functools import lru_cache

import pyarrow.fs as pafs

from lakeseek.exceptions import DataFileChangedError
from lakeseek.io.storage import IOStats, Stamp, Storage, parent
from lakeseek.io.watch import TreeWatch, watch_tree


class LocalStorage(Storage):
    is_local = True

    def __init__(self) -> None:
        super().__init__(pafs.LocalFileSystem(), "file")
        # (directory, skip rules) -> its watch and its last listing, or _UNWATCHABLE.
        self._listings: dict[tuple, object] = {}
        self._tree_locks: dict[tuple, threading.Lock] = {}
        self._watch_lock = threading.Lock()

    def uri(self, path: str) -> str:
        return "file://" + path

    def walk_files(
        self, directory: str, skip_dir: Callable[[str], bool], skip_file: Callable[[str], bool]
    ) -> dict[str, Stamp]:
        """See :meth:`Storage.walk_files`. A listing is a ``scandir`` walk and one ``stat`` per
        file (pyarrow's makes the same calls but drops the inode and ctime); where the tree can
        be watched (:mod:`lakeseek.io.watch`), a tree that has not changed since its last
        listing is not listed again: that listing is returned (callers must not change it)."""
        key = (directory, skip_dir, skip_file)
        # One check-and-list at a time per tree: a query that finds the events drained by
        # another must wait for that one's listing, not take the listing before it.
        with self._watch_lock:
            tree_lock = self._tree_locks.setdefault(key, threading.Lock())
        with tree_lock:
            known = self._listings.get(key, _NEVER_LISTED)
            if known is _UNWATCHABLE:
                return self._walk(directory, skip_dir, skip_file, None) or {}
            # The watches are on directories, not on the path: a lake whose root (or a directory
            # above it, or a symlink on the way) was swapped for another tree raises no event on
            # them, so the path must still lead to the directory that was listed.
            if known is not _NEVER_LISTED and not known[0].changed() and _identity(directory) == known[2]:
                return known[1]
            # Watched afresh from the first directory listed on: a change after a directory's
            # watch is in place raises an event, one before it is in the listing. A walk is no
            # snapshot: one the tree changed under may hold a file written after another it
            # missed (in a directory listed before). It is walked again, up to WALKS times in
            # all, until a walk saw no change; a tree that changes under every walk is an error.
            for walk in range(1, WALKS + 1):
                watch = watch_tree(directory, key)
                identity = _identity(directory)
                found = self._walk(directory, skip_dir, skip_file, watch)
                if watch is None or not watch.usable or found is None or not watch.changed():
                    break
                watch.close()
                if walk == WALKS:
                    self._listings.pop(key, None)
                    raise DataFileChangedError(
                        f"{directory} changed while it was listed, {WALKS} times: run it again when it changes less"
                    )
            if watch is None or not watch.usable:
                if watch is not None:
                    watch.close()
                self._listings[key] = _UNWATCHABLE  # listed on every query from now on
            elif found is None:
                watch.close()
                self._listings.pop(key, None)
            else:
                self._listings[key] = (watch, found, identity)
            return found or {}

    def forget_listing(self, directory: str) -> None:
        """See :meth:`Storage.forget_listing`. A watch that saw no change since the listing a read
        found wrong missed one (a write it cannot see): the tree is listed on every query from
        now on. One that saw it only lists again."""
        with self._watch_lock:
            keys = [key for key in self._listings if key[0] == directory]
        for key in keys:
            with self._tree_locks[key]:
                known = self._listings.get(key)
                if known is None or known is _UNWATCHABLE:
                    continue
                watch = known[0]
                missed = not watch.changed()
                watch.close()
                if missed:
                    self._listings[key] = _UNWATCHABLE
                else:
                    self._listings.pop(key)

    def _walk(
        self, directory: str, skip_dir: Callable[[str], bool], skip_file: Callable[[str], bool], watch: TreeWatch | None
    ) -> dict[str, Stamp] | None:
        self._count(IOStats.add_list)
        try:
            top = os.stat(directory)
        except FileNotFoundError:
            return None
        found: dict[str, Stamp] = {}
        # Each directory (as a prefix of relative paths: "" or "a/b/") with the (device, inode)
        # of itself and of the directories above it: a symlink back to one of them would loop
        # forever, so it is not entered.
        pending = [("", frozenset([(top.st_dev, top.st_ino)]))]
        is_file, is_dir = stat.S_ISREG, stat.S_ISDIR

        def skipped(name: str) -> bool:  # skipped as a file and as a directory: no need to know which
            return skip_file(name) and skip_dir(name)

        while pending:
            prefix, ancestors = pending.pop()
            if watch is not None:
                watch.add(f"{directory}/{prefix}")
            for name, info, linked in _scan(f"{directory}/{prefix}", skipped):
                mode = info.st_mode
                # A symlink is written through a path no watch covers; a file system mounted
                # in the lake raises its events on itself (one of other machines, none here).
                if watch is not None and (linked or info.st_dev != top.st_dev):
                    watch.give_up()
                    watch = None
                if is_file(mode):
                    if not skip_file(name):
                        found[prefix + name] = Stamp(info.st_size, info.st_mtime_ns, local_version(info))
                        if watch is not None:  # by its inode: a write through any name of it
                            watch.add(f"{directory}/{prefix}{name}")
                elif is_dir(mode) and (info.st_dev, info.st_ino) not in ancestors and not skip_dir(name):
                    pending.append((f"{prefix}{name}/", ancestors | {(info.st_dev, info.st_ino)}))
        return found

    def stamp(self, path: str) -> Stamp | None:
        self._count(IOStats.add_head)
        try:
            info = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return Stamp(info.st_size, info.st_mtime_ns, local_version(info)) if stat.S_ISREG(info.st_mode) else None

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


WALKS = 3
_NEVER_LISTED = object()
_UNWATCHABLE = object()


def _identity(directory: str) -> tuple[int, int] | None:
    """The device and inode the path leads to now (None: nothing there)."""
    try:
        status = os.stat(directory)
    except OSError:
        return None
    return status.st_dev, status.st_ino


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


_PREFIXES_ASKED = frozenset({".", "_"})


def _utf8(name: str) -> bool:
    """Whether a name read from the file system was UTF-8 (Python keeps other bytes as surrogates)."""
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def _scan(directory: str, skipped: Callable[[str], bool]) -> Iterator[tuple[str, os.stat_result, bool]]:
    """The entries of a local directory with their stats, symlinks followed (as pyarrow's
    listing and Hadoop's do), and whether each is a symlink; entries whose name starts with
    ``.`` or ``_`` and is ``skipped`` are left out unread (a Spark lake's checksum files are
    half its entries); the caller's rules still decide every other entry. Entries removed
    meanwhile, broken symlinks, and a directory removed meanwhile list as nothing: their files
    are gone."""
    try:
        handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY) if _SCAN_BY_FD else None
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        with os.scandir(directory if handle is None else handle) as listing:
            for entry in listing:
                name = entry.name
                # Only names that start with a dot or an underscore are asked (checksum files,
                # metadata directories): asking every name costs more than the stats it saves.
                if name[:1] in _PREFIXES_ASKED and skipped(name):
                    continue
                if not name.isascii() and not _utf8(name):
                    continue  # Hadoop's listing (Spark's) leaves out a name that is not UTF-8 too
                try:
                    yield entry.name, entry.stat(), entry.is_symlink()
                except FileNotFoundError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return
    finally:
        if handle is not None:
            os.close(handle)
