"""How a client tells a worker how long it will wait for an answer: the ``X-Dora-Timeout-Ms``
header, the time left in whole milliseconds when the request is sent (as gRPC's
``grpc-timeout``). The worker turns it into the request's :class:`ufs.deadline.Deadline`, which
bounds the UFS calls the request makes, their retries included, so a worker stops working for
a client that has stopped waiting.

The dora client sends its read timeout less a margin (:func:`header_value`): a worker that
runs out of the request's time answers 504 before the client gives up on it, so the client
sees why, instead of a read timeout that marks a healthy worker down.

This module is shared by the client and the worker's surfaces; it imports no server code.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from worker.common.errors import InvalidRequest

if TYPE_CHECKING:
    from ufs.deadline import Deadline

TIMEOUT_HEADER = "X-Dora-Timeout-Ms"

MAX_DIGITS = 8
"""At most 8 digits, as in ``grpc-timeout``: up to 27 hours, more than any caller waits; a
longer value is a mistake (seconds or microseconds sent as milliseconds), not a wish."""

MAX_MARGIN_S = 1.0
"""At most this much of a client's timeout is kept back for the worker's answer to reach it."""


def request_deadline(
    value: str | None, clock: Callable[[], float] = time.monotonic
) -> Deadline | None:
    """The deadline an ``X-Dora-Timeout-Ms`` header's ``value`` gives a request arriving now;
    None without the header (the request has no deadline of its own: each UFS call still has
    ``dora.ufs.call.deadline``). It counts from now: a surface calls this when the request's
    work starts, after spooling a body (the client's read timeout starts once it has sent
    it). Zero is a deadline already spent: any UFS call the request needs fails at once
    (504), an answer from the cache does not. No worker maximum applies: the request's
    deadline only ever shortens a UFS call's own, so a long one is as good as none.

    Raises InvalidRequest (400) naming the header for anything but 1 to 8 ASCII digits."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        raise InvalidRequest(f"{TIMEOUT_HEADER} is empty: give the milliseconds left, e.g. 30000")
    if text.startswith("-") and text[1:].isascii() and text[1:].isdigit():
        raise InvalidRequest(f"{TIMEOUT_HEADER}: {text} is negative: give the milliseconds left")
    if not (text.isascii() and text.isdigit()):
        raise InvalidRequest(
            f"{TIMEOUT_HEADER}: {text[:20]!r} is not a whole number of milliseconds"
        )
    if len(text) > MAX_DIGITS:
        raise InvalidRequest(
            f"{TIMEOUT_HEADER}: {text[:20]} has more than {MAX_DIGITS} digits "
            f"(at most {10**MAX_DIGITS - 1} ms)"
        )
    # Imported here: the client imports this module for the header alone, and the deadline
    # module (threads, queues) is a worker's.
    from ufs.deadline import Deadline

    return Deadline(int(text) / 1000, clock)


def header_value(timeout_s: float) -> str:
    """The ``X-Dora-Timeout-Ms`` a client that waits ``timeout_s`` for an answer sends: its
    timeout less a tenth of it (at most :data:`MAX_MARGIN_S`), the time the worker's answer
    needs to reach the client, and at most :data:`MAX_DIGITS` digits."""
    margin = min(timeout_s / 10, MAX_MARGIN_S)
    return str(min(round((timeout_s - margin) * 1000), 10**MAX_DIGITS - 1))
