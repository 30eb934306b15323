"""How the command line shows things: one-line errors, tables, CSV and JSON lines, notes."""

from __future__ import annotations

import datetime as dt
import logging
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import pyarrow as pa
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lakeseek.exceptions import (
    CONTROL_ESCAPES,
    IndexCorruptError,
    IndexLogUnreadableError,
    LayoutCorruptError,
    one_line,
)
from lakeseek.index import Index
from lakeseek.planning import Plan
from lakeseek.rendering import csv_text, json_lines, python_rows, text


class _EscapingConsole(Console):
    """A console that shows control characters in the text it is given escaped (a lake's path
    holding ESC steered the terminal `create` and `status` printed it to); tables escape their
    cells themselves."""

    def print(self, *objects, **options) -> None:
        shown = (part.translate(CONTROL_ESCAPES) if isinstance(part, str) else part for part in objects)
        super().print(*shown, **options)


stdout = _EscapingConsole(highlight=False, soft_wrap=True)
# Rich cuts a table's values to 80 columns off a terminal; a pipe or a file has no width.
WIDTH_OFF_TERMINAL = 1 << 16
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(error: BaseException) -> None:
    message = one_line(error)
    if isinstance(error, FileNotFoundError) and error.filename and str(error.filename) not in message:
        message = f"{message}: {error.filename}"
    # An unreadable log has no root to refresh; a layout's log is not an index's.
    repaired_by_refresh = not isinstance(error, IndexLogUnreadableError | LayoutCorruptError)
    if isinstance(error, IndexCorruptError) and repaired_by_refresh and "refresh --mode full" not in message:
        message += " (`lakeseek refresh SOURCE --mode full` rebuilds the index: docs/damage.md)"
    # A path or argument holding bytes that are not UTF-8 is shown escaped, not as a traceback.
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    stderr.print(f"lakeseek: error: {message}", markup=False)
    sys.exit(1)


def report_change(index: Index, before: int) -> None:
    """What a refresh or optimize did to the index."""
    if index.version == before:
        stdout.print(f"index '{index.name}' is up to date (version {index.version}); nothing to do", markup=False)
        return
    segments = max((c.segments for c in index.root.content.column_statuses()), default=0)
    stdout.print(
        f"index '{index.name}' version {index.version} ({index.root.operation}): "
        f"{len(index.lineage()):,} files indexed, {segments} segment{'s' if segments != 1 else ''}",
        markup=False,
    )


def when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


_NOTED: set[str] = set()


def note(message: str) -> None:
    """``message`` on stderr as a note, once per command (a plan's reason is often a warning
    the library gave already)."""
    if message not in _NOTED:
        _NOTED.add(message)
        stderr.print(f"note: {message}", markup=False)


class _LibraryNotes(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        note(record.getMessage())


def library_notes() -> Callable[[], None]:
    """For one command, the library's warnings (a damaged log entry skipped, an index left
    out) as notes, and nothing else it logs; returns what puts its logging back as it was."""
    library = logging.getLogger("lakeseek")
    handler, level, propagate = _LibraryNotes(), library.level, library.propagate
    _NOTED.clear()
    library.addHandler(handler)
    library.setLevel(logging.WARNING)
    library.propagate = False

    def restore() -> None:
        library.removeHandler(handler)
        library.setLevel(level)
        library.propagate = propagate

    return restore


def note_plan(plan: Plan) -> None:
    """Tell (on stderr) when a query read every file because of the index's state, or when the
    index is stale."""
    if plan.fallback is not None and plan.fallback.is_about_the_index:
        note(plan.reason)
    elif plan.is_stale:
        note(
            f"the index is stale: {plan.unindexed_files} new or changed files were read without it, "
            f"{plan.removed_files} removed files skipped (see `lakeseek status`)"
        )


def rows_json(table: pa.Table) -> None:
    """One JSON object per row (binary as base64, decimals as strings)."""
    sys.stdout.writelines(json_lines(table))


def write_csv(table: pa.Table) -> None:
    sys.stdout.writelines(csv_text(table))


def print_rows(table: pa.Table) -> None:
    view = text_table(table.column_names, box=None, pad_edge=False)
    for row in python_rows(table):
        add_text_row(view, *["NULL" if v is None else text(v) for v in row.values()])
    stdout.print(view)
    stderr.print(f"{table.num_rows:,} row{'s' if table.num_rows != 1 else ''}")


def text_table(headers: list[str], **options: object) -> Table:
    """A rich Table whose headers are text as it is (``a[b]`` is not markup; control
    characters escaped, see :func:`add_text_row`)."""
    view = Table(**options)
    for header in headers:
        view.add_column(Text(header.translate(CONTROL_ESCAPES)))
    return view


def add_text_row(view: Table, *cells: str) -> None:
    """A row of text as it is, but for its control characters, escaped: a value's ESC would
    steer the terminal, its line breaks split the row."""
    view.add_row(*(Text(cell.translate(CONTROL_ESCAPES)) for cell in cells))


def status_json(state: Any) -> dict:
    return asdict(state)
