"""``lakeseek layout``: write, convert, optimize, describe and sample OTree lakes."""

from __future__ import annotations

import json

import click

from lakeseek.cli.common import engine_option, handled
from lakeseek.cli.output import print_rows, stdout
from lakeseek.cost import human_size

_columns = click.option("--columns", required=True, help='Layout columns, e.g. "x:linear,y:quantiles,name:hash".')
_cube_size = click.option("--cube-size", type=click.IntRange(min=1), default=None, help="Rows per cube.")
_max_file_rows = click.option(
    "--max-file-rows", type=click.IntRange(min=1), default=None, help="Rows per file at most."
)
_headroom = click.option(
    "--headroom",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Widen a linear range by this share when a new revision opens (1.0 doubles it).",
)


def _write_options(command):
    """The options every command that writes a layout takes."""
    for option in reversed([_columns, _cube_size, _max_file_rows, _headroom]):
        command = option(command)
    return command


def _spark(engine: str | None):
    if engine == "local":
        return None
    from lakeseek.engine.session import default_session

    return default_session()


def _options(cube_size: int | None, max_file_rows: int | None, headroom: float) -> dict:

    return {"cube_size": cube_size, "max_file_rows": max_file_rows, "headroom": headroom}


def _report(state, location: str) -> None:
    size = sum(f.size for f in state.files.values())
    stdout.print(
        f"{location}: version {state.version}, {state.rows:,} rows in {len(state.files):,} files "
        f"({human_size(size)}), {len(state.revisions)} revision(s)",
        markup=False,
    )


@click.group()
def layout() -> None:
    """Lakes laid out as an OTree (multi-column ranges and samples read few files)."""


@layout.command()
@click.argument("source")
@click.argument("location")
@_write_options
@click.option("--mode", type=click.Choice(["append", "overwrite"]), default="append", show_default=True)
@engine_option
@handled
def write(source, location, columns, cube_size, max_file_rows, headroom, mode, engine) -> None:
    """Write the Parquet files of SOURCE (a directory or glob Spark reads) to the OTree lake LOCATION."""
    from lakeseek import layout as otree

    spark = _spark(engine)
    options = {"mode": mode, **_options(cube_size, max_file_rows, headroom)}
    if spark is None:  # the directory read as Spark reads it: partition columns, hidden files
        state = otree.convert(source, location, columns.split(","), source_format="directory", **options)
    else:
        state = otree.write(spark.read.parquet(source), location, columns.split(","), **options)
    _report(state, location)


@layout.command()
@click.argument("source")
@click.argument("location")
@_write_options
@click.option("--source-format", default=None, help="Read SOURCE as this lake source (delta, iceberg, hudi, ...).")
@engine_option
@handled
def convert(source, location, columns, cube_size, max_file_rows, headroom, source_format, engine) -> None:
    """Rewrite the lake SOURCE (Parquet directory, Delta, Iceberg or Hudi table) as an OTree lake at LOCATION."""
    from lakeseek import layout as otree

    state = otree.convert(
        source,
        location,
        columns.split(","),
        spark=_spark(engine),
        source_format=source_format,
        **_options(cube_size, max_file_rows, headroom),
    )
    _report(state, location)


@layout.command()
@click.argument("location")
@engine_option
@handled
def optimize(location, engine) -> None:
    """Merge the blocks appends left, push overflow down and roll small files up."""
    from lakeseek import layout as otree

    _report(otree.optimize(location, spark=_spark(engine)), location)


@layout.command()
@click.argument("location")
@click.option("--format", "output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@handled
def describe(location, output) -> None:
    """Revisions, files and cubes (qbeast's cube ids) of the OTree lake LOCATION."""
    from lakeseek import layout as otree

    found = otree.describe(location)
    if output == "json":
        stdout.print_json(json.dumps(found))
        return
    stdout.print(
        f"{location}: version {found['version']}, {found['rows']:,} rows, {found['files']:,} files "
        f"({human_size(found['bytes'])}), {len(found['revisions'])} revision(s), {len(found['cubes']):,} cubes",
        markup=False,
    )
    for cube in found["cubes"][:40]:
        stdout.print(
            f"  r{cube['revision']} '{cube['cube']}': {cube['rows']:,} rows in {cube['files']} file(s), "
            f"weights {cube['min_weight']}..{cube['max_weight']}",
            markup=False,
        )
    if len(found["cubes"]) > 40:
        stdout.print(f"  ... {len(found['cubes']) - 40:,} more (--format json lists all)")


@layout.command()
@click.argument("location")
@click.option("--fraction", type=click.FloatRange(min=0, max=1, min_open=True), required=True)
@click.option("--where", default="TRUE", show_default=True, help="SQL predicate.")
@handled
def sample(location, fraction, where) -> None:
    """A deterministic FRACTION sample of the rows of LOCATION matching --where."""
    from lakeseek import layout as otree

    print_rows(otree.sample(location, fraction, where))


COMMANDS = [layout]
