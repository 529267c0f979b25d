import errno

import pytest
from botocore import exceptions as boto

from ufs.errors import (
    UfsError,
    UfsInvalidPath,
    UfsNotFound,
    UfsPermissionDenied,
    UfsUnavailable,
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
        (OSError(errno.EBUSY, "slow down"), UfsUnavailable),
        (OSError(errno.ECONNREFUSED, "refused"), UfsUnavailable),
        (OSError(errno.ENAMETOOLONG, "long"), UfsInvalidPath),
        (OSError(errno.ELOOP, "loop"), UfsInvalidPath),
        (ConnectionResetError(), UfsUnavailable),
        (TimeoutError(), UfsUnavailable),
        (boto.EndpointConnectionError(endpoint_url="http://x"), UfsUnavailable),
        (boto.NoCredentialsError(), UfsPermissionDenied),
        (client_error("NoSuchKey", 404), UfsNotFound),
        (client_error("AccessDenied", 403), UfsPermissionDenied),
        (client_error("InternalError", 500), UfsUnavailable),
        (client_error("SlowDown", 503), UfsUnavailable),
        (client_error("InvalidRange", 416), UfsError),
    ],
)
def test_translation_by_type_errno_and_code(exc: Exception, expected: type[UfsError]) -> None:
    translated = translate(exc, "read", "s3://b/k")
    assert type(translated) is expected
    assert "s3://b/k" in str(translated)


def test_message_text_does_not_decide() -> None:
    assert type(translate(OSError(errno.EINVAL, "not found"), "read", "s3://b/k")) is UfsError
