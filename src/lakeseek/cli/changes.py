"""The commands that change an index: create, refresh, optimize, delete, restore, vacuum, cancel."""

from __future__ import annotations

import json

import click

from lakeseek.cli.common import engine_option, handled, index_option, lake_argument, name_option, with_progress
from lakeseek.cli.output import report_change, stdout
from lakeseek.cost import human_size
from lakeseek.index import open_index
from lakeseek.kinds import DEFAULT_KIND, known_kinds
from lakeseek.kinds.sorted_index import MAX_CHUNK_ROWS
from lakeseek.sources.base import LakeSource


def _kind_option(text: str) -> tuple[str, object]:
    key, equals, raw = text.partition("=")
    if not equals or not key.strip():
        raise click.BadParameter(f"{text!r} is not KEY=VALUE", param_hint="--option")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return key.strip(), value


@click.command()
@lake_argument
@click.option("--columns", required=True, help="Comma-separated columns to index.")
@click.option(
    "--kind",
    type=click.Choice(known_kinds()),
    default=None,
    help=f"The kind of index (default: {DEFAULT_KIND}, or the existing index's).",
)
@index_option
@click.option("--name", default=None, help="The index to create, or to add the columns to (default: 'default').")
@click.option(
    "--chunk-rows",
    type=click.IntRange(min=1, max=MAX_CHUNK_ROWS),
    default=None,
    help="Index entries per chunk (sorted kind).",
)
@click.option(
    "--row-groups",
    is_flag=True,
    help="Point entries at row groups: reads skip row groups that cannot match (sorted kind).",
)
@click.option(
    "--option",
    "kind_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="An option of the index's kind, as JSON or text (e.g. value_list=32, bloom=false for skipping).",
)
@engine_option
@handled
def create(
    lake: LakeSource,
    columns: str,
    kind: str | None,
    index_dir: str | None,
    name: str | None,
    chunk_rows: int | None,
    row_groups: bool,
    kind_options: tuple[str, ...],
    engine: str | None,
) -> None:
    """Build an index of COLUMNS over the Parquet lake at SOURCE (runs Spark).

    On an index that exists, adds the COLUMNS it lacks.
    """
    import lakeseek

    options = dict(_kind_option(text) for text in kind_options)
    if chunk_rows is not None:
        options["chunk_rows"] = chunk_rows
    if row_groups:
        options["row_groups"] = True
    index = with_progress(
        lambda progress: lakeseek.create_index(
            lake,
            columns,
            kind=kind,
            index=index_dir,
            name=name,
            engine=engine or "spark",
            progress=progress,
            **options,
        )
    )
    status = index.status()
    summary = ", ".join(f"{c.name} ({c.entries:,} entries, {human_size(c.bytes)})" for c in status.columns)
    stdout.print(
        f"index '{index.name}' version {index.version}: "
        f"indexed {status.indexed_files:,} files of {index.source}: {summary}",
        markup=False,
    )


@click.command()
@lake_argument
@click.option(
    "--mode",
    type=click.Choice(["full", "incremental", "quick"]),
    default="incremental",
    show_default=True,
    help="full: rebuild; incremental: index new and changed files; quick: record changes only.",
)
@engine_option
@index_option
@name_option
@handled
def refresh(lake: LakeSource, mode: str, engine: str | None, index_dir: str | None, name: str | None) -> None:
    """Bring the index of SOURCE up to date with the lake."""
    import lakeseek

    before = open_index(lake, index=index_dir, name=name).version
    index = with_progress(
        lambda progress: lakeseek.refresh_index(
            lake,
            mode,
            index=index_dir,
            name=name,
            engine=engine or "spark",
            progress=progress,
        )
    )
    report_change(index, before)


@click.command()
@lake_argument
@click.option(
    "--mode",
    type=click.Choice(["quick", "full"]),
    default="quick",
    show_default=True,
    help="quick: merge what refreshes added; full: fold it into the main index and drop removed files' entries.",
)
@engine_option
@index_option
@name_option
@handled
def optimize(lake: LakeSource, mode: str, engine: str | None, index_dir: str | None, name: str | None) -> None:
    """Compact the index of SOURCE after incremental refreshes."""
    import lakeseek

    before = open_index(lake, index=index_dir, name=name).version
    index = with_progress(
        lambda progress: lakeseek.optimize_index(
            lake, mode, index=index_dir, name=name, engine=engine, progress=progress
        )
    )
    report_change(index, before)


@click.command()
@lake_argument
@index_option
@name_option
@handled
def delete(lake: LakeSource, index_dir: str | None, name: str | None) -> None:
    """Soft-delete the index: queries stop using it; `restore` brings it back, `vacuum` clears it."""
    import lakeseek

    index = lakeseek.delete_index(lake, index=index_dir, name=name)
    stdout.print(f"index '{index.name}' deleted (version {index.version}); queries now scan the lake", markup=False)


@click.command()
@lake_argument
@index_option
@name_option
@handled
def restore(lake: LakeSource, index_dir: str | None, name: str | None) -> None:
    """Undo a delete."""
    import lakeseek

    index = lakeseek.restore_index(lake, index=index_dir, name=name)
    stdout.print(f"index '{index.name}' restored (version {index.version})", markup=False)


@click.command()
@lake_argument
@click.option(
    "--retain-hours",
    type=click.FloatRange(min=0),
    default=168.0,
    show_default=True,
    help="Keep versions this recent (readers that opened them keep working).",
)
@index_option
@name_option
@handled
def vacuum(lake: LakeSource, retain_hours: float, index_dir: str | None, name: str | None) -> None:
    """Delete index files no retained version uses, old versions, and crashed writers' leftovers."""
    import lakeseek

    result = lakeseek.vacuum_index(lake, index=index_dir, name=name, retention_hours=retain_hours)
    stdout.print(
        f"deleted {result.files_deleted:,} files ({human_size(result.bytes_deleted)}), "
        f"{result.versions_deleted:,} old versions; cleared {result.operations_recovered} dead operations",
        markup=False,
    )


@click.command()
@lake_argument
@index_option
@name_option
@handled
def cancel(lake: LakeSource, index_dir: str | None, name: str | None) -> None:
    """Cancel running or crashed operations on the index and delete what they wrote."""
    import lakeseek

    cancelled = lakeseek.cancel_operations(lake, index=index_dir, name=name)
    if not cancelled:
        stdout.print("no operation in progress")
    for lease in cancelled:
        if lease.readable:
            line = f"cancelled {lease.operation} ({lease.operation_id}) of pid {lease.pid} on {lease.host}"
        else:
            line = f"cancelled operation {lease.operation_id} (its lease file was damaged)"
        stdout.print(line, markup=False)


COMMANDS = [create, refresh, optimize, delete, restore, vacuum, cancel]
