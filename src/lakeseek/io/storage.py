from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from lakeseek.exceptions import UnsupportedStorageError

T = TypeVar("T")


@dataclass(frozen=True)
class FileStatus:
    """A file as the storage layer sees it."""

    path: str
    size: int
    mtime_ns: int


class Stamp(NamedTuple):
    """What identifies one content of a file, for freshness checks: when any part differs,
    the file may hold other rows than when it was indexed.

    ``version`` is the storage's own token of a content: on local (POSIX) storage the inode
    number and the inode change time, which every write moves and which ``utime`` cannot set
    back (so a rewrite that restores size and mtime, ``cp -p``, ``rsync -t`` or an extracted
    tarball is still seen); an object store's ETag or generation once its backend supplies
    (the ETag an object store lists with each object); "" where the storage offers none (then
    size and mtime are all there is). See docs/freshness.md.
    """

    size: int
    mtime_ns: int
    version: str


@dataclass
class IOStats:
    """Counters of storage calls, by the request each is on an object store.

    ``reads``/``bytes_read`` count lakeseek's own reads, each one (ranged) GET: roots, footers,
    chunks. ``heads`` count existence checks of one file (HEAD), ``lists`` listings and
    directory checks (LIST), ``writes``/``bytes_written`` PUTs, ``deletes`` DELETEs. Data files
    are read by pyarrow's Parquet reader, which makes its own ranged reads (and no HEAD: it is
    given each file's size); ``data_files``/``data_bytes`` count the files handed to it and their
    sizes (an upper bound of what it reads).
    """

    reads: int = 0
    bytes_read: int = 0
    data_files: int = 0
    data_bytes: int = 0
    heads: int = 0
    lists: int = 0
    writes: int = 0
    bytes_written: int = 0
    deletes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_read(self, nbytes: int) -> None:
        with self._lock:
            self.reads += 1
            self.bytes_read += nbytes

    def add_data_files(self, count: int, nbytes: int) -> None:
        with self._lock:
            self.data_files += count
            self.data_bytes += nbytes

    def add_head(self) -> None:
        with self._lock:
            self.heads += 1

    def add_list(self) -> None:
        with self._lock:
            self.lists += 1

    def add_delete(self) -> None:
        with self._lock:
            self.deletes += 1

    def add_write(self, nbytes: int) -> None:
        with self._lock:
            self.writes += 1
            self.bytes_written += nbytes

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {
                "reads": self.reads,
                "bytes_read": self.bytes_read,
                "data_files": self.data_files,
                "data_bytes": self.data_bytes,
                "heads": self.heads,
                "lists": self.lists,
                "writes": self.writes,
                "bytes_written": self.bytes_written,
                "deletes": self.deletes,
            }


# The counters of the queries under way in this context (see ``counting``): each call
# counts on the storage's lifetime counters and on these, so that concurrent queries on one
# storage each see their own I/O.
_QUERY_COUNTERS: ContextVar[tuple[IOStats, ...]] = ContextVar("lakeseek_query_counters", default=())


@contextlib.contextmanager
def counting() -> Iterator[IOStats]:
    """The storage calls made in this block by this thread (and by the work it hands to pools
    through :func:`carrying_counters`), on every storage."""
    stats = IOStats()
    token = _QUERY_COUNTERS.set((*_QUERY_COUNTERS.get(), stats))
    try:
        yield stats
    finally:
        _QUERY_COUNTERS.reset(token)


def carrying_counters(work: Callable[..., T]) -> Callable[..., T]:
    """``work`` counting its storage calls where its caller's are counted, in whatever thread
    it runs (a pool's threads do not inherit the caller's context)."""
    counters = _QUERY_COUNTERS.get()

    def run(*args: object) -> T:
        token = _QUERY_COUNTERS.set(counters)
        try:
            return work(*args)
        finally:
            _QUERY_COUNTERS.reset(token)

    return run


