"""The sync driver's HTTP: a kept-alive connection is only ever used by the thread that opened
it, so no pool pass of another thread can close it under a request (encode/httpcore#1110)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler

import httpx

from tests.reliability.test_support import server
from worker.client.drivers import SyncDriver
from worker.client.flow import ClientExchange, Flow


def get(url: str, name: str) -> Flow[httpx.Response]:
    response: httpx.Response = yield ClientExchange("GET", url, headers={"X-Thread": name})
    return response


def test_a_kept_alive_connection_is_never_handed_to_another_thread() -> None:
    driver = SyncDriver(httpx.Client, 1, time.sleep)
    seen: list[tuple[str, int]] = []  # per request: the X-Thread it named, its client port

    def record(request: BaseHTTPRequestHandler) -> None:
        seen.append((request.headers["X-Thread"], request.client_address[1]))

    with server(record) as url:
        for name in ("a", "b", "a"):
            # One after the other: a shared pool would hand the idle connection on.
            thread = threading.Thread(target=lambda n=name: driver.run(get(url, n)))
            thread.start()
            thread.join()
        driver.run(get(url, "main"))
        driver.run(get(url, "main"))
    ports = {name: {port for who, port in seen if who == name} for name in ("a", "b", "main")}
    assert len(seen) == 5
    assert len(ports["main"]) == 1  # kept alive within a thread
    assert not ports["b"] & (ports["a"] | ports["main"])
    assert not ports["a"] & ports["main"]
