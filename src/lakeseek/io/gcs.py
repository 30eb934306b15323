"""Google Cloud Storage: ``gs://bucket/key``.

Settings come from the standard environment variables and, over them, ``storage_options``
(the same names, any case): GOOGLE_APPLICATION_CREDENTIALS (a service account key file; else
the usual credential chain) and GOOGLE_STORAGE_ENDPOINT (another server's URL). No GCS
emulator works with obstore here, so this backend runs the same code as S3 and Azure
(:class:`lakeseek.io.object_store.ObjectStorage`; obstore sends ``x-goog-if-generation-match: 0``
for the conditional create), but is not exercised against a server in the tests.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlparse

import pyarrow.fs as pafs
from obstore.store import GCSStore

from lakeseek.io.object_store import ObjectStorage, cached_storage, settings, store_path

KEYS = ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_STORAGE_ENDPOINT")


def open_gcs(location: str, storage_options: Mapping[str, object] | None = None) -> tuple[ObjectStorage, str]:
    parsed = urlparse(location)
    found = settings(os.environ, KEYS, storage_options)
    storage = cached_storage("gs", parsed.netloc, found, lambda: _storage(parsed.netloc, found))
    return storage, store_path(parsed.netloc, location, parsed.netloc)


def _storage(bucket: str, found: dict[str, str]) -> ObjectStorage:
    config = {}
    if "GOOGLE_APPLICATION_CREDENTIALS" in found:
        config["google_application_credentials"] = found["GOOGLE_APPLICATION_CREDENTIALS"]
    endpoint = found.get("GOOGLE_STORAGE_ENDPOINT")
    server = urlparse(endpoint) if endpoint else None
    if server:
        config["google_base_url"] = endpoint
    allow_http = bool(server and server.scheme == "http")
    store = GCSStore(bucket, config=config, client_options={"allow_http": allow_http})
    fs = pafs.GcsFileSystem(
        endpoint_override=server.netloc if server else None, scheme=server.scheme if server else "https"
    )
    return ObjectStorage("gs", bucket, store, fs, {**config, "allow_http": str(allow_http).lower()})
