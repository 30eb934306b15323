"""What-if on any lake, with or without indexes: how a query would run with indexes that do not
exist yet (:mod:`lakeseek.planning.what_if`), against reading every file. ``explain(where,
what_if=...)`` of an index or of ``open_indexes`` weighs them against the indexes there are."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lakeseek.cost import Cost, LakeSize, human_size
from lakeseek.engine.runner import LocalRunner
from lakeseek.exceptions import LakeNotFoundError
from lakeseek.expressions.binding import bind
from lakeseek.expressions.sql import parse_where
from lakeseek.lake.statistics import file_statistics
from lakeseek.location import DEFAULT_NAME, LakeLike, locate
from lakeseek.operations.protocol import lake_snapshot
from lakeseek.planning.explain import what_if_lines
from lakeseek.planning.what_if import IndexSpec, WhatIf, specs_of, stored_columns, what_if


@dataclass(frozen=True)
class WhatIfReport:
    where: str
    files: int
    scan: Cost  # the cost model's estimate of reading every file
    results: tuple[WhatIf, ...]

    def lines(self) -> list[str]:
        return [
            f"without an index: every one of the {self.files:,} files is read "
            f"(estimated {human_size(self.scan.total)})",
            *what_if_lines(self.results),
        ]


def imagine_indexes(
    source: LakeLike,
    where: str,
    indexes: Sequence[str | IndexSpec],
    *,
    storage_options: Mapping[str, object] | None = None,
) -> WhatIfReport:
    """How a query with ``where`` would run over the lake at ``source`` with each of
    ``indexes`` (``KIND:COLUMNS[;OPTION=VALUE...]``), estimated from its data files' own
    statistics: nothing is built, and no data is read but the files' footers."""
    specs = specs_of(indexes)
    location = locate(source, None, DEFAULT_NAME, existing=False, storage_options=storage_options)
    location.require_lake()
    files = lake_snapshot(location).files
    if not files:
        raise LakeNotFoundError(f"no data files in {location.lake_root}")
    lake = location.source.discover(files, LocalRunner)
    predicate = bind(parse_where(where), lake.schema)
    columns = stored_columns(specs, lake.schema)
    statistics = file_statistics(location.source, files, lake.schema, columns, lake.partition_columns)
    results = what_if(specs, predicate, lake.schema, statistics, lake.partition_columns)
    scan = LakeSize(len(files), int(statistics.sizes.sum())).read_cost(len(files))
    return WhatIfReport(where, len(files), scan, tuple(results))
