"""Azure Blob Storage and ADLS Gen2: ``az://container/key`` (also ``azure://``), or
``abfs[s]://container@account.dfs.core.windows.net/key`` as Hadoop names it.

Settings come from the standard environment variables and, over them, ``storage_options``
(the same names, any case): AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY,
AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_ENDPOINT (a server's URL with the account, as
Azurite's ``http://127.0.0.1:10000/devstoreaccount1``; an ``http://`` one allows plain HTTP).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlparse

import pyarrow.fs as pafs
from obstore.store import AzureStore

from lakeseek.io.object_store import ObjectStorage, cached_storage, settings, store_path

KEYS = (
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_STORAGE_ENDPOINT",
)


def open_azure(location: str, storage_options: Mapping[str, object] | None = None) -> tuple[ObjectStorage, str]:
    parsed = urlparse(location)
    container, _, host = parsed.netloc.partition("@")
    found = settings(os.environ, KEYS, storage_options)
    if host and "AZURE_STORAGE_ACCOUNT_NAME" not in found:  # abfs://container@account.dfs.core.windows.net
        found["AZURE_STORAGE_ACCOUNT_NAME"] = host.split(".", 1)[0]
    storage = cached_storage("az", container, found, lambda: _storage(container, found))
    return storage, store_path(container, location, parsed.netloc)


def _storage(container: str, found: dict[str, str]) -> ObjectStorage:
    endpoint = found.get("AZURE_STORAGE_ENDPOINT")
    config = {
        name: found[key]
        for name, key in (
            ("azure_storage_account_name", "AZURE_STORAGE_ACCOUNT_NAME"),
            ("azure_storage_account_key", "AZURE_STORAGE_ACCOUNT_KEY"),
            ("azure_storage_sas_token", "AZURE_STORAGE_SAS_TOKEN"),
            ("azure_endpoint", "AZURE_STORAGE_ENDPOINT"),
        )
        if key in found
    }
    server = urlparse(endpoint) if endpoint else None
    allow_http = bool(server and server.scheme == "http")
    store = AzureStore(container, config=config, client_options={"allow_http": allow_http})
    authority = {}
    if server:
        authority = {
            "blob_storage_authority": server.netloc,
            "dfs_storage_authority": server.netloc,
            "blob_storage_scheme": server.scheme,
            "dfs_storage_scheme": server.scheme,
        }
    fs = pafs.AzureFileSystem(
        found.get("AZURE_STORAGE_ACCOUNT_NAME", ""),
        account_key=found.get("AZURE_STORAGE_ACCOUNT_KEY"),
        sas_token=found.get("AZURE_STORAGE_SAS_TOKEN"),
        **authority,
    )
    return ObjectStorage("az", container, store, fs, {**config, "allow_http": str(allow_http).lower()})
