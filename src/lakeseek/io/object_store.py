"""Storage in an object store (one S3 bucket, GCS bucket or Azure container) through obstore.

Why obstore for lakeseek's own reads and writes: its ``put(mode="create")`` is a real
conditional create on every store (S3 ``If-None-Match: *``, GCS generation-match 0, Azure
``If-None-Match: *``), the one commit primitive lakeseek needs, with no rename, overwrite or
lock service; pyarrow's file systems write unconditionally. Its ranged GET reads a known byte
range in one request, with no HEAD first (the root knows every size and offset). Data files
are read by pyarrow's own file system for the store (``fs``), which Parquet's reader needs,
each opened with its known size so that it makes no HEAD either.

A storage path is ``<bucket>/<key>``, as pyarrow's file systems name objects; object stores
have no directories, so a "directory" is a key prefix that some object has.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import posixpath
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import obstore
import pyarrow as pa
import pyarrow.fs as pafs
from obstore.exceptions import AlreadyExistsError, BaseError, GenericError, InvalidPathError

from lakeseek.exceptions import LakeseekError, UnsupportedLakeError, one_line
from lakeseek.io.storage import FileStatus, IOStats, Stamp, Storage, register_failure, visible_files

register_failure(BaseError)  # obstore's: a store that cannot be reached, a denied request


class ObjectStorage(Storage):
    """One bucket (or container) of an object store."""

    is_local = False

    def __init__(
        self,
        scheme: str,
        bucket: str,
        store: obstore.store.ObjectStore,
        fs: pafs.FileSystem,
        object_store_config: Mapping[str, str],
    ) -> None:
        super().__init__(fs, scheme, bucket)
        self.bucket = bucket
        self.store = store
        # The store's settings as Rust's object_store crate names them (obstore's, and delta-rs's
        # storage options): for other readers of the same store (a Delta table's log).
        self.object_store_config = dict(object_store_config)

    def _key(self, path: str) -> str:
        """The object key of a storage path (``<bucket>/<key>``)."""
        if path == self.bucket:
            return ""
        if not path.startswith(f"{self.bucket}/"):
            raise ValueError(f"{path} is not in bucket {self.bucket}")
        return path[len(self.bucket) + 1 :]

    def _prefix(self, directory: str) -> str:
        key = self._key(directory)
        return f"{key}/" if key else ""

    def _objects(self, directory: str, start_after: str | None = None) -> Iterator[dict]:
        """Every object below ``directory`` (one LIST request per page)."""
        self._count(IOStats.add_list)
        offset = None if start_after is None else self._key(start_after)
        with self._listing(directory):
            for page in obstore.list(self.store, self._prefix(directory), offset=offset):
                yield from page

    @contextlib.contextmanager
    def _listing(self, directory: str) -> Iterator[None]:
        """A key that is no path (an empty, ``.`` or ``..`` segment, a control character), which
        the object store library will not list, as a one-line error naming the problem."""
        try:
            yield
        except InvalidPathError as error:
            reason = one_line(error)
            raise UnsupportedLakeError(
                f"{self.uri(directory)} holds an object whose key is not a valid path (an empty, '.' or '..' "
                f"segment, or a control character): rename or remove it ({reason})"
            ) from error

    # -- metadata -------------------------------------------------------------------------
    def is_dir(self, path: str) -> bool:
        self._count(IOStats.add_list)
        with self._listing(path):
            listing = obstore.list_with_delimiter(self.store, self._prefix(path))
        return bool(listing["objects"] or listing["common_prefixes"])

    def is_file(self, path: str) -> bool:
        self._count(IOStats.add_head)
        try:
            obstore.head(self.store, self._key(path))
        except FileNotFoundError:
            return False
        return True

    def stamp(self, path: str) -> Stamp | None:
        self._count(IOStats.add_head)
        try:
            found = obstore.head(self.store, self._key(path))
        except FileNotFoundError:
            return None
        return Stamp(found["size"], _nanoseconds(found["last_modified"]), _etag(found))

    def list_files(self, directory: str, *, recursive: bool = True, start_after: str | None = None) -> list[FileStatus]:
        if recursive or start_after is not None:
            objects = list(self._objects(directory, start_after))
            if not recursive:
                depth = self._prefix(directory).count("/")
                objects = [o for o in objects if o["path"].count("/") == depth]
        else:
            return self.list_directory(directory)[0]
        return [self._status(o) for o in objects]

    def _status(self, listed: dict) -> FileStatus:
        return FileStatus(f"{self.bucket}/{listed['path']}", listed["size"], _nanoseconds(listed["last_modified"]))

    def walk_files(
        self, directory: str, skip_dir: Callable[[str], bool], skip_file: Callable[[str], bool]
    ) -> dict[str, Stamp]:
        """See :meth:`Storage.walk_files`: one listing of every key below ``directory``
        (object stores list by prefix, not by directory), with each object's ETag as its version."""
        start = len(self._prefix(directory))
        listed = (
            (o["path"][start:], Stamp(o["size"], _nanoseconds(o["last_modified"]), _etag(o)))
            for o in self._objects(directory)
        )
        return visible_files(listed, skip_dir, skip_file)

    def list_directory(self, directory: str) -> tuple[list[FileStatus], list[str]]:
        self._count(IOStats.add_list)
        with self._listing(directory):
            listing = obstore.list_with_delimiter(self.store, self._prefix(directory))
        directories = [prefix.rstrip("/").rsplit("/", 1)[-1] for prefix in listing["common_prefixes"]]
        return [self._status(o) for o in listing["objects"]], directories

    # -- reads ----------------------------------------------------------------------------
    def read(self, path: str) -> bytes:
        data = obstore.get(self.store, self._key(path)).bytes().to_bytes()
        self._count(IOStats.add_read, len(data))
        return data

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        key = self._key(path)
        try:
            data = obstore.get_range(self.store, key, start=offset, length=length).to_bytes()
        except GenericError:
            data = self._past_the_end(key, offset, length)
            if data is None:
                raise
        self._count(IOStats.add_read, len(data))
        return data

    def read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        starts, lengths = [offset for offset, _ in ranges], [length for _, length in ranges]
        try:
            parts = obstore.get_ranges(self.store, self._key(path), starts=starts, lengths=lengths)
        except GenericError:
            return [self.read_range(path, offset, length) for offset, length in ranges]
        found = [part.to_bytes() for part in parts]
        for data in found:
            self._count(IOStats.add_read, len(data))
        return found

    def _past_the_end(self, key: str, offset: int, length: int) -> bytes | None:
        """What a file system reads of a range reaching past the object's end (a truncated
        file: a store answers 416 or a short body, which obstore raises): the bytes there are,
        for the caller to tell the damage by their length. None: the range was within the object."""
        self._count(IOStats.add_head)
        size = obstore.head(self.store, key)["size"]
        if offset + length <= size:
            return None
        if offset >= size:
            return b""
        return obstore.get_range(self.store, key, start=offset, length=size - offset).to_bytes()

    def open_input(self, path: str, size: int | None = None) -> pa.NativeFile:
        """The object as a file whose reads are ranged GETs (one HEAD first when ``size`` is unknown)."""
        key = self._key(path)
        if size is None:
            self._count(IOStats.add_head)
            size = obstore.head(self.store, key)["size"]
        return pa.PythonFile(_RangedObject(self, path, size), mode="r")

    # -- writes ---------------------------------------------------------------------------
    def write(self, path: str, data: bytes) -> None:
        obstore.put(self.store, self._key(path), data)
        self._count(IOStats.add_write, len(data))

    def put_if_absent(self, path: str, data: bytes, owner: str = "") -> None:
        """A conditional create (one PUT that fails when the key exists); no temporary object."""
        try:
            obstore.put(self.store, self._key(path), data, mode="create")
        except AlreadyExistsError as error:
            raise FileExistsError(f"{self.uri(path)} exists") from error
        finally:
            self._count(IOStats.add_write, len(data))

    def delete_file(self, path: str) -> None:
        self._count(IOStats.add_delete)
        _delete_present(self.store, self._key(path))

    def delete_dir(self, path: str) -> None:
        keys = [o["path"] for o in self._objects(path)]
        for _ in keys:
            self._count(IOStats.add_delete)
        if len(keys) > 1:
            with contextlib.suppress(FileNotFoundError):  # another writer deleted one: the others one by one
                obstore.delete(self.store, keys)
                return
        for key in keys:
            _delete_present(self.store, key)


