"""Reading an OTree lake without an index: the files its blocks allow, filtered exactly;
samples are the rows of weight below the fraction's threshold (deterministic, nested)."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from lakeseek.exceptions import InvalidArgumentError
from lakeseek.expressions import And, Comparison, Predicate, python_literal
from lakeseek.expressions.arrow import read_matching
from lakeseek.expressions.binding import bind, resolve_column
from lakeseek.expressions.sql import parse_where
from lakeseek.lake.files import reading_data_files
from lakeseek.layout.source import NAME, LayoutSource, stamps_of
from lakeseek.layout.tree import OFFSET, SPAN, WEIGHT, sample_threshold
from lakeseek.sources import open_lake


def with_sample(predicate: Predicate, fraction: float | None, schema: pa.Schema, lake: str = "the lake") -> Predicate:
    """``predicate`` (bound to ``schema``) keeping only a ``fraction`` sample: the rows whose
    weight is below the fraction's threshold."""
    if fraction is None:
        return predicate
    check_fraction(fraction)
    if WEIGHT not in schema.names:
        raise InvalidArgumentError(
            f"{lake} has no {WEIGHT} column to sample by: write it in OTree layout (lakeseek.layout.write)"
        )
    threshold = sample_threshold(fraction)
    if threshold >= SPAN - OFFSET:
        return predicate
    return And(predicate, bind(Comparison("<", WEIGHT, python_literal(threshold)), schema))


def check_fraction(fraction: object) -> None:
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction <= 1:
        raise InvalidArgumentError(f"a sample is a fraction in (0, 1], not {fraction!r}")


def sample_sql(fraction: float) -> str:
    """The SQL filter of a ``fraction`` sample, for engines that read the lake themselves."""
    check_fraction(fraction)
    return f"{WEIGHT} < {sample_threshold(fraction)}"


def _open(location: str, storage_options: Mapping[str, object] | None) -> LayoutSource:
    lake = open_lake(location, storage_options, source_format=NAME)
    assert isinstance(lake, LayoutSource)
    return lake


def plan_files(
    location: str, where: str = "TRUE", *, sample: float | None = None, storage_options=None
) -> tuple[LayoutSource, list[str], Predicate]:
    """The lake (its state read once: one LIST of the log), the files a read of ``where``
    (and a ``sample``) opens, and the bound predicate."""
    lake = _open(location, storage_options)
    schema = lake.state().schema
    predicate = with_sample(bind(parse_where(where), schema), sample, schema, lake.shown_root)
    return lake, lake.prune(sorted(lake.current.files), predicate), predicate


def files(location: str, where: str = "TRUE", *, sample: float | None = None, storage_options=None) -> list[str]:
    """The data files a read of ``where`` (and a ``sample``) opens."""
    lake, chosen, _ = plan_files(location, where, sample=sample, storage_options=storage_options)
    return [lake.shown(path) for path in chosen]


def read(
    location: str,
    where: str = "TRUE",
    *,
    columns: list[str] | None = None,
    sample: float | None = None,
    storage_options: Mapping[str, object] | None = None,
) -> pa.Table:
    """The rows of the OTree lake at ``location`` matching ``where`` (SQL), of a ``sample``
    fraction when given, read from the files its blocks allow only."""
    lake, chosen, predicate = plan_files(location, where, sample=sample, storage_options=storage_options)
    state = lake.current
    selected = None if columns is None else [resolve_column(column, state.schema).name for column in columns]
    with reading_data_files(lake, chosen):  # a damaged or missing file: an error naming it
        dataset = lake.dataset(chosen, state.schema, (), stamps=stamps_of(state, chosen))
        return read_matching(dataset, selected, predicate, state.schema)


def sample(
    location: str,
    fraction: float,
    where: str = "TRUE",
    *,
    columns: list[str] | None = None,
    storage_options: Mapping[str, object] | None = None,
) -> pa.Table:
    """A deterministic ``fraction`` sample of the rows matching ``where``: every row of weight
    below the fraction's threshold, so a smaller sample lies inside a larger one."""
    return read(location, where, columns=columns, sample=fraction, storage_options=storage_options)
