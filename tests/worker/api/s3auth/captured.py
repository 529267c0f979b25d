"""Requests exactly as boto3 sends them: a client whose ``before-send`` hook records the prepared
request (method, raw path and query, headers, body bytes) and stops it there, so tests verify
what botocore's own signers and checksum machinery produced, with no server."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials as BotoCredentials

from worker.api.s3auth import AccessKey, Verified, Verifier, sigv4

KEY_ID = "AKIDDORATEST0000001"
SECRET = "doraSecretKey/with+chars=0000000000000001"
OTHER_KEY_ID = "AKIDDORATEST0000002"
OTHER_SECRET = "another/secret+key=0000000000000000000002"
CREDENTIALS = [AccessKey(KEY_ID, SECRET), AccessKey(OTHER_KEY_ID, OTHER_SECRET)]


@dataclass(frozen=True)
class Sent:
    """One request as it would leave the client."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    host: str
    body: bytes = b""
    extra: dict[str, Any] = field(default_factory=dict)

    def with_headers(self, **changes: str | None) -> Sent:
        """A copy with headers changed (``x_amz_meta_a="1"`` sets ``x-amz-meta-a``; None
        removes)."""
        headers = dict(self.headers)
        for name, value in changes.items():
            header = name.replace("_", "-")
            if value is None:
                headers.pop(header, None)
            else:
                headers[header] = value
        return replace(self, headers=headers)

    def verify(self, verifier: Verifier) -> Verified:
        return verifier.verify(self.method, self.path, self.query, self.headers, self.host)

    def through(self, verifier: Verifier, split: int = 65536) -> bytes:
        """Verify, stream the body through the check in pieces of ``split`` bytes, finish;
        the decoded payload."""
        check = self.verify(verifier).body
        out = bytearray()
        for start in range(0, len(self.body), split):
            out += check.feed(self.body[start : start + split])
        check.finish()
        return bytes(out)


class _Stop(Exception):
    def __init__(self, sent: Sent) -> None:
        super().__init__("captured")
        self.sent = sent


def _record(request: Any, **_: Any) -> None:
    url = urlsplit(request.url)
    body = request.body
    if body is None:
        data = b""
    elif isinstance(body, bytes | bytearray):
        data = bytes(body)
    elif isinstance(body, str):
        data = body.encode()
    else:
        data = body.read()
    headers = {
        name.lower(): value.decode("latin-1") if isinstance(value, bytes) else str(value)
        for name, value in request.headers.items()
    }
    raise _Stop(Sent(request.method, url.path, url.query, headers, url.netloc, data))


def client(
    endpoint: str = "https://s3.dora.test:9443",
    key_id: str = KEY_ID,
    secret: str = SECRET,
    **config: Any,
) -> Any:
    """A boto3 S3 client at its default settings (path style, as for any custom endpoint)
    whose requests are captured instead of sent."""
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"}, **config),
    )
    s3.meta.events.register("before-send.s3", _record)
    return s3


def capture(call: Callable[[], object]) -> Sent:
    """The request ``call`` (a boto3 client call) sends."""
    try:
        call()
    except _Stop as stop:
        return stop.sent
    raise AssertionError("the call sent no request")


def presigned(url: str, method: str = "GET", body: bytes = b"") -> Sent:
    """A request to a presigned URL as any HTTP client (curl, requests) sends it."""
    parts = urlsplit(url)
    headers = {"host": parts.netloc}
    if body:
        headers["content-length"] = str(len(body))
    return Sent(method, parts.path, parts.query, headers, parts.netloc, body)


def verifier(clock: Callable[[], float] | None = None, anonymous: bool = False) -> Verifier:
    if clock is None:
        return Verifier(CREDENTIALS, allow_anonymous=anonymous)
    return Verifier(CREDENTIALS, allow_anonymous=anonymous, clock=clock)


def aws_chunked(
    payload: bytes,
    sizes: Iterator[int],
    signing: tuple[bytes, str, str, str] | None = None,
    trailer: tuple[str, str] | None = None,
) -> bytes:
    """An aws-chunked body framed by hand: chunk sizes from ``sizes``; with ``signing`` (key,
    timestamp, scope, seed signature) each chunk and the trailer are signed in the chain."""
    wire = bytearray()
    previous = signing[3] if signing else ""

    def signature(kind: str, digest: str) -> str:
        assert signing is not None
        key, timestamp, scope, _ = signing
        if kind == "PAYLOAD":
            empty = hashlib.sha256(b"").hexdigest()
            text = f"AWS4-HMAC-SHA256-PAYLOAD\n{timestamp}\n{scope}\n{previous}\n{empty}\n{digest}"
        else:
            text = f"AWS4-HMAC-SHA256-TRAILER\n{timestamp}\n{scope}\n{previous}\n{digest}"
        return hmac.new(key, text.encode(), "sha256").hexdigest()

    pos = 0
    while True:
        size = min(next(sizes), len(payload) - pos) if pos < len(payload) else 0
        chunk = payload[pos : pos + size]
        pos += size
        header = f"{size:x}"
        if signing:
            previous = signature("PAYLOAD", hashlib.sha256(chunk).hexdigest())
            header += f";chunk-signature={previous}"
        wire += header.encode() + b"\r\n"
        if not size:
            break
        wire += chunk + b"\r\n"
    if trailer:
        line = f"{trailer[0]}:{trailer[1]}\n"
        wire += line.replace("\n", "\r\n").encode()
        if signing:
            trailer_signature = signature("TRAILER", hashlib.sha256(line.encode()).hexdigest())
            wire += f"x-amz-trailer-signature:{trailer_signature}\r\n".encode()
    wire += b"\r\n"
    return bytes(wire)


class _GivenPayloadSigner(S3SigV4Auth):
    """botocore's S3 signer, signing the payload mode the request names (as the C++ and Rust
    SDKs and DuckDB choose theirs) instead of choosing one itself."""

    def _modify_request_before_signing(self, request: AWSRequest) -> None:
        SigV4Auth._modify_request_before_signing(self, request)


def botocore_signed(
    mode: str, body: bytes, trailer: str | None = None, length: int = 0
) -> tuple[Sent, tuple[bytes, str, str, str]]:
    """A PUT of ``body`` signed by botocore with payload mode ``mode`` (``length``: the decoded
    length of a streaming body), and what signs its chunks (key, timestamp, scope, seed)."""
    headers = {"X-Amz-Content-SHA256": mode}
    if mode.startswith("STREAMING"):
        headers["Content-Encoding"] = "aws-chunked"
        headers["X-Amz-Decoded-Content-Length"] = str(length)
    if trailer:
        headers["X-Amz-Trailer"] = trailer
    request = AWSRequest("PUT", "https://s3.dora.test:9443/b/chunked%20key", headers=headers)
    _GivenPayloadSigner(BotoCredentials(KEY_ID, SECRET), "s3", "us-east-1").add_auth(request)
    signed = {name.lower(): value for name, value in request.headers.items()}
    signed["content-length"] = str(len(body))
    timestamp = signed["x-amz-date"]
    scope = f"{timestamp[:8]}/us-east-1/s3/aws4_request"
    seed = signed["authorization"].rsplit("Signature=", 1)[1]
    key = sigv4.signing_key(SECRET, timestamp[:8], "us-east-1", "s3")
    sent = Sent("PUT", "/b/chunked%20key", "", signed, "s3.dora.test:9443", body)
    return sent, (key, timestamp, scope, seed)
