"""Data file formats of lakes (Parquet, CSV, JSON lines): one module each, registered by name."""

from lakeseek.lake.formats.base import DataFile, DataFormat, format_named, register_format
from lakeseek.lake.formats.csv import CSV
from lakeseek.lake.formats.json import JSON
from lakeseek.lake.formats.parquet import PARQUET

__all__ = ["CSV", "JSON", "PARQUET", "DataFile", "DataFormat", "format_named", "register_format"]
