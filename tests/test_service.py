"""``lakeseek serve`` as a real server on loopback (a process started and stopped by the
fixture): answers compared with a full scan (DuckDB over the lake's files), one-line JSON
errors for bad requests, a 5xx naming a storage failure, and exact answers while another
process refreshes the index under load."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import lakeseek
from lakeseek.service.metrics import PUBLISH_SECONDS
from tests.servers import start_lakeseek_serve

TOKEN = "s3cret-token"
ARROW = "application/vnd.apache.arrow.stream"
ACCEPT_ARROW = {"Accept": ARROW}
ACCEPT_CSV = {"Accept": "text/csv"}


def write_part(root: Path, number: int, ids: np.ndarray, rng: np.random.Generator) -> None:
    users = np.array([f"user-{u:03d}" for u in rng.integers(0, 60, len(ids))])
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "user": pa.array(users),
            "amount": pa.array(np.round(rng.gamma(2.0, 10.0, len(ids)), 2)),
            "ts": pa.array((1_700_000_000 + ids * 37).astype("datetime64[s]").astype("datetime64[us]")),
            "note": pa.array([None if i % 7 == 0 else f"n{i % 13}" for i in ids.tolist()]),
        }
    )
    directory = root / f"day={number % 3}"
    directory.mkdir(parents=True, exist_ok=True)
    # Written under a hidden name, then renamed: readers never see half a file (as Spark commits).
    hidden = directory / f".part-{number:03d}.parquet.tmp"
    pq.write_table(table, hidden, row_group_size=200)
    os.replace(hidden, directory / f"part-{number:03d}.parquet")


def make_lake(root: Path, seed: int, files: int = 8, rows: int = 600) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(files * rows * 3)[: files * rows] + 1
    for number in range(files):
        write_part(root, number, ids[number * rows : (number + 1) * rows], rng)
    lakeseek.create_index(str(root), ["id", "user"], engine="local", chunk_rows=128)


@pytest.fixture(scope="module")
def lakes(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("served")
    found = {name: base / name for name in ("events", "changing", "broken")}
    for seed, root in enumerate(found.values()):
        make_lake(root, seed)
    return found


@pytest.fixture(scope="module")
def server(lakes, tmp_path_factory):
    served = start_lakeseek_serve(
        tmp_path_factory.mktemp("serve-log"), {name: str(root) for name, root in lakes.items()}, token=TOKEN
    )
    yield served.endpoint
    served.stop()


def call(
    base: str,
    method: str,
    path: str,
    *,
    params: dict | None = None,
    body: bytes | dict | None = None,
    headers: dict | None = None,
    token: str | None = TOKEN,
) -> tuple[int, dict, bytes]:
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def scan(root: Path, where: str, columns: str = "*") -> list[tuple]:
    connection = duckdb.connect()
    files = sorted(str(p) for p in root.rglob("*.parquet") if "_lakeseek" not in p.parts)
    query = f"SELECT {columns} FROM read_parquet({files!r}, hive_partitioning = true) WHERE {where} ORDER BY id"
    return connection.execute(query).fetchall()


def ids_of_rows(body: bytes) -> list[int]:
    return sorted(json.loads(line)["id"] for line in body.decode().splitlines())


def predicates(root: Path, rng: random.Random) -> list[str]:
    some = pq.read_table(sorted(root.rglob("part-*.parquet"))[0], columns=["id", "user"]).to_pylist()
    picks = [rng.choice(some) for _ in range(6)]
    return [
        f"id = {picks[0]['id']}",
        f"id = {picks[1]['id'] * 1000 + 7}",  # held by no row
        f"id IN ({picks[2]['id']}, {picks[3]['id']}, 0)",
        f"user = '{picks[4]['user']}' AND amount > 15",
        f"id >= {picks[5]['id']} AND id < {picks[5]['id'] + 40}",
        "note IS NULL AND id < 200",
        f"user = '{picks[4]['user']}' OR id = {picks[0]['id']}",
    ]


def test_files_rows_and_locate_answer_like_a_full_scan(server, lakes):
    root = lakes["events"]
    index = lakeseek.open_index(str(root))
    rng = random.Random(11)
    for where in predicates(root, rng):
        status, _, body = call(server, "GET", "/v1/lakes/events/files", params={"where": where})
        assert status == 200, body
        answer = json.loads(body)
        assert sorted(answer["files"]) == sorted(index.files(where)), where
        expected = [row[0] for row in scan(root, where, "id")]
        status, headers, body = call(server, "POST", "/v1/lakes/events/rows", body={"where": where})
        assert status == 200 and headers["content-type"].startswith("application/x-ndjson")
        assert ids_of_rows(body) == expected, where
        status, _, body = call(
            server,
            "GET",
            "/v1/lakes/events/rows",
            params={"where": where, "columns": "id,user"},
            headers={"Accept": ARROW},
        )
        table = pa.ipc.open_stream(body).read_all()
        assert table.column_names == ["id", "user"] and sorted(table.column("id").to_pylist()) == expected
        status, _, body = call(
            server,
            "GET",
            "/v1/lakes/events/rows",
            params={"where": where, "columns": "id"},
            headers={"Accept": "text/csv"},
        )
        from_csv = pacsv.read_csv(pa.BufferReader(body)) if body.strip() != b"id" else None
        assert sorted(from_csv.column("id").to_pylist() if from_csv is not None else []) == expected
    wanted = [row[0] for row in scan(root, "id % 97 = 3", "id")] + [10**9, -5]
    status, _, body = call(server, "POST", "/v1/lakes/events/locate", body={"column": "id", "keys": wanted})
    assert status == 200, body
    pairs = {(pair["key"], pair["file"]) for pair in json.loads(body)["pairs"]}
    oracle = {(key, path) for key, path in _located(root, "id", wanted)}
    assert pairs == oracle and len(pairs) == len(wanted) - 2
    keys_stream = pa.BufferOutputStream()
    with pa.ipc.new_stream(keys_stream, pa.schema([("user", pa.string())])) as writer:
        writer.write_table(pa.table({"user": ["user-001", "user-017", "nobody"]}))
    status, _, body = call(
        server,
        "POST",
        "/v1/lakes/events/locate",
        params={"column": "user"},
        body=keys_stream.getvalue().to_pybytes(),
        headers={"Content-Type": ARROW.upper(), "Accept": ARROW},  # media types are case-insensitive
    )
    assert status == 200, body
    found = pa.ipc.open_stream(body).read_all()
    assert set(zip(found.column("key").to_pylist(), found.column("file").to_pylist(), strict=True)) == set(
        _located(root, "user", ["user-001", "user-017", "nobody"])
    )


def _located(root: Path, column: str, keys: list) -> list[tuple]:
    found = []
    for path in sorted(root.rglob("part-*.parquet")):
        held = set(pq.read_table(path, columns=[column]).column(0).to_pylist())
        found += [(key, str(path)) for key in keys if key in held]
    return found


def _files_served(server: str) -> float:
    status, _, body = call(server, "GET", "/metrics")
    assert status == 200
    (line,) = [
        x for x in body.decode().splitlines() if x.startswith('lakeseek_requests_total{endpoint="files",status="200"}')
    ]
    return float(line.split()[-1])


def test_plans_status_lakes_and_metrics(server, lakes):
    status, _, body = call(server, "GET", "/v1/lakes/events/explain", params={"where": "id = 5"})
    assert status == 200 and json.loads(body)["index_used"] is True
    status, _, body = call(server, "GET", "/v1/lakes/events/status")
    assert status == 200 and {c["name"] for c in json.loads(body)["indexes"][0]["columns"]} == {"id", "user"}
    status, _, body = call(server, "GET", "/v1/lakes")
    assert json.loads(body) == {"lakes": ["broken", "changing", "events"]}
    # Two workers: any one's scrape sums both (each publishes its figures within PUBLISH_SECONDS).
    call(server, "GET", "/v1/lakes/events/files", params={"where": "id = 5"})
    time.sleep(PUBLISH_SECONDS * 1.5)
    before = _files_served(server)
    for _ in range(30):
        call(server, "GET", "/v1/lakes/events/files", params={"where": "id = 5"})
    time.sleep(PUBLISH_SECONDS * 1.5)
    for _ in range(6):
        assert _files_served(server) - before == 30
    status, _, body = call(server, "GET", "/metrics")
    text = body.decode()
    assert status == 200 and "lakeseek_request_seconds_bucket" in text and "lakeseek_cache_hits_total" in text
    assert 'lakeseek_storage_total{kind="lists"' in text or "lakeseek_storage_total{" in text


BAD_REQUESTS = [
    ("GET", "/v1/lakes/nowhere/files", {"where": "id = 1"}, None, {}, 404, "unknown lake 'nowhere'"),
    ("GET", "/v1/lakes/events/files", None, None, {}, 400, "a predicate is needed"),
    ("GET", "/v1/lakes/events/files", {"where": "id = = 3"}, None, {}, 400, "malformed predicate"),
    ("GET", "/v1/lakes/events/files", {"where": "nope = 3"}, None, {}, 400, "unknown column 'nope'"),
    ("GET", "/v1/lakes/events/files", {"where": "id = 'abc'"}, None, {}, 400, "cannot be cast"),
    ("POST", "/v1/lakes/events/rows", None, b"{not json", {}, 400, "not JSON"),
    ("POST", "/v1/lakes/events/rows", None, b"[" * 100_000, {}, 400, "nests JSON too deeply"),
    ("GET", "/v1/lakes/events/rows", {"where": "id > 0", "columns": ","}, None, {}, 400, "names no column"),
    ("POST", "/v1/lakes/events/rows", None, {"where": "id > 0", "columns": []}, {}, 400, "names no column"),
    ("POST", "/v1/lakes/events/rows", None, {"where": 5}, {}, 400, "'where' is SQL text"),
    ("GET", "/v1/lakes/events/rows", {"where": "id > 0", "limit": "-2"}, None, {}, 400, "'limit' is a whole number"),
    ("POST", "/v1/lakes/events/rows", None, {"where": "id > 0", "limit": 1.5}, {}, 400, "'limit' is a whole number"),
    ("GET", "/v1/lakes/events/rows", {"where": "id > 0", "columns": "id,zzz"}, None, {}, 400, "unknown column"),
    ("POST", "/v1/lakes/events/locate", None, {"keys": 5}, {}, 400, "keys are a JSON list"),
    ("POST", "/v1/lakes/events/locate", None, {"column": "amount", "keys": [1]}, {}, 400, "not indexed"),
    ("POST", "/v1/lakes/events/locate", None, {"column": "id", "keys": [1, "x"]}, {}, 400, "'x'"),
    ("POST", "/v1/lakes/events/locate", None, b"\x00\x01", {"Content-Type": ARROW}, 400, "not a valid Arrow IPC"),
    (
        "POST",
        "/v1/lakes/events/locate",
        {"column": "user"},
        "bad offsets",
        {"Content-Type": ARROW},
        400,
        "not a valid Arrow IPC",
    ),
    (
        "POST",
        "/v1/lakes/events/rows",
        None,
        b'{"where": "id = 1", "limit": 1e400}',
        {},
        400,
        "'limit' is a whole number",
    ),
    ("GET", "/v1/lakes/events/files?where=id%20%3D%20%FF", None, None, {}, 400, "query string is not UTF-8"),
    ("POST", "/v1/lakes/events/rows", None, b"[]", {}, 400, "must be a JSON object"),
    ("GET", "/v1/lakes/events/locate", None, None, {}, 405, "Method Not Allowed"),
    ("GET", "/v1/nothing/here", None, None, {}, 404, "Not Found"),
]


@pytest.mark.parametrize(("method", "path", "params", "body", "headers", "status", "message"), BAD_REQUESTS)
def test_bad_requests_are_one_line_json_errors(server, method, path, params, body, headers, status, message):
    if body == "bad offsets":
        body = _arrow_keys_with_an_offset_past_the_data()
    got, answer_headers, answer = call(server, method, path, params=params, body=body, headers=headers)
    assert got == status, answer
    assert answer_headers["content-type"].startswith("application/json")
    error = json.loads(answer)
    assert error["status"] == status and message in error["error"], error
    assert "\n" not in error["error"] and "Traceback" not in error["error"]


def test_requests_the_http_parser_refuses_are_one_line_json_errors(server):
    """uvicorn answers these itself, before the application sees them."""
    where = "id IN (" + ", ".join(str(key) for key in range(20_000)) + ")"  # a URL of 150 kB
    status, headers, answer = call(server, "GET", "/v1/lakes/events/files", params={"where": where})
    assert status == 414 and headers["content-type"] == "application/json"
    error = json.loads(answer)
    assert error["status"] == 414 and "over the 65,535" in error["error"] and "POST the parameters" in error["error"]
    status, _, answer = call(server, "POST", "/v1/lakes/events/files", body={"where": where})
    assert status == 200, answer
    address = urllib.parse.urlsplit(server)
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nno colon in this header\r\n\r\n")
        head, _, body = _read_all(connection).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"content-type: application/json" in head
    error = json.loads(body)
    assert error["status"] == 400 and error["error"].startswith("malformed HTTP request"), error


def _read_all(connection: socket.socket) -> bytes:
    answer = b""
    while chunk := connection.recv(65536):
        answer += chunk
    return answer


def _arrow_keys_with_an_offset_past_the_data() -> bytes:
    """An Arrow IPC stream of strings whose offsets point far past the data (a kernel trusting
    them reads memory it does not own)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, pa.schema([("user", pa.string())])) as writer:
        writer.write_table(pa.table({"user": ["a", "b", "zzzz"] * 4}))
    body = bytearray(sink.getvalue().to_pybytes())
    at = bytes(body).find(struct.pack("<4i", 0, 1, 2, 6))
    body[at + 8 : at + 12] = struct.pack("<i", 0x7FFF0000)
    return bytes(body)


