"""Routing, failover, retries and error translation of the HTTP layer, against scripted workers
(``httpx.MockTransport``)."""

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from tests.worker.client.conftest import client_config
from worker.client import errors
from worker.client.http import (
    DOWN_PERIOD_S,
    MAX_RETRY_WAIT_S,
    Answer,
    Call,
    NoWorkerReachable,
    WorkerClient,
)
from worker.client.options import ClientOptions
from worker.common.errors import DeadlineExceeded

WORKERS = "w1:1,w2:1,w3:1"
KEY = "s3://bucket/a.parquet"
Script = Callable[[httpx.Request], httpx.Response]
Send = Callable[[WorkerClient, Call], Answer]


@pytest.fixture(params=["sync", "async"])
def send(request: pytest.FixtureRequest) -> Send:
    """Sends a call through the client's synchronous or asynchronous driver: the policy is one
    flow, and must hold under both."""
    if request.param == "sync":
        return lambda client, call: client.send(call)
    return lambda client, call: asyncio.run(client.aio.run(client.call(call)))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def make_client(script: Script, *defines: str) -> tuple[WorkerClient, Clock, list[str]]:
    """A client over three scripted workers; the list records the host of every request."""
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.url.host}:{request.url.port}")
        return script(request)

    clock = Clock()
    options = ClientOptions.resolve(client_config(*defines, workers=WORKERS))
    client = WorkerClient(
        options,
        httpx.MockTransport(handler),
        clock=clock,
        sleep=clock.sleep,
        async_sleep=clock.async_sleep,
    )
    return client, clock, seen


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"host": request.url.host})


def refuse(*hosts: str) -> Script:
    def script(request: httpx.Request) -> httpx.Response:
        if request.url.host in hosts:
            raise httpx.ConnectError("connection refused", request=request)
        return ok(request)

    return script


def status_call(key: str = KEY) -> Call:
    return Call("GET", "/v1/status", key, f"status {key}", {"path": key})


def write_call(key: str = KEY) -> Call:
    return Call("PUT", "/v1/write", key, f"write {key}", {"path": key}, False, lambda: b"x")


def test_the_owner_serves_and_nothing_is_counted(send: Send) -> None:
    client, _, seen = make_client(ok)
    answer = send(client, status_call())
    assert answer.worker == client.ring.owner(KEY)
    assert seen == [answer.worker]
    assert client.counters.snapshot().failovers == 0


