"""Presigned URLs of AWS Signature Version 2 (``?AWSAccessKeyId=&Expires=&Signature=``): what
boto3's ``generate_presigned_url`` and ``aws s3 presign`` produce by default for S3 in
us-east-1 and the other regions that predate SigV4. Query strings only: every SDK signs its own
requests with SigV4.

The signature is base64 HMAC-SHA1 over the method, ``Content-MD5``, ``Content-Type``, the expiry,
the ``x-amz-*`` headers and the resource: the path as sent (path-style addressing) and the
sub-resources S3 names (``uploadId``, ``partNumber``, ``response-*``, ...). botocore moves the
headers it signed into the query string; they count wherever they arrive.
"""

from __future__ import annotations

import base64
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from worker.api.s3auth.errors import query_malformed, signature_mismatch
from worker.api.s3auth.sigv4 import split_query, wire_bytes

SUBRESOURCES = frozenset(
    {
        "accelerate", "acl", "analytics", "cors", "delete", "inventory", "lifecycle",
        "location", "logging", "metrics", "notification", "object-lock", "partNumber",
        "policy", "replication", "requestPayment", "response-cache-control",
        "response-content-disposition", "response-content-encoding",
        "response-content-language", "response-content-type", "response-expires", "restore",
        "select", "select-type", "storageClass", "tagging", "torrent", "uploadId", "uploads",
        "versionId", "versioning", "versions", "website",
    }
)  # fmt: skip
"""Query parameters that are part of the signed resource, as S3 and botocore list them."""
_EXPIRES = re.compile(r"[0-9]{1,12}")
_PARAMS = ("AWSAccessKeyId", "Expires", "Signature")


def is_presigned_v2(pairs: list[tuple[str, str]]) -> bool:
    return any(name in _PARAMS for name, _ in pairs)


@dataclass(frozen=True)
class ClaimV2:
    """A SigV2 presigned URL's key id, expiry (seconds since the epoch) and signature."""

    access_key_id: str
    expires: int
    signature: str


def claim(pairs: list[tuple[str, str]]) -> ClaimV2:
    params = {name: unquote(value) for name, value in pairs if name in _PARAMS}
    if len(params) != len(_PARAMS) or not _EXPIRES.fullmatch(params["Expires"]):
        raise query_malformed(
            "Query-string authentication requires the AWSAccessKeyId, Expires and Signature "
            "parameters, Expires in seconds since the epoch."
        )
    return ClaimV2(params["AWSAccessKeyId"], int(params["Expires"]), params["Signature"])


def check(
    found: ClaimV2,
    secret: str,
    method: str,
    raw_path: str,
    raw_query: str,
    headers: Mapping[str, str],
) -> None:
    """Raises SignatureDoesNotMatch unless ``found`` signs this request with ``secret``."""
    pairs = split_query(raw_query)
    query = {name.lower(): unquote(value) for name, value in pairs if name not in _PARAMS}
    standard = [headers.get(n, query.get(n, "")).strip() for n in ("content-md5", "content-type")]
    amz = {n: v for n, v in query.items() if n.startswith("x-amz-")}
    amz.update((n, v) for n, v in headers.items() if n.startswith("x-amz-"))
    text = "\n".join([method, *standard, str(found.expires)]) + "\n"
    text += "".join(f"{name}:{' '.join(amz[name].split())}\n" for name in sorted(amz))
    text += _resource(raw_path, raw_query)
    digest = hmac.digest(secret.encode(), wire_bytes(text), "sha1")
    expected = base64.b64encode(digest).decode()
    given = found.signature.encode("utf-8", "replace")
    if not hmac.compare_digest(expected.encode(), given):
        raise signature_mismatch()


def _resource(raw_path: str, raw_query: str) -> str:
    kept: list[tuple[str, str]] = []
    for part in raw_query.split("&"):
        name, equals, value = part.partition("=")
        if name in SUBRESOURCES:
            kept.append((name, f"{name}={unquote(value)}" if equals else name))
    path = raw_path or "/"
    return path + "?" + "&".join(text for _, text in sorted(kept)) if kept else path
