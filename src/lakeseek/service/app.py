"""The service's routes (Starlette): every answer is JSON, JSON lines, CSV or an Arrow IPC
stream; every error a status and one line of JSON, ``{"error": "...", "status": N}``.

Requests that take a predicate carry it as ``?where=`` or as ``{"where": ...}`` in a JSON
body. ``files`` on a lake in local storage is answered in the event loop (a warm lookup takes
a fraction of a millisecond, less than handing it to a thread); on an object store (whose
requests take milliseconds), and for reads, batch lookups, plans and status, in threads.
"""

from __future__ import annotations

import base64
import hmac
import json
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from lakeseek.exceptions import (
    DataFileError,
    IndexCorruptError,
    IndexNotFoundError,
    LakeMetadataError,
    LakeNotFoundError,
    LakeseekError,
    SparkJobError,
    UnsupportedStorageError,
    one_line,
)
from lakeseek.expressions.types import is_bytes
from lakeseek.index import Index
from lakeseek.io import storage_failures
from lakeseek.lru import CACHES
from lakeseek.rendering import arrow_stream, csv_text, json_lines, json_value, python_rows
from lakeseek.service.config import ServiceConfig
from lakeseek.service.lakes import Lakes, ServedLake, UnknownLakeError
from lakeseek.service.metrics import Metrics

ARROW = "application/vnd.apache.arrow.stream"
CSV = "text/csv"
JSON_LINES = "application/x-ndjson"
MAX_BODY = 256 << 20  # bytes of a request body
# Characters of a predicate: planning takes about 0.1 ms per IN member, so a text this long (an
# IN list of some 100,000 numbers) takes seconds; key batches go to /locate.
MAX_WHERE_CHARS = 1 << 20


