import errno

import pytest
from botocore import exceptions as boto

from ufs.errors import (
    StorageUnavailable,
    UfsError,
    UfsInvalidPath,
    UfsNotFound,
    UfsPermissionDenied,
)
from ufs.mapping import translate


def client_error(code: str, status: int) -> boto.ClientError:
    response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return boto.ClientError(response, "GetObject")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (FileNotFoundError(errno.ENOENT, "x"), UfsNotFound),
        (PermissionError(errno.EACCES, "x"), UfsPermissionDenied),
        (OSError(errno.EBUSY, "slow down"), StorageUnavailable),
        (OSError(errno.ECONNREFUSED, "refused"), StorageUnavailable),
        (OSError(errno.ENAMETOOLONG, "long"), UfsInvalidPath),
        (OSError(errno.ELOOP, "loop"), UfsInvalidPath),
        (ConnectionResetError(), StorageUnavailable),
        (TimeoutError(), StorageUnavailable),
        (boto.EndpointConnectionError(endpoint_url="http://x"), StorageUnavailable),
        (boto.NoCredentialsError(), UfsPermissionDenied),
        (client_error("NoSuchKey", 404), UfsNotFound),
        (client_error("AccessDenied", 403), UfsPermissionDenied),
        (client_error("InternalError", 500), StorageUnavailable),
        (client_error("SlowDown", 503), StorageUnavailable),
        (client_error("InvalidRange", 416), UfsError),
    ],
)
def test_translation_by_type_errno_and_code(exc: Exception, expected: type[UfsError]) -> None:
    translated = translate(exc, "read", "s3://b/k")
    assert type(translated) is expected
    assert "s3://b/k" in str(translated)


def test_message_text_does_not_decide() -> None:
    assert type(translate(OSError(errno.EINVAL, "not found"), "read", "s3://b/k")) is UfsError
