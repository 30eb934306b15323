"""Files a root names by path, bound to it by their checksum and size.

Readers get nothing but a path from the root for its lineage manifests and its delta
filter file, so the path carries the binding: such a file is named
``<operation id>-<crc32 of its bytes, 8 hex digits>-<its size>.parquet``, and every read
checks the bytes against the name. Another file put in its place (an older manifest of the
same index, a truncated or damaged copy) fails the check and reads as damage
(:class:`IndexCorruptError`), so queries scan every file instead of trusting it. Index
files are bound the same way by the footer checksum and offsets the root records.
"""

from __future__ import annotations

import re
import zlib

from lakeseek.exceptions import IndexCorruptError

_SEALED = re.compile(r"-(?P<crc32>[0-9a-f]{8})-(?P<size>[0-9]+)\.parquet$")


def sealed_name(operation_id: str, data: bytes) -> str:
    """The name binding ``data`` (written by operation ``operation_id``) to its checksum and size."""
    return f"{operation_id}-{zlib.crc32(data):08x}-{len(data)}.parquet"


def check_sealed(path: str, data: bytes, what: str) -> None:
    """Raise IndexCorruptError unless ``data`` has the checksum and size the name of ``path`` binds."""
    match = _SEALED.search(path)
    if match is None:
        raise IndexCorruptError(f"{what} {path} is not named after its checksum and size: it binds nothing")
    if len(data) != int(match["size"]) or zlib.crc32(data) != int(match["crc32"], 16):
        raise IndexCorruptError(
            f"{what} {path} is not the file its index version wrote (checksum or size mismatch): "
            "an older, truncated or damaged copy"
        )


# Every file a root names lies below the index directory, in one of lakeseek's own folders:
# a root naming anything else (``../``, an absolute path) is damaged or forged, and is
# refused before any read, write or delete could use the name.
_INDEX_PATH = re.compile(r"(data|lineage)(/[A-Za-z0-9_=-][A-Za-z0-9_.=-]*)+")


def index_path(raw: object) -> str:
    """``raw`` if it names a file inside the index directory, else ValueError."""
    if not isinstance(raw, str) or not _INDEX_PATH.fullmatch(raw):
        raise ValueError(f"the root names {raw!r}, which is not a file of the index directory")
    return raw
