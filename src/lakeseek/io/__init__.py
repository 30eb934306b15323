"""The storage layer: every read and write lakeseek makes goes through a :class:`Storage`.

``Storage`` is the interface (over a ``pyarrow.fs.FileSystem``, counting calls and bytes so
a lookup's cost is observable); each backend is a module (``local.py``) registered by URI
scheme in ``registry.py``, so another store plugs in without touching the index code.
"""

from lakeseek.io.local import LocalStorage
from lakeseek.io.registry import Address, register_storage, storage_for
from lakeseek.io.storage import FileStatus, IOStats, Stamp, Storage, carrying_counters, counting, storage_failures

__all__ = [
    "Address",
    "FileStatus",
    "IOStats",
    "LocalStorage",
    "Stamp",
    "Storage",
    "carrying_counters",
    "counting",
    "register_storage",
    "storage_failures",
    "storage_for",
]
