"""Azure Blob Storage (``az://container/path``) as a storage kind: its keys, options and error
translation. The backend is :mod:`ufs.azure` (adlfs), imported only when a process reaches
Azure; azure-core's errors are looked up among the loaded modules, never imported."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from config import Config
from config.keys import KeyType, PropertyKey
from ufs.errors import (
    StorageUnavailable,
    UfsAlreadyExists,
    UfsError,
    UfsNotFound,
    UfsPermissionDenied,
)
from ufs.kind import UfsKind

if TYPE_CHECKING:
    from ufs.backend import UfsBackend
    from ufs.deadline import ThreadRunner
    from ufs.options import UfsOptions

ACCOUNT_NAME: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.azure.account.name", KeyType.STRING, None, "Azure storage account name."
)
ACCOUNT_KEY: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.azure.account.key",
    KeyType.STRING,
    None,
    "Azure storage account key (empty: a SAS token, a connection string, or Azure AD "
    "through DefaultAzureCredential's environment).",
    secret=True,
)
SAS_TOKEN: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.azure.sas.token", KeyType.STRING, None, "Azure shared access signature.", secret=True
)
CONNECTION_STRING: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.azure.connection.string",
    KeyType.STRING,
    None,
    "Azure storage connection string; when set, the other dora.ufs.azure.* keys are unused.",
    secret=True,
)
ENDPOINT: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.azure.endpoint",
    KeyType.STRING,
    None,
    "Blob service URL (empty: https://<account>.blob.core.windows.net); an emulator's, "
    "such as Azurite's http://127.0.0.1:10000/devstoreaccount1.",
)
ANONYMOUS: PropertyKey[bool] = PropertyKey(
    "dora.ufs.azure.anonymous", KeyType.BOOL, "false", "Read public containers without credentials."
)


@dataclass(frozen=True)
class AzureOptions:
    """How to reach Azure Blob Storage; built from the ``dora.ufs.azure.*`` keys."""

    account_name: str | None = None
    account_key: str | None = None
    sas_token: str | None = None
    connection_string: str | None = None
    endpoint: str | None = None
    anonymous: bool = False

    @classmethod
    def from_config(cls, config: Config) -> AzureOptions:
        options = cls(
            account_name=config.get(ACCOUNT_NAME) or None,
            account_key=config.get(ACCOUNT_KEY) or None,
            sas_token=config.get(SAS_TOKEN) or None,
            connection_string=config.get(CONNECTION_STRING) or None,
            endpoint=config.get(ENDPOINT) or None,
            anonymous=config.get(ANONYMOUS),
        )
        if options.endpoint and not options.connection_string and not options.account_name:
            raise config.invalid(
                ENDPOINT,
                f"it needs {ACCOUNT_NAME.name}, the account the endpoint serves "
                "(Azurite's is devstoreaccount1)",
            )
        return options


def _backend(scheme: str, options: UfsOptions, threads: ThreadRunner) -> UfsBackend:
    from ufs.azure import AzureBackend  # adlfs and the Azure SDK: only when Azure is reached

    return AzureBackend(scheme, options, threads)


def _status_error(status: int, code: str, what: str, uri: str) -> UfsError:
    if status == 404:
        return UfsNotFound(f"{uri} not found")
    if status in (401, 403):
        return UfsPermissionDenied(f"permission denied for {what} {uri}: {code or status}")
    if status == 409:
        return UfsAlreadyExists(f"{uri} already exists: {code or status}")
    if status == 429 or status >= 500:
        return StorageUnavailable(f"UFS unavailable during {what} {uri}: {code or status}")
    return UfsError(f"UFS refused {what} {uri}: {code or status}")


def translate(exc: BaseException, what: str, uri: str) -> UfsError | None:
    """The UFS error for one of azure-core's exceptions: by type for a request that got no
    answer, else by the answer's HTTP status and Azure's error code."""
    azure: Any = sys.modules.get("azure.core.exceptions")
    if azure is None or not isinstance(exc, azure.AzureError):
        return None
    if isinstance(exc, azure.ServiceRequestError | azure.ServiceResponseError):
        return StorageUnavailable(f"UFS unavailable during {what} {uri}: {type(exc).__name__}")
    if isinstance(exc, azure.ClientAuthenticationError):
        return UfsPermissionDenied(f"no usable credentials for {what} {uri}: {type(exc).__name__}")
    if isinstance(exc, azure.ResourceNotFoundError):
        return UfsNotFound(f"{uri} not found")
    if isinstance(exc, azure.ResourceExistsError):
        return UfsAlreadyExists(f"{uri} already exists")
    if isinstance(exc, azure.HttpResponseError):
        return _status_error(
            int(exc.status_code or 0), str(getattr(exc, "error_code", None) or ""), what, uri
        )
    return UfsError(f"UFS error during {what} {uri}: {type(exc).__name__}")


KIND = UfsKind(
    name="azure",
    schemes=frozenset({"az"}),
    keys=[ACCOUNT_NAME, ACCOUNT_KEY, SAS_TOKEN, CONNECTION_STRING, ENDPOINT, ANONYMOUS],
    options=AzureOptions.from_config,
    backend=_backend,
    translate=translate,
)
