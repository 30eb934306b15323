"""Deleting rows of a Delta table with deletion vectors, as Delta Lake's writers (Spark's DELETE on
a table with ``delta.enableDeletionVectors``) commit them: no file is rewritten; a new version
removes each touched file and adds it again with a ``deletionVector`` naming the rows it lost.

No writer reachable here makes them (delta-rs rewrites the files, and Spark has no Delta jars),
so the tests write them by the protocol's "Deletion Vector Format": a RoaringTreemap of row
positions (a count of 32-bit buckets, then each bucket's key and portable Roaring bitmap) behind
a magic number, in a ``deletion_vector_<uuid>.bin`` file (a format byte, then per vector its
size, its bytes and their CRC-32, big-endian) or inline in the log as Z85 text. What they write
is checked against deltalake's own reading of them (``deletion_vectors()``, ``scan()``)."""

from __future__ import annotations

import base64
import json
import struct
import time
import uuid
import zlib
from collections import defaultdict
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
from pyroaring import BitMap

_MAGIC = 1681511377
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_TO_Z85 = str.maketrans(_B85, _Z85)


def _z85(data: bytes) -> str:
    """Z85 (ZeroMQ's base 85), which Delta writes: Python's base85 in another alphabet."""
    padded = data + b"\0" * (-len(data) % 4)
    return base64.b85encode(padded).decode().translate(_TO_Z85)


def _treemap(positions: set[int]) -> bytes:
    buckets: dict[int, list[int]] = defaultdict(list)
    for position in sorted(positions):
        buckets[position >> 32].append(position & 0xFFFFFFFF)
    body = struct.pack("<Q", len(buckets))
    for key in sorted(buckets):
        body += struct.pack("<I", key) + BitMap(buckets[key]).serialize()
    return struct.pack("<I", _MAGIC) + body


def _active_adds(table: Path) -> dict[str, dict]:
    """The active ``add`` actions by the file's path below the table (the log's path, which is
    percent-encoded, decoded), replayed from the JSON commits (no checkpoint here). As the
    protocol says, a file is its path with its deletion vector's id: one commit may remove a
    file with one vector and add it with another, in either order."""
    adds: dict[tuple[str, str], dict] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "add" in action:
                adds[_file_id(action["add"])] = action["add"]
            elif "remove" in action:
                adds.pop(_file_id(action["remove"]), None)
    return {path: add for (path, _), add in adds.items()}


def _file_id(action: dict) -> tuple[str, str]:
    vector = action.get("deletionVector") or {}
    return unquote(action["path"]), f"{vector.get('storageType')}{vector.get('pathOrInlineDv')}@{vector.get('offset')}"


def delete_rows(table: str | Path, deleted: dict[str, set[int]], *, inline: bool = False) -> int:
    """Commit a delete of the rows at ``deleted[path]`` (``path``: a data file below the table;
    the rows: positions in the file, added to those it already lost) as deletion vectors;
    returns the new version."""
    table = Path(table)
    adds = _active_adds(table)
    commits = sorted((table / "_delta_log").glob("*.json"))
    version = int(commits[-1].name.split(".")[0]) + 1
    now = int(time.time() * 1000)
    actions: list[dict] = [{"commitInfo": {"timestamp": now, "operation": "DELETE", "engineInfo": "lakeseek-tests"}}]
    for path, positions in deleted.items():
        add = adds[path]
        before = add.get("deletionVector")
        every = set(positions) | _deleted_before(table, path, before)
        vector = _treemap(every)
        if inline:
            descriptor = {"storageType": "i", "pathOrInlineDv": _z85(vector), "sizeInBytes": len(vector)}
        else:
            name = uuid.uuid4()
            framed = struct.pack(">I", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))
            (table / f"deletion_vector_{name}.bin").write_bytes(b"\x01" + framed)
            descriptor = {"storageType": "u", "pathOrInlineDv": _z85(name.bytes), "offset": 1}
            descriptor["sizeInBytes"] = len(vector)
        descriptor["cardinality"] = len(every)
        remove = {
            "path": add["path"],
            "deletionTimestamp": now,
            "dataChange": True,
            "extendedFileMetadata": True,
            "partitionValues": add["partitionValues"],
            "size": add["size"],
        }
        if before:
            remove["deletionVector"] = before
        actions.append({"remove": remove})
        actions.append({"add": {**add, "dataChange": True, "deletionVector": descriptor}})
    (table / "_delta_log" / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return version


def _deleted_before(table: Path, path: str, descriptor: dict | None) -> set[int]:
    if not descriptor:
        return set()
    import deltalake

    vectors = pa.table(deltalake.DeltaTable(str(table)).deletion_vectors())
    uris, keeps = vectors.column("filepath").to_pylist(), vectors.column("selection_vector").to_pylist()
    for uri, keep in zip(uris, keeps, strict=True):
        if unquote(uri).endswith("/" + path):
            return {position for position, kept in enumerate(keep) if not kept}
    raise AssertionError(f"deltalake finds no deletion vector on {path}")
