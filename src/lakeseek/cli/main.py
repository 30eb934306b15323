"""The ``lakeseek`` command."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from collections.abc import Mapping

import click
from rich.table import Table

from lakeseek.cli import changes, layout, serve
from lakeseek.cli.common import handled, index_option, lake_argument, name_option, query_name_option, where_option
from lakeseek.cli.output import (
    WIDTH_OFF_TERMINAL,
    add_text_row,
    fail,
    library_notes,
    note_plan,
    print_rows,
    rows_json,
    status_json,
    stderr,
    stdout,
    text_table,
    when,
    write_csv,
)
from lakeseek.cost import human_size
from lakeseek.exceptions import CONTROL_ESCAPES, IndexLogUnreadableError, LakeseekError
from lakeseek.format.root import UNREADABLE
from lakeseek.index import Index, IndexStatus, open_index
from lakeseek.indexes import IndexSet, open_indexes
from lakeseek.io import storage_failures
from lakeseek.location import index_names
from lakeseek.sources.base import LakeSource
from lakeseek.what_if import imagine_indexes


def run() -> None:
    """Entry point: one-line errors and a non-zero exit instead of tracebacks."""
    try:
        main(standalone_mode=False)
    except click.exceptions.Abort:
        stderr.print("lakeseek: aborted")
        sys.exit(130)
    except click.ClickException as error:  # a bad option or argument: one line, as every other error
        stderr.print(f"lakeseek: error: {error.format_message()}", markup=False)
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except (LakeseekError, *storage_failures()) as error:
        fail(error)
    except UnicodeError:
        fail(LakeseekError("an argument is not valid UTF-8 text"))
    except KeyboardInterrupt:
        stderr.print("lakeseek: interrupted")
        sys.exit(130)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(package_name="lakeseek")
@click.option("-v", "--verbose", is_flag=True, help="Log what lakeseek does (to stderr).")
def main(verbose: bool) -> None:
    """Find rows in Parquet data lakes through an index stored in the lake."""
    context = click.get_current_context()
    if context.invoked_subcommand is None:  # `lakeseek`, `lakeseek -v`: no command, the help as it is
        stderr.print(context.get_help(), markup=False)
        sys.exit(2)
    # Without -v the library's warnings are notes on stderr (each once), and nothing else it logs.
    logging.basicConfig(level=logging.INFO if verbose else logging.ERROR, format="%(name)s: %(message)s")
    if not verbose:
        click.get_current_context().call_on_close(library_notes())
    if not stdout.is_terminal and "COLUMNS" not in os.environ:
        stdout.width = WIDTH_OFF_TERMINAL  # tables written to a file or a pipe keep whole values


for command in [*changes.COMMANDS, *layout.COMMANDS, *serve.COMMANDS]:
    main.add_command(command)


@main.command()
@lake_argument
@index_option
@click.option("--format", "output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@handled
def indexes(lake: LakeSource, index_dir: str | None, output: str) -> None:
    """List the indexes of SOURCE: state, columns, size, staleness, segments, last operation."""
    import lakeseek

    states: list[IndexStatus] = []
    unreadable: dict[str, IndexLogUnreadableError] = {}
    for index in lakeseek.list_indexes(lake, index=index_dir):
        try:
            states.append(index.status())
        except IndexLogUnreadableError as error:  # the others are still listed
            unreadable[index.name] = error
    if output == "json":
        listed = [status_json(s) for s in states]
        listed += [{"name": name, "state": UNREADABLE, "problems": [str(error)]} for name, error in unreadable.items()]
        sys.stdout.write(json.dumps(listed, indent=2) + "\n")
    elif not states and not unreadable:
        stdout.print("no indexes")
    else:
        stdout.print(_index_table(states, unreadable))
    if unreadable:
        fail(next(iter(unreadable.values())))


def _index_table(states: list[IndexStatus], unreadable: Mapping[str, IndexLogUnreadableError]) -> Table:
    headers = ["name", "state", "version", "columns", "size", "segments", "stale files", "last operation"]
    view = text_table(headers, box=None)
    for s in states:
        stale = len(s.new_files) + len(s.changed_files) + len(s.removed_files) + len(s.recorded_files)
        add_text_row(
            view,
            s.name,
            s.state,
            str(s.version),
            ", ".join(c.name for c in s.columns),
            human_size(s.index_bytes),
            str(max((c.segments for c in s.columns), default=0)),
            f"{stale:,}",
            f"{s.last_operation} ({when(s.updated_ms)})",
        )
    for name in unreadable:
        add_text_row(view, name, UNREADABLE, *["-"] * (len(headers) - 2))
    return view


def _queried(lake: LakeSource, index_dir: str | None, name: str | None) -> Index | IndexSet:
    """The index --name, or without one every index of the lake (the only one, if just one)."""
    if name is not None:
        return open_index(lake, index=index_dir, name=name)
    found = open_indexes(lake, index=index_dir)
    return found.indexes[0] if len(found.indexes) == 1 else found


@main.command()
@lake_argument
@where_option
@click.option("--columns", default=None, help="Comma-separated columns to output (default: all).")
@click.option("--format", "output", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@index_option
@query_name_option
@handled
def query(
    lake: LakeSource,
    where: str,
    columns: str | None,
    output: str,
    index_dir: str | None,
    name: str | None,
) -> None:
    """Print the rows of SOURCE matching --where, reading only the files the index points at."""
    index = _queried(lake, index_dir, name)
    selected = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    table, plan = index.query(where, selected)
    note_plan(plan)
    if output == "csv":
        write_csv(table)
    elif output == "json":
        rows_json(table)
    else:
        print_rows(table)


@main.command()
@lake_argument
@where_option
@click.option("--analyze", is_flag=True, help="Also run the query and report rows and time.")
@click.option(
    "--what-if",
    "what_if",
    multiple=True,
    metavar="KIND:COLUMNS[;OPTION=VALUE]",
    help="An index that does not exist yet (e.g. cuckoo:record_id, covering:id;include=a,b): how the query "
    "would run with it, estimated from the data files' statistics. Works on a lake without indexes too.",
)
@index_option
@query_name_option
@handled
def explain(
    lake: LakeSource, where: str, analyze: bool, what_if: tuple[str, ...], index_dir: str | None, name: str | None
) -> None:
    """Show how a query uses the index: columns, candidate files, reads, cost, and why not."""
    if what_if and name is None and index_dir is None and not index_names(lake.storage, lake.default_home):
        result = imagine_indexes(lake, where, what_if)
    else:
        result = _queried(lake, index_dir, name).explain(where, analyze=analyze, what_if=what_if)
    for line in result.lines():
        stdout.print(line, markup=False)


@main.command()
@lake_argument
@where_option
@index_option
@query_name_option
@click.option(
    "--null",
    "-0",
    "null_ended",
    is_flag=True,
    help="End each path with NUL instead of a line break, and print it as it is (for xargs -0).",
)
@handled
def files(lake: LakeSource, where: str, index_dir: str | None, name: str | None, null_ended: bool) -> None:
    """Print the data files that may hold rows matching --where, one per line (a control
    character in a path printed as an escape, as Python writes it)."""
    index = _queried(lake, index_dir, name)
    plan = index.plan(where)
    for path in plan.files:
        shown = index.lake.shown(path)
        sys.stdout.write(shown + "\0" if null_ended else shown.translate(CONTROL_ESCAPES) + "\n")
    note_plan(plan)


@main.command()
@lake_argument
@index_option
@name_option
@click.option("--format", "output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--verify", is_flag=True, help="Also read every index file whole, checking its pages' checksums.")
@handled
def status(lake: LakeSource, index_dir: str | None, name: str | None, output: str, verify: bool) -> None:
    """Show an index of SOURCE: columns, segments, files covered, and what changed in the lake since."""
    state = open_index(lake, index=index_dir, name=name).status(verify=verify)
    if output == "json":
        sys.stdout.write(json.dumps(status_json(state), indent=2) + "\n")
        return
    stdout.print(f"lake      {state.source}", markup=False)
    stdout.print(
        f"index     {state.index} ('{state.name}', {state.state}, version {state.version}: "
        f"{state.last_operation} at {when(state.updated_ms)})",
        markup=False,
    )
    stdout.print(f"size      {human_size(state.index_bytes)}", markup=False)
    columns = text_table(["column", "type", "entries", "segments", "index files", "size"], box=None, pad_edge=False)
    for c in state.columns:
        add_text_row(
            columns, c.name, c.type, f"{c.entries:,}", str(c.segments), str(c.index_files), human_size(c.bytes)
        )
    stdout.print(columns)
    stdout.print(
        f"files     {state.indexed_files:,} indexed, {state.lake_files:,} in the lake now: "
        f"{len(state.new_files):,} new, {len(state.changed_files):,} changed, {len(state.removed_files):,} removed, "
        f"{len(state.recorded_files):,} recorded by a quick refresh"
        + ("" if state.is_fresh else " (queries read new, changed and recorded files without the index)"),
        markup=False,
    )
    if state.tombstoned_files:
        stdout.print(f"tombstones {state.tombstoned_files:,} removed files (optimize --mode full drops them)")
    for operation in state.running_operations:
        stdout.print(f"running   {operation}", markup=False)
    for problem in state.problems:
        stdout.print(f"damaged   {problem}", markup=False)


@main.command()
@lake_argument
@click.option("--since", type=int, default=-1, help="Only the versions after this one.")
@index_option
@name_option
@click.option("--format", "output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@handled
def history(lake: LakeSource, since: int, index_dir: str | None, name: str | None, output: str) -> None:
    """Show what each version of the index changed (the actions the log records)."""
    entries = open_index(lake, index=index_dir, name=name).history(since)
    if output == "json":
        sys.stdout.write(json.dumps([dataclasses.asdict(entry) for entry in entries], indent=2) + "\n")
        return
    view = text_table(["version", "committed", "operation", "actions"], box=None, pad_edge=False)
    for entry in entries:
        actions = "; ".join(
            " ".join([action.get("action", "?"), *(f"{k}={v}" for k, v in action.items() if k != "action")])
            for action in entry.actions
        )
        add_text_row(view, str(entry.version), when(entry.timestamp_ms), entry.operation, actions)
    stdout.print(view)


@main.command()
@click.option("--dir", "directory", default="lakeseek-demo", show_default=True, help="Where the sample lake goes.")
@click.option("--rows", type=click.IntRange(min=1000), default=3_000_000, show_default=True)
@click.option("--files", "file_count", type=click.IntRange(min=1), default=300, show_default=True)
@handled
def demo(directory: str, rows: int, file_count: int) -> None:
    """Generate a sample lake, index it with local Spark, and time needle queries with and without the index."""
    from lakeseek.demo import run_demo

    run_demo(directory, rows, file_count, stdout, stderr)