class RequestError(Exception):
    """A request the service refuses, with the status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


Handler = Callable[[ServedLake, dict, bytes, Request], Response]

# A local lake's files requests are answered on the event loop (no thread hand-off: they take
# a fraction of a millisecond), unless the predicate is longer than this: a list of 100,000
# keys takes seconds to plan, and the loop would answer nothing else meanwhile.
INLINE_WHERE_CHARS = 4096


def create_app(config: ServiceConfig | None = None) -> Starlette:
    """The application serving ``config`` (default: from ``$LAKESEEK_SERVE_CONFIG``, as
    ``lakeseek serve`` passes it to its worker processes)."""
    config = config or ServiceConfig.from_environment()
    if config.cache_mb is not None:
        CACHES["index entries"].capacity = config.cache_mb << 20
    lakes = Lakes(config.lakes, config.index_check_seconds)
    metrics = Metrics(lakes, config.metrics_dir)

    def route(path: str, name: str, handler: Handler, methods: list[str], *, in_thread: bool = True) -> Route:
        async def answer(request: Request) -> Response:
            started = time.perf_counter()
            try:
                _authorize(request, config.token)
                body = await _body(request)
                params = _params(request, body)
                lake = lakes[request.path_params["lake"]]
                if in_thread or not lake.is_local or len(str(params.get("where", ""))) > INLINE_WHERE_CHARS:
                    response = await run_in_threadpool(handler, lake, params, body, request)
                else:
                    response = handler(lake, params, body, request)
            except Exception as error:  # every failure is an answer, never a traceback
                response = error_response(error)
            metrics.observe(name, response.status_code, time.perf_counter() - started)
            return response

        return Route(path, answer, methods=methods)

    def files(lake: ServedLake, params: dict, body: bytes, request: Request) -> Response:
        indexes = lake.indexes()
        plan = indexes.plan(_where(params))
        shown = indexes.lake.shown
        return JSONResponse(
            {
                "lake": lake.name,
                "files": [shown(path) for path in plan.files],
                "total_files": plan.total_files,
                "index_used": plan.index_used,
                "index": plan.index,
                "stale": plan.is_stale,
                "reason": plan.reason,
            }
        )

    def rows(lake: ServedLake, params: dict, body: bytes, request: Request) -> Response:
        limit = _count(params, "limit", config.max_rows)
        table, plan = lake.indexes().query(_where(params), _columns(params))
        if limit is not None:
            table = table.slice(0, limit)
        elif table.num_rows > config.max_rows:
            raise RequestError(
                413,
                f"{table.num_rows:,} rows match, more than this service returns at once "
                f"({config.max_rows:,}): narrow the predicate or give a limit",
            )
        return _table_response(table, request, {"X-Lakeseek-Files": str(len(plan.files))})

    def locate(lake: ServedLake, params: dict, body: bytes, request: Request) -> Response:
        column = params.get("column")
        if column is not None and not isinstance(column, str):
            raise RequestError(400, "'column' is the name of an indexed column")
        keys = _keys(params, body, request, column)
        if len(keys) > config.max_keys:
            raise RequestError(413, f"{len(keys):,} keys, more than one locate takes ({config.max_keys:,})")
        index = lake.index_of(column)
        if isinstance(keys, list):
            keys = _json_keys(keys, index, column)
        found = index.locate(keys, column=column)
        if _wants(request, ARROW):
            return Response(arrow_stream(found), media_type=ARROW)
        pairs = [{name: json_value(value) for name, value in row.items()} for row in python_rows(found)]
        return JSONResponse({"lake": lake.name, "keys": len(keys), "pairs": pairs})

    def explain(lake: ServedLake, params: dict, body: bytes, request: Request) -> Response:
        return JSONResponse(json_value(lake.indexes().explain(_where(params))))

    def status(lake: ServedLake, params: dict, body: bytes, request: Request) -> Response:
        states = [index.status() for index in lake.indexes().indexes]
        return JSONResponse({"lake": lake.name, "indexes": json_value(states)})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def served(request: Request) -> Response:
        try:
            _authorize(request, config.token)
        except RequestError as error:
            return error_response(error)
        return JSONResponse({"lakes": lakes.names()})

    async def prometheus(request: Request) -> Response:
        try:
            _authorize(request, config.token)
        except RequestError as error:
            return error_response(error)
        return Response(metrics.text(), media_type="text/plain; version=0.0.4")

    routes = [
        Route("/healthz", healthz),
        Route("/metrics", prometheus),
        Route("/v1/lakes", served),
        route("/v1/lakes/{lake}/files", "files", files, ["GET", "POST"], in_thread=False),
        route("/v1/lakes/{lake}/rows", "rows", rows, ["GET", "POST"]),
        route("/v1/lakes/{lake}/locate", "locate", locate, ["POST"]),
        route("/v1/lakes/{lake}/explain", "explain", explain, ["GET", "POST"]),
        route("/v1/lakes/{lake}/status", "status", status, ["GET"]),
    ]

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        return _error(error.status_code, f"{error.detail}: {request.method} {request.url.path}")

    async def unexpected(request: Request, error: Exception) -> Response:
        return error_response(error)

    return Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: unexpected})


# -- requests ---------------------------------------------------------------------------------
def _authorize(request: Request, token: str | None) -> None:
    if token is None:
        return
    given = request.headers.get("authorization", "")
    scheme, _, credential = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(credential.strip().encode(), token.encode()):
        raise RequestError(401, "this service needs 'Authorization: Bearer <token>'")


async def _body(request: Request) -> bytes:
    if request.method != "POST":
        return b""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise RequestError(
            413, f"a request body of {int(declared):,} bytes is more than this service takes ({MAX_BODY:,})"
        )
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > MAX_BODY:
            raise RequestError(413, f"a request body of more than {MAX_BODY:,} bytes is more than this service takes")
        parts.append(part)
    return b"".join(parts)


def _params(request: Request, body: bytes) -> dict:
    """The query string's parameters, and a JSON body's (which win; any body but an Arrow
    stream is read as JSON, whatever its declared type)."""
    try:  # Starlette would decode bytes that are not UTF-8 as U+FFFD, and run another predicate
        urllib.parse.unquote_to_bytes(request.scope["query_string"]).decode("utf-8")
    except UnicodeDecodeError as error:
        raise RequestError(400, f"the query string is not UTF-8 text (byte {error.start} of it, decoded)") from error
    params: dict[str, Any] = dict(request.query_params)
    if body and not _sends_arrow(request):
        try:
            given = json.loads(body)
        except (ValueError, UnicodeDecodeError) as error:
            raise RequestError(400, f"the request body is not JSON ({error})") from error
        except RecursionError as error:
            raise RequestError(400, "the request body nests JSON too deeply") from error
        if not isinstance(given, dict):
            raise RequestError(400, "the request body must be a JSON object")
        params.update(given)
    return params


def _where(params: dict) -> str:
    where = params.get("where")
    if where is None:
        raise RequestError(400, 'a predicate is needed: ?where=... (SQL), or {"where": ...} in a JSON body')
    if not isinstance(where, str):
        raise RequestError(400, "'where' is SQL text")
    if len(where) > MAX_WHERE_CHARS:
        raise RequestError(
            413,
            f"a predicate of {len(where):,} characters is more than this service plans ({MAX_WHERE_CHARS:,}): "
            "look many keys up with /locate",
        )
    return where


def _columns(params: dict) -> list[str] | None:
    columns = params.get("columns")
    if columns is None:
        return None
    if isinstance(columns, str):
        columns = [name.strip() for name in columns.split(",") if name.strip()]
    if isinstance(columns, list) and all(isinstance(name, str) for name in columns):
        if not columns:  # rows of no column would read as no rows
            raise RequestError(400, "'columns' names no column: leave it out for every column")
        return columns
    raise RequestError(400, "'columns' is a list of column names, or one comma-separated string")


def _count(params: dict, name: str, largest: int) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        number = -1
    if isinstance(value, bool) or number < 0 or (isinstance(value, float) and value != number):
        raise RequestError(400, f"'{name}' is a whole number of at least 0, not {value!r}")
    if number > largest:
        raise RequestError(413, f"'{name}' is at most {largest:,} here")
    return number


def _keys(params: dict, body: bytes, request: Request, column: str | None) -> pa.Array | list:
    """A locate's keys: an Arrow IPC stream's column (``column``, or its only one), or a JSON
    body's ``keys`` list."""
    if _sends_arrow(request):
        try:
            table = pa.ipc.open_stream(body).read_all()
            table.validate(full=True)  # offsets and lengths checked before a kernel trusts them
        except (pa.ArrowException, OSError) as error:
            raise RequestError(400, f"the request body is not a valid Arrow IPC stream ({error})") from error
        if column is not None and column in table.column_names:
            return table.column(column).combine_chunks()
        if table.num_columns != 1:
            raise RequestError(400, "an Arrow body holds one column of keys (or one named as ?column=)")
        return table.column(0).combine_chunks()
    keys = params.get("keys")
    if not isinstance(keys, list):
        raise RequestError(400, 'a locate\'s keys are a JSON list, {"keys": [...]}, or an Arrow IPC stream')
    return keys


