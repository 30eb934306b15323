"""CSV data files with a header line, read as Spark's CSV reader with ``header`` reads them: an
empty unquoted field is NULL, a quoted empty field ``""`` is the empty string."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds

from lakeseek.lake.formats.base import register_format
from lakeseek.lake.formats.text import TextFormat


def _convert_options(column_types: dict[str, pa.DataType] | None = None) -> pacsv.ConvertOptions:
    return pacsv.ConvertOptions(column_types=column_types, strings_can_be_null=True, quoted_strings_can_be_null=False)


class CsvFormat(TextFormat):
    name = "csv"
    title = "CSV with a header line"

    def read_whole(self, file: pa.NativeFile, block_size: int) -> pa.Table:
        return pacsv.read_csv(
            file, read_options=pacsv.ReadOptions(block_size=block_size), convert_options=_convert_options()
        )

    def dataset_format(self, schema: pa.Schema) -> ds.CsvFileFormat:
        # The lake's types, not each block's inference: a later row never contradicts the first ones.
        return ds.CsvFileFormat(convert_options=_convert_options({field.name: field.type for field in schema}))

    def spark_read(self, reader: Any, uris: list[str]) -> Any:
        # enforceSchema off: Spark checks each file's header against the schema's names rather
        # than reading columns by position, so a file with its columns in another order fails
        # instead of reading wrong.
        return reader.option("header", "true").option("enforceSchema", "false").csv(uris)


CSV = register_format(CsvFormat())
