"""What every S3 operation starts from: the endpoint's state built once over the service
(:class:`Endpoint`), and one request's :class:`S3Call`: its bucket and key, its verified
caller, the request context of each URI it touches, and its body, checked as it streams
(``worker.api.s3auth``'s :class:`BodyCheck`) into a write that commits only once the check
has passed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from anyio import CapacityLimiter, from_thread, to_thread
from starlette.requests import Request

from config import Config
from config.core_keys import WORK_DIR
from worker.api.keys import MAX_UPLOADS
from worker.api.params import interval
from worker.api.s3 import keys
from worker.api.s3.attributes import AttributeMemo
from worker.api.s3.buckets import Buckets
from worker.api.s3.errors import S3Error
from worker.api.s3.forward import Forwarder
from worker.api.s3auth import AccessKey, BodyCheck, Principal, Verifier
from worker.common.deadlines import TIMEOUT_HEADER, request_deadline
from worker.request import UNKNOWN_CALLER, RequestContext, exchange
from worker.service import WorkerService, mount_roots
from worker.tls.clientcert import subject_name

SYNC_HEADER = "x-dora-sync-interval"
"""The per-call sync interval of an S3 request (the other surfaces' ``sync_interval``)."""
UPLOADS_DIR = "s3-uploads"
T = TypeVar("T")


def credentials(config: Config) -> list[AccessKey]:
    """The key pairs of ``dora.worker.s3.access.key.id`` and ``.secret.access.key``, the n-th
    id with the n-th secret; ConfigError when the lists differ in length."""
    ids: list[str] = config.get(keys.ACCESS_KEY_ID)
    secrets: list[str] = config.get(keys.SECRET_ACCESS_KEY)
    if len(ids) != len(secrets):
        raise config.invalid(
            keys.ACCESS_KEY_ID,
            f"{len(ids)} access key ids but {len(secrets)} secrets in "
            f"{keys.SECRET_ACCESS_KEY.name}; expected one secret per id, in the same order",
        )
    return [AccessKey(key, secret) for key, secret in zip(ids, secrets, strict=True)]


def check(config: Config) -> None:
    """Raise the ConfigError :meth:`Endpoint.bind` would, before anything is opened: a bucket
    or key pair that cannot be used."""
    credentials(config)
    Buckets.from_config(config, mount_roots(config))


@dataclass(frozen=True)
class Endpoint:
    """The S3 endpoint over ``service``: its buckets, its signature verifier and where
    multipart uploads keep their parts. Immutable; thread-safe as its parts are."""

    service: WorkerService
    buckets: Buckets
    verifier: Verifier
    uploads: Path
    started_ns: int
    upload_threads: CapacityLimiter
    """The threads PutObjects stream their bodies in, one per upload the worker takes at once
    (``dora.worker.http.max.concurrent.uploads``): apart from the thread pool every other
    request uses, so slow uploaders never starve reads of threads."""
    forwarder: Forwarder | None = None
    """In a cluster, what serves a key from its owner (``worker.api.s3.forward``)."""
    memo: AttributeMemo = field(default_factory=AttributeMemo)
    """The attributes (type, metadata) of the object versions last read."""

    @classmethod
    def bind(cls, service: WorkerService) -> Endpoint:
        """The endpoint over ``service`` (a surface's ``bind``). Raises ConfigError for a
        bucket or key pair that cannot be used."""
        config = service.config
        verifier = Verifier(credentials(config), config.get(keys.ANONYMOUS))
        uploads = Path(config.get(WORK_DIR)).expanduser() / UPLOADS_DIR
        buckets = Buckets.from_config(config, service.roots)
        threads = CapacityLimiter(config.get(MAX_UPLOADS))
        forwarder = Forwarder.from_config(service)
        return cls(service, buckets, verifier, uploads, time.time_ns(), threads, forwarder)


@dataclass(frozen=True)
class S3Call:
    """One S3 request, once its signature is verified: ``bucket`` and ``key`` (None: none
    in its address), the ``principal`` that signed it, its ``body`` check. Used by the one
    request it is for (its body check is stateful)."""

    endpoint: Endpoint
    request: Request
    bucket: str | None
    key: str | None
    principal: Principal
    body: BodyCheck

    @property
    def service(self) -> WorkerService:
        return self.endpoint.service

    @property
    def caller(self) -> str:
        """Who made the call, for the audit log: the access key id that signed it."""
        return self.principal.access_key_id or UNKNOWN_CALLER

    def named_bucket(self) -> str:
        if self.bucket is None:
            raise S3Error("InvalidRequest", 400, "the request names no bucket")
        return self.bucket

    def uri(self, key: str | None = None) -> str:
        """The URI of ``key`` (default: the request's own) in the request's bucket."""
        chosen = self.key if key is None else key
        return self.endpoint.buckets.uri(self.named_bucket(), chosen or "")

    def context(
        self, uri: str, version: str | None = None, sync: int | None = None
    ) -> RequestContext:
        """The request context of a call to ``uri`` made by this request: its
        ``x-dora-sync-interval`` (or ``sync``), the caller, the deadline, the exchange."""
        headers = self.request.headers
        fresh = interval(headers.get(SYNC_HEADER)) if sync is None else sync
        return self.service.request(
            uri,
            fresh,
            version,
            exchange(self.request.scope),
            None,
            self.caller,
            request_deadline(headers.get(TIMEOUT_HEADER)),
            identity=subject_name(self.request.scope),
        )

    async def receive(self, out: Callable[[bytes], object], limit: int) -> int:
        """Stream the body, decoded and checked, into ``out``; its size. Refused past ``limit``
        (EntityTooLarge) and when a digest or signature does not match (the check's error,
        raised once the whole body is in: nothing is to be written then)."""
        declared = self.body.decoded_length
        if declared is not None and declared > limit:
            raise _too_large(limit)
        received = 0
        async for chunk in self.request.stream():
            data = self.body.feed(chunk)
            received += len(data)
            if received > limit:
                raise _too_large(limit)
            if data:
                out(data)
        self.body.finish()
        return received

    async def written(self, write: Callable[[Iterator[bytes]], T], limit: int) -> T:
        """``write(chunks)`` run in a thread over the body as it arrives, decoded and checked
        (refused past ``limit``): the chunks end only once the whole body has passed the check
        (:meth:`BodyCheck.finish`), and raise its error instead when it fails. Every UFS write
        commits only after its last chunk and aborts on an error (``ufs.adapter.Ufs.write``),
        so a body that does not match writes nothing, and no body is held whole anywhere."""
        declared = self.body.decoded_length
        if declared is not None and declared > limit:
            raise _too_large(limit)
        pieces = self.request.stream()
        refused: list[Exception] = []

        def chunks() -> Iterator[bytes]:
            try:
                yield from self._checked(pieces, limit)
            except Exception as exc:
                refused.append(exc)
                raise

        def work() -> T:
            try:
                return write(chunks())
            except Exception:
                if refused:
                    # The body's own error, not what the UFS layer made of it mid-write.
                    raise refused[0] from None
                raise

        return await to_thread.run_sync(work, limiter=self.endpoint.upload_threads)

    def _checked(self, pieces: AsyncIterator[bytes], limit: int) -> Iterator[bytes]:
        """The body's decoded bytes, pulled from the event loop by a worker thread."""

        async def next_piece() -> bytes:
            return await anext(pieces)

        received = 0
        while True:
            try:
                piece = from_thread.run(next_piece)
            except StopAsyncIteration:
                break
            data = self.body.feed(piece)
            received += len(data)
            if received > limit:
                raise _too_large(limit)
            if data:
                yield data
        self.body.finish()

    async def small(self, limit: int) -> bytes:
        """The checked body in memory (an XML request), refused past ``limit``."""
        body = bytearray()
        await self.receive(body.extend, limit)
        return bytes(body)


def _too_large(limit: int) -> S3Error:
    return S3Error("EntityTooLarge", 400, f"the body exceeds the limit of {limit} bytes")
