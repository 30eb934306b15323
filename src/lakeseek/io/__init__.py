"""The storage layer: every read and write lakeseek makes goes through :class:`Storage`.

It wraps a ``pyarrow.fs.FileSystem`` and counts calls and bytes, so a lookup's cost
(how many reads, how many bytes) is observable, and so another file system (an object
store) plugs in here without touching the index code.
"""

from lakeseek.io.storage import FileStatus, IOStats, Stamp, Storage, carrying_counters, counting, storage_for

__all__ = ["FileStatus", "IOStats", "Stamp", "Storage", "carrying_counters", "counting", "storage_for"]
