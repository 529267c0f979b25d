"""aws-chunked bodies: the frames S3 clients stream when the length or the checksum of a body
is known only as it is sent.

A body is a run of chunks ``<hex size>[;chunk-signature=<sig>]\\r\\n<data>\\r\\n`` ending with a
chunk of size 0, then trailing headers (``x-amz-checksum-crc32:...``, and
``x-amz-trailer-signature`` when the trailer is signed), then an empty line. In the signed modes
each chunk's signature chains to the one before it, starting at the request's own signature.

Bounded memory: chunk data passes straight through (hashed on the way, never held), so a
decoder holds at most one line: a chunk header or a trailer line, at most :data:`MAX_LINE`
bytes, with at most :data:`MAX_TRAILER` bytes of trailer in all. A chunk size needs no limit of
its own, since no chunk is buffered; the declared decoded length bounds the total instead.
"""

from __future__ import annotations

import enum
import hashlib
import re

from worker.api.s3auth import sigv4
from worker.api.s3auth.errors import (
    incomplete_body,
    invalid_argument,
    signature_mismatch,
)

MAX_LINE = 256
"""Longest chunk header or trailer line: ``10000;chunk-signature=<64 hex>`` is 86 bytes."""
MAX_TRAILER = 4096
"""Most trailer bytes in all: a SHA256 checksum line and the trailer signature are ~150."""

_SIZE = re.compile(rb"[0-9a-fA-F]{1,16}")
_SIGNATURE_PREFIX = b"chunk-signature="
_TRAILER_SIGNATURE = "x-amz-trailer-signature"


class ChunkChain:
    """The signature chain of a signed streaming body: each chunk's signature is checked
    against the previous one, the seed being the request's signature. One per request; not
    thread-safe (a body arrives in order)."""

    def __init__(self, key: bytes, timestamp: str, scope: str, seed: str) -> None:
        self._key = key
        self._timestamp = timestamp
        self._scope = scope
        self._previous = seed

    def check_chunk(self, signature: str, chunk_sha256: str) -> None:
        text = sigv4.chunk_string_to_sign(
            self._timestamp, self._scope, self._previous, chunk_sha256
        )
        self._check(signature, text, "chunk")

    def check_trailer(self, signature: str, trailer: str) -> None:
        text = sigv4.trailer_string_to_sign(self._timestamp, self._scope, self._previous, trailer)
        self._check(signature, text, "trailer")

    def _check(self, signature: str, text: str, what: str) -> None:
        expected = sigv4.sign(self._key, text)
        if not sigv4.matches(expected, signature):
            raise signature_mismatch(f"The {what} signature does not match.")
        self._previous = expected


class _State(enum.Enum):
    SIZE = "chunk header"
    DATA = "chunk data"
    DATA_END = "end of chunk"
    TRAILER = "trailer"
    DONE = "done"


