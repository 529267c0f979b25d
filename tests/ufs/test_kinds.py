"""The registry of storage kinds and each kind's own error translation and options."""

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError, ServiceRequestError
from botocore.exceptions import ClientError

from config import ConfigError, load_config
from ufs import kinds
from ufs.adapter import Ufs, UfsOptions
from ufs.errors import StorageUnavailable, UfsError, UfsNotFound, UfsPermissionDenied
from ufs.kinds.azure import AzureOptions
from ufs.kinds.s3 import S3Options
from ufs.mapping import translate
from worker.keys import build_registry


def test_every_kind_module_is_found_and_claims_its_schemes() -> None:
    assert {k.name for k in kinds.kinds()} == {"local", "s3", "azure"}
    assert kinds.kind_of("s3a") is kinds.kind_of("s3")
    assert kinds.kind_of("az") is not None and kinds.kind_of("gcs") is None


def test_the_key_registry_holds_every_kinds_keys() -> None:
    names = {key.name for key in build_registry()}
    assert {"dora.ufs.s3.endpoint", "dora.ufs.azure.account.key"} <= names


def test_options_hold_each_kinds_own_value_and_defaults_for_the_rest() -> None:
    config = load_config(build_registry(), environ={}, defines=["dora.ufs.s3.region=eu-west-3"])
    options = UfsOptions.from_config(config)
    assert options.of(S3Options).region == "eu-west-3"
    assert options.of(AzureOptions) == AzureOptions()


def test_an_azure_endpoint_without_an_account_is_refused_naming_both_keys() -> None:
    config = load_config(
        build_registry(), environ={}, defines=["dora.ufs.azure.endpoint=http://127.0.0.1:1/x"]
    )
    with pytest.raises(ConfigError, match=r"dora\.ufs\.azure\.endpoint.*account\.name"):
        UfsOptions.from_config(config)


def client_error(status: int, code: str) -> ClientError:
    response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "GetObject")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (client_error(404, "NoSuchKey"), UfsNotFound),
        (client_error(403, "AccessDenied"), UfsPermissionDenied),
        (client_error(429, "TooManyRequests"), StorageUnavailable),
        (client_error(400, "RequestTimeout"), StorageUnavailable),
        (client_error(503, "SlowDown"), StorageUnavailable),
        (ResourceNotFoundError("gone"), UfsNotFound),
        (ServiceRequestError("connection refused"), StorageUnavailable),
    ],
)
def test_each_kind_translates_its_client_errors(error: Exception, kind: type[UfsError]) -> None:
    assert type(translate(error, "read", "x://b/k")) is kind


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (403, UfsPermissionDenied),
        (404, UfsNotFound),
        (429, StorageUnavailable),
        (503, StorageUnavailable),
    ],
)
def test_an_azure_answer_is_read_by_its_status(status: int, kind: type[UfsError]) -> None:
    error = HttpResponseError(message="refused")
    error.status_code = status
    assert type(translate(error, "read", "az://c/k")) is kind


def test_a_scheme_no_kind_claims_is_served_by_fsspec() -> None:
    ufs = Ufs(UfsOptions())
    ufs.write("memory://kinds/x", b"x")
    assert ufs.read("memory://kinds/x", 0, 1) == b"x"