def test_the_accept_header_weighs_its_media_types(server, lakes):
    where = {"where": "id > 0", "limit": 3}
    for accept, media_type in [
        ("text/csv;q=0, application/json", "application/x-ndjson"),
        (f"{ARROW};q=0", "application/x-ndjson"),
        (f"text/csv;q=0.5, {ARROW}", ARROW),
        (f"text/csv, {ARROW};q=0.2", "text/csv"),
        ("*/*", "application/x-ndjson"),
    ]:
        status, headers, _ = call(server, "GET", "/v1/lakes/events/rows", params=where, headers={"Accept": accept})
        assert status == 200 and headers["content-type"].startswith(media_type), (accept, headers)


def test_keys_of_a_binary_column_are_base64_as_rows_show_them(tmp_path):
    lake = tmp_path / "blobs"
    lake.mkdir()
    values = [b"\x00\xff", b"", b"plain", b"\x00\xff"]
    pq.write_table(pa.table({"id": list(range(4)), "tag": pa.array(values, pa.binary())}), lake / "part-0.parquet")
    pq.write_table(pa.table({"id": [9], "tag": pa.array([b"other"], pa.binary())}), lake / "part-1.parquet")
    lakeseek.create_index(str(lake), ["tag"], engine="local")
    served = start_lakeseek_serve(tmp_path, {"blobs": str(lake)}, workers=1)
    try:
        status, _, body = call(served.endpoint, "GET", "/v1/lakes/blobs/rows", params={"where": "id = 0"}, token=None)
        shown = json.loads(body)["tag"]
        assert status == 200 and shown == "AP8="
        keys = {"column": "tag", "keys": [shown, "", "b3RoZXI="]}
        status, _, body = call(served.endpoint, "POST", "/v1/lakes/blobs/locate", body=keys, token=None)
        pairs = sorted((pair["key"], pair["file"].rsplit("/", 1)[-1]) for pair in json.loads(body)["pairs"])
        assert status == 200 and pairs == [
            ("", "part-0.parquet"),
            ("AP8=", "part-0.parquet"),
            ("b3RoZXI=", "part-1.parquet"),
        ]
        bad = {"column": "tag", "keys": ["not base64!"]}
        status, _, body = call(served.endpoint, "POST", "/v1/lakes/blobs/locate", body=bad, token=None)
        assert status == 400 and "is not base64" in json.loads(body)["error"]
    finally:
        served.stop()


