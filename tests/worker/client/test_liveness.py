"""The asynchronous wait for an answer (``answer_or_unresponsive``) against real loopback
listeners: a busy worker that answers its probe is waited for, a worker that answers nothing is
given up on after one unanswered probe, and an answer that arrives during a probe is taken."""

import asyncio
import socket
from collections.abc import Iterator

import pytest

from worker.client.liveness import Unresponsive, answer_or_unresponsive

PROBE_S = 0.5


@pytest.fixture
def silent() -> Iterator[str]:
    """A listener that never accepts: the kernel takes connections, nothing ever answers
    (a stopped worker)."""
    with socket.create_server(("127.0.0.1", 0), backlog=8) as listener:
        yield f"127.0.0.1:{listener.getsockname()[1]}"


async def _healthy() -> tuple[asyncio.Server, str]:
    """A listener that answers every request at once (a busy worker's /healthz)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, f"127.0.0.1:{server.sockets[0].getsockname()[1]}"


def test_a_busy_worker_answering_its_probes_is_waited_for() -> None:
    async def scenario() -> str:
        server, netloc = await _healthy()
        async with server:
            # Past the first probe and two more rounds: each probe is answered.
            answer = asyncio.sleep(3 * PROBE_S, result="the answer")
            return await answer_or_unresponsive(answer, netloc, PROBE_S)

    assert asyncio.run(scenario()) == "the answer"


def test_a_worker_answering_no_probe_is_unresponsive(silent: str) -> None:
    async def scenario() -> None:
        never: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        await answer_or_unresponsive(never, silent, PROBE_S)

    with pytest.raises(Unresponsive, match=silent):
        asyncio.run(scenario())


def test_an_answer_arriving_while_the_probe_waits_is_taken(silent: str) -> None:
    async def scenario() -> str:
        # The answer begins after the first probe went out and before it gives up.
        answer = asyncio.sleep(PROBE_S, result="late but there")
        return await answer_or_unresponsive(answer, silent, PROBE_S)

    assert asyncio.run(scenario()) == "late but there"
