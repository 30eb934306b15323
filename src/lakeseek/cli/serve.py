"""``lakeseek serve``: the HTTP lookup service over configured lakes (see lakeseek.service)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile

import click

from lakeseek.cli.common import handled
from lakeseek.cli.output import stderr
from lakeseek.exceptions import InvalidArgumentError, LakeseekError

WORKER_START_SECONDS = 120  # how long a worker may take to answer its first ping


def _lakes(context: click.Context, parameter: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    found: dict[str, str] = {}
    for value in values:
        name, equals, location = value.partition("=")
        if not equals or not name.strip() or not location.strip():
            raise click.BadParameter(f"{value!r} is not NAME=LOCATION", context, parameter)
        if name.strip() in found:
            raise click.BadParameter(f"lake {name.strip()!r} is named twice", context, parameter)
        found[name.strip()] = location.strip()
    return found


@click.command()
@click.option(
    "--lake", "lakes", multiple=True, required=True, callback=_lakes, metavar="NAME=LOCATION",
    help="A lake to serve under NAME (repeatable); requests name lakes, never paths.",
)  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8750, show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Worker processes.")
@click.option(
    "--token", envvar="LAKESEEK_TOKEN", default=None,
    help="Require 'Authorization: Bearer TOKEN' on every request but /healthz (default: $LAKESEEK_TOKEN).",
)  # fmt: skip
@click.option("--source-format", default=None, help="Read every lake as this source (default: as each holds).")
@click.option(
    "--cache-mb",
    type=click.IntRange(min=0),
    default=None,
    help="MiB of decoded index entries kept per worker (default: $LAKESEEK_INDEX_CACHE_MB or 256).",
)
@click.option("--max-keys", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@click.option("--max-rows", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@click.option(
    "--index-check-seconds", type=click.FloatRange(min=0), default=0.0, show_default=True,
    help="How long a worker trusts an index's version before listing its log again (0: every request).",
)  # fmt: skip
@handled
def serve(
    lakes: dict[str, str],
    host: str,
    port: int,
    workers: int,
    token: str | None,
    source_format: str | None,
    cache_mb: int | None,
    max_keys: int,
    max_rows: int,
    index_check_seconds: float,
) -> None:
    """Serve lookups over the lakes' indexes: /v1/lakes/NAME/files, rows, locate, explain, status."""
    try:
        import uvicorn

        from lakeseek.indexes import open_indexes
        from lakeseek.service import LakeConfig, ServiceConfig
        from lakeseek.service.config import ENVIRONMENT
        from lakeseek.sources import open_lake
    except ImportError as error:
        raise LakeseekError(f"the service needs lakeseek[serve] installed ({error})") from error
    config = ServiceConfig(
        {name: LakeConfig(location, source_format) for name, location in lakes.items()},
        token=token or None,
        max_keys=max_keys,
        max_rows=max_rows,
        index_check_seconds=index_check_seconds,
        cache_mb=cache_mb,
    )
    for name, lake in config.lakes.items():  # every lake opens before the first request
        try:
            open_indexes(open_lake(lake.location, source_format=lake.source_format))
        except LakeseekError as error:
            raise InvalidArgumentError(f"lake '{name}': {error}") from error
    # Several workers publish their metrics to a directory, so that a scrape of any sums them all.
    metrics_dir = tempfile.mkdtemp(prefix="lakeseek-metrics-") if workers > 1 else None
    os.environ[ENVIRONMENT] = dataclasses.replace(config, metrics_dir=metrics_dir).to_json()
    stderr.print(f"serving {', '.join(sorted(lakes))} on http://{host}:{port} ({workers} worker(s))", markup=False)
    try:
        uvicorn.run(
            "lakeseek.service.app:create_app",
            factory=True,
            http="lakeseek.service.protocol:JsonErrorsProtocol",
            host=host,
            port=port,
            workers=workers,
            # A worker answers the supervisor's pings once it has imported lakeseek, which takes
            # seconds on a loaded machine: past uvicorn's 5 s it was killed and started again,
            # for ever, and nothing was served.
            timeout_worker_healthcheck=WORKER_START_SECONDS,
            log_level="warning",
            access_log=False,
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)


COMMANDS = [serve]