def test_too_large_batches_and_the_token(server, lakes):
    status, _, body = call(server, "POST", "/v1/lakes/events/locate", body={"column": "id", "keys": [1] * 1_000_001})
    assert status == 413 and "more than one locate takes" in json.loads(body)["error"]
    status, _, body = call(server, "GET", "/v1/lakes/events/rows", params={"where": "id > 0", "limit": 10**9})
    assert status == 413
    where = "id IN (" + ", ".join(str(n) for n in range(200_000)) + ")"  # planned in about 30 s (found by a hunt)
    status, _, body = call(server, "POST", "/v1/lakes/events/files", body={"where": where})
    assert status == 413 and "/locate" in json.loads(body)["error"]
    for token in (None, "wrong"):
        status, headers, body = call(server, "GET", "/v1/lakes/events/files", params={"where": "id = 1"}, token=token)
        assert status == 401 and "Bearer" in json.loads(body)["error"]
        assert headers["www-authenticate"].startswith("Bearer")
        assert call(server, "GET", "/metrics", token=token)[0] == 401
    assert call(server, "GET", "/healthz", token=None)[0] == 200


def test_a_long_predicate_does_not_hold_up_other_requests(lakes, tmp_path):
    """A files request was answered on the event loop: one with 100,000 keys held every other
    request of its worker (/healthz included) for the seconds its planning took."""
    served = start_lakeseek_serve(tmp_path, {"events": str(lakes["events"])}, token=TOKEN, workers=1)
    where = "id IN (" + ", ".join(str(n) for n in range(100_000)) + ")"
    finished: dict[str, float] = {}

    def long_request() -> None:
        status, _, _ = call(served.endpoint, "POST", "/v1/lakes/events/files", body={"where": where})
        finished["long"] = time.perf_counter()
        assert status == 200

    try:
        assert call(served.endpoint, "GET", "/v1/lakes/events/files", params={"where": "id = 3"})[0] == 200  # opened
        worker = threading.Thread(target=long_request)
        worker.start()
        time.sleep(0.3)  # the long request is being planned
        assert call(served.endpoint, "GET", "/healthz", token=None)[0] == 200
        finished["healthz"] = time.perf_counter()
        worker.join()
    finally:
        served.stop()
    # Answered long before the long request (which takes seconds), not right after it.
    assert finished["long"] - finished["healthz"] > 1.0, finished


