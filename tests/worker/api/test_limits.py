"""Request bodies past the upload cap are refused 503 in the shape of the surface, before a
byte is read; a body that stalls while a route reads it is answered 408 and the connection
closed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import httpx

from worker.api.app import create_app
from worker.api.limits import has_body
from worker.service import WorkerService


async def stalled_upload(app: object, path: str, sent: list[dict[str, object]]) -> None:
    """A PUT declaring 10 bytes whose body never comes; what the app sends goes to ``sent``."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "PUT",
        "scheme": "http",
        "path": "/v1/write",
        "raw_path": b"/v1/write",
        "root_path": "",
        "query_string": f"path=file://{path}".encode(),
        "server": ("w", 80),
        "client": ("c", 1),
        "headers": [(b"host", b"w"), (b"content-length", b"10")],
    }
    forever = asyncio.Event()

    async def receive() -> dict[str, object]:
        await forever.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    await app(scope, receive, send)  # type: ignore[operator]


def test_the_cap_and_the_idle_deadline(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    service = make_service(
        "dora.worker.http.max.concurrent.uploads=1", "dora.worker.http.body.idle.timeout=1s"
    )
    app = create_app(service)

    async def scenario() -> tuple[list[dict[str, object]], httpx.Response, httpx.Response]:
        sent: list[dict[str, object]] = []
        first = asyncio.ensure_future(stalled_upload(app, f"{data_dir}/a", sent))
        await asyncio.sleep(0.1)  # the first upload holds the one place
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://w") as client:
            rest = await client.put(
                "/v1/write", params={"path": f"file://{data_dir}/b"}, content=b"data"
            )
            hdfs = await client.put(
                f"/webhdfs/v1/file{data_dir}/c",
                params={"op": "CREATE", "data": "true"},
                content=b"data",
            )
        await first
        return sent, rest, hdfs

    sent, rest, hdfs = asyncio.run(scenario())
    assert (rest.status_code, rest.json()["error"], rest.headers["Retry-After"]) == (
        503,
        "WorkerBusy",
        "1",
    )
    assert "dora.worker.http.max.concurrent.uploads" in rest.json()["message"]
    assert hdfs.status_code == 503
    assert hdfs.json()["RemoteException"]["javaClassName"] == "java.io.IOException"
    start = sent[0]
    assert start["status"] == 408
    assert (b"connection", b"close") in start["headers"]  # type: ignore[operator]
    assert b"RequestTimeout" in sent[1]["body"]  # type: ignore[operator]
    assert not (data_dir / "a").exists() and not (data_dir / "b").exists()
    metrics = service.metrics.render().decode()
    assert "dora_http_uploads_refused_total 2.0" in metrics
    assert 'dora_http_idle_timeouts_total{phase="body"} 1.0' in metrics
    assert "dora_http_uploads_in_flight 0.0" in metrics


def test_a_body_is_declared_by_a_length_above_0_or_chunked_encoding() -> None:
    def scope(*headers: tuple[bytes, bytes]) -> dict[str, object]:
        return {"headers": list(headers)}

    assert has_body(scope((b"content-length", b"5")))
    assert has_body(scope((b"transfer-encoding", b"chunked")))
    assert not has_body(scope((b"content-length", b"0")))
    assert not has_body(scope())
