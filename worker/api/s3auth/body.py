"""Checking a request body as it streams: its payload hash, its digests, its aws-chunked frames.

The surface feeds each received piece to :meth:`BodyCheck.feed`, writes what comes back, and
commits the write only once :meth:`BodyCheck.finish` has returned: a digest or a hash can only be
known wrong at the end, so every refusal here means "write nothing".
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from worker.api.s3auth.checksums import CHECKSUMS, Digest, Expected, expected_checksum, mismatch
from worker.api.s3auth.chunked import ChunkedDecoder
from worker.api.s3auth.errors import (
    incomplete_body,
    invalid_argument,
    invalid_request,
    sha256_mismatch,
)


class BodyCheck:
    """Decodes and checks one request body in bounded memory.

    ``decoder``: the aws-chunked decoder of a streaming body, else None (the body is the
    payload); ``content_sha256``: the hex payload hash to check, if one was sent; ``expected``:
    the digests sent in headers; ``trailers``: the checksum trailers ``x-amz-trailer`` declared;
    ``decoded_length``: ``x-amz-decoded-content-length`` when streaming, else ``content-length``
    (None if unknown).

    :meth:`feed` and :meth:`finish` raise :class:`S3AuthError`. Not thread-safe: one per
    request, fed in order."""

    def __init__(
        self,
        decoder: ChunkedDecoder | None,
        content_sha256: str | None,
        expected: Sequence[Expected],
        trailers: Sequence[str],
        decoded_length: int | None,
    ) -> None:
        self.decoded_length = decoded_length
        self._decoder = decoder
        self._content_sha256 = content_sha256
        self._expected = list(expected)
        self._trailers = tuple(trailers)
        self._received = 0
        self._sha256 = hashlib.sha256() if content_sha256 is not None else None
        algorithms = [e.algorithm for e in self._expected]
        algorithms += [CHECKSUMS[name] for name in self._trailers]
        self._digests: dict[str, Digest] = {a.label: a.new() for a in algorithms}

    def feed(self, chunk: bytes) -> bytes:
        """The payload bytes of ``chunk`` (the next piece of the body as received)."""
        data = self._decoder.feed(chunk) if self._decoder is not None else chunk
        if not data:
            return data
        self._received += len(data)
        if (
            self._decoder is None
            and self.decoded_length is not None
            and self._received > self.decoded_length
        ):
            raise invalid_argument("The body is longer than its Content-Length.")
        if self._sha256 is not None:
            self._sha256.update(data)
        for digest in self._digests.values():
            digest.update(data)
        return data

    def finish(self) -> None:
        """End of body: every frame, length, hash, digest and trailer signature checked."""
        if self._decoder is not None:
            self._decoder.finish()
            self._expected += self._trailer_digests(self._decoder.trailers)
        if self.decoded_length is not None and self._received != self.decoded_length:
            raise incomplete_body(
                f"The body has {self._received} bytes where {self.decoded_length} were declared."
            )
        if (
            self._sha256 is not None
            and self._content_sha256 is not None
            and not hmac.compare_digest(self._sha256.hexdigest(), self._content_sha256.lower())
        ):
            raise sha256_mismatch()
        for expected in self._expected:
            if not hmac.compare_digest(
                self._digests[expected.algorithm.label].digest(), expected.value
            ):
                raise mismatch(expected)

    def _trailer_digests(self, received: Sequence[tuple[str, str]]) -> list[Expected]:
        names = [name for name, _ in received]
        if sorted(names) != sorted(self._trailers):
            raise invalid_request(
                f"The trailer sent ({', '.join(names) or 'none'}) is not the one x-amz-trailer "
                f"declared ({', '.join(self._trailers) or 'none'})."
            )
        return [expected_checksum(name, value) for name, value in received]
