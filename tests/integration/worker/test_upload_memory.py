"""Bodies against a real worker process: uploads that stall mid-body wait on disk, not in the
worker's memory, whatever the surface (REST, WebHDFS CREATE and APPEND), and a body dripped a
byte at a time is cut by the minimum-rate rule (408) with nothing written."""

import os
import select
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration.harness import WorkerProcess
from worker.api.body import SPOOL_BATCH

pytestmark = [pytest.mark.integration, pytest.mark.slow]

UPLOADS = 32  # dora.worker.http.max.concurrent.uploads's default
DECLARED = 16 << 20
SENT = 12 << 20
PER_UPLOAD_BOUND = 1.5 * (1 << 20)
CONSTANT_BOUND = 24 << 20
"""What the worker may grow by besides the uploads (thread stacks of the pool the spool
writes go through, allocator slack)."""


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    (path / "old.bin").write_bytes(b"old")
    return path


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) << 10
    raise AssertionError("no VmRSS")


def spooled(pid: int, spool: Path) -> int:
    """Bytes in the spool files the worker holds open (they have no name: '(deleted)'); each
    is checked to be readable by the worker's user only."""
    total = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
            if target.startswith(str(spool)) and target.endswith("(deleted)"):
                info = fd.stat()
                assert info.st_mode & 0o777 == 0o600
                total += info.st_size
        except FileNotFoundError:
            continue  # closed meanwhile
    return total


def open_upload(address: str, target: str, length: int) -> socket.socket:
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    method = "POST" if "op=APPEND" in target else "PUT"
    head = f"{method} {target} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {length}\r\n\r\n"
    sock.sendall(head.encode())
    return sock


def targets(data: Path) -> Iterator[str]:
    """REST writes, WebHDFS CREATEs and APPENDs (data step), in turn."""
    for n in range(UPLOADS):
        match n % 3:
            case 0:
                yield f"/v1/write?path=file://{data}/rest-{n}"
            case 1:
                yield f"/webhdfs/v1/file{data}/create-{n}?op=CREATE&data=true"
            case _:
                yield f"/webhdfs/v1/file{data}/old.bin?op=APPEND&data=true"


def test_stalled_uploads_cost_little_memory(tmp_path: Path, data: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    worker = WorkerProcess(
        work,
        f"dora.worker.ufs.roots=file://{data}",
        "dora.worker.http.body.idle.timeout=5min",  # the stalls outlast the measurement
        "dora.worker.http.body.min.rate=0",
    )
    pid, spool = worker.process.pid, work / "spool"
    try:
        assert worker.http.get("/healthz").status_code == 200
        before = rss(pid)
        socks = [open_upload(worker.address, t, DECLARED) for t in targets(data)]
        chunk = os.urandom(1 << 20)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda s: [s.sendall(chunk) for _ in range(SENT >> 20)], socks))
        # Until what was sent has reached the worker: on its disk, or (before the fix) in memory.
        wait_for(lambda: spooled(pid, spool) >= UPLOADS * (SENT - SPOOL_BATCH), 30)
        time.sleep(1)  # what the worker read last is in memory by now
        grown = rss(pid) - before
        print(f"RSS grew by {grown / (1 << 20):.1f} MB for {UPLOADS} stalled uploads")
        assert grown < UPLOADS * PER_UPLOAD_BOUND + CONSTANT_BOUND
        assert spooled(pid, spool) >= UPLOADS * (SENT - SPOOL_BATCH)
        assert not list(spool.iterdir())  # nameless while in use
        for sock in socks:
            sock.close()
        # A client that went away leaves nothing behind: no file written, no spool kept.
        wait_for(lambda: spooled(pid, spool) == 0, 30)
        assert spooled(pid, spool) == 0
        assert sorted(p.name for p in data.iterdir()) == ["old.bin"]
        assert (data / "old.bin").read_bytes() == b"old"
    finally:
        assert worker.stop() == 0


def wait_for(condition: Callable[[], bool], seconds: float) -> None:
    """Until ``condition()`` holds or ``seconds`` have passed (the caller asserts after)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)


def whole_answer(sock: socket.socket) -> bytes:
    """The worker's answer, head and body: they may arrive in separate segments, so read until
    the body is as long as its Content-Length says, or the worker closes the connection."""
    sock.settimeout(10)
    answer = b""
    while True:
        head, _, body = answer.partition(b"\r\n\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
             if line.startswith(b"content-length:")),
            None,
        )  # fmt: skip
        if length is not None and len(body) >= length:
            return answer
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return answer
        if not chunk:
            return answer
        answer += chunk


def test_a_dripped_body_is_cut_by_the_minimum_rate(tmp_path: Path, data: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    worker = WorkerProcess(
        work,
        f"dora.worker.ufs.roots=file://{data}",
        "dora.worker.http.body.min.rate=1KB",
        "dora.worker.http.body.min.rate.grace=2s",
    )  # the idle deadline stays at its 30 s: a byte every 0.5 s never meets it
    try:
        sock = open_upload(worker.address, f"/v1/write?path=file://{data}/drip", 1000)
        started = time.monotonic()
        answer = b""
        while time.monotonic() - started < 25:
            readable, _, _ = select.select([sock], [], [], 0.5)
            if readable:
                answer = whole_answer(sock)
                break
            sock.sendall(b"x")
        elapsed = time.monotonic() - started
        sock.close()
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b"dora.worker.http.body.min.rate" in answer
        assert 2 <= elapsed < 15  # the grace, then the rule; the idle deadline is 30 s
        assert not (data / "drip").exists()
        metrics = worker.http.get("/metrics").text
        assert 'dora_http_idle_timeouts_total{phase="body_rate"} 1.0' in metrics
    finally:
        assert worker.stop() == 0


def test_spool_files_a_crash_left_are_removed_at_start(tmp_path: Path, data: Path) -> None:
    spool = tmp_path / "work" / "spool"
    spool.mkdir(parents=True, mode=0o755)
    (spool / "0123abcd.body").write_bytes(b"half a body")
    (spool / "notes.txt").write_bytes(b"not ours")
    worker = WorkerProcess(tmp_path / "work", f"dora.worker.ufs.roots=file://{data}")
    try:
        assert sorted(p.name for p in spool.iterdir()) == ["notes.txt"]
        assert spool.stat().st_mode & 0o777 == 0o700
    finally:
        assert worker.stop() == 0
