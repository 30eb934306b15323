"""The ``lakeseek`` command."""

from __future__ import annotations

import base64
import csv
import datetime as dt
import functools
import json
import logging
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import click
import pyarrow as pa
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lakeseek.cost import human_size
from lakeseek.exceptions import IndexCorruptError, LakeseekError
from lakeseek.index import Index, open_index
from lakeseek.lifecycle.operations import MAX_CHUNK_ROWS

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


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
    except (LakeseekError, OSError) as error:
        _fail(error)
    except UnicodeError:
        _fail(LakeseekError("an argument is not valid UTF-8 text"))
    except KeyboardInterrupt:
        stderr.print("lakeseek: interrupted")
        sys.exit(130)


def _fail(error: BaseException) -> None:
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, FileNotFoundError) and error.filename and str(error.filename) not in message:
        message = f"{message}: {error.filename}"
    if isinstance(error, IndexCorruptError) and "refresh --mode full" not in message:
        message += " (`lakeseek refresh SOURCE --mode full` rebuilds the index: docs/damage.md)"
    # A path or argument holding bytes that are not UTF-8 is shown escaped, not as a traceback.
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    stderr.print(f"lakeseek: error: {message}", markup=False)
    sys.exit(1)


def _handled(command: Callable[..., None]) -> Callable[..., None]:
    """Keep errors one line when commands are invoked through click's own runner (tests)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except (LakeseekError, OSError) as error:
            _fail(error)
        except UnicodeError:
            _fail(LakeseekError("an argument is not valid UTF-8 text"))

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lakeseek")
@click.option("-v", "--verbose", is_flag=True, help="Log what lakeseek does (to stderr).")
def main(verbose: bool) -> None:
    """Find rows in Parquet data lakes through an index stored in the lake."""
    # Without -v the CLI reports what matters itself (notes on stderr), so the library's warnings stay quiet.
    logging.basicConfig(level=logging.INFO if verbose else logging.ERROR, format="%(name)s: %(message)s")


_index_option = click.option(
    "--index", "index_dir", default=None, help="Index home directory (default: SOURCE/_lakeseek)."
)
_name_option = click.option(
    "--name", default=None, help="Which of the lake's indexes (default: the only one, or 'default')."
)
_where_option = click.option("--where", "where", required=True, help="SQL predicate, e.g. \"id = 42 OR name = 'x'\".")
_engine_option = click.option(
    "--engine",
    type=click.Choice(["spark", "local"]),
    default=None,
    help="Run the job on Spark, or in this process (small changes; no Spark start-up).",
)


def _with_progress(work: Callable[[Callable[[str, int, int], None]], Any]) -> Any:
    """Run ``work(progress)`` under a progress bar of its Spark tasks (on stderr)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    ) as bar:
        tasks: dict[str, Any] = {"starting": bar.add_task("working", total=None)}

        def progress(label: str, done: int, total: int) -> None:
            if label not in tasks:
                bar.update(tasks["starting"], visible=False)
                tasks[label] = bar.add_task(label, total=None)
            bar.update(tasks[label], completed=done, total=max(total, 1))

        return work(progress)


@main.command()
@click.argument("source")
@click.option("--columns", required=True, help="Comma-separated columns to index.")
@_index_option
@_name_option
@click.option(
    "--chunk-rows", type=click.IntRange(min=1, max=MAX_CHUNK_ROWS), default=None, help="Index entries per chunk."
)
@click.option(
    "--row-groups", is_flag=True, help="Point entries at row groups: reads skip row groups that cannot match."
)
@_handled
def create(
    source: str, columns: str, index_dir: str | None, name: str | None, chunk_rows: int | None, row_groups: bool
) -> None:
    """Build an index of COLUMNS over the Parquet lake at SOURCE (runs Spark).

    On an index that exists, adds the COLUMNS it lacks.
    """
    import lakeseek

    options: dict = {"row_groups": row_groups}
    if chunk_rows is not None:
        options["chunk_rows"] = chunk_rows
    index = _with_progress(
        lambda progress: lakeseek.create_index(
            source, columns, index=index_dir, name=name, progress=progress, **options
        )
    )
    status = index.status()
    summary = ", ".join(f"{c.name} ({c.entries:,} entries, {human_size(c.bytes)})" for c in status.columns)
    stdout.print(
        f"index '{index.name}' version {index.version}: "
        f"indexed {status.indexed_files:,} files of {index.source}: {summary}",
        markup=False,
    )


@main.command()
@click.argument("source")
@click.option(
    "--mode",
    type=click.Choice(["full", "incremental", "quick"]),
    default="incremental",
    show_default=True,
    help="full: rebuild; incremental: index changed files as a new segment; quick: record changes only.",
)
@_engine_option
@_index_option
@_name_option
@_handled
def refresh(source: str, mode: str, engine: str | None, index_dir: str | None, name: str | None) -> None:
    """Bring the index of SOURCE up to date with the lake."""
    import lakeseek

    before = open_index(source, index=index_dir, name=name).version
    index = _with_progress(
        lambda progress: lakeseek.refresh_index(
            source, mode, index=index_dir, name=name, engine=engine or "spark", progress=progress
        )
    )
    _report_change(index, before)