def _etag(meta: Mapping) -> str:
    """An object's ETag without the quotes HTTP puts around it: Azure's listings leave them out
    and its HEAD answers keep them, and the two must give one stamp."""
    return (meta.get("e_tag") or "").strip('"')


def _delete_present(store: object, key: str) -> None:
    """Deletes ``key``; one already gone is deleted too (S3 answers 204 and Azure 404, which
    obstore raises: two vacuums racing, or two writers clearing one dead lease)."""
    with contextlib.suppress(FileNotFoundError):
        obstore.delete(store, key)


class _RangedObject(io.RawIOBase):
    """An object of a known size read by ranged GETs (pyarrow's Parquet reader reads a footer
    with one or two of them)."""

    def __init__(self, storage: ObjectStorage, path: str, size: int) -> None:
        self._storage, self._path, self._size = storage, path, size
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer) -> int:
        length = min(len(buffer), self._size - self._position)
        if length <= 0:
            return 0
        data = self._storage.read_range(self._path, self._position, length)
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)


def store_path(container: str, location: str, netloc: str) -> str:
    """The storage path of ``location``, a URI whose host is ``netloc``, in its ``container``
    (bucket): its path as Hadoop's ``Path`` takes it (what Spark reads for it), a ``?`` or ``#``
    being part of a key, not a query or fragment; repeated slashes are one, ``.`` and ``..``
    segments resolved, no trailing slash. An object store has no directories, so ``s3://b//lake``
    would name keys under ``/lake``, which object_store cannot address: read as they were, every
    path in the lake lost its first character."""
    path = location.split("://", 1)[1][len(netloc) :]
    normalized = posixpath.normpath("/" + path.lstrip("/"))
    return f"{container}{normalized}".rstrip("/")


