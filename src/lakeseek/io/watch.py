"""Change notification for local directory trees (Linux inotify), so that a lake that has not
changed since its last listing need not be listed again.

A :class:`TreeWatch` watches every directory of a listing and every file in it. The kernel
queues an event when a write, truncate, rename, create, delete or attribute change completes
under a watched directory, or to a watched file by any of its names (a watch is on the inode:
a hard link made later, and writes through it, raise events), before the call that made it
returns; so once the queue holds no event for a tree, the tree is as its last listing saw it,
and that listing is exact. A file system mounted in the tree raises no event there: every tree
counts as changed when the process's mount table does (``/proc/self/mountinfo`` polls ready),
and a tree with a directory on another file system than its root is not watched. What inotify
cannot see makes the watch give up, and every query lists again: file systems where other
machines write (NFS, SMB, FUSE...: only local file systems are watched), files reached through
a symlink, and running out of watches. An overflowing queue only costs every tree one more
listing.

The process has one inotify instance (the kernel allows a user 128 of them), shared by up to
``MAX_TREES`` trees; the one used least recently is unwatched to make room for another.
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable

# inotify(7): every change to an entry or to the directory itself.
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_Q_OVERFLOW, _IN_IGNORED = 0x4000, 0x8000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows
# File systems whose changes all go through this machine's kernel.
_LOCAL_FILE_SYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "bcachefs", "jfs", "reiserfs"}
)
MAX_TREES = 64


class _Tree:
    def __init__(self) -> None:
        self.watches: set[int] = set()
        self.changed = False
        self.usable = True


class _Watcher:
    """The process's inotify instance, and which trees each of its watches belongs to."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pid = os.getpid()  # a forked child must not read its parent's events
        self.lock = threading.Lock()
        self.trees: OrderedDict[Hashable, _Tree] = OrderedDict()
        self.owners: dict[int, set[Hashable]] = {}  # a watch (a directory's, a file's) -> its trees
        self.mounts = _MountTable()

    def add(self, key: Hashable, path: str) -> None:
        with self.lock:
            tree = self.trees.get(key)
            if tree is None or not tree.usable or self.pid != os.getpid():
                if tree is not None:
                    tree.usable = False
                return
            watch = _libc().inotify_add_watch(self.fd, os.fsencode(path), _MASK)
            if watch < 0:
                tree.usable = False
                return
            tree.watches.add(watch)
            self.owners.setdefault(watch, set()).add(key)

    def changed(self, key: Hashable) -> bool:
        if self.pid != os.getpid():
            return True
        with self.lock:
            self._read_events()
            if self.mounts.changed():
                for tree in self.trees.values():
                    tree.changed = True
            tree = self.trees.get(key)
            if tree is None:
                return True
            self.trees.move_to_end(key)
            changed, tree.changed = tree.changed or not tree.usable, False
            return changed

    def open(self, key: Hashable) -> None:
        with self.lock:
            self._forget(key)
            self.trees[key] = _Tree()
            while len(self.trees) > MAX_TREES:
                self._forget(next(iter(self.trees)))

    def close(self, key: Hashable) -> None:
        with self.lock:
            self._forget(key)

    def give_up(self, key: Hashable) -> None:
        with self.lock:
            tree = self.trees.get(key)
            if tree is not None:
                tree.usable = False

    def usable(self, key: Hashable) -> bool:
        tree = self.trees.get(key)
        return tree is not None and tree.usable

    def _forget(self, key: Hashable) -> None:
        tree = self.trees.pop(key, None)
        for watch in tree.watches if tree is not None else ():
            owners = self.owners.get(watch, set())
            owners.discard(key)
            if not owners:
                self.owners.pop(watch, None)
                _libc().inotify_rm_watch(self.fd, watch)

    def _read_events(self) -> None:
        """Mark the trees that had an event (all of them when the queue overflowed)."""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                watch, mask, _, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:
                    for tree in self.trees.values():
                        tree.changed = True
                    continue
                for key in self.owners.get(watch, ()):
                    self.trees[key].changed = True
                if mask & _IN_IGNORED:  # the directory is gone: so is its watch
                    for key in self.owners.pop(watch, ()):
                        self.trees[key].watches.discard(watch)


class _MountTable:
    """Whether the process's mount table changed since the last call (the kernel makes
    ``/proc/self/mountinfo`` poll ready when it does, until it is read again); always, where
    that cannot be told."""

    def __init__(self) -> None:
        try:
            self._file = open("/proc/self/mountinfo", "rb")  # noqa: SIM115  (kept open: polled)
            self._file.read()
            self._poll = select.poll()
            self._poll.register(self._file, select.POLLPRI | select.POLLERR)
        except OSError:
            self._file = None

    def changed(self) -> bool:
        if self._file is None:
            return True
        if not self._poll.poll(0):
            return False
        self._file.seek(0)
        self._file.read()
        return True


class TreeWatch:
    """The watches of one directory tree (see the module's text)."""

    def __init__(self, watcher: _Watcher, key: Hashable) -> None:
        self._watcher = watcher
        self._key = key
        watcher.open(key)

    @property
    def usable(self) -> bool:
        return self._watcher.usable(self._key)

    def add(self, path: str) -> None:
        """Watch a directory (before it is listed, so that a change after the listing is seen),
        or a file (its inode, whatever its names)."""
        self._watcher.add(self._key, path)

    def give_up(self) -> None:
        """Something in the tree is out of the watches' sight: list it on every query."""
        self._watcher.give_up(self._key)

    def changed(self) -> bool:
        """Whether anything happened in the tree since the last call (or the watch cannot tell,
        or it is no longer watched)."""
        return self._watcher.changed(self._key)

    def close(self) -> None:
        self._watcher.close(self._key)


def watch_tree(root: str, key: Hashable) -> TreeWatch | None:
    """A new, empty watch for the tree at ``root`` (``key`` names it, with the listing rules),
    or None where changes to it cannot all be seen (not Linux, not a local file system, no
    inotify instance to be had)."""
    if not sys.platform.startswith("linux") or _file_system(root) not in _LOCAL_FILE_SYSTEMS:
        return None
    watcher = _watcher()
    return None if watcher is None else TreeWatch(watcher, key)


def _file_system(path: str) -> str | None:
    """The type of the file system ``path`` is on, from /proc/self/mountinfo."""
    real = os.path.realpath(path)
    found, longest = None, -1
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields, _, tail = line.partition(" - ")
                mount_point = fields.split(" ")[4].replace("\\040", " ")
                inside = real == mount_point or real.startswith(mount_point.rstrip("/") + "/")
                if inside and len(mount_point) > longest:
                    found, longest = tail.split(" ", 1)[0], len(mount_point)
    except (OSError, IndexError):
        return None
    return found


_WATCHER: _Watcher | None = None
_WATCHER_PID = 0
_WATCHER_LOCK = threading.Lock()


def _watcher() -> _Watcher | None:
    """The process's inotify instance (a forked child makes its own)."""
    global _WATCHER, _WATCHER_PID
    with _WATCHER_LOCK:
        if _WATCHER is None or os.getpid() != _WATCHER_PID:
            fd = _libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            _WATCHER = None if fd < 0 else _Watcher(fd)
            _WATCHER_PID = os.getpid()
        return _WATCHER


_LIBC = None


def _libc() -> ctypes.CDLL:
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


__all__ = ["MAX_TREES", "TreeWatch", "watch_tree"]