@main.command()
@click.argument("source")
@click.option(
    "--mode",
    type=click.Choice(["quick", "full"]),
    default="quick",
    show_default=True,
    help="quick: merge delta segments; full: fold them into the main index and drop removed files' entries.",
)
@_engine_option
@_index_option
@_name_option
@_handled
def optimize(source: str, mode: str, engine: str | None, index_dir: str | None, name: str | None) -> None:
    """Compact the index of SOURCE after incremental refreshes."""
    import lakeseek

    before = open_index(source, index=index_dir, name=name).version
    index = _with_progress(
        lambda progress: lakeseek.optimize_index(
            source, mode, index=index_dir, name=name, engine=engine, progress=progress
        )
    )
    _report_change(index, before)


@main.command()
@click.argument("source")
@_index_option
@_name_option
@_handled
def delete(source: str, index_dir: str | None, name: str | None) -> None:
    """Soft-delete the index: queries stop using it; `restore` brings it back, `vacuum` clears it."""
    import lakeseek

    index = lakeseek.delete_index(source, index=index_dir, name=name)
    stdout.print(f"index '{index.name}' deleted (version {index.version}); queries now scan the lake", markup=False)


@main.command()
@click.argument("source")
@_index_option
@_name_option
@_handled
def restore(source: str, index_dir: str | None, name: str | None) -> None:
    """Undo a delete."""
    import lakeseek

    index = lakeseek.restore_index(source, index=index_dir, name=name)
    stdout.print(f"index '{index.name}' restored (version {index.version})", markup=False)


@main.command()
@click.argument("source")
@click.option(
    "--retain-hours",
    type=click.FloatRange(min=0),
    default=168.0,
    show_default=True,
    help="Keep versions this recent (readers that opened them keep working).",
)
@_index_option
@_name_option
@_handled
def vacuum(source: str, retain_hours: float, index_dir: str | None, name: str | None) -> None:
    """Delete index files no retained version uses, old versions, and crashed writers' leftovers."""
    import lakeseek

    result = lakeseek.vacuum_index(source, index=index_dir, name=name, retention_hours=retain_hours)
    stdout.print(
        f"deleted {result.files_deleted:,} files ({human_size(result.bytes_deleted)}), "
        f"{result.versions_deleted:,} old versions; cleared {result.operations_recovered} dead operations",
        markup=False,
    )


@main.command()
@click.argument("source")
@_index_option
@_name_option
@_handled
def cancel(source: str, index_dir: str | None, name: str | None) -> None:
    """Cancel running or crashed operations on the index and delete what they wrote."""
    import lakeseek

    cancelled = lakeseek.cancel_operations(source, index=index_dir, name=name)
    if not cancelled:
        stdout.print("no operation in progress")
    for lease in cancelled:
        stdout.print(
            f"cancelled {lease.operation} ({lease.operation_id}) of pid {lease.pid} on {lease.host}", markup=False
        )