def test_workers_slow_to_start_are_waited_for(lakes, tmp_path):
    """Found by a hunt under load: a worker that took over 5 s to import answered uvicorn's
    health check too late, was killed and started again, for ever, and nothing was served. Here
    every worker starts 12 s late (a sitecustomize that sleeps in the processes the service
    starts, which inherit the variable it sets)."""
    slow = tmp_path / "slow-start"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text(
        "import os, time\n"
        "if os.environ.get('SLOW_START_PARENT'):\n"
        "    time.sleep(12)\n"
        "os.environ['SLOW_START_PARENT'] = '1'\n"
    )
    path = os.pathsep.join(filter(None, [str(slow), os.environ.get("PYTHONPATH")]))
    served = start_lakeseek_serve(
        tmp_path, {"events": str(lakes["events"])}, token=TOKEN, workers=2, environment={"PYTHONPATH": path}
    )
    try:
        assert call(served.endpoint, "GET", "/v1/lakes/events/files", params={"where": "id = 3"})[0] == 200
    finally:
        served.stop()


def test_a_storage_failure_is_a_5xx_that_names_it(server, lakes):
    root = lakes["broken"]
    victim = sorted(root.rglob("part-*.parquet"))[2]
    some_id = pq.read_table(victim, columns=["id"]).column(0)[0].as_py()
    victim.write_bytes(b"not a parquet file at all" * 40)  # a changed file: read without the index
    status, _, body = call(server, "GET", "/v1/lakes/broken/rows", params={"where": f"id = {some_id}"})
    error = json.loads(body)
    assert 500 <= status < 600 and victim.name in error["error"], error
    assert "\n" not in error["error"] and "Traceback" not in error["error"]


