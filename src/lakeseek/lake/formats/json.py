"""JSON lines data files (one object per line), as pyarrow reads them: a field absent from an
object is NULL, fields no file's schema has are ignored."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.json as pajson

from lakeseek.lake.formats.base import register_format
from lakeseek.lake.formats.text import TextFormat


class JsonFormat(TextFormat):
    name = "json"
    title = "JSON lines"

    def read_whole(self, file: pa.NativeFile, block_size: int) -> pa.Table:
        return pajson.read_json(file, read_options=pajson.ReadOptions(block_size=block_size))

    def dataset_format(self, schema: pa.Schema, *, local: bool = False) -> ds.JsonFileFormat:
        explicit = pa.schema(list(schema))
        # newlines_in_values: with its default chunker, pyarrow 26's dataset reader reads a
        # file of one object and no newline at its end as one row of NULLs. (read_whole, like
        # this chunker, takes an object over several lines too.)
        options = pajson.ParseOptions(
            explicit_schema=explicit, unexpected_field_behavior="ignore", newlines_in_values=True
        )
        return ds.JsonFileFormat(parse_options=options)

    def spark_read(self, reader: Any, uris: list[str], *, floats_filtered: bool = True) -> Any:
        return reader.json(uris)


JSON = register_format(JsonFormat())