def settings(
    environment: Mapping[str, str], keys: Iterable[str], storage_options: Mapping[str, object] | None
) -> dict[str, str]:
    """The store's settings: ``keys`` (upper-case names of the cloud's standard environment
    variables) from ``environment``, overridden by ``storage_options`` (any case); an option
    that is not one of ``keys`` is a LakeseekError naming it."""
    known = set(keys)
    found = {key: environment[key] for key in known if environment.get(key)}
    for key, value in (storage_options or {}).items():
        if key.upper() not in known:
            raise LakeseekError(f"unknown storage option {key!r} (known here: {', '.join(sorted(known))})")
        found[key.upper()] = str(value)
    return found


_STORAGES: dict[tuple, ObjectStorage] = {}
_STORAGES_LOCK = threading.Lock()


def cached_storage(
    scheme: str, bucket: str, found: Mapping[str, str], make: Callable[[], ObjectStorage]
) -> ObjectStorage:
    """One storage per bucket and settings in the process, so its counters and connections are shared."""
    key = (scheme, bucket, tuple(sorted(found.items())))
    with _STORAGES_LOCK:
        if key not in _STORAGES:
            _STORAGES[key] = make()
        return _STORAGES[key]


def is_true(text: str | None) -> bool:
    return (text or "").strip().lower() in ("1", "true", "yes", "on")


def _nanoseconds(moment: dt.datetime) -> int:
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
