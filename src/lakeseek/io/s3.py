"""Amazon S3 and S3-compatible stores: ``s3://bucket/key`` (``s3a://`` as Hadoop names it).

Settings come from the standard environment variables and, over them, ``storage_options``
(the same names, any case): AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
AWS_REGION (or AWS_DEFAULT_REGION), AWS_ENDPOINT_URL (an S3-compatible server's URL; an
``http://`` one allows plain HTTP) and AWS_ALLOW_HTTP. Without keys, both clients take the
usual credential chain (profile, instance role).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlparse

import pyarrow.fs as pafs
from obstore.store import S3Store

from lakeseek.io.object_store import ObjectStorage, cached_storage, is_true, settings, store_path

S3_READ_ATTEMPTS = 10  # obstore's default retries

KEYS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ALLOW_HTTP",
)


def open_s3(location: str, storage_options: Mapping[str, object] | None = None) -> tuple[ObjectStorage, str]:
    parsed = urlparse(location)
    found = settings(os.environ, KEYS, storage_options)
    storage = cached_storage(parsed.scheme, parsed.netloc, found, lambda: _storage(parsed.scheme, parsed.netloc, found))
    return storage, store_path(parsed.netloc, location, parsed.netloc)


def _storage(scheme: str, bucket: str, found: dict[str, str]) -> ObjectStorage:
    endpoint = found.get("AWS_ENDPOINT_URL")
    allow_http = is_true(found.get("AWS_ALLOW_HTTP")) or (endpoint or "").startswith("http://")
    region = found.get("AWS_REGION") or found.get("AWS_DEFAULT_REGION")
    config = {
        name: found[key]
        for name, key in (
            ("aws_access_key_id", "AWS_ACCESS_KEY_ID"),
            ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"),
            ("aws_session_token", "AWS_SESSION_TOKEN"),
            ("aws_endpoint", "AWS_ENDPOINT_URL"),
        )
        if key in found
    }
    if region:
        config["aws_region"] = region
    store = S3Store(bucket, config=config, client_options={"allow_http": allow_http})
    server = urlparse(endpoint) if endpoint else None
    fs = pafs.S3FileSystem(
        access_key=found.get("AWS_ACCESS_KEY_ID"),
        secret_key=found.get("AWS_SECRET_ACCESS_KEY"),
        session_token=found.get("AWS_SESSION_TOKEN"),
        region=region,
        endpoint_override=server.netloc if server else None,
        scheme=server.scheme if server else "https",
        # As many tries as obstore makes for the index's reads: pyarrow's 3 failed queries on
        # data files when S3 throttled a third of the reads (503 SlowDown).
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=S3_READ_ATTEMPTS),
    )
    return ObjectStorage(scheme, bucket, store, fs, {**config, "allow_http": str(allow_http).lower()})
