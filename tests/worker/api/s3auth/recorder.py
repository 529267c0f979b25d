"""A minimal S3 server on loopback that verifies every request with :class:`Verifier` and keeps
objects in memory: enough S3 (PutObject, multipart, GetObject with a range, HeadObject,
ListObjectsV2, HeadBucket) for real clients — the aws CLI, s5cmd, pyarrow, Polars — to run their
default uploads and reads against it, so tests see what each client really signs and sends."""

from __future__ import annotations

import hashlib
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from tests.worker.tls.certs import Pair
from worker.api.s3auth import S3AuthError, Verifier

LAST_MODIFIED = "Thu, 01 Jan 2026 00:00:00 GMT"


@dataclass
class Outcome:
    """One request as the verifier saw it: ``code`` None when it passed."""

    method: str
    target: str
    payload_mode: str | None
    principal: str | None
    code: str | None


@dataclass
class Recorder:
    verifier: Verifier
    objects: dict[str, bytes] = field(default_factory=dict)
    parts: dict[str, dict[int, bytes]] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0
    scheme: str = "http"

    @property
    def endpoint(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def refused(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.code is not None]


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The body as the HTTP layer delivers it (HTTP/1.1 chunked framing removed)."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if not size:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(body)
            body += handler.rfile.read(size)
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    recorder: Recorder

    def log_message(self, format: str, *args: object) -> None:
        return

    def _serve(self) -> None:
        url = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        body = _read_body(self)
        outcome = Outcome(self.command, self.path, headers.get("x-amz-content-sha256"), None, None)
        try:
            verified = self.recorder.verifier.verify(
                self.command, url.path, url.query, headers, headers.get("host", "")
            )
            outcome.principal = verified.principal.access_key_id
            payload = bytearray()
            for start in range(0, len(body), 8191):
                payload += verified.body.feed(body[start : start + 8191])
            verified.body.finish()
        except S3AuthError as error:
            outcome.code = error.code
            with self.recorder.lock:
                self.recorder.outcomes.append(outcome)
            xml = f"<Error><Code>{error.code}</Code><Message>{error.message}</Message></Error>"
            self._answer(error.status, xml.encode(), {"Content-Type": "application/xml"})
            return
        with self.recorder.lock:
            self.recorder.outcomes.append(outcome)
        self._operate(
            unquote(url.path), parse_qs(url.query, keep_blank_values=True), bytes(payload)
        )

    def _operate(self, path: str, query: dict[str, list[str]], payload: bytes) -> None:
        bucket, _, key = path.lstrip("/").partition("/")
        objects = self.recorder.objects
        if self.command == "PUT" and "partNumber" in query:
            self.recorder.parts.setdefault(query["uploadId"][0], {})[
                int(query["partNumber"][0])
            ] = payload
            self._answer(200, b"", {"ETag": f'"{hashlib.md5(payload).hexdigest()}"'})
        elif self.command == "PUT":
            objects[path] = payload
            self._answer(200, b"", {"ETag": f'"{hashlib.md5(payload).hexdigest()}"'})
        elif self.command == "POST" and "uploads" in query:
            xml = f"<InitiateMultipartUploadResult><Bucket>{bucket}</Bucket><Key>{key}</Key>"
            self._answer(
                200, (xml + "<UploadId>up1</UploadId></InitiateMultipartUploadResult>").encode(), {}
            )
        elif self.command == "POST" and "uploadId" in query:
            parts = self.recorder.parts.pop(query["uploadId"][0], {})
            objects[path] = b"".join(parts[n] for n in sorted(parts))
            xml = f'<CompleteMultipartUploadResult><Key>{key}</Key><ETag>"e-1"</ETag>'
            self._answer(200, (xml + "</CompleteMultipartUploadResult>").encode(), {})
        elif not key and self.command == "GET":
            self._list(bucket, query)
        elif not key:
            self._answer(200, b"", {})
        elif path not in objects:
            self._answer(404, b"<Error><Code>NoSuchKey</Code></Error>", {})
        else:
            self._object(objects[path])

    def _object(self, data: bytes) -> None:
        meta = {"ETag": f'"{hashlib.md5(data).hexdigest()}"', "Last-Modified": LAST_MODIFIED}
        wanted = self.headers.get("Range")
        if wanted and wanted.startswith("bytes="):
            first, _, last = wanted[6:].partition("-")
            start = int(first) if first else max(0, len(data) - int(last))
            end = min(int(last), len(data) - 1) if first and last else len(data) - 1
            meta["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            self._answer(206, data[start : end + 1], meta)
        else:
            self._answer(200, data, meta)

    def _list(self, bucket: str, query: dict[str, list[str]]) -> None:
        prefix = f"/{bucket}/" + query.get("prefix", [""])[0]
        keys = sorted(k for k in self.recorder.objects if k.startswith(prefix))
        contents = "".join(
            f"<Contents><Key>{k.split('/', 2)[2]}</Key><LastModified>2026-01-01T00:00:00.000Z"
            f'</LastModified><ETag>"e"</ETag><Size>{len(self.recorder.objects[k])}</Size>'
            "<StorageClass>STANDARD</StorageClass></Contents>"
            for k in keys
        )
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult '
            'xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<Name>{bucket}</Name><Prefix>{query.get('prefix', [''])[0]}</Prefix>"
            f"<KeyCount>{len(keys)}</KeyCount><MaxKeys>1000</MaxKeys>"
            f"<IsTruncated>false</IsTruncated>{contents}</ListBucketResult>"
        )
        self._answer(200, xml.encode(), {"Content-Type": "application/xml"})

    def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _serve


@contextmanager
def serving(verifier: Verifier, tls: Pair | None = None) -> Iterator[Recorder]:
    """A recorder listening on a free loopback port until the block ends; HTTPS with ``tls``."""
    recorder = Recorder(verifier)
    handler = type("Handler", (_Handler,), {"recorder": recorder})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    recorder.port = server.server_address[1]
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls.cert, tls.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        recorder.scheme = "https"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