def test_answers_stay_exact_while_the_lake_changes_and_its_index_refreshes(server, lakes):
    """Readers hammer the service while the lake gains a file and its index refreshes twice
    (in this process, as another writer would): every answer is the full scan's at its time."""
    root = lakes["changing"]
    stable = [row[0] for row in scan(root, "id % 50 = 1", "id")][:12]
    expected = {key: scan(root, f"id = {key}", "id, user") for key in stable}
    fresh = list(range(900_001, 900_041))
    stop = threading.Event()
    appended = threading.Event()
    wrong: list[str] = []
    answers = [0]

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            key = rng.choice(stable)
            status, _, body = call(
                server, "POST", "/v1/lakes/changing/rows", body={"where": f"id = {key}", "columns": ["id", "user"]}
            )
            got = [tuple(json.loads(line).values()) for line in body.decode().splitlines()] if status == 200 else body
            if got != [tuple(row) for row in expected[key]]:
                wrong.append(f"id = {key}: {got!r}")
            was_appended = appended.is_set()
            new_key = rng.choice(fresh)
            status, _, body = call(server, "GET", "/v1/lakes/changing/files", params={"where": f"id = {new_key}"})
            files = json.loads(body)["files"] if status == 200 else body
            if was_appended and not any("part-100" in path for path in files):
                wrong.append(f"id = {new_key} after the append: {files!r}")
            answers[0] += 2

    with ThreadPoolExecutor(4) as pool:
        running = [pool.submit(reader, seed) for seed in range(4)]
        time.sleep(1.0)
        write_part(root, 100, np.array(fresh), np.random.default_rng(5))
        appended.set()
        time.sleep(0.5)
        lakeseek.refresh_index(str(root), "incremental", engine="local")
        time.sleep(0.5)
        lakeseek.optimize_index(str(root), "full", engine="local")
        time.sleep(1.0)
        stop.set()
        for future in running:
            future.result()
    assert not wrong, wrong[:5]
    assert answers[0] > 40
    _, _, body = call(server, "GET", "/v1/lakes/changing/files", params={"where": f"id = {fresh[3]}"})
    assert json.loads(body)["stale"] is False  # the refreshed index, opened again by the service


