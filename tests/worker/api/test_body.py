"""Read bodies pulled in batches (PagedBody): every byte in order, errors cut the body short
after what came before them, and pulling stops when the client goes away."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.requests import Request

from worker.api.body import BATCH_BYTES, RAMP_SLICE, Pace, PagedBody, declared_length, pull
from worker.common.errors import InvalidRequest

MB = 1 << 20


def pages(count: int, fail_at: int | None = None) -> Iterator[bytes]:
    for i in range(count):
        if i == fail_at:
            raise OSError("the file changed")
        yield bytes([i]) * MB


def run(
    body: PagedBody,
    disconnect: asyncio.Event | None = None,
    sent: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    sent = [] if sent is None else sent

    async def receive() -> dict[str, Any]:
        await (disconnect or asyncio.Event()).wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if disconnect is not None and len(sent) == 3:
            disconnect.set()
        await asyncio.sleep(0)

    async def main() -> None:
        await body({"type": "http"}, receive, send)

    asyncio.run(main())
    return sent


def body_of(sent: list[dict[str, Any]]) -> bytes:
    assert sent[0]["type"] == "http.response.start"
    return b"".join(m["body"] for m in sent[1:])


def test_a_read_that_fits_one_batch_is_answered_from_it() -> None:
    chunks = pages(2)
    first = pull(chunks)
    assert first.done
    sent = run(PagedBody(first, chunks, 200, {"Content-Length": str(2 * MB)}))
    assert body_of(sent) == bytes([0]) * MB + bytes([1]) * MB
    assert [m["more_body"] for m in sent[1:]] == [True, False]


def test_a_long_read_streams_every_page_in_order_over_several_batches() -> None:
    count = 3 * BATCH_BYTES // MB + 1
    chunks = pages(count)
    first = pull(chunks)
    assert not first.done
    sent = run(PagedBody(first, chunks, 200, {}))
    assert body_of(sent) == b"".join(bytes([i]) * MB for i in range(count))
    assert sent[-1]["more_body"] is False
    assert all(m["more_body"] for m in sent[1:-1])


@pytest.mark.parametrize("fail_at", [1, BATCH_BYTES // MB, BATCH_BYTES // MB + 1])
def test_an_error_mid_read_cuts_the_body_after_the_pages_before_it(fail_at: int) -> None:
    chunks = pages(3 * BATCH_BYTES // MB, fail_at)
    first = pull(chunks)
    sent: list[dict[str, Any]] = []
    with pytest.raises(OSError, match="changed"):
        run(PagedBody(first, chunks, 200, {}), sent=sent)
    assert body_of(sent) == b"".join(bytes([i]) * MB for i in range(fail_at))
    assert all(m["more_body"] for m in sent[1:])  # never complete: the connection closes


def test_an_error_before_the_first_chunk_is_raised_by_pull() -> None:
    with pytest.raises(OSError, match="changed"):
        pull(pages(3, fail_at=0))


def test_pulling_stops_when_the_client_goes_away() -> None:
    pulled = []

    def counted() -> Iterator[bytes]:
        for chunk in pages(10 * BATCH_BYTES // MB):
            pulled.append(1)
            yield chunk

    chunks = counted()
    run(PagedBody(pull(chunks), chunks, 200, {}), asyncio.Event())
    assert len(pulled) < 10 * BATCH_BYTES // MB


def test_a_ramped_body_starts_in_slices_and_ends_in_whole_chunks() -> None:
    count = 4 * BATCH_BYTES // MB
    chunks = pages(count)
    pace = Pace.ramped()
    sent = run(PagedBody(pull(chunks, pace.budget), chunks, 200, {}, pace))
    sizes = [len(m["body"]) for m in sent[1:]]
    assert body_of(sent) == b"".join(bytes([i]) * MB for i in range(count))
    assert sizes[: MB // RAMP_SLICE] == [RAMP_SLICE] * (MB // RAMP_SLICE)
    assert sizes[-BATCH_BYTES // MB :] == [MB] * (BATCH_BYTES // MB)


def test_a_ramped_body_pulls_little_beyond_what_a_client_that_hangs_up_took() -> None:
    pulled = []

    def counted() -> Iterator[bytes]:
        for chunk in pages(64):
            pulled.append(1)
            yield chunk

    chunks = counted()
    pace = Pace.ramped()
    run(PagedBody(pull(chunks, pace.budget), chunks, 200, {}, pace), asyncio.Event())
    # The first page, and the next batch (two pages) already being pulled when the client
    # hung up: an unramped body would have pulled two batches of four.
    assert len(pulled) <= 3


@pytest.mark.parametrize(("given", "declared"), [([], None), ([(b"content-length", b"12")], 12)])
def test_the_declared_length_of_a_body(given: list[tuple[bytes, bytes]], declared: int) -> None:
    assert declared_length(Request({"type": "http", "headers": given})) == declared


@pytest.mark.parametrize("given", [b"", b"1e3", b"-1", b"99999999999999999999"])
def test_a_malformed_content_length_is_refused_naming_the_header(given: bytes) -> None:
    request = Request({"type": "http", "headers": [(b"content-length", given)]})
    with pytest.raises(InvalidRequest, match=f"^header Content-Length='{given.decode()}': "):
        declared_length(request)