class Storage:
    """The storage interface: reads, lists and writes files of one file system, and counts
    every call (on ``stats``, and on the counters of the queries under way: ``counting``).

    Paths are file-system paths (no scheme), as ``pyarrow.fs`` uses them. ``fs`` is the
    pyarrow file system itself, for pyarrow's readers of data files. This class implements
    everything through ``fs`` except what a backend must provide itself: an atomic
    ``put_if_absent``. A backend is a subclass in a module of its own (``local.py``), made
    known to :func:`lakeseek.io.storage_for` by one ``register_storage`` line.
    """

    def __init__(self, fs: pafs.FileSystem, scheme: str = "file", netloc: str = "") -> None:
        self.fs = fs
        self.scheme = scheme
        self.netloc = netloc
        self.stats = IOStats()  # every call since the storage was made; a query's own: ``counting``

    def _count(self, add: Callable[..., None], *amounts: int) -> None:
        add(self.stats, *amounts)
        for counters in _QUERY_COUNTERS.get():
            add(counters, *amounts)

    def count_data_files(self, count: int, nbytes: int) -> None:
        """Data files handed to pyarrow's reader (which makes its own reads), and their sizes."""
        self._count(IOStats.add_data_files, count, nbytes)

    # Whether paths are local file-system paths (they are shown as they are, not as URIs).
    is_local = False

    def shown(self, path: str) -> str:
        """``path`` as messages name it: a local path as it is, else its URI."""
        return path if self.is_local else self.uri(path)

    def uri(self, path: str) -> str:
        """The URI Spark and other engines use for ``path``; :func:`storage_for` of it gives
        this storage back. Paths are taken to start with the URI's host or bucket (as pyarrow's
        object store file systems name them); a backend whose paths do not overrides this."""
        return f"{self.scheme}://{path}"

    # -- metadata -------------------------------------------------------------------------
    def is_dir(self, path: str) -> bool:
        self._count(IOStats.add_list)
        return self.fs.get_file_info(path).type == pafs.FileType.Directory

    def list_files(self, directory: str, *, recursive: bool = True, start_after: str | None = None) -> list[FileStatus]:
        """Files below ``directory``; an absent directory lists as empty. ``start_after``: only
        the files whose path sorts after it (an object store lists only those)."""
        selector = pafs.FileSelector(directory, recursive=recursive, allow_not_found=True)
        infos = self.fs.get_file_info(selector)
        self._count(IOStats.add_list)
        found = [FileStatus(i.path, i.size, i.mtime_ns or 0) for i in infos if i.type == pafs.FileType.File]
        return found if start_after is None else [status for status in found if status.path > start_after]

    def walk_files(
        self, directory: str, skip_dir: Callable[[str], bool], skip_file: Callable[[str], bool]
    ) -> dict[str, Stamp]:
        """Every file below ``directory`` by path relative to it, with its stamp, leaving out
        files whose name ``skip_file`` accepts and directories whose name ``skip_dir``
        accepts (they are not entered). An absent directory lists as empty.

        A stamp must change whenever a file's content does: it is all that tells a query
        that an indexed file was rewritten (docs/freshness.md). This implementation lists
        through the Arrow file system, whose FileInfo carries no ETag or generation: size and
        mtime are all the stamp has (version ""), so a backend whose file system does not move
        a file's mtime on every write (pyarrow's in-memory one does not) must override this
        with a version token of its own.
        """
        self._count(IOStats.add_list)
        infos = self.fs.get_file_info(pafs.FileSelector(directory, recursive=True, allow_not_found=True))
        listed = (
            (info.path[len(directory) + 1 :], Stamp(info.size, info.mtime_ns or 0, ""))
            for info in infos
            if info.type == pafs.FileType.File
        )
        return visible_files(listed, skip_dir, skip_file)

    def forget_listing(self, directory: str) -> None:
        """A read found a file below ``directory`` changed since :meth:`walk_files` listed it:
        a listing the backend keeps of it (a watched local tree) is not to be given again."""

    def stamp(self, path: str) -> Stamp | None:
        """One file's stamp now, as :meth:`walk_files` gives it (None: no such file). This
        implementation asks :meth:`walk_files` for the file's directory, so that a backend's
        own version tokens hold; a backend may answer for one file more cheaply."""
        directory, _, name = path.rpartition("/")
        found = self.walk_files(directory, skip_dir=lambda _: True, skip_file=lambda other: other != name)
        return found.get(name)

    def list_dirs(self, directory: str) -> list[str]:
        """Names of the directories directly in ``directory``; an absent one lists as empty."""
        return self.list_directory(directory)[1]

    def list_directory(self, directory: str) -> tuple[list[FileStatus], list[str]]:
        """The files directly in ``directory`` and the names of the directories in it, from one
        listing; an absent one lists as empty."""
        infos = self.fs.get_file_info(pafs.FileSelector(directory, recursive=False, allow_not_found=True))
        self._count(IOStats.add_list)
        files = [FileStatus(i.path, i.size, i.mtime_ns or 0) for i in infos if i.type == pafs.FileType.File]
        return files, [i.base_name for i in infos if i.type == pafs.FileType.Directory]

    # -- reads ----------------------------------------------------------------------------
    def _opened(self, path: str) -> pa.NativeFile:
        """``path`` opened to read; a directory in its place is no file: FileNotFoundError, as
        for a file removed (pyarrow raises a bare OSError for it)."""
        try:
            return self.fs.open_input_file(path)
        except FileNotFoundError:
            raise
        except OSError as error:
            if self.fs.get_file_info(path).type == pafs.FileType.Directory:
                raise FileNotFoundError(f"{path} is a directory, not a file") from error
            raise

    def read(self, path: str) -> bytes:
        with self._opened(path) as f:
            data = f.read()
        self._count(IOStats.add_read, len(data))
        return data

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        with self._opened(path) as f:
            data = f.read_at(length, offset)
        self._count(IOStats.add_read, len(data))
        return data

    def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """The ``(offset, length)`` ranges of one file, in order, read at once: a store that can
        fetches them in parallel and merges nearby ones (one request costs far more there than
        the bytes between two ranges)."""
        with self._opened(path) as f:
            found = [f.read_at(length, offset) for offset, length in ranges]
        for data in found:
            self._count(IOStats.add_read, len(data))
        return found

    def open_input(self, path: str, size: int | None = None) -> pa.NativeFile:
        """A file to read at random, for pyarrow's readers (a data file's footer). ``size``, when
        known, spares a backend that needs it a HEAD request."""
        return self._opened(path)

    # -- writes ---------------------------------------------------------------------------
    def write(self, path: str, data: bytes) -> None:
        """Write a file under a name nobody else writes (unique names, not yet referenced)."""
        self.fs.create_dir(parent(path), recursive=True)
        try:
            stream = self.fs.open_output_stream(path)
        except FileNotFoundError:  # a cleaner removed the directory while it was still empty
            self.fs.create_dir(parent(path), recursive=True)
            stream = self.fs.open_output_stream(path)
        with stream as out:
            out.write(data)
        self._count(IOStats.add_write, len(data))

    @contextlib.contextmanager
    def output(self, path: str) -> Iterator[pa.NativeFile]:
        """A stream writing a file under a name nobody else writes (as :meth:`write`), for
        writers that produce a large file in parts."""
        self.fs.create_dir(parent(path), recursive=True)
        with self.fs.open_output_stream(path) as out:
            yield out
            written = out.tell()
        self._count(IOStats.add_write, written)

    def put_if_absent(self, path: str, data: bytes, owner: str = "") -> None:
        """Create ``path`` holding ``data`` atomically, or raise ``FileExistsError``.

        The one commit primitive of lakeseek: readers see either no file or the whole file,
        and of two writers racing for the same path exactly one wins. ``owner`` (an operation
        id) names any temporary file the backend makes, so a crash's leftover can be vacuumed.
        A backend that cannot do this atomically must not pretend to.
        """
        raise UnsupportedStorageError(
            f"atomic put-if-absent commits are not supported on {self.fs.type_name} storage yet"
        )

    def delete_dir(self, path: str) -> None:
        self._count(IOStats.add_delete)
        self.fs.delete_dir(path)

    def delete_file(self, path: str) -> None:
        """Delete a file; one already gone is not an error (another cleaner got there first)."""
        self._count(IOStats.add_delete)
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(path)

    def is_file(self, path: str) -> bool:
        self._count(IOStats.add_head)
        return self.fs.get_file_info(path).type == pafs.FileType.File


