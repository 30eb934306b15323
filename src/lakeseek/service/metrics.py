"""The service's Prometheus metrics (of one worker process): requests and their latency by
endpoint and status, storage calls by kind, and the process's caches (hits, misses, size)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from lakeseek.lru import CACHES
from lakeseek.service.lakes import Lakes

_SECONDS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_STORAGE_CALLS = ("reads", "bytes_read", "data_files", "data_bytes", "heads", "lists", "writes", "deletes")


class Metrics:
    def __init__(self, lakes: Lakes) -> None:
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

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, str(status)).inc()
        self.latency.labels(endpoint).observe(seconds)

    def text(self) -> bytes:
        return generate_latest(self.registry)


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
