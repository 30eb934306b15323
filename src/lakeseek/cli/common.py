"""What the commands share: one-line errors under click's runner too, common options, and
the progress bar of Spark jobs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from lakeseek.cli.output import fail, stderr
from lakeseek.exceptions import LakeseekError


def handled(command: Callable[..., None]) -> Callable[..., None]:
    """Keep errors one line when commands are invoked through click's own runner (tests)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except (LakeseekError, OSError) as error:
            fail(error)
        except UnicodeError:
            fail(LakeseekError("an argument is not valid UTF-8 text"))

    return wrapper


def _storage_options(context: click.Context, parameter: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    found = {}
    for value in values:
        key, equals, setting = value.partition("=")
        if not equals or not key.strip():
            raise click.BadParameter(f"{value!r} is not KEY=VALUE", context, parameter)
        found[key.strip()] = setting
    return found


storage_option = click.option(
    "--storage-option",
    "storage_options",
    multiple=True,
    callback=_storage_options,
    metavar="KEY=VALUE",
    help="An object store's setting (e.g. AWS_ENDPOINT_URL=http://...); by default the environment's.",
)
source_format_option = click.option(
    "--source-format",
    default=None,
    help=(
        "Read the lake as this source (directory of Parquet files, csv, json, delta, iceberg, hudi); "
        "by default, as what its location holds or its index records."
    ),
)


def lake_argument(command: Callable[..., None]) -> Callable[..., None]:
    """SOURCE with its --storage-option and --source-format, given to the command as the
    lake they open (``lake``)."""

    @functools.wraps(command)
    def opened(*args: Any, source: str, storage_options: dict[str, str], source_format: str | None, **kwargs: Any):
        from lakeseek.sources import open_lake

        return command(*args, lake=open_lake(source, storage_options, source_format=source_format), **kwargs)

    return click.argument("source")(storage_option(source_format_option(handled(opened))))


index_option = click.option(
    "--index",
    "index_dir",
    default=None,
    help="Index home directory (default: SOURCE/_lakeseek; SOURCE/.hoodie/lakeseek for a Hudi table).",
)
name_option = click.option(
    "--name", default=None, help="Which of the lake's indexes (default: the only one, or 'default')."
)
query_name_option = click.option(
    "--name",
    default=None,
    help="Which of the lake's indexes (default: every one, the query going through the cheapest).",
)
where_option = click.option("--where", "where", required=True, help="SQL predicate, e.g. \"id = 42 OR name = 'x'\".")
engine_option = click.option(
    "--engine",
    type=click.Choice(["spark", "local"]),
    default=None,
    help="Run the job on Spark, or in this process (small changes; no Spark start-up).",
)


def with_progress(work: Callable[[Callable[[str, int, int], None]], Any]) -> Any:
    """Run ``work(progress)`` under a progress bar of its Spark tasks (on stderr, when it is a
    terminal: elsewhere rich leaves an empty line where the bar was)."""
    if not stderr.is_terminal:
        return work(lambda label, done, total: None)
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
