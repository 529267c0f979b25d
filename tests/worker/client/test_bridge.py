"""The sync bridge over an ASGI app answers an app failure as a server would: before the answer
started, a dropped call; after, the status and headers, then a cut body."""

from typing import Any

import httpx
import pytest

from worker.client.bridge import SyncBridge


def app_failing(after_start: bool) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if after_start:
            headers = [(b"content-length", b"10"), (b"x-dora-version", b"v1")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"abc", "more_body": True})
        raise RuntimeError("the file changed")

    return app


def answer(app: Any) -> httpx.Response:
    """The app's answer to a GET through the bridge, its body not read yet."""
    client = httpx.Client(transport=SyncBridge(httpx.ASGITransport(app=app)))
    return client.send(client.build_request("GET", "http://worker/v1/read"), stream=True)


def test_a_failure_after_the_answer_started_keeps_the_headers_and_cuts_the_body() -> None:
    response = answer(app_failing(True))
    assert (response.status_code, response.headers["X-Dora-Version"]) == (200, "v1")
    with pytest.raises(httpx.RemoteProtocolError, match="the file changed"):
        response.read()


def test_a_failure_before_the_answer_is_a_dropped_call() -> None:
    with pytest.raises(httpx.RemoteProtocolError, match="before answering"):
        answer(app_failing(False))


def test_a_body_shorter_than_its_content_length_is_cut() -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = [(b"content-length", b"10")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"abc"})

    response = answer(app)
    with pytest.raises(httpx.RemoteProtocolError, match="3 of 10 bytes"):
        response.read()
