"""The one exception of S3 request authentication: an S3 error code with its HTTP status.

The S3 surface renders it as S3's XML error body; nothing here knows HTTP or XML. Each code is
made by one function below, so a code always goes out with the status S3 gives it.
"""

from __future__ import annotations


class S3AuthError(Exception):
    """A request S3 would refuse: ``code`` (S3 error code), ``status`` (HTTP), ``message``.

    The message names what was wrong, never a secret or an expected signature."""

    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.status = status
        self.message = message


def signature_mismatch(message: str = "") -> S3AuthError:
    return S3AuthError(
        "SignatureDoesNotMatch",
        403,
        message
        or "The request signature we calculated does not match the signature you provided. "
        "Check your key and signing method.",
    )


def invalid_access_key() -> S3AuthError:
    return S3AuthError(
        "InvalidAccessKeyId",
        403,
        "The AWS Access Key Id you provided does not exist in our records.",
    )


def time_skewed() -> S3AuthError:
    return S3AuthError(
        "RequestTimeTooSkewed",
        403,
        "The difference between the request time and the current time is too large.",
    )


def access_denied(message: str) -> S3AuthError:
    return S3AuthError("AccessDenied", 403, message)


def sha256_mismatch() -> S3AuthError:
    return S3AuthError(
        "XAmzContentSHA256Mismatch",
        400,
        "The provided 'x-amz-content-sha256' header does not match what was computed.",
    )


def bad_digest(what: str) -> S3AuthError:
    return S3AuthError(
        "BadDigest", 400, f"The {what} you specified did not match what we received."
    )


def invalid_digest(message: str) -> S3AuthError:
    return S3AuthError("InvalidDigest", 400, message)


def invalid_argument(message: str) -> S3AuthError:
    return S3AuthError("InvalidArgument", 400, message)


def header_malformed(message: str) -> S3AuthError:
    return S3AuthError("AuthorizationHeaderMalformed", 400, message)


def query_malformed(message: str) -> S3AuthError:
    return S3AuthError("AuthorizationQueryParametersError", 400, message)


def invalid_request(message: str) -> S3AuthError:
    return S3AuthError("InvalidRequest", 400, message)


def incomplete_body(message: str) -> S3AuthError:
    return S3AuthError("IncompleteBody", 400, message)


def missing_length() -> S3AuthError:
    return S3AuthError(
        "MissingContentLength", 411, "You must provide the x-amz-decoded-content-length header."
    )