# What a storage's failure raises: OSError, and the errors of the client libraries the backends
# use (each backend registers its own), which front ends report in one line, never a traceback.
_FAILURES: list[type[BaseException]] = [OSError]


def register_failure(kind: type[BaseException]) -> None:
    """Counts ``kind`` (a backend's client library error) as a failure of the storage."""
    if kind not in _FAILURES:
        _FAILURES.append(kind)


def storage_failures() -> tuple[type[BaseException], ...]:
    return tuple(_FAILURES)


def visible_files(
    listed: Iterable[tuple[str, Stamp]], skip_dir: Callable[[str], bool], skip_file: Callable[[str], bool]
) -> dict[str, Stamp]:
    """The files of a flat listing (relative paths) that no skipped directory holds and whose
    name is not skipped (see :meth:`Storage.walk_files`)."""
    skipped: dict[str, bool] = {}  # directory (relative) -> whether a directory on its path is skipped
    found = {}
    for relative, stamp in listed:
        parent_dir, _, name = relative.rpartition("/")
        if parent_dir not in skipped:
            skipped[parent_dir] = any(skip_dir(part) for part in parent_dir.split("/")) if parent_dir else False
        if not skipped[parent_dir] and not skip_file(name):
            found[relative] = stamp
    return found


def parent(path: str) -> str:
    """The directory of a file-system path."""
    return path.rsplit("/", 1)[0] if "/" in path else "."