class ChunkedDecoder:
    """Decodes aws-chunked frames into payload bytes, checking chunk signatures when ``chain``
    is given. ``trailers``: whether trailing headers may follow (the ``-TRAILER`` modes);
    ``limit``: the declared decoded length, past which a chunk is refused at its header.

    Raises :class:`S3AuthError`: InvalidArgument for a malformed frame, SignatureDoesNotMatch
    for a bad chunk or trailer signature, IncompleteBody when the body ends mid-frame. Not
    thread-safe: one per request."""

    def __init__(self, chain: ChunkChain | None, trailers: bool, limit: int | None) -> None:
        self._chain = chain
        self._trailers_allowed = trailers
        self._limit = limit
        self._state = _State.SIZE
        self._line = bytearray()
        self._left = 0
        self._decoded = 0
        self._chunk_signature = ""
        self._chunk_hash: hashlib._Hash | None = None
        self._trailer_bytes = 0
        self._trailer_signature: str | None = None
        self.trailers: list[tuple[str, str]] = []
        """The trailing headers received, names in lower case, in order."""

    def feed(self, data: bytes) -> bytes:
        """The payload bytes in ``data`` (which may end anywhere in a frame)."""
        view = memoryview(data)
        pieces: list[memoryview] = []
        pos, end = 0, len(data)
        while pos < end:
            if self._state is _State.DONE:
                raise invalid_argument("Data follows the end of the aws-chunked body.")
            if self._state is _State.DATA:
                take = min(self._left, end - pos)
                piece = view[pos : pos + take]
                if self._chunk_hash is not None:
                    self._chunk_hash.update(piece)
                pieces.append(piece)
                pos += take
                self._left -= take
                if not self._left:
                    self._state = _State.DATA_END
                continue
            line, pos = self._read_line(data, pos, end)
            if line is not None:
                self._on_line(line)
        if len(pieces) == 1 and len(pieces[0]) == end:
            return data  # the whole input was chunk data: no copy
        return b"".join(pieces)

    def finish(self) -> None:
        """End of body: the frames must be complete (a missing last empty line is forgiven, as
        every byte that counts has arrived by then)."""
        if self._state is _State.TRAILER and not self._line:
            self._end_trailer()
        if self._state is not _State.DONE:
            raise incomplete_body(f"The aws-chunked body ended in a {self._state.value}.")

    def _read_line(self, data: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
        newline = data.find(b"\n", pos, end)
        stop = end if newline < 0 else newline
        self._line += data[pos:stop]
        if len(self._line) > MAX_LINE:
            raise invalid_argument(f"An aws-chunked {self._state.value} line is too long.")
        if newline < 0:
            return None, end
        line = bytes(self._line).removesuffix(b"\r")
        self._line.clear()
        return line, newline + 1

    def _on_line(self, line: bytes) -> None:
        if self._state is _State.SIZE:
            self._start_chunk(line)
        elif self._state is _State.DATA_END:
            if line:
                raise invalid_argument("Chunk data is longer than its declared size.")
            self._end_chunk()
            self._state = _State.SIZE
        else:
            self._on_trailer_line(line)

    def _start_chunk(self, line: bytes) -> None:
        size_text, _, extension = line.partition(b";")
        if not _SIZE.fullmatch(size_text.strip()):
            raise invalid_argument("An aws-chunked chunk header has no valid size.")
        size = int(size_text, 16)
        if self._chain is not None:
            self._chunk_signature = _chunk_signature(extension.strip())
        self._decoded += size
        if self._limit is not None and self._decoded > self._limit:
            raise invalid_argument("The body is longer than x-amz-decoded-content-length.")
        if size:
            self._chunk_hash = hashlib.sha256() if self._chain is not None else None
            self._left = size
            self._state = _State.DATA
            return
        if self._chain is not None:
            self._chain.check_chunk(self._chunk_signature, sigv4.EMPTY_SHA256)
        self._state = _State.TRAILER

    def _end_chunk(self) -> None:
        if self._chain is not None and self._chunk_hash is not None:
            self._chain.check_chunk(self._chunk_signature, self._chunk_hash.hexdigest())
        self._chunk_hash = None

    def _on_trailer_line(self, line: bytes) -> None:
        if not line:
            self._end_trailer()
            return
        self._trailer_bytes += len(line)
        if self._trailer_bytes > MAX_TRAILER:
            raise invalid_argument("The aws-chunked trailer is too long.")
        name_bytes, colon, value_bytes = line.partition(b":")
        name = name_bytes.strip().lower().decode("latin-1")
        value = value_bytes.strip().decode("latin-1")
        if not colon or not name or self._trailer_signature is not None:
            raise invalid_argument("Malformed aws-chunked trailer.")
        if not self._trailers_allowed:
            raise invalid_argument("This body's x-amz-content-sha256 allows no trailer.")
        if name == _TRAILER_SIGNATURE and self._chain is not None:
            self._trailer_signature = value
        else:
            self.trailers.append((name, value))

    def _end_trailer(self) -> None:
        if self._chain is not None and self._trailers_allowed:
            if self._trailer_signature is None:
                raise incomplete_body("The body ended without its x-amz-trailer-signature.")
            if not sigv4.SIGNATURE.fullmatch(self._trailer_signature):
                raise signature_mismatch("The trailer signature is malformed.")
            canonical = "".join(f"{name}:{value}\n" for name, value in sorted(self.trailers))
            self._chain.check_trailer(self._trailer_signature, canonical)
        self._state = _State.DONE


def _chunk_signature(extension: bytes) -> str:
    if not extension.startswith(_SIGNATURE_PREFIX):
        raise invalid_argument("A chunk of a signed aws-chunked body has no chunk-signature.")
    signature = extension[len(_SIGNATURE_PREFIX) :].decode("latin-1")
    if not sigv4.SIGNATURE.fullmatch(signature):
        raise signature_mismatch("A chunk signature is malformed.")
    return signature
