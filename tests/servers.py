"""Real servers on loopback, for the tests: the S3 API of moto (in server mode), Azurite
(Azure Blob Storage), a Spark standalone cluster and ``lakeseek serve`` itself. Each runs as its
own process, started and stopped by a fixture; moto's log has one line per request, so tests
count requests on the wire."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Azurite's well-known development account (documented by Microsoft; not a secret).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
_REQUEST = re.compile(r'"(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP/[0-9.]+" (\d+)')
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # werkzeug colours some status lines


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(port: int, process: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited at start: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within 60 s")


@dataclass
class Server:
    name: str
    process: subprocess.Popen
    port: int
    log: Path
    options: dict[str, str] = field(default_factory=dict)  # lakeseek storage options for it

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self) -> list[tuple[str, str, int]]:
        """Every request served so far: (method, path, status). The server logs a request
        after answering it: the log is read again until it stops growing."""
        found: list[tuple[str, str, int]] = []
        while True:
            text = _COLOUR.sub("", self.log.read_text(errors="replace"))
            now = [(m[1], m[2], int(m[3])) for m in _REQUEST.finditer(text)]
            if found and len(now) == len(found):
                return now
            found = now
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_moto(directory: Path) -> Server:
    port = free_port()
    log = directory / "moto.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    _wait_for(port, process, "the moto S3 server", log)
    options = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    return Server("s3", process, port, log, options)


def start_lakeseek_serve(
    directory: Path,
    lakes: dict[str, str],
    *,
    token: str | None = None,
    workers: int = 2,
    environment: dict[str, str] | None = None,
) -> Server:
    """``lakeseek serve`` over ``lakes`` (name -> location), answering once its workers are up
    (``environment``: variables its processes get besides this one's)."""
    port = free_port()
    log = directory / "serve.log"
    command = [str(Path(sys.executable).parent / "lakeseek"), "serve", "--port", str(port), "--workers", str(workers)]
    for name, location in lakes.items():
        command += ["--lake", f"{name}={location}"]
    variables = {key: value for key, value in os.environ.items() if key != "LAKESEEK_TOKEN"} | (environment or {})
    if token is not None:
        variables["LAKESEEK_TOKEN"] = token
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=variables)
    server = Server("lakeseek", process, port, log)
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"lakeseek serve exited at start: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{server.endpoint}/healthz", timeout=5) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            if time.monotonic() > deadline:
                server.stop()
                raise
            time.sleep(0.1)


def azurite_binary() -> str | None:
    """``azurite-blob`` as ``make test`` installs it (npm, under the virtual environment), or on the PATH."""
    installed = ROOT / ".venv" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    return str(installed) if installed.exists() else shutil.which("azurite-blob")


def start_azurite(directory: Path, binary: str) -> Server:
    port = free_port()
    log = directory / "azurite.log"
    data = directory / "azurite-data"
    data.mkdir(exist_ok=True)
    with open(log, "w") as out:
        process = subprocess.Popen(
            [
                binary,
                "--silent",
                "--disableTelemetry",
                "--skipApiVersionCheck",
                "--location",
                str(data),
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "AZURITE_ACCOUNTS": f"{AZURITE_ACCOUNT}:{AZURITE_KEY}"},
        )
    _wait_for(port, process, "Azurite", log)
    options = {
        "AZURE_STORAGE_ACCOUNT_NAME": AZURITE_ACCOUNT,
        "AZURE_STORAGE_ACCOUNT_KEY": AZURITE_KEY,
        "AZURE_STORAGE_ENDPOINT": f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}",
    }
    return Server("azure", process, port, log, options)


@dataclass
class SparkCluster:
    """A Spark standalone master and one worker on loopback, started with the installed
    PySpark's own ``spark-class``."""

    master: Server
    worker: Server

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master.port}"

    def stop(self) -> None:
        self.worker.stop()
        self.master.stop()


def start_spark_cluster(directory: Path, cores: int = 2, memory: str = "2g") -> SparkCluster:
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    launcher = str(home / "bin" / "spark-class")

    def start(name: str, port: int, arguments: list[str], ready: str) -> Server:
        log = directory / f"spark-{name}.log"
        with open(log, "w") as out:
            process = subprocess.Popen(
                [launcher, *arguments], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=directory
            )
        deadline = time.monotonic() + 120
        while ready not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the Spark {name} did not start: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.25)
        return Server(name, process, port, log)

    port = free_port()
    master = start(
        "master",
        port,
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"],
        "I have been elected leader",
    )
    port = free_port()
    work = directory / "spark-work"
    work.mkdir(exist_ok=True)
    try:
        worker = start(
            "worker",
            port,
            [
                "org.apache.spark.deploy.worker.Worker",
                f"spark://127.0.0.1:{master.port}",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--webui-port",
                "0",
                "--work-dir",
                str(work),
            ],
            "Successfully registered with master",
        )
    except RuntimeError:
        master.stop()
        raise
    return SparkCluster(master, worker)


class ThrottlingProxy:
    """An HTTP proxy on loopback before an S3 server that answers the first ``refusals`` GETs
    of each ``.parquet`` key with S3's 503 SlowDown, as a throttling store does, and forwards
    the rest."""

    def __init__(self, upstream_port: int, refusals: int) -> None:
        import http.client
        import http.server
        import threading

        counts = {"throttled": 0}
        per_key: dict[str, int] = {}
        lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                return

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "GET" and self.path.split("?")[0].endswith(".parquet"):
                    key = self.path.split("?")[0]
                    with lock:
                        per_key[key] = per_key.get(key, 0) + 1
                        throttle = per_key[key] <= refusals
                        counts["throttled"] += throttle
                    if throttle:
                        slow = b"<Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>"
                        self.send_response(503)
                        self.send_header("Content-Type", "application/xml")
                        self.send_header("Content-Length", str(len(slow)))
                        self.end_headers()
                        self.wfile.write(slow)
                        return
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
                upstream.request(self.command, self.path, body=body or None, headers=dict(self.headers))
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response(answer.status, answer.reason)
                kept = (
                    ("transfer-encoding", "connection")
                    if self.command == "HEAD"
                    else ("transfer-encoding", "connection", "content-length")
                )
                for name, value in answer.getheaders():
                    if name.lower() not in kept:
                        self.send_header(name, value)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                upstream.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.counts = counts
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