def _sends_arrow(request: Request) -> bool:
    """Whether the body is an Arrow IPC stream, as its Content-Type says (media types are case-insensitive)."""
    return request.headers.get("content-type", "").split(";")[0].strip().lower() == ARROW


def _json_keys(keys: list, index: Index, column: str | None) -> list:
    """JSON keys as the column holds them: a binary column's in base64, as rows render them."""
    names = {name.lower(): name for name in index.schema.names}
    name = names.get((column or index.columns[0]).lower())
    if name is None or not is_bytes(index.schema.field(name).type):
        return keys
    decoded = []
    for key in keys:
        try:
            decoded.append(base64.b64decode(key, validate=True) if isinstance(key, str) else key)
        except ValueError as error:
            raise RequestError(400, f"key {key!r} of binary column '{name}' is not base64") from error
    return decoded


# -- answers ----------------------------------------------------------------------------------
def _accepted(request: Request) -> dict[str, float]:
    """The Accept header's media types and their weights (q)."""
    found: dict[str, float] = {}
    for part in request.headers.get("accept", "").split(","):
        media, *parameters = (piece.strip() for piece in part.split(";"))
        weight = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if media:
            found[media.lower()] = weight
    return found


def _wants(request: Request, media_type: str) -> bool:
    """Whether the Accept header asks for ``media_type`` (a weight above 0) no less than for any other."""
    accepted = _accepted(request)
    weight = accepted.get(media_type, 0.0)
    return weight > 0 and weight >= max(accepted.values())


def _table_response(table: pa.Table, request: Request, headers: dict[str, str]) -> Response:
    """The rows in the format asked for, rendered whole before the status goes out (so that a
    failure to render is an error answer, not a body cut short)."""
    if _wants(request, ARROW):
        return Response(arrow_stream(table), media_type=ARROW, headers=headers)
    if _wants(request, CSV):
        return Response("".join(csv_text(table)), media_type=CSV, headers=headers)
    return Response("".join(json_lines(table)), media_type=JSON_LINES, headers=headers)


# Errors of the storage or of what it holds: the request was fine, the service could not answer it.
_SERVER_SIDE = (DataFileError, LakeMetadataError, IndexCorruptError, SparkJobError, UnsupportedStorageError)


def error_response(error: BaseException) -> Response:
    """The answer to a failed request: 4xx for a bad request, 5xx naming a storage failure."""
    if isinstance(error, RequestError):
        return _error(error.status, str(error))
    if isinstance(error, UnknownLakeError | IndexNotFoundError | LakeNotFoundError):
        return _error(404, str(error))
    if isinstance(error, _SERVER_SIDE):
        return _error(502, str(error))
    if isinstance(error, LakeseekError):
        return _error(400, str(error))
    if isinstance(error, storage_failures()):
        return _error(503, f"storage error: {one_line(error)}")
    return _error(500, f"internal error: {type(error).__name__}: {error}")


def _error(status: int, message: str) -> Response:
    # A 401 names the scheme that would be let in (RFC 9110).
    headers = {"WWW-Authenticate": 'Bearer realm="lakeseek"'} if status == 401 else None
    return JSONResponse(error_document(status, message), status_code=status, headers=headers)


def error_document(status: int, message: str) -> dict[str, Any]:
    """The body of every error the service answers: the message in one line, and the status."""
    return {"error": " ".join(str(message).split())[:1000], "status": status}