def test_a_lake_whose_only_index_log_is_wholly_damaged_meanwhile_is_scanned(tmp_path):
    """Never a failed query: the service reads every file, says so in the plan, and /status
    names the damage as a 5xx."""
    lake = tmp_path / "lake"
    make_lake(lake, seed=7, files=4, rows=100)
    served = start_lakeseek_serve(tmp_path, {"lake": str(lake)}, workers=1)
    try:
        where = predicates(lake, random.Random(7))[3]
        status, _, body = call(served.endpoint, "GET", "/v1/lakes/lake/rows", params={"where": where}, token=None)
        assert status == 200
        for entry in (lake / "_lakeseek" / "default" / "log").iterdir():
            entry.write_text("{")
        for where in predicates(lake, random.Random(8)):
            status, headers, body = call(
                served.endpoint, "GET", "/v1/lakes/lake/rows", params={"where": where}, token=None
            )
            assert status == 200 and ids_of_rows(body) == [row[0] for row in scan(lake, where)], where
            assert headers["x-lakeseek-files"] == "4", where
        status, _, body = call(served.endpoint, "GET", "/v1/lakes/lake/files", params={"where": "id = 1"}, token=None)
        plan = json.loads(body)
        assert status == 200 and len(plan["files"]) == 4 and "every entry of the index log" in plan["reason"], plan
        status, _, body = call(served.endpoint, "GET", "/v1/lakes/lake/status", token=None)
        assert status >= 500 and "remove the directory" in json.loads(body)["error"]
    finally:
        served.stop()


def test_serve_refuses_a_lake_without_an_index(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), plain / "part.parquet")
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lakeseek"), "serve", "--lake", f"plain={plain}", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1 and "lake 'plain'" in done.stderr and "Traceback" not in done.stderr
    shutil.rmtree(plain)
