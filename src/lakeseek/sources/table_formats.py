"""Apache Hudi and Apache Iceberg tables, refused until lakeseek reads them as versioned
sources: read as a directory of Parquet files (as Spark's Parquet reader reads them), a table
gives the rows of files it has removed."""

from __future__ import annotations

from lakeseek.exceptions import UnsupportedLakeError
from lakeseek.io import Storage


def is_hudi(storage: Storage, root: str) -> bool:
    return storage.is_dir(f"{root}/.hoodie")


def is_iceberg(storage: Storage, root: str) -> bool:
    metadata = storage.list_files(f"{root}/metadata", recursive=False)
    return any(status.path.endswith(".metadata.json") for status in metadata)


def refuse(table_format: str):
    """An opener that refuses tables of ``table_format`` with a one-line UnsupportedLakeError."""

    def opener(storage: Storage, root: str):
        shown = root if storage.is_local else storage.uri(root)
        article = "an" if table_format[0] in "AEIOU" else "a"
        raise UnsupportedLakeError(
            f"{shown} is {article} {table_format} table: lakeseek does not read table formats yet, and its "
            "directory read as plain Parquet holds files the table has removed"
        )

    return opener