def test_unreachable_owner_fails_over_along_the_ring_and_logs_once(
    send: Send,
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe, _, _ = make_client(ok)
    owner, second, _ = probe.ring.owners(KEY)
    client, clock, seen = make_client(refuse(owner.split(":")[0]))
    with caplog.at_level(logging.WARNING, logger="worker.client.http"):
        first = send(client, status_call())
        clock.now += DOWN_PERIOD_S + 1
        send(client, status_call())
    assert first.worker == second
    assert seen == [owner, second, owner, second]
    stats = client.counters.snapshot()
    assert stats.failovers == 2
    assert stats.unreachable == {owner: 2}
    warnings = [r.getMessage() for r in caplog.records if owner in r.getMessage()]
    assert len(warnings) == 1 and "unreachable" in warnings[0]


def test_a_failed_worker_is_tried_last_until_its_down_period_ends(
    send: Send,
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe, _, _ = make_client(ok)
    owner, second, _ = probe.ring.owners(KEY)
    down = {owner.split(":")[0]}

    def script(request: httpx.Request) -> httpx.Response:
        if request.url.host in down:
            raise httpx.ConnectError("refused", request=request)
        return ok(request)

    client, clock, seen = make_client(script)
    send(client, status_call())
    seen.clear()
    send(client, status_call())
    assert seen == [second]  # no new connect attempt to the failed owner
    down.clear()
    clock.now += DOWN_PERIOD_S + 1
    seen.clear()
    with caplog.at_level(logging.WARNING, logger="worker.client.http"):
        assert send(client, status_call()).worker == owner
    assert seen == [owner]
    assert any("reachable again" in r.getMessage() for r in caplog.records)


def test_every_worker_unreachable_raises_no_worker_reachable(send: Send) -> None:
    client, _, seen = make_client(refuse("w1", "w2", "w3"))
    with pytest.raises(NoWorkerReachable, match="no worker reachable") as info:
        send(client, status_call())
    assert isinstance(info.value, ConnectionError)
    assert sorted(seen) == ["w1:1", "w2:1", "w3:1"]


def test_a_mutation_also_fails_over_when_the_owner_refuses_connections(send: Send) -> None:
    probe, _, _ = make_client(ok)
    owner, second, _ = probe.ring.owners(KEY)
    client, _, _ = make_client(refuse(owner.split(":")[0]))
    assert send(client, write_call()).worker == second


def dropping(hosts: set[str]) -> Script:
    def script(request: httpx.Request) -> httpx.Response:
        if request.url.host in hosts:
            raise httpx.RemoteProtocolError("peer closed connection", request=request)
        return ok(request)

    return script


def test_a_dropped_read_is_asked_again_then_fails_over(send: Send) -> None:
    probe, _, _ = make_client(ok)
    owner, second, _ = probe.ring.owners(KEY)
    client, _, seen = make_client(dropping({owner.split(":")[0]}))
    assert send(client, status_call()).worker == second
    assert seen == [owner, owner, second]


def test_a_dropped_mutation_is_not_repeated(send: Send) -> None:
    probe, _, _ = make_client(ok)
    owner = probe.ring.owner(KEY)
    client, _, seen = make_client(dropping({owner.split(":")[0]}))
    with pytest.raises(errors.WorkerUnavailable, match="may or may not have been applied"):
        send(client, write_call())
    assert seen == [owner]


class CutBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body that stops after a few bytes, as when the worker cuts the connection."""

    def __iter__(self) -> Iterator[bytes]:
        yield b"old"
        raise httpx.RemoteProtocolError("peer closed connection without sending complete body")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self:
            yield chunk


def read_call(key: str = KEY) -> Call:
    return Call("GET", "/v1/read", key, f"read {key}", {"path": key}, pin_on_cut=True)


def cut_then(second: Script) -> Script:
    """Cuts the first read after headers naming version v1; ``second`` answers the rest."""
    asked: list[httpx.Request] = []

    def script(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        if len(asked) == 1:
            headers = {"Content-Length": "1000", "X-Dora-Version": "v1"}
            return httpx.Response(200, headers=headers, stream=CutBody())
        return second(request)

    return script


def pinned_to_v1(answer: Script) -> Script:
    def script(request: httpx.Request) -> httpx.Response:
        assert request.url.params.get("version") == "v1", "the re-ask must be pinned"
        return answer(request)

    return script


def version_mismatch(request: httpx.Request) -> httpx.Response:
    return httpx.Response(412, json={"error": "VersionMismatch", "message": "changed"})


def test_a_read_cut_after_the_headers_is_asked_again_pinned_and_412_is_a_version_mismatch(
    send: Send,
) -> None:
    client, _, seen = make_client(cut_then(pinned_to_v1(version_mismatch)))
    with pytest.raises(errors.VersionMismatch, match="changed"):
        send(client, read_call())
    owner = client.ring.owner(KEY)
    assert seen == [owner, owner]  # no failover: every worker would see the same change
    stats = client.counters.snapshot()
    assert (stats.unreachable, stats.failovers) == ({}, 0)
    assert client.candidates(KEY)[0] == owner  # not marked down


def test_a_read_cut_then_answered_in_full_was_a_transient_drop(send: Send) -> None:
    client, _, seen = make_client(cut_then(pinned_to_v1(lambda r: httpx.Response(200, text="x"))))
    answer = send(client, read_call())
    assert answer.response.content == b"x"
    assert seen == [client.ring.owner(KEY)] * 2
    assert client.counters.snapshot().unreachable == {}


def test_a_read_cut_by_a_worker_that_then_refuses_connections_fails_over(send: Send) -> None:
    probe, _, _ = make_client(ok)
    owner, second, _ = probe.ring.owners(KEY)
    client, _, seen = make_client(cut_then(refuse(owner.split(":")[0])))
    assert send(client, read_call()).worker == second
    assert seen == [owner, owner, second]
    assert client.counters.snapshot().unreachable == {owner: 1}


def test_a_read_cut_twice_marks_the_worker_down_and_fails_over(send: Send) -> None:
    probe, _, _ = make_client(ok)
    owner, second, _ = probe.ring.owners(KEY)

    def second_ask(request: httpx.Request) -> httpx.Response:
        if request.url.host == owner.split(":")[0]:
            return httpx.Response(200, headers={"Content-Length": "9"}, stream=CutBody())
        return ok(request)

    client, _, seen = make_client(cut_then(second_ask))
    assert send(client, read_call()).worker == second
    assert seen == [owner, owner, second]
    assert client.counters.snapshot().unreachable == {owner: 1}


def test_a_status_cut_after_the_headers_is_a_drop(send: Send) -> None:
    probe, _, _ = make_client(ok)
    owner, second, _ = probe.ring.owners(KEY)

    def script(request: httpx.Request) -> httpx.Response:
        if request.url.host == owner.split(":")[0]:
            headers = {"Content-Length": "50", "X-Dora-Version": "v1"}
            return httpx.Response(200, headers=headers, stream=CutBody())
        return ok(request)

    client, _, seen = make_client(script)
    assert send(client, status_call()).worker == second
    assert seen == [owner, owner, second]


def unavailable_then_ok(failures: int, retry_after: str = "5") -> Script:
    left = [failures]

    def script(request: httpx.Request) -> httpx.Response:
        if left[0] > 0:
            left[0] -= 1
            body = {"error": "UfsUnavailable", "message": "s3 down"}
            return httpx.Response(503, json=body, headers={"Retry-After": retry_after})
        return ok(request)

    return script


def test_503_is_retried_on_the_same_worker_with_a_capped_wait(send: Send) -> None:
    client, clock, seen = make_client(unavailable_then_ok(2))
    answer = send(client, status_call())
    assert seen == [answer.worker] * 3
    assert clock.slept == [MAX_RETRY_WAIT_S, MAX_RETRY_WAIT_S]
    assert client.counters.snapshot().retries == 2


def test_503_retries_are_bounded(send: Send) -> None:
    client, _, seen = make_client(
        unavailable_then_ok(10, "0"), "dora.user.client.retry.max.attempts=2"
    )
    with pytest.raises(errors.UfsUnavailable, match="s3 down") as info:
        send(client, status_call())
    assert isinstance(info.value, ConnectionError)
    assert info.value.retry_after == 0
    assert len(seen) == 2


def test_every_request_tells_the_worker_how_long_the_client_waits(send: Send) -> None:
    """``X-Dora-Timeout-Ms``: the client's read timeout (``dora.user.client.timeout``) less
    the answer's way back, on every attempt (a 503's retry too) and every kind of call."""
    sent: list[str | None] = []
    unavailable_once = unavailable_then_ok(1)

    def script(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("X-Dora-Timeout-Ms"))
        return unavailable_once(request)

    client, _, _ = make_client(script, "dora.user.client.timeout=5s")
    send(client, status_call())
    send(client, write_call())
    assert sent == ["4500", "4500", "4500"]


def test_503_on_a_mutation_is_not_retried(send: Send) -> None:
    client, _, seen = make_client(unavailable_then_ok(1))
    with pytest.raises(errors.UfsUnavailable):
        send(client, write_call())
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("status", "code", "kind", "builtin"),
    [
        (400, "InvalidPath", errors.InvalidRequest, ValueError),
        (400, "NotADirectory", errors.NotADirectory, NotADirectoryError),
        (400, "IsADirectory", errors.IsADirectory, IsADirectoryError),
        (401, "Unauthorized", errors.AccessDenied, PermissionError),
        (403, "OutsideMountRoots", errors.AccessDenied, PermissionError),
        (404, "NotFound", errors.NotFound, FileNotFoundError),
        (409, "AlreadyExists", errors.AlreadyExists, FileExistsError),
        (412, "VersionMismatch", errors.VersionMismatch, OSError),
        (413, "PayloadTooLarge", errors.PayloadTooLarge, OSError),
        (416, "RangeNotSatisfiable", errors.RangeNotSatisfiable, ValueError),
        (502, "UfsError", errors.UfsFailure, OSError),
        # The request's deadline ran out on the worker: not retried, no other worker asked.
        (504, "DeadlineExceeded", DeadlineExceeded, TimeoutError),
        (500, "InternalError", errors.WorkerFailure, OSError),
    ],
)
def test_error_answers_become_python_errors(
    send: Send, status: int, code: str, kind: type[Exception], builtin: type[Exception]
) -> None:
    def script(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": code, "message": "the worker says no"})

    client, _, seen = make_client(script)
    with pytest.raises(kind, match="the worker says no") as info:
        send(client, status_call())
    assert isinstance(info.value, builtin)
    assert isinstance(info.value, errors.DoraError)
    assert (info.value.status, info.value.code) == (status, code)
    assert len(seen) == 1  # an answer is final: no failover


def test_an_error_without_a_json_body_maps_by_status(send: Send) -> None:
    def script(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, text="<html>not here</html>")

    client, _, _ = make_client(script)
    with pytest.raises(errors.NotFound, match="not here"):
        send(client, status_call())


def test_token_and_params_are_sent(send: Send) -> None:
    captured: list[httpx.Request] = []

    def script(request: httpx.Request) -> httpx.Response:
        captured.append(request)
        return httpx.Response(200, content=json.dumps({}).encode())

    client, _, _ = make_client(script, "dora.user.client.token=s3cret")
    send(client, status_call())
    assert captured[0].headers["Authorization"] == "Bearer s3cret"
    assert captured[0].url.params["path"] == KEY
