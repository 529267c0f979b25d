"""A worker of two processes (``dora.worker.processes=2``): the primary and one front on one
port. Each process is called on purpose on its private socket, and the public port too."""

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import wait_for
from tests.integration.worker.procs_support import MultiWorker, alive, on_socket

pytestmark = pytest.mark.integration
TOKEN = "procs-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    (path / "a.bin").write_bytes(os.urandom(3 << 20))
    return path


@pytest.fixture
def worker(tmp_path: Path, data: Path) -> Iterator[MultiWorker]:
    process = MultiWorker(
        tmp_path, 2, f"dora.worker.ufs.roots=file://{data}", f"dora.worker.security.token={TOKEN}"
    )
    yield process
    if process.process.poll() is None:
        process.stop()


def test_each_process_serves_status_reads_and_writes(worker: MultiWorker, data: Path) -> None:
    uri, new = f"file://{data}/a.bin", f"file://{data}/new.bin"
    whole = (data / "a.bin").read_bytes()
    primary, front = (on_socket(path, TOKEN) for path in worker.sockets())
    for process in (front, primary, front):  # the front's second status is its near-cache's
        status = process.get("/v1/status", params={"path": uri})
        assert status.status_code == 200 and status.json()["size"] == len(whole)
        part = process.get("/v1/read", params={"path": uri, "offset": 1000, "length": 65536})
        assert part.content == whole[1000:66536]
        assert part.headers["X-Dora-Version"] == status.json()["version"]
    assert front.get("/v1/read", params={"path": uri}).content == whole
    # A write through the front is passed to the primary; every process sees it at once.
    written = front.put("/v1/write", params={"path": new}, content=b"x" * 100)
    assert written.status_code == 201
    assert len(written.headers.get_list("date")) == 1  # the front's, not the primary's too
    for process in (primary, front):
        assert process.get("/v1/status", params={"path": new}).json()["size"] == 100
    primary.put("/v1/write", params={"path": new}, content=b"y" * 7)
    assert front.get("/v1/status", params={"path": new}).json()["size"] == 7
    assert front.get("/v1/read", params={"path": new}).content == b"y" * 7
    # Errors are the primary's own answers, whichever process gets the call.
    for process in (primary, front):
        missing = process.get("/v1/status", params={"path": f"file://{data}/nope"})
        assert missing.status_code == 404 and missing.json()["error"] == "NotFound"
        past = process.get("/v1/read", params={"path": uri, "offset": len(whole) + 1})
        assert past.status_code == 416
    # The public port: whichever process the kernel picks answers the same.
    for _ in range(10):
        answer = worker.http.get("/v1/read", params={"path": new}, headers=BEARER)
        assert answer.content == b"y" * 7
    # A call without the token is refused by every process, in the primary's words.
    for socket in worker.sockets():
        refused = on_socket(socket).get("/v1/status", params={"path": uri})
        assert refused.status_code == 401 and refused.json()["error"] == "Unauthorized"
    # The primary's metrics count what the front served too.
    metrics = worker.http.get("/metrics", headers=BEARER).text
    assert 'dora_front_near_cache_hits_total{kind="status"}' in metrics
    assert 'dora_bytes_served_total{source="front"}' in metrics


def test_a_killed_front_is_restarted_and_a_graceful_stop_ends_all(
    worker: MultiWorker, data: Path
) -> None:
    ((socket, pid),) = worker.fronts().items()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: set(worker.fronts().values()) - {pid}, what="the front was not restarted")
    wait_for(lambda: os.path.exists(socket), what="the new front does not listen")
    status = on_socket(socket, TOKEN).get("/v1/status", params={"path": f"file://{data}/a.bin"})
    assert status.status_code == 200
    (restarted,) = worker.fronts().values()
    assert worker.stop() == 0
    assert not alive(restarted) and not worker.state.exists()
    assert not os.path.exists(socket)


def test_the_fronts_stop_when_the_primary_is_killed(worker: MultiWorker) -> None:
    (front,) = worker.fronts().values()
    private = Path(worker.primary_socket()).parent
    worker.process.kill()
    worker.process.wait()
    wait_for(lambda: not alive(front), what="the front outlived its primary")
    assert not private.exists()  # the front removed what the primary could not


def test_a_graceful_stop_lets_a_fronts_read_in_flight_finish(
    worker: MultiWorker, data: Path
) -> None:
    content = os.urandom(32 << 20)
    (data / "big.bin").write_bytes(content)
    uri = f"file://{data}/big.bin"
    (front,) = worker.fronts()
    with on_socket(front, TOKEN).stream("GET", "/v1/read", params={"path": uri}) as answer:
        chunks = answer.iter_raw(1 << 16)
        received = [next(chunks)]
        # The front drains this read while the primary, stopping, still fills its pages.
        worker.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        received += list(chunks)
    assert b"".join(received) == content
    assert worker.process.wait(timeout=90) == 0
