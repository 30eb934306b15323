"""Text data files (CSV, JSON lines): no row groups and no footer, so opening one reads it whole,
and the types of its columns are inferred from every row (not only the first block, whose types
a later row could contradict)."""

from __future__ import annotations

from abc import abstractmethod

import pyarrow as pa

from lakeseek.lake.formats.base import DataFile, DataFormat

# pyarrow's block size is a 32-bit integer; files larger than this are inferred from their first 2 GiB.
LARGEST_BLOCK = 2**31 - 1
SMALLEST_BLOCK = 1 << 20


class TextFile(DataFile):
    def __init__(self, table: pa.Table) -> None:
        self.table = table

    @property
    def schema(self) -> pa.Schema:
        return self.table.schema

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def read(self, columns: list[str]) -> pa.Table:
        return self.table.select(columns)


class TextFormat(DataFormat):
    def open(self, file: pa.NativeFile) -> TextFile:
        block = min(LARGEST_BLOCK, max(SMALLEST_BLOCK, file.size() + 1))
        return TextFile(self.read_whole(file, block))

    @abstractmethod
    def read_whole(self, file: pa.NativeFile, block_size: int) -> pa.Table:
        """Every row of ``file``, its column types inferred from ``block_size`` bytes."""
