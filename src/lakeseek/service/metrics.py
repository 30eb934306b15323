"""The service's Prometheus metrics: requests and their latency by endpoint and status, storage
calls by kind, and the caches (hits, misses, size).

A service of several worker processes answers a scrape from any one of them, so each worker
publishes its own figures to a directory the workers share (a JSON file per process, every
``PUBLISH_SECONDS`` and at each scrape it answers), and a scrape sums them: counters and
histograms over every worker that ever served (a counter never goes back), gauges over the
workers alive."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from lakeseek.lru import CACHES
from lakeseek.service.lakes import Lakes

_SECONDS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_STORAGE_CALLS = ("reads", "bytes_read", "data_files", "data_bytes", "heads", "lists", "writes", "deletes")
PUBLISH_SECONDS = 1.0


class Metrics:
    """This process's metrics; with ``directory``, published there and scraped summed with
    the other workers'."""

    def __init__(self, lakes: Lakes, directory: str | None = None) -> None:
        self.directory = None if directory is None else Path(directory)
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "lakeseek_requests", "HTTP requests served", ["endpoint", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "lakeseek_request_seconds",
            "Time to answer a request",
            ["endpoint"],
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.registry.register(_Storage(lakes))
        self.registry.register(_Caches())
        self._publishing = threading.Lock()
        if self.directory is not None:
            threading.Thread(target=self._publish_every, name="lakeseek-metrics", daemon=True).start()

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, str(status)).inc()
        self.latency.labels(endpoint).observe(seconds)

    def text(self) -> bytes:
        if self.directory is None:
            return generate_latest(self.registry)
        self.publish()
        merged = CollectorRegistry(auto_describe=False)
        merged.register(_Workers(self.directory))
        return generate_latest(merged)

    def publish(self) -> None:
        """Write this process's figures for the other workers' scrapes (whole, by a rename)."""
        assert self.directory is not None
        families = [
            {
                "name": family.name,
                "type": family.type,
                "documentation": family.documentation,
                "samples": [[s.name, s.labels, s.value] for s in family.samples if not s.name.endswith("_created")],
            }
            for family in self.registry.collect()
        ]
        target = self.directory / f"{os.getpid()}.json"
        written = target.with_suffix(".json.tmp")
        with self._publishing:  # a scrape and the timer publish from two threads
            written.write_text(json.dumps(families))
            os.replace(written, target)

    def _publish_every(self) -> None:
        while True:
            with contextlib.suppress(OSError):  # the directory went with the service
                self.publish()
            time.sleep(PUBLISH_SECONDS)


class _Workers:
    """Every worker's published figures, summed (gauges of workers no longer alive left out)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def collect(self):
        merged: dict[str, Metric] = {}
        sums: dict[str, dict[tuple, float]] = {}
        for path in sorted(self.directory.glob("*.json")):
            try:
                families = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # replaced or removed while read
            alive = _alive(int(path.stem))
            for family in families:
                if family["type"] == "gauge" and not alive:
                    continue
                name = family["name"]
                merged.setdefault(name, Metric(name, family["documentation"], family["type"]))
                found = sums.setdefault(name, {})
                for sample, labels, value in family["samples"]:
                    key = (sample, tuple(sorted(labels.items())))
                    found[key] = found.get(key, 0.0) + value
        for name, metric in merged.items():
            for (sample, labels), value in sums[name].items():
                metric.add_sample(sample, dict(labels), value)
            yield metric


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Storage:
    """Calls each served lake's storage made (a storage shared by lakes is counted once)."""

    def __init__(self, lakes: Lakes) -> None:
        self.lakes = lakes

    def collect(self):
        family = CounterMetricFamily("lakeseek_storage", "Storage calls and bytes by kind", labels=["storage", "kind"])
        seen = set()
        for name in self.lakes.names():
            storage = self.lakes[name].storage
            if storage is None or id(storage) in seen:
                continue
            seen.add(id(storage))
            where = f"{storage.scheme}://{storage.netloc}"
            for kind in _STORAGE_CALLS:
                family.add_metric([where, kind], getattr(storage.stats, kind))
        yield family


class _Caches:
    def collect(self):
        hits = CounterMetricFamily("lakeseek_cache_hits", "Lookups a cache answered", labels=["cache"])
        misses = CounterMetricFamily("lakeseek_cache_misses", "Lookups a cache could not answer", labels=["cache"])
        weight = GaugeMetricFamily("lakeseek_cache_weight", "What a cache holds (bytes, or entries)", labels=["cache"])
        for name, cache in sorted(CACHES.items()):
            hits.add_metric([name], cache.hits)
            misses.add_metric([name], cache.misses)
            weight.add_metric([name], cache.weight)
        yield from (hits, misses, weight)
