"""Request bodies of writes: spooled whole before the UFS sees a byte, so a client that stops
mid-upload leaves nothing behind, and refused past the configured size."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import IO

from starlette.requests import Request

from worker.errors import PayloadTooLarge

SPOOL_IN_MEMORY = 16 << 20
COPY_CHUNK = 1 << 20


async def spool_body(request: Request, limit: int) -> IO[bytes]:
    """The request body in a spooled temp file (memory, then disk), refused past ``limit``.
    The caller closes it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"body of {declared} bytes exceeds the limit of {limit} bytes")
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115 — caller closes
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            spool.close()
            raise PayloadTooLarge(f"body exceeds the limit of {limit} bytes")
        spool.write(chunk)
    spool.seek(0)
    return spool


def file_chunks(spool: IO[bytes]) -> Iterator[bytes]:
    """A spooled file's bytes from its current position, in chunks."""
    while chunk := spool.read(COPY_CHUNK):
        yield chunk
