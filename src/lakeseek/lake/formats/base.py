"""What a lake's data files are written in: the interface every file format implements.

A format opens one data file (its columns, rows and row groups, its values as lakeseek reads
them), gives pyarrow's dataset format to read many, and names Spark's reader of the same files.
A format is a module of this package registered by name (:func:`register_format`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.dataset as ds

from lakeseek.lake.schemas import widen


@dataclass(frozen=True)
class ColumnStatistics:
    """What a data file's own metadata says of one column: its lowest and highest non-NULL
    value (None: not recorded), its NULLs (None: not recorded), non-NULL values, the bytes
    they take uncompressed (0: not recorded), and the bytes of their dictionary where every
    part of the column has one (None otherwise): a rough measure of its distinct values."""

    min: Any
    max: Any
    nulls: int | None
    values: int
    bytes: int = 0
    dictionary_bytes: int | None = None


class DataFile(ABC):
    """One opened data file."""

    @property
    @abstractmethod
    def schema(self) -> pa.Schema:
        """The file's columns as lakeseek reads them (before :func:`lakeseek.lake.files.plain_schema`)."""

    @property
    @abstractmethod
    def num_rows(self) -> int: ...

    @property
    def row_group_rows(self) -> list[int]:
        """The rows of each row group; a file of a format without row groups is one."""
        return [self.num_rows]

    @abstractmethod
    def read(self, columns: list[str], types: Mapping[str, pa.DataType] | None = None) -> pa.Table:
        """These columns of every row, with the values a dataset of the file reads. ``types``:
        the lake's types of some of them, which a text file's values are read from their text
        as (other formats leave them: their values are cast to the lake's types after)."""

    def statistics(self, columns: list[str]) -> dict[str, ColumnStatistics]:
        """The statistics the file records of those top-level ``columns`` it has (a format
        without: none). Bounds of floating-point columns leave NaN out, as Parquet's do."""
        return {}


class DataFormat(ABC):
    name: ClassVar[str]
    title: ClassVar[str]  # what messages call the files: "Parquet", "JSON lines"

    @abstractmethod
    def open(self, file: pa.NativeFile, path: str) -> DataFile:
        """The data file ``file`` at ``path`` (a damaged one raises pyarrow's error, which callers name)."""

    # Whether a fragment of a file keeps what its first scan learned of the file (a Parquet
    # footer), so that one kept per file content opens it again without reading that again.
    keeps_footers: ClassVar[bool] = False

    @abstractmethod
    def dataset_format(self, schema: pa.Schema, *, local: bool = False) -> ds.FileFormat:
        """pyarrow's format for reading files of the lake whose columns are ``schema`` (from a
        ``local`` file system, or an object store)."""

    def fragment(
        self,
        file_format: ds.FileFormat,
        path: str,
        fs: Any,
        partition: ds.Expression,
        size: int | None,
        row_groups: Sequence[int] | None,
    ) -> ds.Fragment:
        """A fragment of one file (``row_groups``: only those, where the format has them; a
        file without is its one row group)."""
        return file_format.make_fragment(path, fs, partition, file_size=size, **self.row_group_options(row_groups))

    def row_group_options(self, row_groups: Sequence[int] | None) -> dict[str, Any]:
        """What a fragment of ``file_format`` takes to read only some row groups."""
        return {}

    def subset(self, fragment: ds.Fragment, row_groups: Sequence[int]) -> ds.Fragment:
        """``fragment`` (of a format that keeps footers) limited to ``row_groups``."""
        raise NotImplementedError

    def view(self, dataset: ds.FileSystemDataset) -> Any:
        """``dataset`` as lakeseek reads it (Parquet: dates and timestamps as Spark reads them)."""
        return dataset

    def common_type(self, a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
        """The type a column merges to that files of this format hold as ``a`` and as ``b``
        (None: none), as Spark's reader of the format merges them."""
        return widen(a, b)

    def spark_reading_schema(self, schema: Any) -> Any:
        """The schema (a pyspark StructType) Spark's reader of the format reads the lake's
        ``schema`` with; a column read as another type is cast back to the lake's."""
        return schema

    @abstractmethod
    def spark_read(self, reader: Any, uris: list[str], *, statistics_unsafe: bool = True) -> Any:
        """The DataFrame Spark's own reader (``reader``: a DataFrameReader with the schema set)
        gives over the files ``uris``, for the same rows lakeseek reads; ``statistics_unsafe``:
        whether a filter of the query may skip rows it keeps by the files' statistics (a
        filter of a floating-point column, or one with a date before the Gregorian calendar)."""


_FORMATS: dict[str, DataFormat] = {}


def register_format(data_format: DataFormat) -> DataFormat:
    _FORMATS[data_format.name] = data_format
    return data_format


def format_named(name: str) -> DataFormat:
    if name not in _FORMATS:
        raise KeyError(name)
    return _FORMATS[name]
