"""WebHDFS OPEN over a real HTTP server costs what is read: a client that opens a stream and
hangs up after a little leaves a few pages filled, not the file; a footer read fills the last
page only."""

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.inprocess import serving
from tests.worker.conftest import open_service
from worker.service import WorkerService

pytestmark = pytest.mark.integration
PAGE = 64 * 1024
PAGES = 512  # 32 MB: far more than socket buffers and read-ahead hold


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def served(tmp_path: Path, data_dir: Path) -> Iterator[tuple[WorkerService, int]]:
    page_size = f"dora.worker.page.store.page.size={PAGE}B"
    service = open_service(tmp_path / "work", f"file://{data_dir}", page_size)
    try:
        with serving(service) as port:
            yield service, port
    finally:
        service.close()


def open_stream(port: int, path: str, offset: int) -> socket.socket:
    """A raw connection with a small receive buffer, the OPEN request sent."""
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    client.connect(("127.0.0.1", port))
    target = f"/webhdfs/v1/file{path}?op=OPEN&data=true&offset={offset}"
    client.sendall(f"GET {target} HTTP/1.1\r\nHost: worker\r\n\r\n".encode())
    return client


def settled_bytes(service: WorkerService) -> int:
    """Bytes in the page store once fills have stopped (no change for a second)."""
    last, stable_since = -1, time.monotonic()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        used = service.stats()["page_store_used_bytes"]
        if used != last:
            last, stable_since = used, time.monotonic()
        elif time.monotonic() - stable_since > 1.0:
            return used
        time.sleep(0.05)
    raise AssertionError("the page store kept filling after the client hung up")


def test_a_client_that_hangs_up_stops_the_fills(
    served: tuple[WorkerService, int], data_dir: Path
) -> None:
    service, port = served
    (data_dir / "big.bin").write_bytes(os.urandom(PAGES * PAGE))
    client = open_stream(port, f"{data_dir}/big.bin", 0)
    received = b""
    while len(received) < 4 * PAGE:
        received += client.recv(PAGE)
    assert received.startswith(b"HTTP/1.1 200")
    client.close()
    filled = settled_bytes(service)
    assert filled >= 4 * PAGE
    # Read-ahead and socket buffers are bounded; the rest of the file was never fetched.
    assert filled < PAGES * PAGE // 4


def test_a_footer_read_fills_the_last_page_only(
    served: tuple[WorkerService, int], data_dir: Path
) -> None:
    service, port = served
    size = 40 * PAGE + 100
    (data_dir / "table.parquet").write_bytes(os.urandom(size))
    client = open_stream(port, f"{data_dir}/table.parquet", size - 8)
    received = b""
    while not received.endswith(b"\r\n\r\n") and len(received) < 8:
        received += client.recv(PAGE)
    client.close()
    assert settled_bytes(service) == 100
