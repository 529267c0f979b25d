"""Azure Blob Storage as a UFS backend, through adlfs: the client settings and the read pinned
to a version (``If-Match`` on the blob's ETag). Everything else is fsspec's, as for any object
store (:class:`ufs.generic.FsspecBackend`); every request is a coroutine on fsspec's IO loop,
cancelled at its deadline."""

from __future__ import annotations

from typing import Any

import adlfs
from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError, ResourceModifiedError

from ufs.deadline import Deadline, ThreadRunner
from ufs.errors import UfsVersionChanged
from ufs.generic import FsspecBackend
from ufs.kinds.azure import AzureOptions
from ufs.options import UfsOptions

_RANGE_NOT_SATISFIABLE = 416


def storage_options(options: UfsOptions) -> dict[str, Any]:
    """adlfs constructor options: the credentials as configured, the adapter's timeouts, and
    no cache of adlfs's own (the worker's cache is the only cache)."""
    azure = options.of(AzureOptions)
    settings: dict[str, Any] = {
        "skip_instance_cache": True,
        "default_cache_type": "none",
        "use_listings_cache": False,
        "connection_timeout": max(1, options.connect_timeout_ms // 1000),
        "read_timeout": max(1, options.read_timeout_ms // 1000),
    }
    if azure.connection_string:
        return settings | {"connection_string": azure.connection_string}
    if azure.endpoint:
        return settings | {"connection_string": _connection_string(azure)}
    return settings | {
        "account_name": azure.account_name,
        "account_key": azure.account_key,
        "sas_token": azure.sas_token,
        "anon": azure.anonymous or None,
    }


def _connection_string(azure: AzureOptions) -> str:
    """A connection string naming the endpoint, for an emulator or a private endpoint."""
    scheme = azure.endpoint.split("://", 1)[0] if azure.endpoint else "https"
    parts = [f"DefaultEndpointsProtocol={scheme}", f"AccountName={azure.account_name}"]
    if azure.account_key:
        parts.append(f"AccountKey={azure.account_key}")
    if azure.sas_token:
        parts.append(f"SharedAccessSignature={azure.sas_token.lstrip('?')}")
    parts.append(f"BlobEndpoint={azure.endpoint}")
    return ";".join(parts) + ";"


class AzureBackend(FsspecBackend):
    """Azure Blob Storage (``az://container/path``) through adlfs. Versions are ETags, and a
    read with a version carries ``If-Match``, so it never returns bytes of another version.
    Thread-safe."""

    pins_versions = True

    def __init__(self, scheme: str, options: UfsOptions, threads: ThreadRunner) -> None:
        super().__init__(scheme, adlfs.AzureBlobFileSystem(**storage_options(options)), threads)

    def read(
        self, uri: str, offset: int, length: int, version: str | None, deadline: Deadline
    ) -> bytes:
        if version is None:
            return super().read(uri, offset, length, None, deadline)
        if length <= 0:
            return b""  # no bytes to pin (Azure refuses a range of none)
        container, _, blob = self.path(uri).partition("/")
        service: Any = self.filesystem.service_client

        async def body() -> bytes:
            async with service.get_blob_client(container=container, blob=blob) as client:
                stream = await client.download_blob(
                    offset=offset,
                    length=length,
                    etag=f'"{version}"',
                    match_condition=MatchConditions.IfNotModified,
                )
                data: bytes = await stream.readall()
                return data

        try:
            return self.run(body, deadline)
        except ResourceModifiedError as exc:
            raise UfsVersionChanged(uri, version, None) from exc
        except HttpResponseError as exc:
            # A range that starts at the end (a read of an empty blob, or past its end) is
            # answered 416 by Azure, where the other kinds give no bytes.
            if exc.status_code == _RANGE_NOT_SATISFIABLE:
                return b""
            raise