@main.command()
@click.argument("source")
@_index_option
@click.option("--format", "output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@_handled
def indexes(source: str, index_dir: str | None, output: str) -> None:
    """List the indexes of SOURCE: state, columns, size, staleness, segments, last operation."""
    import lakeseek

    states = [index.status() for index in lakeseek.list_indexes(source, index=index_dir)]
    if output == "json":
        sys.stdout.write(json.dumps([_status_json(s) for s in states], indent=2) + "\n")
        return
    if not states:
        stdout.print("no indexes")
        return
    headers = ["name", "state", "version", "columns", "size", "segments", "stale files", "last operation"]
    view = _table(headers, box=None)
    for s in states:
        stale = len(s.new_files) + len(s.changed_files) + len(s.removed_files) + len(s.recorded_files)
        _add_row(
            view,
            s.name,
            s.state,
            str(s.version),
            ", ".join(c.name for c in s.columns),
            human_size(s.index_bytes),
            str(max((c.segments for c in s.columns), default=0)),
            f"{stale:,}",
            f"{s.last_operation} ({_when(s.updated_ms)})",
        )
    stdout.print(view)


@main.command()
@click.argument("source")
@_where_option
@click.option("--columns", default=None, help="Comma-separated columns to output (default: all).")
@click.option("--format", "output", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@_index_option
@_name_option
@_handled
def query(source: str, where: str, columns: str | None, output: str, index_dir: str | None, name: str | None) -> None:
    """Print the rows of SOURCE matching --where, reading only the files the index points at."""
    index = open_index(source, index=index_dir, name=name)
    selected = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    table = index.read(where, selected)
    _note_plan(index)
    if output == "csv":
        _write_csv(table)
    elif output == "json":
        for row in table.to_pylist():
            sys.stdout.write(json.dumps({k: _json_value(v) for k, v in row.items()}, ensure_ascii=False) + "\n")
    else:
        _print_table(table)


@main.command()
@click.argument("source")
@_where_option
@click.option("--analyze", is_flag=True, help="Also run the query and report rows and time.")
@_index_option
@_name_option
@_handled
def explain(source: str, where: str, analyze: bool, index_dir: str | None, name: str | None) -> None:
    """Show how a query uses the index: columns, candidate files, reads, cost, and why not."""
    result = open_index(source, index=index_dir, name=name).explain(where, analyze=analyze)
    for line in result.lines():
        stdout.print(line, markup=False)


@main.command()
@click.argument("source")
@_where_option
@_index_option
@_name_option
@_handled
def files(source: str, where: str, index_dir: str | None, name: str | None) -> None:
    """Print the data files that may hold rows matching --where, one per line."""
    index = open_index(source, index=index_dir, name=name)
    for path in index.files(where):
        sys.stdout.write(path + "\n")
    _note_plan(index)


@main.command()
@click.argument("source")
@_index_option
@_name_option
@click.option("--format", "output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@_handled
def status(source: str, index_dir: str | None, name: str | None, output: str) -> None:
    """Show an index of SOURCE: columns, segments, files covered, and what changed in the lake since."""
    state = open_index(source, index=index_dir, name=name).status()
    if output == "json":
        sys.stdout.write(json.dumps(_status_json(state), indent=2) + "\n")
        return
    stdout.print(f"lake      {state.source}", markup=False)
    stdout.print(
        f"index     {state.index} ('{state.name}', {state.state}, version {state.version}: "
        f"{state.last_operation} at {_when(state.updated_ms)})",
        markup=False,
    )
    stdout.print(f"size      {human_size(state.index_bytes)}", markup=False)
    columns = _table(["column", "type", "entries", "segments", "index files", "size"], box=None, pad_edge=False)
    for c in state.columns:
        _add_row(columns, c.name, c.type, f"{c.entries:,}", str(c.segments), str(c.index_files), human_size(c.bytes))
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


def _report_change(index: Index, before: int) -> None:
    if index.version == before:
        stdout.print(f"index '{index.name}' is up to date (version {index.version}); nothing to do", markup=False)
        return
    segments = max((len(c.segments) for c in index.root.columns.values()), default=0)
    stdout.print(
        f"index '{index.name}' version {index.version} ({index.root.operation}): "
        f"{len(index.reader.lineage()):,} files indexed, {segments} segment{'s' if segments != 1 else ''}",
        markup=False,
    )


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@main.command()
@click.option("--dir", "directory", default="lakeseek-demo", show_default=True, help="Where the sample lake goes.")
@click.option("--rows", type=click.IntRange(min=1000), default=3_000_000, show_default=True)
@click.option("--files", "file_count", type=click.IntRange(min=1), default=300, show_default=True)
@_handled
def demo(directory: str, rows: int, file_count: int) -> None:
    """Generate a sample lake, index it with local Spark, and time needle queries with and without the index."""
    from lakeseek.demo import run_demo

    run_demo(directory, rows, file_count, stdout, stderr)


def _note_plan(index: Index) -> None:
    plan = index.last_plan
    if plan is not None and plan.reason and plan.reason.startswith(("the index", "index ")):
        stderr.print(f"note: {plan.reason}", markup=False)
    elif plan is not None and (plan.unindexed_files or plan.removed_files):
        stderr.print(
            f"note: the index is stale: {plan.unindexed_files} new or changed files were read without it, "
            f"{plan.removed_files} removed files skipped (see `lakeseek status`)",
            markup=False,
        )


def _write_csv(table: pa.Table) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(table.column_names)
    for row in table.to_pylist():
        writer.writerow(["" if v is None else _text(v) for v in row.values()])


def _print_table(table: pa.Table) -> None:
    view = _table(table.column_names, box=None, pad_edge=False)
    for row in table.to_pylist():
        _add_row(view, *["NULL" if v is None else _text(v) for v in row.values()])
    stdout.print(view)
    stderr.print(f"{table.num_rows:,} row{'s' if table.num_rows != 1 else ''}")


def _table(headers: list[str], **options: object) -> Table:
    """A rich Table whose headers are text as it is (``a[b]`` is not markup)."""
    view = Table(**options)
    for header in headers:
        view.add_column(Text(header))
    return view


def _add_row(view: Table, *cells: str) -> None:
    view.add_row(*(Text(cell) for cell in cells))


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return str(value)


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return _text(value)


def _status_json(state: Any) -> dict:
    from dataclasses import asdict

    return asdict(state)


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"
