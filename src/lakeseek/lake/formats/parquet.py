"""Parquet data files, read as Spark reads them: INT96 as microseconds, and the values of files
Spark rebases from the Julian calendar rebased (:mod:`lakeseek.lake.datetimes`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from lakeseek.lake.datetimes import file_rebase, open_parquet, parquet_format, spark_arrow_schema, spark_view
from lakeseek.lake.formats.base import DataFile, DataFormat, register_format


class ParquetFile(DataFile):
    def __init__(self, file: pq.ParquetFile) -> None:
        self.file = file

    @property
    def schema(self) -> pa.Schema:
        return spark_arrow_schema(self.file)

    @property
    def num_rows(self) -> int:
        return self.file.metadata.num_rows

    @property
    def row_group_rows(self) -> list[int]:
        metadata = self.file.metadata
        return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]

    def read(self, columns: list[str]) -> pa.Table:
        table = self.file.read(columns=columns, use_threads=False)
        rebase = file_rebase(self.file.metadata) if columns else None
        return table if rebase is None else rebase.apply(table)


class ParquetFormat(DataFormat):
    name = "parquet"
    title = "Parquet"

    def open(self, file: pa.NativeFile) -> ParquetFile:
        return ParquetFile(open_parquet(file))

    def dataset_format(self, schema: pa.Schema) -> ds.ParquetFileFormat:
        return parquet_format()

    def row_group_options(self, row_groups: Sequence[int] | None) -> dict[str, Any]:
        return {"row_groups": row_groups}

    def view(self, dataset: ds.FileSystemDataset) -> Any:
        return spark_view(dataset)

    def spark_read(self, reader: Any, uris: list[str]) -> Any:
        return reader.parquet(*uris)


PARQUET = register_format(ParquetFormat())
