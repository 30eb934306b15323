"""Arrow IPC files that tasks leave for the driver or for a later stage (a job's scratch),
and the clean-up of a job's scratch directory however the job ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

from lakeseek.io.storage import Storage


def write_spill(storage: Storage, path: str, table: pa.Table) -> None:
    """``table`` as an Arrow IPC file at ``path``, streamed to the storage (no copy of it is
    made in memory: spills are the bulk of a job's data)."""
    with storage.output(path) as out, pa.ipc.new_file(out, table.schema) as writer:
        writer.write_table(table)


def read_spill(storage: Storage, path: str) -> pa.Table:
    return pa.ipc.open_file(pa.py_buffer(storage.read(path))).read_all()


@contextmanager
def scratch_removed(storage: Storage, directory: str) -> Iterator[None]:
    """``directory`` (a job's scratch) deleted when the block ends, however it ends."""
    try:
        yield
    finally:
        if storage.is_dir(directory):
            storage.delete_dir(directory)
